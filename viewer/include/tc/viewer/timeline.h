// tc/viewer/timeline.h: a store loaded into plain, time-sorted arrays for the
// timeline. No GUI here: tests and benchmarks use it without a display.
//
//   auto reader = tc::store::Reader::open("run.tcdb");
//   auto tl = tc::viewer::load_timeline(*reader);      // off the drawing path
//   if (!tl.ok()) show(tl.status().message());          // one line, never a crash
//   for (const Lane& lane : tl->lanes) for (const Track& t : lane.tracks) ...
//
// A Lane is one thread (its process named in the lane); its Tracks are the rows
// drawn for it: steps, compilations, executions, explicit evaluations, instants
// one track of kernels (nested under the executions: each timed kernel run)
// and one track per nesting depth of user ranges. Events of one track are sorted
// by ts; the level-of-detail builder (lod.h) binary-searches them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tc/store/reader.h"
#include "tc/store/status.h"

namespace tc::viewer {

enum class TrackKind : uint8_t { kSteps, kCompilations, kExecutions, kEvaluations, kInstants, kRanges, kKernels };
const char* track_kind_name(TrackKind kind);

// Why a graph was compiled (compilations.reason); picks its colour.
enum class CompileReason : uint8_t { kFirst, kShapeChange, kStructureChange, kOther };
CompileReason parse_compile_reason(std::string_view reason);

struct Location {
  std::string name, file, function;
  int64_t line = 0;
};

struct Step {
  int64_t ts = 0, dur = 0, step = 0, loc_id = 0;
};

struct InputChange {  // compilation_inputs
  std::string input;
  int64_t dim = 0, old_value = 0, new_value = 0;
};

struct Compilation {
  int64_t id = 0, utid = 0, ts = 0, dur = 0, graph_id = 0, step = 0, loc_id = 0;
  int64_t nodes_before = 0, nodes_after = 0, kernels = 0;
  CompileReason reason = CompileReason::kOther;
  std::string reason_text, trigger, cache, diff;
  std::vector<InputChange> inputs;  // for shape_change: what changed
};

struct Execution {
  int64_t ts = 0, dur = 0, graph_id = 0, step = 0, nodes = 0;
  std::string trigger;
};

struct Evaluation {  // explicit_evaluations
  int64_t id = 0, utid = 0, ts = 0, dur = 0, step = 0, loc_id = 0, nodes = 0, graph_id = 0;
  std::string kind;
};

// A kernel of a compiled graph (or an op of the eager executor, graph 0).
struct KernelInfo {
  int64_t graph_id = 0, kernel = 0, flops = 0, bytes = 0;  // bytes: read + written
  std::string kind, ops, sites;                            // sites: "file:line;file:line"
  std::string first_site() const { return sites.substr(0, sites.find(';')); }
};

// One timed run of a kernel (kernel_executions); kernel indexes Timeline::kernels.
struct KernelRun {
  int64_t ts = 0, dur = 0, execution_id = 0;
  uint32_t kernel = 0;
};

struct OutOfMemory {
  int64_t ts = 0, step = 0, requested_bytes = 0, live_bytes = 0, capacity_bytes = 0;
};

// One row of a lane. ts[i] is when event i starts and end[i] when it ends,
// with end[i] > ts[i] always (a point event or an unfinished range gets the
// smallest or the longest sensible extent). ref[i] says which event it is: an
// index into Timeline::compilations / executions / evaluations / steps for
// those kinds, the loc_id for ranges and instants. arg[i] is the raw argument
// of ranges and instants (empty for the other kinds).
struct Track {
  TrackKind kind = TrackKind::kRanges;
  int depth = 0;            // for kRanges: the nesting depth
  std::string name;
  std::vector<int64_t> ts, end;
  std::vector<uint32_t> ref;
  std::vector<int64_t> arg;
  // max_end[i] = max(end[0..i]); empty when end is already sorted (events of
  // one track do not overlap), which is the common case.
  std::vector<int64_t> max_end;
  size_t size() const { return ts.size(); }
};

struct Lane {
  int64_t upid = 0, utid = 0, pid = 0, tid = 0;
  std::string name;  // "process 1234 / thread main (5678)"
  std::vector<Track> tracks;
};

// The memory.live_bytes counter with a min/max pyramid for level of detail.
struct CounterSeries {
  std::string name;
  std::vector<int64_t> ts;
  std::vector<double> value;
  // levels[k] holds, for each block of kBlock^(k+1) samples, its min and max.
  static constexpr size_t kBlock = 64;
  struct Level {
    std::vector<double> min, max;
  };
  std::vector<Level> levels;
  double max_value = 0;
  size_t size() const { return ts.size(); }
  // Builds levels from value; load_timeline calls it.
  void build_levels();
  // Min and max of value[first, last) using the pyramid: O(kBlock * levels).
  void min_max(size_t first, size_t last, double* lo, double* hi) const;
};

struct Timeline {
  std::string path;
  int64_t start_ts = 0, end_ts = 0;  // what the view shows when zoomed out
  std::vector<Location> locations;   // by loc_id (empty entries for unknown ids)
  std::vector<Lane> lanes;
  std::vector<Step> steps;
  std::vector<Compilation> compilations;  // sorted by ts
  std::vector<Execution> executions;
  std::vector<Evaluation> evaluations;    // sorted by ts
  std::vector<KernelInfo> kernels;        // kernels table (empty for a store older than v2)
  std::vector<KernelRun> kernel_runs;     // kernel_executions; the kernels track's ref indexes it
  CounterSeries memory;                    // memory.live_bytes, all threads together
  double capacity_bytes = 0;               // memory.capacity_bytes, else memory_plans / out_of_memory
  std::vector<OutOfMemory> out_of_memory;
  int64_t event_count = 0;                 // events on all tracks
  bool ranges_loaded = true;               // false for a LoadOptions::ranges = false load

  const Location* location(int64_t loc_id) const {
    return loc_id >= 0 && static_cast<size_t>(loc_id) < locations.size() ? &locations[loc_id] : nullptr;
  }
};

struct LoadOptions {
  // Threads that read the ranges table in parallel, each with its own Reader
  // (0: one per hardware thread, at most 8).
  int threads = 0;
  // false: everything but the ranges table, for a first frame while the
  // (possibly millions of) ranges still load.
  bool ranges = true;
};

// The memory lane's vertical range: the run's own live bytes (from a little
// below its lowest to a little above its peak), so each step's rise and fall
// is visible; the capacity is inside the range only when it is near the peak
// (at most twice it), else it is shown as a label.
struct MemoryScale {
  double lo = 0, hi = 1;
  bool capacity_in_range = false;
};
MemoryScale memory_scale(const Timeline& tl);

// Statistics of events grouped by name, in the manner of Tracy's find-zone:
// per kernel (its fused ops and graph), per source site of kernels, or per
// range name. `slowest` locates the slowest instance on the timeline (lane,
// track, index in the track) so a click can select it. Sorted by total time,
// largest first.
enum class StatsBy : uint8_t { kKernel, kSite, kRange };
struct EventStats {
  std::string name;
  int64_t count = 0, total = 0, mean = 0, p50 = 0, p99 = 0, min = 0, max = 0;
  int slowest_lane = -1, slowest_track = -1;
  uint32_t slowest_event = 0;
  // Durations in 24 bins spaced evenly in log time from min to max.
  std::vector<float> histogram;
};
std::vector<EventStats> event_statistics(const Timeline& tl, StatsBy by);

// Reads everything the timeline shows. Errors are one-line Status messages.
StatusOr<Timeline> load_timeline(const store::Reader& reader, const LoadOptions& options = {});
// Reader::open then load_timeline.
StatusOr<Timeline> load_timeline(const std::string& path, const LoadOptions& options = {});

// "file.py:42" style call site of a location, or "?".
std::string call_site(const Timeline& tl, int64_t loc_id);

}  // namespace tc::viewer
