// tc's single-precision matrix product on the CPU (private): what generated
// code's matrix products and its fused attention call, through the runtime
// table (runtime_api.h). One thread per call; the caller splits a large
// product over the pool.
//
// Why tc has its own: the products are most of a training step, and a BLAS
// library picks its kernels from a table of the CPUs it knows. Debian 12's
// OpenBLAS 0.3.21 does not know AMD's Zen 5 and runs its AVX2 (Haswell)
// kernel there, at about half of what the AVX-512 units do (about 110
// against 210 GFLOP/s on one core; the Transformer step 7.0 ms against 4.2
// ms with OpenBLAS forced to its AVX-512 kernel). tc decides from the
// instruction set itself: the blocked kernel below uses AVX-512F where the
// CPU has it and AVX2 with FMA where it has that, and hands everything else
// to cblas_sgemm.
//
// The eager executor keeps calling cblas_sgemm: it is the oracle the
// compiled path is checked against, so the two do not share this code.
#pragma once

#include <cstdint>
#include <string>

namespace tc::detail::cpu {

// Row-major C[m, n] = alpha * op(A) * op(B) + beta * C, as
// cblas_sgemm(CblasRowMajor, ...) computes it: op(A) is A ([m, k], lda >=
// k) or, with ta, the transpose of A ([k, m], lda >= m); likewise op(B)
// ([k, n] or, with tb, [n, k]); ldc >= n. With beta == 0, C is only
// written (a NaN there does not survive); with alpha == 0 or k == 0, A and
// B are not read. Threads may call it at once (each packs into its own
// buffer). Never throws.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc);

// The kernels' revision, raised whenever a change makes them faster or
// slower: the roofline probe's cached result names it, so a ceiling measured
// on an older kernel is measured again (2: B packed with vectors, 2026-12-06;
// kernels then ran above the cached probe).
constexpr int kGemmRevision = 2;

// The kernels sgemm can run. blas: cblas_sgemm of the BLAS tc links.
enum class GemmKernel { blas, avx2, avx512 };
const char* gemm_kernel_name(GemmKernel k);

// Whether this CPU (and build) can run the kernel.
bool gemm_kernel_available(GemmKernel k);
// The widest vector instruction set this CPU (and build) has for products:
// "avx512f", "avx2+fma" or "baseline" (the roofline records it).
const char* cpu_isa();
// One line naming the CPU for benchmark tables: its model name (from
// /proc/cpuinfo; "unknown CPU" without one), the CPUs this process may use,
// cpu_isa() and the product kernel gemm_kernel() chose, with TC_GEMM when
// set, e.g. "Intel(R) Xeon(R) Processor, 2 CPUs, ISA avx512f, product
// kernel avx2 (TC_GEMM=avx2)". A TC_GEMM this CPU refuses is named as such
// instead of throwing.
std::string machine_line();

// The kernel sgemm uses, chosen once per process: TC_GEMM (avx512, avx2 or
// blas) when set, else the widest the CPU has. Throws tc::Error for a
// TC_GEMM value that is unknown or names a kernel this CPU lacks; the CPU
// backend asks before it runs anything, so sgemm itself never meets one.
GemmKernel gemm_kernel();

// sgemm on a given kernel (tests and benchmarks compare them); false, with
// nothing computed, when the kernel is not available.
bool sgemm_on(GemmKernel kernel, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// sgemm_on split over the pool as generated code splits a product: by
// columns in units of 32 when n >= m, else by rows in units of 16 (the
// roofline probe and tc-bench-gemm); false when the kernel is not available.
bool parallel_sgemm_on(GemmKernel kernel, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Held while generated code runs: BLAS on one thread (the kernel may be
// BLAS, and the pool already splits every product). Two pools on a 2-core
// machine (then OpenMP's spinning workers and OpenBLAS's) took the cores
// from each other: MLP step 3.9 ms against 2.6 ms with one. The count
// before is restored, so the eager executor keeps its own.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_ = 0;
};

}  // namespace tc::detail::cpu
