// The counts and times a run's Summary and a job's RankSummary both hold,
// by the metric names of --fail-on and diff (tc/analysis/fail_on.h).
#pragma once

#include <optional>
#include <string_view>

namespace tc::analysis {

template <class S>
std::optional<double> summary_metric(const S& s, std::string_view m) {
  if (m == "steps") return static_cast<double>(s.steps);
  if (m == "compilations") return static_cast<double>(s.compilations);
  if (m == "recompilations") return static_cast<double>(s.recompilations);
  if (m == "explicit_evaluations") return static_cast<double>(s.explicit_evaluations);
  if (m == "compile_s") return s.compile_s;
  if (m == "execute_s") return s.execute_s;
  return std::nullopt;
}

}  // namespace tc::analysis
