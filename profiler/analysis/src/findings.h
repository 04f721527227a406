// The finding rules. Each reads the store and appends what it finds.
#pragma once

#include "tc/analysis/format.h"
#include "tc/analysis/report.h"

namespace tc::analysis {

// SQL: a compilations row that is a compilation of its own, not torch.compile's
// backward of one (trigger 'backward': its time is its frame's, it is no more compilations).
inline constexpr const char* kNotBackward = "trigger IS NOT 'backward'";

// Text columns are read through `text`, so every finding holds valid UTF-8.
Status add_findings(const store::Reader& store, Report& report, const Options& options, StoreText& text);

}  // namespace tc::analysis
