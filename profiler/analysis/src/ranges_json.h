// The keys "ranges", "marks" and "threads" of a range table, shared by
// tc-analyze ranges --json and the report's JSON.
#pragma once

#include "json.h"
#include "tc/analysis/ranges.h"

namespace tc::analysis {

// At most `top` rows of ranges and of marks; every thread.
void ranges_json_fields(Json& j, const RangeTable& table, size_t top);

}  // namespace tc::analysis
