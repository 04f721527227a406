// tc/collect/collector.h: drains recording rings into a store.
//
//   auto region = tc::trace::Region::create_shared(64, 1 << 16, &err);
//   auto writer = tc::store::Writer::create("run.tcdb");
//   tc::collect::Collector c(*region, **writer, tc::collect::gather_run_info(argv, "tc-profile"));
//   TC_RETURN_IF_ERROR(c.begin());
//   while (program runs) { c.drain(); sleep a little; }
//   TC_RETURN_IF_ERROR(c.finish(end));   // final drain, open ranges closed with dur -1, store finalized
//
// One thread calls a Collector at a time. It owns no thread itself; tc-profile
// drives it from its main loop and the in-process collector from its own thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tc/store/status.h"

namespace tc::trace {
class Region;
}
namespace tc::store {
class Writer;
}

namespace tc::collect {

// What the store's run table says about the run.
struct RunInfo {
  std::vector<std::string> command;  // argv of the program
  std::string cwd;
  std::string host;
  std::string collector;  // "tc-profile" or "in-process"
  std::string tc_version;
  std::string cuda;       // what the CUDA probe found
  std::vector<std::pair<std::string, std::string>> env;  // the TC_* variables
  uint64_t start_ts = 0;       // CLOCK_MONOTONIC ns
  uint64_t start_unix_ns = 0;  // wall clock
};

// Fills cwd, host, version, TC_* environment, start times. `command` is the
// program's argv.
RunInfo gather_run_info(std::vector<std::string> command, std::string collector);

struct RunEnd {
  std::optional<int> exit_code;    // the program called exit(code)
  std::optional<int> exit_signal;  // the program was killed by this signal
  bool complete = false;           // the program ended normally and nothing is missing
};

struct CollectorStats {
  uint64_t events = 0;   // ranges + instants + counters written
  uint64_t dropped = 0;  // events producers could not write (full ring for too long, no ring)
  uint64_t threads = 0;
  uint64_t processes = 0;
  // What the compiler has reported so far (for tc-profile's status line).
  uint64_t steps = 0;
  uint64_t compilations = 0;
  uint64_t recompilations = 0;   // compilations whose reason is not 'first'
  double peak_live_bytes = 0;    // highest memory.live_bytes sample
};

class Collector {
 public:
  Collector(trace::Region& region, store::Writer& writer, RunInfo info);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Writes the run row (marked incomplete until finish()).
  Status begin();
  // One pass over every ring; returns the number of slots consumed.
  StatusOr<uint64_t> drain();
  // Drains until every ring is empty, closes ranges that never ended
  // (dur = -1), writes processes, threads, dropped counts and the run row,
  // and finalizes the store.
  Status finish(const RunEnd& end);

  CollectorStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Converts the recording clock to CLOCK_MONOTONIC ns. For the TSC it is a
// continuous, strictly increasing piecewise-linear map, recalibrated against
// CLOCK_MONOTONIC as the run goes (resync()), so per-thread order is kept.
class ClockMap {
 public:
  explicit ClockMap(bool tsc);
  uint64_t to_ns(uint64_t ticks) const;
  // Samples both clocks; adjusts the slope of the map from here on.
  void resync();
  double ns_per_tick() const;

 private:
  struct Segment {
    uint64_t t0;  // ticks
    double n0;    // ns
    double slope; // ns per tick
  };
  bool tsc_;
  uint64_t first_t_ = 0;
  double first_n_ = 0;
  std::vector<Segment> segments_;
};

// The CUDA probe: one line on what this machine offers ("1 device: NVIDIA
// H200 (sm_90, 139.8 GiB)", "no device: cudaGetDeviceCount error 35 (...)",
// or "built without CUDA").
std::string cuda_probe();

}  // namespace tc::collect
