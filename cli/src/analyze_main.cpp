// tc-analyze: what a recorded run cost, why, and the exact fix.
//
//   tc-analyze run.tcdb                      report (the default subcommand)
//   tc-analyze run.tcdb --json               the same as one JSON object
//   tc-analyze run.tcdb --fail-on 'recompilations>2'
//   tc-analyze recompiles|evals|memory|suggest run.tcdb
//   tc-analyze diff before.tcdb after.tcdb
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
#include "tc/analysis/kernels.h"
#include "tc/analysis/report.h"
#include "tc/store/reader.h"

namespace {

using tc::analysis::Finding;
using tc::analysis::Report;
using tc::analysis::Severity;

// Exit statuses (docs/cli.md). Store errors use their StatusCode (3..7).
constexpr int kThresholdCrossed = 1;
constexpr int kUsage = tc::cli::kUsage;
constexpr int kNoSteps = 12;

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

void print_summary(const std::string& path, const Report& r, const Style& st) {
  const auto& s = r.summary;
  std::printf("%s%s%s: %s (%s, %s)\n", st.bold(), shown(path).c_str(), st.off(), command_line(r).c_str(), ending(r).c_str(),
              r.run.complete ? "complete" : "INCOMPLETE");
  double wall = r.run.wall_s;
  double other = std::max(0.0, wall - s.compile_s - s.execute_s);
  auto pct = [&](double v) { return wall > 0 ? fmt("%.0f%%", v / wall * 100) : std::string("-"); };
  std::printf("  wall      %s = compile %s (%s) + execute %s (%s) + other %s (%s)\n", secs(wall).c_str(), secs(s.compile_s).c_str(),
              pct(s.compile_s).c_str(), secs(s.execute_s).c_str(), pct(s.execute_s).c_str(), secs(other).c_str(), pct(other).c_str());
  std::printf("  steps     %lld    compilations %lld (%lld recompilations)    explicit evaluations %lld\n", static_cast<long long>(s.steps),
              static_cast<long long>(s.compilations), static_cast<long long>(s.recompilations), static_cast<long long>(s.explicit_evaluations));
  if (s.capacity_bytes > 0) {
    std::printf("  memory    peak %s of %s (%.0f%%)\n", bytes(static_cast<double>(s.peak_bytes)).c_str(),
                bytes(static_cast<double>(s.capacity_bytes)).c_str(), 100.0 * static_cast<double>(s.peak_bytes) / static_cast<double>(s.capacity_bytes));
  } else {
    std::printf("  memory    peak %s\n", bytes(static_cast<double>(s.peak_bytes)).c_str());
  }
  if (!s.top_site.empty())
    std::printf("  kernels   %s holds %.0f%% of the execute time (tc-analyze kernels for the table)\n", shown(s.top_site).c_str(), s.top_site_share * 100);
  if (r.run.dropped_count > 0) std::printf("  dropped   %lld events never reached the store\n", static_cast<long long>(r.run.dropped_count));
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

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> subcommands = {"report", "recompiles", "evals", "memory", "suggest", "kernels", "diff", "export"};
  std::string sub = "report";
  std::vector<char*> args(argv, argv + argc);
  if (argc > 1 && std::find(subcommands.begin(), subcommands.end(), argv[1]) != subcommands.end()) {
    sub = argv[1];
    args.erase(args.begin() + 1);
  }
  CLI::App app{
      "Read a tc store (.tcdb) and say what the run cost, why, and what to change.\n\n"
      "  tc-analyze run.tcdb                         report: summary and findings, most costly first\n"
      "  tc-analyze run.tcdb --json                  the same as one JSON object (docs/analyze-json.md)\n"
      "  tc-analyze run.tcdb --fail-on 'recompilations>2,explicit_evaluations>0'   CI gate: exit 1 when crossed\n"
      "  tc-analyze recompiles|evals|memory|suggest run.tcdb   one part of the report, with its tables\n"
      "  tc-analyze kernels run.tcdb [--by site]     where the execute time went: per kernel, or per line of your code\n"
      "  tc-analyze diff before.tcdb after.tcdb      two runs side by side, to show that a fix worked\n"
      "  tc-analyze export run.tcdb --format chrome -o trace.json   timeline for Perfetto / chrome://tracing\n",
      "tc-analyze " + sub};
  std::vector<std::string> paths;
  bool json = false, no_color = false;
  std::vector<std::string> fail_on;
  std::string format = "chrome", output;
  double margin = 0.10;
  app.add_option("stores", paths, sub == "diff" ? "Two stores: A (before) and B (after)" : "The .tcdb file")->required();
  app.add_flag("--json", json, "Print one JSON object instead of text");
  app.add_flag("--no-color", no_color, "No colours (also when NO_COLOR is set or stdout is not a terminal)");
  std::string metrics;
  for (const auto& m : tc::analysis::metric_names()) metrics += (metrics.empty() ? "" : ", ") + m;
  app.add_option("--fail-on", fail_on, "METRIC OP NUMBER[,...]: exit 1 with a one-line reason when crossed. OP: > >= < <= == !=. Metrics: " + metrics);
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
  if (sub == "export") {
    app.add_option("--format", format, "Export format")->check(CLI::IsMember({"chrome"}))->capture_default_str();
    app.add_option("-o,--output", output, "File to write")->required();
  }
  app.footer(
      "Exit status: 0 ok; 1 a --fail-on threshold was crossed; 2 bad usage; 3 no such file; 4 not a tc store; 5 truncated or damaged "
      "store; 6 store from a newer tc; 7 I/O error; 12 the run recorded no training steps (report).\n"
      "An incomplete run (crashed or killed) is analysed and marked INCOMPLETE.");
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return tc::cli::parse_error("tc-analyze", app, e);
  }
  if ((sub == "diff") != (paths.size() == 2) || paths.size() > 2) {
    std::fprintf(stderr, "tc-analyze: %s takes %s, got %zu; see tc-analyze --help\n", sub.c_str(), sub == "diff" ? "two stores" : "one store",
                 paths.size());
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
    if (t.rows.empty()) {
      std::printf("  no kernel timings in this store (recorded by tc before schema v2, or with no compiled or eager execution)\n");
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
    return 0;
  }
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

  auto loaded = load(paths[0], exit, options);
  if (!loaded) return exit;
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
  if (r.summary.steps == 0 && sub == "report") {
    std::fprintf(stderr,
                 "tc-analyze: %s: the run recorded no training steps (tc::mark_step() was never called); profile a program that trains with tc\n",
                 shown(paths[0]).c_str());
    return kNoSteps;
  }
  return 0;
}
