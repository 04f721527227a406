// tc-bench-gemm: GFLOP/s of tc's matrix-product kernels (compiler/src/backend/cpu/gemm.h)
// against the BLAS tc links (cblas_sgemm), on the products of the benchmarked
// training steps, on one thread and split over the pool (by columns or
// rows) as generated code splits them. Each cell is the median of --rounds timed
// batches; the kernels alternate within a round. OPENBLAS_CORETYPE picks
// OpenBLAS's kernel for the blas column (OpenBLAS reads it when it loads).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/gemm.h"  // compiler/src
#include "backend/cpu/pool.h"

namespace cpu = tc::detail::cpu;

namespace {

struct Shape {
  const char* what;
  bool ta, tb;
  int64_t m, n, k;
};

// The products of one training step (forward, input and weight gradients).
const Shape kShapes[] = {
    {"MLP layer 1 forward", false, false, 128, 512, 784},
    {"MLP layer 2 forward", false, false, 128, 512, 512},
    {"MLP layer 1 weight grad", true, false, 784, 512, 128},
    {"MLP layer 2 input grad", false, true, 128, 512, 512},
    {"Transformer QKV forward", false, false, 1024, 384, 128},
    {"Transformer FF1 forward", false, false, 1024, 512, 128},
    {"Transformer FF2 forward", false, false, 1024, 128, 512},
    {"Transformer FF2 input grad", false, true, 1024, 512, 128},
    {"Transformer FF1 weight grad", true, false, 128, 512, 1024},
    {"Transformer FF2 weight grad", true, false, 512, 128, 1024},
    {"Transformer QKV weight grad", true, false, 128, 384, 1024},
    {"attention scores (one head)", false, true, 64, 64, 32},
    {"attention values (one head)", false, false, 64, 32, 64},
    {"square 384", false, false, 384, 384, 384},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GFLOP/s of tc's matrix-product kernels against the BLAS tc links, on the products of the benchmarked "
               "training steps: one thread, and split over tc's pool by columns or rows, as generated code splits them. Kernels this CPU lacks are left out."};
  int rounds = 7;
  double batch_ms = 20;
  app.add_option("--rounds", rounds, "Timed batches per cell (the median is shown)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch-ms", batch_ms, "Length of one timed batch")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<cpu::GemmKernel> kernels;
  for (auto k : {cpu::GemmKernel::avx512, cpu::GemmKernel::avx2, cpu::GemmKernel::blas})
    if (cpu::gemm_kernel_available(k)) kernels.push_back(k);
  cpu::SingleThreadedBlas one;  // the pool splits; BLAS runs on one thread, as in a compiled graph

  std::printf("on %s\n", cpu::machine_line().c_str());
  std::printf("GFLOP/s, median of %d batches of %.0f ms; threads: 1, then %d (tc's pool, split as generated code splits)\n",
              rounds, batch_ms, cpu::pool_threads());
  std::printf("%-30s %5s %5s %5s %2s", "product", "m", "n", "k", "t");
  for (int threads : {1, cpu::pool_threads()})
    for (auto k : kernels) std::printf(" %9s", (std::string(cpu::gemm_kernel_name(k)) + "/" + std::to_string(threads)).c_str());
  std::printf("\n");
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Shape& s : kShapes) {
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    std::vector<float> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n)), c(static_cast<std::size_t>(s.m * s.n));
    for (float& v : a) v = u(g);
    for (float& v : b) v = u(g);
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    std::printf("%-30s %5lld %5lld %5lld %d%d", s.what, static_cast<long long>(s.m), static_cast<long long>(s.n),
                static_cast<long long>(s.k), s.ta, s.tb);
    for (bool parallel : {false, true}) {
      std::vector<std::vector<double>> rates(kernels.size());
      for (int r = 0; r < rounds; ++r)
        for (std::size_t i = 0; i < kernels.size(); ++i) {
          auto once = [&] {
            (parallel ? cpu::parallel_sgemm_on : cpu::sgemm_on)(kernels[i], s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda,
                                                                 b.data(), ldb, 0.0f, c.data(), s.n);
          };
          once();
          auto t0 = std::chrono::steady_clock::now();
          double secs = 0;
          int reps = 0;
          do {
            once();
            ++reps;
            secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          } while (secs * 1e3 < batch_ms);
          rates[i].push_back(flops * reps / secs / 1e9);
        }
      for (auto& r : rates) std::printf(" %9.1f", median(r));
    }
    std::printf("\n");
  }
  return 0;
}
