// load_timeline: the locations and threads, then each kind's reader (its
// own file), then each thread's tracks in a fixed order.
#include <algorithm>
#include <numeric>

#include "load.h"
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

// Locations, by id.
Status read_locations(Load& ld) {
  auto bound = location_id_bound(ld.reader);
  TC_RETURN_IF_ERROR(bound.status());
  auto q = ld.reader.query("SELECT id, name, file, function, line FROM locations ORDER BY id");
  while (q.next()) {
    int64_t id = q.i64(0);
    if (id < 0 || id >= *bound) {
      ++ld.tl.skipped.locations;
      continue;
    }
    if (ld.tl.locations.size() <= static_cast<size_t>(id)) ld.tl.locations.resize(id + 1);
    Location& l = ld.tl.locations[id];
    l.name = q.text(1);
    l.file = q.text(2);
    l.function = q.text(3);
    l.line = q.i64(4);
  }
  return q.status();
}

// Threads with their processes: one lane each, in process order.
Status read_lanes(Load& ld) {
  auto q = ld.reader.query(
      "SELECT t.utid, t.upid, t.tid, t.name, p.pid, p.name, p.end_ts FROM threads t LEFT JOIN processes p ON p.upid = t.upid "
      "ORDER BY t.upid, t.utid");
  while (q.next()) {
    Lane lane;
    lane.utid = q.i64(0);
    lane.upid = q.i64(1);
    lane.tid = q.i64(2);
    lane.pid = q.i64(4);
    lane.process_end = in_time_range(q.i64(6)) ? q.i64(6) : 0;  // 0: unknown
    std::string process = q.text(5).empty() ? "process" : std::string(q.text(5));
    std::string thread = q.text(3).empty() ? "thread" : std::string(q.text(3));
    lane.name = process + " " + std::to_string(lane.pid) + " / " + thread + " " + std::to_string(lane.tid);
    ld.lane_of[lane.utid] = ld.tl.lanes.size();
    ld.tl.lanes.push_back(std::move(lane));
  }
  return q.status();
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
  TC_RETURN_IF_ERROR(detail::read_locations(ld));
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
