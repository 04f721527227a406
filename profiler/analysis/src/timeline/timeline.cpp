#include "tc/analysis/timeline/timeline.h"

#include "tc/analysis/timeline/job.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <numeric>
#include <thread>
#include <tuple>
#include <utility>

namespace tc::analysis::timeline {
namespace {

constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();  // end of a range that never ended


// Events of one track as the loader collects them, before sorting.
struct Pending {
  std::vector<int64_t> ts, end, arg;
  std::vector<uint32_t> ref;
  std::vector<uint8_t> cut;  // NVTX tracks only
  void add(int64_t t, int64_t e, uint32_t r, int64_t a, bool with_arg) {
    ts.push_back(t);
    end.push_back(e);
    ref.push_back(r);
    if (with_arg) arg.push_back(a);
  }
  void add_nvtx(int64_t t, int64_t e, uint32_t r, int64_t a, bool is_cut) {
    add(t, e, r, a, true);
    cut.push_back(is_cut);
  }
  void append(Pending&& o) {
    if (ts.empty()) { *this = std::move(o); return; }
    ts.insert(ts.end(), o.ts.begin(), o.ts.end());
    end.insert(end.end(), o.end.begin(), o.end.end());
    ref.insert(ref.end(), o.ref.begin(), o.ref.end());
    arg.insert(arg.end(), o.arg.begin(), o.arg.end());
    cut.insert(cut.end(), o.cut.begin(), o.cut.end());
  }
  // Event i of o, appended.
  void take(const Pending& o, size_t i) {
    add(o.ts[i], o.end[i], o.ref[i], o.arg.empty() ? 0 : o.arg[i], !o.arg.empty());
    if (!o.cut.empty()) cut.push_back(o.cut[i]);
  }
};

// end of a [ts, ts+dur) event: at least one ns, so point events are visible.
int64_t end_of(int64_t ts, int64_t dur) { return dur < 0 ? kOpen : ts + std::max<int64_t>(dur, 1); }

template <typename T>
void permute(std::vector<T>* v, const std::vector<uint32_t>& order) {
  if (v->empty()) return;
  std::vector<T> out(v->size());
  for (size_t i = 0; i < order.size(); ++i) out[i] = (*v)[order[i]];
  v->swap(out);
}

Track finish_track(Pending&& p, TrackKind kind, int depth, std::string name, int64_t run_end) {
  Track t;
  t.kind = kind;
  t.depth = depth;
  t.name = std::move(name);
  if (!std::is_sorted(p.ts.begin(), p.ts.end())) {
    std::vector<uint32_t> order(p.ts.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return p.ts[a] < p.ts[b]; });
    permute(&p.ts, order);
    permute(&p.end, order);
    permute(&p.ref, order);
    permute(&p.arg, order);
    permute(&p.cut, order);
  }
  for (size_t i = 0; i < p.end.size(); ++i) {
    if (p.end[i] == kOpen) p.end[i] = std::max(run_end, p.ts[i] + 1);
  }
  if (!std::is_sorted(p.end.begin(), p.end.end())) {
    t.max_end.resize(p.end.size());
    int64_t m = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < p.end.size(); ++i) t.max_end[i] = m = std::max(m, p.end[i]);
  }
  t.ts = std::move(p.ts);
  t.end = std::move(p.end);
  t.ref = std::move(p.ref);
  t.arg = std::move(p.arg);
  if (std::find(p.cut.begin(), p.cut.end(), 1) != p.cut.end()) t.cut = std::move(p.cut);
  return t;
}

// Nesting depth of each range of one thread and NVTX domain, from the ranges
// themselves: sorted by start (the longer first on a tie), a range is inside
// every earlier one still open when it starts. The store's depth counts tc's
// ranges and every domain's on the thread together (one stack per thread),
// so it has gaps and need not start at 0 within a domain.
std::vector<Pending> split_by_nesting(const Pending& p) {
  std::vector<uint32_t> order(p.ts.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return p.ts[a] != p.ts[b] ? p.ts[a] < p.ts[b] : p.end[a] > p.end[b];
  });
  std::vector<Pending> by_depth;
  std::vector<int64_t> open;  // ends of the ranges that hold the current one
  for (uint32_t i : order) {
    while (!open.empty() && open.back() <= p.ts[i]) open.pop_back();
    if (by_depth.size() <= open.size()) by_depth.resize(open.size() + 1);
    by_depth[open.size()].take(p, i);
    open.push_back(p.end[i]);
  }
  return by_depth;
}

// Rows for ranges that need not nest (NVTX start/end): each goes to the first
// row whose last range has ended, so a row's ranges never overlap.
std::vector<Pending> split_into_rows(const Pending& p) {
  std::vector<uint32_t> order(p.ts.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return p.ts[a] < p.ts[b]; });
  std::vector<Pending> rows;
  std::vector<int64_t> last_end;
  for (uint32_t i : order) {
    size_t row = 0;
    while (row < last_end.size() && last_end[row] > p.ts[i]) ++row;
    if (row == rows.size()) rows.emplace_back(), last_end.push_back(0);
    rows[row].take(p, i);
    last_end[row] = p.end[i];
  }
  return rows;
}

// Ranges of rows [lo, hi) by id: tc's bucketed per (utid, depth), NVTX's per
// (utid, domain).
struct RangeChunk {
  std::map<std::pair<int64_t, int64_t>, Pending> tracks;
  std::map<std::pair<int64_t, int>, Pending> nvtx;
  Status status;
  int64_t min_ts = kOpen, max_end = std::numeric_limits<int64_t>::min();
};

// domain_of[loc_id]: the NVTX domain of the site, -1 for tc's own (and for ids past its end).
void read_ranges(const store::Reader& reader, int64_t lo, int64_t hi, const std::vector<int32_t>& domain_of, RangeChunk* out) {
  auto q = reader.query("SELECT utid, ts, dur, depth, loc_id, arg FROM ranges WHERE id >= " + std::to_string(lo) +
                        " AND id < " + std::to_string(hi));
  std::pair<int64_t, int64_t> key{-1, -1};
  Pending* cur = nullptr;
  while (q.next()) {
    int64_t ts = q.i64(1), dur = q.i64(2), loc = q.i64(4);
    int64_t e = end_of(ts, dur);
    out->min_ts = std::min(out->min_ts, ts);
    if (e != kOpen) out->max_end = std::max(out->max_end, e);
    int32_t domain = loc >= 0 && static_cast<size_t>(loc) < domain_of.size() ? domain_of[loc] : -1;
    if (domain >= 0) {
      out->nvtx[{q.i64(0), domain}].add_nvtx(ts, e, static_cast<uint32_t>(loc), q.i64(5), dur < 0);
      continue;
    }
    std::pair<int64_t, int64_t> k{q.i64(0), q.i64(3)};
    if (k != key || !cur) {
      key = k;
      cur = &out->tracks[k];
    }
    cur->add(ts, e, static_cast<uint32_t>(loc), q.i64(5), true);
  }
  out->status = q.status();
}

std::string basename_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<EventStats> event_statistics(const Timeline& tl, StatsBy by) {
  struct Acc {
    std::vector<int64_t> durs;
    int lane = -1, track = -1;
    uint32_t event = 0;
    int64_t max = -1;
  };
  std::map<std::string, Acc> groups;
  for (size_t l = 0; l < tl.lanes.size(); ++l) {
    const Lane& lane = tl.lanes[l];
    for (size_t t = 0; t < lane.tracks.size(); ++t) {
      const Track& tr = lane.tracks[t];
      bool kernels = tr.kind == TrackKind::kKernels;
      bool nvtx = tr.kind == TrackKind::kNvtxRanges || tr.kind == TrackKind::kNvtxStartEnd;
      if (by == StatsBy::kRange ? tr.kind != TrackKind::kRanges && !nvtx : !kernels) continue;
      for (uint32_t i = 0; i < tr.size(); ++i) {
        std::string name;
        int64_t dur = 0;
        if (kernels) {
          const KernelRun& run = tl.kernel_runs[tr.ref[i]];
          const KernelInfo& k = tl.kernels[run.kernel];
          dur = run.dur;
          name = by == StatsBy::kSite ? k.first_site() : k.ops + " (g" + std::to_string(k.graph_id) + " k" + std::to_string(k.kernel) + ")";
        } else if (nvtx) {
          if (tr.is_cut(i)) continue;  // never ended: no duration
          int64_t loc_id = tr.kind == TrackKind::kNvtxStartEnd ? tl.nvtx_start_ends[tr.ref[i]].loc_id : tr.ref[i];
          const Location* loc = tl.location(loc_id);
          const NvtxSite* site = tl.nvtx_site(loc_id);
          name = loc ? loc->name : "?";
          if (site && !tl.nvtx_domains[site->domain].is_default) name += " (" + tl.nvtx_domains[site->domain].name + ")";
          dur = tr.end[i] - tr.ts[i];
        } else {
          if (tr.end[i] >= tl.end_ts && tr.ts[i] + 1 < tr.end[i]) continue;  // never ended: no duration
          const Location* loc = tl.location(tr.ref[i]);
          name = loc ? loc->name : "?";
          dur = tr.end[i] - tr.ts[i];
        }
        Acc& a = groups[name];
        a.durs.push_back(dur);
        if (dur > a.max) a.max = dur, a.lane = static_cast<int>(l), a.track = static_cast<int>(t), a.event = i;
      }
    }
  }
  std::vector<EventStats> out;
  for (auto& entry : groups) {
    Acc& a = entry.second;  // not a structured binding: clang 14 cannot capture one in a lambda
    EventStats s;
    s.name = entry.first;
    std::sort(a.durs.begin(), a.durs.end());
    s.count = static_cast<int64_t>(a.durs.size());
    for (int64_t d : a.durs) s.total += d;
    s.mean = s.total / std::max<int64_t>(1, s.count);
    auto pct = [&](double q) { return a.durs[std::min(a.durs.size() - 1, static_cast<size_t>(q * static_cast<double>(a.durs.size())))]; };
    s.p50 = pct(0.50);
    s.p99 = pct(0.99);
    s.min = a.durs.front();
    s.max = a.durs.back();
    s.slowest_lane = a.lane;
    s.slowest_track = a.track;
    s.slowest_event = a.event;
    s.histogram.assign(24, 0.0f);
    double lo = std::log(static_cast<double>(std::max<int64_t>(1, s.min))), hi = std::log(static_cast<double>(std::max<int64_t>(1, s.max)));
    for (int64_t d : a.durs) {
      double f = hi > lo ? (std::log(static_cast<double>(std::max<int64_t>(1, d))) - lo) / (hi - lo) : 0;
      s.histogram[std::min<size_t>(23, static_cast<size_t>(f * 24))] += 1;
    }
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const EventStats& a, const EventStats& b) { return a.total > b.total; });
  return out;
}

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

const char* track_kind_name(TrackKind kind) {
  switch (kind) {
    case TrackKind::kSteps: return "steps";
    case TrackKind::kCompilations: return "compilations";
    case TrackKind::kExecutions: return "executions";
    case TrackKind::kEvaluations: return "explicit evaluations";
    case TrackKind::kInstants: return "instants";
    case TrackKind::kRanges: return "ranges";
    case TrackKind::kKernels: return "kernels";
    case TrackKind::kNvtxMarks: return "NVTX marks";
    case TrackKind::kNvtxRanges: return "NVTX ranges";
    case TrackKind::kNvtxStartEnd: return "NVTX start/end ranges";
    case TrackKind::kCollectives: return "collectives";
  }
  return "?";
}

std::optional<double> Timeline::nvtx_real_payload(int64_t utid, int64_t loc_id, int64_t ts) const {
  auto key = [](const RealPayload& p) { return std::tuple(p.utid, p.loc_id, p.ts); };
  auto it = std::lower_bound(nvtx_real_payloads.begin(), nvtx_real_payloads.end(), std::tuple(utid, loc_id, ts),
                             [&](const RealPayload& p, const std::tuple<int64_t, int64_t, int64_t>& k) { return key(p) < k; });
  if (it == nvtx_real_payloads.end() || key(*it) != std::tuple(utid, loc_id, ts)) return std::nullopt;
  return it->value;
}

palette::Rgb site_colour(const Timeline& tl, int64_t loc_id) {
  const NvtxSite* site = tl.nvtx_site(loc_id);
  return site && site->color ? palette::from_argb(*site->color) : palette::range_colour(loc_id);
}

palette::Rgb event_colour(const Timeline& tl, const Track& t, uint32_t i) {
  switch (t.kind) {
    case TrackKind::kSteps: return tl.steps[t.ref[i]].step % 2 ? palette::kStepOdd : palette::kStepEven;
    case TrackKind::kCompilations:
      switch (tl.compilations[t.ref[i]].reason) {
        case CompileReason::kFirst: return palette::kCompileFirst;
        case CompileReason::kShapeChange: return palette::kCompileShape;
        case CompileReason::kStructureChange: return palette::kCompileStructure;
        case CompileReason::kOther: return palette::kCompileOther;
      }
      break;
    case TrackKind::kExecutions: return palette::kExecution;
    case TrackKind::kEvaluations: return palette::kEvaluation;
    case TrackKind::kInstants: return palette::kInstant;
    case TrackKind::kRanges: return palette::range_colour(t.ref[i]);
    case TrackKind::kKernels: {
      // By the user's line it came from: one line, one colour.
      const std::string site = tl.kernels[tl.kernel_runs[t.ref[i]].kernel].first_site();
      return palette::range_colour(static_cast<int64_t>(std::hash<std::string>{}(site) & 0x7fffffff));
    }
    case TrackKind::kNvtxMarks:
    case TrackKind::kNvtxRanges: return site_colour(tl, t.ref[i]);
    case TrackKind::kNvtxStartEnd: return site_colour(tl, tl.nvtx_start_ends[t.ref[i]].loc_id);
    case TrackKind::kCollectives: return !t.arg.empty() && t.arg[i] == 0 ? palette::kCollectiveWait : palette::kCollective;
  }
  return palette::kCompileOther;
}

CompileReason parse_compile_reason(std::string_view reason) {
  if (reason == "first") return CompileReason::kFirst;
  if (reason == "shape_change") return CompileReason::kShapeChange;
  if (reason == "structure_change") return CompileReason::kStructureChange;
  return CompileReason::kOther;
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

uint64_t new_load_id() {
  static std::atomic<uint64_t> loads{0};
  return ++loads;
}

std::string call_site(const Timeline& tl, int64_t loc_id) {
  const Location* loc = tl.location(loc_id);
  if (!loc) return "?";
  if (loc->file.empty()) return loc->name.empty() ? "?" : loc->name;
  return basename_of(loc->file) + ":" + std::to_string(loc->line);
}

StatusOr<Timeline> load_timeline(const std::string& path, const LoadOptions& options) {
  auto reader = store::Reader::open(path);
  if (!reader.ok()) return reader.status();
  return load_timeline(*reader, options);
}

StatusOr<Timeline> load_timeline(const store::Reader& reader, const LoadOptions& options) {
  Timeline tl;
  tl.load_id = new_load_id();
  tl.path = reader.path();
  tl.paths = {tl.path};
  int64_t min_ts = kOpen, max_end = std::numeric_limits<int64_t>::min();
  auto see = [&](int64_t ts, int64_t end) {
    min_ts = std::min(min_ts, ts);
    if (end != kOpen) max_end = std::max(max_end, end);
  };

  // Locations, by id.
  {
    auto q = reader.query("SELECT id, name, file, function, line FROM locations ORDER BY id");
    while (q.next()) {
      int64_t id = q.i64(0);
      if (id < 0 || id > (1 << 24)) continue;
      if (tl.locations.size() <= static_cast<size_t>(id)) tl.locations.resize(id + 1);
      Location& l = tl.locations[id];
      l.name = q.text(1);
      l.file = q.text(2);
      l.function = q.text(3);
      l.line = q.i64(4);
    }
    TC_RETURN_IF_ERROR(q.status());
  }

  // Threads with their processes: one lane each, in process order.
  std::map<int64_t, size_t> lane_of;  // utid -> index in tl.lanes
  {
    auto q = reader.query(
        "SELECT t.utid, t.upid, t.tid, t.name, p.pid, p.name, p.end_ts FROM threads t LEFT JOIN processes p ON p.upid = t.upid "
        "ORDER BY t.upid, t.utid");
    while (q.next()) {
      Lane lane;
      lane.utid = q.i64(0);
      lane.upid = q.i64(1);
      lane.tid = q.i64(2);
      lane.pid = q.i64(4);
      lane.process_end = q.i64(6);
      std::string process = q.text(5).empty() ? "process" : std::string(q.text(5));
      std::string thread = q.text(3).empty() ? "thread" : std::string(q.text(3));
      lane.name = process + " " + std::to_string(lane.pid) + " / " + thread + " " + std::to_string(lane.tid);
      lane_of[lane.utid] = tl.lanes.size();
      tl.lanes.push_back(std::move(lane));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  // Per lane, per kind: pending events (ranges are keyed by depth below).
  struct LanePending {
    Pending steps, compilations, executions, evaluations, instants, kernels, collectives;
  };
  std::map<int64_t, LanePending> pending;
  // Per (utid, NVTX domain): marks and start/end ranges (push/pop ranges come with the ranges below).
  struct NvtxPending {
    Pending marks, start_ends;
  };
  std::map<std::pair<int64_t, int>, NvtxPending> nvtx_pending;
  std::vector<int32_t> domain_of;  // by loc_id: the NVTX domain of the site, -1 for tc's own

  // A cut NVTX range lasts to its process's end: the timeline reaches that far.
  auto see_cut_end = [&](int64_t utid) {
    auto it = lane_of.find(utid);
    if (it != lane_of.end() && tl.lanes[it->second].process_end > 0) see(tl.lanes[it->second].process_end - 1, tl.lanes[it->second].process_end);
  };

  // NVTX sites (schema v3), before the events that name them.
  if (reader.has(store::schema::nvtx_sites, "loc_id")) {
    std::map<int64_t, int64_t> upid_of;
    for (const Lane& lane : tl.lanes) upid_of[lane.utid] = lane.upid;
    auto upid = [&](int64_t utid) { auto it = upid_of.find(utid); return it == upid_of.end() ? int64_t{-1} : it->second; };
    // Category names: the site's own process's first, else any process's.
    std::map<std::tuple<int64_t, std::optional<std::string>, int64_t>, std::string> names;  // (upid, domain, category)
    std::map<std::pair<std::optional<std::string>, int64_t>, std::string> any_names;        // (domain, category)
    auto domain_text = [](const store::Query& q, int c) { return q.is_null(c) ? std::nullopt : std::optional(std::string(q.text(c))); };
    if (reader.has(store::schema::nvtx_categories, "name")) {
      auto q = reader.query("SELECT utid, domain, category, name FROM nvtx_categories ORDER BY id");
      while (q.next()) {
        names[{upid(q.i64(0)), domain_text(q, 1), q.i64(2)}] = q.text(3);
        any_names[{domain_text(q, 1), q.i64(2)}] = q.text(3);
      }
      TC_RETURN_IF_ERROR(q.status());
    }
    struct Row {
      int64_t loc_id;
      std::optional<std::string> domain;
      NvtxSite site;
    };
    std::vector<Row> rows;
    std::map<std::optional<std::string>, int> domains;  // nullopt (the default) sorts first
    auto q = reader.query("SELECT loc_id, utid, domain, category, color FROM nvtx_sites ORDER BY id");
    while (q.next()) {
      Row r{q.i64(0), domain_text(q, 2), {}};
      if (r.loc_id < 0 || r.loc_id > (1 << 24)) continue;
      if (!q.is_null(3)) {
        r.site.category = q.i64(3);
        auto own = names.find({upid(q.i64(1)), r.domain, *r.site.category});
        auto any = any_names.find({r.domain, *r.site.category});
        if (own != names.end()) r.site.category_name = own->second;
        else if (any != any_names.end()) r.site.category_name = any->second;
      }
      if (!q.is_null(4)) r.site.color = static_cast<uint32_t>(q.i64(4));
      domains.emplace(r.domain, 0);
      rows.push_back(std::move(r));
    }
    TC_RETURN_IF_ERROR(q.status());
    for (auto& [name, index] : domains) {
      index = static_cast<int>(tl.nvtx_domains.size());
      tl.nvtx_domains.push_back({name.value_or(""), !name.has_value()});
    }
    for (Row& r : rows) {
      if (tl.nvtx_site_of.size() <= static_cast<size_t>(r.loc_id)) tl.nvtx_site_of.resize(r.loc_id + 1, -1);
      if (tl.nvtx_site_of[r.loc_id] >= 0) continue;  // the first row of a loc_id stands
      r.site.domain = domains[r.domain];
      tl.nvtx_site_of[r.loc_id] = static_cast<int32_t>(tl.nvtx_sites.size());
      tl.nvtx_sites.push_back(std::move(r.site));
    }
    domain_of.assign(tl.nvtx_site_of.size(), -1);
    for (size_t id = 0; id < tl.nvtx_site_of.size(); ++id) {
      if (tl.nvtx_site_of[id] >= 0) domain_of[id] = tl.nvtx_sites[tl.nvtx_site_of[id]].domain;
    }
    if (reader.has(store::schema::nvtx_real_payloads, "value")) {
      auto p = reader.query("SELECT utid, loc_id, ts, value FROM nvtx_real_payloads");
      while (p.next()) tl.nvtx_real_payloads.push_back({p.i64(0), p.i64(1), p.i64(2), p.f64(3)});
      TC_RETURN_IF_ERROR(p.status());
      std::sort(tl.nvtx_real_payloads.begin(), tl.nvtx_real_payloads.end(), [](const auto& a, const auto& b) {
        return std::tie(a.utid, a.loc_id, a.ts) < std::tie(b.utid, b.loc_id, b.ts);
      });
    }
    // Start/end ranges: a start's end is the first of the same process and range_id at or after it.
    if (reader.has(store::schema::nvtx_range_starts, "range_id") && reader.has(store::schema::nvtx_range_ends, "range_id")) {
      std::multimap<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> ends;  // (upid, range_id) -> (ts, utid), by ts
      auto e = reader.query("SELECT utid, ts, range_id FROM nvtx_range_ends ORDER BY ts, id");
      while (e.next()) ends.emplace(std::pair{upid(e.i64(0)), e.i64(2)}, std::pair{e.i64(1), e.i64(0)});
      TC_RETURN_IF_ERROR(e.status());
      auto s = reader.query("SELECT utid, ts, range_id, loc_id, payload FROM nvtx_range_starts ORDER BY ts, id");
      while (s.next()) {
        NvtxStartEnd r;
        r.utid = r.end_utid = s.i64(0);
        r.ts = s.i64(1);
        r.range_id = s.i64(2);
        r.loc_id = s.i64(3);
        r.payload = s.i64(4);
        const NvtxSite* site = tl.nvtx_site(r.loc_id);
        if (!site) continue;  // a start whose site the store does not describe
        auto [lo, hi] = ends.equal_range({upid(r.utid), r.range_id});
        auto end = lo;
        while (end != hi && end->second.first < r.ts) ++end;
        if (end != hi) {
          r.end = std::max(end->second.first, r.ts + 1);
          r.end_utid = end->second.second;
          ends.erase(end);
          see(r.ts, r.end);
        } else {
          r.cut = true;
          r.end = kOpen;  // its process's end, once the lanes are known
          see(r.ts, r.ts + 1);
          see_cut_end(r.utid);
        }
        nvtx_pending[{r.utid, site->domain}].start_ends.add_nvtx(r.ts, r.end, static_cast<uint32_t>(tl.nvtx_start_ends.size()), 0, r.cut);
        tl.nvtx_start_ends.push_back(r);
      }
      TC_RETURN_IF_ERROR(s.status());
    }
  }

  {
    auto q = reader.query("SELECT utid, ts, dur, step, loc_id FROM steps ORDER BY ts, id");
    while (q.next()) {
      Step s{q.i64(1), q.i64(2), q.i64(3), q.i64(4)};
      see(s.ts, end_of(s.ts, s.dur));
      pending[q.i64(0)].steps.add(s.ts, end_of(s.ts, s.dur), static_cast<uint32_t>(tl.steps.size()), 0, false);
      tl.steps.push_back(s);
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = reader.query(
        "SELECT id, utid, ts, dur, graph_id, step, loc_id, nodes_before, nodes_after, kernels, reason, trigger, cache, "
        "diff FROM compilations ORDER BY ts, id");
    while (q.next()) {
      Compilation c;
      c.id = q.i64(0);
      c.utid = q.i64(1);
      c.ts = q.i64(2);
      c.dur = q.i64(3);
      c.graph_id = q.i64(4);
      c.step = q.i64(5);
      c.loc_id = q.i64(6);
      c.nodes_before = q.i64(7);
      c.nodes_after = q.i64(8);
      c.kernels = q.i64(9);
      c.reason_text = q.text(10);
      c.reason = parse_compile_reason(c.reason_text);
      c.trigger = q.text(11);
      c.cache = q.text(12);
      c.diff = q.text(13);
      see(c.ts, end_of(c.ts, c.dur));
      pending[c.utid].compilations.add(c.ts, end_of(c.ts, c.dur), static_cast<uint32_t>(tl.compilations.size()), 0,
                                       false);
      tl.compilations.push_back(std::move(c));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    // graph_id is unique in the run; a duplicate (a v1 store of several processes) keeps its first compilation.
    std::map<int64_t, size_t> by_graph;  // graph_id -> compilation
    for (size_t i = 0; i < tl.compilations.size(); ++i) by_graph.emplace(tl.compilations[i].graph_id, i);
    auto q = reader.query("SELECT graph_id, input, dim, old_value, new_value FROM compilation_inputs ORDER BY id");
    while (q.next()) {
      auto it = by_graph.find(q.i64(0));
      if (it == by_graph.end()) continue;
      tl.compilations[it->second].inputs.push_back({std::string(q.text(1)), q.i64(2), q.i64(3), q.i64(4)});
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = reader.query("SELECT utid, ts, dur, graph_id, step, trigger, nodes FROM executions ORDER BY ts, id");
    while (q.next()) {
      Execution e{q.i64(1), q.i64(2), q.i64(3), q.i64(4), q.i64(6), std::string(q.text(5))};
      see(e.ts, end_of(e.ts, e.dur));
      pending[q.i64(0)].executions.add(e.ts, end_of(e.ts, e.dur), static_cast<uint32_t>(tl.executions.size()), 0,
                                       false);
      tl.executions.push_back(std::move(e));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = reader.query(
        "SELECT id, utid, ts, dur, step, kind, loc_id, nodes, graph_id FROM explicit_evaluations ORDER BY ts, id");
    while (q.next()) {
      Evaluation e;
      e.id = q.i64(0);
      e.utid = q.i64(1);
      e.ts = q.i64(2);
      e.dur = q.i64(3);
      e.step = q.i64(4);
      e.kind = q.text(5);
      e.loc_id = q.i64(6);
      e.nodes = q.i64(7);
      e.graph_id = q.i64(8);
      see(e.ts, end_of(e.ts, e.dur));
      pending[e.utid].evaluations.add(e.ts, end_of(e.ts, e.dur), static_cast<uint32_t>(tl.evaluations.size()), 0,
                                      false);
      tl.evaluations.push_back(std::move(e));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  if (reader.has(store::schema::kernels, "sites") && reader.has(store::schema::kernel_executions, "dur")) {
    std::map<std::pair<int64_t, int64_t>, uint32_t> kernel_of;  // (graph_id, kernel) -> index
    auto k = reader.query("SELECT graph_id, kernel, kind, ops, sites, flops, bytes_read + bytes_written FROM kernels ORDER BY id");
    while (k.next()) {
      KernelInfo info{k.i64(0), k.i64(1), k.i64(5), k.i64(6), std::string(k.text(2)), std::string(k.text(3)), std::string(k.text(4))};
      if (kernel_of.emplace(std::pair{info.graph_id, info.kernel}, static_cast<uint32_t>(tl.kernels.size())).second)
        tl.kernels.push_back(std::move(info));
    }
    TC_RETURN_IF_ERROR(k.status());
    auto q = reader.query("SELECT utid, ts, dur, execution_id, graph_id, kernel FROM kernel_executions ORDER BY ts, id");
    while (q.next()) {
      auto it = kernel_of.find({q.i64(4), q.i64(5)});
      if (it == kernel_of.end()) continue;  // a run of a kernel the store does not describe
      KernelRun run{q.i64(1), q.i64(2), q.i64(3), it->second};
      see(run.ts, end_of(run.ts, run.dur));
      pending[q.i64(0)].kernels.add(run.ts, end_of(run.ts, run.dur), static_cast<uint32_t>(tl.kernel_runs.size()), 0, false);
      tl.kernel_runs.push_back(run);
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  if (reader.has(store::schema::collectives, "seq")) {
    auto q = reader.query("SELECT utid, ts, dur, step, seq, op, bytes, tensors, loc_id FROM collectives ORDER BY ts, id");
    while (q.next()) {
      Collective c;
      c.utid = q.i64(0);
      c.ts = q.i64(1);
      c.dur = std::max<int64_t>(q.i64(2), 0);
      c.step = q.i64(3);
      c.seq = q.i64(4);
      c.op = q.text(5);
      c.bytes = q.i64(6);
      c.tensors = q.i64(7);
      c.loc_id = q.i64(8);
      see(c.ts, end_of(c.ts, c.dur));
      pending[c.utid].collectives.add(c.ts, end_of(c.ts, c.dur), static_cast<uint32_t>(tl.collectives.size()), 1, true);
      tl.collectives.push_back(std::move(c));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = reader.query("SELECT utid, ts, loc_id, arg FROM instants");
    while (q.next()) {
      int64_t ts = q.i64(1), loc = q.i64(2);
      see(ts, ts + 1);
      if (const NvtxSite* site = tl.nvtx_site(loc)) {
        nvtx_pending[{q.i64(0), site->domain}].marks.add(ts, ts + 1, static_cast<uint32_t>(loc), q.i64(3), true);
      } else {
        pending[q.i64(0)].instants.add(ts, ts + 1, static_cast<uint32_t>(loc), q.i64(3), true);
      }
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = reader.query(
        "SELECT ts, step, requested_bytes, live_bytes, capacity_bytes FROM out_of_memory ORDER BY ts, id");
    while (q.next()) {
      tl.out_of_memory.push_back({q.i64(0), q.i64(1), q.i64(2), q.i64(3), q.i64(4)});
      see(q.i64(0), q.i64(0) + 1);
      tl.capacity_bytes = std::max(tl.capacity_bytes, static_cast<double>(q.i64(4)));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = reader.query("SELECT max(capacity_bytes) FROM memory_plans");
    while (q.next()) tl.capacity_bytes = std::max(tl.capacity_bytes, static_cast<double>(q.i64(0)));
    TC_RETURN_IF_ERROR(q.status());
  }

  // The memory counters, found by their location names.
  {
    std::string live_ids, cap_ids;
    for (size_t id = 0; id < tl.locations.size(); ++id) {
      const std::string& n = tl.locations[id].name;
      std::string* ids = n == "memory.live_bytes" ? &live_ids : n == "memory.capacity_bytes" ? &cap_ids : nullptr;
      if (!ids) continue;
      if (!ids->empty()) *ids += ",";
      *ids += std::to_string(id);
    }
    tl.memory.name = "memory.live_bytes";
    if (!live_ids.empty()) {
      auto q = reader.query("SELECT ts, value FROM counters WHERE loc_id IN (" + live_ids + ")");
      while (q.next()) {
        tl.memory.ts.push_back(q.i64(0));
        tl.memory.value.push_back(q.f64(1));
      }
      TC_RETURN_IF_ERROR(q.status());
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
  }

  // Ranges: the bulk of a big store, read in id chunks by parallel Readers.
  std::vector<RangeChunk> chunks;
  {
    int64_t lo = 0, hi = -1;
    auto q = reader.query("SELECT min(id), max(id) FROM ranges");
    if (q.next() && !q.is_null(0)) lo = q.i64(0), hi = q.i64(1);
    TC_RETURN_IF_ERROR(q.status());
    int64_t rows = options.ranges ? hi - lo + 1 : 0;
    tl.ranges_loaded = options.ranges;
    int threads = options.threads > 0 ? options.threads
                                      : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
    if (rows < 200000) threads = 1;
    if (rows > 0) {
      chunks.resize(threads);
      std::vector<std::thread> workers;
      int64_t per = (rows + threads - 1) / threads;
      for (int i = 0; i < threads; ++i) {
        int64_t a = lo + i * per, b = std::min(hi + 1, a + per);
        if (i == 0) {
          continue;  // read by this thread below, with the caller's Reader
        }
        workers.emplace_back([&, i, a, b] {
          auto own = store::Reader::open(reader.path());
          if (!own.ok()) {
            chunks[i].status = own.status();
            return;
          }
          read_ranges(*own, a, b, domain_of, &chunks[i]);
        });
      }
      read_ranges(reader, lo, std::min(hi + 1, lo + per), domain_of, &chunks[0]);
      for (auto& w : workers) w.join();
      for (const RangeChunk& c : chunks) {
        TC_RETURN_IF_ERROR(c.status);
        see(c.min_ts, c.max_end);
        for (const auto& [key, p] : c.nvtx) {
          if (std::find(p.cut.begin(), p.cut.end(), 1) != p.cut.end()) see_cut_end(key.first);
        }
      }
    }
  }
  if (min_ts == kOpen) min_ts = 0, max_end = 1;
  if (max_end <= min_ts) max_end = min_ts + 1;
  tl.start_ts = min_ts;
  tl.end_ts = max_end;

  // Assemble lanes: fixed tracks first, then ranges by depth.
  auto lane_for = [&](int64_t utid) -> Lane& {
    auto it = lane_of.find(utid);
    if (it != lane_of.end()) return tl.lanes[it->second];
    Lane lane;  // a thread the threads table does not know
    lane.utid = utid;
    lane.name = "thread utid " + std::to_string(utid);
    lane_of[utid] = tl.lanes.size();
    tl.lanes.push_back(std::move(lane));
    return tl.lanes.back();
  };
  for (auto& [utid, p] : pending) {
    Lane& lane = lane_for(utid);
    std::pair<Pending*, TrackKind> kinds[] = {{&p.steps, TrackKind::kSteps},
                                              {&p.compilations, TrackKind::kCompilations},
                                              {&p.executions, TrackKind::kExecutions},
                                              {&p.kernels, TrackKind::kKernels},
                                              {&p.collectives, TrackKind::kCollectives},
                                              {&p.evaluations, TrackKind::kEvaluations},
                                              {&p.instants, TrackKind::kInstants}};
    for (auto& [pend, kind] : kinds) {
      if (pend->ts.empty()) continue;
      lane.tracks.push_back(finish_track(std::move(*pend), kind, 0, track_kind_name(kind), tl.end_ts));
    }
  }
  std::map<std::pair<int64_t, int64_t>, Pending> ranges;
  std::map<std::pair<int64_t, int>, Pending> nvtx_ranges;
  for (RangeChunk& c : chunks) {
    for (auto& [key, p] : c.tracks) ranges[key].append(std::move(p));
    for (auto& [key, p] : c.nvtx) nvtx_ranges[key].append(std::move(p));
  }
  chunks.clear();
  for (auto& [key, p] : ranges) {
    Lane& lane = lane_for(key.first);
    lane.tracks.push_back(finish_track(std::move(p), TrackKind::kRanges, static_cast<int>(key.second),
                                       "depth " + std::to_string(key.second), tl.end_ts));
  }
  // NVTX, after tc's own ranges: per thread, one group per domain (marks,
  // push/pop ranges by depth, start/end ranges). A cut range is drawn to its
  // process's end, or the run's when that is unknown.
  std::set<std::pair<int64_t, int>> groups;
  for (const auto& [key, p] : nvtx_pending) groups.insert(key);
  for (const auto& [key, p] : nvtx_ranges) groups.insert(key);
  for (const auto& key : groups) {
    Lane& lane = lane_for(key.first);
    const int64_t cut_end = lane.process_end > 0 ? lane.process_end : tl.end_ts;
    auto add = [&](Pending&& p, TrackKind kind, int depth, std::string name) {
      Track t = finish_track(std::move(p), kind, depth, std::move(name), cut_end);
      t.domain = key.second;
      lane.tracks.push_back(std::move(t));
    };
    auto np = nvtx_pending.find(key);
    if (np != nvtx_pending.end() && !np->second.marks.ts.empty()) add(std::move(np->second.marks), TrackKind::kNvtxMarks, 0, "marks");
    auto nr = nvtx_ranges.find(key);
    if (nr != nvtx_ranges.end()) {
      std::vector<Pending> by_depth = split_by_nesting(nr->second);
      for (size_t d = 0; d < by_depth.size(); ++d) add(std::move(by_depth[d]), TrackKind::kNvtxRanges, static_cast<int>(d), "depth " + std::to_string(d));
    }
    if (np != nvtx_pending.end() && !np->second.start_ends.ts.empty()) {
      std::vector<Pending> rows = split_into_rows(np->second.start_ends);
      for (size_t r = 0; r < rows.size(); ++r) add(std::move(rows[r]), TrackKind::kNvtxStartEnd, static_cast<int>(r), "start/end");
    }
  }
  for (NvtxStartEnd& r : tl.nvtx_start_ends) {
    if (!r.cut) continue;
    auto it = lane_of.find(r.utid);
    int64_t process_end = it != lane_of.end() ? tl.lanes[it->second].process_end : 0;
    r.end = std::max(process_end > 0 ? process_end : tl.end_ts, r.ts + 1);
  }
  std::erase_if(tl.lanes, [](const Lane& l) { return l.tracks.empty(); });
  settle_collectives(&tl);  // counts tl.event_count
  return tl;
}

}  // namespace tc::analysis::timeline
