// tc/analysis/timeline/timeline.h: a store loaded into plain, time-sorted arrays for the
// timeline. No GUI here: tests and benchmarks use it without a display.
//
//   auto reader = tc::store::Reader::open("run.tcdb");
//   auto tl = tc::analysis::timeline::load_timeline(*reader);      // off the drawing path
//   if (!tl.ok()) show(tl.status().message());          // one line, never a crash
//   for (const Lane& lane : tl->lanes) for (const Track& t : lane.tracks) ...
//
// A Lane is one thread (its process named in the lane); its Tracks are the rows
// drawn for it: steps, compilations, executions, explicit evaluations, instants
// one track of kernels (nested under the executions: each timed kernel run)
// and one track per nesting depth of user ranges. Then, for a store with NVTX
// (schema v3), one group of tracks per NVTX domain the thread used (default
// domain first, then by name; Track::domain says which): its marks, its
// push/pop ranges by nesting depth within the domain, and its start/end ranges
// (those started on this thread) in as few rows as keep them apart. Events of
// one track are sorted by ts; the level-of-detail builder (lod.h)
// binary-searches them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tc/store/reader.h"
#include "tc/store/status.h"
#include "tc/analysis/timeline/palette.h"

namespace tc::analysis::timeline {

// Times. A store's event whose ts lies outside [-kTimeLimit, kTimeLimit) is
// skipped (counted in Timeline::skipped), and an end past kTimeLimit is
// kTimeLimit. A job's clock offsets are within ±kClockOffsetLimit (else its
// store is damaged), so every time of a Timeline lies within
// ±(kTimeLimit + kClockOffsetLimit), under 2^62: the difference of two, or a
// view's margins around them, never overflows.
constexpr int64_t kTimeLimit = int64_t{1} << 61;         // 73 years of ns
constexpr int64_t kClockOffsetLimit = int64_t{1} << 60;  // 36 years of ns

enum class TrackKind : uint8_t {
  kSteps, kCompilations, kExecutions, kEvaluations, kInstants, kRanges, kKernels,
  kNvtxMarks,     // NVTX marks (instants rows of an NVTX site); ref = loc_id, arg = payload
  kNvtxRanges,    // NVTX push/pop ranges (ranges rows of an NVTX site); ref = loc_id, arg = payload
  kNvtxStartEnd,  // NVTX start/end ranges; ref indexes Timeline::nvtx_start_ends
  // A new kind goes here, before kCollectives, the last value (the model
  // counts the kinds by it); each kind is one file, src/timeline/<kind>.cpp.
  kCollectives,   // tc::dist collectives; ref indexes Timeline::collectives; depth 0: the transfers (arg 1), 1: the waits (arg 0)
};
const char* track_kind_name(TrackKind kind);

// Why a graph was compiled (compilations.reason); picks its colour.
enum class CompileReason : uint8_t { kFirst, kShapeChange, kStructureChange, kOther };
CompileReason parse_compile_reason(std::string_view reason);

struct Location {
  std::string name, file, function;
  int64_t line = 0;
  bool named = false;  // a locations row with a name (false: NULL, or no row of this id)
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
  std::string reason_text, trigger, cache, diff, signature;
  std::vector<InputChange> inputs;  // for shape_change: what changed
  int64_t rank = -1;                // a job's rank that compiled it (-1: not a job)
};

struct Execution {
  int64_t ts = 0, dur = 0, graph_id = 0, step = 0, nodes = 0;
  std::string trigger;
  int64_t execution_id = 0;  // 0 in a schema v1 store
};

struct Evaluation {  // explicit_evaluations
  int64_t id = 0, utid = 0, ts = 0, dur = 0, step = 0, loc_id = 0, nodes = 0, graph_id = 0;
  std::string kind;
  int64_t rank = -1;  // a job's rank (-1: not a job)
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

// An NVTX domain as the timeline labels it.
struct NvtxDomain {
  std::string name;  // "" for NVTX's default domain
  bool is_default = false;
  std::string label() const { return is_default ? "NVTX" : name; }
};

// An NVTX site (nvtx_sites): what its ranges and marks share.
struct NvtxSite {
  int domain = 0;                  // index into Timeline::nvtx_domains
  std::optional<int64_t> category;
  std::string category_name;       // nvtx_categories' name (the site's process first); "" when unnamed
  std::optional<uint32_t> color;   // 0xAARRGGBB, when the program gave one
};

// An NVTX start/end range (nvtx_range_starts and its nvtx_range_ends row):
// on the lane of the thread that started it, wherever it ended.
struct NvtxStartEnd {
  int64_t ts = 0, end = 0, range_id = 0, loc_id = 0, payload = 0;
  int64_t utid = 0, end_utid = 0;  // started on, ended on (end_utid = utid when cut)
  bool cut = false;                // never ended: end is its process's end (else the run's)
};

// A data-parallel collective (the collectives table): ts is when this rank
// arrived. Its thread's rows draw [ts, ts + wait) as waiting for the last
// rank and the rest as the transfer (wait 0 when no other rank's store is
// loaded; see settle_collectives in timeline/job.h).
struct Collective {
  int64_t ts = 0, dur = 0, step = 0, seq = 0, bytes = 0, tensors = 0, loc_id = 0, utid = 0;
  std::string op;
  int64_t rank = -1;       // the rank that called it (-1: unknown)
  int64_t wait = 0;        // ns until the last rank arrived (0 for the last, or with no other rank loaded)
  int64_t last_rank = -1;  // the rank that arrived last (-1: no other rank loaded)
  int ranks_seen = 1;      // ranks loaded that took part (same seq)
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
  int depth = 0;            // for kRanges: the nesting depth; kNvtxRanges: the depth within its domain on the thread
  int domain = -1;          // NVTX tracks: index into Timeline::nvtx_domains; -1 for tc's own
  std::string name;
  std::vector<int64_t> ts, end;
  std::vector<uint32_t> ref;
  std::vector<int64_t> arg;
  // max_end[i] = max(end[0..i]); empty when end is already sorted (events of
  // one track do not overlap), which is the common case.
  std::vector<int64_t> max_end;
  // NVTX ranges: cut[i] is 1 for a range still open when its thread or
  // process ended (dur -1 in the store), drawn to its process's end (else the
  // run's). Empty when no range of the track is cut.
  std::vector<uint8_t> cut;
  size_t size() const { return ts.size(); }
  bool is_cut(size_t i) const { return i < cut.size() && cut[i]; }
};

struct Lane {
  int64_t upid = 0, utid = 0, pid = 0, tid = 0;
  int group = -1;           // index into Timeline::ranks; -1 when the timeline is not a job's
  int64_t process_end = 0;  // processes.end_ts; 0 when unknown
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

// One rank of a job (tc/analysis/timeline/job.h): its lanes are
// Timeline::lanes[first_lane, first_lane + lane_count), drawn as one group.
struct RankGroup {
  int64_t rank = -1;        // -1: the lanes of a store's processes that are no rank
  int64_t pid = 0;          // its process (0: unknown)
  std::string host, store;  // store: the path it was read from
  int64_t clock_offset_ns = 0, clock_error_ns = 0;  // added to its store's ts
  size_t first_lane = 0, lane_count = 0;
  std::string label() const { return rank < 0 ? "other processes" : "rank " + std::to_string(rank); }
};

struct Timeline {
  std::string path;
  std::vector<std::string> paths;    // the stores it was read from (one, or a job's)
  uint64_t load_id = 0;              // unique per load_timeline call in this process: tells two loads apart
  int64_t start_ts = 0, end_ts = 0;  // what the view shows when zoomed out
  // Times are shown from here: one store's run.start_ts, as tc-analyze shows
  // them (a Python program's first event comes seconds later); a job's start_ts.
  int64_t origin_ts = 0;
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
  // NVTX (empty for a store older than v3, or a run without NVTX).
  std::vector<NvtxDomain> nvtx_domains;    // the default domain first, then by name
  std::vector<NvtxSite> nvtx_sites;
  std::vector<int32_t> nvtx_site_of;       // by loc_id: index into nvtx_sites, -1 for tc's own sites
  std::vector<NvtxStartEnd> nvtx_start_ends;  // sorted by ts; kNvtxStartEnd tracks' ref indexes it
  std::vector<Collective> collectives;        // sorted by ts; kCollectives tracks' ref indexes it
  // A job's ranks (ascending), each a group of lanes; empty for one store of
  // at most one rank. Times are then on rank 0's clock.
  std::vector<RankGroup> ranks;
  std::string job;                            // the launcher's job id, "" when unknown
  int64_t world_size = 0;                     // as the stores record it (may exceed ranks.size())
  struct RealPayload {
    int64_t utid = 0, loc_id = 0, ts = 0;
    double value = 0;
  };
  std::vector<RealPayload> nvtx_real_payloads;  // sorted by (utid, loc_id, ts)
  // What the load skipped as damaged, counted: events whose time is out of
  // range (kTimeLimit), locations and NVTX sites whose id is past the bound
  // on location ids (location_id_bound).
  struct Skipped {
    int64_t events = 0, locations = 0;
  } skipped;

  const Location* location(int64_t loc_id) const {
    return loc_id >= 0 && static_cast<size_t>(loc_id) < locations.size() ? &locations[loc_id] : nullptr;
  }
  // The NVTX site of loc_id, or nullptr for one of tc's own.
  const NvtxSite* nvtx_site(int64_t loc_id) const {
    if (loc_id < 0 || static_cast<size_t>(loc_id) >= nvtx_site_of.size() || nvtx_site_of[loc_id] < 0) return nullptr;
    return &nvtx_sites[static_cast<size_t>(nvtx_site_of[loc_id])];
  }
  // The floating-point payload of the NVTX event of (utid, loc_id, ts), if it has one.
  std::optional<double> nvtx_real_payload(int64_t utid, int64_t loc_id, int64_t ts) const;
};

// A range's (or mark's) colour: its NVTX colour when the program gave one,
// else the palette's colour of its site.
palette::Rgb site_colour(const Timeline& tl, int64_t loc_id);

// The colour event i of track t is drawn in: a step's (alternating), a
// compilation's reason, an execution's, an explicit evaluation's, a kernel
// run's source line, a range's site (or its NVTX colour).
palette::Rgb event_colour(const Timeline& tl, const Track& t, uint32_t i);

// The text drawn on event i of track t when it has room: "step 3",
// "compile g2 shape_change", a range's name ("(cut)" after a cut one), ...
std::string event_label(const Timeline& tl, const Track& t, uint32_t i);

// How a kind's events are marked beyond their extent, so that a short one
// still shows: a triangle at the start (explicit evaluations, instants) or a
// diamond across the track (NVTX marks).
enum class Marker : uint8_t { kNone, kTriangle, kDiamond };
Marker track_marker(TrackKind kind);

// One line of an event's hover card: what the event is, in words.
struct CardLine {
  enum class Style : uint8_t { kText, kDisabled, kColoured };
  Style style = Style::kText;
  float rgba[4] = {1, 1, 1, 1};  // kColoured: 0..1 per channel
  std::string text;
};
// The hover card of event i of track t (of lane), each kind's own lines;
// the viewer adds the merged count above and the time below.
std::vector<CardLine> event_card(const Timeline& tl, const Lane& lane, const Track& t, uint32_t i);

// A duration as the timeline writes it: "850 ns", "12.50 us", "3.20 ms",
// "1.500 s"; "unfinished" when negative.
std::string format_duration(int64_t ns);

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
// Whether the run has a memory lane: live bytes (tc's counter, or a framework
// run's per-step peaks) or an out-of-memory point. A capacity alone is not
// one: a run tc measured no memory of has no lane, not an empty one.
bool has_memory_lane(const Timeline& tl);

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

// NVTX (schema v3), read here for the timeline, the Chrome export and
// tc-analyze ranges alike; nothing for an older store. read_nvtx_sites fills
// tl's nvtx_domains, nvtx_sites, nvtx_site_of and nvtx_real_payloads (a
// category's name: its nvtx_categories row of the site's own process, else
// of any). read_nvtx_start_ends gives every start of nvtx_range_starts, by
// (ts, id), with its end: the first nvtx_range_ends row of the same process
// (threads.upid; a thread missing from threads is a process of its own) and
// range_id at or after the start that no earlier start took. A start without
// one is cut (end = ts, end_utid = utid).
Status read_nvtx_sites(const store::Reader& reader, Timeline* tl);
// Location ids are indices (Timeline::locations, nvtx_site_of): those at or
// past this bound, twice the store's locations plus 65,536 (at most 2^24),
// are skipped, so a damaged id costs no memory.
StatusOr<int64_t> location_id_bound(const store::Reader& reader);
StatusOr<std::vector<NvtxStartEnd>> read_nvtx_start_ends(const store::Reader& reader);

// Reads everything the timeline shows. Errors are one-line Status messages.
StatusOr<Timeline> load_timeline(const store::Reader& reader, const LoadOptions& options = {});
// Reader::open then load_timeline.
StatusOr<Timeline> load_timeline(const std::string& path, const LoadOptions& options = {});

// A fresh Timeline::load_id.
uint64_t new_load_id();

// "file.py:42" style call site of a location, or "?".
std::string call_site(const Timeline& tl, int64_t loc_id);

}  // namespace tc::analysis::timeline
