// load_timeline: the locations and threads, then each kind's reader (its
// own file), then each thread's tracks in a fixed order.
#include <algorithm>
#include <map>
#include <numeric>

#include "load.h"
#include "rows.h"
#include "tc/analysis/timeline/job.h"

namespace tc::analysis::timeline {
namespace detail {
namespace {

template <typename T>
void permute(std::vector<T>* v, const std::vector<uint32_t>& order) {
  if (v->empty()) return;
  std::vector<T> out(v->size());
  for (size_t i = 0; i < order.size(); ++i) out[i] = (*v)[order[i]];
  v->swap(out);
}

// Threads with their processes: one lane each, in process order.
Status read_lanes(Load& ld) {
  std::map<int64_t, rows::Process> processes;  // by upid; the first row of a upid stands
  TC_RETURN_IF_ERROR(rows::each_process(ld.reader, [&](const rows::Process& p) { processes.emplace(p.upid, p); }));
  return rows::each_thread(ld.reader, [&](const rows::Thread& t) {
    auto p = processes.find(t.upid);
    const rows::Process* process = p != processes.end() ? &p->second : nullptr;
    Lane lane;
    lane.utid = t.utid;
    lane.upid = t.upid;
    lane.tid = t.tid;
    lane.pid = process ? process->pid : 0;
    const int64_t end = process ? process->end_ts.value_or(0) : 0;
    lane.process_end = in_time_range(end) ? end : 0;  // 0: unknown
    std::string name = process ? process->name.value_or("") : "";
    std::string thread = t.name.value_or("");
    lane.name = (name.empty() ? "process" : name) + " " + std::to_string(lane.pid) + " / " + (thread.empty() ? "thread" : thread) + " " +
                std::to_string(lane.tid);
    ld.lane_of[lane.utid] = ld.tl.lanes.size();
    ld.tl.lanes.push_back(std::move(lane));
  });
}

// Each lane's tracks: tc's own kinds first, then ranges by depth, then NVTX
// by domain.
void assemble_lanes(Load& ld) {
  Timeline& tl = ld.tl;
  std::vector<TrackKind> rows;  // the kinds of one row, by KindTraits::row
  for (int k = 0; k < kKinds; ++k) {
    if (traits(static_cast<TrackKind>(k)).row >= 0) rows.push_back(static_cast<TrackKind>(k));
  }
  std::sort(rows.begin(), rows.end(), [](TrackKind a, TrackKind b) { return traits(a).row < traits(b).row; });
  for (auto& [utid, p] : ld.pending) {
    Lane& lane = ld.lane_for(utid);
    for (TrackKind kind : rows) {
      Pending& pend = p[static_cast<size_t>(kind)];
      if (pend.ts.empty()) continue;
      lane.tracks.push_back(finish_track(std::move(pend), kind, 0, track_kind_name(kind), tl.end_ts));
    }
  }
  std::map<std::pair<int64_t, int64_t>, Pending> ranges;
  std::map<std::pair<int64_t, int>, Pending> nvtx_ranges;
  for (RangeChunk& c : ld.chunks) {
    for (auto& [key, p] : c.tracks) ranges[key].append(std::move(p));
    for (auto& [key, p] : c.nvtx) nvtx_ranges[key].append(std::move(p));
  }
  ld.chunks.clear();
  for (auto& [key, p] : ranges) {
    Lane& lane = ld.lane_for(key.first);
    lane.tracks.push_back(finish_track(std::move(p), TrackKind::kRanges, static_cast<int>(key.second),
                                       "depth " + std::to_string(key.second), tl.end_ts));
  }
  add_nvtx_tracks(ld, nvtx_ranges);
}

}  // namespace

void Pending::append(Pending&& o) {
  if (ts.empty()) {
    *this = std::move(o);
    return;
  }
  ts.insert(ts.end(), o.ts.begin(), o.ts.end());
  end.insert(end.end(), o.end.begin(), o.end.end());
  ref.insert(ref.end(), o.ref.begin(), o.ref.end());
  arg.insert(arg.end(), o.arg.begin(), o.arg.end());
  cut.insert(cut.end(), o.cut.begin(), o.cut.end());
}

void Pending::take(const Pending& o, size_t i) {
  add(o.ts[i], o.end[i], o.ref[i], o.arg.empty() ? 0 : o.arg[i], !o.arg.empty());
  if (!o.cut.empty()) cut.push_back(o.cut[i]);
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


void Load::see_cut_end(int64_t utid) {
  auto it = lane_of.find(utid);
  if (it != lane_of.end() && tl.lanes[it->second].process_end > 0) see(tl.lanes[it->second].process_end - 1, tl.lanes[it->second].process_end);
}

Lane& Load::lane_for(int64_t utid) {
  auto it = lane_of.find(utid);
  if (it != lane_of.end()) return tl.lanes[it->second];
  Lane lane;  // a thread the threads table does not know
  lane.utid = utid;
  lane.name = "thread utid " + std::to_string(utid);
  lane_of[utid] = tl.lanes.size();
  tl.lanes.push_back(std::move(lane));
  return tl.lanes.back();
}

}  // namespace detail

namespace rows {

Status each_process(const store::Reader& r, const std::function<void(const Process&)>& f) {
  auto q = r.query("SELECT upid, pid, name, end_ts FROM processes");
  while (q.next()) {
    Process p{q.i64(0), q.i64(1), std::nullopt, std::nullopt};
    if (!q.is_null(2)) p.name = std::string(q.text(2));
    if (!q.is_null(3)) p.end_ts = q.i64(3);
    f(p);
  }
  return q.status();
}

Status each_thread(const store::Reader& r, const std::function<void(const Thread&)>& f) {
  auto q = r.query("SELECT utid, upid, tid, name FROM threads ORDER BY upid, utid");
  while (q.next()) {
    Thread t{q.i64(0), q.i64(1), q.i64(2), std::nullopt};
    if (!q.is_null(3)) t.name = std::string(q.text(3));
    f(t);
  }
  return q.status();
}

Status read_locations(const store::Reader& r, Timeline* tl) {
  auto bound = location_id_bound(r);
  TC_RETURN_IF_ERROR(bound.status());
  auto q = r.query("SELECT id, name, file, function, line FROM locations ORDER BY id");
  while (q.next()) {
    int64_t id = q.i64(0);
    if (id < 0 || id >= *bound) {
      ++tl->skipped.locations;
      continue;
    }
    if (tl->locations.size() <= static_cast<size_t>(id)) tl->locations.resize(id + 1);
    Location& l = tl->locations[id];
    l.name = q.text(1);
    l.named = !q.is_null(1);
    l.file = q.text(2);
    l.function = q.text(3);
    l.line = q.i64(4);
  }
  return q.status();
}

}  // namespace rows

StatusOr<int64_t> location_id_bound(const store::Reader& reader) {
  auto q = reader.query("SELECT count(*) FROM locations");
  const int64_t rows = q.next() ? q.i64(0) : 0;
  TC_RETURN_IF_ERROR(q.status());
  return std::min<int64_t>(2 * std::max<int64_t>(rows, 0) + 65536, int64_t{1} << 24);
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
  detail::Load ld(reader, tl);
  TC_RETURN_IF_ERROR(rows::read_locations(reader, &tl));
  TC_RETURN_IF_ERROR(detail::read_lanes(ld));
  TC_RETURN_IF_ERROR(detail::read_nvtx(ld));
  for (int k = 0; k < detail::kKinds; ++k) {
    if (auto read = detail::traits(static_cast<TrackKind>(k)).read) TC_RETURN_IF_ERROR(read(ld));
  }
  TC_RETURN_IF_ERROR(detail::read_memory(ld));
  TC_RETURN_IF_ERROR(detail::read_ranges(ld, options));
  if (ld.min_ts == detail::kOpen) ld.min_ts = 0, ld.max_end = 1;
  if (ld.max_end <= ld.min_ts) ld.max_end = ld.min_ts + 1;
  tl.start_ts = ld.min_ts;
  tl.end_ts = ld.max_end;
  auto run_start = reader.scalar_i64("SELECT coalesce((SELECT start_ts FROM run WHERE id = 1), " + std::to_string(tl.start_ts) + ")");
  tl.origin_ts = run_start.ok() ? std::min(*run_start, tl.start_ts) : tl.start_ts;
  detail::assemble_lanes(ld);
  std::erase_if(tl.lanes, [](const Lane& l) { return l.tracks.empty(); });
  for (Lane& lane : tl.lanes) lane.tracks.shrink_to_fit();  // one lane may hold a track per depth
  tl.lanes.shrink_to_fit();
  settle_collectives(&tl);  // counts tl.event_count
  return tl;
}

}  // namespace tc::analysis::timeline
