// tc/analysis/export.h: the run's timeline in other tools' formats.
#pragma once

#include <cstdint>
#include <string>

#include "tc/store/reader.h"
#include "tc/store/status.h"

namespace tc::analysis {

struct ExportStats {
  int64_t invalid_utf8_names = 0;  // distinct names written with U+FFFD for invalid UTF-8
  // Left out as damaged, as the timeline leaves them out (timeline::Timeline::Skipped):
  // events whose ts lies outside +-timeline::kTimeLimit, and locations whose id is past the bound.
  int64_t skipped_events = 0, skipped_locations = 0;
};

// Writes the Chrome Trace Event format (JSON object with traceEvents), which
// Perfetto (ui.perfetto.dev) and chrome://tracing open: process and thread
// names, ranges and the compiler's steps, compilations, executions and
// explicit evaluations as complete events, instants, counters (memory).
// Times are microseconds since the run started. The output is valid JSON
// whatever bytes the store's names hold (invalid UTF-8 becomes U+FFFD).
//
// NVTX (schema v3; docs/export.md has the exact shapes). Every NVTX event has
// "cat" "nvtx" (default domain) or "nvtx:DOMAIN", "name" the message, and args
// {"domain" (null for the default), "category" (its nvtx_categories name,
// else the number, else null), "payload" (the real one when recorded, else
// the integer), "color" ("#RRGGBB" or null)}:
// - push/pop ranges: "X" on their thread, args also "depth" (ranges.depth)
//   and "cut": true for one still open at the end (dur = -1), which then
//   lasts to its process's end_ts, or the run's end when that is unknown;
// - marks: "i" with "s":"t" on their thread;
// - start/end ranges: "b" on the starting thread and "e" on the ending one,
//   "id2":{"local":"0x<range_id>"} (process-scoped), args also "range_id";
//   a start without an end gets its "e" at the same cut end, args {"cut":true}.
// Stores of v1 and v2 have none of these; tc's own ranges are "range" events.
//
// A regular file at path is replaced only when the export is complete (it is
// written beside, as .NAME.tc-tmp-PID, and renamed), so a failure leaves no
// partial file; a pipe or device (/dev/stdout) is written in place.
// kInvalidArgument when path is empty or is the store being read (or one of
// its -wal/-shm/-journal files), by any name; kCorrupt for a store without
// its run row; kIoError when the file cannot be written.
Status export_chrome(const store::Reader& store, const std::string& path, ExportStats* stats = nullptr);

// "left out 3 events whose time is out of range (a damaged store), as the
// timeline does" (and the locations likewise); "" when nothing was skipped.
std::string skipped_note(const ExportStats& stats);

}  // namespace tc::analysis
