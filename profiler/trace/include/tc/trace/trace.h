// tc/trace/trace.h: the recording API that the compiler and runtime call.
//
//   void step() {
//     TC_TRACE_RANGE("train.step");              // a range until end of scope
//     TC_TRACE_RANGE_ARG("graph.run", graph_id); // the same, with an argument
//     TC_TRACE_INSTANT("cache.miss", graph_id);   // a point in time with an argument
//     TC_TRACE_COUNTER("memory.live_bytes", live); // a value over time
//   }
//
// Structured records (a step, a compilation, an execution: one row of a store
// table each) are declared in tc/trace/records.h and sent with emit().
//
// Contract:
// - Each macro points at a static source-location record (name, file,
//   function, line); no string travels with an event.
// - Recording never allocates, locks, throws or makes a system call on the
//   hot path. A thread's first event claims a ring (once per thread); a site's
//   or a StaticString's first use in a session gets an id (once, under a lock).
// - Profiling off (no TC_PROFILE, no tc-profile, no start()): each macro costs
//   one predictable branch. Built with -DTC_TRACE=OFF: each macro is nothing.
// - A full ring makes the producer wait for the collector for as long as the
//   collector lives (back-pressure: a live collector never causes drops, however
//   slow it is). Events are dropped, and counted per reason, only when the
//   collector has exited or stopped, when it abandoned the ring, or when no
//   collector drains the region at all; never lost silently.
// - A thread that finds no free ring while one of an exited thread awaits the collector waits for it (a live collector);
//   else it records nothing until one is freed: it looks again when the collector frees one and every 4096 events.
// - Names and strings (intern(), location_id(), sites) are kept whole up to
//   64 KiB each (less in rings under 4096 slots: at most half the ring); a longer one is cut
//   at a UTF-8 boundary and ends in "…[cut at N of M bytes]". A NUL byte in
//   one is stored as the two characters "\0".
// - Timestamps are read from the TSC where it is invariant, else from
//   CLOCK_MONOTONIC; the collector converts them to CLOCK_MONOTONIC ns.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <source_location>
#include <span>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "tc/trace/records.h"
#include "tc/trace/region.h"

namespace tc::trace {

// A static description of a recording site. Lives in static storage.
struct Location {
  const char* name;
  const char* file;
  const char* function;
  uint32_t line;
};

// A recording site: the location plus its id, assigned on first use.
struct Site {
  Location loc;
  std::atomic<uint32_t> id{0};
};

// A string known when the program is built (an event's fixed argument, e.g.
// "eager"), interned once per recording session like a Site: intern(s) is
// then one atomic load. Lives in static storage.
struct StaticString {
  const char* text;
  std::atomic<uint32_t> id{0};
};

namespace detail {
extern std::atomic<bool> g_enabled;  // true while a recording session is active

// The calling thread's ring, as its producer sees it. Internal; inline here
// so that recording an event is a handful of instructions at the call site.
struct Producer {
  RingHeader* hdr = nullptr;
  Slot* slots = nullptr;
  uint64_t mask = 0;
  uint64_t capacity = 0;
  uint64_t write = 0;
  uint64_t cached_read = 0;
  uint32_t session = 0;
  bool stalled = false;      // the collector stopped draining; drop without waiting
  uint32_t stall_reason = 0; // DropReason of the drops while stalled
};
// initial-exec TLS: one %fs-relative load, no __tls_get_addr call. constinit
// tells the compiler there is no dynamic initializer to run first.
// A copy of the recording layer built into a dlopen()ed library (libtc_nvtx)
// defines TC_TRACE_TLS_MODEL as "global-dynamic": the static TLS surplus that
// initial-exec needs in such a library may already be spent by others.
#ifndef TC_TRACE_TLS_MODEL
#define TC_TRACE_TLS_MODEL "initial-exec"
#endif
extern thread_local constinit Producer* t_prod __attribute__((tls_model(TC_TRACE_TLS_MODEL)));
extern std::atomic<uint32_t> g_session;
extern bool g_use_tsc;

uint32_t register_site(Site& site) noexcept;
uint32_t register_string(StaticString& s) noexcept;
// Everything but the common case: claim a ring, wait for space, count drops.
void write_slow(SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) noexcept;

inline uint64_t read_now() noexcept {
#if defined(__x86_64__)
  if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
#endif
  return monotonic_ns();
}

inline uint32_t site_id(Site& site) noexcept {
  uint32_t id = site.id.load(std::memory_order_acquire);
  return __builtin_expect(id != 0, 1) ? id : register_site(site);
}

// Writes one slot at the producer's write position (which the caller checked
// has room) and publishes it with one release store.
inline void publish_slot(Producer* p, SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) noexcept {
  Slot& s = p->slots[p->write & p->mask];
  s.ts = ts;
  s.loc = loc;
  s.kind = static_cast<uint16_t>(kind);
  s.extra = 0;
  s.value = value;
  s.arg = arg;
  p->hdr->write.store(++p->write, std::memory_order_release);
}

// One event into the thread's ring: the fast path when `cache` (the thread's
// producer) has room, else write_slow(). write_event() passes t_prod itself;
// a caller that keeps its own per-thread state (libtc_nvtx,
// whose thread-locals cost a descriptor call each in a dlopen()ed library):
// `cache` is that caller's copy of the thread's producer, refreshed here
// whenever the slow path runs, so the fast path reads no thread-local.
inline void write_event_cached(Producer*& cache, SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) noexcept {
  Producer* p = cache;
  if (__builtin_expect(p != nullptr && p->session == g_session.load(std::memory_order_relaxed) &&
                           p->capacity != p->write - p->cached_read,
                       1)) {
    publish_slot(p, kind, loc, value, arg, ts);
    return;
  }
  write_slow(kind, loc, value, arg, ts);
  cache = t_prod;
}

inline void write_event(SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) noexcept {
  write_event_cached(t_prod, kind, loc, value, arg, ts);
}

inline void begin(Site& site, int64_t arg) noexcept {
  uint64_t ts = read_now();
  write_event(SlotKind::kBegin, site_id(site), 0, arg, ts);
}
inline void end(Site& site) noexcept { write_event(SlotKind::kEnd, site_id(site), 0, 0, read_now()); }
inline void instant(Site& site, int64_t arg) noexcept {
  uint64_t ts = read_now();
  write_event(SlotKind::kInstant, site_id(site), 0, arg, ts);
}
inline void counter(Site& site, double value) noexcept {
  uint64_t ts = read_now();
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  write_event(SlotKind::kCounter, site_id(site), bits, 0, ts);
}
}  // namespace detail

#if defined(TC_TRACE_ENABLED) && TC_TRACE_ENABLED
inline constexpr bool kCompiledIn = true;
#else
inline constexpr bool kCompiledIn = false;
#endif

// True while a recording session is active in this process. A constant false
// when recording is compiled out, so guarded calls vanish.
inline bool enabled() noexcept { return kCompiledIn && detail::g_enabled.load(std::memory_order_relaxed); }

// Starts recording in this process if the environment asks for it:
// TC_PROFILE_FD (set by tc-profile) attaches to the launcher's shared rings;
// TC_PROFILE=path.tcdb starts an in-process collector writing to path. Called
// automatically before main() by the tc library; safe to call again.
void start_from_environment() noexcept;

// Interns a string for use as an event argument (e.g. an input's name) and
// returns its id, stable for the rest of the recording session; StringId{}
// while recording is off. Locks; not for hot loops.
StringId intern(std::string_view text) noexcept;
// The same for a static string: locks on its first use in a session only.
inline StringId intern(StaticString& s) noexcept {
  uint32_t id = s.id.load(std::memory_order_acquire);
  return StringId{__builtin_expect(id != 0, 1) ? id : detail::register_string(s)};
}

// Registers a location that is only known at run time (e.g. a user's
// std::source_location) and returns its id for the *_at() calls and for Loc
// fields of records. Locks once per distinct (name, file, line, function);
// cached afterwards. LocationId{} while recording is off.
// The same from its parts. (std::source_location is missing where the
// compiler lacks its builtin, e.g. clang 14 with libstdc++ 12: the fuzz build.)
LocationId location_id(std::string_view name, std::string_view file, uint32_t line, std::string_view function) noexcept;
#if defined(__cpp_lib_source_location)
inline LocationId location_id(std::string_view name, const std::source_location& where) noexcept {
  return location_id(name, where.file_name(), where.line(), where.function_name());
}
#endif

// A new location every call, even for parts seen before: for a caller that
// keeps its own cache of what it has defined (the NVTX injection library keys
// its sites by message, domain, category and colour). Locks.
LocationId new_location(std::string_view name, std::string_view file, uint32_t line, std::string_view function) noexcept;

// Same as the macros, for a location id from location_id().
// `ticks` is when it happened, in now()'s ticks; 0 reads the clock.
void instant_at(LocationId location, int64_t arg, uint64_t ticks = 0) noexcept;
void begin_at(LocationId location, int64_t arg = 0, uint64_t ticks = 0) noexcept;
void end_at(LocationId location) noexcept;

// Structured records: build the record's struct (tc/trace/records.h) and
// emit() it; that is the API. record() is the wire underneath, kept for
// tests: the fields of one row of the kind's table after id and utid, in
// declaration order. At most 64 fields; a record whose field count is not
// its declaration's is dropped by the collector.
void record(RecordKind kind, std::span<const int64_t> fields) noexcept;
inline void record(RecordKind kind, std::initializer_list<int64_t> fields) noexcept {
  record(kind, std::span<const int64_t>(fields.begin(), fields.size()));
}

// Ids of compiled graphs and of their executions, unique in the run: while
// recording, every process of the run (all of tc-profile's children) draws
// from one counter in the shared region, so two processes never both have a
// graph 1. Otherwise (recording off or compiled out) from a counter of this
// process. Always >= 1; lock-free.
int64_t new_graph_id() noexcept;
int64_t new_execution_id() noexcept;

// Names the calling thread in the store.
void set_thread_name(std::string_view name) noexcept;

// Current timestamp in the recording clock's ticks (TSC or ns).
uint64_t now() noexcept;

// Events this process dropped so far (saturating): no free ring, or a full
// ring whose collector is gone, abandoned it, or never came.
uint64_t dropped_events() noexcept;

// Blocks until every event recorded so far by this process has been written
// to the store by the in-process collector (no-op under tc-profile or when
// off). For tests and for orderly shutdown.
void flush() noexcept;

class ScopedRange {
 public:
  explicit ScopedRange(Site& site, int64_t arg = 0) noexcept : site_(enabled() ? &site : nullptr) {
    if (site_) detail::begin(*site_, arg);
  }
  ~ScopedRange() {
    if (site_) detail::end(*site_);
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  Site* site_;
};

}  // namespace tc::trace

#define TC_TRACE_CONCAT2(a, b) a##b
#define TC_TRACE_CONCAT(a, b) TC_TRACE_CONCAT2(a, b)

#if defined(TC_TRACE_ENABLED) && TC_TRACE_ENABLED
#define TC_TRACE_SITE_(var, name_)                                                      \
  static constinit ::tc::trace::Site var {                                              \
    ::tc::trace::Location{name_, __FILE__, __func__, static_cast<uint32_t>(__LINE__)}, 0 \
  }
#define TC_TRACE_RANGE(name_)                                    \
  TC_TRACE_SITE_(TC_TRACE_CONCAT(tc_trace_site_, __LINE__), name_); \
  ::tc::trace::ScopedRange TC_TRACE_CONCAT(tc_trace_range_, __LINE__) { TC_TRACE_CONCAT(tc_trace_site_, __LINE__) }
#define TC_TRACE_RANGE_ARG(name_, arg_)                                \
  TC_TRACE_SITE_(TC_TRACE_CONCAT(tc_trace_site_, __LINE__), name_); \
  ::tc::trace::ScopedRange TC_TRACE_CONCAT(tc_trace_range_, __LINE__) { TC_TRACE_CONCAT(tc_trace_site_, __LINE__), static_cast<int64_t>(arg_) }
#define TC_TRACE_INSTANT(name_, arg_)                                                                   \
  do {                                                                                                  \
    TC_TRACE_SITE_(tc_trace_site_, name_);                                                              \
    if (::tc::trace::enabled()) ::tc::trace::detail::instant(tc_trace_site_, static_cast<int64_t>(arg_)); \
  } while (0)
#define TC_TRACE_COUNTER(name_, value_)                                                                 \
  do {                                                                                                  \
    TC_TRACE_SITE_(tc_trace_site_, name_);                                                              \
    if (::tc::trace::enabled()) ::tc::trace::detail::counter(tc_trace_site_, static_cast<double>(value_)); \
  } while (0)
#else
#define TC_TRACE_RANGE(name_) \
  do {                        \
  } while (0)
#define TC_TRACE_RANGE_ARG(name_, arg_) \
  do {                                  \
    (void)sizeof(arg_);                 \
  } while (0)
#define TC_TRACE_INSTANT(name_, arg_) \
  do {                                \
    (void)sizeof(arg_);               \
  } while (0)
#define TC_TRACE_COUNTER(name_, value_) \
  do {                                  \
    (void)sizeof(value_);               \
  } while (0)
#endif
