#include "emit.h"

#include <cmath>
#include <cstdint>

#include "tc/trace/trace.h"

namespace tc::capture::cupti {
ClockMap::ClockMap(NowFn cupti_now) : cupti_now_(cupti_now) {
  // The recording clock's rate against CLOCK_MONOTONIC, over 1 ms (1 when
  // it is CLOCK_MONOTONIC itself: the two readings then advance together).
  uint64_t n0 = trace::monotonic_ns(), t0 = trace::now(), n1 = n0, t1 = t0;
  while (n1 - n0 < 1'000'000) {
    n1 = trace::monotonic_ns();
    t1 = trace::now();
  }
  nominal_ = static_cast<double>(t1 - t0) / static_cast<double>(n1 - n0);
  if (!(nominal_ > 0)) nominal_ = 1.0;
  first_ = last_ = read();
}

ClockMap::Pair ClockMap::read() const {
  // The recording clock between two readings of CUPTI's: the middle one is
  // within half their gap of the recording clock's reading.
  Pair best{};
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t a = cupti_now_();
    uint64_t t = trace::now();
    uint64_t b = cupti_now_();
    if (b < a) continue;  // CUPTI's clock stepped back
    if (b - a < best_gap) best_gap = b - a, best = {a + (b - a) / 2, t};
  }
  if (best_gap == UINT64_MAX) best = {cupti_now_(), trace::now()};
  return best;
}

void ClockMap::refresh() { last_ = read(); }

double ClockMap::slope() const {
  if (last_.cupti_ns > first_.cupti_ns + 1'000'000 && last_.ticks > first_.ticks)
    return static_cast<double>(last_.ticks - first_.ticks) / static_cast<double>(last_.cupti_ns - first_.cupti_ns);
  return nominal_;
}

uint64_t ClockMap::ticks(int64_t cupti_ns) const {
  const int64_t d = cupti_ns - static_cast<int64_t>(last_.cupti_ns);  // small: this buffer's records against the last reading
  const int64_t t = static_cast<int64_t>(last_.ticks) + std::llround(static_cast<double>(d) * slope());
  return t <= 0 ? 0 : static_cast<uint64_t>(t);
}

uint64_t ClockMap::span(int64_t ns) const { return ns <= 0 ? 0 : static_cast<uint64_t>(std::llround(static_cast<double>(ns) * slope())); }

trace::StringId Emitter::name_id(const char* s) {
  if (s == nullptr) return trace::StringId{};
  auto it = names_.find(s);
  if (it != names_.end()) return it->second;
  trace::StringId id = trace::intern(s);
  names_.emplace(s, id);
  return id;
}

int64_t Emitter::emit(const std::vector<Row>& rows) {
  int64_t n = 0;
  for (const Row& r : rows) {
    trace::emit(trace::rec::GpuActivity{
        .ts = trace::Ticks(clock_->ticks(r.ts)),
        .dur = trace::Ticks(clock_->span(r.dur)),
        .kind = name_id(r.kind),
        .name = name_id(r.name),
        .bytes = r.bytes,
        .device = r.device,
        .stream = r.stream,
        .correlation_id = r.correlation,
        .execution_id = r.execution_id > 0 ? r.execution_id : 0,
        .graph_id = r.graph_id > 0 ? r.graph_id : 0,
        .kernel = r.kernel,
        .blocks = r.blocks,
        .threads = r.threads,
    });
    ++n;
  }
  return n;
}

}  // namespace tc::capture::cupti
