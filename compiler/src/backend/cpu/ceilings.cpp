// The CPU's roofline: how fast its matrix-product path (tc's sgemm, gemm.h,
// on the kernel TC_GEMM chose, split over the pool as generated code splits
// it) and its memory (a streaming copy on every pool thread) go. Measured
// once per machine key (compiler, flags, CPU), product kernel and pool size
// in about 0.2 s, best of several alternating trials, and kept in the code
// cache as ceilings3-<key>-<kernel>-r<revision>-t<threads>.txt (revision:
// kGemmRevision, so a faster kernel is measured again). (ceilings2 files were
// one per kernel whatever the thread count, so a one-thread run's probe was
// the ceiling of every later run on all cores; they are no longer read.)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "../cache/code_cache.h"
#include "../cache/disk.h"
#include "cpu.h"
#include "gemm.h"
#include "pool.h"

namespace tc::detail::cpu {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A trial of each probe runs for a few milliseconds and keeps the best of
// its calls, each about a millisecond: on a loaded machine a call during
// which every pool thread had its core still happens, where a whole batch
// rarely does (at load 11 on 2 cores, the avx512 kernel: 46 GFLOP/s as the
// best of six 12 ms batches, 186-279 from single calls). The trials alternate
// (a product, a copy, a product, ...) and the best of all counts.
constexpr int kTrials = 6;
constexpr double kTrialSeconds = 0.012;

// Batches of 384 x 384 x n products, n a multiple of 32 giving every pool
// thread at least 4 column units (generated code splits its products over
// the pool by 32 columns), on the chosen kernel. Large enough for the blocked
// kernel's peak, small enough to keep the calibration short.
struct ProductProbe {
  GemmKernel kernel;
  int64_t m = 384, n, k = 384;
  std::vector<float> a, b, c;
  ProductProbe(GemmKernel kernel, int threads)
      : kernel(kernel), n(32 * std::clamp<int64_t>(4 * threads, 12, 128)), a(static_cast<std::size_t>(m * k), 0.5f),
        b(static_cast<std::size_t>(k * n), 0.25f), c(static_cast<std::size_t>(m * n), 0.0f) {}
  void once() { parallel_sgemm_on(kernel, false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n); }
  double trial() {
    SingleThreadedBlas one;  // as in a compiled graph, where the kernel may be BLAS
    const auto start = std::chrono::steady_clock::now();
    double best = 0;
    do {
      auto t0 = std::chrono::steady_clock::now();
      once();
      best = std::max(best, 2.0 * static_cast<double>(m * n * k) / seconds_since(t0) / 1e9);
    } while (seconds_since(start) < kTrialSeconds);
    return best;
  }
};

// A streaming copy on every pool thread, each copying its own slice `reps`
// times in one parallel region: at three working-set sizes (in L2, in the
// last-level cache, beyond it), since a step's elementwise kernels run on
// tensors of every size and the ceiling is the best they can reach. A copy
// moves each byte twice (read and write).
struct CopyProbe {
  static constexpr std::size_t kSizes[] = {std::size_t{256} << 10, std::size_t{4} << 20, std::size_t{64} << 20};
  int threads;
  std::vector<char> src, dst;
  struct Region {
    CopyProbe* self;
    std::size_t bytes;
    int reps;
    static void run(void* ctx, int64_t lo, int64_t hi) {
      const auto& r = *static_cast<const Region*>(ctx);
      const std::size_t chunk = r.bytes / static_cast<std::size_t>(r.self->threads);
      for (int64_t t = lo; t < hi; ++t)
        for (int i = 0; i < r.reps; ++i)
          std::memcpy(r.self->dst.data() + t * chunk, r.self->src.data() + t * chunk, chunk);
    }
  };
  explicit CopyProbe(int threads) : threads(threads), src(kSizes[2], 1), dst(kSizes[2], 0) {}
  double copy(std::size_t bytes, int reps) {
    Region r{this, bytes & ~std::size_t{63}, reps};
    auto t0 = std::chrono::steady_clock::now();
    pool_parallel_for(threads, 1, 1, &Region::run, &r);
    return 2.0 * static_cast<double>(r.bytes) * reps / seconds_since(t0) / 1e9;
  }
  // The best call of any size, each size copied for about a third of a
  // trial in calls of about half a millisecond (at 20 GB/s).
  double trial() {
    double best = 0;
    for (std::size_t bytes : kSizes) {
      const int reps = std::max(1, static_cast<int>(5e6 / static_cast<double>(bytes)));
      const auto start = std::chrono::steady_clock::now();
      do best = std::max(best, copy(bytes, reps));
      while (seconds_since(start) < kTrialSeconds / 3);
    }
    return best;
  }
};

Measured probe(GemmKernel kernel, int threads) {
  ProductProbe products(kernel, threads);
  CopyProbe copies(threads);
  products.once();                 // warm up: the pool starts, the kernel's buffers are allocated
  copies.copy(CopyProbe::kSizes[2], 1);  // fault the pages in
  Measured m;
  for (int trial = 0; trial < kTrials; ++trial) {
    m.gflops = std::max(m.gflops, products.trial());
    m.gbps = std::max(m.gbps, copies.trial());
  }
  return m;
}

bool read_cached(const std::string& path, Measured& m) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  double f = 0, g = 0;
  if (std::sscanf(buf, "tc ceilings 3\ngflops %lf\ngbps %lf\n", &f, &g) != 2 || !(f > 0) || !(g > 0) || f > 1e7 || g > 1e6) return false;
  m.gflops = f, m.gbps = g, m.cached = true;
  return true;
}

}  // namespace

Measured measure_ceilings() {
  std::string dir, name;
  GemmKernel kernel = GemmKernel::blas;
  const int threads = std::max(1, pool_threads());
  try {
    kernel = gemm_kernel();
    // The thread count is part of the name: a probe of a one-thread run is no ceiling for a run on all cores.
    name = "ceilings3-" + cache::machine_key() + "-" + gemm_kernel_name(kernel) + "-r" + std::to_string(kGemmRevision) + "-t" + std::to_string(threads) + ".txt";
    dir = cache::directory();
  } catch (...) {
    dir.clear();  // no usable cache directory: measure every time (the build will say why)
  }
  Measured m;
  if (dir.empty() || !read_cached(dir + "/" + name, m)) {
    m = probe(kernel, threads);
    if (!dir.empty()) {
      char text[128];
      std::snprintf(text, sizeof text, "tc ceilings 3\ngflops %.3f\ngbps %.3f\n", m.gflops, m.gbps);
      cache::put(dir, name, text);
    }
  }
  m.isa = cpu_isa();
  m.kernel = gemm_kernel_name(kernel);
  m.threads = threads;
  return m;
}

}  // namespace tc::detail::cpu
