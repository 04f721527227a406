// The kernels track: each timed run of a compiled kernel (kernel_executions,
// schema v2), nested under its execution; what it is from kernels.
#include <functional>
#include <map>
#include <string>

#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_kernel_run(const store::Reader& r, int64_t* skipped, std::vector<KernelInfo>* kernels,
                             const std::function<void(int64_t utid, KernelRun&)>& f) {
  if (!r.has(store::schema::kernels, "sites") || !r.has(store::schema::kernel_executions, "dur")) return Status::Ok();
  std::map<std::pair<int64_t, int64_t>, uint32_t> kernel_of;  // (graph_id, kernel) -> index
  auto k = r.query("SELECT graph_id, kernel, kind, ops, sites, flops, bytes_read + bytes_written FROM kernels ORDER BY id");
  while (k.next()) {
    KernelInfo info{k.i64(0), k.i64(1), k.i64(5), k.i64(6), std::string(k.text(2)), std::string(k.text(3)), std::string(k.text(4))};
    if (kernel_of.emplace(std::pair{info.graph_id, info.kernel}, static_cast<uint32_t>(kernels->size())).second)
      kernels->push_back(std::move(info));
  }
  TC_RETURN_IF_ERROR(k.status());
  auto q = r.query("SELECT utid, ts, dur, execution_id, graph_id, kernel FROM kernel_executions ORDER BY ts, id");
  while (q.next()) {
    auto it = kernel_of.find({q.i64(4), q.i64(5)});
    if (it == kernel_of.end()) continue;  // a run of a kernel the store does not describe
    KernelRun run{q.i64(1), q.i64(2), q.i64(3), it->second};
    if (keep(run.ts, &run.dur, skipped)) f(q.i64(0), run);
  }
  return q.status();
}

namespace detail {

Status read_kernels(Load& ld) {
  return rows::each_kernel_run(ld.reader, &ld.tl.skipped.events, &ld.tl.kernels,
                               [&](int64_t utid, KernelRun& run) { ld.add(TrackKind::kKernels, utid, ld.tl.kernel_runs, run); });
}

namespace {

palette::Rgb colour(const Timeline& tl, const Track& t, uint32_t i) {
  // By the user's line it came from: one line, one colour.
  const std::string site = tl.kernels[tl.kernel_runs[t.ref[i]].kernel].first_site();
  return palette::range_colour(static_cast<int64_t>(std::hash<std::string>{}(site) & 0x7fffffff));
}

std::string label(const Timeline& tl, const Track& t, uint32_t i) { return tl.kernels[tl.kernel_runs[t.ref[i]].kernel].ops; }

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) {
  const KernelRun& run = tl.kernel_runs[t.ref[i]];
  const KernelInfo& k = tl.kernels[run.kernel];
  card.text("Kernel %lld of graph %lld (%s): %s", static_cast<long long>(k.kernel), static_cast<long long>(k.graph_id), k.kind.c_str(),
            k.ops.c_str());
  double s = static_cast<double>(std::max<int64_t>(run.dur, 1)) / 1e9;
  card.text("took %s: %.2f GFLOP/s, %.2f GB/s", format_duration(run.dur).c_str(), static_cast<double>(k.flops) / s / 1e9,
            static_cast<double>(k.bytes) / s / 1e9);
  size_t at = 0;
  for (int shown = 0; at < k.sites.size() && shown < 4; ++shown) {
    size_t next = k.sites.find(';', at);
    std::string site = k.sites.substr(at, next == std::string::npos ? std::string::npos : next - at);
    card.text("%s %s", shown ? "   " : "from", site.c_str());
    at = next == std::string::npos ? k.sites.size() : next + 1;
  }
}

uint32_t append(StoreMerge& sm) {
  const uint32_t kernels = append_records(sm.m.kernels, sm.t.kernels, [](KernelInfo&) {});
  return append_records(sm.m.kernel_runs, sm.t.kernel_runs, [&](KernelRun& x) { x.kernel += kernels; });
}

}  // namespace

using Merge = RecordMerge<&Timeline::kernel_runs, TrackKind::kKernels>;
const KindTraits kKernelsTraits{"kernels", read_kernels, 3, colour, label, card, append, Merge::rebase, Merge::sort};

}  // namespace detail
}  // namespace tc::analysis::timeline
