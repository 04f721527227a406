// tc/analysis/fail_on.h: CI thresholds on a report.
//
//   auto rule = tc::analysis::parse_fail_on("recompilations>2");
//   if (auto why = tc::analysis::crossed(*rule, report)) { puts(why->c_str()); exit(1); }
//
// An expression is METRIC OP NUMBER, several joined by commas (any one
// crossing fails). OP is one of > >= < <= == !=. Metrics: steps,
// compilations, recompilations, explicit_evaluations, compile_s, execute_s,
// wall_s, compile_share (compile_s / wall_s), peak_bytes, capacity_bytes,
// memory_share (peak / capacity), findings, warnings, errors, dropped_events;
// and, over the stores of a job (tc/analysis/job.h), collective_wait_s (every
// rank's wait in collectives, summed), straggler_wait_s (the waits the
// distributed.straggler findings explain) and stragglers (their count), which
// are 0 for one store. Over a job every other metric is the largest of its
// ranks (the worst rank), except findings, warnings and errors: those count
// the merged report's findings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tc/analysis/job.h"
#include "tc/analysis/report.h"

namespace tc::analysis {

struct Threshold {
  std::string metric;
  std::string op;
  double value = 0;
};

using FailOn = std::vector<Threshold>;

StatusOr<FailOn> parse_fail_on(std::string_view expression);
// The metric's value in the report (nullopt for an unknown name).
std::optional<double> metric_value(const Report& report, std::string_view metric);
// One line saying which threshold was crossed, or nullopt.
std::optional<std::string> crossed(const FailOn& rule, const Report& report);
// The same over the merged stores of a job.
std::optional<double> metric_value(const JobReport& job, std::string_view metric);
std::optional<std::string> crossed(const FailOn& rule, const JobReport& job);
// The metric names, for --help.
const std::vector<std::string>& metric_names();

}  // namespace tc::analysis
