#include "emit.h"

#include <time.h>

#include "tc/trace/trace.h"

namespace tc::collect::cupti {
namespace {
uint64_t mono_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}
}  // namespace

ClockMap::ClockMap(NowFn cupti_now) : cupti_now_(cupti_now) {
  // The recording clock's rate against CLOCK_MONOTONIC, over 1 ms (1 when
  // it is CLOCK_MONOTONIC itself: the two readings then advance together).
  uint64_t n0 = mono_ns(), t0 = trace::now(), n1 = n0, t1 = t0;
  while (n1 - n0 < 1'000'000) {
    n1 = mono_ns();
    t1 = trace::now();
  }
  nominal_ = static_cast<double>(t1 - t0) / static_cast<double>(n1 - n0);
  if (!(nominal_ > 0)) nominal_ = 1.0;
  first_ = last_ = read();
}

ClockMap::Pair ClockMap::read() const {
  // The recording clock between two readings of CUPTI's: the middle one is
  // within half their gap of the recording clock's reading.
  uint64_t a = cupti_now_();
  uint64_t t = trace::now();
  uint64_t b = cupti_now_();
  return {a + (b - a) / 2, t};
}

void ClockMap::refresh() { last_ = read(); }

uint64_t ClockMap::ticks(int64_t cupti_ns) const {
  double slope = nominal_;
  if (last_.cupti_ns > first_.cupti_ns + 1'000'000 && last_.ticks > first_.ticks)
    slope = static_cast<double>(last_.ticks - first_.ticks) / static_cast<double>(last_.cupti_ns - first_.cupti_ns);
  double d = static_cast<double>(cupti_ns) - static_cast<double>(last_.cupti_ns);
  double t = static_cast<double>(last_.ticks) + d * slope;
  return t <= 0 ? 0 : static_cast<uint64_t>(t);
}

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
    uint64_t start = clock_->ticks(r.ts), end = clock_->ticks(r.ts + r.dur);
    trace::emit(trace::rec::GpuActivity{
        .ts = trace::Ticks(start),
        .dur = trace::Ticks(end >= start ? end - start : 0),
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

}  // namespace tc::collect::cupti
