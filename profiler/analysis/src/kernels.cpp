#include "tc/analysis/kernels.h"

#include <algorithm>
#include <map>

#include "json.h"
#include "tc/analysis/format.h"
#include "tc/store/schema.h"

namespace tc::analysis {

std::string short_site(std::string_view site) {
  auto slash = site.rfind('/');
  return std::string(slash == std::string_view::npos ? site : site.substr(slash + 1));
}

namespace {

std::vector<std::string> split_sites(std::string_view text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t next = text.find(';', at);
    std::string_view s = text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at);
    if (!s.empty()) out.push_back(short_site(s));
    if (next == std::string_view::npos) break;
    at = next + 1;
  }
  return out;
}

struct Acc {
  KernelRow row;
  std::vector<int64_t> durs;
};

// The p-quantile of sorted ns durations, in s.
double percentile(const std::vector<int64_t>& sorted, double p) {
  return static_cast<double>(sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())))]) / 1e9;
}

Status gpu_activity(const store::Reader& r, GpuActivity* g) {
  if (!r.has(store::schema::gpu_capture, "status") || !r.has(store::schema::gpu_activity, "threads")) return Status();
  StoreText text;
  auto cap = r.query("SELECT status, detail, dropped FROM gpu_capture ORDER BY id");
  while (cap.next()) {
    const std::string status = text(cap.text(0));
    if (g->status.empty() || status == "recorded") {
      if (g->status != "recorded") g->detail = text(cap.text(1));
      g->status = status;
    }
    g->dropped += cap.i64(2);
  }
  TC_RETURN_IF_ERROR(cap.status());
  struct K {
    GpuKernelRow row;
    std::vector<int64_t> durs;
  };
  std::map<std::string, K> kernels;
  auto q = r.query("SELECT name, coalesce(graph_id, 0), kernel, dur FROM gpu_activity WHERE kind = 'kernel'");
  while (q.next()) {
    const std::string name = text(q.text(0));
    K& k = kernels[name];
    if (k.durs.empty()) k.row.name = name, k.row.graph_id = q.i64(1), k.row.kernel = q.i64(2);
    k.durs.push_back(std::max<int64_t>(0, q.i64(3)));
  }
  TC_RETURN_IF_ERROR(q.status());
  for (auto& entry : kernels) {
    K& k = entry.second;
    std::sort(k.durs.begin(), k.durs.end());
    double ns = 0;
    for (int64_t d : k.durs) ns += static_cast<double>(d);
    k.row.calls = static_cast<int64_t>(k.durs.size());
    k.row.total_s = ns / 1e9;
    k.row.mean_s = k.row.total_s / static_cast<double>(k.row.calls);
    k.row.p50_s = percentile(k.durs, 0.5);
    k.row.p99_s = percentile(k.durs, 0.99);
    g->kernel_s += k.row.total_s;
    g->kernels.push_back(std::move(k.row));
  }
  for (GpuKernelRow& k : g->kernels) k.share = g->kernel_s > 0 ? k.total_s / g->kernel_s : 0;
  std::stable_sort(g->kernels.begin(), g->kernels.end(), [](const GpuKernelRow& a, const GpuKernelRow& b) { return a.total_s > b.total_s; });
  auto c = r.query("SELECT kind, count(*), sum(bytes), sum(max(dur, 0)) FROM gpu_activity WHERE kind <> 'kernel' GROUP BY kind");
  while (c.next()) {
    GpuCopyRow row{text(c.text(0)), c.i64(1), c.i64(2), static_cast<double>(c.i64(3)) / 1e9, 0};
    row.gbps = row.total_s > 0 ? static_cast<double>(row.bytes) / row.total_s / 1e9 : 0;
    g->copies.push_back(std::move(row));
  }
  TC_RETURN_IF_ERROR(c.status());
  std::stable_sort(g->copies.begin(), g->copies.end(), [](const GpuCopyRow& a, const GpuCopyRow& b) { return a.total_s > b.total_s; });
  return Status();
}

Status read_ceilings(const store::Reader& r, StoreText& text, KernelTable& t) {
  if (!r.has(store::schema::ceilings, "gbps")) return Status();
  const bool v6 = r.has(store::schema::ceilings, "threads");
  auto q = r.query(v6 ? "SELECT gflops, gbps, isa, kernel, threads FROM ceilings ORDER BY id LIMIT 1"
                      : "SELECT gflops, gbps FROM ceilings ORDER BY id LIMIT 1");
  if (q.next()) {
    t.probe_gflops = t.peak_gflops = q.f64(0), t.probe_gbps = t.peak_gbps = q.f64(1);
    if (v6) t.isa = text(q.text(2)), t.gemm_kernel = text(q.text(3)), t.threads = q.i64(4);
  }
  return q.status();
}

// "compute" when FLOPs per byte exceed the probe's ridge point, else "memory".
std::string bound_of(const KernelTable& t, double flops, double bytes) {
  return flops / bytes > t.probe_gflops / t.probe_gbps ? "compute" : "memory";
}

struct KernelRate {
  std::string name;
  double flops = 0, bytes = 0, total_s = 0;  // over all its calls
};

// A kernel above the probe's ceiling is a probe that measured low: the
// ceiling in use becomes the best such kernel's rate, and a note says so.
void raise_low_ceilings(const std::vector<KernelRate>& rates, KernelTable& t) {
  if (!(t.probe_gflops > 0 && t.probe_gbps > 0) || t.kernel_s <= 0) return;
  const KernelRate* best[2] = {nullptr, nullptr};  // compute, memory
  double best_rate[2] = {t.probe_gflops, t.probe_gbps};
  for (const KernelRate& k : rates) {
    if (k.bytes <= 0 || k.total_s < 0.01 * t.kernel_s) continue;
    const int memory = bound_of(t, k.flops, k.bytes) == "memory";
    const double rate = (memory ? k.bytes : k.flops) / k.total_s / 1e9;
    if (rate > best_rate[memory]) best_rate[memory] = rate, best[memory] = &k;
  }
  for (int memory = 0; memory < 2; ++memory) {
    if (!best[memory]) continue;
    const double probe = memory ? t.probe_gbps : t.probe_gflops;
    (memory ? t.peak_gbps : t.peak_gflops) = best_rate[memory];
    const char* unit = memory ? " GB/s" : " GFLOP/s";
    t.notes.push_back("ceiling measured low: kernel " + best[memory]->name + " reached " + format_double("%.0f", best_rate[memory]) +
                      unit + " over the probe's " + format_double("%.0f", probe));
  }
}

}  // namespace

StatusOr<KernelTable> kernel_table(const store::Reader& r, KernelsBy by) {
  KernelTable t;
  auto exec = r.scalar_i64("SELECT coalesce(sum(dur), 0) FROM executions");
  if (!exec.ok()) return exec.status();
  t.execute_s = static_cast<double>(*exec) / 1e9;
  TC_RETURN_IF_ERROR(gpu_activity(r, &t.gpu));
  if (!r.has(store::schema::kernels, "sites") || !r.has(store::schema::kernel_executions, "dur")) return t;
  StoreText text;
  TC_RETURN_IF_ERROR(read_ceilings(r, text, t));
  struct Kernel {
    std::string ops, kind;
    std::vector<std::string> sites;
    double flops = 0, bytes = 0;
  };
  std::map<std::pair<int64_t, int64_t>, Kernel> kernels;
  for (auto q = r.query("SELECT graph_id, kernel, ops, kind, sites, flops, bytes_read + bytes_written FROM kernels"); q.next();) {
    Kernel k{text(q.text(2)), text(q.text(3)), split_sites(text(q.text(4))), static_cast<double>(q.i64(5)), static_cast<double>(q.i64(6))};
    kernels.emplace(std::pair{q.i64(0), q.i64(1)}, std::move(k));
  }
  std::map<std::string, Acc> groups;
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> kernel_ns;  // ns and calls per kernel, whichever the grouping
  auto q = r.query("SELECT graph_id, kernel, dur FROM kernel_executions");
  while (q.next()) {
    auto it = kernels.find({q.i64(0), q.i64(1)});
    if (it == kernels.end()) continue;
    const Kernel& k = it->second;
    int64_t dur = std::max<int64_t>(0, q.i64(2));
    t.kernel_s += static_cast<double>(dur) / 1e9;
    auto& [ns, calls] = kernel_ns[it->first];
    ns += dur, ++calls;
    const bool collective = k.kind == "collective";
    std::string key = by == KernelsBy::kSite ? (k.sites.empty() ? std::string("(unknown line)") : k.sites.front()) + (collective ? " (collective)" : "")
                                             : k.ops + " (g" + std::to_string(q.i64(0)) + " k" + std::to_string(q.i64(1)) + ")";
    Acc& a = groups[key];
    if (a.durs.empty()) {
      a.row.name = key;
      if (by == KernelsBy::kKernel) {
        a.row.kind = k.kind;
        a.row.graph_id = q.i64(0);
        a.row.kernel = q.i64(1);
        a.row.sites = k.sites;
        a.row.flops = k.flops;
        a.row.bytes = k.bytes;
      } else {
        a.row.sites = {key};
        if (collective) a.row.kind = k.kind;
      }
    }
    if (by == KernelsBy::kSite) a.row.flops += k.flops, a.row.bytes += k.bytes;  // summed per call below
    a.durs.push_back(dur);
  }
  TC_RETURN_IF_ERROR(q.status());
  std::vector<KernelRate> rates;
  for (const auto& [key, timed] : kernel_ns) {
    const Kernel& k = kernels.at(key);
    const double calls = static_cast<double>(timed.second);
    rates.push_back({k.ops + " (g" + std::to_string(key.first) + " k" + std::to_string(key.second) + ")", k.flops * calls,
                     k.bytes * calls, static_cast<double>(timed.first) / 1e9});
  }
  raise_low_ceilings(rates, t);
  for (auto& entry : groups) {
    Acc& a = entry.second;
    KernelRow& row = a.row;
    std::sort(a.durs.begin(), a.durs.end());
    row.calls = static_cast<int64_t>(a.durs.size());
    double total_ns = 0;
    for (int64_t d : a.durs) total_ns += static_cast<double>(d);
    if (by == KernelsBy::kSite) row.flops /= static_cast<double>(row.calls), row.bytes /= static_cast<double>(row.calls);
    row.total_s = total_ns / 1e9;
    row.share = t.execute_s > 0 ? row.total_s / t.execute_s : 0;
    row.mean_s = row.total_s / static_cast<double>(row.calls);
    row.p50_s = percentile(a.durs, 0.5);
    row.p99_s = percentile(a.durs, 0.99);
    double work_flops = row.flops * static_cast<double>(row.calls), work_bytes = row.bytes * static_cast<double>(row.calls);
    row.gflops = row.total_s > 0 ? work_flops / row.total_s / 1e9 : 0;
    row.gbps = row.total_s > 0 ? work_bytes / row.total_s / 1e9 : 0;
    if (t.peak_gflops > 0 && t.peak_gbps > 0 && row.bytes > 0) {
      row.bound = bound_of(t, row.flops, row.bytes);
      // At most 1: a line's rate is no higher than its fastest kernel's, but a line can mix bounds.
      row.of_ceiling = std::min(1.0, row.bound == "compute" ? row.gflops / t.peak_gflops : row.gbps / t.peak_gbps);
    }
    t.rows.push_back(std::move(row));
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const KernelRow& a, const KernelRow& b) { return a.total_s > b.total_s; });
  return t;
}

std::string kernels_json(const KernelTable& t) {
  Json j;
  j.begin_object().field("schema", "tc-analyze-kernels/1").field("execute_s", t.execute_s).field("kernel_s", t.kernel_s);
  j.key("ceilings").begin_object().field("gflops", t.peak_gflops).field("gbps", t.peak_gbps);
  j.field("probe_gflops", t.probe_gflops).field("probe_gbps", t.probe_gbps).field("isa", t.isa).field("gemm_kernel", t.gemm_kernel);
  j.field("threads", t.threads).key("notes").begin_array();
  for (const std::string& n : t.notes) j.value(n);
  j.end_array().end_object();
  j.key("kernels").begin_array();
  for (const KernelRow& k : t.rows) {
    j.begin_object().field("name", k.name).field("kind", k.kind).field("graph_id", k.graph_id).field("kernel", k.kernel);
    j.field("calls", k.calls).field("total_s", k.total_s).field("share", k.share).field("mean_s", k.mean_s);
    j.field("p50_s", k.p50_s).field("p99_s", k.p99_s).field("gflops", k.gflops).field("gbps", k.gbps);
    j.field("flops", k.flops).field("bytes", k.bytes).field("bound", k.bound).field("of_ceiling", k.of_ceiling);
    j.key("sites").begin_array();
    for (const std::string& s : k.sites) j.value(s);
    j.end_array().end_object();
  }
  j.end_array();
  const GpuActivity& g = t.gpu;
  j.key("gpu").begin_object().field("status", g.status).field("detail", g.detail).field("dropped", g.dropped);
  j.field("kernel_s", g.kernel_s).key("kernels").begin_array();
  for (const GpuKernelRow& k : g.kernels) {
    j.begin_object().field("name", k.name).field("graph_id", k.graph_id).field("kernel", k.kernel).field("calls", k.calls);
    j.field("total_s", k.total_s).field("share", k.share).field("mean_s", k.mean_s).field("p50_s", k.p50_s);
    j.field("p99_s", k.p99_s).end_object();
  }
  j.end_array().key("copies").begin_array();
  for (const GpuCopyRow& c : g.copies) {
    j.begin_object().field("kind", c.kind).field("calls", c.calls).field("bytes", c.bytes).field("total_s", c.total_s);
    j.field("gbps", c.gbps).end_object();
  }
  j.end_array().end_object().end_object();
  return j.str();
}

}  // namespace tc::analysis
