// NVTX (schema v3): sites, real payloads, start/end ranges and the tracks of
// each thread's domains: marks, push/pop ranges by depth, start/end ranges
// in rows. The Chrome export and tc-analyze ranges read sites and start/end
// ranges through here too.
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {
namespace {

// utid -> upid; a thread missing from threads is a process of its own.
class Upids {
 public:
  Status read(const store::Reader& reader) {
    return rows::each_thread(reader, [&](const rows::Thread& t) { of_[t.utid] = t.upid; });
  }
  int64_t operator()(int64_t utid) const {
    auto it = of_.find(utid);
    return it == of_.end() ? -1 - utid : it->second;
  }

 private:
  std::map<int64_t, int64_t> of_;
};

std::optional<std::string> domain_text(const store::Query& q, int c) {
  return q.is_null(c) ? std::nullopt : std::optional(std::string(q.text(c)));
}

}  // namespace

Status read_nvtx_sites(const store::Reader& reader, Timeline* tl) {
  if (!reader.has(store::schema::nvtx_sites, "loc_id")) return Status::Ok();
  Upids upid;
  TC_RETURN_IF_ERROR(upid.read(reader));
  // Category names: the site's own process's first, else any process's.
  std::map<std::tuple<int64_t, std::optional<std::string>, int64_t>, std::string> names;  // (upid, domain, category)
  std::map<std::pair<std::optional<std::string>, int64_t>, std::string> any_names;        // (domain, category)
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
  auto bound = location_id_bound(reader);
  TC_RETURN_IF_ERROR(bound.status());
  auto q = reader.query("SELECT loc_id, utid, domain, category, color FROM nvtx_sites ORDER BY id");
  while (q.next()) {
    Row r{q.i64(0), domain_text(q, 2), {}};
    if (r.loc_id < 0 || r.loc_id >= *bound) {
      ++tl->skipped.locations;
      continue;
    }
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
    index = static_cast<int>(tl->nvtx_domains.size());
    tl->nvtx_domains.push_back({name.value_or(""), !name.has_value()});
  }
  for (Row& r : rows) {
    if (tl->nvtx_site_of.size() <= static_cast<size_t>(r.loc_id)) tl->nvtx_site_of.resize(r.loc_id + 1, -1);
    if (tl->nvtx_site_of[r.loc_id] >= 0) continue;  // the first row of a loc_id stands
    r.site.domain = domains[r.domain];
    tl->nvtx_site_of[r.loc_id] = static_cast<int32_t>(tl->nvtx_sites.size());
    tl->nvtx_sites.push_back(std::move(r.site));
  }
  if (reader.has(store::schema::nvtx_real_payloads, "value")) {
    auto p = reader.query("SELECT utid, loc_id, ts, value FROM nvtx_real_payloads");
    while (p.next()) tl->nvtx_real_payloads.push_back({p.i64(0), p.i64(1), p.i64(2), p.f64(3)});
    TC_RETURN_IF_ERROR(p.status());
    std::sort(tl->nvtx_real_payloads.begin(), tl->nvtx_real_payloads.end(), [](const auto& a, const auto& b) {
      return std::tie(a.utid, a.loc_id, a.ts) < std::tie(b.utid, b.loc_id, b.ts);
    });
  }
  return Status::Ok();
}

StatusOr<std::vector<NvtxStartEnd>> read_nvtx_start_ends(const store::Reader& reader) {
  std::vector<NvtxStartEnd> out;
  if (!reader.has(store::schema::nvtx_range_starts, "range_id") || !reader.has(store::schema::nvtx_range_ends, "range_id")) return out;
  Upids upid;
  TC_RETURN_IF_ERROR(upid.read(reader));
  std::multimap<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> ends;  // (upid, range_id) -> (ts, utid), by ts
  auto e = reader.query("SELECT utid, ts, range_id FROM nvtx_range_ends ORDER BY ts, id");
  while (e.next()) ends.emplace(std::pair{upid(e.i64(0)), e.i64(2)}, std::pair{e.i64(1), e.i64(0)});
  TC_RETURN_IF_ERROR(e.status());
  auto s = reader.query("SELECT utid, ts, range_id, loc_id, payload FROM nvtx_range_starts ORDER BY ts, id");
  while (s.next()) {
    NvtxStartEnd r;
    r.utid = r.end_utid = s.i64(0);
    r.ts = r.end = s.i64(1);
    r.range_id = s.i64(2);
    r.loc_id = s.i64(3);
    r.payload = s.i64(4);
    auto [lo, hi] = ends.equal_range({upid(r.utid), r.range_id});
    auto end = lo;
    while (end != hi && end->second.first < r.ts) ++end;
    if (end != hi) {
      r.end = end->second.first;
      r.end_utid = end->second.second;
      ends.erase(end);
    } else {
      r.cut = true;
    }
    out.push_back(r);
  }
  TC_RETURN_IF_ERROR(s.status());
  return out;
}

namespace detail {
namespace {

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
  // Rows whose last range has ended by the current start (which only grows),
  // and the others by when it ends: O(log rows) a range, however many overlap.
  std::set<size_t> free;
  std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>, std::greater<>> busy;
  for (uint32_t i : order) {
    while (!busy.empty() && busy.top().first <= p.ts[i]) free.insert(busy.top().second), busy.pop();
    size_t row = rows.size();
    if (!free.empty()) row = *free.begin(), free.erase(free.begin());
    else rows.emplace_back();
    rows[row].take(p, i);
    busy.push({p.end[i], row});
  }
  return rows;
}

}  // namespace

Status read_nvtx(Load& ld) {
  Timeline& tl = ld.tl;
  if (!ld.reader.has(store::schema::nvtx_sites, "loc_id")) return Status::Ok();
  TC_RETURN_IF_ERROR(read_nvtx_sites(ld.reader, &tl));
  ld.domain_of.assign(tl.nvtx_site_of.size(), -1);
  for (size_t id = 0; id < tl.nvtx_site_of.size(); ++id) {
    if (tl.nvtx_site_of[id] >= 0) ld.domain_of[id] = tl.nvtx_sites[tl.nvtx_site_of[id]].domain;
  }
  auto start_ends = read_nvtx_start_ends(ld.reader);
  TC_RETURN_IF_ERROR(start_ends.status());
  for (NvtxStartEnd& r : *start_ends) {
    const NvtxSite* site = tl.nvtx_site(r.loc_id);
    if (!site) continue;  // a start whose site the store does not describe
    if (!ld.keep(r.ts)) continue;
    if (!r.cut) {
      r.end = std::min(r.end, kTimeLimit);
      r.end = std::max(r.end, r.ts + 1);
      ld.see(r.ts, r.end);
    } else {
      r.end = kOpen;  // its process's end, once the lanes are known
      ld.see(r.ts, r.ts + 1);
      ld.see_cut_end(r.utid);
    }
    ld.nvtx_pending[{r.utid, site->domain}].start_ends.add_nvtx(r.ts, r.end, static_cast<uint32_t>(tl.nvtx_start_ends.size()), 0, r.cut);
    tl.nvtx_start_ends.push_back(r);
  }
  return Status::Ok();
}

void add_nvtx_tracks(Load& ld, std::map<std::pair<int64_t, int>, Pending>& nvtx_ranges) {
  Timeline& tl = ld.tl;
  // A cut range is drawn to its process's end, or the run's when that is unknown.
  std::set<std::pair<int64_t, int>> groups;
  for (const auto& [key, p] : ld.nvtx_pending) groups.insert(key);
  for (const auto& [key, p] : nvtx_ranges) groups.insert(key);
  for (const auto& key : groups) {
    Lane& lane = ld.lane_for(key.first);
    const int64_t cut_end = lane.process_end > 0 ? lane.process_end : tl.end_ts;
    auto add = [&](Pending&& p, TrackKind kind, int depth, std::string name) {
      Track t = finish_track(std::move(p), kind, depth, std::move(name), cut_end);
      t.domain = key.second;
      lane.tracks.push_back(std::move(t));
    };
    auto np = ld.nvtx_pending.find(key);
    if (np != ld.nvtx_pending.end() && !np->second.marks.ts.empty()) add(std::move(np->second.marks), TrackKind::kNvtxMarks, 0, "marks");
    auto nr = nvtx_ranges.find(key);
    if (nr != nvtx_ranges.end()) {
      std::vector<Pending> by_depth = split_by_nesting(nr->second);
      for (size_t d = 0; d < by_depth.size(); ++d) add(std::move(by_depth[d]), TrackKind::kNvtxRanges, static_cast<int>(d), "depth " + std::to_string(d));
    }
    if (np != ld.nvtx_pending.end() && !np->second.start_ends.ts.empty()) {
      std::vector<Pending> rows = split_into_rows(np->second.start_ends);
      for (size_t r = 0; r < rows.size(); ++r) add(std::move(rows[r]), TrackKind::kNvtxStartEnd, static_cast<int>(r), "start/end");
    }
  }
  for (NvtxStartEnd& r : tl.nvtx_start_ends) {
    if (!r.cut) continue;
    auto it = ld.lane_of.find(r.utid);
    int64_t process_end = it != ld.lane_of.end() ? tl.lanes[it->second].process_end : 0;
    r.end = std::max(process_end > 0 ? process_end : tl.end_ts, r.ts + 1);
  }
}

namespace {

int64_t loc_of(const Timeline& tl, const Track& t, uint32_t i) {
  return t.kind == TrackKind::kNvtxStartEnd ? tl.nvtx_start_ends[t.ref[i]].loc_id : t.ref[i];
}

palette::Rgb colour(const Timeline& tl, const Track& t, uint32_t i) { return site_colour(tl, loc_of(tl, t, i)); }

std::string label(const Timeline& tl, const Track& t, uint32_t i) { return location_label(tl, loc_of(tl, t, i), t.is_cut(i)); }

void card(const Timeline& tl, const Lane& lane, const Track& t, uint32_t i, Card& card) {
  const int64_t dur = t.end[i] - t.ts[i];
  const NvtxStartEnd* se = t.kind == TrackKind::kNvtxStartEnd ? &tl.nvtx_start_ends[t.ref[i]] : nullptr;
  const int64_t loc_id = loc_of(tl, t, i);
  const Location* loc = tl.location(loc_id);
  const NvtxSite* site = tl.nvtx_site(loc_id);
  card.coloured(site_colour(tl, loc_id), "%s", loc ? loc->name.c_str() : "?");
  const char* what = t.kind == TrackKind::kNvtxMarks ? "mark" : se ? "start/end range" : "range";
  card.text("NVTX %s, domain %s", what, site ? tl.nvtx_domains[static_cast<size_t>(site->domain)].label().c_str() : "?");
  if (site && site->category) {
    if (!site->category_name.empty()) card.text("category %s (%lld)", site->category_name.c_str(), static_cast<long long>(*site->category));
    else card.text("category %lld", static_cast<long long>(*site->category));
  }
  const int64_t utid = se ? se->utid : lane.utid;
  const std::optional<double> real = tl.nvtx_real_payload(utid, loc_id, t.ts[i]);
  const int64_t payload = se ? se->payload : t.arg.empty() ? 0 : t.arg[i];
  if (real) card.text("payload %g", *real);
  else card.text("payload %lld", static_cast<long long>(payload));
  if (t.kind == TrackKind::kNvtxRanges) card.text("depth %d in its domain on this thread", t.depth);
  if (t.is_cut(i)) {
    card.coloured(palette::kTooltipCut, "cut: never ended (its thread or process ended first); %s to the %s's end", format_duration(dur).c_str(),
                  lane.process_end > 0 ? "process" : "run");
  } else if (t.kind != TrackKind::kNvtxMarks) {
    card.text("took %s", format_duration(dur).c_str());
  }
  if (se) {
    card.text("range id %lld", static_cast<long long>(se->range_id));
    if (!se->cut && se->end_utid != se->utid) {
      std::string ended = "thread utid " + std::to_string(se->end_utid);
      for (const Lane& other : tl.lanes) {
        if (other.utid == se->end_utid) ended = other.name;
      }
      card.text("ended on %s", ended.c_str());
    }
  }
}

uint32_t start_end_append(StoreMerge& sm) {
  return append_records(sm.m.nvtx_start_ends, sm.t.nvtx_start_ends, [&](NvtxStartEnd& x) {
    x.loc_id = sm.loc(x.loc_id), x.utid = sm.utid(x.utid), x.end_utid = sm.utid(x.end_utid);
  });
}

void start_end_rebase(StoreMerge& sm, const Track&, uint32_t& r, uint32_t base, int64_t offset, int64_t) {
  rebase_record(sm.m.nvtx_start_ends, r, base, offset).end += offset;
}

void start_end_sort(Timeline& m) { sort_records(&m.nvtx_start_ends, &m, TrackKind::kNvtxStartEnd); }

}  // namespace

const KindTraits kNvtxMarksTraits{"NVTX marks", nullptr, -1, colour, label, card, nullptr, rebase_location, nullptr, Marker::kDiamond};
const KindTraits kNvtxRangesTraits{"NVTX ranges", nullptr, -1, colour, label, card, nullptr, rebase_location, nullptr};
const KindTraits kNvtxStartEndTraits{"NVTX start/end ranges", nullptr, -1, colour, label, card, start_end_append, start_end_rebase, start_end_sort};

}  // namespace detail
}  // namespace tc::analysis::timeline
