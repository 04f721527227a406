#include "tc/trace/trace.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "tc/trace/region.h"

namespace tc::trace {

namespace detail {
std::atomic<bool> g_enabled{false};
thread_local constinit Producer* t_prod = nullptr;
std::atomic<uint32_t> g_session{0};
bool g_use_tsc = false;
}  // namespace detail

using detail::g_session;
using detail::g_use_tsc;
using detail::Producer;
using detail::read_now;
using detail::t_prod;

namespace {

// Hot-path globals, written only while recording is off or under g_mu.
Region* g_region = nullptr;
bool g_children_record = false;  // a fork()ed child goes on recording into g_region

// Owns the thread's ring; retires it when the thread exits.
struct ProducerOwner {
  Producer p;
  bool live = false;
  ~ProducerOwner();
};

// initial-exec: one %fs-relative load instead of a __tls_get_addr call (the
// code is position-independent). Fine for executables and for libraries
// loaded at start-up, which is how tc is linked.
#define TC_TLS_FAST __attribute__((tls_model(TC_TRACE_TLS_MODEL)))
thread_local uint32_t t_no_ring_session TC_TLS_FAST = 0;  // session in which this thread found no ring
thread_local uint64_t t_no_ring_freed TC_TLS_FAST = 0;    // the region's rings_freed when it looked
thread_local uint32_t t_no_ring_tries TC_TLS_FAST = 0;    // events since it looked
thread_local ProducerOwner t_owner;

// A thread without a ring looks again after this many events (a power of
// two), or as soon as the collector frees a ring.
constexpr uint32_t kNoRingRetryEvery = 4096;

struct Registry {
  std::mutex mu;
  std::vector<Site*> sites;  // every site given an id, reset when a new session starts
  std::vector<StaticString*> static_strings;  // the same for static strings
  std::unordered_map<std::string, uint32_t> strings;
  std::map<std::tuple<std::string, std::string, uint32_t, std::string>, uint32_t> locations;
  detail::StartHook start_hook = nullptr;
  detail::FlushHook flush_hook = nullptr;
  std::unique_ptr<Region> attached;  // a region mapped from TC_PROFILE_FD
  bool env_started = false;
  std::atomic<uint64_t> dropped{0};
};

// Leaked on purpose: threads may record while static destructors run.
Registry& reg() {
  static Registry* r = new Registry;
  return *r;
}


uint32_t current_tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

ProducerOwner::~ProducerOwner() {
  if (live && p.session == g_session.load(std::memory_order_relaxed)) {
    // Only an active ring retires: an abandoned one stays out of use.
    uint32_t active = static_cast<uint32_t>(RingState::kActive);
    p.hdr->state.compare_exchange_strong(active, static_cast<uint32_t>(RingState::kRetired), std::memory_order_acq_rel);
  }
  live = false;
  t_prod = nullptr;
}

// Takes a free ring for the calling thread, or returns nullptr.
Producer* claim_free_ring(Region* region, uint32_t session) {
  for (uint32_t i = 0; i < region->ring_count(); ++i) {
    RingHeader& r = region->ring(i);
    uint32_t expected = static_cast<uint32_t>(RingState::kFree);
    if (r.state.load(std::memory_order_relaxed) != expected) continue;  // no cache-line write for a taken ring
    if (!r.state.compare_exchange_strong(expected, static_cast<uint32_t>(RingState::kClaiming), std::memory_order_acq_rel)) continue;
    r.pid = static_cast<uint32_t>(getpid());
    r.tid = current_tid();
    r.claims.fetch_add(1, std::memory_order_relaxed);
    Producer& p = t_owner.p;
    p.hdr = &r;
    p.slots = region->slots(i);
    p.capacity = region->capacity();
    p.mask = region->capacity() - 1;
    p.write = r.write.load(std::memory_order_relaxed);
    p.cached_read = r.read.load(std::memory_order_acquire);
    p.session = session;
    p.stalled = false;
    p.stall_reason = 0;
    t_owner.live = true;
    r.state.store(static_cast<uint32_t>(RingState::kActive), std::memory_order_release);
    t_prod = &p;
    t_no_ring_session = 0;
    return &p;
  }
  return nullptr;
}

bool retired_rings(Region* region) {
  for (uint32_t i = 0; i < region->ring_count(); ++i) {
    if (region->ring(i).state.load(std::memory_order_relaxed) == static_cast<uint32_t>(RingState::kRetired)) return true;
  }
  return false;
}

bool process_alive(uint32_t pid);

// Waits for the collector to free a ring, for a thread that found none free
// but saw a retired one: a retired ring's thread has exited, and a
// live collector frees it at its next pass (every 10 ms at most under
// tc-profile). Short-lived threads used to drop their events ("no free ring")
// while only two were alive, because the rings of those that had exited were
// not yet drained. Gives up when the collector is not registered as running,
// has exited, or made kPatience passes (or none for 1 s) without freeing one.
// True when a ring was freed since `freed` (it may be taken by then).
bool wait_for_a_freed_ring(RegionHeader& h, uint64_t freed) {
  constexpr uint64_t kPatience = 4;
  const uint64_t beat0 = h.collector_heartbeat.load(std::memory_order_relaxed);
  uint64_t beat = beat0, since = monotonic_ns(), next_check = 0;
  for (uint32_t nap_us = 20;; nap_us = std::min(nap_us * 2, 1000u)) {
    if (h.rings_freed.load(std::memory_order_acquire) != freed) return true;
    if (h.collector_state.load(std::memory_order_acquire) != static_cast<uint32_t>(CollectorState::kRunning)) return false;
    const uint64_t now = monotonic_ns();
    if (now >= next_check) {  // a system call or two: once a millisecond
      next_check = now + 1'000'000;
      if (!process_alive(h.collector_pid.load(std::memory_order_relaxed))) return false;
    }
    const uint64_t b = h.collector_heartbeat.load(std::memory_order_relaxed);
    if (b - beat0 >= kPatience) return false;
    if (b != beat) {
      beat = b;
      since = now;
    } else if (now - since > 1'000'000'000) {
      return false;
    }
    timespec nap{0, static_cast<long>(nap_us) * 1000};
    nanosleep(&nap, nullptr);
  }
}

// Slow path: the thread's first event in this session, or a later one of a
// thread that found no free ring (it looks again when a ring was freed since,
// and every kNoRingRetryEvery events).
Producer* claim() {
  if (!enabled()) return nullptr;
  uint32_t session = g_session.load(std::memory_order_acquire);
  Region* region = g_region;
  if (region == nullptr) return nullptr;
  RegionHeader& h = region->header();
  uint64_t freed = h.rings_freed.load(std::memory_order_acquire);
  if (t_no_ring_session == session && freed == t_no_ring_freed && (++t_no_ring_tries & (kNoRingRetryEvery - 1)) != 0) return nullptr;
  for (;;) {
    if (Producer* p = claim_free_ring(region, session)) return p;
    if (!retired_rings(region) || !wait_for_a_freed_ring(h, freed)) break;
    freed = h.rings_freed.load(std::memory_order_acquire);
  }
  t_no_ring_session = session;
  t_no_ring_freed = freed;
  t_no_ring_tries = 0;
  return nullptr;
}

void count_drop(Producer* p, uint64_t events, DropReason why) {
  sat_add(reg().dropped, events);
  if (p) {
    sat_add(p->hdr->dropped, events);
    sat_add(p->hdr->dropped_by[static_cast<uint32_t>(why)], events);
  } else if (g_region) {
    sat_add(g_region->header().dropped_no_ring, events);
  }
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

// A pidfd for the collector's pid, shared by the process's threads: (pid <<
// 32) | (fd + 1). A pidfd tells an exited process (a zombie included) from a
// live one, which kill(pid, 0) cannot: a killed tc-profile stays a zombie
// until its parent reaps it, and the program's threads must not wait on it.
std::atomic<uint64_t> g_collector_pidfd{0};

// -1: no pidfd here (use kill); -2: no such process.
int collector_pidfd(uint32_t pid) {
  uint64_t cur = g_collector_pidfd.load(std::memory_order_acquire);
  if (cur != 0 && (cur >> 32) == pid) return static_cast<int>(cur & 0xffffffffu) - 1;
  int fd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (fd < 0) return errno == ESRCH ? -2 : -1;
  // A pidfd replaced here is not closed: another thread may be polling it.
  if (!g_collector_pidfd.compare_exchange_strong(cur, (uint64_t{pid} << 32) | static_cast<uint32_t>(fd + 1), std::memory_order_acq_rel)) {
    close(fd);
    return -1;
  }
  return fd;
}

bool process_alive(uint32_t pid) {
  if (pid == 0 || pid > static_cast<uint32_t>(INT32_MAX)) return false;
  if (pid == static_cast<uint32_t>(getpid())) return true;  // a collector thread of this process
  int fd = collector_pidfd(pid);
  if (fd == -2) return false;
  if (fd >= 0) {
    pollfd pf{fd, POLLIN, 0};
    int r = poll(&pf, 1, 0);
    if (r == 0) return true;
    if (r > 0 && (pf.revents & POLLNVAL) == 0) return false;  // readable: it exited
  }
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Waits for the collector to free `n` slots. This is the one slow path that
// may enter the kernel: it spins briefly, then yields the CPU, then naps,
// because on a small machine the collector needs the core this thread would
// spin on. It waits for as long as the registered collector process lives.
// The old rule (give up after 500 ms without a heartbeat) dropped 28% of 50M
// events from 8 threads on 2 cores while the collector was alive: its long
// passes and commits, starved of CPU by the waiting threads, outlasted the
// 500 ms. That rule now applies only to a region no collector registered for.
[[gnu::noinline]] bool wait_for_space(Producer* p, uint64_t n, DropReason* why) {
  if (n > p->capacity) {
    *why = DropReason::kTooLarge;
    return false;
  }
  constexpr uint64_t kStallNs = 500'000'000;
  RegionHeader& h = g_region->header();
  uint64_t beat = h.collector_heartbeat.load(std::memory_order_relaxed);
  uint64_t since = 0, next_check = 0;
  for (uint64_t spin = 0;; ++spin) {
    p->cached_read = p->hdr->read.load(std::memory_order_acquire);
    if (p->capacity - (p->write - p->cached_read) >= n) {
      p->stalled = false;
      return true;
    }
    if (p->stalled) {
      *why = static_cast<DropReason>(p->stall_reason);
      return false;
    }
    if (spin < 64) {
#if defined(__x86_64__)
      _mm_pause();
#endif
      continue;
    }
    if (spin < 256) {
      sched_yield();
    } else {
      // Waiting threads nap longer the longer they wait: eight threads waking
      // every 50 us take a good part of a core from the collector.
      timespec nap{0, spin < 1024 ? 50'000 : 500'000};
      nanosleep(&nap, nullptr);
    }
    uint64_t now = monotonic_ns();
    if (now < next_check) continue;
    next_check = now + 1'000'000;  // liveness costs a system call or two: once a millisecond
    DropReason reason;
    if (p->hdr->state.load(std::memory_order_acquire) == static_cast<uint32_t>(RingState::kAbandoned)) {
      reason = DropReason::kAbandoned;
    } else if (uint32_t state = h.collector_state.load(std::memory_order_acquire); state == static_cast<uint32_t>(CollectorState::kStopped)) {
      reason = DropReason::kCollectorGone;
    } else if (state == static_cast<uint32_t>(CollectorState::kRunning)) {
      if (process_alive(h.collector_pid.load(std::memory_order_relaxed))) continue;
      reason = DropReason::kCollectorGone;
    } else {
      uint64_t b = h.collector_heartbeat.load(std::memory_order_relaxed);
      if (since == 0 || b != beat) {
        since = now;
        beat = b;
        continue;
      }
      if (now - since <= kStallNs) continue;
      reason = DropReason::kNoCollector;
    }
    p->stalled = true;
    p->stall_reason = static_cast<uint32_t>(reason);
    *why = reason;
    return false;
  }
}

inline Producer* producer() {
  Producer* p = t_prod;
  if (__builtin_expect(p == nullptr || p->session != g_session.load(std::memory_order_relaxed), 0)) p = claim();
  return p;
}

inline bool reserve(Producer* p, uint64_t n, DropReason* why) {
  if (__builtin_expect(p->capacity - (p->write - p->cached_read) >= n, 1)) return true;
  p->cached_read = p->hdr->read.load(std::memory_order_acquire);
  if (p->capacity - (p->write - p->cached_read) >= n) return true;
  return wait_for_space(p, n, why);
}

inline void write_slot(SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) {
  Producer* p = producer();
  if (__builtin_expect(p == nullptr, 0)) {
    count_drop(nullptr, 1, DropReason::kNoCollector);
    return;
  }
  DropReason why = DropReason::kNoCollector;
  if (__builtin_expect(!reserve(p, 1, &why), 0)) {
    count_drop(p, 1, why);
    return;
  }
  publish_slot(p, kind, loc, value, arg, ts);
}

// A header slot and its payload, published together.
bool write_with_payload(SlotKind kind, uint32_t loc, int64_t value, const void* payload, uint64_t bytes) {
  Producer* p = producer();
  if (p == nullptr) {
    count_drop(nullptr, 1, DropReason::kNoCollector);
    return false;
  }
  uint32_t extra = payload_slots(bytes);
  DropReason why = DropReason::kTooLarge;
  if (extra > 0xffff || !reserve(p, 1 + uint64_t{extra}, &why)) {
    count_drop(p, 1, why);
    return false;
  }
  Slot& s = p->slots[p->write & p->mask];
  s.ts = read_now();
  s.loc = loc;
  s.kind = static_cast<uint16_t>(kind);
  s.extra = static_cast<uint16_t>(extra);
  s.value = value;
  s.arg = static_cast<int64_t>(bytes);
  const char* src = static_cast<const char*>(payload);
  for (uint32_t i = 0; i < extra; ++i) {
    Slot& d = p->slots[(p->write + 1 + i) & p->mask];
    uint64_t off = uint64_t{i} * sizeof(Slot);
    uint64_t n = bytes - off < sizeof(Slot) ? bytes - off : sizeof(Slot);
    std::memset(&d, 0, sizeof(Slot));
    std::memcpy(&d, src + off, n);
  }
  p->write += 1 + extra;
  p->hdr->write.store(p->write, std::memory_order_release);
  return true;
}

// Names and strings are kept whole up to this many bytes. They used to be cut
// silently: interned strings at 4,096 bytes, a run-time location's payload at
// 12,288 (which also cut off the NULs that end its fields), and every name at
// its first NUL.
constexpr size_t kMaxText = 65536;

// Payload bytes one definition may take in this region's rings: at most half
// a ring, so that it never waits for a ring to empty completely.
size_t payload_budget() {
  return static_cast<size_t>(std::min<uint64_t>(0xffff, g_region->capacity() / 2 - 1)) * sizeof(Slot);
}

// `text` as it travels: each NUL byte as the two characters "\0" (the
// location payload is NUL-separated, and SQLite's users read text up to a
// NUL), and when longer than `max` bytes cut at a UTF-8 boundary with a
// visible mark of what was cut.
std::string wire_text(std::string_view text, size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max));
  for (char c : text) {
    if (c == '\0') {
      out += "\\0";
    } else {
      out += c;
    }
    if (out.size() > 2 * max + 8) break;  // far past the cut: the rest is not needed
  }
  if (out.size() <= max) return out;
  size_t total = text.size() + static_cast<size_t>(std::count(text.begin(), text.end(), '\0'));
  std::string mark;
  size_t keep = max;
  for (int i = 0; i < 3; ++i) {  // the mark's own length moves the cut; settles at once
    mark = "\xe2\x80\xa6[cut at " + std::to_string(keep) + " of " + std::to_string(total) + " bytes]";
    keep = max > mark.size() ? max - mark.size() : 0;
  }
  while (keep > 0 && (static_cast<unsigned char>(out[keep]) & 0xc0) == 0x80) --keep;  // not inside a UTF-8 sequence
  out.resize(keep);
  mark = "\xe2\x80\xa6[cut at " + std::to_string(keep) + " of " + std::to_string(total) + " bytes]";
  return out + mark;
}

uint32_t define_location(std::string_view name, std::string_view file, std::string_view function, uint32_t line) {
  uint32_t id = g_region->header().next_id.fetch_add(1, std::memory_order_relaxed);
  const size_t budget = payload_budget();
  std::string n = wire_text(name, kMaxText), f = wire_text(file, kMaxText), fn = wire_text(function, kMaxText);
  if (n.size() + f.size() + fn.size() + 3 > budget) {  // a small ring: each field gets a third
    size_t each = budget / 3 - 1;
    n = wire_text(name, each);
    f = wire_text(file, each);
    fn = wire_text(function, each);
  }
  std::string payload;
  payload.reserve(n.size() + f.size() + fn.size() + 3);
  payload.append(n).push_back('\0');
  payload.append(f).push_back('\0');
  payload.append(fn).push_back('\0');
  write_with_payload(SlotKind::kLocationDef, id, line, payload.data(), payload.size());
  return id;
}

}  // namespace

uint32_t detail::register_site(Site& site) noexcept {
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  uint32_t id = site.id.load(std::memory_order_relaxed);
  if (id != 0 || g_region == nullptr) return id;
  id = define_location(site.loc.name ? site.loc.name : "", site.loc.file ? site.loc.file : "", site.loc.function ? site.loc.function : "",
                       site.loc.line);
  r.sites.push_back(&site);
  site.id.store(id, std::memory_order_release);
  return id;
}

namespace {

void atfork_child() {
  // The forking thread's ring belongs to the parent's thread.
  t_owner.live = false;
  t_prod = nullptr;
  t_no_ring_session = 0;
  // Unless the region is shared with a launcher, nobody collects the child.
  if (g_region != nullptr && !g_children_record) detail::g_enabled.store(false);
}

}  // namespace

namespace detail {

void write_slow(SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) noexcept { write_slot(kind, loc, value, arg, ts); }

void set_in_process_hooks(StartHook start, FlushHook flush) {
  std::lock_guard lock(reg().mu);
  reg().start_hook = start;
  reg().flush_hook = flush;
}

void activate(Region* region, bool forked_children_record) {
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  g_enabled.store(false);
  // Ids belong to a region: forget those handed out for an earlier one.
  for (Site* s : r.sites) s->id.store(0, std::memory_order_relaxed);
  r.sites.clear();
  for (StaticString* s : r.static_strings) s->id.store(0, std::memory_order_relaxed);
  r.static_strings.clear();
  r.strings.clear();
  r.locations.clear();
  g_region = region;
  g_children_record = forked_children_record;
  g_use_tsc = region->clock() == ClockKind::kTsc;
  g_session.fetch_add(1, std::memory_order_release);
  static std::once_flag fork_once;
  std::call_once(fork_once, [] { pthread_atfork(nullptr, nullptr, atfork_child); });
  g_enabled.store(kCompiledIn, std::memory_order_release);
}

void deactivate() { g_enabled.store(false, std::memory_order_release); }

}  // namespace detail

void start_from_environment() noexcept {
  Registry& r = reg();
  detail::StartHook hook = nullptr;
  const char* path = nullptr;
  {
    std::lock_guard lock(r.mu);
    if (r.env_started) return;
    if (const char* fd_text = std::getenv("TC_PROFILE_FD"); fd_text && *fd_text) {
      r.env_started = true;
      std::string error;
      std::unique_ptr<Region> region = Region::attach_from_environment(&error);
      if (!region) {
        const bool told = report_attach_failure(error);
        std::fprintf(stderr, "tc: cannot record: TC_PROFILE_FD=%s: %s; %s\n", fd_text, error.c_str(),
                     told ? "tc-profile names this process in its store" : "run the program under tc-profile again or unset TC_PROFILE_FD");
        return;
      }
      r.attached = std::move(region);
      Region* raw = r.attached.get();
      r.mu.unlock();  // activate() takes the lock
      detail::activate(raw, /*forked_children_record=*/true);
      r.mu.lock();
      return;
    }
    path = std::getenv("TC_PROFILE");
    if (path == nullptr || *path == '\0' || r.start_hook == nullptr) return;
    r.env_started = true;
    hook = r.start_hook;
  }
  hook(path);
}

namespace {

// With reg().mu held and a region active.
uint32_t intern_locked(Registry& r, std::string_view text) {
  auto [it, inserted] = r.strings.try_emplace(std::string(text), 0);
  if (inserted) {
    it->second = g_region->header().next_id.fetch_add(1, std::memory_order_relaxed);
    std::string wire = wire_text(text, std::min(kMaxText, payload_budget()));
    write_with_payload(SlotKind::kStringDef, it->second, 0, wire.data(), wire.size());
  }
  return it->second;
}

// Process-local ids, for when no region is shared (and before one is).
std::atomic<int64_t> g_local_graph_id{1};
std::atomic<int64_t> g_local_execution_id{1};

int64_t draw_id(std::atomic<int64_t> RegionHeader::*shared, std::atomic<int64_t>& local) {
  Region* region = enabled() ? g_region : nullptr;
  if (region != nullptr) {
    int64_t id = (region->header().*shared).fetch_add(1, std::memory_order_relaxed);
    if (id >= 1) return id;  // another process may have scribbled on the counter
  }
  return local.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

uint32_t detail::register_string(StaticString& s) noexcept {
  if (!enabled()) return 0;
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  uint32_t id = s.id.load(std::memory_order_relaxed);
  if (id != 0 || g_region == nullptr) return id;
  id = intern_locked(r, s.text ? s.text : "");
  r.static_strings.push_back(&s);
  s.id.store(id, std::memory_order_release);
  return id;
}

StringId intern(std::string_view text) noexcept {
  if (!enabled()) return {};
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  if (g_region == nullptr) return {};
  return StringId{intern_locked(r, text)};
}

LocationId location_id(std::string_view name, std::string_view file, uint32_t line, std::string_view function) noexcept {
  if (!enabled()) return {};
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  if (g_region == nullptr) return {};
  auto key = std::make_tuple(std::string(name), std::string(file), line, std::string(function));
  auto [it, inserted] = r.locations.try_emplace(std::move(key), 0);
  if (inserted) it->second = define_location(name, file, function, line);
  return LocationId{it->second};
}

int64_t new_graph_id() noexcept { return draw_id(&RegionHeader::next_graph_id, g_local_graph_id); }
int64_t new_execution_id() noexcept { return draw_id(&RegionHeader::next_execution_id, g_local_execution_id); }

void instant_at(LocationId location, int64_t arg, uint64_t ticks) noexcept {
  if (!enabled()) return;
  write_slot(SlotKind::kInstant, location.value, 0, arg, ticks ? ticks : read_now());
}

void begin_at(LocationId location, int64_t arg, uint64_t ticks) noexcept {
  if (!enabled()) return;
  write_slot(SlotKind::kBegin, location.value, 0, arg, ticks ? ticks : read_now());
}

LocationId new_location(std::string_view name, std::string_view file, uint32_t line, std::string_view function) noexcept {
  if (!enabled()) return {};
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  if (g_region == nullptr) return {};
  return LocationId{define_location(name, file, function, line)};
}

void end_at(LocationId location) noexcept {
  if (!enabled()) return;
  write_slot(SlotKind::kEnd, location.value, 0, 0, read_now());
}

void record(RecordKind kind, std::span<const int64_t> fields) noexcept {
  if (!enabled()) return;
  write_with_payload(SlotKind::kRecord, static_cast<uint32_t>(kind), static_cast<int64_t>(fields.size()), fields.data(),
                     fields.size() * sizeof(int64_t));
}

void set_thread_name(std::string_view name) noexcept {
  if (!enabled()) return;
  StringId id = intern(name);
  if (id.value != 0) write_slot(SlotKind::kThreadName, id.value, 0, 0, read_now());
}

uint64_t now() noexcept { return read_now(); }

uint64_t dropped_events() noexcept { return reg().dropped.load(std::memory_order_relaxed); }

void flush() noexcept {
  detail::FlushHook hook;
  {
    std::lock_guard lock(reg().mu);
    hook = reg().flush_hook;
  }
  if (hook && enabled()) hook();
}

namespace {
// Attach to tc-profile's rings before main() runs. The in-process collector
// (profiler/collect) calls start_from_environment() again once its hooks are in.
[[maybe_unused]] const bool g_auto_started = [] {
  if (kCompiledIn) start_from_environment();
  return true;
}();
}  // namespace

}  // namespace tc::trace
