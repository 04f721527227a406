// tc-bench-trace: what recording costs, and how fast the collector empties
// the rings into a store. Prints a table; every number is the median of
// several repetitions measured in this one run.
//
//   build/bin/tc-bench-trace [--quick]
//   build/bin/tc-bench-trace --load [EVENTS] [--threads T]
//
// Rows:
//   2 timestamp reads   : the floor: two reads of the recording clock
//   range, recording on : TC_TRACE_RANGE begin + end into a ring (target <= 1.5x the floor)
//   range, recording off: the same macro when no session is active
//   raw SQLite insert   : rows/s into a ranges-shaped table, one transaction, WAL, synchronous=NORMAL
//   ingest              : events/s from full rings to a finalized store (target >= 1.5 M/s)
//
// --load (default 50,000,000 events from 8 threads): the sustained case, as
// under tc-profile. A child process records EVENTS ranges from T threads at
// full speed into shared rings (tc-profile's default: 64 x 65,536 slots)
// while this process drains them into a store with tc-profile's loop. Prints
// the events dropped (target 0: producers wait while the collector lives)
// and the sustained ingest rate (events stored per second, from the first
// event to the last one drained; finalizing is timed apart).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tc/collect/collector.h"
#include "tc/store/baseline.h"
#include "tc/store/writer.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"
#if TC_BENCH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace tr = tc::trace;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ns_since(Clock::time_point t0, double per) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / per;
}

volatile uint64_t g_sink;

double bench_clock_pair(int reps, int n) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    uint64_t s = 0;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      s += tr::now();
      s += tr::now();
    }
    v.push_back(ns_since(t0, n));
    g_sink = s;
  }
  return median(v);
}

void drain_everything(tr::Region& region) {
  for (uint32_t i = 0; i < region.header().ring_count; ++i) region.ring(i).read.store(region.ring(i).write.load());
}

double bench_range(tr::Region& region, int reps, int n) {
  // Warm-up: touch the whole ring once, as a long run does; first-touch page
  // faults are not the recording path's cost.
  for (uint64_t i = 0; i < region.header().ring_capacity; i += 2 * static_cast<uint64_t>(n)) {
    drain_everything(region);
    for (int k = 0; k < n; ++k) {
      TC_TRACE_RANGE("bench.range");
    }
  }
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    drain_everything(region);  // untimed: the collector's job
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      TC_TRACE_RANGE("bench.range");
    }
    v.push_back(ns_since(t0, n));
  }
  drain_everything(region);
  return median(v);
}

#if TC_BENCH_NVTX
// NVTX push+pop, in a fork()ed child (NVTX decides once per process whether a
// tool is attached): with no injection library, or captured by libtc_nvtx
// into a shared region like tc-profile's, drained between repetitions.
double bench_nvtx(bool captured, int reps, int n) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::unique_ptr<tr::Region> region;
    unsetenv("NVTX_INJECTION64_PATH");
    if (captured) {
      std::string err;
      region = tr::Region::create_shared(4, 1u << 16, &err);
      if (!region) _exit(2);
      setenv("TC_PROFILE_FD", std::to_string(region->fd()).c_str(), 1);
      std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
      setenv("NVTX_INJECTION64_PATH", (exe.parent_path().parent_path() / "lib" / "libtc_nvtx.so").c_str(), 1);
    }
    auto drain = [&] {
      if (region) drain_everything(*region);
    };
    for (int w = 0; w < 4; ++w) {  // warm-up: touch the ring, define the site
      drain();
      for (int k = 0; k < n; ++k) {
        nvtxRangePushA("bench.nvtx");
        nvtxRangePop();
      }
    }
    std::vector<double> v;
    for (int r = 0; r < reps; ++r) {
      drain();
      auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) {
        nvtxRangePushA("bench.nvtx");
        nvtxRangePop();
      }
      v.push_back(ns_since(t0, n));
    }
    // Captured means it went into the ring: the last repetition's 2n slots.
    uint64_t written = 0;
    if (region) {
      for (uint32_t i = 0; i < region->header().ring_count; ++i) written += region->ring(i).write.load() - region->ring(i).read.load();
    }
    double result = captured && written < 2 * static_cast<uint64_t>(n) ? -2 : median(v);
    (void)!write(fds[1], &result, sizeof result);
    _exit(0);
  }
  close(fds[1]);
  double result = -1;
  if (read(fds[0], &result, sizeof result) != sizeof result) result = -1;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return result;
}
#endif

struct Ingest {
  double events_per_s;
  uint64_t events;
};

Ingest bench_ingest(const std::string& path, int threads, int ranges_per_thread) {
  std::string err;
  // Big enough rings that the producers never wait: this measures the collector alone.
  uint64_t capacity = 1;
  while (capacity < static_cast<uint64_t>(ranges_per_thread) * 2 + 1024) capacity <<= 1;
  auto region = tr::Region::create_private(static_cast<uint32_t>(threads), capacity, &err);
  if (!region) {
    std::fprintf(stderr, "tc-bench-trace: %s\n", err.c_str());
    std::exit(1);
  }
  tr::detail::activate(region.get());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([ranges_per_thread] {
      for (int i = 0; i < ranges_per_thread; ++i) {
        TC_TRACE_RANGE_ARG("bench.ingest", i);
      }
    });
  }
  for (auto& th : pool) th.join();
  tr::detail::deactivate();

  std::filesystem::remove(path);
  auto t0 = Clock::now();
  auto writer = tc::store::Writer::create(path, {.overwrite = true});
  if (!writer.ok()) {
    std::fprintf(stderr, "tc-bench-trace: %s\n", writer.status().message().c_str());
    std::exit(1);
  }
  tc::collect::Collector c(*region, **writer, tc::collect::gather_run_info({"tc-bench-trace"}, "bench"));
  tc::Status s = c.begin();
  if (s.ok()) s = c.finish({.exit_code = 0, .exit_signal = std::nullopt, .complete = true});
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!s.ok()) {
    std::fprintf(stderr, "tc-bench-trace: %s\n", s.message().c_str());
    std::exit(1);
  }
  region.release();  // threads' ring pointers may outlive us; keep it mapped
  return {static_cast<double>(c.stats().events) / secs, c.stats().events};
}

}  // namespace

int bench_load(uint64_t events, int threads) {
  std::string err;
  auto region = tr::Region::create_shared(64, 1u << 16, &err);
  if (!region) {
    std::fprintf(stderr, "tc-bench-trace: %s\n", err.c_str());
    return 1;
  }
  std::string dir = (std::filesystem::temp_directory_path() / ("tc-bench-load-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/load.tcdb";
  auto writer = tc::store::Writer::create(path, {.overwrite = true});
  if (!writer.ok()) {
    std::fprintf(stderr, "tc-bench-trace: %s\n", writer.status().message().c_str());
    return 1;
  }
  tc::collect::Collector c(*region, **writer, tc::collect::gather_run_info({"tc-bench-trace", "--load"}, "bench"));
  if (tc::Status s = c.begin(); !s.ok()) {
    std::fprintf(stderr, "tc-bench-trace: %s\n", s.message().c_str());
    return 1;
  }
  int report[2];
  if (pipe(report) != 0) return 1;
  auto t0 = Clock::now();
  pid_t child = fork();
  if (child == 0) {
    close(report[0]);
    tr::detail::activate(region.get(), true);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      uint64_t n = events / threads + (static_cast<uint64_t>(t) < events % threads ? 1 : 0);
      pool.emplace_back([n] {
        for (uint64_t i = 0; i < n; ++i) {
          TC_TRACE_RANGE_ARG("bench.load", i);
        }
      });
    }
    for (auto& th : pool) th.join();
    uint64_t dropped = tr::dropped_events();
    (void)!write(report[1], &dropped, sizeof dropped);
    _exit(0);
  }
  close(report[1]);
  // tc-profile's loop: drain at once while busy, nap when the rings are quiet.
  int status = 0;
  for (;;) {
    uint64_t n = *c.drain();
    if (n < (1u << 16) / 16) std::this_thread::sleep_for(std::chrono::milliseconds(n == 0 ? 10 : 5));
    if (waitpid(child, &status, WNOHANG) == child) break;
  }
  while (*c.drain() > 0) {
  }
  double drained_s = std::chrono::duration<double>(Clock::now() - t0).count();
  uint64_t producer_dropped = 0;
  (void)!read(report[0], &producer_dropped, sizeof producer_dropped);
  auto t1 = Clock::now();
  tc::Status s = c.finish({.exit_code = 0, .exit_signal = std::nullopt, .complete = true});
  double finalize_s = std::chrono::duration<double>(Clock::now() - t1).count();
  if (!s.ok()) std::fprintf(stderr, "tc-bench-trace: %s\n", s.message().c_str());
  tc::collect::CollectorStats st = c.stats();
  std::printf("tc-bench-trace --load: %llu range events from %d threads (one process) into a store by a collector process\n\n",
              static_cast<unsigned long long>(events), threads);
  std::printf("| what                                | result            |\n");
  std::printf("|-------------------------------------|-------------------|\n");
  std::printf("| events stored                       | %17llu |\n", static_cast<unsigned long long>(st.events));
  std::printf("| events dropped (producers)          | %17llu |\n", static_cast<unsigned long long>(producer_dropped));
  std::printf("| events dropped (store: run table)   | %17llu |\n", static_cast<unsigned long long>(st.dropped));
  std::printf("| recording + drain                   | %15.1f s |\n", drained_s);
  std::printf("| sustained ingest                    | %9.2f M ev/s |\n", static_cast<double>(st.events) / drained_s / 1e6);
  std::printf("| finalize (indexes, one file)        | %15.1f s |\n", finalize_s);
  std::filesystem::remove_all(dir);
  return s.ok() && producer_dropped == 0 && st.dropped == 0 && st.events == events ? 0 : 1;
}

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (!tr::kCompiledIn) {
    std::fprintf(stderr, "tc-bench-trace: recording is compiled out (TC_TRACE=OFF); build with TC_TRACE=ON\n");
    return 1;
  }
  if (argc > 1 && std::strcmp(argv[1], "--load") == 0) {
    uint64_t events = 50'000'000;
    int threads = 8;
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
        threads = std::max(1, std::atoi(argv[++i]));
      } else {
        events = std::strtoull(argv[i], nullptr, 10);
      }
    }
    return bench_load(events, threads);
  }
  const int reps = quick ? 51 : 201;
  const int n = 16384;  // ranges per repetition: 2n slots fill half of a default ring
  std::string err;
  // tc-profile's default ring: 65536 slots (2 MiB), drained between repetitions.
  auto region = tr::Region::create_private(4, 1u << 16, &err);
  if (!region) {
    std::fprintf(stderr, "tc-bench-trace: %s\n", err.c_str());
    return 1;
  }
  tr::detail::activate(region.get());
  double floor_ns = bench_clock_pair(reps, n);
  double on_ns = bench_range(*region, reps, n);
  tr::detail::deactivate();
  double off_ns = bench_range(*region, reps, n);
  region.release();
#if TC_BENCH_NVTX
  double nvtx_none_ns = bench_nvtx(false, reps, n);
  double nvtx_ns = bench_nvtx(true, reps, n);
  if (nvtx_ns < 0) {
    std::fprintf(stderr, "tc-bench-trace: NVTX was not captured (%s)\n", nvtx_ns == -2 ? "libtc_nvtx did not write the ring" : "the child failed");
    return 1;
  }
#endif

  std::string dir = (std::filesystem::temp_directory_path() / "tc-bench-trace").string();
  std::filesystem::create_directories(dir);
  const int rows = quick ? 500000 : 2000000;
  std::vector<double> raw, ingest;
  uint64_t events = 0;
  for (int r = 0; r < (quick ? 3 : 5); ++r) {
    auto rate = tc::store::raw_insert_rate(dir + "/raw.sqlite", rows);
    if (!rate.ok()) {
      std::fprintf(stderr, "tc-bench-trace: %s\n", rate.status().message().c_str());
      return 1;
    }
    raw.push_back(*rate);
    Ingest in = bench_ingest(dir + "/ingest.tcdb", 4, rows / 4);
    ingest.push_back(in.events_per_s);
    events = in.events;
  }
  std::filesystem::remove_all(dir);

  const char* clock = static_cast<tr::ClockKind>(tr::preferred_clock()) == tr::ClockKind::kTsc ? "rdtsc" : "clock_gettime";
  std::printf("tc-bench-trace (%s; medians of %d runs)\n\n", clock, reps);
  std::printf("| what                          | result          | vs floor / peer |\n");
  std::printf("|-------------------------------|-----------------|-----------------|\n");
  std::printf("| 2 timestamp reads (%-13s)| %8.1f ns      |                 |\n", clock, floor_ns);
  std::printf("| range begin+end, recording on | %8.1f ns      | %5.2fx floor    |\n", on_ns, on_ns / floor_ns);
  std::printf("| range begin+end, recording off| %8.2f ns      |                 |\n", off_ns);
#if TC_BENCH_NVTX
  std::printf("| NVTX push+pop, no tool        | %8.2f ns      |                 |\n", nvtx_none_ns);
  std::printf("| NVTX push+pop, libtc_nvtx     | %8.1f ns      | %5.2fx floor, %4.2fx tc range |\n", nvtx_ns, nvtx_ns / floor_ns, nvtx_ns / on_ns);
#endif
  std::printf("| raw SQLite insert (%d rows)  | %8.2f M rows/s|                 |\n", rows, median(raw) / 1e6);
  std::printf("| ingest rings -> finalized store| %8.2f M ev/s  | %5.2fx raw      |\n", median(ingest) / 1e6, median(ingest) / median(raw));
  std::printf("\n(ingest: %llu range events from 4 threads per run, written, indexed and finalized)\n", static_cast<unsigned long long>(events));
  return 0;
}
