#include "analyze_text.h"

#include <algorithm>
#include <cstdio>

#include "analyze_queries.h"
#include "tc/analysis/format.h"

namespace tc::cli {

using analysis::Finding;
using analysis::Report;
using analysis::Severity;

namespace {

std::string bytes(double b) { return analysis::format_bytes(b); }
std::string ns(int64_t v) { return secs(static_cast<double>(v) / 1e9); }
std::string percent(double v) { return analysis::format_double("%.0f%%", v); }

std::string command_line(const Report& r) {
  std::string s;
  for (const auto& a : r.run.command) s += (s.empty() ? "" : " ") + shown(a);
  return s.empty() ? "(unknown command)" : s;
}

// Store text made safe, cut to `width` characters (with "...") and padded
// to it: printf's widths count bytes, and a name may hold "grüße".
std::string cell(std::string_view raw, size_t width) {
  std::string text = shown(raw);
  auto starts = [&](size_t i) { return (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80; };
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) chars += starts(i);
  if (chars > width) {
    size_t keep = 0, at = 0;
    for (; at < text.size(); ++at) {
      if (starts(at) && keep++ == width - 3) break;
    }
    text = text.substr(0, at) + "...";
    chars = width;
  }
  return text + std::string(width - chars, ' ');
}

// A table's name column: cut to `width` bytes with "...".
std::string clipped(std::string name, size_t width) {
  if (name.size() > width) name = name.substr(0, width - 3) + "...";
  return name;
}

// Row `n` of a table printed to `top` rows: past it, says how many `rows` are left and stops the table.
bool past_top(int& n, int top, size_t rows, const char* what) {
  if (n++ != top) return false;
  std::printf("  ... %zu more %s (--top, or --json for all)\n", rows - static_cast<size_t>(top), what);
  return true;
}

std::string domain_of(const std::string& kind, const std::string& domain) {
  if (kind == "tc") return "-";
  return domain.empty() ? "(default)" : domain;
}

std::string thread_label(const analysis::ThreadStats& th) {
  if (!th.name.empty()) return cell(th.name, 24);
  return cell(th.pid != 0 && th.tid == th.pid ? "(main thread)" : "(unnamed)", 24);
}

// tc-analyze kernels: the GPU's share, from CUPTI (gpu_activity), when the
// run had any; and why not, when capture was tried and could not start.
void print_gpu_activity(const analysis::GpuActivity& g, int top) {
  if (g.status.empty() && g.kernels.empty() && g.copies.empty()) return;
  if (g.kernels.empty() && g.copies.empty()) {
    if (g.status == "unavailable") std::printf("GPU (CUPTI): not recorded: %s\n", shown(g.detail).c_str());
    else std::printf("GPU (CUPTI): recorded, no kernels or copies ran\n");
    return;
  }
  int64_t copy_bytes = 0;
  double copy_s = 0;
  for (const auto& c : g.copies) copy_bytes += c.bytes, copy_s += c.total_s;
  std::printf("GPU (CUPTI): kernels %s on the device, copies and sets %s in %s", secs(g.kernel_s).c_str(),
              bytes(static_cast<double>(copy_bytes)).c_str(), secs(copy_s).c_str());
  if (g.dropped > 0) std::printf("; %lld records lost (CUPTI's buffers were full): the totals are low", static_cast<long long>(g.dropped));
  std::printf("\n");
  if (!g.kernels.empty()) {
    std::printf("  %-52s %7s %10s %6s %10s %10s %10s\n", "GPU kernel", "calls", "total", "share", "mean", "p50", "p99");
    int n = 0;
    for (const auto& k : g.kernels) {
      if (past_top(n, top, g.kernels.size(), "kernels")) break;
      std::string name = shown(k.name);
      if (k.graph_id > 0) name += " (g" + std::to_string(k.graph_id) + " k" + std::to_string(k.kernel) + ")";
      std::printf("  %-52s %7lld %10s %5.1f%% %10s %10s %10s\n", clipped(name, 52).c_str(), static_cast<long long>(k.calls), secs(k.total_s).c_str(),
                  k.share * 100, secs(k.mean_s).c_str(), secs(k.p50_s).c_str(), secs(k.p99_s).c_str());
    }
  }
  for (const auto& c : g.copies) {
    std::printf("  %-52s %7lld %10s  %s, %.3g GB/s\n", c.kind.c_str(), static_cast<long long>(c.calls), secs(c.total_s).c_str(),
                bytes(static_cast<double>(c.bytes)).c_str(), c.gbps);
  }
}

// One finding: its number, severity and title, then its kind (with `whose`), fix and saving.
void print_finding(int n, const Finding& f, const Style& st, const std::string& whose) {
  std::printf("\n%2d. %s[%s]%s %s\n", n, st.on(f.severity), analysis::severity_name(f.severity), st.off(), shown(f.title).c_str());
  std::printf("    kind: %s%s\n", shown(f.kind).c_str(), whose.c_str());
  std::printf("    fix:  %s\n", shown(f.suggestion).c_str());
  if (f.estimated_saving_s > 0) std::printf("    est. saving: %s\n", secs(f.estimated_saving_s).c_str());
}

// A suggestion of tc-analyze suggest, numbered from 1 (`n` counts them); none for an info finding that saves nothing.
void print_suggestion(int& n, const Finding& f, const std::string& whose) {
  if (f.estimated_saving_s <= 0 && f.severity == Severity::kInfo) return;
  std::printf("%d. %s%s\n   (%s; est. %s)\n", ++n, shown(whose).c_str(), shown(f.suggestion).c_str(), shown(f.kind).c_str(),
              secs(f.estimated_saving_s).c_str());
}

bool of_kind(const std::string& kind, const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) return true;
  for (const auto& p : prefixes)
    if (kind.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

const char* Style::on(Severity s) const {
  if (!color) return "";
  return s == Severity::kError ? "\033[31;1m" : s == Severity::kWarning ? "\033[33;1m" : "\033[36m";
}

std::string shown(std::string_view text) { return analysis::printable(text); }

// Where a framework run's memory numbers came from; tc's own need no words.
std::string memory_from(const analysis::Summary& s) {
  if (s.memory_source == "xla_memory_analysis") return ", from XLA's memory_analysis() of the largest compiled step (argument + output + temp - alias)";
  if (s.memory_source == "torch_tensors")
    return ", from torch's tensors at the largest step: parameters, gradients and optimizer state plus the activations autograd saved for "
           "backward (temporaries not counted)";
  if (s.memory_source == "torch_cuda_allocator") return ", from torch.cuda's allocator: the largest step's peak allocated bytes";
  if (s.memory_source == "xla_memory_info") return ", from PyTorch/XLA's xm.get_memory_info() after each sync (the peak in use where given)";
  return "";
}
std::string secs(double s) { return analysis::format_seconds(s); }

std::string ending(const Report& r) {
  if (r.run.exit_signal) return "killed by signal " + std::to_string(*r.run.exit_signal);
  if (r.run.exit_code) return "exited " + std::to_string(*r.run.exit_code);
  return "end unknown";
}

// The range, mark and thread tables, at most `top` rows of each; `more` is
// how to see the rest.
void print_ranges(const analysis::RangeTable& t, size_t top, const char* more) {
  if (!t.ranges.empty()) {
    std::printf("\n  %-32s %-12s %-4s %7s %5s %9s %9s %9s %9s %9s %9s %9s %8s\n", "range", "domain", "kind", "count", "cut", "total", "mean",
                "p50", "p99", "min", "max", "self", "threads");
    for (size_t i = 0; i < t.ranges.size(); ++i) {
      if (i == top) {
        std::printf("  ... %zu more (%s)\n", t.ranges.size() - top, more);
        break;
      }
      const auto& r = t.ranges[i];
      bool timed = r.count > r.cut;
      auto time = [&](int64_t v) { return timed ? ns(v) : std::string("-"); };
      std::printf("  %s %s %-4s %7lld %5lld %9s %9s %9s %9s %9s %9s %9s %8lld\n", cell(r.name, 32).c_str(),
                  cell(domain_of(r.kind, r.domain), 12).c_str(), r.kind.c_str(), static_cast<long long>(r.count), static_cast<long long>(r.cut),
                  time(r.total_ns).c_str(), time(r.mean_ns).c_str(), time(r.p50_ns).c_str(), time(r.p99_ns).c_str(), time(r.min_ns).c_str(),
                  time(r.max_ns).c_str(), time(r.self_ns).c_str(), static_cast<long long>(r.threads));
    }
  }
  if (!t.marks.empty()) {
    std::printf("\n  %-32s %-12s %-4s %7s\n", "mark", "domain", "kind", "count");
    for (size_t i = 0; i < t.marks.size(); ++i) {
      if (i == top) {
        std::printf("  ... %zu more (%s)\n", t.marks.size() - top, more);
        break;
      }
      const auto& m = t.marks[i];
      std::printf("  %s %s %-4s %7lld\n", cell(m.name, 32).c_str(), cell(domain_of(m.kind, m.domain), 12).c_str(), m.kind.c_str(),
                  static_cast<long long>(m.count));
    }
  }
  if (!t.threads.empty()) {
    std::printf("\n  %-24s %8s %8s %7s %7s\n", "thread", "pid", "tid", "ranges", "marks");
    for (size_t i = 0; i < t.threads.size(); ++i) {
      if (i == std::max<size_t>(top, 10)) {
        std::printf("  ... %zu more threads (%s)\n", t.threads.size() - i, more);
        break;
      }
      const auto& th = t.threads[i];
      std::printf("  %s %8lld %8lld %7lld %7lld\n", thread_label(th).c_str(), static_cast<long long>(th.pid),
                  static_cast<long long>(th.tid), static_cast<long long>(th.ranges), static_cast<long long>(th.marks));
    }
  }
}

std::string range_totals(const analysis::RangeTable& t) {
  const auto n = analysis::counted;
  std::string s = n(t.range_count, "range", "ranges");
  if (t.cut_count > 0) s += " (" + std::to_string(t.cut_count) + " cut)";
  s += " of " + n(static_cast<int64_t>(t.ranges.size()), "name", "names") + " on " + n(static_cast<int64_t>(t.threads.size()), "thread", "threads");
  s += "; " + n(t.mark_count, "mark", "marks") + " of " + n(static_cast<int64_t>(t.marks.size()), "name", "names");
  return s;
}

void print_summary(const std::string& path, const Report& r, const Style& st) {
  const auto& s = r.summary;
  std::printf("%s%s%s: %s (%s, %s)\n", st.bold(), shown(path).c_str(), st.off(), command_line(r).c_str(), ending(r).c_str(),
              r.run.complete ? "complete" : "INCOMPLETE");
  double wall = r.run.wall_s;
  double other = wall - s.compile_s - s.execute_s;
  if (other < 1e-9) other = 0;  // rounding, or times that overlap
  auto pct = [&](double v) { return wall > 0 ? percent(v / wall * 100) : std::string("-"); };
  if (s.compilations == 0 && s.execute_s == 0) {
    std::printf("  wall      %s\n", secs(wall).c_str());
  } else if (s.execute_source.empty()) {
    std::printf("  wall      %s = compile %s (%s) + the rest %s (%s); execute not measured (%s)\n", secs(wall).c_str(), secs(s.compile_s).c_str(),
                pct(s.compile_s).c_str(), secs(other).c_str(), pct(other).c_str(), s.execute_unmeasured.c_str());
  } else {
    std::printf("  wall      %s = compile %s (%s) + execute %s (%s%s) + other %s (%s)\n", secs(wall).c_str(), secs(s.compile_s).c_str(),
                pct(s.compile_s).c_str(), secs(s.execute_s).c_str(), pct(s.execute_s).c_str(),
                s.execute_source == "steps" ? ", the steps less their compiling" : "", secs(other).c_str(), pct(other).c_str());
  }
  std::string step_time;
  if (s.steps > 0) {
    step_time = " (" + (s.step_source == "range" ? "range '" + shown(s.step_range) + "', " : std::string()) + "p50 " + secs(s.step_p50_s) +
                ", p99 " + secs(s.step_p99_s) + ")";
  }
  std::printf("  steps     %lld%s    compilations %lld (%s)    explicit evaluations %lld\n", static_cast<long long>(s.steps),
              step_time.c_str(), static_cast<long long>(s.compilations), analysis::counted(s.recompilations, "recompilation", "recompilations").c_str(),
              static_cast<long long>(s.explicit_evaluations));
  if (s.capacity_bytes > 0) {
    std::printf("  memory    peak %s of %s (%.0f%%)%s\n", bytes(static_cast<double>(s.peak_bytes)).c_str(),
                bytes(static_cast<double>(s.capacity_bytes)).c_str(), 100.0 * static_cast<double>(s.peak_bytes) / static_cast<double>(s.capacity_bytes),
                memory_from(s).c_str());
  } else if (s.peak_bytes > 0) {
    std::printf("  memory    peak %s%s\n", bytes(static_cast<double>(s.peak_bytes)).c_str(), memory_from(s).c_str());
  } else if (!s.memory_unmeasured.empty()) {
    std::printf("  memory    not measured: %s (docs/frameworks.md#memory)\n", shown(s.memory_unmeasured).c_str());
  }
  if (!s.top_site.empty())
    std::printf("  kernels   %s holds %.0f%% of the execute time (tc-analyze kernels for the table)\n", shown(s.top_site).c_str(), s.top_site_share * 100);
  if (s.gpu_kernel_s > 0 || s.gpu_copy_bytes > 0) {
    std::printf("  gpu       kernels %s on the device", secs(s.gpu_kernel_s).c_str());
    if (!s.gpu_top_kernel.empty()) std::printf(", %s holds %.0f%%", shown(s.gpu_top_kernel).c_str(), s.gpu_top_kernel_share * 100);
    std::printf("; copies and sets %s (tc-analyze kernels for the table)\n", bytes(static_cast<double>(s.gpu_copy_bytes)).c_str());
  } else if (s.gpu_capture == "unavailable") {
    std::printf("  gpu       not recorded: %s\n", shown(s.gpu_capture_detail).c_str());
  }
  if (r.ranges.range_count > 0 || r.ranges.mark_count > 0) std::printf("  ranges    %s\n", range_totals(r.ranges).c_str());
  if (r.run.dropped_count > 0) std::printf("  dropped   %lld events never reached the store\n", static_cast<long long>(r.run.dropped_count));
  for (const std::string& note : r.notes) std::printf("  note      %s\n", shown(note).c_str());
}

void print_findings(const Report& r, const Style& st, const std::string& prefix) {
  int n = 0;
  for (const Finding& f : r.findings) {
    if (!prefix.empty() && f.kind.rfind(prefix, 0) != 0) continue;
    print_finding(++n, f, st, "");
  }
  if (n == 0) std::printf("\n  no findings%s\n", prefix.empty() ? "" : (" of kind " + prefix + "*").c_str());
}

void print_suggestions(const Report& r) {
  int n = 0;
  for (const auto& f : r.findings) print_suggestion(n, f, "");
  if (n == 0) {
    std::printf("nothing to change\n");
  } else if (n > 1 && r.total_saving_s > 0) {
    std::printf("\ntogether: est. %s%s (alternatives, and savings of the same seconds, counted once)\n", secs(r.total_saving_s).c_str(),
                r.run.wall_s > 0 ? (" of the run's " + secs(r.run.wall_s)).c_str() : "");
  }
}

Status print_compilations(const store::Reader& reader, int64_t t0) {
  std::printf("\ncompilations\n  %10s %6s %6s %-16s %10s  %s\n", "at", "graph", "step", "reason", "took", "shape changes");
  auto q = reader.query(kCompilationsSql);
  while (q.next()) {
    std::string what = !q.is_null(5) ? shown(q.text(5)) : !q.is_null(6) ? shown(q.text(6)) : "";
    std::printf("  %10s %6lld %6lld %-16s %10s  %s\n", secs(static_cast<double>(q.i64(0) - t0) / 1e9).c_str(), static_cast<long long>(q.i64(1)),
                static_cast<long long>(q.i64(2)), shown(q.text(3)).c_str(), secs(static_cast<double>(q.i64(4)) / 1e9).c_str(), what.c_str());
  }
  return q.status();
}

Status print_evals(const store::Reader& reader) {
  std::printf("\nexplicit evaluations by call site\n  %-40s %-8s %7s %10s\n", "call site", "kind", "count", "total");
  auto q = reader.query("SELECT l.file, l.line, e.kind, count(*), sum(e.dur) FROM explicit_evaluations e LEFT JOIN locations l "
                        "ON l.id = e.loc_id GROUP BY e.loc_id, e.kind ORDER BY sum(e.dur) DESC");
  while (q.next()) {
    std::string file = q.is_null(0) ? "?" : shown(q.text(0));
    file = file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1) + ":" + std::to_string(q.i64(1));
    std::printf("  %-40s %-8s %7lld %10s\n", file.c_str(), shown(q.text(2)).c_str(), static_cast<long long>(q.i64(3)),
                secs(static_cast<double>(q.i64(4)) / 1e9).c_str());
  }
  return q.status();
}

Status print_memory(const store::Reader& reader) {
  std::printf("\nmemory plans (compiled graphs)\n  %6s %12s %12s %12s %12s %8s\n", "graph", "peak", "parameters", "activations", "per batch", "batch");
  auto q = reader.query("SELECT graph_id, peak_bytes, parameter_bytes, activation_bytes, batch_bytes, batch_size FROM memory_plans ORDER BY graph_id");
  while (q.next()) {
    std::printf("  %6lld %12s %12s %12s %12s %8s\n", static_cast<long long>(q.i64(0)), bytes(static_cast<double>(q.i64(1))).c_str(),
                bytes(static_cast<double>(q.i64(2))).c_str(), bytes(static_cast<double>(q.i64(3))).c_str(), bytes(static_cast<double>(q.i64(4))).c_str(),
                q.is_null(5) ? "-" : std::to_string(q.i64(5)).c_str());
  }
  return q.status();
}

// Several stores of one job (tc/analysis/job.h): the ranks, then one list of findings.
void print_job(const analysis::JobReport& job, const Style& st) {
  std::printf("%sjob %s%s: %zu %s", st.bold(), job.job.empty() ? "(no job id)" : shown(job.job).c_str(), st.off(), job.ranks.size(),
              job.ranks.size() == 1 ? "rank" : "ranks");
  if (job.world_size > static_cast<int64_t>(job.ranks.size())) std::printf(" of %lld", static_cast<long long>(job.world_size));
  std::printf(", %lld collectives\n", static_cast<long long>(job.collectives));
  std::printf("  %5s  %-12s %8s %6s %13s %16s %10s %10s  %s\n", "rank", "host", "pid", "steps", "compilations", "collective wait", "compile",
              "execute", "store");
  for (const auto& r : job.ranks) {
    std::printf("  %5lld  %s %8lld %6lld %13lld %16s %10s %10s  %s%s\n", static_cast<long long>(r.rank), cell(r.host, 12).c_str(),
                static_cast<long long>(r.pid), static_cast<long long>(r.steps), static_cast<long long>(r.compilations), secs(r.collective_wait_s).c_str(),
                secs(r.compile_s).c_str(), r.execute_source.starts_with("not measured") ? "unmeasured" : secs(r.execute_s).c_str(), shown(r.store).c_str(), r.complete ? "" : " (INCOMPLETE)");
  }
  if (job.collectives > 0) {
    std::printf("  wait      %s in collectives over all ranks", secs(job.collective_wait_s).c_str());
    if (job.straggler_wait_s > 0) std::printf("; %s of it from the stragglers below", secs(job.straggler_wait_s).c_str());
    std::printf("\n");
  }
  for (const std::string& note : job.notes) std::printf("  note      %s\n", shown(note).c_str());
}

void print_job_findings(const analysis::JobReport& job, const Style& st, const std::vector<std::string>& prefixes) {
  int n = 0;
  for (const auto& jf : job.findings) {
    const Finding& f = jf.finding;
    if (!of_kind(f.kind, prefixes)) continue;
    std::string whose = jf.evidence_rank && jf.ranks.size() > 1 ? " (numbers of rank " + std::to_string(*jf.evidence_rank) + ")" : "";
    print_finding(++n, f, st, whose);
  }
  if (n == 0) std::printf("\n  no findings\n");
}

void print_job_suggestions(const analysis::JobReport& job) {
  int n = 0;
  for (const auto& jf : job.findings) {
    print_suggestion(n, jf.finding, jf.evidence_rank ? analysis::rank_set(jf.ranks, job.ranks.size()) + ": " : "");
  }
  if (n == 0) std::printf("nothing to change\n");
}

void print_kernels(const std::string& store, const analysis::KernelTable& t, bool by_site, int top, const std::string& why_none) {
  std::printf("%s: execute %s, of it in timed kernels %s (%.0f%%)", shown(store).c_str(), secs(t.execute_s).c_str(), secs(t.kernel_s).c_str(),
              t.execute_s > 0 ? 100 * t.kernel_s / t.execute_s : 0.0);
  if (t.peak_gflops > 0) std::printf("; ceilings %.0f GFLOP/s, %.0f GB/s", t.peak_gflops, t.peak_gbps);
  if (!t.gemm_kernel.empty())
    std::printf(" (%s, product kernel %s, %lld threads)", shown(t.isa).c_str(), shown(t.gemm_kernel).c_str(), static_cast<long long>(t.threads));
  std::printf("\n");
  for (const std::string& n : t.notes) std::printf("  %s\n", shown(n).c_str());
  if (t.rows.empty() && t.gpu.kernels.empty() && t.gpu.copies.empty()) {
    std::printf("  no kernel timings in this store: %s\n", why_none.c_str());
  }
  if (t.rows.empty()) {
    print_gpu_activity(t.gpu, top);
    return;
  }
  std::printf("  %-36s %7s %10s %6s %10s %10s %10s %9s %9s  %s\n", by_site ? "source line" : "kernel (fused ops)", "calls", "total",
              "share", "mean", "p50", "p99", "GFLOP/s", "GB/s", by_site ? "bound" : "sites");
  int n = 0;
  for (const auto& k : t.rows) {
    if (past_top(n, top, t.rows.size(), "rows")) break;
    std::string name = clipped(shown(k.name), 36);
    std::string rest;
    if (by_site) rest = k.bound.empty() ? "-" : k.bound + " " + percent(k.of_ceiling * 100);
    else
      for (const auto& s : k.sites) rest += (rest.empty() ? "" : ", ") + shown(s);
    std::printf("  %-36s %7lld %10s %5.1f%% %10s %10s %10s %9.2f %9.2f  %s\n", name.c_str(), static_cast<long long>(k.calls), secs(k.total_s).c_str(),
                k.share * 100, secs(k.mean_s).c_str(), secs(k.p50_s).c_str(), secs(k.p99_s).c_str(), k.gflops, k.gbps, rest.c_str());
  }
  print_gpu_activity(t.gpu, top);
}

}  // namespace tc::cli
