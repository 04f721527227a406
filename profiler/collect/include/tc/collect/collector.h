// tc/collect/collector.h: drains recording rings into a store.
//
//   auto region = tc::trace::Region::create_shared(64, 1 << 16, &err);
//   auto writer = tc::store::Writer::create("run.tcdb");
//   tc::collect::Collector c(*region, **writer, tc::collect::gather_run_info(argv, "tc-profile"));
//   TC_RETURN_IF_ERROR(c.begin());
//   while (program runs) { c.drain(); sleep a little; }
//   TC_RETURN_IF_ERROR(c.finish(end));   // final drain, open ranges closed with dur -1, store finalized
//
// One thread calls a Collector at a time. It owns no thread itself; tc-profile
// drives it from its main loop and the in-process collector (TC_PROFILE=) from
// a collector process of its own.
//
// Guarantees:
// - Nothing in the ring memory is trusted (the program can write all of it):
//   no crash, no hang, bounded work per pass. A ring found inconsistent is
//   abandoned: what was read before stays, the rest is counted in the dropped
//   table with the reason, and the run is marked incomplete.
// - Producers wait for this collector, never drop, while it lives: begin()
//   registers this process in the region, finish() (or the destructor) says
//   it stopped.
// - Rows are committed at least twice a second while they arrive, so a
//   collector killed outright loses at most the last second.
// - A failing store (disk full, ulimit -f) does not stop draining: what was
//   committed stays, later events are counted; finish() marks the run
//   incomplete with the reason and returns one line naming the path and what
//   was kept. begin() handles SIGXFSZ in this process (the default would kill
//   it) unless the process chose a disposition already.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tc/store/schema.h"
#include "tc/trace/launcher.h"
#include "tc/store/status.h"

namespace tc::trace {
class Region;
}
namespace tc::store {
class Writer;
}
namespace tc::import {
struct Framework;
}

namespace tc::collect {

// What the store's run table says about the run.
struct RunInfo {
  std::vector<std::string> command;  // argv of the program
  std::string cwd;
  std::string host;
  std::string collector;  // "tc-profile" or "in-process"
  std::string tc_version;
  std::string cuda;       // what the CUDA probe found
  std::string step_range; // tc-profile --step-range NAME ("" when not given)
  std::string nvtx;       // NVTX capture: "tc", "user: PATH", "off" ("" without tc-profile)
  std::string cupti;      // GPU activity capture (CUDA_INJECTION64_PATH): "tc", "user: PATH", "off" ("" without tc-profile)
  std::vector<std::pair<std::string, std::string>> env;  // the TC_* variables
  uint64_t start_ts = 0;       // CLOCK_MONOTONIC ns
  uint64_t start_unix_ns = 0;  // wall clock
};

// Fills cwd, host, version, TC_* environment, start times. `command` is the
// program's argv.
RunInfo gather_run_info(std::vector<std::string> command, std::string collector);

struct RunEnd {
  std::optional<int> exit_code;    // the program called exit(code)
  std::optional<int> exit_signal;  // the program was killed by this signal
  bool complete = false;           // the program ended normally and nothing is missing
  uint64_t end_ts = 0;             // CLOCK_MONOTONIC ns when the program ended; 0: when finish() is called
};

struct CollectorStats {
  uint64_t events = 0;   // ranges + instants + counters written
  uint64_t dropped = 0;  // events lost (see the dropped table's reasons), saturating
  uint64_t threads = 0;
  uint64_t processes = 0;
  // What the compiler has reported so far (for tc-profile's status line).
  uint64_t steps = 0;
  uint64_t compilations = 0;
  uint64_t recompilations = 0;   // compilations whose reason is not 'first'
  uint64_t python_steps = 0;     // optimizer steps marked by tc's Python hook (kStepMark)
  double peak_live_bytes = 0;    // highest memory.live_bytes sample
  std::string import_cut;        // finish(): why a framework's import was cut (a signal, an exception); "" if none
};

class Collector {
 public:
  Collector(trace::Region& region, store::Writer& writer, RunInfo info);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Registers as the region's collector and writes the run row (marked
  // incomplete until finish()).
  Status begin();
  // One pass over every ring; returns the number of slots consumed. Commits
  // when the last commit is 500 ms old. A store failure is kept for finish().
  StatusOr<uint64_t> drain();
  // One pass, then a commit: every event published before the call is in the
  // store when it returns. The store's error, if it failed.
  Status flush();
  // Drains until every ring is empty (bounded: a process still recording is
  // cut off and noted), closes ranges that never ended (dur = -1), writes
  // processes, threads, dropped counts and the run row, and finalizes the
  // store. kIoError with one line if the store failed (see above).
  Status finish(const RunEnd& end);
  // Why the run is incomplete where its exit status cannot say (the
  // in-process collector could not learn it): finish() writes it to the
  // dropped table with count 0 and marks the run incomplete.
  void note_incomplete(std::string reason);
  // A framework's log directory (tc/import/frameworks.h: TORCH_TRACE, the
  // Python hook's JAX or PyTorch/XLA log) that finish() imports before it
  // finalizes the store, frameworks in the table's order; only the logs
  // written since the run started, for a directory the user chose. What an
  // import skipped is in framework_imports, never an error of finish().
  // An import cut by tc::import::request_stop() (a signal), or ended by an
  // exception (std::bad_alloc), keeps the rows it wrote, and finish() marks
  // the run incomplete with the reason in the dropped table.
  void import_logs(const import::Framework& framework, std::string dir);
  // The file where processes of the tree that could not attach to the rings
  // name themselves (TC_PROFILE_REPORT, trace/region.h). finish() reads it
  // (read_attach_failures) and writes each one as a processes row (pid, its
  // command as the name) with a dropped row of count 0 whose reason starts
  // "could not attach to the rings: ", and marks the run incomplete.
  void attach_reports(std::string path);

  CollectorStats stats() const;
  // Each process's place in its launcher's job, by processes.upid, from its
  // environment (launcher_place_of); empty when this collector's own process
  // is a rank. What split_by_rank() divides the store by.
  std::map<int64_t, trace::launcher::Place> process_places() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What the processes that could not attach said. The file is written by the
// program's processes, so nothing in it is trusted: at most
// kMaxNamedAttachFailures are named (fields cut to 512 bytes, control bytes
// blanked), the other lines and any malformed or cut one are only counted,
// and a line is held up to 1 MiB however long it is (memory stays bounded).
struct AttachFailure {
  int64_t pid = 0;
  std::string why;
  std::string command;
};
struct AttachFailures {
  std::vector<AttachFailure> named;
  uint64_t unnamed = 0;  // more processes (or malformed lines) than were named
};
inline constexpr size_t kMaxNamedAttachFailures = 64;
AttachFailures read_attach_failures(const std::string& path);

// The NVTX marks of tc's Python start-up hook (store::schema::kStepMark,
// kStepsStartMark): finish() turns each process's marks into steps rows
// (framework 'torch'): step k runs from the mark before it to its own.
using store::schema::kStepMark;
using store::schema::kStepsStartMark;

// A process's place in its launcher's job (tc/trace/launcher.h any_place)
// from its environment at exec: /proc/PID/environ, read up to 1 MiB (a
// variable past that is not seen); rank -1 when it names none or cannot be
// read (the process is gone, or not this user's). One tc-profile over a whole
// torchrun sees each rank's process this way: its ranks rows (clock offset
// 0: one host's CLOCK_MONOTONIC) make the store one of several ranks.
trace::launcher::Place launcher_place_of(uint32_t pid);
// The same from an environ block ("NAME=VALUE\0..."); tests.
trace::launcher::Place launcher_place_from(std::string_view environ);

// One tc-profile over a whole job (tc-profile -o run.tcdb -- torchrun ...):
// the finalized store `source` divided into a store per rank, each created
// at path_for(rank) (it must not exist), as each rank's own tc-profile
// would have written it (torchrun --no-python tc-profile ...): the processes
// whose place (Collector::process_places()) names that rank, its children
// that inherit its environment included, with every row of theirs. The
// processes of no rank (torchrun's agent, a launcher script) go to the
// lowest rank's store; the tables of no process (run, strings, locations,
// run_env, framework_imports) are in every store. Nothing when the places
// name no rank or a world of one. On an error the stores written so far are
// removed and `source` is untouched.
struct RankStore {
  int rank = 0;
  std::string path;
};
StatusOr<std::vector<RankStore>> split_by_rank(const std::string& source, const std::map<int64_t, trace::launcher::Place>& places,
                                               const std::function<std::string(int)>& path_for);

// The collectives of tc's Python hook (store::schema::kCollectivePrefix: an
// NVTX start/end range of the default domain around each of DDP's gradient
// all-reduces over gloo, from this rank's arrival to the completion), as
// collectives rows: per process, seq from 1 in order of arrival, step = the
// number of its steps that ended before the arrival. A process that recorded
// tc::dist collectives keeps those only. A range the program's end cut (no
// end) has no row. At most `max` ranges are kept (about 100 bytes each);
// the rest are counted.
class HookCollectives {
 public:
  static constexpr size_t kMax = size_t{1} << 20;
  explicit HookCollectives(size_t max = kMax) : max_(max) {}
  // A location definition of NVTX's default domain named `name`.
  void location(uint32_t loc, std::string_view name);
  bool any() const { return !ops_.empty(); }
  void start(int64_t upid, int64_t utid, uint32_t loc, int64_t range_id, int64_t ts);
  void end(int64_t upid, int64_t range_id, int64_t ts);
  void native(int64_t upid) { native_.insert(upid); }  // it recorded a tc::dist collective
  struct Row {
    int64_t utid = 0, ts = 0, dur = 0, step = 0, seq = 0;
    std::string op;
    uint32_t loc = 0;
  };
  // The rows, each process's in order of arrival; step_ends(upid): the ends
  // of that process's steps, ascending (nullptr: none).
  std::vector<Row> rows(const std::function<const std::vector<int64_t>*(int64_t upid)>& step_ends) const;
  uint64_t skipped() const { return skipped_; }

 private:
  struct Open {
    int64_t utid, ts;
    uint32_t loc;
  };
  struct Done {
    int64_t upid, utid, ts, dur;
    uint32_t loc;
  };
  std::unordered_map<uint32_t, std::string> ops_;  // loc -> op
  std::map<std::pair<int64_t, int64_t>, Open> open_;  // (upid, range_id)
  std::vector<Done> done_;
  std::set<int64_t> native_;
  uint64_t skipped_ = 0;
  size_t max_;
};

// Converts the recording clock to CLOCK_MONOTONIC ns. For the TSC it is a
// continuous, strictly increasing piecewise-linear map, recalibrated against
// CLOCK_MONOTONIC as the run goes (resync()), so per-thread order is kept.
// The first slope is measured over 10 ms from construction; the first
// to_ns() or ns_per_tick() before those 10 ms have passed waits for the rest.
class ClockMap {
 public:
  explicit ClockMap(bool tsc);
  uint64_t to_ns(uint64_t ticks) const;
  // Samples both clocks; adjusts the slope of the map from here on.
  void resync();
  double ns_per_tick() const;

 private:
  struct Segment {
    uint64_t t0;  // ticks
    double n0;    // ns
    double slope; // ns per tick
  };
  void calibrate() const;  // the first segment, from the construction's sample
  bool tsc_;
  uint64_t first_t_ = 0;
  double first_n_ = 0;
  mutable std::vector<Segment> segments_;  // empty until calibrate()
};

// The CUDA probe: one line on what this machine offers ("1 device: NVIDIA
// H200 (sm_90, 139.8 GiB)", "no device: no NVIDIA driver (none of ...)",
// "no device: cannot load libcuda.so.1 (...)", "no device: cudaGetDeviceCount
// error 35 (...)", or "built without CUDA"). Without a driver node
// (/proc/driver/nvidia/version, /dev/nvidiactl, /dev/dxg) it loads nothing;
// with one, it loads libcuda.so.1 once, then asks the CUDA runtime.
std::string cuda_probe();
// The same with other driver nodes and driver library (tests).
std::string cuda_probe(std::span<const char* const> driver_nodes, const char* driver_library);

}  // namespace tc::collect
