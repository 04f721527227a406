// tc's matrix product (compiler/src/backend/cpu/gemm.h) on every kernel this
// CPU has, against a product in double precision: every transpose, edges of
// every blocking level (rows and columns short of a tile, depth beyond one
// block, columns beyond one packing block), leading dimensions wider than
// the matrices, alpha and beta as BLAS defines them, and threads at once.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/gemm.h"  // compiler/src

namespace cpu = tc::detail::cpu;
using cpu::GemmKernel;

namespace {

struct Case {
  bool ta = false, tb = false;
  int64_t m = 1, n = 1, k = 1;
  float alpha = 1, beta = 0;
  int64_t pad = 0;  // extra columns of every leading dimension
};

std::string describe(const Case& c) {
  return "ta " + std::to_string(c.ta) + " tb " + std::to_string(c.tb) + " m " + std::to_string(c.m) + " n " +
         std::to_string(c.n) + " k " + std::to_string(c.k) + " alpha " + std::to_string(c.alpha) + " beta " +
         std::to_string(c.beta) + " pad " + std::to_string(c.pad);
}

// The operands of one case, C's padding filled with a sentinel that must survive.
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c;
  static constexpr float kSentinel = -12345.0f;
  Operands(const Case& c, uint64_t seed) {
    lda = (c.ta ? c.m : c.k) + c.pad;
    ldb = (c.tb ? c.k : c.n) + c.pad;
    ldc = c.n + c.pad;
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    a.resize(static_cast<std::size_t>((c.ta ? c.k : c.m) * lda));
    b.resize(static_cast<std::size_t>((c.tb ? c.n : c.k) * ldb));
    this->c.resize(static_cast<std::size_t>(c.m * ldc));
    for (float& v : a) v = u(g);
    for (float& v : b) v = u(g);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < ldc; ++j) this->c[static_cast<std::size_t>(i * ldc + j)] = j < c.n ? u(g) : kSentinel;
  }
  float A(const Case& c, int64_t i, int64_t p) const { return a[static_cast<std::size_t>(c.ta ? p * lda + i : i * lda + p)]; }
  float B(const Case& c, int64_t p, int64_t j) const { return b[static_cast<std::size_t>(c.tb ? j * ldb + p : p * ldb + j)]; }
};

// Checks C after the product against the double-precision one from C0, within
// a bound that grows with the depth (float rounding of k products and sums).
::testing::AssertionResult matches(const Case& c, const Operands& before, const std::vector<float>& after) {
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < before.ldc; ++j) {
      const float got = after[static_cast<std::size_t>(i * before.ldc + j)];
      if (j >= c.n) {
        if (got != Operands::kSentinel) return ::testing::AssertionFailure() << "wrote C(" << i << ", " << j << ") beyond n";
        continue;
      }
      double dot = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        dot += static_cast<double>(before.A(c, i, p)) * before.B(c, p, j);
        mag += std::fabs(static_cast<double>(before.A(c, i, p)) * before.B(c, p, j));
      }
      const double c0 = before.c[static_cast<std::size_t>(i * before.ldc + j)];
      const double want = c.alpha * dot + (c.beta == 0 ? 0.0 : c.beta * c0);
      const double tol = 1e-6 * (4 + static_cast<double>(c.k)) * (std::fabs(c.alpha) * mag + std::fabs(c.beta * c0) + 1e-30);
      if (!(std::fabs(got - want) <= tol))
        return ::testing::AssertionFailure() << "C(" << i << ", " << j << ") = " << got << ", want " << want << " (tolerance "
                                             << tol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

class Gemm : public ::testing::TestWithParam<GemmKernel> {
 protected:
  void SetUp() override {
    if (!cpu::gemm_kernel_available(GetParam()))
      GTEST_SKIP() << "this CPU cannot run the " << cpu::gemm_kernel_name(GetParam()) << " kernel";
  }
  ::testing::AssertionResult product(const Case& c, uint64_t seed = 1) {
    Operands o(c, seed);
    std::vector<float> out = o.c;
    if (!cpu::sgemm_on(GetParam(), c.ta, c.tb, c.m, c.n, c.k, c.alpha, o.a.data(), o.lda, o.b.data(), o.ldb, c.beta, out.data(),
                       o.ldc))
      return ::testing::AssertionFailure() << "kernel not available";
    return matches(c, o, out) << " (" << describe(c) << ")";
  }
};

}  // namespace

// Sizes on both sides of every tile and block edge: tiles of 6 or 8 rows and
// 16 or 32 columns, 256 of depth per block, 96 or 128 rows per block.
TEST_P(Gemm, EveryTransposeAndEdgeMatchesDoublePrecision) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : {1, 6, 7, 9, 17, 130})
        for (int64_t n : {1, 15, 16, 31, 33, 65})
          for (int64_t k : {1, 3, 32, 257}) {
            Case c{ta, tb, m, n, k, 1.0f, 0.0f, 0};
            ASSERT_TRUE(product(c));
          }
}

TEST_P(Gemm, AlphaBetaAndWideLeadingDimensions) {
  for (float alpha : {1.0f, -0.5f})
    for (float beta : {0.0f, 1.0f, 0.3f})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          Case c{ta, tb, 37, 45, 300, alpha, beta, 5};
          ASSERT_TRUE(product(c));
        }
}

// The shapes of the README's Transformer step and MLP (forward, the
// gradients, the fused update with beta 1 and alpha -lr).
TEST_P(Gemm, TrainingStepShapes) {
  const Case cases[] = {{false, false, 1024, 384, 128, 1, 0, 0}, {false, true, 1024, 128, 512, 1, 0, 0},
                        {true, false, 128, 512, 1024, -0.01f, 1, 0}, {false, false, 128, 512, 784, 1, 0, 0},
                        {true, false, 784, 512, 128, -0.01f, 1, 0}, {false, true, 64, 64, 32, 0.17f, 0, 0}};
  for (const Case& c : cases) ASSERT_TRUE(product(c));
}

// More columns than one packing block (2048) and more rows than one block.
TEST_P(Gemm, BeyondOnePackingBlock) {
  ASSERT_TRUE(product({false, false, 3, 2100, 5, 1, 0, 0}));
  ASSERT_TRUE(product({false, true, 3, 2100, 5, 1, 0.5f, 3}));
  ASSERT_TRUE(product({true, false, 300, 40, 600, 2, 1, 0}));
}

// beta 0: C is written, never read (a NaN there is gone); alpha 0 or depth
// 0: A and B are never read, C becomes beta * C.
TEST_P(Gemm, BlasConventionsForZeroAlphaBetaAndDepth) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a(12, 1.0f), b(12, 2.0f), c(9, nan);
  ASSERT_TRUE(cpu::sgemm_on(GetParam(), false, false, 3, 3, 4, 1.0f, a.data(), 4, b.data(), 3, 0.0f, c.data(), 3));
  for (float v : c) EXPECT_EQ(v, 8.0f);
  std::vector<float> bad(12, nan);
  for (float& v : c) v = 2.0f;
  ASSERT_TRUE(cpu::sgemm_on(GetParam(), false, false, 3, 3, 4, 0.0f, bad.data(), 4, bad.data(), 3, 0.5f, c.data(), 3));
  for (float v : c) EXPECT_EQ(v, 1.0f);
  ASSERT_TRUE(cpu::sgemm_on(GetParam(), false, false, 3, 3, 0, 1.0f, bad.data(), 1, bad.data(), 3, 0.0f, c.data(), 3));
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

// Split over the pool by columns as generated code splits a product (the
// roofline probe and tc-bench-gemm): the last unit short, B transposed or not.
TEST_P(Gemm, SplitOverThePoolByColumns) {
  for (bool tb : {false, true}) {
    Case c{false, tb, 70, 200, 90, 1.5f, 0.5f, 2};
    Operands o(c, 5);
    std::vector<float> out = o.c;
    ASSERT_TRUE(cpu::parallel_sgemm_on(GetParam(), c.ta, c.tb, c.m, c.n, c.k, c.alpha, o.a.data(), o.lda, o.b.data(), o.ldb,
                                       c.beta, out.data(), o.ldc));
    EXPECT_TRUE(matches(c, o, out)) << describe(c);
  }
}

// Each thread packs into its own buffer: products of different widths at once.
TEST_P(Gemm, ThreadsAtOnce) {
  std::vector<::testing::AssertionResult> results(4, ::testing::AssertionSuccess());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20 && results[static_cast<std::size_t>(t)]; ++r)
        results[static_cast<std::size_t>(t)] = product({t % 2 == 1, t >= 2, 40 + t, 64 * (t + 1) + 7, 96, 1, 0, 0}, 10 + t);
    });
  for (auto& th : threads) th.join();
  for (const auto& r : results) EXPECT_TRUE(r);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Gemm, ::testing::Values(GemmKernel::avx512, GemmKernel::avx2, GemmKernel::blas),
                         [](const auto& info) { return std::string(cpu::gemm_kernel_name(info.param)); });

// Benchmark tables say which CPU they ran on (tc-bench-compiler, tc-bench-gemm):
// the model, the ISA and the product kernel in use.
TEST(GemmChoice, TheMachineLineNamesTheCpuItsIsaAndTheKernel) {
  const std::string line = cpu::machine_line();
  EXPECT_NE(line.find(std::string("ISA ") + cpu::cpu_isa()), std::string::npos) << line;
  EXPECT_NE(line.find(std::string("product kernel ") + cpu::gemm_kernel_name(cpu::gemm_kernel())), std::string::npos) << line;
  EXPECT_NE(line.find(" CPUs, "), std::string::npos) << line;
  std::ifstream info("/proc/cpuinfo");
  for (std::string l; std::getline(info, l);) {
    if (l.rfind("model name", 0) != 0) continue;
    std::string model = l.substr(l.find(':') + 2);
    while (!model.empty() && model.back() == ' ') model.pop_back();
    EXPECT_EQ(line.rfind(model, 0), 0u) << line << " should start with " << model;
    break;
  }
}

// The kernel a process uses: the widest this CPU has unless TC_GEMM says.
TEST(GemmChoice, TheDefaultIsTheWidestKernelThisCpuHas) {
  if (const char* e = std::getenv("TC_GEMM"); e && *e) GTEST_SKIP() << "TC_GEMM is set";
  const GemmKernel want = cpu::gemm_kernel_available(GemmKernel::avx512) ? GemmKernel::avx512
                          : cpu::gemm_kernel_available(GemmKernel::avx2) ? GemmKernel::avx2
                                                                         : GemmKernel::blas;
  EXPECT_EQ(cpu::gemm_kernel(), want);
}
