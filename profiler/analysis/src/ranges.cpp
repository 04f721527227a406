#include "tc/analysis/ranges.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "json.h"
#include "ranges_json.h"
#include "tc/analysis/format.h"
#include "tc/analysis/timeline/timeline.h"
#include "timeline/rows.h"
#include "tc/store/schema.h"

namespace tc::analysis {

namespace {

constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();  // the end of a cut range

struct Group {
  RangeStats stats;
  std::vector<int64_t> durs;
  std::set<int64_t> utids;
};

// One push/pop range, held until its thread's ranges are sorted for nesting.
struct Item {
  int64_t ts, end;  // end = kOpen when cut
  int64_t covered;  // time its direct children covered
  int32_t depth, group;
};

struct Site {
  int32_t group = -1;       // -1: filtered out
  bool nvtx = false;
  std::string name, domain;
};

int64_t nearest_rank(std::vector<int64_t>& sorted_later, double p) {
  size_t i = std::min(sorted_later.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted_later.size())));
  std::nth_element(sorted_later.begin(), sorted_later.begin() + static_cast<std::ptrdiff_t>(i), sorted_later.end());
  return sorted_later[i];
}

bool passes(const RangeFilter& f, const Site& s) {
  if (s.nvtx && s.domain.empty())
    for (const char* hook : kHookMarks)
      if (s.name == hook) return false;
  if (f.domain && *f.domain != s.domain) return false;
  if (f.kind && *f.kind != (s.nvtx ? "nvtx" : "tc")) return false;
  return f.name_contains.empty() || s.name.find(f.name_contains) != std::string::npos;
}

using Keys = std::map<std::tuple<std::string, std::string, bool>, int32_t>;

// NVTX start/end ranges (schema v3), paired as the timeline pairs them, as
// f(utid, ts, loc_id, dur) (dur -1 when it never ended); one out of time
// range is left out and counted in *skipped, as the timeline does.
template <typename F>
Status start_end_ranges(const store::Reader& r, int64_t* skipped, F&& f) {
  auto pairs = timeline::read_nvtx_start_ends(r);
  if (!pairs.ok()) return pairs.status();
  for (const timeline::NvtxStartEnd& se : *pairs) {
    int64_t dur = se.cut ? int64_t{-1} : se.end - se.ts;
    if (timeline::rows::keep(se.ts, &dur, skipped)) f(se.utid, se.ts, se.loc_id, dur);
  }
  return Status::Ok();
}

// Every location, with the group of (name, domain, kind) it belongs to.
// Ranges and marks number their groups separately: `groups` is filled for one of them.
struct Sites {
  std::unordered_map<int64_t, Site> by_loc;
  // The model's locations (a NULL name, or an id past its bound, is an unknown location).
  Status read(const store::Reader& r, StoreText& text) {
    timeline::Timeline tl;
    TC_RETURN_IF_ERROR(timeline::rows::read_locations(r, &tl));
    for (size_t id = 0; id < tl.locations.size(); ++id) {
      const timeline::Location& l = tl.locations[id];
      if (!l.named) continue;
      Site s;
      s.nvtx = l.file == "nvtx";
      s.name = text(l.name);
      s.domain = s.nvtx ? text(l.function) : std::string();
      by_loc.emplace(static_cast<int64_t>(id), std::move(s));
    }
    return Status::Ok();
  }
  // The group index of loc for this filter (-1: filtered out), creating it in `keys`.
  int32_t group(int64_t loc, const RangeFilter& f, Keys& keys) {
    auto it = by_loc.find(loc);
    Site unknown{-1, false, "(unknown location " + std::to_string(loc) + ")", ""};
    const Site& s = it != by_loc.end() ? it->second : unknown;
    if (!passes(f, s)) return -1;
    auto [k, added] = keys.try_emplace({s.name, s.domain, s.nvtx}, static_cast<int32_t>(keys.size()));
    return k->second;
  }
};

// Each group's statistics from its durations, largest total first.
void finish_groups(const Keys& range_keys, std::vector<Group>& groups, RangeTable& t) {
  for (const auto& [key, index] : range_keys) {
    Group& g = groups[static_cast<size_t>(index)];
    RangeStats& st = g.stats;
    st.name = std::get<0>(key);
    st.domain = std::get<1>(key);
    st.kind = std::get<2>(key) ? "nvtx" : "tc";
    st.threads = static_cast<int64_t>(g.utids.size());
    if (!g.durs.empty()) {
      st.min_ns = *std::min_element(g.durs.begin(), g.durs.end());
      st.max_ns = *std::max_element(g.durs.begin(), g.durs.end());
      for (int64_t d : g.durs) st.total_ns += d;
      st.mean_ns = st.total_ns / static_cast<int64_t>(g.durs.size());
      st.p50_ns = nearest_rank(g.durs, 0.5);
      st.p99_ns = nearest_rank(g.durs, 0.99);
    }
    t.range_count += st.count;
    t.cut_count += st.cut;
    t.ranges.push_back(std::move(st));
  }
  std::sort(t.ranges.begin(), t.ranges.end(), [](const RangeStats& a, const RangeStats& b) {
    return std::tie(b.total_ns, b.count, a.name, a.domain, a.kind) < std::tie(a.total_ns, a.count, b.name, b.domain, b.kind);
  });
}

// Marks: counted per thread and location in one pass.
Status count_marks(const store::Reader& r, const RangeFilter& filter, Sites& sites, std::map<int64_t, ThreadStats>& threads, RangeTable& t) {
  Keys mark_keys;
  std::unordered_map<int64_t, int32_t> mark_group;
  std::vector<int64_t> mark_counts;
  int64_t mark_loc = 0, mark_utid = 0;
  int32_t g = -2;
  ThreadStats* thread = nullptr;
  TC_RETURN_IF_ERROR(timeline::rows::each_instant(r, &t.skipped_events, [&](const timeline::rows::Instant& m) {
    if (g == -2 || m.loc_id != mark_loc) {
      auto it = mark_group.find(m.loc_id);
      g = it != mark_group.end() ? it->second : (mark_group[m.loc_id] = sites.group(m.loc_id, filter, mark_keys));
      mark_loc = m.loc_id;
    }
    if (g < 0) return;
    if (mark_counts.size() < mark_keys.size()) mark_counts.resize(mark_keys.size(), 0);
    mark_counts[static_cast<size_t>(g)] += 1;
    if (thread == nullptr || m.utid != mark_utid) thread = &threads[m.utid], mark_utid = m.utid;
    thread->marks += 1;
  }));
  for (const auto& [key, index] : mark_keys) {
    MarkStats s{std::get<0>(key), std::get<1>(key), std::get<2>(key) ? "nvtx" : "tc", mark_counts[static_cast<size_t>(index)]};
    t.mark_count += s.count;
    t.marks.push_back(std::move(s));
  }
  std::sort(t.marks.begin(), t.marks.end(), [](const MarkStats& a, const MarkStats& b) {
    return std::tie(b.count, a.name, a.domain, a.kind) < std::tie(a.count, b.name, b.domain, b.kind);
  });
  return Status::Ok();
}

// Threads: pid, tid and name; a thread that another one named (nvtxNameOsThread) takes that name.
Status name_threads(const store::Reader& r, StoreText& text, std::map<int64_t, ThreadStats>& threads, RangeTable& t) {
  if (!threads.empty()) {
    std::map<std::pair<int64_t, int64_t>, std::string> nvtx_names;  // (upid, tid) -> last name given
    if (r.has(store::schema::nvtx_thread_names, "name")) {
      for (auto n = r.query("SELECT t.upid, n.tid, n.name FROM nvtx_thread_names n JOIN threads t ON t.utid = n.utid ORDER BY n.id"); n.next();)
        nvtx_names[{n.i64(0), n.i64(1)}] = text(n.text(2));
    }
    std::map<int64_t, int64_t> pid_of;  // upid -> pid
    TC_RETURN_IF_ERROR(timeline::rows::each_process(r, [&](const timeline::rows::Process& p) { pid_of.emplace(p.upid, p.pid); }));
    TC_RETURN_IF_ERROR(timeline::rows::each_thread(r, [&](const timeline::rows::Thread& th) {
      auto it = threads.find(th.utid);
      if (it == threads.end()) return;
      ThreadStats& ts = it->second;
      auto pid = pid_of.find(th.upid);
      ts.pid = pid != pid_of.end() ? pid->second : 0;
      ts.tid = th.tid;
      ts.name = text(th.name.value_or(""));
      if (ts.name.empty()) {
        auto named = nvtx_names.find({th.upid, ts.tid});
        if (named != nvtx_names.end()) ts.name = named->second;
      }
    }));
    for (auto& [utid, ts] : threads) {
      ts.utid = utid;
      t.threads.push_back(std::move(ts));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RangeTable> range_table(const store::Reader& r, const RangeFilter& filter, StoreText& text) {
  RangeTable t;
  Sites sites;
  TC_RETURN_IF_ERROR(sites.read(r, text));
  // The group of each location, looked up once per location rather than once per row.
  Keys range_keys;
  std::unordered_map<int64_t, int32_t> range_group;
  int64_t last_loc = 0;
  int32_t last_group = -2;  // -2: none looked up yet
  auto group_of = [&](int64_t loc) {
    if (last_group != -2 && loc == last_loc) return last_group;
    auto it = range_group.find(loc);
    last_loc = loc;
    return last_group = it != range_group.end() ? it->second : (range_group[loc] = sites.group(loc, filter, range_keys));
  };
  std::vector<Group> groups;
  auto grow = [&] {
    while (groups.size() < range_keys.size()) groups.emplace_back();
  };
  std::map<int64_t, ThreadStats> threads;
  std::unordered_map<int64_t, std::vector<Item>> by_thread;

  // Millions of rows: per row only the cached group and thread, no lookups.
  int64_t last_utid = 0;
  std::vector<Item>* items_of = nullptr;
  TC_RETURN_IF_ERROR(timeline::rows::each_range(r, std::nullopt, &t.skipped_events, [&](const timeline::rows::Range& row) {
    int32_t g = group_of(row.loc_id);
    const int64_t utid = row.utid, ts = row.ts, dur = row.dur, depth = row.depth;
    bool cut = dur < 0;
    if (g >= 0) {
      grow();
      Group& group = groups[static_cast<size_t>(g)];
      group.stats.count += 1;
      if (cut) group.stats.cut += 1;
      else group.durs.push_back(dur);
    }
    if (items_of == nullptr || utid != last_utid) items_of = &by_thread[utid], last_utid = utid;
    // A range the filter leaves out still covers its parent's time. A depth
    // beyond int32 is no real nesting and takes no part in it.
    int32_t d = depth >= 0 && depth < (int64_t{1} << 30) ? static_cast<int32_t>(depth) : -1;
    items_of->push_back({ts, cut ? kOpen : ts + dur, 0, d, g});
  }));

  // Self time: sorted by start (a parent before the children that start with
  // it), a range's parent is the last range one level up that started at or
  // before it; it is a child when it starts before that one ends.
  for (auto& entry : by_thread) {
    std::vector<Item>& items = entry.second;
    auto order = [](const Item& a, const Item& b) { return a.ts != b.ts ? a.ts < b.ts : a.depth < b.depth; };
    if (!std::is_sorted(items.begin(), items.end(), order)) std::sort(items.begin(), items.end(), order);
    std::vector<int64_t> last;  // depth -> index of the last range seen at that depth
    for (size_t i = 0; i < items.size(); ++i) {
      Item& it = items[i];
      if (it.depth < 0) continue;
      size_t d = static_cast<size_t>(it.depth);
      if (d > 0 && d - 1 < last.size() && last[d - 1] >= 0) {
        Item& parent = items[static_cast<size_t>(last[d - 1])];
        if (it.ts <= parent.end) parent.covered += std::min(it.end, parent.end) - it.ts;
      }
      if (last.size() <= d) last.resize(d + 1, -1);
      last[d] = static_cast<int64_t>(i);
    }
    int64_t on_thread = 0;
    for (const Item& it : items) {
      if (it.group < 0) continue;
      ++on_thread;
      Group& group = groups[static_cast<size_t>(it.group)];
      if (group.utids.empty() || *group.utids.rbegin() != entry.first) group.utids.insert(entry.first);
      if (it.end != kOpen) group.stats.self_ns += std::max<int64_t>(0, it.end - it.ts - it.covered);
    }
    if (on_thread > 0) threads[entry.first].ranges += on_thread;
  }
  by_thread.clear();

  TC_RETURN_IF_ERROR(start_end_ranges(r, &t.skipped_events, [&](int64_t utid, int64_t, int64_t loc, int64_t dur) {
    int32_t g = group_of(loc);
    if (g < 0) return;
    grow();
    Group& group = groups[static_cast<size_t>(g)];
    group.stats.count += 1;
    group.utids.insert(utid);
    threads[utid].ranges += 1;
    if (dur < 0) {
      group.stats.cut += 1;
    } else {
      group.durs.push_back(dur);
      group.stats.self_ns += dur;
    }
  }));

  finish_groups(range_keys, groups, t);

  TC_RETURN_IF_ERROR(count_marks(r, filter, sites, threads, t));
  TC_RETURN_IF_ERROR(name_threads(r, text, threads, t));
  return t;
}

StatusOr<RangeTable> range_table(const store::Reader& r, const RangeFilter& filter) {
  StoreText text;
  return range_table(r, filter, text);
}

void ranges_json_fields(Json& j, const RangeTable& t, size_t top) {
  j.key("ranges").begin_array();
  for (size_t i = 0; i < t.ranges.size() && i < top; ++i) {
    const RangeStats& s = t.ranges[i];
    j.begin_object().field("name", s.name).field("domain", s.domain).field("kind", s.kind).field("count", s.count).field("cut", s.cut);
    j.field("total_ns", s.total_ns).field("mean_ns", s.mean_ns).field("p50_ns", s.p50_ns).field("p99_ns", s.p99_ns);
    j.field("min_ns", s.min_ns).field("max_ns", s.max_ns).field("self_ns", s.self_ns).field("threads", s.threads).end_object();
  }
  j.end_array();
  j.key("marks").begin_array();
  for (size_t i = 0; i < t.marks.size() && i < top; ++i) {
    const MarkStats& m = t.marks[i];
    j.begin_object().field("name", m.name).field("domain", m.domain).field("kind", m.kind).field("count", m.count).end_object();
  }
  j.end_array();
  j.key("threads").begin_array();
  for (const ThreadStats& th : t.threads) {
    j.begin_object().field("utid", th.utid).field("pid", th.pid).field("tid", th.tid).field("name", th.name);
    j.field("ranges", th.ranges).field("marks", th.marks).end_object();
  }
  j.end_array();
}

std::string ranges_json(const RangeTable& t, size_t top) {
  Json j;
  j.begin_object().field("schema", "tc-analyze-ranges/1");
  ranges_json_fields(j, t, top);
  j.end_object();
  return j.str();
}

StatusOr<std::vector<RangeOccurrence>> range_occurrences(const store::Reader& r, const std::string& name) {
  // The locations of that name, matched here rather than in SQL: a name may hold any byte.
  timeline::Timeline tl;
  TC_RETURN_IF_ERROR(timeline::rows::read_locations(r, &tl));
  std::vector<bool> wanted(tl.locations.size());
  bool any = false;
  for (size_t id = 0; id < tl.locations.size(); ++id) {
    if (tl.locations[id].named && tl.locations[id].name == name) wanted[id] = any = true;
  }
  auto is_wanted = [&](int64_t loc) { return loc >= 0 && static_cast<size_t>(loc) < wanted.size() && wanted[static_cast<size_t>(loc)]; };
  std::vector<RangeOccurrence> out;
  if (!any) return out;
  int64_t skipped = 0;  // out of time range: left out, as the timeline does
  TC_RETURN_IF_ERROR(timeline::rows::each_range(r, std::nullopt, &skipped, [&](const timeline::rows::Range& row) {
    if (is_wanted(row.loc_id)) out.push_back({row.utid, row.ts, row.dur < 0 ? -1 : row.dur});
  }));
  TC_RETURN_IF_ERROR(start_end_ranges(r, &skipped, [&](int64_t utid, int64_t ts, int64_t loc, int64_t dur) {
    if (is_wanted(loc)) out.push_back({utid, ts, dur});
  }));
  std::sort(out.begin(), out.end(), [](const RangeOccurrence& a, const RangeOccurrence& b) { return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur; });
  return out;
}

}  // namespace tc::analysis
