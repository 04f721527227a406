// tc/viewer/demo_store.h: writes a synthetic store that has something on every
// lane: steps, compilations ('first', 'shape_change' with the changed input,
// 'structure_change'), executions, explicit evaluations at two call sites,
// nested user ranges on several threads, instants, the memory counters, one
// out-of-memory point, and NVTX (schema v3) as a program that calls NVTX
// itself leaves it: nested push/pop ranges with and without colours in the
// default domain on the main thread and in domain "data" on the first loader,
// marks (one with a real payload), named categories, start/end ranges that
// the loader ends, and ranges cut by the process's end. Tests, the benchmark
// and the docs' screenshots use it.
#pragma once

#include <cstdint>
#include <string>

#include "tc/store/status.h"

namespace tc::viewer {

struct DemoStoreOptions {
  int64_t range_events = 3000;  // user ranges in total, over all threads
  int threads = 2;              // threads recording ranges (thread 1 also runs the steps)
  int steps = 40;
  int64_t step_ns = 50'000'000;  // 50 ms per step
  bool out_of_memory = true;
  // rank >= 0: one rank of a data-parallel job of world_size ranks (a ranks
  // row, job "demo-job"; a collective at the end of every step on the main
  // thread, rank r arriving r * 100 us after rank 0), its clock
  // clock_offset_ns behind rank 0's (its times are rank 0's minus that).
  int64_t rank = -1, world_size = 1, clock_offset_ns = 0;
};

// Writes the store at path (replacing it). Returns the number of events written.
StatusOr<int64_t> write_demo_store(const std::string& path, const DemoStoreOptions& options = {});

}  // namespace tc::viewer
