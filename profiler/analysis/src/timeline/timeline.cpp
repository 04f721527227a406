#include "tc/analysis/timeline/timeline.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

namespace tc::analysis::timeline {
namespace {

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

CompileReason parse_compile_reason(std::string_view reason) {
  if (reason == "first") return CompileReason::kFirst;
  if (reason == "shape_change") return CompileReason::kShapeChange;
  if (reason == "structure_change") return CompileReason::kStructureChange;
  return CompileReason::kOther;
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

}  // namespace tc::analysis::timeline
