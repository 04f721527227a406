// CUPTI rows (activity.h) -> gpu_activity records in the recording rings
// (tc/trace/records.h), for libtc_cupti.so and for the tests that feed it
// buffers of real CUPTI structs.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "activity.h"
#include "tc/trace/records.h"

namespace tc::capture::cupti {

// CUPTI's clock (ns: tc registers CLOCK_MONOTONIC as CUPTI's timestamp where
// it can, else CUPTI's own) onto the recording clock's ticks: two readings of
// both clocks, the first when the map is made, the second taken again by
// refresh() before each buffer; between them, linear. Offsets from the last
// reading are integers (CUPTI's own clock is CLOCK_REALTIME, ~1.7e18 ns: a
// double would round it to 256 ns). Until the readings are
// 1 ms apart the slope is the recording clock's nominal one (1 for
// CLOCK_MONOTONIC; for the TSC, measured over 1 ms once when the map is made).
class ClockMap {
 public:
  using NowFn = uint64_t (*)();
  explicit ClockMap(NowFn cupti_now);
  void refresh();
  uint64_t ticks(int64_t cupti_ns) const;
  // A length in CUPTI's ns as ticks.
  uint64_t span(int64_t ns) const;

 private:
  struct Pair {
    uint64_t cupti_ns, ticks;
  };
  // The tightest of a few readings (a preempted one is wide, and dropped).
  Pair read() const;
  double slope() const;
  NowFn cupti_now_;
  Pair first_{}, last_{};
  double nominal_ = 1.0;  // ticks per ns
};

// Emits each row of a translated buffer as a gpu_activity record. Kernel
// names are interned once each (a program launches the same few hundred
// kernels millions of times). Not thread-safe: one drain at a time.
class Emitter {
 public:
  explicit Emitter(ClockMap* clock) : clock_(clock) {}
  // Returns the records emitted.
  int64_t emit(const std::vector<Row>& rows);

 private:
  trace::StringId name_id(const char* s);
  ClockMap* clock_;
  std::unordered_map<std::string, trace::StringId> names_;
};

}  // namespace tc::capture::cupti
