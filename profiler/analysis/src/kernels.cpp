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

}  // namespace

StatusOr<KernelTable> kernel_table(const store::Reader& r, KernelsBy by) {
  KernelTable t;
  auto exec = r.scalar_i64("SELECT coalesce(sum(dur), 0) FROM executions");
  if (!exec.ok()) return exec.status();
  t.execute_s = static_cast<double>(*exec) / 1e9;
  if (!r.has(store::schema::kernels, "sites") || !r.has(store::schema::kernel_executions, "dur")) return t;
  if (r.has(store::schema::ceilings, "gbps")) {
    auto q = r.query("SELECT gflops, gbps FROM ceilings ORDER BY id LIMIT 1");
    if (q.next()) t.peak_gflops = q.f64(0), t.peak_gbps = q.f64(1);
    TC_RETURN_IF_ERROR(q.status());
  }
  StoreText text;
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
  auto q = r.query("SELECT graph_id, kernel, dur FROM kernel_executions");
  while (q.next()) {
    auto it = kernels.find({q.i64(0), q.i64(1)});
    if (it == kernels.end()) continue;
    const Kernel& k = it->second;
    int64_t dur = std::max<int64_t>(0, q.i64(2));
    t.kernel_s += static_cast<double>(dur) / 1e9;
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
  for (auto& entry : groups) {
    Acc& a = entry.second;  // not a structured binding: clang 14 cannot capture one in a lambda
    KernelRow& row = a.row;
    std::sort(a.durs.begin(), a.durs.end());
    row.calls = static_cast<int64_t>(a.durs.size());
    double total_ns = 0;
    for (int64_t d : a.durs) total_ns += static_cast<double>(d);
    if (by == KernelsBy::kSite) row.flops /= static_cast<double>(row.calls), row.bytes /= static_cast<double>(row.calls);
    row.total_s = total_ns / 1e9;
    row.share = t.execute_s > 0 ? row.total_s / t.execute_s : 0;
    row.mean_s = row.total_s / static_cast<double>(row.calls);
    auto pct = [&](double p) { return static_cast<double>(a.durs[std::min(a.durs.size() - 1, static_cast<size_t>(p * static_cast<double>(a.durs.size())))]) / 1e9; };
    row.p50_s = pct(0.5);
    row.p99_s = pct(0.99);
    double work_flops = row.flops * static_cast<double>(row.calls), work_bytes = row.bytes * static_cast<double>(row.calls);
    row.gflops = row.total_s > 0 ? work_flops / row.total_s / 1e9 : 0;
    row.gbps = row.total_s > 0 ? work_bytes / row.total_s / 1e9 : 0;
    if (t.peak_gflops > 0 && t.peak_gbps > 0 && row.bytes > 0) {
      double intensity = row.flops / row.bytes, ridge = t.peak_gflops / t.peak_gbps;
      row.bound = intensity > ridge ? "compute" : "memory";
      row.of_ceiling = row.bound == "compute" ? row.gflops / t.peak_gflops : row.gbps / t.peak_gbps;
    }
    t.rows.push_back(std::move(row));
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const KernelRow& a, const KernelRow& b) { return a.total_s > b.total_s; });
  return t;
}

std::string kernels_json(const KernelTable& t) {
  Json j;
  j.begin_object().field("schema", "tc-analyze-kernels/1").field("execute_s", t.execute_s).field("kernel_s", t.kernel_s);
  j.key("ceilings").begin_object().field("gflops", t.peak_gflops).field("gbps", t.peak_gbps).end_object();
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
  j.end_array().end_object();
  return j.str();
}

}  // namespace tc::analysis
