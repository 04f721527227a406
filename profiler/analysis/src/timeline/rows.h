// Each kind's store reading, row by row, written once in the kind's file
// (src/timeline/<kind>.cpp; threads, processes and locations in load.cpp):
// load_timeline, the Chrome export (export.cpp) and tc-analyze ranges
// (ranges.cpp) all read the store through these. Private to
// profiler/analysis.
//
// The time bound is applied here, the same for every reader: a row whose ts
// lies outside [-kTimeLimit, kTimeLimit) is not given to `f` but counted in
// *skipped (Timeline::Skipped::events), and a kept row's dur is cut so that
// it ends by kTimeLimit (a negative dur, an unfinished event, is kept as
// is). Each reader streams: it holds one row at a time (compilations also
// hold the store's compilation_inputs, kernel runs the kernels table).
// Errors are the query's Status.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tc/analysis/timeline/timeline.h"

namespace tc::analysis::timeline::rows {

struct Process {  // processes, in row order
  int64_t upid = 0, pid = 0;
  std::optional<std::string> name;
  std::optional<int64_t> end_ts;  // as stored (not bounded)
};
struct Thread {  // threads, by (upid, utid)
  int64_t utid = 0, upid = 0, tid = 0;
  std::optional<std::string> name;
};
struct Range {  // ranges (tc's and NVTX push/pop), in row order
  int64_t utid = 0, ts = 0, dur = 0, depth = 0, loc_id = 0, arg = 0;
};
struct Instant {  // instants (tc's and NVTX marks), in row order
  int64_t utid = 0, ts = 0, loc_id = 0, arg = 0;
};
struct Counter {  // counters, in row order
  int64_t utid = 0, ts = 0, loc_id = 0;
  double value = 0;
};

Status each_process(const store::Reader& r, const std::function<void(const Process&)>& f);
Status each_thread(const store::Reader& r, const std::function<void(const Thread&)>& f);
// tl->locations by id; ids outside [0, location_id_bound) are skipped and
// counted in tl->skipped.locations.
Status read_locations(const store::Reader& r, Timeline* tl);

// By (ts, id). A compilation carries its compilation_inputs rows (by id).
Status each_step(const store::Reader& r, int64_t* skipped, const std::function<void(int64_t utid, Step&)>& f);
Status each_compilation(const store::Reader& r, int64_t* skipped, const std::function<void(Compilation&)>& f);
Status each_execution(const store::Reader& r, int64_t* skipped, const std::function<void(int64_t utid, Execution&)>& f);
Status each_evaluation(const store::Reader& r, int64_t* skipped, const std::function<void(Evaluation&)>& f);
// Kernel runs (schema v2; none before): *kernels gets the kernels table (the
// first row of each (graph_id, kernel)); a run's kernel indexes it, and a run
// of a kernel the table does not describe is left out.
Status each_kernel_run(const store::Reader& r, int64_t* skipped, std::vector<KernelInfo>* kernels,
                       const std::function<void(int64_t utid, KernelRun&)>& f);

// Rows with lo <= id < hi, or all of them when ids is empty.
struct IdRange {
  int64_t lo = 0, hi = 0;
};
Status each_range(const store::Reader& r, std::optional<IdRange> ids, int64_t* skipped, const std::function<void(const Range&)>& f);
Status each_instant(const store::Reader& r, int64_t* skipped, const std::function<void(const Instant&)>& f);
// The counters of the locations in loc_ids, or all of them when it is null.
Status each_counter(const store::Reader& r, const std::vector<int64_t>* loc_ids, int64_t* skipped,
                    const std::function<void(const Counter&)>& f);

// The time bound above: false (and counted) for a ts out of range, else dur
// is cut to end by kTimeLimit.
inline bool keep(int64_t ts, int64_t* dur, int64_t* skipped) {
  if (ts < -kTimeLimit || ts >= kTimeLimit) {
    ++*skipped;
    return false;
  }
  if (dur && *dur > kTimeLimit - ts) *dur = kTimeLimit - ts;
  return true;
}

}  // namespace tc::analysis::timeline::rows
