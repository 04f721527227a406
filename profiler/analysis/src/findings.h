// The finding rules. Each reads the store and appends what it finds.
#pragma once

#include "tc/analysis/report.h"

namespace tc::analysis {

Status add_findings(const store::Reader& store, Report& report, const Options& options);

}  // namespace tc::analysis
