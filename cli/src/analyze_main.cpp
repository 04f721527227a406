// tc-analyze: what a recorded run cost, why, and the exact fix.
//
//   tc-analyze run.tcdb                      report (the default subcommand)
//   tc-analyze run.tcdb --json               the same as one JSON object
//   tc-analyze run.tcdb --fail-on 'recompilations>2'
//   tc-analyze recompiles|evals|memory|suggest run.tcdb
//   tc-analyze ranges run.tcdb [--domain D] [--name TEXT] [--json]
//   tc-analyze diff before.tcdb after.tcdb
//   tc-analyze run.rank*.tcdb                the stores of one MPI job, merged (stragglers, desync)
//   tc-analyze diff before.rank*.tcdb -- after.rank*.tcdb
//   tc-analyze export run.tcdb --format chrome -o trace.json
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_support.h"
#include "tc/analysis/diff.h"
#include "tc/analysis/export.h"
#include "tc/analysis/fail_on.h"
#include "tc/analysis/format.h"
#include "tc/analysis/job.h"
#include "tc/analysis/kernels.h"
#include "tc/analysis/ranges.h"
#include "tc/analysis/report.h"
#include "tc/store/reader.h"

namespace {

using tc::analysis::Finding;
using tc::analysis::Report;
using tc::analysis::Severity;

// Exit statuses (docs/cli.md). Store errors use their StatusCode (3..7).
constexpr int kThresholdCrossed = 1;
constexpr int kUsage = tc::cli::kUsage;
constexpr int kNothingRecorded = 12;

struct Style {
  bool color = false;
  const char* on(Severity s) const {
    if (!color) return "";
    return s == Severity::kError ? "\033[31;1m" : s == Severity::kWarning ? "\033[33;1m" : "\033[36m";
  }
  const char* bold() const { return color ? "\033[1m" : ""; }
  const char* off() const { return color ? "\033[0m" : ""; }
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string secs(double s) { return tc::analysis::format_seconds(s); }
std::string bytes(double b) { return tc::analysis::format_bytes(b); }

// Text from the store (or the command line) goes through printable(): a name
// with an escape sequence in it must not drive the terminal.
std::string shown(std::string_view text) { return tc::analysis::printable(text); }

std::string command_line(const Report& r) {
  std::string s;
  for (const auto& a : r.run.command) s += (s.empty() ? "" : " ") + shown(a);
  return s.empty() ? "(unknown command)" : s;
}

std::string ending(const Report& r) {
  if (r.run.exit_signal) return "killed by signal " + std::to_string(*r.run.exit_signal);
  if (r.run.exit_code) return "exited " + std::to_string(*r.run.exit_code);
  return "end unknown";
}

// tc-analyze kernels: the GPU's share, from CUPTI (gpu_activity), when the
// run had any; and why not, when capture was tried and could not start.
void print_gpu_activity(const tc::analysis::GpuActivity& g, int top) {
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
      if (n++ == top) {
        std::printf("  ... %zu more kernels (--top, or --json for all)\n", g.kernels.size() - static_cast<size_t>(top));
        break;
      }
      std::string name = shown(k.name);
      if (k.graph_id > 0) name += " (g" + std::to_string(k.graph_id) + " k" + std::to_string(k.kernel) + ")";
      if (name.size() > 52) name = name.substr(0, 49) + "...";
      std::printf("  %-52s %7lld %10s %5.1f%% %10s %10s %10s\n", name.c_str(), static_cast<long long>(k.calls), secs(k.total_s).c_str(),
                  k.share * 100, secs(k.mean_s).c_str(), secs(k.p50_s).c_str(), secs(k.p99_s).c_str());
    }
  }
  for (const auto& c : g.copies) {
    std::printf("  %-52s %7lld %10s  %s, %.3g GB/s\n", c.kind.c_str(), static_cast<long long>(c.calls), secs(c.total_s).c_str(),
                bytes(static_cast<double>(c.bytes)).c_str(), c.gbps);
  }
}

int open_error(const tc::Status& s) {
  std::fprintf(stderr, "tc-analyze: %s\n", shown(s.message()).c_str());
  return static_cast<int>(s.code());
}

struct Loaded {
  tc::store::Reader reader;
  Report report;
};

// Opens and analyzes; on failure prints one line and sets `exit`.
std::optional<Loaded> load(const std::string& path, int& exit, const tc::analysis::Options& options) {
  auto reader = tc::store::Reader::open(path);
  if (!reader.ok()) {
    exit = open_error(reader.status());
    return std::nullopt;
  }
  auto report = tc::analysis::analyze(*reader, options);
  if (!report.ok()) {
    exit = open_error(report.status());
    return std::nullopt;
  }
  return Loaded{std::move(*reader), std::move(*report)};
}

std::string ns(int64_t v) { return secs(static_cast<double>(v) / 1e9); }

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

std::string domain_of(const std::string& kind, const std::string& domain) {
  if (kind == "tc") return "-";
  return domain.empty() ? "(default)" : domain;
}

std::string thread_label(const tc::analysis::ThreadStats& th) {
  if (!th.name.empty()) return cell(th.name, 24);
  return cell(th.pid != 0 && th.tid == th.pid ? "(main thread)" : "(unnamed)", 24);
}

// The range, mark and thread tables, at most `top` rows of each; `more` is
// how to see the rest.
void print_ranges(const tc::analysis::RangeTable& t, size_t top, const char* more) {
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

std::string range_totals(const tc::analysis::RangeTable& t) {
  auto n = [](int64_t v, const char* one, const char* many) { return std::to_string(v) + " " + (v == 1 ? one : many); };
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
  double other = std::max(0.0, wall - s.compile_s - s.execute_s);
  auto pct = [&](double v) { return wall > 0 ? fmt("%.0f%%", v / wall * 100) : std::string("-"); };
  if (s.compilations == 0 && s.execute_s == 0) {
    std::printf("  wall      %s\n", secs(wall).c_str());
  } else {
    std::printf("  wall      %s = compile %s (%s) + execute %s (%s) + other %s (%s)\n", secs(wall).c_str(), secs(s.compile_s).c_str(),
                pct(s.compile_s).c_str(), secs(s.execute_s).c_str(), pct(s.execute_s).c_str(), secs(other).c_str(), pct(other).c_str());
  }
  std::string step_time;
  if (s.steps > 0) {
    step_time = " (" + (s.step_source == "range" ? "range '" + shown(s.step_range) + "', " : std::string()) + "p50 " + secs(s.step_p50_s) +
                ", p99 " + secs(s.step_p99_s) + ")";
  }
  std::printf("  steps     %lld%s    compilations %lld (%lld recompilations)    explicit evaluations %lld\n", static_cast<long long>(s.steps),
              step_time.c_str(), static_cast<long long>(s.compilations), static_cast<long long>(s.recompilations),
              static_cast<long long>(s.explicit_evaluations));
  if (s.capacity_bytes > 0) {
    std::printf("  memory    peak %s of %s (%.0f%%)\n", bytes(static_cast<double>(s.peak_bytes)).c_str(),
                bytes(static_cast<double>(s.capacity_bytes)).c_str(), 100.0 * static_cast<double>(s.peak_bytes) / static_cast<double>(s.capacity_bytes));
  } else if (s.peak_bytes > 0) {
    std::printf("  memory    peak %s\n", bytes(static_cast<double>(s.peak_bytes)).c_str());
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
    ++n;
    std::printf("\n%2d. %s[%s]%s %s\n", n, st.on(f.severity), tc::analysis::severity_name(f.severity), st.off(), shown(f.title).c_str());
    std::printf("    kind: %s\n", shown(f.kind).c_str());
    std::printf("    fix:  %s\n", shown(f.suggestion).c_str());
    if (f.estimated_saving_s > 0) std::printf("    est. saving: %s\n", secs(f.estimated_saving_s).c_str());
  }
  if (n == 0) std::printf("\n  no findings%s\n", prefix.empty() ? "" : (" of kind " + prefix + "*").c_str());
}

void print_compilations(const tc::store::Reader& reader, int64_t t0) {
  std::printf("\ncompilations\n  %10s %6s %6s %-16s %10s  %s\n", "at", "graph", "step", "reason", "took", "shape changes");
  for (auto q = reader.query(
           "SELECT c.ts, c.graph_id, c.step, c.reason, c.dur, (SELECT group_concat(input || '[' || dim || '] ' || old_value || '->' || "
           "new_value, ', ') FROM compilation_inputs i WHERE i.graph_id = c.graph_id), c.diff FROM compilations c ORDER BY c.ts");
       q.next();) {
    std::string what = !q.is_null(5) ? shown(q.text(5)) : !q.is_null(6) ? shown(q.text(6)) : "";
    std::printf("  %10s %6lld %6lld %-16s %10s  %s\n", secs(static_cast<double>(q.i64(0) - t0) / 1e9).c_str(), static_cast<long long>(q.i64(1)),
                static_cast<long long>(q.i64(2)), shown(q.text(3)).c_str(), secs(static_cast<double>(q.i64(4)) / 1e9).c_str(), what.c_str());
  }
}

void print_evals(const tc::store::Reader& reader) {
  std::printf("\nexplicit evaluations by call site\n  %-40s %-8s %7s %10s\n", "call site", "kind", "count", "total");
  for (auto q = reader.query("SELECT l.file, l.line, e.kind, count(*), sum(e.dur) FROM explicit_evaluations e LEFT JOIN locations l "
                             "ON l.id = e.loc_id GROUP BY e.loc_id, e.kind ORDER BY sum(e.dur) DESC");
       q.next();) {
    std::string file = q.is_null(0) ? "?" : shown(q.text(0));
    file = file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1) + ":" + std::to_string(q.i64(1));
    std::printf("  %-40s %-8s %7lld %10s\n", file.c_str(), shown(q.text(2)).c_str(), static_cast<long long>(q.i64(3)),
                secs(static_cast<double>(q.i64(4)) / 1e9).c_str());
  }
}

void print_memory(const tc::store::Reader& reader) {
  std::printf("\nmemory plans (compiled graphs)\n  %6s %12s %12s %12s %12s %8s\n", "graph", "peak", "parameters", "activations", "per batch", "batch");
  for (auto q = reader.query("SELECT graph_id, peak_bytes, parameter_bytes, activation_bytes, batch_bytes, batch_size FROM memory_plans ORDER BY graph_id");
       q.next();) {
    std::printf("  %6lld %12s %12s %12s %12s %8s\n", static_cast<long long>(q.i64(0)), bytes(static_cast<double>(q.i64(1))).c_str(),
                bytes(static_cast<double>(q.i64(2))).c_str(), bytes(static_cast<double>(q.i64(3))).c_str(), bytes(static_cast<double>(q.i64(4))).c_str(),
                q.is_null(5) ? "-" : std::to_string(q.i64(5)).c_str());
  }
}

// Several stores of one job (tc/analysis/job.h): the ranks, then one list of findings.
void print_job(const tc::analysis::JobReport& job, const Style& st) {
  std::printf("%sjob %s%s: %zu %s", st.bold(), job.job.empty() ? "(no job id)" : shown(job.job).c_str(), st.off(), job.ranks.size(),
              job.ranks.size() == 1 ? "rank" : "ranks");
  if (job.world_size > static_cast<int64_t>(job.ranks.size())) std::printf(" of %lld", static_cast<long long>(job.world_size));
  std::printf(", %lld collectives\n", static_cast<long long>(job.collectives));
  std::printf("  %5s  %-12s %8s %6s %13s %16s %10s %10s  %s\n", "rank", "host", "pid", "steps", "compilations", "collective wait", "compile",
              "execute", "store");
  for (const auto& r : job.ranks) {
    std::printf("  %5lld  %s %8lld %6lld %13lld %16s %10s %10s  %s%s\n", static_cast<long long>(r.rank), cell(r.host, 12).c_str(),
                static_cast<long long>(r.pid), static_cast<long long>(r.steps), static_cast<long long>(r.compilations), secs(r.collective_wait_s).c_str(),
                secs(r.compile_s).c_str(), secs(r.execute_s).c_str(), shown(r.store).c_str(), r.complete ? "" : " (INCOMPLETE)");
  }
  if (job.collectives > 0) {
    std::printf("  wait      %s in collectives over all ranks", secs(job.collective_wait_s).c_str());
    if (job.straggler_wait_s > 0) std::printf("; %s of it from the stragglers below", secs(job.straggler_wait_s).c_str());
    std::printf("\n");
  }
  for (const std::string& note : job.notes) std::printf("  note      %s\n", shown(note).c_str());
}

bool of_kind(const std::string& kind, const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) return true;
  for (const auto& p : prefixes)
    if (kind.rfind(p, 0) == 0) return true;
  return false;
}

void print_job_findings(const tc::analysis::JobReport& job, const Style& st, const std::vector<std::string>& prefixes) {
  int n = 0;
  for (const auto& jf : job.findings) {
    const Finding& f = jf.finding;
    if (!of_kind(f.kind, prefixes)) continue;
    ++n;
    std::printf("\n%2d. %s[%s]%s %s\n", n, st.on(f.severity), tc::analysis::severity_name(f.severity), st.off(), shown(f.title).c_str());
    std::string whose = jf.evidence_rank && jf.ranks.size() > 1 ? " (numbers of rank " + std::to_string(*jf.evidence_rank) + ")" : "";
    std::printf("    kind: %s%s\n", shown(f.kind).c_str(), whose.c_str());
    std::printf("    fix:  %s\n", shown(f.suggestion).c_str());
    if (f.estimated_saving_s > 0) std::printf("    est. saving: %s\n", secs(f.estimated_saving_s).c_str());
  }
  if (n == 0) std::printf("\n  no findings\n");
}

// report, recompiles, evals, memory, suggest over the stores of one job.
int run_job(const std::string& sub, const std::vector<std::string>& paths, const tc::analysis::Options& options, bool json, const Style& style,
            const tc::analysis::FailOn& rule) {
  auto job = tc::analysis::analyze_job(paths, options);
  if (!job.ok()) return open_error(job.status());
  for (size_t i = 0; i < job->stores.size(); ++i) {
    const Report& r = job->reports[i];
    if (r.invalid_utf8_names > 0) {
      std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(job->stores[i]).c_str(), tc::analysis::invalid_utf8_note(r.invalid_utf8_names).c_str());
    }
    if (!json && !r.run.complete) {
      std::fprintf(stderr, "tc-analyze: %s: the run did not end normally (%s); what follows covers what it recorded\n", shown(job->stores[i]).c_str(),
                   ending(r).c_str());
    }
  }
  if (json) {
    std::printf("%s\n", tc::analysis::job_json(*job).c_str());
  } else if (sub == "suggest") {
    int n = 0;
    for (const auto& jf : job->findings) {
      const Finding& f = jf.finding;
      if (f.estimated_saving_s <= 0 && f.severity == Severity::kInfo) continue;
      std::string whose = jf.evidence_rank ? tc::analysis::rank_set(jf.ranks, job->ranks.size()) + ": " : "";
      std::printf("%d. %s%s\n   (%s; est. %s)\n", ++n, shown(whose).c_str(), shown(f.suggestion).c_str(), shown(f.kind).c_str(),
                  secs(f.estimated_saving_s).c_str());
    }
    if (n == 0) std::printf("nothing to change\n");
  } else {
    print_job(*job, style);
    std::vector<std::string> prefixes;
    if (sub == "recompiles") prefixes = {"recompilation.", "distributed.desync"};
    else if (sub == "evals") prefixes = {"explicit_evaluation"};
    else if (sub == "memory") prefixes = {"memory."};
    print_job_findings(*job, style, prefixes);
  }
  if (auto why = tc::analysis::crossed(rule, *job)) {
    std::fprintf(stderr, "tc-analyze: %zu stores of %s: %s\n", job->stores.size(), job->job.empty() ? "one job" : ("job " + shown(job->job)).c_str(),
                 why->c_str());
    return kThresholdCrossed;
  }
  if (sub == "report" && tc::analysis::recorded_nothing(*job)) {
    std::fprintf(stderr, "tc-analyze: %zu stores: no rank recorded anything: no training steps, ranges, marks or compilations\n", job->stores.size());
    return kNothingRecorded;
  }
  return 0;
}

// diff over two sets of rank stores.
int run_job_diff(const std::vector<std::string>& a_paths, const std::vector<std::string>& b_paths, const tc::analysis::Options& options, bool json,
                 const tc::analysis::FailOn& rule) {
  auto a = tc::analysis::analyze_job(a_paths, options);
  if (!a.ok()) return open_error(a.status());
  auto b = tc::analysis::analyze_job(b_paths, options);
  if (!b.ok()) return open_error(b.status());
  if (json) std::printf("%s\n", tc::analysis::job_diff_json(*a, *b).c_str());
  else std::fputs(tc::analysis::job_diff_text(*a, *b).c_str(), stdout);
  if (auto why = tc::analysis::crossed(rule, *b)) {
    std::fprintf(stderr, "tc-analyze: B (%zu stores): %s\n", b->stores.size(), why->c_str());
    return kThresholdCrossed;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> subcommands = {"report", "recompiles", "evals", "memory", "suggest", "kernels", "ranges", "diff", "export"};
  std::string sub = "report";
  std::vector<char*> args(argv, argv + argc);
  if (argc > 1 && std::find(subcommands.begin(), subcommands.end(), argv[1]) != subcommands.end()) {
    sub = argv[1];
    args.erase(args.begin() + 1);
  }
  // diff A... -- B...: everything after "--" is the second set of stores.
  std::vector<std::string> b_paths;
  bool two_sets = false;
  if (sub == "diff") {
    auto sep = std::find_if(args.begin(), args.end(), [](const char* a) { return std::string_view(a) == "--"; });
    if (sep != args.end()) {
      two_sets = true;
      b_paths.assign(sep + 1, args.end());
      args.erase(sep, args.end());
    }
  }
  CLI::App app{
      "Read a tc store (.tcdb) and say what the run cost, why, and what to change.\n\n"
      "  tc-analyze run.tcdb                         report: summary and findings, most costly first\n"
      "  tc-analyze run.tcdb --json                  the same as one JSON object (docs/analyze-json.md)\n"
      "  tc-analyze run.tcdb --fail-on 'recompilations>2,explicit_evaluations>0'   CI gate: exit 1 when crossed\n"
      "  tc-analyze recompiles|evals|memory|suggest run.tcdb   one part of the report, with its tables\n"
      "  tc-analyze kernels run.tcdb [--by site]     where the execute time went: per kernel, or per line of your code\n"
      "  tc-analyze ranges run.tcdb [--domain D]     NVTX and tc ranges by name: count, total, p50/p99, self time; marks; threads\n"
      "  tc-analyze run.tcdb --step-range NAME       a program without tc::mark_step(): its steps are the occurrences of range NAME\n"
      "  tc-analyze diff before.tcdb after.tcdb      two runs side by side, to show that a fix worked\n"
      "  tc-analyze run.rank*.tcdb                   the stores of one MPI job merged: each rank, the rank that made the others wait\n"
      "  tc-analyze diff before.rank*.tcdb -- after.rank*.tcdb   two jobs side by side, rank by rank\n"
      "  tc-analyze export run.tcdb --format chrome -o trace.json   timeline for Perfetto / chrome://tracing\n",
      "tc-analyze " + sub};
  std::vector<std::string> paths;
  bool json = false, no_color = false;
  std::vector<std::string> fail_on;
  std::string format = "chrome", output;
  double margin = 0.10;
  app.add_option("stores", paths,
                 sub == "diff" ? "Two stores: A (before) and B (after); or the stores of job A, then --, then those of job B"
                               : "The .tcdb file; for report, recompiles, evals, memory and suggest also the stores of one MPI job (run.rank*.tcdb)")
      ->required();
  app.add_flag("--json", json, "Print one JSON object instead of text");
  app.add_flag("--no-color", no_color, "No colours (also when NO_COLOR is set or stdout is not a terminal)");
  std::string metrics;
  for (const auto& m : tc::analysis::metric_names()) metrics += (metrics.empty() ? "" : ", ") + m;
  app.add_option("--fail-on", fail_on, "METRIC OP NUMBER[,...]: exit 1 with a one-line reason when crossed. OP: > >= < <= == !=. Metrics: " + metrics)
      ->allow_extra_args(false);  // one expression per --fail-on: the stores may follow it
  app.add_option("--safety-margin", margin, "Share of device memory kept free when suggesting a batch size")->capture_default_str()->check(CLI::Range(0.0, 0.9));
  std::string by = "kernel";
  int top = 20;
  if (sub == "kernels") {
    app.add_option("--by", by, "kernel: one row per kernel of each graph; site: the time summed per source line (a kernel counts for "
                               "the line most of its ops came from)")
        ->check(CLI::IsMember({"kernel", "site"}))
        ->capture_default_str();
    app.add_option("--top", top, "Rows printed (text only; --json has them all)")->check(CLI::PositiveNumber)->capture_default_str();
  }
  std::string domain, kind, name_contains;
  if (sub == "ranges") {
    app.add_option("--top", top, "Rows printed of ranges and of marks (text only; --json has them all)")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--domain", domain, "Only this NVTX domain ('' for NVTX's default domain, which tc's own ranges share)");
    app.add_option("--kind", kind, "Only NVTX ranges and marks (nvtx) or tc's own (tc)")->check(CLI::IsMember({"nvtx", "tc"}));
    app.add_option("--name", name_contains, "Only names that contain this text");
  }
  std::string step_range;
  bool reporting = sub != "kernels" && sub != "ranges" && sub != "export";
  if (reporting) {
    app.add_option("--step-range", step_range,
                   "For a program that does not call tc::mark_step(): take its steps from the outermost occurrences of the NVTX (or tc) range "
                   "NAME on each thread; overrides tc-profile --step-range. Ignored (with a note) when the run has tc steps");
  }
  if (sub == "export") {
    app.add_option("--format", format, "Export format")->check(CLI::IsMember({"chrome"}))->capture_default_str();
    app.add_option("-o,--output", output, "File to write")->required();
  }
  app.footer(
      "Exit status: 0 ok; 1 a --fail-on threshold was crossed; 2 bad usage; 3 no such file; 4 not a tc store; 5 truncated or damaged "
      "store; 6 store from a newer tc; 7 I/O error; 12 the run recorded nothing: no steps, ranges, marks, compilations or GPU activity (report).\n"
      "A run without training steps (a program that does not link tc) is reported with its ranges, marks and threads, and a note "
      "for each finding it cannot have.\n"
      "An incomplete run (crashed or killed) is analysed and marked INCOMPLETE.");
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return tc::cli::parse_error("tc-analyze", app, e);
  }
  const bool one_store = sub == "kernels" || sub == "ranges" || sub == "export";
  if (sub == "diff" && two_sets) {
    if (paths.empty() || b_paths.empty()) {
      std::fprintf(stderr, "tc-analyze: diff A... -- B... takes at least one store on each side of --, got %zu and %zu; see tc-analyze --help\n",
                   paths.size(), b_paths.size());
      return kUsage;
    }
  } else if ((sub == "diff" && paths.size() != 2) || (one_store && paths.size() != 1)) {
    std::fprintf(stderr, "tc-analyze: %s takes %s, got %zu; see tc-analyze --help\n", sub.c_str(),
                 sub == "diff" ? "two stores (or two sets: A... -- B...)" : "one store", paths.size());
    return kUsage;
  }
  tc::analysis::FailOn rule;
  for (const auto& expr : fail_on) {
    auto r = tc::analysis::parse_fail_on(expr);
    if (!r.ok()) {
      std::fprintf(stderr, "tc-analyze: %s\n", shown(r.status().message()).c_str());
      return kUsage;
    }
    rule.insert(rule.end(), r->begin(), r->end());
  }
  Style style;
  style.color = !json && !no_color && std::getenv("NO_COLOR") == nullptr && isatty(STDOUT_FILENO);
  int exit = 0;
  tc::analysis::Options options;
  options.memory_safety_margin = margin;
  if (reporting && app.count("--step-range") > 0) {
    if (step_range.empty()) {
      std::fprintf(stderr, "tc-analyze: --step-range was given an empty name; give the range whose occurrences are the steps, e.g. --step-range train_step\n");
      return kUsage;
    }
    options.step_range = step_range;
  }

  if (sub == "ranges") {
    auto reader = tc::store::Reader::open(paths[0]);
    if (!reader.ok()) return open_error(reader.status());
    tc::analysis::RangeFilter filter;
    if (app.count("--domain") > 0) filter.domain = domain;
    if (!kind.empty()) filter.kind = kind;
    filter.name_contains = name_contains;
    tc::analysis::StoreText text;
    auto table = tc::analysis::range_table(*reader, filter, text);
    if (!table.ok()) return open_error(table.status());
    if (text.replaced() > 0) {
      std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(paths[0]).c_str(), tc::analysis::invalid_utf8_note(text.replaced()).c_str());
    }
    if (json) {
      std::printf("%s\n", tc::analysis::ranges_json(*table).c_str());
      return 0;
    }
    std::printf("%s: %s\n", shown(paths[0]).c_str(), range_totals(*table).c_str());
    if (table->ranges.empty() && table->marks.empty()) {
      bool filtered = filter.domain || filter.kind || !filter.name_contains.empty();
      std::printf("  no ranges or marks%s\n", filtered ? " match --domain, --kind and --name" : " in this store (NVTX ranges are recorded under tc-profile)");
      return 0;
    }
    print_ranges(*table, static_cast<size_t>(top), "--top, or --json for all");
    return 0;
  }

  if (sub == "export") {
    if (output.empty()) {
      std::fprintf(stderr, "tc-analyze: -o was given an empty path; give the file to write, e.g. -o trace.json\n");
      return kUsage;
    }
    // An export past `ulimit -f` fails with EFBIG (exit 7, no partial file) instead of killing tc-analyze.
    signal(SIGXFSZ, SIG_IGN);
    auto reader = tc::store::Reader::open(paths[0]);
    if (!reader.ok()) return open_error(reader.status());
    tc::analysis::ExportStats stats;
    if (tc::Status s = tc::analysis::export_chrome(*reader, output, &stats); !s.ok()) return open_error(s);
    if (stats.invalid_utf8_names > 0) {
      std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(paths[0]).c_str(), tc::analysis::invalid_utf8_note(stats.invalid_utf8_names).c_str());
    }
    std::fprintf(stderr, "tc-analyze: wrote %s (Chrome Trace Event format: open it in ui.perfetto.dev or chrome://tracing)\n", shown(output).c_str());
    return 0;
  }
  if (sub == "kernels") {
    auto reader = tc::store::Reader::open(paths[0]);
    if (!reader.ok()) return open_error(reader.status());
    auto table = tc::analysis::kernel_table(*reader, by == "site" ? tc::analysis::KernelsBy::kSite : tc::analysis::KernelsBy::kKernel);
    if (!table.ok()) return open_error(table.status());
    if (json) {
      std::printf("%s\n", tc::analysis::kernels_json(*table).c_str());
      return 0;
    }
    const auto& t = *table;
    std::printf("%s: execute %s, of it in timed kernels %s (%.0f%%)", shown(paths[0]).c_str(), secs(t.execute_s).c_str(), secs(t.kernel_s).c_str(),
                t.execute_s > 0 ? 100 * t.kernel_s / t.execute_s : 0.0);
    if (t.peak_gflops > 0) std::printf("; ceilings %.0f GFLOP/s, %.0f GB/s", t.peak_gflops, t.peak_gbps);
    std::printf("\n");
    if (t.rows.empty() && t.gpu.kernels.empty() && t.gpu.copies.empty()) {
      std::printf("  no kernel timings in this store (recorded by tc before schema v2, or with no compiled or eager execution)\n");
    }
    if (t.rows.empty()) {
      print_gpu_activity(t.gpu, top);
      return 0;
    }
    std::printf("  %-36s %7s %10s %6s %10s %10s %10s %9s %9s  %s\n", by == "site" ? "source line" : "kernel (fused ops)", "calls", "total",
                "share", "mean", "p50", "p99", "GFLOP/s", "GB/s", by == "site" ? "bound" : "sites");
    int n = 0;
    for (const auto& k : t.rows) {
      if (n++ == top) {
        std::printf("  ... %zu more rows (--top, or --json for all)\n", t.rows.size() - static_cast<size_t>(top));
        break;
      }
      std::string name = shown(k.name);
      if (name.size() > 36) name = name.substr(0, 33) + "...";
      std::string rest;
      if (by == "site") rest = k.bound.empty() ? "-" : k.bound + " " + fmt("%.0f%%", k.of_ceiling * 100);
      else
        for (const auto& s : k.sites) rest += (rest.empty() ? "" : ", ") + shown(s);
      std::printf("  %-36s %7lld %10s %5.1f%% %10s %10s %10s %9.2f %9.2f  %s\n", name.c_str(), static_cast<long long>(k.calls), secs(k.total_s).c_str(),
                  k.share * 100, secs(k.mean_s).c_str(), secs(k.p50_s).c_str(), secs(k.p99_s).c_str(), k.gflops, k.gbps, rest.c_str());
    }
    print_gpu_activity(t.gpu, top);
    return 0;
  }
  if (sub == "diff" && two_sets && (paths.size() > 1 || b_paths.size() > 1)) return run_job_diff(paths, b_paths, options, json, rule);
  if (sub == "diff" && two_sets) paths.push_back(b_paths[0]);  // one store on each side: the diff of two runs
  if (sub == "diff") {
    auto a = load(paths[0], exit, options);
    if (!a) return exit;
    auto b = load(paths[1], exit, options);
    if (!b) return exit;
    for (const auto& [path, loaded] : {std::pair{&paths[0], &*a}, std::pair{&paths[1], &*b}}) {
      if (loaded->report.invalid_utf8_names > 0) {
        std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(*path).c_str(), tc::analysis::invalid_utf8_note(loaded->report.invalid_utf8_names).c_str());
      }
    }
    if (json) std::printf("%s\n", tc::analysis::diff_json(a->report, b->report).c_str());
    else std::fputs(tc::analysis::diff_text(a->report, paths[0], b->report, paths[1]).c_str(), stdout);
    if (auto why = tc::analysis::crossed(rule, b->report)) {
      std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(paths[1]).c_str(), why->c_str());
      return kThresholdCrossed;
    }
    return 0;
  }

  if (paths.size() > 1) return run_job(sub, paths, options, json, style, rule);
  auto loaded = load(paths[0], exit, options);
  if (!loaded) return exit;
  if (auto ranks = tc::analysis::store_ranks(loaded->reader); ranks.ok() && ranks->size() > 1) {
    return run_job(sub, paths, options, json, style, rule);  // one store of several ranks (one launcher over the job)
  }
  const Report& r = loaded->report;
  if (r.invalid_utf8_names > 0) {
    std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(paths[0]).c_str(), tc::analysis::invalid_utf8_note(r.invalid_utf8_names).c_str());
  }
  if (json) {
    std::printf("%s\n", tc::analysis::to_json(r).c_str());
  } else {
    if (!r.run.complete) {
      std::fprintf(stderr, "tc-analyze: %s: the run did not end normally (%s); what follows covers what it recorded\n", shown(paths[0]).c_str(),
                   ending(r).c_str());
    }
    if (sub == "suggest") {
      int n = 0;
      for (const auto& f : r.findings) {
        if (f.estimated_saving_s <= 0 && f.severity == Severity::kInfo) continue;
        std::printf("%d. %s\n   (%s; est. %s)\n", ++n, shown(f.suggestion).c_str(), shown(f.kind).c_str(), secs(f.estimated_saving_s).c_str());
      }
      if (n == 0) std::printf("nothing to change\n");
    } else {
      print_summary(paths[0], r, style);
      if (sub == "report") {
        print_ranges(r.ranges, 5, "tc-analyze ranges for all");
        print_findings(r, style, "");
      } else if (sub == "recompiles") {
        print_compilations(loaded->reader, r.run.start_ts);
        print_findings(r, style, "recompilation.");
      } else if (sub == "evals") {
        print_evals(loaded->reader);
        print_findings(r, style, "explicit_evaluation");
      } else if (sub == "memory") {
        print_memory(loaded->reader);
        print_findings(r, style, "memory.");
      }
    }
  }
  if (auto why = tc::analysis::crossed(rule, r)) {
    std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(paths[0]).c_str(), why->c_str());
    return kThresholdCrossed;
  }
  if (sub == "report" && tc::analysis::recorded_nothing(r)) {
    std::fprintf(stderr,
                 "tc-analyze: %s: the run recorded nothing: no training steps, ranges, marks, compilations or GPU activity; profile a program "
                 "that trains with tc, records NVTX ranges or runs on a GPU\n",
                 shown(paths[0]).c_str());
    return kNothingRecorded;
  }
  return 0;
}
