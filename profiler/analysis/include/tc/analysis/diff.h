// tc/analysis/diff.h: two runs side by side, to show that a fix worked.
#pragma once

#include <string>

#include "tc/analysis/report.h"

namespace tc::analysis {

// Aligned text: each summary metric of A and B with the change, then the
// findings of each kind in A and in B with their estimated savings.
std::string diff_text(const Report& a, const std::string& a_name, const Report& b, const std::string& b_name);
// The same as one JSON object, schema "tc-analyze-diff/1".
std::string diff_json(const Report& a, const Report& b);

}  // namespace tc::analysis
