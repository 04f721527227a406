// The CPU backend's thread pool (see pool.h for why and what it promises).
//
// One region at a time. The caller publishes a job in one of two slots and
// then a 64-bit counter `next_` = epoch << 40 | next index; everyone
// (caller included) claims [index, index + chunk) with a compare-and-swap
// that also checks the epoch, runs it, and adds its length to the slot's
// `done`. The caller returns when `done` reaches n, so it waits only for
// chunks that were claimed: a worker that never woke up costs nothing.
//
// A worker reads the slot's fields before its claim; the claim succeeds only
// while `next_` still holds that epoch, and the caller rewrites a slot only
// two epochs later, after publishing the epoch in between, so a successful
// claim always ran on its own job's fields (release stores, acquire loads).
//
// Stacked threads. Beside a busy process the scheduler tends to put a worker
// on the caller's core and leave the other core to the neighbour: a woken
// worker goes where the waker runs when its own core is taken, and two
// threads that take turns look like one task's load, so nothing moves them
// apart. The process then gets one core where it could have had more, and
// pays for the hand-offs (the Transformer step 14 ms beside a spinner
// instead of 8.6, against 6.7 alone). So each participant notes its CPU when
// it first claims in a region; after kStackedRegions regions in a row with a
// worker on the caller's CPU, the caller takes its own CPU out of that
// worker's affinity (within the process's mask, never the caller's own
// mask). If the caller later moves onto the worker's new CPU the same check
// moves the worker again, so no CPU stays excluded for good. TC_POOL_SPREAD=0
// turns this off (for a user who places threads themselves).
#include "pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "../../clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TC_PAUSE() _mm_pause()
#else
#define TC_PAUSE() ((void)0)
#endif

namespace tc::detail::cpu {
namespace {

constexpr int kEpochShift = 40;
constexpr uint64_t kIndexMask = (uint64_t{1} << kEpochShift) - 1;
constexpr uint64_t kEpochLimit = uint64_t{1} << 24;
// A worker's spin after a region: starts at kSpinStartNs, adapts in
// [kSpinMinNs, kSpinMaxNs]. The caller spins kCallerSpinNs for claimed
// chunks before it sleeps until they are done.
constexpr int64_t kSpinMinNs = 4'000, kSpinStartNs = 32'000, kSpinMaxNs = 256'000;
constexpr int64_t kCallerSpinNs = 50'000;
constexpr int kStackedRegions = 3;

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

bool spread_enabled() {
  const char* v = std::getenv("TC_POOL_SPREAD");
  return !(v && std::strcmp(v, "0") == 0);
}

// The first positive integer of a variable like OMP_NUM_THREADS ("4" or "4,2"), else 0.
int leading_count(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return 0;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end != v && n > 0 && n <= 4096 ? static_cast<int>(n) : 0;
}

int default_threads() {
  if (int n = leading_count("TC_NUM_THREADS")) return n;
  if (int n = leading_count("OMP_NUM_THREADS")) return n;
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

struct Job {
  std::atomic<tc_body_fn> body{nullptr};
  std::atomic<void*> ctx{nullptr};
  std::atomic<int64_t> n{0}, chunk{1};
  alignas(64) std::atomic<int64_t> done{0};
  std::atomic<uint32_t> waiting{0};  // 1 while the caller sleeps until `done` reaches n
};

// Where a worker last ran: its CPU when it first claimed in epoch `epoch`.
struct Seat {
  alignas(64) std::atomic<uint64_t> epoch{0};
  std::atomic<int> cpu{-1};
  pthread_t handle{};
};

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads), seats_(new Seat[static_cast<std::size_t>(threads)]) {}

  int threads() const { return threads_; }

  void parallel_for(int64_t n, int64_t grain, int32_t chunks_per_thread, tc_body_fn body, void* ctx) {
    if (n <= 0) return;
    int64_t pieces = int64_t{threads_} * std::max<int32_t>(1, chunks_per_thread);
    int64_t chunk = std::max<int64_t>({1, grain, (n + pieces - 1) / pieces});
    if (threads_ <= 1 || chunk >= n || static_cast<uint64_t>(n) > kIndexMask || busy_.exchange(true, std::memory_order_acquire)) {
      serial_.fetch_add(1, std::memory_order_relaxed);
      body(ctx, 0, n);
      return;
    }
    ensure_started();
    parallel_.fetch_add(1, std::memory_order_relaxed);
    // Epochs alternate slots: 1, 2, ..., kEpochLimit - 1, then 2 (even after odd).
    epoch_ = epoch_ + 1 >= kEpochLimit ? 2 : epoch_ + 1;
    const uint64_t e = epoch_;
    Job& j = jobs_[e & 1];
    j.body.store(body, std::memory_order_release);
    j.ctx.store(ctx, std::memory_order_release);
    j.n.store(n, std::memory_order_release);
    j.chunk.store(chunk, std::memory_order_release);
    j.done.store(0, std::memory_order_relaxed);
    next_.store(e << kEpochShift, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      wake_.fetch_add(1, std::memory_order_seq_cst);
      futex_wake_all(&wake_);
    }
    work(e);
    // Only chunks someone claimed are left: wait for them, spinning briefly,
    // then sleeping until the runner of the last one wakes us. A sleep, not
    // sched_yield: with nothing else queued on this core a yield returns at
    // once, the core never looks idle, and the scheduler never brings the
    // holder of a chunk (queued behind a neighbour elsewhere) here.
    int64_t t0 = 0;
    for (int i = 0; j.done.load(std::memory_order_acquire) < n; ++i) {
      if (i < 64) {
        TC_PAUSE();
        continue;
      }
      if (t0 == 0) t0 = now_ns();
      if (now_ns() - t0 < kCallerSpinNs) {
        TC_PAUSE();
        continue;
      }
      j.waiting.store(1, std::memory_order_seq_cst);
      if (j.done.load(std::memory_order_seq_cst) < n) {
        caller_sleeps_.fetch_add(1, std::memory_order_relaxed);
        futex_wait(&j.waiting, 1);
      }
      j.waiting.store(0, std::memory_order_relaxed);
    }
    if (spread_) unstack(e);
    busy_.store(false, std::memory_order_release);
  }

  PoolStats stats() const {
    return {parallel_.load(std::memory_order_relaxed), serial_.load(std::memory_order_relaxed), sleeps_.load(std::memory_order_relaxed),
            caller_sleeps_.load(std::memory_order_relaxed), spreads_.load(std::memory_order_relaxed)};
  }

  bool pin_workers(int cpu) {
    ensure_started();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    bool ok = true;
    for (int t = 1; t < threads_; ++t) ok = ::pthread_setaffinity_np(seats_[t].handle, sizeof one, &one) == 0 && ok;
    return ok;
  }

  // In a child of fork() there are no workers: the caller claims every chunk
  // itself, so regions still finish; only a region running at the fork is reset.
  // Nor does it move any (the seats' handles are the parent's threads).
  void after_fork_in_child() {
    busy_.store(false, std::memory_order_relaxed);
    spread_ = false;
  }

 private:
  // Claims and runs chunks of epoch e until none is left; `seat` is the
  // worker's (null for the caller).
  void work(uint64_t e, Seat* seat = nullptr) {
    Job& j = jobs_[e & 1];
    for (;;) {
      tc_body_fn body = j.body.load(std::memory_order_acquire);
      void* ctx = j.ctx.load(std::memory_order_acquire);
      int64_t n = j.n.load(std::memory_order_acquire), chunk = j.chunk.load(std::memory_order_acquire);
      uint64_t v = next_.load(std::memory_order_acquire);
      if ((v >> kEpochShift) != e) return;
      int64_t lo = static_cast<int64_t>(v & kIndexMask);
      if (lo >= n) return;
      if (!next_.compare_exchange_weak(v, v + static_cast<uint64_t>(chunk), std::memory_order_acq_rel)) continue;
      int64_t hi = std::min(lo + chunk, n);
      if (seat && seat->epoch.load(std::memory_order_relaxed) != e) {
        seat->cpu.store(::sched_getcpu(), std::memory_order_relaxed);
        seat->epoch.store(e, std::memory_order_release);
      }
      body(ctx, lo, hi);
      // The runner of the last chunk wakes a sleeping caller (seq_cst: either
      // the caller sees `done` reach n or this sees `waiting`). A late wake
      // that lands on a later region's wait is harmless: the caller checks
      // `done` again.
      if (j.done.fetch_add(hi - lo, std::memory_order_seq_cst) + (hi - lo) == n &&
          j.waiting.load(std::memory_order_seq_cst) != 0) {
        j.waiting.store(0, std::memory_order_seq_cst);
        futex_wake_all(&j.waiting);
      }
    }
  }

  // After region e (the caller's thread): a worker that ran on the caller's
  // CPU kStackedRegions regions in a row is asked off it (see the top).
  void unstack(uint64_t e) {
    const int me = ::sched_getcpu();
    auto here = [&](const Seat& s) {
      return s.epoch.load(std::memory_order_acquire) == e && s.cpu.load(std::memory_order_relaxed) == me;
    };
    bool stacked = false;
    for (int t = 1; t < threads_ && !stacked; ++t) stacked = here(seats_[t]);
    stacked_ = stacked ? stacked_ + 1 : 0;
    if (stacked_ < kStackedRegions || me < 0 || me >= CPU_SETSIZE) return;
    stacked_ = 0;
    cpu_set_t set = allowed_;
    CPU_CLR(me, &set);
    if (CPU_COUNT(&set) == 0) return;  // the process may run on this CPU alone
    for (int t = 1; t < threads_; ++t)
      if (here(seats_[t]) && ::pthread_setaffinity_np(seats_[t].handle, sizeof set, &set) == 0)
        spreads_.fetch_add(1, std::memory_order_relaxed);
  }

  void ensure_started() {
    std::call_once(started_, [this] { start_workers(); });
  }

  void start_workers() {
    CPU_ZERO(&allowed_);
    spread_ = spread_enabled() && ::sched_getaffinity(0, sizeof allowed_, &allowed_) == 0 && CPU_COUNT(&allowed_) > 1;
    for (int t = 1; t < threads_; ++t) {
      std::thread th([this, t] { worker(&seats_[t]); });
      seats_[t].handle = th.native_handle();  // valid after detach: workers never exit
      th.detach();
    }
  }

  void worker(Seat* seat) {
    uint64_t last = 0;
    int64_t spin_ns = kSpinStartNs;
    for (;;) {
      uint64_t e = next_.load(std::memory_order_acquire) >> kEpochShift;
      if (e != 0 && e != last) {
        last = e;
        work(e, seat);
        continue;
      }
      // Spin for the next region, a bounded time.
      bool arrived = false;
      int64_t t0 = now_ns();
      for (int i = 1;; ++i) {
        if ((next_.load(std::memory_order_acquire) >> kEpochShift) != last) {
          arrived = true;
          break;
        }
        TC_PAUSE();
        if ((i & 63) == 0 && now_ns() - t0 > spin_ns) break;
      }
      if (arrived) continue;
      // Sleep until the caller publishes one (see parallel_for's wake-up).
      int64_t slept = now_ns();
      uint32_t w = wake_.load(std::memory_order_seq_cst);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if ((next_.load(std::memory_order_seq_cst) >> kEpochShift) == last) {
        sleeps_.fetch_add(1, std::memory_order_relaxed);
        futex_wait(&wake_, w);
      }
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      slept = now_ns() - slept;
      // Woken soon after giving up: spin longer next time. A long sleep (a
      // gap between steps): spinning through it only burned a core.
      if (slept < spin_ns) spin_ns = std::min(kSpinMaxNs, spin_ns * 2);
      else if (slept > 64 * spin_ns) spin_ns = std::max(kSpinMinNs, spin_ns / 2);
    }
  }

  const int threads_;
  alignas(64) std::atomic<uint64_t> next_{0};
  alignas(64) std::atomic<uint32_t> wake_{0};
  std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<bool> busy_{false};
  uint64_t epoch_ = 0;  // the caller's; read under busy_
  int stacked_ = 0;     // the caller's: regions in a row with a worker on its CPU
  bool spread_ = false;
  cpu_set_t allowed_{};  // the process's CPUs when the workers started
  std::unique_ptr<Seat[]> seats_;  // [1, threads_): the workers'
  Job jobs_[2];
  std::once_flag started_;
  std::atomic<uint64_t> parallel_{0}, serial_{0}, sleeps_{0}, caller_sleeps_{0}, spreads_{0};
};

Pool& pool() {
  static Pool* p = [] {
    auto* made = new Pool(default_threads());  // never destroyed: detached workers use it until exit
    ::pthread_atfork(nullptr, nullptr, [] { pool().after_fork_in_child(); });
    return made;
  }();
  return *p;
}

}  // namespace

void pool_parallel_for(int64_t n, int64_t grain, int32_t chunks_per_thread, tc_body_fn body, void* ctx) {
  pool().parallel_for(n, grain, chunks_per_thread, body, ctx);
}

int pool_threads() { return pool().threads(); }

PoolStats pool_stats() { return pool().stats(); }

bool pool_pin_workers_for_test(int cpu) { return cpu >= 0 && cpu < CPU_SETSIZE && pool().pin_workers(cpu); }

}  // namespace tc::detail::cpu
