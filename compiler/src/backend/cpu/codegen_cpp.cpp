// The C++ dialect of the kernel IR: plain loops the host compiler vectorizes,
// split across cores by tc's own pool (pool.h: tc_par hands a loop's
// iterations out in chunks), tc's sgemm (gemm.h) for matrix products.
#include <algorithm>
#include <sstream>

#include "../c_render.h"
#include "cpu.h"

namespace tc::detail {
namespace {

// Matrix products below this many flops run on one thread (waking the team
// costs more than it saves: about 0.2 ms of single-core sgemm).
constexpr double kParallelGemmFlops = 1 << 22;

using c_render::ctype;
// Extents of a dynamic program read at run time (c_render.h).
using X = c_render::Extent;
using c_render::at;
using c_render::ext;
using c_render::loop_x;

// What the C++ dialect writes differently from CUDA C.
constexpr c_render::Dialect kCpp{
    .name = "C++", .restrict_kw = "__restrict", .arena_suffix = "",
    .f32_nan = "__builtin_nanf(\"\")", .f32_inf = "__builtin_inff()", .f64_nan = "__builtin_nan(\"\")", .f64_inf = "__builtin_inf()",
    .libm_prefix = "std::", .libm_suffix = "", .fn_qualifier = "inline"};

// Helpers every kernel may call (preamble(): these texts around the helpers
// c_render writes alike for every dialect).
constexpr const char* kPreambleHead = R"(#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
// -O2's very cheap cost model vectorizes no loop that needs a run-time
// check that its arrays do not overlap, and GCC does not take __restrict on
// the kernels' local pointers as proof: the elementwise kernels ran scalar.
// The dynamic model checks and vectorizes (another compiler ignores this).
#pragma GCC optimize("vect-cost-model=dynamic")
extern "C" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int,
                            float, float*, int);
// tc's runtime (compiler/src/backend/cpu/runtime_api.h; the same layout):
// set by tc_set_runtime when the object is loaded; without it every loop
// runs alone and products go to cblas_sgemm.
extern "C" {
typedef void (*tc_body_fn)(void*, int64_t, int64_t);
typedef void (*tc_sgemm_fn)(int, int, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
                            int64_t);
struct tc_runtime_api { int32_t version; int32_t threads; void (*parallel_for)(int64_t, int64_t, int32_t, tc_body_fn, void*); tc_sgemm_fn sgemm; };
extern __attribute__((visibility("hidden"))) const tc_runtime_api* tc_rt;
}
namespace {
// Runs f(lo, hi) over [0, n) on the pool: chunks of at least `grain`
// iterations, about `cpt` chunks per thread.
template <class F> inline void tc_par(int64_t n, int64_t grain, int cpt, F&& f) {
  const tc_runtime_api* rt = tc_rt;
  if (rt == nullptr || n <= grain) { f((int64_t)0, n); return; }
  using Fn = std::remove_reference_t<F>;
  rt->parallel_for(n, grain, cpt, [](void* c, int64_t lo, int64_t hi) { (*static_cast<Fn*>(c))(lo, hi); }, (void*)&f);
}
// Row-major C = alpha op(A) op(B) + beta C on one thread (gemm.h's contract).
inline void tc_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float beta, float* c, int64_t ldc) {
  const tc_runtime_api* rt = tc_rt;
  if (rt) { rt->sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); return; }
  cblas_sgemm(101, ta ? 112 : 111, tb ? 112 : 111, (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}
)";

// Then c_render's random helpers (random.h), and:
constexpr const char* kPreambleMid = R"(inline int64_t tc_chk(int64_t v, int64_t n, int* err) {
  if (v < 0 || v >= n) { __atomic_store_n(err, 1, __ATOMIC_RELAXED); return 0; }
  return v;
}
template <class T> inline T tc_cv(double v) { if constexpr (std::is_same_v<T, uint8_t>) return v != 0; else return (T)v; }
template <class T> inline T tc_neg(T a) { return (T)-a; }
template <class T> inline T tc_abs(T a) { if constexpr (std::is_same_v<T, float>) return std::fabs(a); else return a < 0 ? (T)-a : a; }
)";

// Then c_render's op helpers, and:
constexpr const char* kPreambleTail = R"(template <class T> inline T tc_div(T a, T b) { if constexpr (std::is_integral_v<T>) return b == 0 ? (T)0 : (T)(a / b); else return a / b; }
template <class T> inline T tc_pow(T a, T b) { return (T)std::pow(a, b); }
template <class T> inline T tc_max(T a, T b) { return a >= b ? a : b; }
template <class T> inline T tc_min(T a, T b) { return a <= b ? a : b; }
}  // namespace
)";

const std::string& preamble() {
  static const std::string text =
      kPreambleHead + c_render::random_helpers(kCpp) + kPreambleMid + c_render::op_helpers(kCpp) + kPreambleTail;
  return text;
}

// Only in programs with a collective (collective.h: the same layout): set by
// tc_set_host when the object is loaded.
constexpr const char* kHostPreamble = R"(extern "C" {
struct tc_host_api { int32_t version; int32_t reserved; int (*all_reduce_mean)(int64_t, float*, int64_t); };
extern __attribute__((visibility("hidden"))) const tc_host_api* tc_host_ptr;
}
)";

// Sums in 8 lanes, so the vectorizer takes them (it does not reorder one
// float sum by itself): the layer norm's statistics and the attention
// gradient's row sums. Only in programs with either.
constexpr const char* kLanesPreamble = R"(namespace {
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "vect-cost-model=dynamic")
inline float tc_sum8(const float* a, int64_t n) {
  float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) s8[l] += a[j + l];
  float s = 0;
  for (int l = 0; l < 8; ++l) s += s8[l];
  for (; j < n; ++j) s += a[j];
  return s;
}
inline float tc_dot8(const float* a, const float* b, int64_t n) {
  float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) s8[l] += a[j + l] * b[j + l];
  float s = 0;
  for (int l = 0; l < 8; ++l) s += s8[l];
  for (; j < n; ++j) s += a[j] * b[j];
  return s;
}
inline float tc_dev8(const float* a, float m, int64_t n) {
  float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) s8[l] += (a[j + l] - m) * (a[j + l] - m);
  float s = 0;
  for (int l = 0; l < 8; ++l) s += s8[l];
  for (; j < n; ++j) s += (a[j] - m) * (a[j] - m);
  return s;
}
#pragma GCC pop_options
}  // namespace
)";

// Only in programs with attention (Kernel::Attention; the same steps as the
// eager executor's attention_op, compiler/src/executor.cpp), per batch and
// head, in blocks of 64 queries: scores for the block against every key by
// sgemm into a [64, T] scratch (no [B, H, T, T] tensor), masked keys set to
// -1e9, softmax rows, sgemm with V; the gradient recomputes the block's
// probabilities and accumulates dK and dV over the blocks. Row loops run in
// 8-float blocks, so -O2's vectorizer takes them (max, sum, exp).
constexpr const char* kAttentionPreamble = R"(#include <cstdlib>
namespace {
// Without trapping math the vectorizer takes the selects below (with it, the
// exp loop stayed scalar: "control flow in loop"); the dynamic cost model
// takes loops of run-time length (-O2's very cheap one leaves them scalar).
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "vect-cost-model=dynamic")
// exp in float without a libm call (Cephes' expf polynomial; within 2 ulp of
// expf over [-87, 88]); 0 below -87.3, as expf rounds there.
inline float tc_expf(float x) {
  float c = x < -87.3f ? -87.3f : x;
  c = c > 88.3f ? 88.3f : c;
  const float n = __builtin_floorf(c * 1.44269504088896341f + 0.5f);
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
  float s;
  std::memcpy(&s, &bits, sizeof s);
  return x < -87.3f ? 0.0f : p * s;
}
// Row i of s ([rows, t]): masked keys -1e9, then softmax in place.
inline void tc_softmax_rows(float* s, int64_t rows, int64_t t, const uint8_t* mask) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = s + i * t;
    if (mask)
      for (int64_t j = 0; j < t; ++j) row[j] = mask[j] ? -1e9f : row[j];
    float m8[8];
    for (int l = 0; l < 8; ++l) m8[l] = -__builtin_inff();
    int64_t j = 0;
    for (; j + 8 <= t; j += 8)
      for (int l = 0; l < 8; ++l) m8[l] = row[j + l] > m8[l] ? row[j + l] : m8[l];
    float m = -__builtin_inff();
    for (int l = 0; l < 8; ++l) m = m8[l] > m ? m8[l] : m;
    for (; j < t; ++j) m = row[j] > m ? row[j] : m;
    float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (j = 0; j + 8 <= t; j += 8)
      for (int l = 0; l < 8; ++l) {
        const float e = tc_expf(row[j + l] - m);
        row[j + l] = e;
        s8[l] += e;
      }
    float sum = 0;
    for (int l = 0; l < 8; ++l) sum += s8[l];
    for (; j < t; ++j) sum += row[j] = tc_expf(row[j] - m);
    const float inv = 1.0f / sum;
    for (j = 0; j + 8 <= t; j += 8)
      for (int l = 0; l < 8; ++l) row[j + l] *= inv;
    for (; j < t; ++j) row[j] *= inv;
  }
}
constexpr int64_t tc_attn_block = 64;
// qkv [B, T, 3D] (D = H * Dh), mask [B, T] or null, out [B, T, D]; with
// grad, out is d qkv [B, T, 3D] from o (the forward's value) and d_o.
void tc_attention(const float* qkv, const uint8_t* mask, float* out, const float* o, const float* d_o, int64_t B,
                  int64_t T, int64_t H, int64_t Dh, float scale, bool grad) {
  if (B == 0 || T == 0 || H == 0 || Dh == 0) return;
  (void)o;  // the gradient needs o only through p . dp (below)
  const int64_t D = H * Dh, ld = 3 * D, nb = (T + tc_attn_block - 1) / tc_attn_block;
  // The forward splits (batch, head, query block); the gradient (batch, head):
  // its dK and dV sum over the blocks.
  const int64_t tasks = grad ? B * H : B * H * nb;
  tc_par(tasks, 1, 4, [&](int64_t lo, int64_t hi) {
    const int64_t rows = T < tc_attn_block ? T : tc_attn_block;
    float* s = (float*)std::malloc(sizeof(float) * (size_t)(rows * T * (grad ? 2 : 1)));
    if (!s) __builtin_trap();
    float* dp = s + rows * T;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t bh = grad ? task : task / nb, b = bh / H, h = bh % H;
      const float* q = qkv + b * T * ld + h * Dh;
      const float* k = q + D;
      const float* v = q + 2 * D;
      const uint8_t* mb = mask ? mask + b * T : nullptr;
      const int64_t first = grad ? 0 : task % nb, last = grad ? nb : first + 1;
      for (int64_t blk = first; blk < last; ++blk) {
        const int64_t i0 = blk * tc_attn_block, qb = T - i0 < tc_attn_block ? T - i0 : tc_attn_block;
        tc_gemm(0, 1, qb, T, Dh, scale, q + i0 * ld, ld, k, ld, 0.0f, s, T);
        tc_softmax_rows(s, qb, T, mb);
        if (!grad) {
          tc_gemm(0, 0, qb, Dh, T, 1.0f, s, T, v, ld, 0.0f, out + (b * T + i0) * D + h * Dh, D);
          continue;
        }
        const float* go = d_o + (b * T + i0) * D + h * Dh;
        float* dq = out + b * T * ld + h * Dh;
        float* dk = dq + D;
        float* dv = dq + 2 * D;
        const float beta = blk == 0 ? 0.0f : 1.0f;
        tc_gemm(1, 0, T, Dh, qb, 1.0f, s, T, go, D, beta, dv, ld);
        tc_gemm(0, 1, qb, T, Dh, 1.0f, go, D, v, ld, 0.0f, dp, T);
        for (int64_t i = 0; i < qb; ++i) {
          float* ds = dp + i * T;
          const float* pr = s + i * T;
          // The row's d_o . o is its p . dp (o = p v, dp = d_o v^T): summed from the two rows just computed
          // instead of reading o, whose rows missed the cache (they were a quarter of this routine's own time).
          const float di = tc_dot8(pr, ds, T);
          for (int64_t j = 0; j < T; ++j) ds[j] = pr[j] * (ds[j] - di);
          if (mb)
            for (int64_t j = 0; j < T; ++j) ds[j] = mb[j] ? 0.0f : ds[j];
        }
        tc_gemm(0, 0, qb, Dh, T, scale, dp, T, k, ld, 0.0f, dq + i0 * ld, ld);
        tc_gemm(1, 0, T, Dh, qb, scale, dp, T, q + i0 * ld, ld, beta, dk, ld);
      }
    }
    std::free(s);
  });
}
#pragma GCC pop_options
}  // namespace
)";

// Only in programs with a layer norm (Kernel::LayerNorm; the same steps as
// the eager executor's layer_norm_op): one pass over rows for the forward;
// the gradient in blocks of 64 rows on the pool, each block's d gamma and
// d beta summed into scratch and the blocks added in order at the end.
constexpr const char* kLayerNormPreamble = R"(#include <cstdlib>
namespace {
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "vect-cost-model=dynamic")
constexpr int64_t tc_ln_block = 64;
// x [R, D], gamma [D], beta [D] -> y [R, D]; with grad, `other` is dy and
// out [R + 2, D] gets dx, then d gamma and d beta.
void tc_layer_norm(const float* x, const float* gamma, const float* other, float* out, int64_t R, int64_t D, float eps,
                   bool grad) {
  if (D == 0) return;
  const float inv_d = 1.0f / (float)D;
  if (!grad) {
    tc_par(R, 16384 / D + 1, 4, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* xr = x + r * D;
        const float mean = tc_sum8(xr, D) * inv_d;
        const float rstd = 1.0f / std::sqrt(tc_dev8(xr, mean, D) * inv_d + eps);
        float* yr = out + r * D;
        for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mean) * rstd * gamma[j] + other[j];
      }
    });
    return;
  }
  const int64_t nb = (R + tc_ln_block - 1) / tc_ln_block;
  float* part = (float*)std::malloc(sizeof(float) * (size_t)(nb * 2 * D + 1));
  if (!part) __builtin_trap();
  tc_par(nb, 1, 4, [&](int64_t lo, int64_t hi) {
    float* xh = (float*)std::malloc(sizeof(float) * (size_t)(2 * D));
    if (!xh) __builtin_trap();
    float* g = xh + D;
    for (int64_t blk = lo; blk < hi; ++blk) {
      float* pg = part + blk * 2 * D;
      float* pb = pg + D;
      for (int64_t j = 0; j < 2 * D; ++j) pg[j] = 0.0f;
      const int64_t r1 = (blk + 1) * tc_ln_block < R ? (blk + 1) * tc_ln_block : R;
      for (int64_t r = blk * tc_ln_block; r < r1; ++r) {
        const float* xr = x + r * D;
        const float* dy = other + r * D;
        const float mean = tc_sum8(xr, D) * inv_d;
        const float rstd = 1.0f / std::sqrt(tc_dev8(xr, mean, D) * inv_d + eps);
        for (int64_t j = 0; j < D; ++j) {
          xh[j] = (xr[j] - mean) * rstd;
          g[j] = dy[j] * gamma[j];
          pg[j] += dy[j] * xh[j];
          pb[j] += dy[j];
        }
        const float mg = tc_sum8(g, D) * inv_d, mgx = tc_dot8(g, xh, D) * inv_d;
        float* dx = out + r * D;
        for (int64_t j = 0; j < D; ++j) dx[j] = rstd * (g[j] - mg - xh[j] * mgx);
      }
    }
    std::free(xh);
  });
  float* dg = out + R * D;
  for (int64_t j = 0; j < 2 * D; ++j) dg[j] = 0.0f;
  for (int64_t blk = 0; blk < nb; ++blk)
    for (int64_t j = 0; j < 2 * D; ++j) dg[j] += part[blk * 2 * D + j];
  std::free(part);
}
#pragma GCC pop_options
}  // namespace
)";

class CppEmitter {
 public:
  std::string emit(const Program& p, const std::string& graph_name, int parts) const {
    std::ostringstream os;
    os << "// Generated by tc for " << graph_name << ": " << p.kernels.size() << " kernels";
    if (parts > 1) os << " in " << parts << " parts (compile each with -DTC_PART=i; without it, whole)";
    os << ".\n" << preamble();
    bool collectives = false;
    for (const Kernel& k : p.kernels) collectives = collectives || k.kind == Kernel::Collective;
    if (collectives) os << kHostPreamble;
    bool attention = false;
    for (const Kernel& k : p.kernels) attention = attention || k.kind == Kernel::Attention;
    bool layer_norm = false;
    for (const Kernel& k : p.kernels) layer_norm = layer_norm || k.kind == Kernel::LayerNorm;
    if (attention || layer_norm) os << kLanesPreamble;
    if (attention) os << kAttentionPreamble;
    if (layer_norm) os << kLayerNormPreamble;
    os << "#ifndef TC_PART\n#define TC_IN(part) 1\n#else\n#define TC_IN(part) (TC_PART == (part))\n#endif\n";
    // noipa: each kernel stays opaque to tc_run. With GCC 12's
    // interprocedural analysis (modref + __restrict) in one translation
    // unit, the call of a kernel whose output a later product reads was
    // deleted as dead (dropout-masked activations were never written; wrong
    // gradients, issue 4). -O0 and noipa both keep every call.
    os << "#define TC_KERNEL __attribute__((noipa, visibility(\"hidden\")))\n";
    for (std::size_t k = 0; k < p.kernels.size(); ++k) os << "TC_KERNEL void k" << k << "(void* const* b, int* err);\n";
    std::vector<std::string> text;
    std::size_t total = 0;
    for (std::size_t k = 0; k < p.kernels.size(); ++k) {
      std::ostringstream ks;
      kernel(ks, p, p.kernels[k], static_cast<int>(k));
      text.push_back(ks.str());
      total += text.back().size();
    }
    // Contiguous groups of about equal text (a proxy for compile time).
    int open = -1;
    std::size_t before = 0;
    for (std::size_t k = 0; k < text.size(); ++k) {
      int part = 0;
      if (parts > 1)
        part = std::min(parts - 1, static_cast<int>(static_cast<double>(before) * parts / static_cast<double>(total)));
      if (part != open) {
        if (open >= 0) os << "#endif\n";
        os << "#if TC_IN(" << part << ")\n";
        open = part;
      }
      os << text[k];
      before += text[k].size();
    }
    if (open >= 0) os << "#endif\n";
    // t == nullptr: untimed (one branch per execution); else t[2k], t[2k+1]
    // get kernel k's begin and end from `now`, the recording clock.
    os << "#if TC_IN(0)\nextern \"C\" const tc_runtime_api* tc_rt = nullptr;\n"
       << "extern \"C\" int tc_set_runtime(const tc_runtime_api* r) { if (r && r->version != 2) return 1; tc_rt = r; return 0; }\n"
       << (collectives ? "extern \"C\" const tc_host_api* tc_host_ptr = nullptr;\n"
                         "extern \"C\" int tc_set_host(const tc_host_api* h) { if (h && h->version != 1) return 1; tc_host_ptr = h; return 0; }\n"
                       : "")
       << "extern \"C\" int tc_run(void* const* b, uint64_t* t, uint64_t (*now)(void)) {\n  int err = 0;\n  if (!t) {\n";
    for (std::size_t k = 0; k < p.kernels.size(); ++k)
      os << "    k" << k << "(b, &err);\n    if (err) return 1;\n";
    os << "    return 0;\n  }\n";
    // The timed path walks a table of the kernels: one loop instead of a
    // second copy of the call sequence (that copy cost g++ about 5% more
    // time on a 150-kernel step).
    if (!p.kernels.empty()) {
      os << "  static void (*const tc_kernels[])(void* const*, int*) = {";
      for (std::size_t k = 0; k < p.kernels.size(); ++k) os << (k ? ", " : "") << "k" << k;
      os << "};\n  for (int i = 0; i < " << p.kernels.size() << "; ++i) {\n    t[2 * i] = now();\n    tc_kernels[i](b, &err);\n"
         << "    t[2 * i + 1] = now();\n    if (err) return 1;\n  }\n";
    }
    os << "  return 0;\n}\n";
    // The code cache builds with -DTC_KEY="<key>" and checks after loading
    // that the object says it was built for the key it was looked up by.
    os << "#ifdef TC_KEY\nextern \"C\" const char tc_built_for[] = TC_KEY;\n#endif\n#endif\n";
    return os.str();
  }

 private:
  static std::string ex(const Kernel& k, int i) { return c_render::expr(kCpp, k, i); }
  static std::string literal_d(double v) { return c_render::literal_d(kCpp, v); }
  static void declare(std::ostream& os, const Program& p, const Kernel& k) { c_render::declare(kCpp, os, p, k); }

  // A dim with a loop: extent other than 1 (a symbolic one never is 1 where it runs).
  static bool live(const Kernel& k, std::size_t d) { return k.loop[d] != 1 || !loop_x(k, d).sym.empty(); }

  // Opens a loop on the pool over the product of `dims` (name, extent),
  // outermost first: each iteration f_ gives every name its index. The
  // kernel's pointers are declared again inside (with __restrict: captured
  // ones lose it). The caller emits one statement, then kCloseParallel.
  static void open_parallel(std::ostream& os, const Program& p, const Kernel& k,
                            const std::vector<std::pair<std::string, X>>& dims, int64_t grain, int cpt) {
    X n;
    for (const auto& d : dims) n = n * d.second;
    os << "  tc_par(" << n.str() << ", " << std::max<int64_t>(1, grain) << "LL, " << cpt << ", [&](int64_t lo_, int64_t hi_) {\n";
    declare(os, p, k);
    os << "  for (int64_t f_ = lo_; f_ < hi_; ++f_) {\n";
    X stride;
    for (std::size_t i = dims.size(); i-- > 0;) {
      bool one = stride.sym.empty() && stride.v == 1;
      os << "    const int64_t " << dims[i].first << " = ";
      if (i == 0) os << (one ? "f_" : "f_ / " + stride.str());
      else if (one) os << "f_ % " << dims[i].second.str();
      else os << "(f_ / " << stride.str() << ") % " << dims[i].second.str();
      os << ";\n";
      stride = stride * dims[i].second;
    }
  }
  static constexpr const char* kCloseParallel = "  }\n  });\n";

  // Iterations of one parallel chunk: at least this much work.
  static int64_t grain_for(int64_t work, int64_t n) { return (16384 + std::max<int64_t>(1, work / n) - 1) / std::max<int64_t>(1, work / n); }

  // Opens loops over the dims in `dims` (extent 1 dims have no loop), the
  // outer ones on the pool when `parallel` and there is enough work; returns
  // what closes them after the caller's one statement ("" when serial).
  static std::string loops(std::ostream& os, const Program& p, const Kernel& k, const std::vector<std::size_t>& dims,
                           int64_t work, bool parallel, bool keep_inner_serial) {
    std::vector<std::size_t> live;
    for (std::size_t d : dims)
      if (CppEmitter::live(k, d)) live.push_back(d);
    std::size_t first_serial = 0;
    std::string close;
    if (parallel && !live.empty() && work >= 32768) {
      std::size_t collapse = live.size() > 1 && keep_inner_serial ? live.size() - 1 : live.size();
      std::vector<std::pair<std::string, X>> pd;
      int64_t n = 1;
      for (std::size_t i = 0; i < collapse; ++i) pd.push_back({"i" + std::to_string(live[i]), loop_x(k, live[i])}), n *= k.loop[live[i]];
      open_parallel(os, p, k, pd, grain_for(work, n), 4);
      first_serial = collapse;
      close = kCloseParallel;
    }
    for (std::size_t i = first_serial; i < live.size(); ++i) {
      std::size_t d = live[i];
      os << "  for (int64_t i" << d << " = 0; i" << d << " < " << loop_x(k, d).str() << "; ++i" << d << ")\n";
    }
    return close;
  }

  // Column reduction (the one kept dimension c is the innermost, e.g. a bias
  // gradient summing rows): accumulate a block of columns per row, so the
  // inner loop runs along memory and vectorizes. Each column still sums its
  // rows in order, in double: the same numbers as reduce()'s general loop.
  static void column_reduce(std::ostream& os, const Program& p, const Kernel& k, const std::string& out, std::size_t c,
                            const std::vector<std::size_t>& live_red, int64_t work) {
    int64_t n = k.loop[c];
    const std::string ns = loop_x(k, c).str();
    const bool fixed = loop_x(k, c).sym.empty();
    int64_t block = work >= 32768 && n >= 128 ? 64 : 256;
    std::string iv = "i" + std::to_string(c), init = k.is_max ? "-__builtin_inf()" : "0.0";
    bool par = work >= 32768 && n > block;
    if (par) {
      int64_t blocks = (n + block - 1) / block;
      if (fixed) os << "  tc_par(" << blocks << "LL, 1LL, 4, [&](int64_t lo_, int64_t hi_) {\n";
      else os << "  tc_par((" << ns << " + " << block - 1 << "LL) / " << block << "LL, 1LL, 4, [&](int64_t lo_, int64_t hi_) {\n";
      declare(os, p, k);
      os << "  for (int64_t cb_ = lo_; cb_ < hi_; ++cb_) {\n    const int64_t c0 = cb_ * " << block << "LL;\n";
    } else {
      os << "  for (int64_t c0 = 0; c0 < " << ns << "; c0 += " << block << ") {\n";
    }
    // Where the blocks divide the columns the block's width is a
    // constant: -O2's very cheap vectorizer cost model takes only loops
    // of known length (with a run-time `cn` the bias gradients of the
    // Transformer step stayed scalar, about 1 ns an element).
    os << "    double accs[" << block << "];\n";
    if (fixed && n % block == 0)
      os << "    constexpr int64_t cn = " << block << ";\n";
    else
      os << "    const int64_t cn = " << ns << " - c0 < " << block << " ? " << ns << " - c0 : " << block << ";\n";
    os << "    for (int64_t c = 0; c < cn; ++c) accs[c] = " << init << ";\n";
    loops(os, p, k, live_red, 0, false, false);
    os << "    for (int64_t c = 0; c < cn; ++c) { const int64_t " << iv << " = c0 + c; double v = (double)"
       << ex(k, k.value) << "; " << (k.is_max ? "accs[c] = v > accs[c] ? v : accs[c];" : "accs[c] += v;") << " }\n";
    std::string stored = k.epilogue >= 0 ? ex(k, k.epilogue) : "((" + std::string(ctype(k.out_dtype)) + ")acc)";
    os << "    for (int64_t c = 0; c < cn; ++c) { const int64_t " << iv << " = c0 + c; const double acc = accs[c]; "
       << out << "[" << ex(k, k.store) << "] = " << stored << "; }\n  }\n";
    if (par) os << "  });\n";
  }

  // A reduction: each kept index sums (or takes the max of) its reduced
  // indices in double, in order; then the epilogue, if any.
  static void reduce(std::ostream& os, const Program& p, const Kernel& k, const std::string& out, const std::vector<std::size_t>& all,
                     int64_t work) {
    std::vector<std::size_t> kept, red;
    for (std::size_t d : all) (k.reduced[d] ? red : kept).push_back(d);
    std::vector<std::size_t> live_kept, live_red;
    for (std::size_t d : kept)
      if (live(k, d)) live_kept.push_back(d);
    for (std::size_t d : red)
      if (live(k, d)) live_red.push_back(d);
    if (live_kept.size() == 1 && !live_red.empty() && live_red.back() < live_kept[0]) {
      column_reduce(os, p, k, out, live_kept[0], live_red, work);
      return;
    }
    std::string close = loops(os, p, k, kept, work, true, false);
    os << "  {\n    double acc = " << (k.is_max ? "-__builtin_inf()" : "0.0") << ";\n";
    loops(os, p, k, red, 0, false, false);
    os << "    { double v = (double)" << ex(k, k.value) << "; "
       << (k.is_max ? "acc = v > acc ? v : acc;" : "acc += v;") << " }\n";
    std::string stored = k.epilogue >= 0 ? ex(k, k.epilogue) : "((" + std::string(ctype(k.out_dtype)) + ")acc)";
    // An epilogue sees the accumulator converted to the reduction's type.
    os << "    " << out << "[" << ex(k, k.store) << "] = " << stored << ";\n  }\n" << close;
  }

  // A batch of matrix products as tc_gemm calls, split over the pool.
  static void matmul(std::ostream& os, const Program& p, const Kernel& k, const std::string& out) {
    int64_t mn = k.M * k.N;
    if (k.M == 0 || k.N == 0) return;
    if (k.K == 0) {
      if (!k.accumulate) os << "  std::memset(" << out << ", 0, " << numel_bytes(p, k.out_buf) << ");\n";
      return;
    }
    const X M = ext(k.sym, &KernelSyms::M, k.M), N = ext(k.sym, &KernelSyms::N, k.N), K = ext(k.sym, &KernelSyms::K, k.K);
    std::string oa = "0", ob = "0", oc = "0";
    X cs = M * N;
    for (std::size_t d = k.batch.size(); d-- > 0;) {
      const X bd = at(k.sym, &KernelSyms::batch, d, k.batch[d]);
      if (k.batch[d] == 1 && bd.sym.empty()) continue;
      std::string v = "j" + std::to_string(d);
      oa += " + " + v + " * " + at(k.sym, &KernelSyms::a_stride, d, k.a_stride[d]).str();
      ob += " + " + v + " * " + at(k.sym, &KernelSyms::b_stride, d, k.b_stride[d]).str();
      oc += " + " + v + " * " + cs.str();
      cs = cs * bd;
    }
    // tc_gemm runs on one thread: the pool splits the work, over the
    // batch of products when there is one, else over the larger of M and
    // N, in blocks of 16 rows or 32 columns (whole tiles of gemm.h's
    // kernels: 8 or 6 rows, 32 or 16 columns).
    os << "  const float alpha = (float)("
       << (k.sym && k.sym->alpha.kind != SymReal::constant ? c_render::real(kCpp, k.sym->alpha) : literal_d(k.alpha_scale));
    if (k.alpha_buf >= 0) os << " * (double)p" << k.alpha_buf << "[0]";
    os << ");\n";
    int64_t nb = 1;
    std::size_t batch_loops = 0;
    for (std::size_t d = 0; d < k.batch.size(); ++d) nb *= k.batch[d], batch_loops += k.batch[d] != 1 || !at(k.sym, &KernelSyms::batch, d, 1).sym.empty();
    bool parallel = 2.0 * static_cast<double>(mn) * static_cast<double>(k.K) * static_cast<double>(nb) >= kParallelGemmFlops;
    auto call = [&](const std::string& m, const std::string& n, const std::string& a, const std::string& b, const std::string& c) {
      os << "    tc_gemm(" << (k.ta ? 1 : 0) << ", " << (k.tb ? 1 : 0) << ", " << m << ", " << n << ", "
         << (K.sym.empty() ? std::to_string(k.K) : K.sym) << ", alpha, p" << k.a_buf << " + (" << a << "), " << plain(k.ta ? M : K)
         << ", p" << k.b_buf << " + (" << b << "), " << plain(k.tb ? K : N) << ", " << (k.accumulate ? "1.0f" : "0.0f") << ", " << out
         << " + (" << c << "), " << plain(N) << ");\n";
    };
    if (nb > 1 || batch_loops > 0 || !parallel) {
      if (parallel && batch_loops > 0) {
        std::vector<std::pair<std::string, X>> bd;
        for (std::size_t d = 0; d < k.batch.size(); ++d)
          if (k.batch[d] != 1 || !at(k.sym, &KernelSyms::batch, d, 1).sym.empty())
            bd.push_back({"j" + std::to_string(d), at(k.sym, &KernelSyms::batch, d, k.batch[d])});
        open_parallel(os, p, k, bd, 1, 4);
        call(plain(M), plain(N), oa, ob, oc);
        os << kCloseParallel;
        return;
      }
      for (std::size_t d = 0; d < k.batch.size(); ++d)
        if (k.batch[d] != 1 || !at(k.sym, &KernelSyms::batch, d, 1).sym.empty())
          os << "  for (int64_t j" << d << " = 0; j" << d << " < " << at(k.sym, &KernelSyms::batch, d, k.batch[d]).str() << "; ++j" << d << ")\n";
      call(plain(M), plain(N), oa, ob, oc);
      return;
    }
    bool split_n = k.N >= k.M;
    const X extent = split_n ? N : M;
    // About two pieces per thread.
    const int64_t unit = split_n ? 32 : 16;
    const std::string blocks = extent.sym.empty() ? std::to_string((extent.v + unit - 1) / unit) + "LL"
                                                  : "(" + extent.sym + " + " + std::to_string(unit - 1) + "LL) / " + std::to_string(unit) + "LL";
    os << "  tc_par(" << blocks << ", 1LL, 2, [&](int64_t lo_, int64_t hi_) {\n";
    declare(os, p, k);
    os << "    const int64_t s0 = lo_ * " << unit << ", s1 = hi_ * " << unit << " < " << extent.str() << " ? hi_ * " << unit
       << " : " << extent.str() << ";\n"
       << "    if (s0 < s1)\n  ";
    if (split_n)
      call(plain(M), "s1 - s0", "0", k.tb ? "s0 * " + K.str() : "s0", "s0");
    else
      call("s1 - s0", plain(N), k.ta ? "s0" : "s0 * " + K.str(), "0", "s0 * " + N.str());
    os << "  });\n";
  }

  // An extent where the static text has a bare number (tc_gemm's sizes).
  static std::string plain(const X& x) { return x.sym.empty() ? std::to_string(x.v) : x.sym; }

  static void kernel(std::ostream& os, const Program& p, const Kernel& k, int index) {
    os << "// " << k.label << "\nTC_KERNEL void k" << index << "(void* const* b, int* err) {\n  (void)err;\n"
       << c_render::sizes_prologue(p);
    declare(os, p, k);
    std::string out = "p" + std::to_string(k.out_buf);
    std::vector<std::size_t> all;
    for (std::size_t d = 0; d < k.loop.size(); ++d) all.push_back(d);
    int64_t work = numel(k.loop);
    switch (k.kind) {
      case Kernel::Elementwise: {
        std::string close = loops(os, p, k, all, work, true, true);
        os << "    " << out << "[" << ex(k, k.store) << "] = " << ex(k, k.value) << ";\n" << close;
        break;
      }
      case Kernel::Reduce:
        reduce(os, p, k, out, all, work);
        break;
      case Kernel::Collective: {
        // Pack the inputs, then the host's all-reduce in place; a failure
        // ends the run (the runtime rethrows what the host kept).
        int64_t at = 0;
        for (int b : k.pack) {
          int64_t bytes = p.bufs[static_cast<std::size_t>(b)].bytes;
          if (bytes > 0) os << "  std::memcpy(" << out << " + " << at << "LL, p" << b << ", " << bytes << "u);\n";
          at += bytes / static_cast<int64_t>(sizeof(float));
        }
        if (at != numel(k.loop)) throw Error("tc: internal: a collective's inputs do not fill its buffer");
        os << "  if (!tc_host_ptr || tc_host_ptr->all_reduce_mean(" << k.ordinal << "LL, " << out << ", " << numel(k.loop)
           << "LL) != 0) *err = 1;\n";
        break;
      }
      case Kernel::Attention: {
        auto buf = [&](int b) { return b < 0 ? std::string("nullptr") : "p" + std::to_string(b); };
        os << "  tc_attention(" << buf(k.a_buf) << ", " << buf(k.b_buf) << ", " << out << ", " << buf(k.o_buf) << ", "
           << buf(k.do_buf) << ", " << loop_x(k, 0).str() << ", " << loop_x(k, 1).str() << ", " << loop_x(k, 2).str() << ", "
           << loop_x(k, 3).str() << ", (float)" << literal_d(k.alpha_scale) << ", " << (k.backward ? "true" : "false") << ");\n";
        break;
      }
      case Kernel::LayerNorm:
        os << "  tc_layer_norm(p" << k.a_buf << ", p" << k.b_buf << ", p" << k.do_buf << ", " << out << ", " << loop_x(k, 0).str() << ", "
           << loop_x(k, 1).str() << ", (float)" << literal_d(k.alpha_scale) << ", " << (k.backward ? "true" : "false") << ");\n";
        break;
      case Kernel::ScatterAdd:
        os << "  std::memset(" << out << ", 0, " << numel_bytes(p, k.out_buf) << ");\n";
        loops(os, p, k, all, 0, false, false);
        os << "    " << out << "[" << ex(k, k.store) << "] += " << ex(k, k.value) << ";\n";
        break;
      case Kernel::MatMul:
        matmul(os, p, k, out);
        break;
    }
    os << "}\n";
  }

  static std::string numel_bytes(const Program& p, int b) {
    if (p.sym && p.sym->bytes[static_cast<std::size_t>(b)].symbolic())
      return "(size_t)" + c_render::size(p.sym->bytes[static_cast<std::size_t>(b)]);
    return std::to_string(p.bufs[static_cast<std::size_t>(b)].bytes) + "u";
  }
};

}  // namespace

}  // namespace tc::detail

namespace tc::detail::cpu {
std::string emit_cpp(const Program& p, const std::string& graph_name, int parts) { return CppEmitter().emit(p, graph_name, parts); }
}  // namespace tc::detail::cpu
