// tc/viewer/demo_store.h: writes a synthetic store that has something on every
// lane: steps, compilations ('first', 'shape_change' with the changed input,
// 'structure_change'), executions, explicit evaluations at two call sites,
// nested user ranges on several threads, instants, the memory counters and one
// out-of-memory point. Tests, the benchmark and the docs' screenshots use it.
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
};

// Writes the store at path (replacing it). Returns the number of events written.
StatusOr<int64_t> write_demo_store(const std::string& path, const DemoStoreOptions& options = {});

}  // namespace tc::viewer
