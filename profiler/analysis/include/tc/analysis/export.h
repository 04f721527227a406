// tc/analysis/export.h: the run's timeline in other tools' formats.
#pragma once

#include <string>

#include "tc/store/reader.h"
#include "tc/store/status.h"

namespace tc::analysis {

// Writes the Chrome Trace Event format (JSON object with traceEvents), which
// Perfetto (ui.perfetto.dev) and chrome://tracing open: process and thread
// names, ranges and the compiler's steps, compilations, executions and
// explicit evaluations as complete events, instants, counters (memory).
// Times are microseconds since the run started.
Status export_chrome(const store::Reader& store, const std::string& path);

}  // namespace tc::analysis
