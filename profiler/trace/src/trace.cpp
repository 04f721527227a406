#include "tc/trace/trace.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

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

// Owns the thread's ring; retires it when the thread exits.
struct ProducerOwner {
  Producer p;
  bool live = false;
  ~ProducerOwner();
};

// initial-exec: one %fs-relative load instead of a __tls_get_addr call (the
// code is position-independent). Fine for executables and for libraries
// loaded at start-up, which is how tc is linked.
#define TC_TLS_FAST __attribute__((tls_model("initial-exec")))
thread_local uint32_t t_no_ring_session TC_TLS_FAST = 0;  // session in which this thread found no ring
thread_local ProducerOwner t_owner;

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
    p.hdr->state.store(static_cast<uint32_t>(RingState::kRetired), std::memory_order_release);
  }
  live = false;
  t_prod = nullptr;
}

// Slow path: the thread's first event in this session.
Producer* claim() {
  if (!enabled()) return nullptr;
  uint32_t session = g_session.load(std::memory_order_acquire);
  if (t_no_ring_session == session) return nullptr;
  Region* region = g_region;
  if (region == nullptr) return nullptr;
  RegionHeader& h = region->header();
  for (uint32_t i = 0; i < h.ring_count; ++i) {
    RingHeader& r = region->ring(i);
    uint32_t expected = static_cast<uint32_t>(RingState::kFree);
    if (!r.state.compare_exchange_strong(expected, static_cast<uint32_t>(RingState::kClaiming), std::memory_order_acq_rel)) continue;
    r.pid = static_cast<uint32_t>(getpid());
    r.tid = current_tid();
    r.claims.fetch_add(1, std::memory_order_relaxed);
    Producer& p = t_owner.p;
    p.hdr = &r;
    p.slots = region->slots(i);
    p.capacity = h.ring_capacity;
    p.mask = h.ring_capacity - 1;
    p.write = r.write.load(std::memory_order_relaxed);
    p.cached_read = r.read.load(std::memory_order_acquire);
    p.session = session;
    p.stalled = false;
    t_owner.live = true;
    r.state.store(static_cast<uint32_t>(RingState::kActive), std::memory_order_release);
    t_prod = &p;
    return &p;
  }
  t_no_ring_session = session;
  return nullptr;
}

void count_drop(Producer* p, uint64_t events) {
  reg().dropped.fetch_add(events, std::memory_order_relaxed);
  if (p) {
    p->hdr->dropped.fetch_add(events, std::memory_order_relaxed);
  } else if (g_region) {
    g_region->header().dropped_no_ring.fetch_add(events, std::memory_order_relaxed);
  }
}

// Waits for the collector to free `n` slots. This is the one slow path that
// may enter the kernel: it spins briefly, then yields the CPU, because on a
// small machine the collector needs the core this thread would spin on. It
// waits as long as the collector shows signs of life (its heartbeat moves)
// and gives up, marking the ring stalled, after 500 ms without one.
[[gnu::noinline]] bool wait_for_space(Producer* p, uint64_t n) {
  if (n > p->capacity) return false;
  constexpr uint64_t kStallNs = 500'000'000;
  std::atomic<uint64_t>& heartbeat = g_region->header().collector_heartbeat;
  uint64_t beat = heartbeat.load(std::memory_order_relaxed);
  uint64_t since = 0;
  for (uint64_t spin = 0;; ++spin) {
    p->cached_read = p->hdr->read.load(std::memory_order_acquire);
    if (p->capacity - (p->write - p->cached_read) >= n) {
      p->stalled = false;
      return true;
    }
    if (p->stalled) return false;
    if (spin < 64) {
#if defined(__x86_64__)
      _mm_pause();
#endif
      continue;
    }
    if (spin < 256) {
      sched_yield();
    } else {
      timespec nap{0, 50'000};
      nanosleep(&nap, nullptr);
    }
    uint64_t now = monotonic_ns();
    uint64_t b = heartbeat.load(std::memory_order_relaxed);
    if (since == 0 || b != beat) {
      since = now;
      beat = b;
    } else if (now - since > kStallNs) {
      p->stalled = true;
      return false;
    }
  }
}

inline Producer* producer() {
  Producer* p = t_prod;
  if (__builtin_expect(p == nullptr || p->session != g_session.load(std::memory_order_relaxed), 0)) p = claim();
  return p;
}

inline bool reserve(Producer* p, uint64_t n) {
  if (__builtin_expect(p->capacity - (p->write - p->cached_read) >= n, 1)) return true;
  p->cached_read = p->hdr->read.load(std::memory_order_acquire);
  if (p->capacity - (p->write - p->cached_read) >= n) return true;
  return wait_for_space(p, n);
}

inline void write_slot(SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) {
  Producer* p = producer();
  if (__builtin_expect(p == nullptr, 0)) {
    count_drop(nullptr, 1);
    return;
  }
  if (__builtin_expect(!reserve(p, 1), 0)) {
    count_drop(p, 1);
    return;
  }
  Slot& s = p->slots[p->write & p->mask];
  s.ts = ts;
  s.loc = loc;
  s.kind = static_cast<uint16_t>(kind);
  s.extra = 0;
  s.value = value;
  s.arg = arg;
  p->hdr->write.store(++p->write, std::memory_order_release);
}

// A header slot and its payload, published together.
bool write_with_payload(SlotKind kind, uint32_t loc, int64_t value, const void* payload, uint64_t bytes) {
  Producer* p = producer();
  if (p == nullptr) {
    count_drop(nullptr, 1);
    return false;
  }
  uint32_t extra = payload_slots(bytes);
  if (extra > 0xffff || !reserve(p, 1 + uint64_t{extra})) {
    count_drop(p, 1);
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

constexpr uint64_t kMaxText = 4096;  // longer names are cut

uint32_t define_location(const char* name, const char* file, const char* function, uint32_t line) {
  uint32_t id = g_region->header().next_id.fetch_add(1, std::memory_order_relaxed);
  std::string payload;
  payload.append(name ? name : "").push_back('\0');
  payload.append(file ? file : "").push_back('\0');
  payload.append(function ? function : "").push_back('\0');
  if (payload.size() > 3 * kMaxText) payload.resize(3 * kMaxText);
  write_with_payload(SlotKind::kLocationDef, id, line, payload.data(), payload.size());
  return id;
}

}  // namespace

uint32_t detail::register_site(Site& site) noexcept {
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  uint32_t id = site.id.load(std::memory_order_relaxed);
  if (id != 0 || g_region == nullptr) return id;
  id = define_location(site.loc.name, site.loc.file, site.loc.function, site.loc.line);
  r.sites.push_back(&site);
  site.id.store(id, std::memory_order_release);
  return id;
}

namespace {

void atfork_child() {
  // The forking thread's ring belongs to the parent's thread.
  t_owner.live = false;
  t_prod = nullptr;
  // A private region has no collector in the child: stop recording there.
  if (g_region != nullptr && g_region->fd() < 0 && !reg().attached) detail::g_enabled.store(false);
}

}  // namespace

namespace detail {

void write_slow(SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint64_t ts) noexcept { write_slot(kind, loc, value, arg, ts); }

void set_in_process_hooks(StartHook start, FlushHook flush) {
  std::lock_guard lock(reg().mu);
  reg().start_hook = start;
  reg().flush_hook = flush;
}

void activate(Region* region) {
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
  g_use_tsc = static_cast<ClockKind>(region->header().clock) == ClockKind::kTsc;
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
      char* end = nullptr;
      long fd = std::strtol(fd_text, &end, 10);
      std::string error;
      std::unique_ptr<Region> region = (end && *end == '\0' && fd >= 0) ? Region::attach(static_cast<int>(fd), &error) : nullptr;
      if (!region) {
        std::fprintf(stderr, "tc: cannot record: TC_PROFILE_FD=%s: %s; run the program under tc-profile again or unset TC_PROFILE_FD\n", fd_text,
                     error.empty() ? "not a descriptor number" : error.c_str());
        return;
      }
      r.attached = std::move(region);
      Region* raw = r.attached.get();
      r.mu.unlock();  // activate() takes the lock
      detail::activate(raw);
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
  if (text.size() > kMaxText) text = text.substr(0, kMaxText);
  auto [it, inserted] = r.strings.try_emplace(std::string(text), 0);
  if (inserted) {
    it->second = g_region->header().next_id.fetch_add(1, std::memory_order_relaxed);
    write_with_payload(SlotKind::kStringDef, it->second, 0, text.data(), text.size());
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

LocationId location_id(std::string_view name, const std::source_location& where) noexcept {
  if (!enabled()) return {};
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  if (g_region == nullptr) return {};
  auto key = std::make_tuple(std::string(name), std::string(where.file_name()), where.line(), std::string(where.function_name()));
  auto [it, inserted] = r.locations.try_emplace(std::move(key), 0);
  if (inserted) {
    it->second = define_location(std::get<0>(it->first).c_str(), where.file_name(), where.function_name(), where.line());
  }
  return LocationId{it->second};
}

int64_t new_graph_id() noexcept { return draw_id(&RegionHeader::next_graph_id, g_local_graph_id); }
int64_t new_execution_id() noexcept { return draw_id(&RegionHeader::next_execution_id, g_local_execution_id); }

void instant_at(LocationId location, int64_t arg) noexcept {
  if (!enabled()) return;
  write_slot(SlotKind::kInstant, location.value, 0, arg, read_now());
}

void begin_at(LocationId location) noexcept {
  if (!enabled()) return;
  write_slot(SlotKind::kBegin, location.value, 0, 0, read_now());
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
