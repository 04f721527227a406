// The finding rules. Each reads the store and appends what it finds.
#pragma once

#include "tc/analysis/format.h"
#include "tc/analysis/report.h"

namespace tc::analysis {

// SQL: a compilations row that is a compilation of its own, not torch.compile's
// backward of one (trigger 'backward': its time is its frame's, it is no more compilations)
// nor tc's tier-up of one (trigger 'tier_up': the optimized build of a graph that ran on
// its eager tier meanwhile, TC_TIERED). Used qualified too ("c." + kNotBackward): the
// second `trigger` then resolves to the same table, the only one with that column.
inline constexpr const char* kNotBackward = "trigger IS NOT 'backward' AND trigger IS NOT 'tier_up'";
// SQL: a compilation the program waited for: all but tc's tier-ups, built on a
// thread of their own while the steps ran on the eager tier.
inline constexpr const char* kBlocking = "trigger IS NOT 'tier_up'";

// Text columns are read through `text`, so every finding holds valid UTF-8.
Status add_findings(const store::Reader& store, Report& report, const Options& options, StoreText& text);

}  // namespace tc::analysis
