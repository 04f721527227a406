// tc/analysis/diff.h: two runs side by side, to show that a fix worked.
#pragma once

#include <string>

#include "tc/analysis/job.h"
#include "tc/analysis/report.h"

namespace tc::analysis {

// Aligned text: each summary metric of A and B with the change, then the
// findings of each kind in A and in B with their estimated savings.
std::string diff_text(const Report& a, const std::string& a_name, const Report& b, const std::string& b_name);
// The same as one JSON object, schema "tc-analyze-diff/1".
std::string diff_json(const Report& a, const Report& b);

// Two sets of rank stores (before and after; tc-analyze diff A... -- B...):
// per rank (matched by rank number) steps, compilations, recompilations,
// explicit_evaluations, collective_wait_s, compile_s, execute_s, wall_s of A
// and B with the change; the totals (summed over the ranks; steps and wall_s
// the largest) with straggler_wait_s, stragglers and findings; then the
// merged findings of each kind in A and in B.
std::string job_diff_text(const JobReport& a, const JobReport& b);
// The same as one JSON object, schema "tc-analyze-job-diff/1".
std::string job_diff_json(const JobReport& a, const JobReport& b);

}  // namespace tc::analysis
