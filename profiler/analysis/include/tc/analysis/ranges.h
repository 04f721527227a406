// tc/analysis/ranges.h: a run's ranges and marks, name by name: NVTX ones
// (any program under tc-profile) and tc's own (TC_TRACE_RANGE, _INSTANT).
//
//   auto store = tc::store::Reader::open("run.tcdb");
//   auto t = tc::analysis::range_table(*store, {.domain = "training"});
//   for (const auto& r : t->ranges) std::cout << r.name << " " << r.total_ns << " self " << r.self_ns << "\n";
//   std::cout << tc::analysis::ranges_json(*t);   // schema "tc-analyze-ranges/1"
//
// What it reads:
// - push/pop ranges and tc's ranges: rows of `ranges`; dur = -1 is a cut
//   range (still open when its thread or process ended);
// - NVTX start/end ranges: `nvtx_range_starts` matched to `nvtx_range_ends`
//   by process (threads.upid) and range_id, as the timeline model pairs them
//   (timeline::read_nvtx_start_ends); a start without an end is cut;
// - marks: rows of `instants` (NVTX marks and tc's instants).
// A location whose file is 'nvtx' is an NVTX site: its name is the message
// and its function the domain ('' for NVTX's default domain). Every other
// location is tc's own, with domain ''. Stores before schema v3 have no NVTX
// tables; they give tc's ranges and instants only. The marks of tc's Python
// hook (kHookMarks: its steps) are tc's instrumentation, not the program's,
// and are left out. Never throws.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tc/analysis/format.h"
#include "tc/store/reader.h"
#include "tc/store/status.h"

namespace tc::analysis {

// The NVTX marks tc's Python hook makes.
using store::schema::kHookMarks;

// Statistics of one (name, domain, kind). Times are integer nanoseconds over
// the ranges that ended; cut ones count in `count` and `cut` only.
struct RangeStats {
  std::string name;    // the NVTX message, or tc's range name
  std::string domain;  // the NVTX domain; "" for NVTX's default domain and for tc's ranges
  std::string kind;    // "nvtx" or "tc"
  int64_t count = 0;   // occurrences, cut ones included
  int64_t cut = 0;     // occurrences that never ended
  int64_t total_ns = 0, mean_ns = 0, min_ns = 0, max_ns = 0;  // 0 when every occurrence was cut
  // Nearest rank: the duration at index floor(p * n) of the n sorted ones
  // (the upper median for an even n).
  int64_t p50_ns = 0, p99_ns = 0;
  // total_ns minus the time its direct children covered: ranges on the same
  // thread one level deeper (ranges.depth + 1) that start inside it, each
  // counted up to the parent's end (a cut child up to the parent's end).
  // Start/end ranges do not nest: their self time is their total.
  int64_t self_ns = 0;
  int64_t threads = 0;  // distinct threads it ran on (for start/end ranges: the starting thread)
};

struct MarkStats {
  std::string name, domain, kind;  // as in RangeStats
  int64_t count = 0;
};

struct ThreadStats {
  int64_t utid = 0, pid = 0, tid = 0;  // pid 0 when the thread's process is unknown
  std::string name;                    // threads.name, else an nvtxNameOsThread name; "" if never named
  int64_t ranges = 0, marks = 0;       // occurrences on it that pass the filter
};

struct RangeTable {
  std::vector<RangeStats> ranges;    // largest total_ns first (then count, then name)
  std::vector<MarkStats> marks;      // largest count first (then name)
  std::vector<ThreadStats> threads;  // threads with a range or mark that passed the filter, by utid
  int64_t range_count = 0, cut_count = 0, mark_count = 0;  // occurrences, summed over the rows
  // Ranges and marks left out as damaged, as the timeline leaves them out:
  // their ts lies outside +-timeline::kTimeLimit (a range's duration is cut
  // to end there). Not in the JSON; tc-analyze ranges says it on stderr.
  int64_t skipped_events = 0;
};

struct RangeFilter {
  std::optional<std::string> domain;  // exact domain ("" = NVTX's default domain and tc's ranges)
  std::optional<std::string> kind;    // "nvtx" or "tc"
  std::string name_contains;          // substring of the name ("" = any)
};

StatusOr<RangeTable> range_table(const store::Reader& store, const RangeFilter& filter = {});
// The same, reading names through `text` (a report's, so that its count of
// names that were not valid UTF-8 covers these too).
StatusOr<RangeTable> range_table(const store::Reader& store, const RangeFilter& filter, StoreText& text);

// {"schema":"tc-analyze-ranges/1","ranges":[..],"marks":[..],"threads":[..]}
// (docs/analyze-json.md), with at most `top` rows of ranges and of marks.
std::string ranges_json(const RangeTable& table, size_t top = std::numeric_limits<size_t>::max());

// One occurrence of a named range, for taking a run's steps from it.
struct RangeOccurrence {
  int64_t utid = 0, ts = 0;
  int64_t dur = -1;  // -1: cut
};
// Every occurrence (push/pop, tc's and start/end) of ranges named exactly
// `name`, in any domain, sorted by ts (one out of time range left out, as
// in RangeTable).
StatusOr<std::vector<RangeOccurrence>> range_occurrences(const store::Reader& store, const std::string& name);

}  // namespace tc::analysis
