// The CPU backend's thread pool (compiler/src/backend/cpu/pool.h): every
// iteration of a region runs exactly once, whatever the split, the order of
// regions, a second calling thread, sleeping workers or a fork.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "backend/cpu/runtime_api.h"  // compiler/src

namespace cpu = tc::detail::cpu;

namespace {

struct Coverage {
  explicit Coverage(int64_t n) : n(n), hits(new std::atomic<uint32_t>[static_cast<size_t>(n)]) {
    for (int64_t i = 0; i < n; ++i) hits[static_cast<size_t>(i)].store(0);
  }
  int64_t n;
  std::unique_ptr<std::atomic<uint32_t>[]> hits;
  std::atomic<int64_t> bad_chunks{0};
  static void body(void* self, int64_t lo, int64_t hi) {
    auto* c = static_cast<Coverage*>(self);
    if (lo < 0 || hi > c->n || lo >= hi) c->bad_chunks.fetch_add(1);
    for (int64_t i = std::max<int64_t>(lo, 0); i < std::min(hi, c->n); ++i) c->hits[static_cast<size_t>(i)].fetch_add(1);
  }
  // Indexes not run exactly once.
  int64_t wrong() const {
    int64_t w = 0;
    for (int64_t i = 0; i < n; ++i) w += hits[static_cast<size_t>(i)].load() != 1;
    return w;
  }
};

void run(Coverage& c, int64_t grain, int32_t cpt) { cpu::runtime_api()->parallel_for(c.n, grain, cpt, &Coverage::body, &c); }

}  // namespace

TEST(Pool, EveryIterationRunsExactlyOnce) {
  ASSERT_EQ(cpu::runtime_api()->version, cpu::kRuntimeApiVersion);
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}, int64_t{1} << 20}) {
    for (int64_t grain : {int64_t{1}, int64_t{64}}) {
      for (int32_t cpt : {1, 4}) {
        Coverage c(n);
        run(c, grain, cpt);
        EXPECT_EQ(c.wrong(), 0) << "n " << n << " grain " << grain << " chunks per thread " << cpt;
        EXPECT_EQ(c.bad_chunks.load(), 0);
      }
    }
  }
}

TEST(Pool, ManyRegionsInARowEachComplete) {
  // Thousands of regions: the job slots alternate, workers join late or not at all.
  Coverage c(97);
  for (int r = 0; r < 5000; ++r) run(c, 1, 4);
  int64_t wrong = 0;
  for (int64_t i = 0; i < c.n; ++i) wrong += c.hits[static_cast<size_t>(i)].load() != 5000;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(c.bad_chunks.load(), 0);
}

TEST(Pool, LargeRegionsRunInParallelAndSmallOnesAlone) {
  if (cpu::pool_threads() < 2) GTEST_SKIP() << "the pool has one thread here";
  cpu::PoolStats before = cpu::pool_stats();
  Coverage big(1 << 16), small(3);
  run(big, 1, 4);
  run(small, 64, 4);  // 3 iterations, grain 64: not worth a second thread
  cpu::PoolStats after = cpu::pool_stats();
  EXPECT_EQ(after.parallel - before.parallel, 1u);
  EXPECT_EQ(after.serial - before.serial, 1u);
  EXPECT_EQ(big.wrong() + small.wrong(), 0);
}

TEST(Pool, TwoCallingThreadsAtOnceBothComplete) {
  // One region at a time: the second caller runs its loop alone.
  constexpr int kRounds = 300;
  std::vector<std::unique_ptr<Coverage>> a, b;
  for (int i = 0; i < kRounds; ++i) a.push_back(std::make_unique<Coverage>(4096)), b.push_back(std::make_unique<Coverage>(4096));
  std::thread other([&] {
    for (auto& c : b) run(*c, 1, 4);
  });
  for (auto& c : a) run(*c, 1, 4);
  other.join();
  int64_t wrong = 0;
  for (int i = 0; i < kRounds; ++i) wrong += a[static_cast<size_t>(i)]->wrong() + b[static_cast<size_t>(i)]->wrong();
  EXPECT_EQ(wrong, 0);
}

TEST(Pool, ARegionAfterTheWorkersWentToSleepCompletes) {
  if (cpu::pool_threads() < 2) GTEST_SKIP() << "the pool has one thread here";
  // A region wakes (or finds spinning) the worker; after it, the worker's
  // bounded spin ends in a sleep on its futex. Wait for that (a condition,
  // not a duration), counted from before the region.
  uint64_t sleeps = cpu::pool_stats().sleeps;
  Coverage first(1 << 14);
  run(first, 1, 4);
  while (cpu::pool_stats().sleeps == sleeps) std::this_thread::yield();
  Coverage second(1 << 14);
  run(second, 1, 4);
  EXPECT_EQ(first.wrong() + second.wrong(), 0);
}

TEST(Pool, AChildOfForkRunsItsRegionsWithoutTheWorkers) {
  Coverage warm(1 << 12);
  run(warm, 1, 4);  // the workers exist in the parent
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Coverage c(1 << 16);
    for (int r = 0; r < 10; ++r) {
      for (int64_t i = 0; i < c.n; ++i) c.hits[static_cast<size_t>(i)].store(0);
      run(c, 1, 4);
      if (c.wrong() != 0) ::_exit(1);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

namespace {

// A region whose chunks take long enough (about 0.2 ms each) that a worker
// queued on the caller's CPU gets the CPU now and then and claims some; the
// body notes the CPU each chunk ran on, by thread.
struct WhereChunksRan {
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int64_t> worker_chunks{0}, worker_chunks_on[2] = {0, 0};  // [0]: on `cpu`, [1]: elsewhere
  int cpu = 0;
  static void body(void* self, int64_t lo, int64_t hi) {
    auto* s = static_cast<WhereChunksRan*>(self);
    volatile uint64_t x = 0;
    for (int64_t i = lo; i < hi; ++i)
      for (int k = 0; k < 100'000; ++k) x = x + static_cast<uint64_t>(k);
    if (std::this_thread::get_id() == s->caller) return;
    s->worker_chunks.fetch_add(1);
    s->worker_chunks_on[::sched_getcpu() == s->cpu ? 0 : 1].fetch_add(1);
  }
};

// The stacking the scheduler makes beside a busy neighbour, on purpose: the
// workers start with this thread's mask (two CPUs or more), then the worker
// and this thread are both pinned to the first CPU. TearDown gives this
// thread its mask back.
class PoolStacking : public ::testing::Test {
 protected:
  void stack(bool spread) {
    ASSERT_EQ(::sched_getaffinity(0, sizeof mine_, &mine_), 0);
    if (CPU_COUNT(&mine_) < 2 || cpu::pool_threads() < 2) {
      GTEST_SKIP() << "needs two CPUs and a pool of two threads";
    }
    ASSERT_EQ(cpu::pool_stats().parallel, 0u) << "run this test in its own process (ctest does)";
    while (!CPU_ISSET(cpu_, &mine_)) ++cpu_;
    if (!spread) ::setenv("TC_POOL_SPREAD", "0", 1);
    ASSERT_TRUE(cpu::pool_pin_workers_for_test(cpu_));
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu_, &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
    pinned_ = true;
  }
  void TearDown() override {
    ::unsetenv("TC_POOL_SPREAD");
    if (pinned_) {
      EXPECT_EQ(::sched_setaffinity(0, sizeof mine_, &mine_), 0);
    }
  }
  // `regions` regions of 16 chunks (or until the pool moved a worker).
  void run_regions(WhereChunksRan& s, int regions, bool until_spread) {
    s.cpu = cpu_;
    for (int r = 0; r < regions && !(until_spread && cpu::pool_stats().spreads > 0); ++r)
      cpu::runtime_api()->parallel_for(16, 1, 8, &WhereChunksRan::body, &s);
  }
  int cpu_ = 0;
  cpu_set_t mine_{};
  bool pinned_ = false;
};

}  // namespace

TEST_F(PoolStacking, AWorkerStackedOnTheCallersCpuIsMovedOffIt) {
  stack(true);
  if (IsSkipped() || HasFatalFailure()) return;
  WhereChunksRan s;
  run_regions(s, 400, true);  // a bounded number of regions, not a duration
  ASSERT_GT(cpu::pool_stats().spreads, 0u) << "the worker ran on the caller's CPU in " << s.worker_chunks_on[0].load()
                                           << " chunks and was never moved";
  // Moved off the caller's CPU (into the process's CPUs less that one): from
  // now on the worker runs beside this thread, not instead of it.
  WhereChunksRan after;
  run_regions(after, 50, false);
  EXPECT_GT(after.worker_chunks.load(), 0);
  EXPECT_EQ(after.worker_chunks_on[0].load(), 0) << "the worker still ran on the caller's CPU " << cpu_;
}

TEST_F(PoolStacking, WithSpreadOffAStackedWorkerStaysWhereItIs) {
  stack(false);
  if (IsSkipped() || HasFatalFailure()) return;
  WhereChunksRan s;
  run_regions(s, 100, false);
  EXPECT_EQ(cpu::pool_stats().spreads, 0u);
  EXPECT_EQ(s.worker_chunks_on[1].load(), 0) << "the worker left CPU " << cpu_ << " though TC_POOL_SPREAD=0";
}
