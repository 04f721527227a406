// The finding rules. Each reads the store and appends what it finds.
#pragma once

#include "tc/analysis/format.h"
#include "tc/analysis/report.h"

namespace tc::analysis {

// Text columns are read through `text`, so every finding holds valid UTF-8.
Status add_findings(const store::Reader& store, Report& report, const Options& options, StoreText& text);

}  // namespace tc::analysis
