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

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "analyze_options.h"
#include "analyze_text.h"
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
#include "tc/store/schema.h"
#include "tc/trace/python_command.h"

namespace {

using namespace tc::cli;
using tc::analysis::Report;

// Exit statuses (docs/cli.md). Store errors use their StatusCode (3..7).
constexpr int kThresholdCrossed = 1;
constexpr int kNothingRecorded = 12;

int open_error(const tc::Status& s) {
  std::fprintf(stderr, "tc-analyze: %s\n", shown(s.message()).c_str());
  return static_cast<int>(s.code());
}

void note_invalid_utf8(const std::string& path, int64_t names) {
  if (names > 0) std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(path).c_str(), tc::analysis::invalid_utf8_note(names).c_str());
}

void note_incomplete(const std::string& path, const Report& r) {
  if (r.run.complete) return;
  std::fprintf(stderr, "tc-analyze: %s: the run did not end normally (%s); what follows covers what it recorded\n", shown(path).c_str(),
               ending(r).c_str());
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

int run_ranges(const AnalyzeOptions& o) {
  const std::string& path = o.paths[0];
  auto reader = tc::store::Reader::open(path);
  if (!reader.ok()) return open_error(reader.status());
  tc::analysis::StoreText text;
  auto table = tc::analysis::range_table(*reader, o.filter, text);
  if (!table.ok()) return open_error(table.status());
  note_invalid_utf8(path, text.replaced());
  if (table->skipped_events > 0) {
    std::fprintf(stderr, "tc-analyze: %s: left out %lld ranges and marks whose time is out of range (a damaged store), as the timeline does\n",
                 shown(path).c_str(), static_cast<long long>(table->skipped_events));
  }
  if (o.json) {
    std::printf("%s\n", tc::analysis::ranges_json(*table).c_str());
    return 0;
  }
  std::printf("%s: %s\n", shown(path).c_str(), range_totals(*table).c_str());
  if (table->ranges.empty() && table->marks.empty()) {
    bool filtered = o.filter.domain || o.filter.kind || !o.filter.name_contains.empty();
    std::printf("  no ranges or marks%s\n", filtered ? " match --domain, --kind and --name" : " in this store (NVTX ranges are recorded under tc-profile)");
    return 0;
  }
  print_ranges(*table, static_cast<size_t>(o.top), "--top, or --json for all");
  return 0;
}

int run_export(const AnalyzeOptions& o) {
  if (o.output.empty()) {
    std::fprintf(stderr, "tc-analyze: -o was given an empty path; give the file to write, e.g. -o trace.json\n");
    return kUsage;
  }
  // An export past `ulimit -f` fails with EFBIG (exit 7, no partial file) instead of killing tc-analyze.
  signal(SIGXFSZ, SIG_IGN);
  auto reader = tc::store::Reader::open(o.paths[0]);
  if (!reader.ok()) return open_error(reader.status());
  tc::analysis::ExportStats stats;
  if (tc::Status s = tc::analysis::export_chrome(*reader, o.output, &stats); !s.ok()) return open_error(s);
  note_invalid_utf8(o.paths[0], stats.invalid_utf8_names);
  if (std::string note = tc::analysis::skipped_note(stats); !note.empty()) std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(o.paths[0]).c_str(), note.c_str());
  std::fprintf(stderr, "tc-analyze: wrote %s (Chrome Trace Event format: open it in ui.perfetto.dev or chrome://tracing)\n", shown(o.output).c_str());
  return 0;
}

// Why a store holds no kernel timings, in one phrase.
std::string why_no_kernel_timings(const tc::store::Reader& r) {
  if (!r.has(tc::store::schema::kernels, "sites") || !r.has(tc::store::schema::kernel_executions, "dur"))
    return "it was recorded by tc before schema v2, which did not time kernels";
  if (r.has(tc::store::schema::compilations, "framework")) {
    auto q = r.query("SELECT group_concat(framework, ', ') FROM (SELECT DISTINCT framework FROM compilations WHERE framework <> 'tc')");
    if (q.next() && !q.is_null(0))
      return "the run compiled with " + shown(q.text(0)) + ", whose kernels tc does not time (tc times its own compiler's; CUDA kernels on a "
             "GPU come from CUPTI, below)";
  }
  auto exec = r.scalar_i64("SELECT EXISTS (SELECT 1 FROM executions)");
  if (exec.ok() && *exec == 0) return "the program executed no graph of tc's compiler";
  return "the program's graphs ran without kernel timings";
}

int run_kernels(const AnalyzeOptions& o) {
  auto reader = tc::store::Reader::open(o.paths[0]);
  if (!reader.ok()) return open_error(reader.status());
  auto table = tc::analysis::kernel_table(*reader, o.by_site ? tc::analysis::KernelsBy::kSite : tc::analysis::KernelsBy::kKernel);
  if (!table.ok()) return open_error(table.status());
  if (o.json) std::printf("%s\n", tc::analysis::kernels_json(*table).c_str());
  else print_kernels(o.paths[0], *table, o.by_site, o.top, why_no_kernel_timings(*reader));
  return 0;
}

// report, recompiles, evals, memory, suggest over the stores of one job.
int run_job(const std::string& sub, const std::vector<std::string>& paths, const tc::analysis::Options& options, bool json, const Style& style,
            const tc::analysis::FailOn& rule) {
  auto job = tc::analysis::analyze_job(paths, options);
  if (!job.ok()) return open_error(job.status());
  for (size_t i = 0; i < job->stores.size(); ++i) {
    note_invalid_utf8(job->stores[i], job->reports[i].invalid_utf8_names);
    if (!json) note_incomplete(job->stores[i], job->reports[i]);
  }
  if (json) {
    std::printf("%s\n", tc::analysis::job_json(*job).c_str());
  } else if (sub == "suggest") {
    print_job_suggestions(*job);
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


// diff over two stores: the runs side by side; --fail-on applies to B.
int run_diff(const AnalyzeOptions& o) {
  if (o.two_sets && (o.paths.size() > 1 || o.b_paths.size() > 1)) return run_job_diff(o.paths, o.b_paths, o.analysis, o.json, o.fail_on);
  const std::string& a_path = o.paths[0];
  const std::string& b_path = o.two_sets ? o.b_paths[0] : o.paths[1];  // one store on each side of --: the diff of two runs
  int exit = 0;
  auto a = load(a_path, exit, o.analysis);
  if (!a) return exit;
  auto b = load(b_path, exit, o.analysis);
  if (!b) return exit;
  note_invalid_utf8(a_path, a->report.invalid_utf8_names);
  note_invalid_utf8(b_path, b->report.invalid_utf8_names);
  if (o.json) std::printf("%s\n", tc::analysis::diff_json(a->report, b->report).c_str());
  else std::fputs(tc::analysis::diff_text(a->report, a_path, b->report, b_path).c_str(), stdout);
  if (auto why = tc::analysis::crossed(o.fail_on, b->report)) {
    std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(b_path).c_str(), why->c_str());
    return kThresholdCrossed;
  }
  return 0;
}

// report, recompiles, evals, memory, suggest over one store (or, when it holds several ranks, as a job).
int run_report(const AnalyzeOptions& o, const Style& style) {
  if (o.paths.size() > 1) return run_job(o.sub, o.paths, o.analysis, o.json, style, o.fail_on);
  const std::string& path = o.paths[0];
  int exit = 0;
  auto loaded = load(path, exit, o.analysis);
  if (!loaded) return exit;
  auto ranks = tc::analysis::store_ranks(loaded->reader);
  if (!ranks.ok()) return open_error(ranks.status());
  if (ranks->size() > 1) return run_job(o.sub, o.paths, o.analysis, o.json, style, o.fail_on);  // one store of several ranks (one launcher over the job)
  const Report& r = loaded->report;
  note_invalid_utf8(path, r.invalid_utf8_names);
  if (o.json) {
    std::printf("%s\n", tc::analysis::to_json(r).c_str());
  } else {
    note_incomplete(path, r);
    if (o.sub == "suggest") {
      print_suggestions(r);
    } else {
      print_summary(path, r, style);
      if (o.sub == "report") {
        print_ranges(r.ranges, 5, "tc-analyze ranges for all");
        print_findings(r, style, "");
      } else if (o.sub == "recompiles") {
        if (tc::Status s = print_compilations(loaded->reader, r.run.start_ts); !s.ok()) return open_error(s);
        print_findings(r, style, "recompilation.");
      } else if (o.sub == "evals") {
        if (tc::Status s = print_evals(loaded->reader); !s.ok()) return open_error(s);
        print_findings(r, style, "explicit_evaluation");
      } else if (o.sub == "memory") {
        if (tc::Status s = print_memory(loaded->reader); !s.ok()) return open_error(s);
        print_findings(r, style, "memory.");
      }
    }
  }
  if (auto why = tc::analysis::crossed(o.fail_on, r)) {
    std::fprintf(stderr, "tc-analyze: %s: %s\n", shown(path).c_str(), why->c_str());
    return kThresholdCrossed;
  }
  if (o.sub == "report" && tc::analysis::recorded_nothing(r)) {
    if (const char flag = tc::trace::python_flag_without_hook(r.run.command)) {
      std::fprintf(stderr, "tc-analyze: %s: the run recorded nothing: %s\n", shown(path).c_str(),
                   tc::trace::python_without_hook_words(flag).c_str());
      return kNothingRecorded;
    }
    std::fprintf(stderr,
                 "tc-analyze: %s: the run recorded nothing: no training steps, ranges, marks, compilations or GPU activity; profile a program "
                 "that trains with tc, records NVTX ranges or runs on a GPU\n",
                 shown(path).c_str());
    return kNothingRecorded;
  }
  return 0;
}

// Colours only for a terminal, and never when NO_COLOR is set or JSON is asked for.
Style environment_style(const AnalyzeOptions& o) {
  Style style;
  style.color = !o.json && !o.no_color && std::getenv("NO_COLOR") == nullptr && isatty(STDOUT_FILENO);
  return style;
}

int run(const AnalyzeOptions& o, const Style& style) {
  if (o.sub == "ranges") return run_ranges(o);
  if (o.sub == "export") return run_export(o);
  if (o.sub == "kernels") return run_kernels(o);
  if (o.sub == "diff") return run_diff(o);
  return run_report(o, style);
}

}  // namespace

int main(int argc, char** argv) {
  AnalyzeOptions options;
  if (auto exit = parse_analyze_options(argc, argv, options)) return *exit;
  return run(options, environment_style(options));
}
