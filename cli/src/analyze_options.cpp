#include "analyze_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "analyze_text.h"
#include "cli_support.h"

namespace tc::cli {

namespace {

const char* const kAbout =
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
    "  tc-analyze export run.tcdb --format chrome -o trace.json   timeline for Perfetto / chrome://tracing\n";

const char* const kFooter =
    "Exit status: 0 ok; 1 a --fail-on threshold was crossed; 2 bad usage; 3 no such file; 4 not a tc store; 5 truncated or damaged "
    "store; 6 store from a newer tc; 7 I/O error; 12 the run recorded nothing: no steps, ranges, marks, compilations or GPU activity (report).\n"
    "A run without training steps (a program that does not link tc) is reported with its ranges, marks and threads, and a note "
    "for each finding it cannot have.\n"
    "An incomplete run (crashed or killed) is analysed and marked INCOMPLETE.";

// Takes the subcommand and, for diff A... -- B..., the second set of stores out of args.
void split_subcommand(std::vector<char*>& args, AnalyzeOptions& o) {
  const std::vector<std::string> subcommands = {"report", "recompiles", "evals", "memory", "suggest", "kernels", "ranges", "diff", "export"};
  if (args.size() > 1 && std::find(subcommands.begin(), subcommands.end(), args[1]) != subcommands.end()) {
    o.sub = args[1];
    args.erase(args.begin() + 1);
  }
  if (o.sub != "diff") return;
  auto sep = std::find_if(args.begin(), args.end(), [](const char* a) { return std::string_view(a) == "--"; });
  if (sep != args.end()) {
    o.two_sets = true;
    o.b_paths.assign(sep + 1, args.end());
    args.erase(sep, args.end());
  }
}

// The number of stores the subcommand takes; false (after one line) when it got another.
bool check_store_count(const AnalyzeOptions& o) {
  const bool one_store = o.sub == "kernels" || o.sub == "ranges" || o.sub == "export";
  if (o.sub == "diff" && o.two_sets) {
    if (o.paths.empty() || o.b_paths.empty()) {
      std::fprintf(stderr, "tc-analyze: diff A... -- B... takes at least one store on each side of --, got %zu and %zu; see tc-analyze --help\n",
                   o.paths.size(), o.b_paths.size());
      return false;
    }
  } else if ((o.sub == "diff" && o.paths.size() != 2) || (one_store && o.paths.size() != 1)) {
    std::fprintf(stderr, "tc-analyze: %s takes %s, got %zu; see tc-analyze --help\n", o.sub.c_str(),
                 o.sub == "diff" ? "two stores (or two sets: A... -- B...)" : "one store", o.paths.size());
    return false;
  }
  return true;
}

}  // namespace

std::optional<int> parse_analyze_options(int argc, char** argv, AnalyzeOptions& o) {
  std::vector<char*> args(argv, argv + argc);
  split_subcommand(args, o);
  const std::string& sub = o.sub;
  CLI::App app{kAbout, "tc-analyze " + sub};
  std::vector<std::string> fail_on;
  std::string format = "chrome";
  app.add_option("stores", o.paths,
                 sub == "diff" ? "Two stores: A (before) and B (after); or the stores of job A, then --, then those of job B"
                               : "The .tcdb file; for report, recompiles, evals, memory and suggest also the stores of one MPI job (run.rank*.tcdb)")
      ->required();
  app.add_flag("--json", o.json, "Print one JSON object instead of text");
  app.add_flag("--no-color", o.no_color, "No colours (also when NO_COLOR is set or stdout is not a terminal)");
  std::string metrics;
  for (const auto& m : analysis::metric_names()) metrics += (metrics.empty() ? "" : ", ") + m;
  app.add_option("--fail-on", fail_on, "METRIC OP NUMBER[,...]: exit 1 with a one-line reason when crossed. OP: > >= < <= == !=. Metrics: " + metrics)
      ->allow_extra_args(false);  // one expression per --fail-on: the stores may follow it
  app.add_option("--safety-margin", o.analysis.memory_safety_margin, "Share of device memory kept free when suggesting a batch size")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--capacity", o.analysis.capacity_bytes,
                 "BYTES the run may use, instead of the capacity it recorded (a GPU's memory; on the CPU the cgroup's limit, else the RAM)")
      ->check(CLI::PositiveNumber);
  std::string by = "kernel";
  if (sub == "kernels") {
    app.add_option("--by", by, "kernel: one row per kernel of each graph; site: the time summed per source line (a kernel counts for "
                               "the line most of its ops came from)")
        ->check(CLI::IsMember({"kernel", "site"}))
        ->capture_default_str();
    app.add_option("--top", o.top, "Rows printed (text only; --json has them all)")->check(CLI::PositiveNumber)->capture_default_str();
  }
  std::string domain, kind;
  if (sub == "ranges") {
    app.add_option("--top", o.top, "Rows printed of ranges and of marks (text only; --json has them all)")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--domain", domain, "Only this NVTX domain ('' for NVTX's default domain, which tc's own ranges share)");
    app.add_option("--kind", kind, "Only NVTX ranges and marks (nvtx) or tc's own (tc)")->check(CLI::IsMember({"nvtx", "tc"}));
    app.add_option("--name", o.filter.name_contains, "Only names that contain this text");
  }
  std::string step_range;
  const bool reporting = sub != "kernels" && sub != "ranges" && sub != "export";
  if (reporting) {
    app.add_option("--step-range", step_range,
                   "For a program that does not call tc::mark_step(): take its steps from the outermost occurrences of the NVTX (or tc) range "
                   "NAME on each thread; overrides tc-profile --step-range. Ignored (with a note) when the run has tc steps");
  }
  if (sub == "export") {
    app.add_option("--format", format, "Export format")->check(CLI::IsMember({"chrome"}))->capture_default_str();
    app.add_option("-o,--output", o.output, "File to write")->required();
  }
  app.footer(kFooter);
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return parse_error("tc-analyze", app, e);
  }
  if (!check_store_count(o)) return kUsage;
  for (const auto& expr : fail_on) {
    auto r = analysis::parse_fail_on(expr);
    if (!r.ok()) {
      std::fprintf(stderr, "tc-analyze: %s\n", shown(r.status().message()).c_str());
      return kUsage;
    }
    o.fail_on.insert(o.fail_on.end(), r->begin(), r->end());
  }
  if (reporting && app.count("--step-range") > 0) {
    if (step_range.empty()) {
      std::fprintf(stderr, "tc-analyze: --step-range was given an empty name; give the range whose occurrences are the steps, e.g. --step-range train_step\n");
      return kUsage;
    }
    o.analysis.step_range = step_range;
  }
  o.by_site = by == "site";
  if (sub == "ranges" && app.count("--domain") > 0) o.filter.domain = domain;
  if (!kind.empty()) o.filter.kind = kind;
  return std::nullopt;
}

}  // namespace tc::cli
