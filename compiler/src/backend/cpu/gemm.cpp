#include "gemm.h"

#include <cblas.h>
#include <dlfcn.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "pool.h"
#include "tc/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define TC_GEMM_X86 1
#else
#define TC_GEMM_X86 0
#endif

namespace tc::detail::cpu {
namespace {

#if TC_GEMM_X86
// Each instruction set's copy of the kernel is compiled for that set only
// (`#pragma GCC target`) and runs only after the CPU said it has it. The
// copies live in anonymous namespaces, so no inline function compiled for
// AVX-512 can stand in for another translation unit's copy at link time.
//
// The kernel's vector operations on V are the same intrinsics in each set
// but for their prefix (P: _mm512, _mm256); only the masked ones differ.
#define TC_GEMM_VECTOR_OPS(P)                                     \
  inline V vzero() { return P##_setzero_ps(); }                  \
  inline V vset1(float x) { return P##_set1_ps(x); }             \
  inline V vload(const float* p) { return P##_load_ps(p); }      \
  inline V vloadu(const float* p) { return P##_loadu_ps(p); }    \
  inline void vstoreu(float* p, V v) { P##_storeu_ps(p, v); }    \
  inline V vfma(V a, V b, V c) { return P##_fmadd_ps(a, b, c); } \
  inline V vmul(V a, V b) { return P##_mul_ps(a, b); }

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
namespace avx512 {
using V = __m512;
constexpr int kLanes = 16;
constexpr int kMR = 8;  // 16 accumulators; 12 rows measured no faster, and 8 keeps A's rows within L1's ways
TC_GEMM_VECTOR_OPS(_mm512)
inline __mmask16 first_lanes(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline V vload_n(const float* p, int n) { return _mm512_maskz_loadu_ps(first_lanes(n), p); }
inline void vstore_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, first_lanes(n), v); }
#include "gemm_kernel.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
using V = __m256;
constexpr int kLanes = 8;
constexpr int kMR = 6;  // 12 accumulators + 2 of B + 1 broadcast: 15 of the 16 registers
TC_GEMM_VECTOR_OPS(_mm256)
inline __m256i first_lanes(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
inline V vload_n(const float* p, int n) { return _mm256_maskload_ps(p, first_lanes(n)); }
inline void vstore_n(float* p, V v, int n) { _mm256_maskstore_ps(p, first_lanes(n), v); }
#include "gemm_kernel.inc"
}  // namespace avx2
#pragma GCC pop_options
#undef TC_GEMM_VECTOR_OPS
#endif

// Each thread's packing buffer, grown as needed (at most 2 MiB).
class PackBuffer {
 public:
  ~PackBuffer() { std::free(p_); }
  float* get(int64_t floats) {
    if (floats > cap_) {
      std::free(p_);
      cap_ = 0;
      const std::size_t bytes = (static_cast<std::size_t>(floats) * sizeof(float) + 63) / 64 * 64;
      p_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (p_) cap_ = floats;
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  int64_t cap_ = 0;
};
thread_local PackBuffer pack_buffer;

void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

// C = beta * C, where the product contributes nothing.
void scale(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f)
      std::memset(row, 0, static_cast<std::size_t>(n) * sizeof(float));
    else
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
  }
}

void run(GemmKernel kernel, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
         const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  // Before the BLAS call too: OpenBLAS 0.3.21's SkylakeX kernel (an Intel Xeon with AVX-512, CI's machine on
  // 2026-12-03) multiplies A and B even when alpha is 0, so a NaN in them reached C (gemm_test's conventions).
  if (k <= 0 || alpha == 0.0f) return scale(m, n, beta, c, ldc);
  if (kernel == GemmKernel::blas) return blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#if TC_GEMM_X86
  const bool wide = kernel == GemmKernel::avx512;
  float* buf = pack_buffer.get(wide ? avx512::packed_floats(n, k) : avx2::packed_floats(n, k));
  if (!buf) return blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);  // no memory for the panel: BLAS packs its own
  if (wide)
    avx512::product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, buf);
  else
    avx2::product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, buf);
#else
  blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

// OpenBLAS's thread count, where the BLAS has one (looked up, so another
// BLAS links too).
struct BlasThreads {
  using Set = void (*)(int);
  using Get = int (*)();
  Set set = reinterpret_cast<Set>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  Get get = reinterpret_cast<Get>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
};
const BlasThreads& blas_threads() {
  static const BlasThreads b;
  return b;
}

GemmKernel widest() {
  if (gemm_kernel_available(GemmKernel::avx512)) return GemmKernel::avx512;
  if (gemm_kernel_available(GemmKernel::avx2)) return GemmKernel::avx2;
  return GemmKernel::blas;
}

GemmKernel choose() {
  const char* e = std::getenv("TC_GEMM");
  if (!e || !*e) return widest();
  for (GemmKernel k : {GemmKernel::avx512, GemmKernel::avx2, GemmKernel::blas}) {
    if (std::strcmp(e, gemm_kernel_name(k)) != 0) continue;
    if (!gemm_kernel_available(k))
      throw Error(std::string("tc: TC_GEMM=") + e + ": this CPU cannot run that kernel (the widest it can is " +
                  gemm_kernel_name(widest()) + "); unset TC_GEMM or name one it has");
    return k;
  }
  throw Error(std::string("tc: TC_GEMM=") + e + ": unknown matrix-product kernel; use avx512, avx2 or blas, or unset it");
}

}  // namespace

const char* gemm_kernel_name(GemmKernel k) {
  static constexpr const char* kNames[] = {"blas", "avx2", "avx512"};  // by GemmKernel
  return static_cast<size_t>(k) < std::size(kNames) ? kNames[static_cast<size_t>(k)] : "?";
}

bool gemm_kernel_available(GemmKernel k) {
  switch (k) {
    case GemmKernel::blas: return true;
#if TC_GEMM_X86
    case GemmKernel::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmKernel::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#else
    default: return false;
#endif
  }
  return false;
}

const char* cpu_isa() {
  switch (widest()) {
    case GemmKernel::avx512: return "avx512f";
    case GemmKernel::avx2: return "avx2+fma";
    case GemmKernel::blas: break;
  }
  return "baseline";
}

std::string machine_line() {
  std::string model = "unknown CPU";
  if (FILE* f = std::fopen("/proc/cpuinfo", "re")) {
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "model name", 10) != 0) continue;
      const char* colon = std::strchr(line, ':');
      if (!colon) continue;
      std::string v(colon + 1 + std::strspn(colon + 1, " \t"));
      while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
      if (!v.empty()) model = v;
      break;
    }
    std::fclose(f);
  }
  cpu_set_t set;
  const int cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  std::string kernel;
  try {
    kernel = gemm_kernel_name(gemm_kernel());
  } catch (const Error&) {
    kernel = "refused";
  }
  const char* env = std::getenv("TC_GEMM");
  return model + ", " + std::to_string(cpus) + " CPUs, ISA " + cpu_isa() + ", product kernel " + kernel +
         (env && *env ? std::string(" (TC_GEMM=") + env + ")" : std::string());
}

GemmKernel gemm_kernel() {
  static const GemmKernel chosen = choose();
  return chosen;
}

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  GemmKernel kernel = GemmKernel::blas;
  try {
    kernel = gemm_kernel();
  } catch (const Error&) {
    // Unreachable from generated code (the backend asked first and
    // refused to run); BLAS keeps the promise not to throw.
  }
  run(kernel, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool sgemm_on(GemmKernel kernel, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!gemm_kernel_available(kernel)) return false;
  run(kernel, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return true;
}

bool parallel_sgemm_on(GemmKernel kernel, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!gemm_kernel_available(kernel)) return false;
  // As the C++ emitter splits a product (codegen_cpp.cpp, matmul): by 32 columns when n >= m, else by 16 rows.
  struct Pieces {
    GemmKernel kernel;
    bool ta, tb;
    int64_t m, n, k;
    float alpha;
    const float* a;
    int64_t lda;
    const float* b;
    int64_t ldb;
    float beta;
    float* c;
    int64_t ldc;
    static void columns(void* self, int64_t lo, int64_t hi) {
      const auto& p = *static_cast<const Pieces*>(self);
      const int64_t j0 = lo * 32, j1 = hi * 32 < p.n ? hi * 32 : p.n;
      run(p.kernel, p.ta, p.tb, p.m, j1 - j0, p.k, p.alpha, p.a, p.lda, p.b + (p.tb ? j0 * p.ldb : j0), p.ldb, p.beta, p.c + j0,
          p.ldc);
    }
    static void rows(void* self, int64_t lo, int64_t hi) {
      const auto& p = *static_cast<const Pieces*>(self);
      const int64_t i0 = lo * 16, i1 = hi * 16 < p.m ? hi * 16 : p.m;
      run(p.kernel, p.ta, p.tb, i1 - i0, p.n, p.k, p.alpha, p.a + (p.ta ? i0 : i0 * p.lda), p.lda, p.b, p.ldb, p.beta,
          p.c + i0 * p.ldc, p.ldc);
    }
  } pieces{kernel, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc};
  if (n >= m)
    pool_parallel_for((n + 31) / 32, 1, 2, &Pieces::columns, &pieces);
  else
    pool_parallel_for((m + 15) / 16, 1, 2, &Pieces::rows, &pieces);
  return true;
}

SingleThreadedBlas::SingleThreadedBlas() {
  const BlasThreads& b = blas_threads();
  if (b.set && b.get && (saved_ = b.get()) != 1) b.set(1);
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (saved_ > 1) blas_threads().set(saved_);
}

}  // namespace tc::detail::cpu
