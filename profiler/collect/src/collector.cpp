#include "tc/collect/collector.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <map>
#include <new>
#include <span>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "tc/import/frameworks.h"
#include "tc/import/import.h"
#include "tc/store/json_text.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"
#include "tc/trace/launcher.h"
#include "tc/trace/records.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"

extern char** environ;

namespace tc::collect {

namespace {


uint64_t unix_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace

RunInfo gather_run_info(std::vector<std::string> command, std::string collector) {
  RunInfo info;
  info.command = std::move(command);
  std::error_code ec;
  info.cwd = std::filesystem::current_path(ec).string();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;
  info.collector = std::move(collector);
  info.tc_version = TC_VERSION_STRING;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    // TC_*, and the MPI launcher's rank, size and job (which store is which rank).
    if (!kv.starts_with("TC_") && !trace::launcher::is_variable(kv.substr(0, eq))) continue;
    if (kv.substr(0, eq) == "TC_PROFILE_KEY") continue;  // a run's secret (trace/region.h) never goes into a store
    info.env.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  std::sort(info.env.begin(), info.env.end());
  info.start_ts = trace::monotonic_ns();
  info.start_unix_ns = unix_ns();
  return info;
}

// ---------------------------------------------------------------- ClockMap

namespace {

// One (ticks, ns) pair read as close together as possible: the pair with the
// narrowest TSC window of several tries, so a preemption between the reads
// (common on a loaded machine) cannot skew it. False if every try was wide.
bool sample_pair(uint64_t& t, double& n) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    uint64_t a = trace::read_clock(trace::ClockKind::kTsc);
    uint64_t ns = trace::monotonic_ns();
    uint64_t b = trace::read_clock(trace::ClockKind::kTsc);
    if (b - a < best) {
      best = b - a;
      t = a + (b - a) / 2;
      n = static_cast<double>(ns);
    }
  }
  return best < 100'000;  // ticks: tens of microseconds at any TSC rate
}

}  // namespace

// The slope needs two samples 10 ms apart. The first is taken here, the
// second when the map is first used: tc-profile used to spin for those 10 ms
// before it started the program (every run, /bin/true's too); now they pass
// while the program starts, and a run whose first event is drained later
// waits for nothing.
ClockMap::ClockMap(bool tsc) : tsc_(tsc) {
  if (!tsc_) return;
  while (!sample_pair(first_t_, first_n_)) {
  }
}

void ClockMap::calibrate() const {
  constexpr double kSpanNs = 10e6;
  uint64_t t1 = 0;
  double n1 = 0;
  for (;;) {
    double left = first_n_ + kSpanNs - static_cast<double>(trace::monotonic_ns());
    if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(left)));
    if (sample_pair(t1, n1) && n1 - first_n_ >= kSpanNs && t1 > first_t_) break;
  }
  segments_.push_back({first_t_, first_n_, (n1 - first_n_) / static_cast<double>(t1 - first_t_)});
}

double ClockMap::ns_per_tick() const {
  if (!tsc_) return 1.0;
  if (segments_.empty()) calibrate();
  return segments_.back().slope;
}

uint64_t ClockMap::to_ns(uint64_t t) const {
  // Ticks come from shared memory: any value. The result fits a signed
  // 64-bit column (and a double past 2^64 would not even convert).
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  if (!tsc_) return t > kMax ? kMax : t;
  if (segments_.empty()) calibrate();
  // Segments are few and the newest is the usual answer: search from the back.
  size_t i = segments_.size() - 1;
  while (i > 0 && t < segments_[i].t0) --i;
  const Segment& s = segments_[i];
  double dt = t >= s.t0 ? static_cast<double>(t - s.t0) : -static_cast<double>(s.t0 - t);
  double ns = s.n0 + dt * s.slope;
  if (!(ns > 0)) return 0;
  return ns >= 9.2e18 ? kMax : static_cast<uint64_t>(ns);
}

void ClockMap::resync() {
  if (!tsc_) return;
  if (segments_.empty()) {
    // Unused so far: calibrate once the 10 ms have passed, so that no later
    // to_ns() waits; before that, leave it to the first to_ns().
    if (static_cast<double>(trace::monotonic_ns()) - first_n_ >= 10e6) calibrate();
    return;
  }
  uint64_t t = 0;
  double n = 0;
  if (!sample_pair(t, n)) return;  // try again at the next pass
  const Segment& last = segments_.back();
  if (t <= last.t0 || n - first_n_ < 1e6) return;
  uint64_t ns = static_cast<uint64_t>(n);
  // Continuity: the new segment starts where the current one is at t, so the
  // map stays increasing; its slope steers the error away over about 1 s.
  double base = (static_cast<double>(ns) - first_n_) / static_cast<double>(t - first_t_);
  double at = last.n0 + static_cast<double>(t - last.t0) * last.slope;
  double error_ns = static_cast<double>(ns) - at;
  double horizon_ticks = 1e9 / base;
  double slope = std::clamp(base + error_ns / horizon_ticks, base * 0.5, base * 1.5);
  segments_.push_back({t, at, slope});
}

// ---------------------------------------------------------------- Collector
//
// The ring memory is written by the program, which can write anything there
// (a wild pointer, a bug, a test that means to). Everything read from it is
// checked before it is used; evidence of what trusting it did, seen with a
// child writing over its TC_PROFILE_FD memory: SIGSEGV in tc-profile
// (ring_count re-read each pass indexed past the collector's vector, and a
// free() of a garbage pointer followed), an out-of-bounds memcpy (a payload
// length past its slots), bad_alloc, SIGBUS (an ftruncate of the memfd), a
// write counter far ahead that made one pass loop long enough to grow the
// store to 16.8 GB, and garbage stored with complete = 1. Now: geometry and
// clock come from the Region object (fixed at creation), the read position
// of each ring is the collector's own, a pass reads at most one ring's worth
// of slots per ring, and a ring found inconsistent is abandoned and reported.

namespace {

struct OpenRange {
  uint64_t ts;
  uint32_t loc;
  int64_t arg;
  uint32_t depth;  // ranges open on the thread when it began
};

// What the collector knows about the thread that owns a ring.
struct RingReader {
  bool known = false;
  uint64_t claims = 0;
  int64_t utid = 0;
  std::vector<OpenRange> open;
  uint64_t too_deep = 0;  // begins beyond kMaxOpen not stored; their ends are skipped
  uint64_t last_ts = 0;
};

// Per ring, kept across the threads that own it in turn.
struct RingCursor {
  uint64_t read = 0;       // slots consumed: the collector's own, never read back from shared memory
  bool abandoned = false;  // found inconsistent: never read again
};

struct ThreadRow {
  int64_t utid;
  int64_t upid;
  uint32_t tid;
  std::string name;
};

struct PendingRecord {
  uint16_t kind;
  int64_t utid;
  std::vector<int64_t> fields;
};

struct ProcessRow {
  int64_t upid;
  uint32_t pid;
  std::string name;
  uint64_t start_ts = UINT64_MAX;
  uint64_t end_ts = 0;
};

struct DroppedRow {
  int64_t utid;  // 0: no thread
  uint64_t count;
  std::string reason;
};

// Ranges open at once on one thread beyond which begins are counted, not kept
// (a runaway recursion must not grow the collector without bound).
constexpr size_t kMaxOpen = 1 << 16;
// Records waiting for a string defined in another ring; beyond this many they
// are written with that string NULL.
constexpr size_t kMaxPending = 1 << 16;
// Commit at least this often while rows arrive, so that a killed collector
// (tc-profile, or the in-process collector process, SIGKILLed) loses at most
// the last second. Before, only every 200,000 rows: a killed run kept nothing
// of its last 0-199,999 rows, however old.
constexpr uint64_t kCommitEveryNs = 500'000'000;

const char* drop_reason_text(trace::DropReason r) {
  switch (r) {
    case trace::DropReason::kNoCollector: return "ring full: no collector drained it for 500 ms";
    case trace::DropReason::kCollectorGone: return "ring full after the collector had stopped";
    case trace::DropReason::kAbandoned: return "ring abandoned by the collector";
    case trace::DropReason::kTooLarge: return "record larger than its whole ring";
  }
  return "ring full";
}

void no_op_signal(int) {}

// ulimit -f: a write past the limit raises SIGXFSZ, whose default kills the
// process (tc-profile died without a word, the store unmarked). Handled, the
// write fails with EFBIG instead and is a full store like any other. A handler
// (not SIG_IGN) so that programs started by exec get the default back.
void handle_file_size_limit() {
  struct sigaction old {};
  if (sigaction(SIGXFSZ, nullptr, &old) != 0) return;
  if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) return;  // the process chose already
  struct sigaction sa {};
  sa.sa_handler = no_op_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGXFSZ, &sa, nullptr);
}

std::string comm_of(uint32_t pid) {
  std::string comm;
  if (FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/comm").c_str(), "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f)) comm = buf;
    std::fclose(f);
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  }
  return comm;
}

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

struct Collector::Impl {
  trace::Region& region;
  store::Writer& writer;
  RunInfo info;
  const uint32_t ring_count;  // from the Region object, fixed at creation
  const uint64_t capacity;
  const uint64_t mask;
  const trace::ClockKind clock_kind;
  ClockMap clock;
  std::vector<RingReader> rings;
  std::vector<RingCursor> cursors;
  std::vector<ThreadRow> threads;
  std::vector<ProcessRow> processes;
  std::unordered_map<uint32_t, size_t> process_by_pid;
  std::unordered_map<uint32_t, std::string> strings;  // for thread names
  std::unordered_set<std::string> env_written;         // run_env rows, as name=value
  std::map<std::pair<int64_t, int64_t>, std::string> nvtx_thread_names;  // (upid, tid) -> nvtxNameOsThread
  // utid, per reason, and the part of the ring's total its per-reason counts
  // do not cover (both are producer-writable: the larger one counts).
  struct ThreadDrops {
    int64_t utid;
    std::array<uint64_t, trace::kDropReasons> by;
    uint64_t unattributed;
  };
  std::vector<ThreadDrops> dropped_by_thread;
  // At the end, the live rings' drop counts and the no-ring count are read
  // once (final_drops): run.dropped_count is then the sum of the rows of
  // `dropped`, whatever the program writes into its rings afterwards.
  bool final_drops = false;
  uint64_t final_ring_drops = 0, final_no_ring = 0;
  std::vector<DroppedRow> abandoned;  // one per abandoned ring
  uint64_t events = 0;                // event rows handed to the writer (or counted while it could not take them)
  uint64_t unmatched_ends = 0;
  uint64_t unknown_records = 0;
  uint64_t unresolved_strings = 0;
  uint64_t too_deep = 0;
  uint64_t retired_dropped = 0;
  uint64_t abandoned_total = 0;
  bool still_recording = false;  // finish() stopped draining a region that kept filling
  std::vector<std::string> notes;  // note_incomplete()
  // Records whose field count is not their declaration's: (utid, kind, fields) -> count.
  std::map<std::tuple<int64_t, uint16_t, size_t>, uint64_t> malformed;
  uint64_t malformed_total = 0;
  std::vector<PendingRecord> pending;  // records naming a string defined in a ring not drained yet
  // For the framework importers: ids above every one the rings used.
  int64_t max_graph_id = 0;
  uint32_t max_loc_id = 0;
  // tc's Python hook: the locations of its marks, and each process's marks (upid -> ts).
  std::unordered_set<uint32_t> step_mark_locs, steps_start_locs;
  bool any_step_mark = false;
  std::map<int64_t, std::vector<uint64_t>> step_marks;
  static constexpr size_t kMaxStepMarks = 1 << 22;
  HookCollectives hook_collectives;  // its all-reduce ranges
  // Each process's rank from its environment (launcher_place_of), when this collector is no rank itself (one
  // tc-profile over a whole torchrun); those that recorded a tc::dist rank of their own keep that.
  const bool collector_is_rank = trace::launcher::any_place(trace::launcher::from_environment).rank >= 0;
  std::map<int64_t, trace::launcher::Place> env_places;  // upid -> place
  std::set<int64_t> dist_ranks;                          // upids with a ranks record
  std::map<std::string, std::string> framework_logs;  // framework name -> its log directory (import_logs())
  std::string attach_report;                          // attach_reports()
  std::vector<std::pair<int64_t, std::string>> unattached;  // upid, reason: processes that could not attach
  uint64_t unattached_unnamed = 0;
  size_t graph_id_field = [] {
    const auto& fields = trace::record_decl(static_cast<uint16_t>(trace::RecordKind::kCompilation))->fields;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].name == "graph_id") return i;
    }
    return size_t{0};
  }();
  CollectorStats live;                 // steps, compilations, peak memory as they arrive
  uint32_t live_bytes_loc = 0;
  // The store failed (disk full): from then on rows are counted, not written.
  Status store_error;
  bool discarding = false;
  uint64_t store_failed_ns = 0;
  uint64_t last_commit_ns = 0;
  int64_t rows_at_last_commit = 0;
  bool registered = false;
  // Field index of the compilation record's reason.
  size_t reason_field = [] {
    const auto& fields = trace::record_decl(static_cast<uint16_t>(trace::RecordKind::kCompilation))->fields;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].name == "reason") return i;
    }
    return size_t{0};
  }();

  void count_record(uint16_t kind, const std::vector<int64_t>& f) {
    if (kind == static_cast<uint16_t>(trace::RecordKind::kStep)) ++live.steps;
    if (kind != static_cast<uint16_t>(trace::RecordKind::kCompilation)) return;
    ++live.compilations;
    if (graph_id_field < f.size()) max_graph_id = std::max(max_graph_id, f[graph_id_field]);
    if (reason_field < f.size()) {
      auto it = strings.find(static_cast<uint32_t>(f[reason_field]));
      if (it != strings.end() && it->second != "first") ++live.recompilations;
    }
  }
  uint64_t last_resync_ns = 0;
  std::vector<char> payload;

  Impl(trace::Region& r, store::Writer& w, RunInfo i)
      : region(r),
        writer(w),
        info(std::move(i)),
        ring_count(r.ring_count()),
        capacity(r.capacity()),
        mask(r.capacity() - 1),
        clock_kind(r.clock()),
        clock(r.clock() == trace::ClockKind::kTsc) {
    rings.resize(ring_count);
    cursors.resize(ring_count);
    // Trusted once: the region was just made (or attached) and the program
    // has not run yet, or (tests) has recorded into it in good faith.
    for (uint32_t k = 0; k < ring_count; ++k) {
      uint64_t read = r.ring(k).read.load(std::memory_order_acquire);
      uint64_t write = r.ring(k).write.load(std::memory_order_acquire);
      cursors[k].read = write >= read && write - read <= capacity ? read : write;
    }
  }

  ~Impl() {
    // Whatever happened, no producer may wait for a collector that is gone.
    if (registered) region.header().collector_state.store(static_cast<uint32_t>(trace::CollectorState::kStopped), std::memory_order_release);
  }

  // ---- writing, with the store's failure handled once

  bool writing() const { return !discarding; }

  void keep(const Status& s) {
    if (s.ok() || discarding) return;
    discarding = true;
    store_error = s;
    if (store_failed_ns == 0) store_failed_ns = trace::monotonic_ns();
  }
  bool store_failed() const { return store_failed_ns != 0; }

  ProcessRow& process_for(uint32_t pid) {
    auto it = process_by_pid.find(pid);
    if (it != process_by_pid.end()) return processes[it->second];
    processes.push_back({static_cast<int64_t>(processes.size() + 1), pid, comm_of(pid)});
    process_by_pid[pid] = processes.size() - 1;
    ProcessRow& p = processes.back();
    if (!collector_is_rank && !started_before_run(pid)) {
      if (trace::launcher::Place place = launcher_place_of(pid); place.rank >= 0) env_places[p.upid] = place;
    }
    // Written now (and again, complete, at the end) so that a store whose
    // collector was killed still names its processes and threads.
    if (writing()) keep(process_row(p).insert());
    return p;
  }

  store::Writer::Row process_row(const ProcessRow& p) {
    auto row = writer.row(store::schema::processes);
    row.i64(p.upid).i64(p.pid);
    std::string comm = p.name;
    if (comm.empty() && !info.command.empty()) comm = std::filesystem::path(info.command[0]).filename().string();
    row.text(comm);
    if (p.start_ts == UINT64_MAX) row.null().null(); else row.i64(trace::count_column(p.start_ts)).i64(trace::count_column(p.end_ts));
    return row;
  }

  store::Writer::Row thread_row(const ThreadRow& t) {
    auto row = writer.row(store::schema::threads);
    row.i64(t.utid).i64(t.upid).i64(t.tid);
    if (t.name.empty()) row.null(); else row.text(t.name);
    return row;
  }

  Status write_run(const RunEnd* end, uint64_t event_count) {
    auto row = writer.row(store::schema::run);
    row.i64(1).text(info.tc_version).text(store::json_string_array(info.command)).text(info.cwd).text(info.host).text(info.collector);
    row.text(clock_kind == trace::ClockKind::kTsc ? "tsc" : "monotonic");
    row.i64(trace::count_column(info.start_ts));
    if (end) row.i64(trace::count_column(end->end_ts ? end->end_ts : trace::monotonic_ns())); else row.null();
    row.i64(trace::count_column(info.start_unix_ns));
    if (end && end->exit_code) row.i64(*end->exit_code); else row.null();
    if (end && end->exit_signal) row.i64(*end->exit_signal); else row.null();
    row.i64(end && end->complete ? 1 : 0);
    row.i64(trace::count_column(event_count));
    row.i64(trace::count_column(total_dropped()));
    row.text(info.cuda);
    if (info.step_range.empty()) row.null(); else row.text(info.step_range);
    if (info.nvtx.empty()) row.null(); else row.text(info.nvtx);
    if (info.cupti.empty()) row.null(); else row.text(info.cupti);
    return row.insert();
  }

  // Event rows durable in the store.
  uint64_t events_kept() const {
    return static_cast<uint64_t>(writer.rows_committed(store::schema::ranges) + writer.rows_committed(store::schema::instants) +
                                 writer.rows_committed(store::schema::counters));
  }
  uint64_t events_lost_to_store() const {
    if (!store_failed()) return 0;
    uint64_t kept = events_kept();
    return events > kept ? events - kept : 0;
  }

  // Everything lost, saturating: the ring counters live in shared memory.
  uint64_t total_dropped() const {
    using trace::sat_add;
    uint64_t n = 0;
    if (final_drops) {
      n = sat_add(final_no_ring, final_ring_drops);
    } else {
      n = region.header().dropped_no_ring.load(std::memory_order_relaxed);
      for (uint32_t i = 0; i < ring_count; ++i) {
        if (!cursors[i].abandoned && rings[i].known) n = sat_add(n, region.ring(i).dropped.load(std::memory_order_relaxed));
      }
    }
    for (uint64_t v : {retired_dropped, malformed_total, abandoned_total, too_deep, unmatched_ends, unresolved_strings,
                       unknown_records, events_lost_to_store()})
      n = sat_add(n, v);
    return n;
  }

  // Copies a record's payload out of the ring (it may wrap around); the
  // copy, not the shared slots, is what gets parsed.
  const char* read_payload(const trace::Slot* slots, uint64_t first, uint32_t count) {
    payload.resize(static_cast<size_t>(count) * sizeof(trace::Slot) + 1);
    for (uint32_t i = 0; i < count; ++i) std::memcpy(payload.data() + i * sizeof(trace::Slot), &slots[(first + i) & mask], sizeof(trace::Slot));
    payload.back() = '\0';
    return payload.data();
  }

  void new_thread(RingReader& rr, trace::RingHeader& h) {
    uint32_t pid = h.pid, tid = h.tid;
    uint64_t claims = h.claims.load(std::memory_order_relaxed);
    ProcessRow& p = process_for(pid);
    rr = RingReader{};
    rr.known = true;
    rr.claims = claims;
    // One OS thread may record into two rings at once: tc's own and the copy
    // of the recording layer inside libtc_nvtx. It is one thread of the store.
    for (const RingReader& other : rings) {
      if (&other == &rr || !other.known) continue;
      const ThreadRow& t = threads[static_cast<size_t>(other.utid - 1)];
      if (t.upid == p.upid && t.tid == tid) {
        rr.utid = other.utid;
        return;
      }
    }
    rr.utid = static_cast<int64_t>(threads.size() + 1);
    threads.push_back({rr.utid, p.upid, tid, {}});
    if (writing()) keep(thread_row(threads.back()).insert());
  }

  void close_open_ranges(RingReader& rr) {
    // The thread ended (or its process died) inside these ranges: dur = -1.
    for (size_t d = 0; d < rr.open.size(); ++d) {
      const OpenRange& o = rr.open[d];
      if (writing()) {
        keep(writer.row(store::schema::ranges)
                 .null()
                 .i64(rr.utid)
                 .i64(trace::count_column(o.ts))
                 .i64(-1)
                 .i64(static_cast<int64_t>(o.depth))
                 .i64(o.loc)
                 .i64(o.arg)
                 .insert());
      }
      ++events;
    }
    rr.open.clear();
    rr.too_deep = 0;
  }

  void take_ring_drops(RingReader& rr, trace::RingHeader& h, bool reset) {
    std::array<uint64_t, trace::kDropReasons> by{};
    uint64_t any = 0;
    for (uint32_t k = 0; k < trace::kDropReasons; ++k) {
      by[k] = reset ? h.dropped_by[k].exchange(0, std::memory_order_relaxed) : h.dropped_by[k].load(std::memory_order_relaxed);
      any = trace::sat_add(any, by[k]);
    }
    uint64_t total = reset ? h.dropped.exchange(0, std::memory_order_relaxed) : h.dropped.load(std::memory_order_relaxed);
    uint64_t counted = std::max(total, any);  // what the rows below add up to
    if (reset) retired_dropped = trace::sat_add(retired_dropped, counted);
    else final_ring_drops = trace::sat_add(final_ring_drops, counted);
    if (counted) dropped_by_thread.push_back({rr.utid, by, total > any ? total - any : 0});
  }

  void abandon(uint32_t r, const std::string& why, uint64_t unread) {
    RingCursor& c = cursors[r];
    if (c.abandoned) return;
    c.abandoned = true;
    trace::RingHeader& h = region.ring(r);
    // Its producer, if it still runs, drops instead of waiting for us.
    h.state.store(static_cast<uint32_t>(trace::RingState::kAbandoned), std::memory_order_release);
    RingReader& rr = rings[r];
    int64_t utid = rr.known ? rr.utid : 0;
    if (rr.known) close_open_ranges(rr);  // what was read before stays, with its open ranges closed
    rr.known = false;
    uint64_t count = std::max<uint64_t>(1, std::min(unread, capacity));
    abandoned_total = trace::sat_add(abandoned_total, count);
    abandoned.push_back({utid, count,
                         "ring " + std::to_string(r) + " abandoned: " + why +
                             "; the events read before were kept, the rest of the ring (at least this many slots) is lost"});
  }

  // One slot of a thread's ring, checked and copied (`p`: its payload of
  // `bytes`), at store time `ts`. Returns "" or why the ring is bad.
  std::string take_slot(RingReader& rr, ProcessRow& proc, const trace::Slot& s, uint64_t ts, const char* p, uint64_t bytes, uint64_t i) {
    const auto kind = static_cast<trace::SlotKind>(s.kind);
    switch (kind) {
      case trace::SlotKind::kBegin:
        if (rr.open.size() >= kMaxOpen) {
          ++rr.too_deep;
          too_deep = trace::sat_add(too_deep, 1);
        } else {
          rr.open.push_back({ts, s.loc, s.arg, static_cast<uint32_t>(rr.open.size())});
        }
        break;
      case trace::SlotKind::kEnd: {
        if (rr.too_deep > 0) {
          --rr.too_deep;  // the end of a begin that was not kept
          break;
        }
        if (rr.open.empty()) {
          ++unmatched_ends;
          break;
        }
        // The innermost open range of the end's site: the top one for
        // tc's ranges; NVTX domains keep stacks of their own, so one
        // domain's pop may end a range below another domain's.
        size_t at = rr.open.size() - 1;
        while (at > 0 && rr.open[at].loc != s.loc) --at;
        if (rr.open[at].loc != s.loc) at = rr.open.size() - 1;
        OpenRange o = rr.open[at];
        rr.open.erase(rr.open.begin() + static_cast<std::ptrdiff_t>(at));
        if (writing()) {
          keep(writer.row(store::schema::ranges)
                   .null()
                   .i64(rr.utid)
                   .i64(trace::count_column(o.ts))
                   .i64(static_cast<int64_t>(ts - o.ts))
                   .i64(static_cast<int64_t>(o.depth))
                   .i64(o.loc)
                   .i64(o.arg)
                   .insert());
        }
        ++events;
        break;
      }
      case trace::SlotKind::kInstant:
        if (any_step_mark && (step_mark_locs.contains(s.loc) || steps_start_locs.contains(s.loc))) {
          auto& marks = step_marks[proc.upid];
          if (marks.size() < kMaxStepMarks) {
            // A start mark is stored as ts | 1 << 63 to tell it from a step's end.
            marks.push_back(step_mark_locs.contains(s.loc) ? ts : ts | (uint64_t{1} << 63));
            if (step_mark_locs.contains(s.loc)) ++live.python_steps;
          }
        }
        if (writing()) keep(writer.row(store::schema::instants).null().i64(rr.utid).i64(trace::count_column(ts)).i64(s.loc).i64(s.arg).insert());
        ++events;
        break;
      case trace::SlotKind::kCounter: {
        double v;
        std::memcpy(&v, &s.value, sizeof v);
        if (writing()) keep(writer.row(store::schema::counters).null().i64(rr.utid).i64(trace::count_column(ts)).i64(s.loc).f64(v).insert());
        ++events;
        if (s.loc == live_bytes_loc && v > live.peak_live_bytes) live.peak_live_bytes = v;
        break;
      }
      case trace::SlotKind::kLocationDef: {
        // "name\0file\0function\0", each field ended inside the payload.
        std::string_view field[3];
        uint64_t at = 0;
        for (auto& f : field) {
          const void* nul = at < bytes ? std::memchr(p + at, '\0', bytes - at) : nullptr;
          if (nul == nullptr) return "a location definition at position " + std::to_string(i) + " lacks its three NUL-ended strings";
          f = std::string_view(p + at, static_cast<size_t>(static_cast<const char*>(nul) - (p + at)));
          at += f.size() + 1;
        }
        if (writing()) keep(writer.row(store::schema::locations).i64(s.loc).text(field[0]).text(field[1]).text(field[2]).i64(s.value).insert());
        if (field[0] == "memory.live_bytes") live_bytes_loc = s.loc;
        max_loc_id = std::max(max_loc_id, s.loc);
        // The hook's marks: NVTX's default domain (function ''), file 'nvtx'.
        if (field[1] == "nvtx" && field[2].empty()) {
          if (field[0] == kStepMark) step_mark_locs.insert(s.loc);
          if (field[0] == kStepsStartMark) steps_start_locs.insert(s.loc);
          hook_collectives.location(s.loc, field[0]);
          any_step_mark = !step_mark_locs.empty() || !steps_start_locs.empty();
        }
        break;
      }
      case trace::SlotKind::kStringDef: {
        std::string_view text(p, static_cast<size_t>(bytes));
        strings[s.loc] = std::string(text);
        if (writing()) keep(writer.row(store::schema::strings).i64(s.loc).text(text).insert());
        break;
      }
      case trace::SlotKind::kRecord: {
        if (bytes % sizeof(int64_t) != 0) return "a record of " + std::to_string(bytes) + " bytes is not whole 64-bit fields";
        size_t n = static_cast<size_t>(bytes / sizeof(int64_t));
        const trace::RecordDecl* decl = trace::record_decl(static_cast<uint16_t>(s.loc));
        if (decl == nullptr || s.loc > 0xffff) {
          ++unknown_records;
          break;
        }
        if (n != decl->fields.size()) {
          // Stored padded or cut, every later column would hold the wrong field.
          ++malformed[{rr.utid, static_cast<uint16_t>(s.loc), n}];
          malformed_total = trace::sat_add(malformed_total, 1);
          break;
        }
        std::vector<int64_t> fields(n);
        std::memcpy(fields.data(), p, n * sizeof(int64_t));
        count_record(static_cast<uint16_t>(s.loc), fields);
        take_hook_collective(static_cast<uint16_t>(s.loc), proc.upid, rr.utid, fields);
        bool force = pending.size() >= kMaxPending;
        if (!write_record(static_cast<uint16_t>(s.loc), rr.utid, fields.data(), n, force)) {
          pending.push_back({static_cast<uint16_t>(s.loc), rr.utid, std::move(fields)});
        }
        break;
      }
      case trace::SlotKind::kThreadName: {
        auto it = strings.find(s.loc);
        if (it != strings.end()) threads[static_cast<size_t>(rr.utid - 1)].name = it->second;
        break;
      }
      default:
        break;  // not reached: checked above
    }
    return {};
  }

  // Reads the published slots [from, to) of ring r. Returns "" when they
  // were all well-formed, else why not; `done` is the slots consumed.
  std::string consume(uint32_t r, RingReader& rr, uint64_t from, uint64_t to, uint64_t& done) {
    const trace::Slot* slots = region.slots(r);
    ProcessRow& proc = processes[static_cast<size_t>(threads[static_cast<size_t>(rr.utid - 1)].upid - 1)];
    for (uint64_t i = from; i < to; done = i - from) {
      trace::Slot s;
      std::memcpy(&s, &slots[i & mask], sizeof s);  // once: the shared slot may change while it is parsed
      const uint64_t after = to - i - 1;            // published slots after this one
      const auto kind = static_cast<trace::SlotKind>(s.kind);
      const bool has_payload = kind == trace::SlotKind::kLocationDef || kind == trace::SlotKind::kStringDef || kind == trace::SlotKind::kRecord;
      if (s.kind < static_cast<uint16_t>(trace::SlotKind::kBegin) || s.kind > static_cast<uint16_t>(trace::SlotKind::kRecord)) {
        return "slot kind " + std::to_string(s.kind) + " at position " + std::to_string(i) + " is not one tc writes there";
      }
      if (!has_payload && s.extra != 0) return "a one-slot event at position " + std::to_string(i) + " claims " + std::to_string(s.extra) + " payload slots";
      uint64_t bytes = 0;
      const char* p = nullptr;
      if (has_payload) {
        if (s.extra > after) {
          return "a record's " + std::to_string(s.extra) + " payload slots run past the " + std::to_string(after) + " published after it";
        }
        if (s.arg < 0 || (static_cast<uint64_t>(s.arg) + sizeof(trace::Slot) - 1) / sizeof(trace::Slot) != s.extra) {
          return "payload length " + std::to_string(s.arg) + " does not match its " + std::to_string(s.extra) + " slots";
        }
        bytes = static_cast<uint64_t>(s.arg);
        p = read_payload(slots, i + 1, s.extra);
      }
      uint64_t ts = clock.to_ns(s.ts);
      if (ts < rr.last_ts) ts = rr.last_ts;  // never reorder a thread's own events
      if (std::string bad = take_slot(rr, proc, s, ts, p, bytes, i); !bad.empty()) return bad;
      if (!has_payload) {
        rr.last_ts = ts;
        proc.start_ts = std::min<uint64_t>(proc.start_ts, ts);
        proc.end_ts = std::max<uint64_t>(proc.end_ts, ts);
      }
      i += 1 + s.extra;
      done = i - from;
    }
    return {};
  }

  // Writes a record's row, or returns false when it names a string whose
  // definition has not been read yet (it sits in another thread's ring).
  bool write_record(uint16_t kind, int64_t utid, const int64_t* f, size_t n, bool force) {
    const trace::RecordDecl* decl = trace::record_decl(kind);
    const store::TableDecl* table = store::schema::record_table(kind);
    if (decl == nullptr || table == nullptr || n != decl->fields.size()) {
      ++unknown_records;  // consume() checked both; a pending record cannot change kind
      return true;
    }
    const std::span<const trace::FieldDecl> fields = decl->fields;
    if (!force) {
      for (size_t i = 0; i < n; ++i) {
        if (fields[i].type == trace::FieldType::kText && f[i] != 0 && !strings.contains(static_cast<uint32_t>(f[i]))) return false;
      }
    }
    if (decl->kind == trace::RecordKind::kRunEnv) {
      // A setting a process chose: once per distinct name and value.
      auto name = strings.find(static_cast<uint32_t>(f[0])), value = strings.find(static_cast<uint32_t>(f[1]));
      if (name == strings.end() || value == strings.end() || !env_written.insert(name->second + "=" + value->second).second) return true;
    }
    if (decl->kind == trace::RecordKind::kNvtxThreadName) {
      // nvtxNameOsThread(tid, name): applied to that thread of this process when the run ends.
      auto name = strings.find(static_cast<uint32_t>(f[1]));
      if (name != strings.end() && utid >= 1 && static_cast<size_t>(utid) <= threads.size()) {
        nvtx_thread_names[{threads[static_cast<size_t>(utid - 1)].upid, f[0]}] = name->second;
      }
    }
    if (!writing()) return true;
    auto row = writer.row(*table);
    row.null();
    if (decl->utid_doc.size()) row.i64(utid);
    uint64_t ts_ticks = 0;
    for (size_t i = 0; i < n; ++i) {
      int64_t v = f[i];
      switch (fields[i].type) {
        case trace::FieldType::kInt:
        case trace::FieldType::kLoc: row.i64(v); break;
        case trace::FieldType::kIntOrNull:
          if (v == 0) row.null(); else row.i64(v);
          break;
        case trace::FieldType::kTs:
          ts_ticks = static_cast<uint64_t>(v);
          row.i64(static_cast<int64_t>(clock.to_ns(ts_ticks)));
          break;
        case trace::FieldType::kDur:
          row.i64(static_cast<int64_t>(clock.to_ns(ts_ticks + static_cast<uint64_t>(v))) - static_cast<int64_t>(clock.to_ns(ts_ticks)));
          break;
        case trace::FieldType::kReal: row.f64(std::bit_cast<double>(v)); break;
        case trace::FieldType::kText: {
          auto it = v == 0 ? strings.end() : strings.find(static_cast<uint32_t>(v));
          if (it == strings.end()) {
            if (v != 0) ++unresolved_strings;
            row.null();
          } else {
            row.text(it->second);
          }
          break;
        }
      }
    }
    keep(row.insert());
    return true;
  }

  void retry_pending(bool force) {
    size_t kept = 0;
    for (PendingRecord& p : pending) {
      if (!write_record(p.kind, p.utid, p.fields.data(), p.fields.size(), force)) pending[kept++] = std::move(p);
    }
    pending.resize(kept);
  }

  void commit_now(uint64_t now) {
    last_commit_ns = now;
    if (!writing() || writer.rows_written() == rows_at_last_commit) return;
    // The run row with the counts so far: a store whose collector is killed
    // says how much it holds.
    keep(write_run(nullptr, events));
    keep(writer.commit());
    rows_at_last_commit = writer.rows_written();
  }

  uint64_t drain_once() {
    uint64_t now = trace::monotonic_ns();
    if (now - last_resync_ns > 100'000'000) {
      clock.resync();
      last_resync_ns = now;
    }
    trace::RegionHeader& header = region.header();
    header.collector_heartbeat.fetch_add(1, std::memory_order_relaxed);
    uint64_t consumed = 0;
    for (uint32_t r = 0; r < ring_count; ++r) {
      RingCursor& cur = cursors[r];
      if (cur.abandoned) continue;
      trace::RingHeader& h = region.ring(r);
      const uint32_t state_raw = h.state.load(std::memory_order_acquire);
      const auto state = static_cast<trace::RingState>(state_raw);
      if (state == trace::RingState::kFree || state == trace::RingState::kClaiming) continue;
      if (state != trace::RingState::kActive && state != trace::RingState::kRetired) {
        abandon(r, "its state reads " + std::to_string(state_raw) + ", not one the collector left it in", capacity);
        continue;
      }
      RingReader& rr = rings[r];
      if (!rr.known || rr.claims != h.claims.load(std::memory_order_relaxed)) {
        if (rr.known) close_open_ranges(rr);
        new_thread(rr, h);
      }
      const uint64_t from = cur.read;
      const uint64_t to = h.write.load(std::memory_order_acquire);
      if (to < from) {
        abandon(r, "its write counter went backwards (from " + std::to_string(from) + " to " + std::to_string(to) + ")", 1);
        continue;
      }
      if (to - from > capacity) {
        abandon(r, "its write counter is " + std::to_string(to - from) + " slots past the read position, beyond the ring's " +
                       std::to_string(capacity),
                capacity);
        continue;
      }
      if (to != from) {
        uint64_t done = 0;
        std::string bad = consume(r, rr, from, to, done);
        consumed += done;
        cur.read = from + done;
        if (!bad.empty()) {
          abandon(r, bad, to - from - done);
          continue;
        }
        h.read.store(to, std::memory_order_release);
      }
      if (state == trace::RingState::kRetired && h.write.load(std::memory_order_acquire) == to) {
        close_open_ranges(rr);
        take_ring_drops(rr, h, /*reset=*/true);
        rr.known = false;
        h.state.store(static_cast<uint32_t>(trace::RingState::kFree), std::memory_order_release);
        header.rings_freed.fetch_add(1, std::memory_order_release);
      }
    }
    if (!pending.empty()) retry_pending(false);
    if (now - last_commit_ns >= kCommitEveryNs) commit_now(now);
    return consumed;
  }

  // ---- the end

  // The processes that said they could not attach: named as processes
  // without threads, each with a dropped row that says why.
  void take_attach_failures() {
    AttachFailures f = read_attach_failures(attach_report);
    for (AttachFailure& a : f.named) {
      processes.push_back({static_cast<int64_t>(processes.size() + 1), static_cast<uint32_t>(std::min<int64_t>(a.pid, UINT32_MAX)), a.command});
      unattached.emplace_back(processes.back().upid, "could not attach to the rings: " + a.why);
    }
    unattached_unnamed = f.unnamed;
  }

  void write_dropped(int64_t utid, uint64_t count, const std::string& reason) {
    auto row = writer.row(store::schema::dropped);
    row.null();
    if (utid > 0) row.i64(threads[static_cast<size_t>(utid - 1)].upid).i64(utid); else row.null().null();
    keep(row.i64(trace::count_column(count)).text(reason).insert());
  }

  bool file_size_limited() const {
    rlimit limit{};
    return ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  }

  std::string store_loss_reason() const {
    double at = store_failed_ns > info.start_ts ? static_cast<double>(store_failed_ns - info.start_ts) / 1e9 : 0;
    char when[32];
    std::snprintf(when, sizeof when, "%.1f", at);
    return std::string(file_size_limited() ? "disk full (file size limit, ulimit -f)" : "disk full") + ": the store filled up " + when +
           " s into the run; events after that were not stored";
  }

  // Rows that end the run: processes, threads, dropped, run.
  // Names that nvtxNameOsThread gave, for threads that did not name themselves.
  void apply_nvtx_thread_names() {
    for (ThreadRow& t : threads) {
      auto it = nvtx_thread_names.find({t.upid, static_cast<int64_t>(t.tid)});
      if (it != nvtx_thread_names.end() && t.name.empty()) t.name = it->second;
    }
  }

  // Steps of tc's Python hook, per process: step k from the mark before it to its own.
  std::map<uint32_t, std::vector<int64_t>> step_ends;  // pid -> ends, for the importers
  void write_python_steps() {
    for (auto& [upid, marks] : step_marks) {
      std::sort(marks.begin(), marks.end(), [](uint64_t a, uint64_t b) { return (a & ~(uint64_t{1} << 63)) < (b & ~(uint64_t{1} << 63)); });
      const uint32_t pid = processes[static_cast<size_t>(upid - 1)].pid;
      const int64_t utid = utid_of_process(pid);
      uint64_t from = UINT64_MAX;
      int64_t step = 0;
      for (uint64_t m : marks) {
        const bool start = (m >> 63) != 0;
        const uint64_t ts = m & ~(uint64_t{1} << 63);
        if (!start && from != UINT64_MAX) {
          keep(writer.row(store::schema::steps).null().i64(utid).i64(trace::count_column(from)).i64(static_cast<int64_t>(ts - from)).i64(step++)
                   .i64(0).text("torch").insert());
          step_ends[pid].push_back(trace::count_column(ts));
        }
        from = ts;
      }
    }
  }

  void take_hook_collective(uint16_t kind, int64_t upid, int64_t utid, const std::vector<int64_t>& f) {
    using trace::RecordKind;
    if (kind == static_cast<uint16_t>(RecordKind::kCollective)) hook_collectives.native(upid);
    if (kind == static_cast<uint16_t>(RecordKind::kRank)) dist_ranks.insert(upid);
    if (!hook_collectives.any()) return;
    const auto ns = [&](int64_t ticks) { return trace::count_column(clock.to_ns(static_cast<uint64_t>(ticks))); };
    if (kind == static_cast<uint16_t>(RecordKind::kNvtxRangeStart) && f.size() == 4 && f[2] >= 0 && f[2] <= UINT32_MAX)
      hook_collectives.start(upid, utid, static_cast<uint32_t>(f[2]), f[1], ns(f[0]));
    if (kind == static_cast<uint16_t>(RecordKind::kNvtxRangeEnd) && f.size() == 2) hook_collectives.end(upid, f[1], ns(f[0]));
  }

  // A ranks row per process whose environment named its rank (clock offset 0: one host's clock).
  // One row per rank: a rank's child processes (a compile worker inherits RANK) are its, not more ranks.
  void write_env_ranks() {
    std::set<std::pair<std::string, int64_t>> written;  // job, rank
    for (const auto& [upid, place] : env_places) {
      if (dist_ranks.contains(upid) || !written.insert({place.job, place.rank}).second) continue;
      auto row = writer.row(store::schema::ranks);
      row.null().i64(utid_of_process(processes[static_cast<size_t>(upid - 1)].pid)).i64(place.rank).i64(place.size).text(info.host);
      if (place.job.empty()) row.null(); else row.text(place.job);
      keep(row.i64(0).i64(0).insert());
    }
  }

  // The hook's collectives, once the steps are known (write_python_steps).
  void write_hook_collectives() {
    const auto ends = [this](int64_t upid) -> const std::vector<int64_t>* {
      auto it = step_ends.find(processes[static_cast<size_t>(upid - 1)].pid);
      return it == step_ends.end() ? nullptr : &it->second;
    };
    for (const HookCollectives::Row& c : hook_collectives.rows(ends)) {
      keep(writer.row(store::schema::collectives).null().i64(c.utid).i64(c.ts).i64(c.dur).i64(c.step).i64(c.seq).text(c.op).null().null()
               .i64(c.loc).insert());
    }
    if (hook_collectives.skipped() > 0)
      notes.push_back(with_commas(hook_collectives.skipped()) + " collectives of tc's Python hook past the first " +
                      with_commas(HookCollectives::kMax) + " were not stored (their NVTX ranges were)");
  }

  // The thread a process's imported rows belong to: its first thread, else a new one (tid = pid).
  int64_t utid_of_process(uint32_t pid) {
    ProcessRow& p = process_for(pid);
    for (const ThreadRow& t : threads) {
      if (t.upid == p.upid) return t.utid;
    }
    threads.push_back({static_cast<int64_t>(threads.size() + 1), p.upid, pid, {}});
    if (writing()) keep(thread_row(threads.back()).insert());
    return threads.back().utid;
  }

  // Whether `pid` is a live process that started before the run (pid 1, a
  // daemon): none of the run's. A pid no longer alive cannot be told.
  bool started_before_run(uint32_t pid) const {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (f == nullptr) return false;
    char buf[1024] = {};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    const char* close = std::strrchr(buf, ')');  // after "pid (comm)", field 22 is the start, in ticks since boot
    unsigned long long start_ticks = 0;
    if (n == 0 || close == nullptr ||
        std::sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &start_ticks) != 1)
      return false;
    timespec boot{}, mono{};
    ::clock_gettime(CLOCK_BOOTTIME, &boot);
    ::clock_gettime(CLOCK_MONOTONIC, &mono);
    const double boot_minus_mono = static_cast<double>(boot.tv_sec - mono.tv_sec) * 1e9 + static_cast<double>(boot.tv_nsec - mono.tv_nsec);
    const double started = static_cast<double>(start_ticks) * 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK));
    return started + 20e6 < static_cast<double>(info.start_ts) + boot_minus_mono;  // ticks are 10 ms
  }

  // Each framework's logs, in the table's order: ids above the rows' and the imports' before it.
  // `end_ts`: when the program ended (0: now).
  void import_frameworks(uint64_t end_ts) {
    import::ImportTarget t;
    t.writer = &writer;
    t.start_ts = info.start_ts;
    t.start_unix_ns = info.start_unix_ns;
    t.end_ts = end_ts ? end_ts : trace::monotonic_ns();  // the program has exited: nothing it logged is later
    t.pid_in_run = [this](uint32_t pid) { return process_by_pid.contains(pid) || !started_before_run(pid); };
    t.min_mtime_unix_ns = info.start_unix_ns;
    t.first_graph_id = max_graph_id + 1;
    t.first_location_id = max_loc_id + 1;
    t.utid_for = [this](uint32_t pid) { return utid_of_process(pid); };
    t.step_ends = step_ends;
    for (const import::Framework& f : import::frameworks()) {
      auto dir = framework_logs.find(f.name);
      if (dir == framework_logs.end()) continue;
      auto s = f.importer(dir->second, t, {});
      if (!s.ok()) {
        keep(s.status());
        return;
      }
      live.compilations += static_cast<uint64_t>(s->compilations);
      live.python_steps += static_cast<uint64_t>(s->steps);
      t.first_graph_id = std::max(t.first_graph_id, s->last_graph_id + 1);
      t.first_location_id = std::max(t.first_location_id, s->last_location_id + 1);
    }
  }

  // The imports, where neither a signal nor an exception loses the run: what
  // they wrote stays, and the run is marked incomplete with the reason.
  void import_frameworks_kept(uint64_t end_ts) {
    const size_t before = notes.size();
    try {
      import_frameworks(end_ts);
    } catch (const std::bad_alloc&) {
      notes.push_back("out of memory while importing the frameworks' logs: the import was cut, what it wrote before is kept");
    } catch (const std::exception& e) {
      notes.push_back(std::string("the import of the frameworks' logs failed (") + e.what() + "): what it wrote before is kept");
    }
    if (import::stop_requested()) {
      notes.push_back("tc-profile was signalled while it imported the frameworks' logs: the import stopped there, what it read before is kept");
    }
    if (notes.size() > before) live.import_cut = notes[before];
  }

  void write_end_rows(const RunEnd& end) {
    apply_nvtx_thread_names();
    for (const ProcessRow& p : processes) keep(process_row(p).insert());
    for (const ThreadRow& t : threads) keep(thread_row(t).insert());
    for (const ThreadDrops& d : dropped_by_thread) {
      for (uint32_t k = 0; k < trace::kDropReasons; ++k) {
        if (d.by[k]) write_dropped(d.utid, d.by[k], drop_reason_text(static_cast<trace::DropReason>(k)));
      }
      if (d.unattributed) write_dropped(d.utid, d.unattributed, "events the ring counted as dropped without a reason");
    }
    for (const DroppedRow& a : abandoned) write_dropped(a.utid, a.count, a.reason);
    if (uint64_t n = final_drops ? final_no_ring : region.header().dropped_no_ring.load(); n)
      write_dropped(0, n, "no free ring: more threads than rings");
    if (unmatched_ends) write_dropped(0, unmatched_ends, "range end without a begin");
    if (too_deep) write_dropped(0, too_deep, "ranges nested deeper than " + std::to_string(kMaxOpen) + " on one thread (not stored)");
    for (const auto& [upid, why] : unattached) keep(writer.row(store::schema::dropped).null().i64(upid).null().i64(0).text(why).insert());
    if (unattached_unnamed)
      write_dropped(0, 0, "could not attach to the rings: " + std::to_string(unattached_unnamed) +
                              " more processes (or unreadable reports), not named");
    if (unresolved_strings) write_dropped(0, unresolved_strings, "string named by a record but never defined (stored as NULL)");
    for (const auto& [key, count] : malformed) {
      const auto& [utid, kind, fields] = key;
      const trace::RecordDecl* decl = trace::record_decl(kind);
      write_dropped(utid, count,
                    "record of kind " + std::string(decl->table) + " with " + std::to_string(fields) + " fields, expected " +
                        std::to_string(decl->fields.size()));
    }
    if (unknown_records) write_dropped(0, unknown_records, "record of a kind this tc does not know");
    if (still_recording) write_dropped(0, 0, "still recording when the run ended: a process of the run kept filling the rings; its later events were not collected");
    if (uint64_t lost = events_lost_to_store()) write_dropped(0, lost, store_loss_reason());
    for (const std::string& why : notes) write_dropped(0, 0, why);
    keep(write_run(&end, store_failed() ? events_kept() : events));
  }
};

Collector::Collector(trace::Region& region, store::Writer& writer, RunInfo info)
    : impl_(std::make_unique<Impl>(region, writer, std::move(info))) {}

Collector::~Collector() = default;

Status Collector::begin() {
  Impl& m = *impl_;
  handle_file_size_limit();
  trace::RegionHeader& h = m.region.header();
  h.collector_pid.store(static_cast<uint32_t>(getpid()), std::memory_order_relaxed);
  h.collector_state.store(static_cast<uint32_t>(trace::CollectorState::kRunning), std::memory_order_release);
  m.registered = true;
  TC_RETURN_IF_ERROR(m.write_run(nullptr, 0));
  for (const auto& [name, value] : m.info.env) {
    if (!m.env_written.insert(name + "=" + value).second) continue;
    TC_RETURN_IF_ERROR(m.writer.row(store::schema::run_env).null().text(name).text(value).insert());
  }
  TC_RETURN_IF_ERROR(m.writer.commit());
  m.last_commit_ns = trace::monotonic_ns();
  m.rows_at_last_commit = m.writer.rows_written();
  return Status::Ok();
}

StatusOr<uint64_t> Collector::drain() { return impl_->drain_once(); }

Status Collector::flush() {
  Impl& m = *impl_;
  m.drain_once();
  m.commit_now(trace::monotonic_ns());
  return m.discarding ? m.store_error : Status::Ok();
}

Status Collector::finish(const RunEnd& end) {
  Impl& m = *impl_;
  struct Stop {
    Impl& m;
    ~Stop() { m.region.header().collector_state.store(static_cast<uint32_t>(trace::CollectorState::kStopped), std::memory_order_release); }
  } stop{m};
  // Drain until a pass finds nothing: threads of a live process may still
  // write. Bounded: after the first pass, at most one more region's worth.
  uint64_t after_first = 0;
  const uint64_t region_slots = uint64_t{m.ring_count} * m.capacity;
  for (int pass = 0; pass < 1000; ++pass) {
    uint64_t n = m.drain_once();
    if (n == 0) break;
    if (pass > 0 && (after_first += n) > region_slots) {
      m.still_recording = true;
      break;
    }
  }
  m.retry_pending(true);
  for (uint32_t r = 0; r < m.ring_count; ++r) {
    RingReader& rr = m.rings[r];
    if (!rr.known || m.cursors[r].abandoned) continue;
    m.close_open_ranges(rr);
    m.take_ring_drops(rr, m.region.ring(r), /*reset=*/false);
  }
  m.final_no_ring = m.region.header().dropped_no_ring.load(std::memory_order_relaxed);
  m.final_drops = true;
  if (!m.discarding) m.write_python_steps();
  if (!m.discarding) m.write_hook_collectives();
  if (!m.discarding) m.write_env_ranks();
  if (!m.discarding && !m.framework_logs.empty()) m.import_frameworks_kept(end.end_ts);
  if (!m.discarding && !m.attach_report.empty()) m.take_attach_failures();
  RunEnd final_end = end;
  const std::string& path = m.writer.path();
  if (!m.discarding) {
    if (m.total_dropped() > 0 || !m.abandoned.empty() || m.still_recording || !m.notes.empty() || !m.unattached.empty() || m.unattached_unnamed)
      final_end.complete = false;
    m.write_end_rows(final_end);
    if (!m.discarding) {
      Status s = m.writer.finalize();
      if (s.ok()) return s;
      if (s.message().find("removed while") != std::string::npos) return s;
      m.keep(s);
      // The indexes did not fit (or the last commit failed): the rows are
      // committed; say so in the store if there is room for it.
      if (m.writer.recover().ok()) {
        final_end.complete = false;
        m.discarding = false;
        if (uint64_t lost = m.events_lost_to_store()) {
          m.write_dropped(0, lost, m.store_loss_reason());
        } else {
          m.write_dropped(0, 0, std::string(m.file_size_limited() ? "disk full (file size limit, ulimit -f)" : "disk full") +
                                    " at the end of the run: every event was kept, the indexes were not built");
        }
        m.keep(m.write_run(&final_end, m.events_kept()));
        (void)m.writer.close();
      }
      return {StatusCode::kIoError, path + ": " + std::string(m.file_size_limited() ? "disk full (file size limit, ulimit -f)" : "disk full") +
                                        " at the end of the run: kept " + with_commas(m.events_kept()) + " of " + with_commas(m.events) +
                                        " events, indexes not built; the store is valid and marked incomplete"};
    }
  }
  // The store failed during the run: keep what was committed, and try to say
  // why in it, in the space the writer held back.
  final_end.complete = false;
  const Status first = m.store_error;
  const uint64_t lost = m.events_lost_to_store();
  bool marked = false;
  // First in the space the reserve file gave back (a full file system); if
  // that is not enough, with the WAL folded into the store file (a file size
  // limit: the WAL itself is at the limit).
  for (bool fold : {false, true}) {
    if (marked || !m.writer.recover(fold).ok()) continue;
    m.discarding = false;  // a failure below sets it again
    m.write_dropped(0, lost, m.store_loss_reason());
    m.apply_nvtx_thread_names();
    for (const ProcessRow& p : m.processes) m.keep(m.process_row(p).insert());
    for (const ThreadRow& t : m.threads) m.keep(m.thread_row(t).insert());
    m.keep(m.write_run(&final_end, m.events_kept()));
    m.keep(m.writer.commit());
    marked = !m.discarding;
  }
  (void)m.writer.close();
  m.discarding = true;
  m.store_error = first;
  std::string what = m.file_size_limited() ? "disk full (file size limit, ulimit -f)" : "disk full";
  if (first.message().find("disk full") == std::string::npos && first.message().find("ulimit") == std::string::npos) {
    what = "the store failed (" + first.message() + ")";
  }
  return {StatusCode::kIoError, path + ": " + what + ": kept " + with_commas(m.events_kept()) + " of " + with_commas(m.events) + " events" +
                                    (marked ? "; the store is valid and marked incomplete" : "; the store is valid but could not be marked incomplete")};
}

void Collector::note_incomplete(std::string reason) { impl_->notes.push_back(std::move(reason)); }

void Collector::import_logs(const import::Framework& framework, std::string dir) { impl_->framework_logs[framework.name] = std::move(dir); }

void Collector::attach_reports(std::string path) { impl_->attach_report = std::move(path); }

std::map<int64_t, trace::launcher::Place> Collector::process_places() const { return impl_->env_places; }

CollectorStats Collector::stats() const {
  CollectorStats s = impl_->live;
  s.events = impl_->store_failed() ? impl_->events_kept() : impl_->events;
  s.dropped = impl_->total_dropped();
  s.threads = impl_->threads.size();
  s.processes = impl_->processes.size();
  return s;
}

}  // namespace tc::collect
