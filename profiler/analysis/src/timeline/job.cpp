#include "tc/analysis/timeline/job.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>

#include "kinds.h"
#include "tc/analysis/job.h"

namespace tc::analysis::timeline {

// timeline.h's bound on clock offsets holds because store_ranks() refuses a
// store whose offsets pass analysis::kMaxClockOffsetNs (a damaged store).
static_assert(analysis::kMaxClockOffsetNs <= kClockOffsetLimit);

namespace {

struct Part {
  std::string path;
  std::optional<StatusOr<Timeline>> tl;
  std::vector<analysis::RankIdentity> ranks;
};

Status read_part(const std::string& path, const LoadOptions& options, Part* out) {
  out->path = path;
  auto reader = store::Reader::open(path);
  if (!reader.ok() && reader.status().code() == StatusCode::kNotFound) {
    // tc-profile -o run.tcdb under mpirun wrote run.rank0.tcdb, run.rank1.tcdb, ... (cli/src/rank_output.h).
    const std::string suffix = ".tcdb";
    const bool tcdb = path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
    const std::string stem = tcdb ? path.substr(0, path.size() - suffix.size()) : path;
    std::error_code ec;
    if (std::filesystem::exists(stem + ".rank0" + (tcdb ? suffix : ""), ec)) {
      return Status(StatusCode::kNotFound, reader.status().message() + "; its job wrote one store per rank: tc-viewer " + stem + ".rank*" +
                                               (tcdb ? suffix : ""));
    }
  }
  if (!reader.ok()) return reader.status();
  auto ranks = analysis::store_ranks(*reader);
  if (!ranks.ok()) return ranks.status();  // its message names the store
  out->ranks = std::move(*ranks);
  out->tl.emplace(load_timeline(*reader, options));
  return (*out->tl).ok() ? Status() : (*out->tl).status();
}

void shift_track(Track* t, int64_t by) {
  if (by == 0) return;
  for (int64_t& x : t->ts) x += by;
  for (int64_t& x : t->end) x += by;
  for (int64_t& x : t->max_end) x += by;
}

// Groups: one per rank (ascending), then each store's processes that are no rank.
struct GroupBuild {
  RankGroup g;
  std::vector<std::pair<size_t, size_t>> lanes;  // (part, lane)
  bool pid_set = false;
};
using GroupKey = std::pair<int64_t, size_t>;

struct Merge {
  std::vector<Part>& parts;
  Timeline m;
  std::map<GroupKey, GroupBuild> groups;
  std::vector<std::vector<int64_t>> lane_offset;    // per store, per lane: its rank's clock offset
  std::vector<std::vector<GroupKey>> group_of;      // per store, per lane
  std::vector<int64_t> store_offset;                // per store: its first rank's clock offset
  std::map<std::pair<bool, std::string>, int> domain_index;  // (not the default, name) -> m's domain
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, uint32_t> loc_key;

  explicit Merge(std::vector<Part>& p) : parts(p), lane_offset(p.size()), group_of(p.size()), store_offset(p.size(), 0) {}
  void domains();
  void group_lanes();
  void locations(detail::StoreMerge& sm);
  void nvtx_sites(detail::StoreMerge& sm, const std::vector<int>& domain_map);
  void store(size_t s);
  void lanes();
  void memory();
  void extent();
};

// NVTX domains of every store: the default first, then by name.
void Merge::domains() {
  for (Part& p : parts) {
    for (const NvtxDomain& d : (**p.tl).nvtx_domains) domain_index.emplace(std::pair{!d.is_default, d.name}, 0);
  }
  for (auto& [key, index] : domain_index) {
    index = static_cast<int>(m.nvtx_domains.size());
    m.nvtx_domains.push_back({key.second, !key.first});
  }
}

// Which rank each lane is: by its process in a store of several ranks, else the store's one (rank 0 of a world of 1 without one).
void Merge::group_lanes() {
  for (size_t s = 0; s < parts.size(); ++s) {
    Timeline& t = **parts[s].tl;
    const auto& ranks = parts[s].ranks;
    if (!ranks.empty()) store_offset[s] = ranks.front().clock_offset_ns;
    for (const auto& id : ranks) {
      if (!id.job.empty() && m.job.empty()) m.job = id.job;
      m.world_size = std::max(m.world_size, id.world_size);
    }
    for (const Lane& lane : t.lanes) {
      const analysis::RankIdentity* id = nullptr;
      if (ranks.size() == 1) id = &ranks[0];
      for (size_t k = 0; ranks.size() > 1 && k < ranks.size(); ++k)
        if (ranks[k].upid == lane.upid) id = &ranks[k];
      GroupKey key = id ? GroupKey{id->rank, size_t{0}} : ranks.empty() ? GroupKey{int64_t{0}, size_t{0}}
                                                                      : GroupKey{std::numeric_limits<int64_t>::max(), s};
      GroupBuild& g = groups[key];
      if (g.lanes.empty()) {
        g.g.rank = key.first == std::numeric_limits<int64_t>::max() ? -1 : key.first;
        g.g.store = parts[s].path;
        g.g.host = id ? id->host : "";
        g.g.clock_offset_ns = id ? id->clock_offset_ns : store_offset[s];
        g.g.clock_error_ns = id ? id->clock_error_ns : 0;
      }
      if (!g.pid_set && lane.pid != 0) g.g.pid = lane.pid, g.pid_set = true;
      g.lanes.push_back({s, lane_offset[s].size()});
      lane_offset[s].push_back(g.g.clock_offset_ns);
      group_of[s].push_back(key);
    }
  }
  if (m.world_size == 0) m.world_size = static_cast<int64_t>(groups.size());
}

// Locations: one id per (name, file, function, line) over every store; the first store's keep theirs.
void Merge::locations(detail::StoreMerge& sm) {
  const std::vector<Location>& locs = sm.t.locations;
  sm.loc_map.assign(locs.size(), detail::StoreMerge::kUnknownLoc);
  for (size_t id = 0; id < locs.size(); ++id) {
    const Location& l = locs[id];
    const bool empty = l.name.empty() && l.file.empty() && l.function.empty() && l.line == 0;
    if (sm.store == 0) {
      m.locations.push_back(l);
      sm.loc_map[id] = static_cast<uint32_t>(id);
      if (!empty) loc_key.emplace(std::tuple{l.name, l.file, l.function, l.line}, static_cast<uint32_t>(id));
      continue;
    }
    if (empty) continue;
    auto [it, fresh] = loc_key.emplace(std::tuple{l.name, l.file, l.function, l.line}, static_cast<uint32_t>(m.locations.size()));
    if (fresh) m.locations.push_back(l);
    sm.loc_map[id] = it->second;
  }
}

void Merge::nvtx_sites(detail::StoreMerge& sm, const std::vector<int>& domain_map) {
  const Timeline& t = sm.t;
  for (size_t id = 0; id < t.nvtx_site_of.size(); ++id) {
    if (t.nvtx_site_of[id] < 0 || sm.loc(static_cast<int64_t>(id)) == detail::StoreMerge::kUnknownLoc) continue;
    const uint32_t ml = sm.loc(static_cast<int64_t>(id));
    if (m.nvtx_site_of.size() <= ml) m.nvtx_site_of.resize(ml + 1, -1);
    if (m.nvtx_site_of[ml] >= 0) continue;
    NvtxSite site = t.nvtx_sites[static_cast<size_t>(t.nvtx_site_of[id])];
    site.domain = domain_map[static_cast<size_t>(site.domain)];
    m.nvtx_site_of[ml] = static_cast<int32_t>(m.nvtx_sites.size());
    m.nvtx_sites.push_back(site);
  }
}

// Store s's records and lanes into m: each kind's records appended (its
// traits), each track's refs rebased and its times put on rank 0's clock.
void Merge::store(size_t s) {
  Timeline& t = **parts[s].tl;
  m.ranges_loaded = m.ranges_loaded && t.ranges_loaded;
  detail::StoreMerge sm{m, t, s, {}};
  locations(sm);
  std::vector<int> domain_map(t.nvtx_domains.size());
  for (size_t d = 0; d < t.nvtx_domains.size(); ++d) domain_map[d] = domain_index[{!t.nvtx_domains[d].is_default, t.nvtx_domains[d].name}];
  nvtx_sites(sm, domain_map);
  std::map<TrackKind, uint32_t> base;
  for (int k = 0; k < detail::kKinds; ++k) {
    const detail::KindTraits& kind = detail::traits(static_cast<TrackKind>(k));
    if (kind.append) base[static_cast<TrackKind>(k)] = kind.append(sm);
  }
  std::map<int64_t, int64_t> offset_of_utid;
  for (size_t l = 0; l < t.lanes.size(); ++l) {
    Lane& lane = t.lanes[l];
    const int64_t o = lane_offset[s][l];
    const int64_t rank = groups[group_of[s][l]].g.rank;
    offset_of_utid[lane.utid] = o;
    for (Track& tr : lane.tracks) {
      shift_track(&tr, o);
      if (tr.domain >= 0) tr.domain = domain_map[static_cast<size_t>(tr.domain)];
      const detail::KindTraits& kind = detail::traits(tr.kind);
      for (uint32_t& r : tr.ref) kind.rebase(sm, tr, r, base[tr.kind], o, rank);
    }
    lane.utid = sm.utid(lane.utid);
    lane.upid = lane.upid + (static_cast<int64_t>(s) << 40);
    if (lane.process_end > 0) lane.process_end += o;
  }
  for (Timeline::RealPayload p : t.nvtx_real_payloads) {
    auto it = offset_of_utid.find(p.utid);
    p.ts += it != offset_of_utid.end() ? it->second : store_offset[s];
    p.utid = sm.utid(p.utid);
    p.loc_id = sm.loc(p.loc_id);
    m.nvtx_real_payloads.push_back(p);
  }
  for (OutOfMemory o : t.out_of_memory) o.ts += store_offset[s], m.out_of_memory.push_back(o);
  m.capacity_bytes = std::max(m.capacity_bytes, t.capacity_bytes);
  m.skipped.events += t.skipped.events;
  m.skipped.locations += t.skipped.locations;
}

// Lanes by group.
void Merge::lanes() {
  for (auto& [key, g] : groups) {
    g.g.first_lane = m.lanes.size();
    for (auto [s, l] : g.lanes) {
      Lane lane = std::move((**parts[s].tl).lanes[l]);
      lane.group = static_cast<int>(m.ranks.size());
      m.lanes.push_back(std::move(lane));
    }
    g.g.lane_count = g.lanes.size();
    m.ranks.push_back(g.g);
  }
}

// Memory: the fullest rank's live bytes at each sample of any rank.
void Merge::memory() {
  struct Sample { int64_t ts; size_t part; double value; };
  std::vector<Sample> all;
  for (size_t s = 0; s < parts.size(); ++s) {
    const CounterSeries& c = (**parts[s].tl).memory;
    for (size_t i = 0; i < c.size(); ++i) all.push_back({c.ts[i] + store_offset[s], s, c.value[i]});
  }
  std::stable_sort(all.begin(), all.end(), [](const Sample& a, const Sample& b) { return a.ts < b.ts; });
  std::vector<double> now(parts.size(), 0);
  m.memory.name = "memory.live_bytes";
  for (const Sample& x : all) {
    now[x.part] = x.value;
    double v = *std::max_element(now.begin(), now.end());
    if (!m.memory.ts.empty() && m.memory.ts.back() == x.ts) m.memory.value.back() = v;
    else m.memory.ts.push_back(x.ts), m.memory.value.push_back(v);
  }
  m.memory.build_levels();
}

void Merge::extent() {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const Lane& lane : m.lanes) {
    for (const Track& t : lane.tracks) {
      if (t.size() == 0) continue;
      lo = std::min(lo, t.ts.front());
      hi = std::max(hi, t.max_end.empty() ? t.end.back() : t.max_end.back());
    }
  }
  if (m.memory.size() > 0) lo = std::min(lo, m.memory.ts.front()), hi = std::max(hi, m.memory.ts.back() + 1);
  for (const OutOfMemory& o : m.out_of_memory) lo = std::min(lo, o.ts), hi = std::max(hi, o.ts + 1);
  if (lo > hi) lo = 0, hi = 1;
  m.start_ts = lo;
  m.origin_ts = lo;
  m.end_ts = std::max(hi, lo + 1);
}

StatusOr<Timeline> merge(std::vector<Part>& parts) {
  Merge mg(parts);
  Timeline& m = mg.m;
  m.load_id = new_load_id();
  m.ranges_loaded = true;
  for (const Part& p : parts) {
    m.paths.push_back(p.path);
    m.path += (m.path.empty() ? "" : " ") + p.path;
  }
  mg.domains();
  mg.group_lanes();
  for (size_t s = 0; s < parts.size(); ++s) mg.store(s);
  mg.lanes();
  for (int k = 0; k < detail::kKinds; ++k) {
    if (auto sort = detail::traits(static_cast<TrackKind>(k)).sort) sort(m);
  }
  std::sort(m.nvtx_real_payloads.begin(), m.nvtx_real_payloads.end(),
            [](const auto& a, const auto& b) { return std::tie(a.utid, a.loc_id, a.ts) < std::tie(b.utid, b.loc_id, b.ts); });
  std::stable_sort(m.out_of_memory.begin(), m.out_of_memory.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  mg.memory();
  settle_collectives(&m);
  mg.extent();
  return std::move(mg.m);
}

}  // namespace

StatusOr<Timeline> load_job_timeline(const std::vector<std::string>& paths, const LoadOptions& options) {
  if (paths.empty()) return Status(StatusCode::kInvalidArgument, "no stores given");
  std::vector<Part> parts(paths.size());
  std::vector<Status> status(paths.size());
  {
    const unsigned hw = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    LoadOptions each = options;
    if (each.threads == 0 && paths.size() > 1) each.threads = static_cast<int>(std::max<size_t>(1, hw / paths.size()));
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < paths.size();) status[i] = read_part(paths[i], each, &parts[i]);
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < std::min<size_t>(paths.size(), hw); ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  for (const Status& s : status) TC_RETURN_IF_ERROR(s);
  {
    std::vector<std::vector<analysis::RankIdentity>> ranks;
    for (const Part& p : parts) ranks.push_back(p.ranks);
    TC_RETURN_IF_ERROR(analysis::check_job_ranks(paths, ranks, "open it on its own"));
  }
  if (parts.size() == 1 && parts[0].ranks.size() <= 1) return std::move(*parts[0].tl);
  return merge(parts);
}

// The ranks of [0, world_size) tl has lanes for, ascending, once each.
std::vector<int64_t> ranks_in_world(const Timeline& tl) {
  std::vector<int64_t> have;
  for (const RankGroup& g : tl.ranks)
    if (g.rank >= 0 && g.rank < tl.world_size) have.push_back(g.rank);
  std::sort(have.begin(), have.end());
  have.erase(std::unique(have.begin(), have.end()), have.end());
  return have;
}

std::vector<int64_t> missing_ranks(const Timeline& tl, size_t limit) {
  const std::vector<int64_t> have = ranks_in_world(tl);
  std::vector<int64_t> out;
  auto next = have.begin();
  for (int64_t r = 0; r < tl.world_size && out.size() < limit; ++r) {
    if (next != have.end() && *next == r) ++next;
    else out.push_back(r);
  }
  return out;
}

int64_t missing_rank_count(const Timeline& tl) {
  return std::max<int64_t>(tl.world_size, 0) - static_cast<int64_t>(ranks_in_world(tl).size());
}

bool anchor_extent(const Timeline& tl, const std::vector<int64_t>& all_anchors_ts, int64_t* t0, int64_t* t1) {
  // A finding's anchors come from the analysis of the same stores: those
  // beyond the model's times (a damaged store's) are left out.
  std::vector<int64_t> anchors_ts;
  for (int64_t a : all_anchors_ts)
    if (a >= -kTimeLimit - kClockOffsetLimit && a < kTimeLimit + kClockOffsetLimit) anchors_ts.push_back(a);
  if (anchors_ts.empty()) return false;
  int64_t lo = *std::min_element(anchors_ts.begin(), anchors_ts.end()), hi = *std::max_element(anchors_ts.begin(), anchors_ts.end()) + 1;
  auto add_step = [&](int64_t step) {
    for (const Step& s : tl.steps)
      if (s.step == step) lo = std::min(lo, s.ts), hi = std::max(hi, s.ts + std::max<int64_t>(s.dur, 1));
  };
  for (int64_t a : anchors_ts) {
    bool inside = false;
    for (const Step& s : tl.steps) {
      if (s.ts <= a && a < s.ts + std::max<int64_t>(s.dur, 1)) add_step(s.step), inside = true;
    }
    // An arrival at a collective: every rank's time in it (the waits it
    // caused), and, outside a step's range, the step it ran for.
    auto it = std::lower_bound(tl.collectives.begin(), tl.collectives.end(), a, [](const Collective& c, int64_t ts) { return c.ts < ts; });
    for (; it != tl.collectives.end() && it->ts == a; ++it) {
      if (!inside) add_step(it->step);
      for (const Collective& c : tl.collectives)
        if (c.seq == it->seq) lo = std::min(lo, c.ts), hi = std::max(hi, c.ts + std::max<int64_t>(c.dur, 1));
    }
  }
  *t0 = lo;
  *t1 = hi;
  return true;
}

}  // namespace tc::analysis::timeline
