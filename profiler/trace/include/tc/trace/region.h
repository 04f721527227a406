// tc/trace/region.h: the memory that recording threads and the collector
// share. For collectors (profiler/collect); programs use trace.h.
//
// A Region is one block of memory, either shared (a memfd that tc-profile
// creates and hands to the program as TC_PROFILE_FD, so that a program that
// crashes or is killed loses nothing it recorded; a process whose launcher
// closed that descriptor reopens tc-profile's, attach_from_environment) or private (an in-process
// collector, TC_PROFILE=path). Its layout is the same in both cases:
//
//   RegionHeader | RingHeader[0] Slot[capacity] | RingHeader[1] Slot[...] | ...
//
// Each ring has one producer (a thread) and one consumer (the collector).
// The producer writes slots, then publishes them with one release store of
// `write`; the consumer reads up to `write` (acquire), then releases them with
// one store of `read`. A record of several slots (a string definition) is
// published in one store, so a crash never leaves half a record visible.
//
// Trust: the program can write anywhere in this memory (a bug, a wild
// pointer), so the collector trusts none of it. The Region object keeps the
// geometry it was created (or attached) with and never re-reads it; a shared
// region's memfd is sealed against shrinking and growing, so no mapping can
// fault. A collector that finds a ring inconsistent abandons it (state
// kAbandoned: its producer then drops instead of waiting) and says so in the
// store.
//
// Liveness: a producer whose ring is full waits for as long as the collector
// that registered itself (collector_pid, collector_state) is alive, however
// long a pass or a commit takes; it drops only when that collector has
// exited or stopped, or when no collector ever registered and the heartbeat
// has not moved for 500 ms (a region nobody drains).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tc::trace {

inline constexpr uint64_t kRegionMagic = 0x31726763'74637400ull;  // "\0tcrgc1" little-endian-ish tag
inline constexpr uint32_t kRegionVersion = 4;  // v4: RegionHeader::key

// What the slot's fields mean depends on kind.
enum class SlotKind : uint16_t {
  kEmpty = 0,
  kBegin = 1,        // ts, loc = location id, arg
  kEnd = 2,          // ts, loc = location id of the matching begin
  kInstant = 3,      // ts, loc, arg
  kCounter = 4,      // ts, loc, value = bit pattern of a double
  kLocationDef = 5,  // loc = new id, value = line, arg = payload bytes; payload "name\0file\0function\0"
  kStringDef = 6,    // loc = new id, arg = payload bytes; payload = the string
  kThreadName = 7,   // loc = string id of the name (defined earlier in the same ring)
  kRecord = 8,       // loc = RecordKind, value = field count, arg = payload bytes; payload = int64 fields (records.h)
  kPayload = 9,      // raw bytes continuing the previous slot's record
};

// 32 bytes, the unit of a ring.
struct Slot {
  uint64_t ts;
  uint32_t loc;
  uint16_t kind;   // SlotKind
  uint16_t extra;  // number of payload slots that follow this one
  int64_t value;
  int64_t arg;
};
static_assert(sizeof(Slot) == 32, "a slot is 32 bytes; rings and collectors depend on it");

enum class RingState : uint32_t {
  kFree = 0,      // no owner; the collector has drained it
  kActive = 1,    // owned by a live thread (or a thread of a dead process)
  kRetired = 2,   // its thread exited; the collector frees it once drained
  kClaiming = 3,  // a thread is taking it; pid and tid not yet written
  kAbandoned = 4, // the collector found it inconsistent and reads it no more; never claimed again
};

// Why a producer dropped an event; each ring counts its drops per reason.
enum class DropReason : uint32_t {
  kNoCollector = 0,    // ring full, no collector registered, and no heartbeat for 500 ms
  kCollectorGone = 1,  // ring full and the registered collector has exited or stopped
  kAbandoned = 2,      // the collector abandoned the ring
  kTooLarge = 3,       // a record larger than the whole ring
};
inline constexpr uint32_t kDropReasons = 4;

// What the collector that drains the region says about itself.
enum class CollectorState : uint32_t {
  kNone = 0,     // none registered: producers fall back to the heartbeat
  kRunning = 1,  // collector_pid drains the region; producers wait while that process lives
  kStopped = 2,  // it finished (or gave up): producers drop instead of waiting
};

enum class ClockKind : uint32_t { kMonotonic = 0, kTsc = 1 };

struct alignas(64) RingHeader {
  alignas(64) std::atomic<uint64_t> write;  // producer: slots published so far
  alignas(64) std::atomic<uint64_t> read;   // consumer: slots released so far
  alignas(64) std::atomic<uint32_t> state;  // RingState
  uint32_t pid;
  uint32_t tid;
  uint32_t reserved;
  std::atomic<uint64_t> dropped;  // events this ring's producer could not write (saturating)
  std::atomic<uint64_t> claims;   // times the ring was claimed (changes when a new thread owns it)
  std::atomic<uint64_t> dropped_by[kDropReasons];  // the same, per DropReason (saturating)
};

struct alignas(64) RegionHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t ring_count;
  uint64_t ring_capacity;  // slots per ring, a power of two
  uint64_t total_bytes;
  uint32_t clock;          // ClockKind chosen by the creator
  uint32_t reserved;
  std::atomic<uint32_t> next_id;              // location and string ids, shared by every process
  std::atomic<uint64_t> dropped_no_ring;      // events of threads that found no free ring (saturating)
  std::atomic<uint64_t> collector_heartbeat;  // bumped by the collector on every pass
  std::atomic<int64_t> next_graph_id;         // new_graph_id(), shared by every process
  std::atomic<int64_t> next_execution_id;     // new_execution_id(), shared by every process
  std::atomic<uint32_t> collector_pid;        // the process that drains the region; 0: none yet
  std::atomic<uint32_t> collector_state;      // CollectorState
  std::atomic<uint64_t> rings_freed;          // bumped whenever the collector frees a ring (threads without one retry)
  uint64_t key[2];  // a shared region's secret (TC_PROFILE_KEY): what a process checks before it records into it; 0 when private
};

// Owns or maps a region. Not copyable.
class Region {
 public:
  // Creates a shared region backed by a memfd, sealed against shrinking and
  // growing. With `inheritable`, programs started with exec inherit it (fd()
  // is what TC_PROFILE_FD carries); otherwise it is close-on-exec and shared
  // by fork only. nullptr and errno-style message on failure.
  static std::unique_ptr<Region> create_shared(uint32_t rings, uint64_t capacity, std::string* error, bool inheritable = true);
  // Creates a private region (a collector in this process: tests, benches).
  // `clock` is what its producers read (default: preferred_clock()).
  static std::unique_ptr<Region> create_private(uint32_t rings, uint64_t capacity, std::string* error);
  static std::unique_ptr<Region> create_private(uint32_t rings, uint64_t capacity, std::string* error, ClockKind clock);
  // Maps a shared region from an inherited descriptor; validates magic,
  // version, geometry and the descriptor's size.
  static std::unique_ptr<Region> attach(int fd, std::string* error);
  // Maps the region of the launcher's environment (tc-profile sets
  // TC_PROFILE_FD=N, TC_PROFILE_PID and TC_PROFILE_KEY): descriptor N when it
  // is still the run's, else the launcher's /proc/PID/fd/N (a launcher in
  // between closed or reused N: Python's subprocess, multiprocessing spawn and
  // forkserver). A descriptor is the run's only when it is a sealed memfd of
  // this user whose header holds TC_PROFILE_KEY (without TC_PROFILE_KEY, only
  // descriptor N is tried, unchecked but for the header). nullptr and why,
  // naming each way tried, when none is.
  static std::unique_ptr<Region> attach_from_environment(std::string* error);
  // The secret a child checks (32 hex digits); "" for a private region.
  std::string key_text() const;
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  RegionHeader& header() const { return *header_; }
  // The geometry and clock this object was created or attached with; never
  // re-read from the (writable) header. i < ring_count().
  uint32_t ring_count() const { return rings_; }
  uint64_t capacity() const { return capacity_; }
  ClockKind clock() const { return clock_; }
  RingHeader& ring(uint32_t i) const;
  Slot* slots(uint32_t i) const;
  int fd() const { return fd_; }
  static uint64_t bytes_for(uint32_t rings, uint64_t capacity);

 private:
  Region(void* base, uint64_t bytes, int fd, uint32_t rings, uint64_t capacity, ClockKind clock);
  void* base_;
  uint64_t key_[2] = {0, 0};  // kept from creation, never re-read
  uint64_t bytes_;
  int fd_;
  RegionHeader* header_;
  uint32_t rings_;
  uint64_t capacity_;
  ClockKind clock_;
};

// The clock the creator chose: TSC when the CPU says it is invariant.
ClockKind preferred_clock();
// Reads the given clock: TSC ticks or CLOCK_MONOTONIC ns.
uint64_t read_clock(ClockKind kind);
// CLOCK_MONOTONIC in ns.
uint64_t monotonic_ns();

// A process that could not attach to its launcher's region says so, so that
// the run names it (pid, command, why) instead of losing it silently: one
// line "PID\tWHY\tCOMMAND\n" appended to TC_PROFILE_REPORT (a file the
// launcher made in its private directory; never created or followed here).
// False when there is nowhere to say it.
bool report_attach_failure(const std::string& why);

// Number of payload slots needed for `bytes` bytes.
constexpr uint32_t payload_slots(uint64_t bytes) { return static_cast<uint32_t>((bytes + sizeof(Slot) - 1) / sizeof(Slot)); }

// Saturating counts: a + b, or UINT64_MAX where that would wrap. Every count
// of drops or losses goes through these, so a scribbled counter reads as
// "very many", never as a small or negative number.
constexpr uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
// The same on a shared counter (a compare-and-swap loop: slow paths only).
inline void sat_add(std::atomic<uint64_t>& counter, uint64_t n) {
  uint64_t v = counter.load(std::memory_order_relaxed);
  while (!counter.compare_exchange_weak(v, sat_add(v, n), std::memory_order_relaxed)) {
  }
}
// A count as a store column (INTEGER is signed 64-bit): at most INT64_MAX.
constexpr int64_t count_column(uint64_t n) { return n > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(n); }

namespace detail {
// Hooks the in-process collector (profiler/collect) installs; trace calls them
// from start_from_environment() and flush(). Both may be null.
using StartHook = bool (*)(const char* path);
using FlushHook = void (*)();
void set_in_process_hooks(StartHook start, FlushHook flush);
// Makes the calling process record into `region` (which outlives recording).
// With `forked_children_record`, a child made by fork() goes on recording into
// it (a region shared with a launcher); otherwise recording stops in the child.
void activate(Region* region, bool forked_children_record = false);
// Stops recording in this process (threads see enabled() == false).
void deactivate();
}  // namespace detail

}  // namespace tc::trace
