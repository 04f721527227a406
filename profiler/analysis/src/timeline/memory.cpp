// The memory lane: the memory.live_bytes counter with its min/max pyramid,
// the capacity (memory.capacity_bytes, memory_plans, out_of_memory) and the
// out-of-memory points.
#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_counter(const store::Reader& r, const std::vector<int64_t>* loc_ids, int64_t* skipped,
                          const std::function<void(const Counter&)>& f) {
  std::string sql = "SELECT utid, ts, loc_id, value FROM counters";
  if (loc_ids) {
    std::string ids;
    for (int64_t id : *loc_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    sql += " WHERE loc_id IN (" + ids + ")";
  }
  auto q = r.query(sql);
  while (q.next()) {
    Counter c{q.i64(0), q.i64(1), q.i64(2), q.f64(3)};
    if (keep(c.ts, nullptr, skipped)) f(c);
  }
  return q.status();
}

namespace detail {
namespace {

template <typename T>
void permute(std::vector<T>* v, const std::vector<uint32_t>& order) {
  std::vector<T> out(v->size());
  for (size_t i = 0; i < order.size(); ++i) out[i] = (*v)[order[i]];
  v->swap(out);
}

}  // namespace

Status read_memory(Load& ld) {
  Timeline& tl = ld.tl;
  const store::Reader& reader = ld.reader;
  auto see = [&](int64_t ts, int64_t end) { ld.see(ts, end); };
  auto q = reader.query(
      "SELECT ts, step, requested_bytes, live_bytes, capacity_bytes FROM out_of_memory ORDER BY ts, id");
  while (q.next()) {
    if (!ld.keep(q.i64(0))) continue;
    tl.out_of_memory.push_back({q.i64(0), q.i64(1), q.i64(2), q.i64(3), q.i64(4)});
    see(q.i64(0), q.i64(0) + 1);
    tl.capacity_bytes = std::max(tl.capacity_bytes, static_cast<double>(q.i64(4)));
  }
  TC_RETURN_IF_ERROR(q.status());
  auto plans = reader.query("SELECT max(capacity_bytes) FROM memory_plans");
  while (plans.next()) tl.capacity_bytes = std::max(tl.capacity_bytes, static_cast<double>(plans.i64(0)));
  TC_RETURN_IF_ERROR(plans.status());

  // The memory counters, found by their location names.
  std::vector<int64_t> live;
  std::string cap_ids;
  for (size_t id = 0; id < tl.locations.size(); ++id) {
    const std::string& n = tl.locations[id].name;
    if (n == "memory.live_bytes") live.push_back(static_cast<int64_t>(id));
    if (n != "memory.capacity_bytes") continue;
    if (!cap_ids.empty()) cap_ids += ",";
    cap_ids += std::to_string(id);
  }
  tl.memory.name = "memory.live_bytes";
  if (!live.empty()) {
    TC_RETURN_IF_ERROR(rows::each_counter(reader, &live, &tl.skipped.events, [&](const rows::Counter& c) {
      tl.memory.ts.push_back(c.ts);
      tl.memory.value.push_back(c.value);
    }));
    if (!std::is_sorted(tl.memory.ts.begin(), tl.memory.ts.end())) {
      std::vector<uint32_t> order(tl.memory.ts.size());
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return tl.memory.ts[a] < tl.memory.ts[b]; });
      permute(&tl.memory.ts, order);
      permute(&tl.memory.value, order);
    }
    if (!tl.memory.ts.empty()) see(tl.memory.ts.front(), tl.memory.ts.back() + 1);
  }
  if (!cap_ids.empty()) {
    auto q = reader.query("SELECT max(value) FROM counters WHERE loc_id IN (" + cap_ids + ")");
    while (q.next()) tl.capacity_bytes = std::max(tl.capacity_bytes, q.f64(0));
    TC_RETURN_IF_ERROR(q.status());
  }
  tl.memory.build_levels();
  return Status::Ok();
}

}  // namespace detail

bool has_memory_lane(const Timeline& tl) { return tl.memory.size() > 0 || !tl.out_of_memory.empty(); }

MemoryScale memory_scale(const Timeline& tl) {
  MemoryScale m;
  if (tl.memory.size() == 0) {
    m.hi = std::max(1.0, tl.capacity_bytes);
    m.capacity_in_range = tl.capacity_bytes > 0;
    return m;
  }
  double lo = *std::min_element(tl.memory.value.begin(), tl.memory.value.end());
  double hi = tl.memory.max_value;
  m.capacity_in_range = tl.capacity_bytes > 0 && tl.capacity_bytes <= 2 * hi;
  if (m.capacity_in_range) hi = std::max(hi, tl.capacity_bytes);
  double pad = std::max((hi - lo) * 0.08, 1.0);
  m.lo = std::max(0.0, lo - pad);
  m.hi = hi + pad;
  return m;
}

void CounterSeries::build_levels() {
  levels.clear();
  max_value = 0;
  for (double v : value) max_value = std::max(max_value, v);
  const std::vector<double>* lo = &value;
  const std::vector<double>* hi = &value;
  while (lo->size() > kBlock) {
    Level next;
    size_t n = (lo->size() + kBlock - 1) / kBlock;
    next.min.resize(n);
    next.max.resize(n);
    for (size_t b = 0; b < n; ++b) {
      size_t a = b * kBlock, e = std::min(a + kBlock, lo->size());
      double mn = (*lo)[a], mx = (*hi)[a];
      for (size_t i = a + 1; i < e; ++i) {
        mn = std::min(mn, (*lo)[i]);
        mx = std::max(mx, (*hi)[i]);
      }
      next.min[b] = mn;
      next.max[b] = mx;
    }
    levels.push_back(std::move(next));
    lo = &levels.back().min;
    hi = &levels.back().max;
  }
}

void CounterSeries::min_max(size_t first, size_t last, double* out_lo, double* out_hi) const {
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  const std::vector<double>* lo = &value;
  const std::vector<double>* hi = &value;
  size_t level = 0;  // the arrays lo/hi belong to level-1 (value itself for level 0)
  while (first < last) {
    bool coarser = level < levels.size() && last - first >= 2 * kBlock;
    if (!coarser) {
      for (size_t i = first; i < last; ++i) {
        mn = std::min(mn, (*lo)[i]);
        mx = std::max(mx, (*hi)[i]);
      }
      break;
    }
    size_t a = (first + kBlock - 1) / kBlock * kBlock, b = last / kBlock * kBlock;
    for (size_t i = first; i < a; ++i) mn = std::min(mn, (*lo)[i]), mx = std::max(mx, (*hi)[i]);
    for (size_t i = b; i < last; ++i) mn = std::min(mn, (*lo)[i]), mx = std::max(mx, (*hi)[i]);
    first = a / kBlock;
    last = b / kBlock;
    lo = &levels[level].min;
    hi = &levels[level].max;
    ++level;
  }
  *out_lo = mn;
  *out_hi = mx;
}

}  // namespace tc::analysis::timeline
