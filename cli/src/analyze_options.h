// tc-analyze's command line: the subcommand, its stores and its options,
// checked. Nothing here reads a store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tc/analysis/fail_on.h"
#include "tc/analysis/ranges.h"
#include "tc/analysis/report.h"

namespace tc::cli {

struct AnalyzeOptions {
  // report (the default), recompiles, evals, memory, suggest, kernels, ranges, diff or export.
  std::string sub = "report";
  std::vector<std::string> paths;
  // diff A... -- B...: the stores after "--" (two_sets), the second job.
  std::vector<std::string> b_paths;
  bool two_sets = false;
  bool json = false, no_color = false;
  analysis::FailOn fail_on;
  analysis::Options analysis;  // --safety-margin, --step-range
  // kernels
  bool by_site = false;
  int top = 20;
  // ranges
  analysis::RangeFilter filter;
  // export
  std::string output;
};

// Parses argv. Returns nullopt when options holds a command to run, else the
// exit status: 0 after --help, tc::cli::kUsage after a one-line error.
std::optional<int> parse_analyze_options(int argc, char** argv, AnalyzeOptions& options);

}  // namespace tc::cli
