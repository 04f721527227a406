// The CUDA dialect of the kernel IR: grid-stride loops for elementwise and
// scatter kernels (atomics for the scatter), one block per output of a
// reduction (a warp-shuffle then shared-memory block reduction, in double
// like the C++ emitter), matrix products as cuBLAS calls of the host's plan.
#include <algorithm>
#include <sstream>
#include <utility>

#include "../c_render.h"
#include "cuda.h"

namespace tc::detail::cuda {
namespace {

using c_render::ctype;

// What CUDA C writes differently from the C++ dialect.
constexpr c_render::Dialect kCuda{
    .name = "CUDA", .restrict_kw = "__restrict__", .arena_suffix = "LL",
    .f32_nan = "TC_NANF", .f32_inf = "TC_INFF", .f64_nan = "(TC_INF - TC_INF)", .f64_inf = "TC_INF",
    .libm_prefix = "", .libm_suffix = "f"};

// Device helpers. The random functions must stay bit-identical to
// compiler/src/random.h (eager and compiled runs draw the same numbers; the
// device's double log/cos/sqrt are correctly rounded to within an ulp, and
// the result is rounded to float).
constexpr const char* kPreamble = R"(#ifdef __CUDACC_RTC__
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned char uint8_t;
#endif
#define TC_D __device__ __forceinline__
#define TC_INFF __int_as_float(0x7f800000)
#define TC_NANF __int_as_float(0x7fc00000)
#define TC_INF __longlong_as_double(0x7ff0000000000000LL)
TC_D uint64_t tc_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
TC_D double tc_u01(uint64_t s, uint64_t i) { return (double)(tc_mix64(tc_mix64(s) + i) >> 11) * 0x1.0p-53; }
TC_D double tc_n01(uint64_t s, uint64_t i) {
  double u1 = tc_u01(s, 2 * i);
  u1 = u1 > 1e-300 ? u1 : 1e-300;
  double u2 = tc_u01(s, 2 * i + 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
TC_D float tc_rand(uint64_t s, int64_t i, int kind) { return (float)(kind == 0 ? tc_n01(s, (uint64_t)i) : tc_u01(s, (uint64_t)i)); }
TC_D uint64_t tc_seed(int32_t lo, int32_t hi) { return (uint64_t)(uint32_t)lo | ((uint64_t)(uint32_t)hi << 32); }
TC_D int64_t tc_chk(int64_t v, int64_t n, int* err) {
  if (v < 0 || v >= n) { *err = 1; return 0; }
  return v;
}
template <class T> TC_D T tc_cv(double v) { return (T)v; }
template <> TC_D uint8_t tc_cv<uint8_t>(double v) { return v != 0; }
template <class T> TC_D T tc_neg(T a) { return (T)-a; }
TC_D float tc_abs(float a) { return fabsf(a); }
TC_D int32_t tc_abs(int32_t a) { return a < 0 ? -a : a; }
TC_D uint8_t tc_abs(uint8_t a) { return a; }
TC_D float tc_relu(float a) { return a > 0 ? a : 0.0f; }
TC_D float tc_sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }
TC_D float tc_rsqrt(float a) { return 1.0f / sqrtf(a); }
TC_D uint8_t tc_not(uint8_t a) { return !a; }
template <class T> TC_D T tc_add(T a, T b) { return (T)(a + b); }
template <class T> TC_D T tc_sub(T a, T b) { return (T)(a - b); }
template <class T> TC_D T tc_mul(T a, T b) { return (T)(a * b); }
template <class T> TC_D T tc_div(T a, T b) { return b == 0 ? (T)0 : (T)(a / b); }
template <> TC_D float tc_div<float>(float a, float b) { return a / b; }
template <class T> TC_D T tc_pow(T a, T b) { return (T)pow((double)a, (double)b); }
template <> TC_D float tc_pow<float>(float a, float b) { return powf(a, b); }
template <class T> TC_D T tc_max(T a, T b) { return a >= b ? a : b; }
template <class T> TC_D T tc_min(T a, T b) { return a <= b ? a : b; }
TC_D float tc_attn_dot(const float* a, const float* b, int n) {
  float s = 0.0f;
  for (int c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}
// Block reductions: each warp by shuffles, then warp 0 over the warps'
// results in shared memory `sh` (32 doubles). The total is valid in thread 0.
// Every thread of the block must call them (they hold barriers).
TC_D double tc_warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
TC_D double tc_warp_max(double v) {
  for (int o = 16; o > 0; o >>= 1) { double w = __shfl_down_sync(0xffffffffu, v, o); v = w > v ? w : v; }
  return v;
}
)";

// The block reductions (tc_block_sum, tc_block_max): one text, its NAME and
// the IDENTITY of idle lanes filled in by preamble().
constexpr const char* kBlockReduction = R"(TC_D double tc_block_NAME(double v, double* sh) {
  v = tc_warp_NAME(v);
  if (blockDim.x <= 32) return v;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) v = tc_warp_NAME(lane < (blockDim.x >> 5) ? sh[lane] : IDENTITY);
  __syncthreads();
  return v;
}
)";

const std::string& preamble() {
  static const std::string text = [] {
    std::string out = kPreamble;
    for (auto [name, identity] : {std::pair{"sum", "0.0"}, std::pair{"max", "-TC_INF"}}) {
      std::string r = kBlockReduction;
      for (std::size_t at; (at = r.find("NAME")) != std::string::npos;) r.replace(at, 4, name);
      r.replace(r.find("IDENTITY"), 8, identity);
      out += r;
    }
    return out;
  }();
  return text;
}

class CudaEmitter {
 public:
  CudaEmitter(const Program& p, int64_t graph_id) : p_(p), graph_(graph_id) {}

  CudaProgram emit() {
    out_.slots = static_cast<int>(p_.num_inputs + p_.num_outputs + 1 + 1);
    std::ostringstream os;
    os << "// Generated by tc for graph " << graph_ << ": " << p_.kernels.size() << " kernels.\n" << preamble();
    for (std::size_t k = 0; k < p_.kernels.size(); ++k) kernel(os, p_.kernels[k], static_cast<int>(k));
    out_.source = os.str();
    return std::move(out_);
  }

 private:
  const Program& p_;
  int64_t graph_;
  CudaProgram out_;

  int scratch_slot() const { return p_.num_inputs + p_.num_outputs + 1; }

  static std::string ex(const Kernel& k, int i) { return c_render::expr(kCuda, k, i); }
  static std::string literal_d(double v) { return c_render::literal_d(kCuda, v); }
  void declare(std::ostream& os, const Kernel& k) const { c_render::declare(kCuda, os, p_, k); }

  // Gives each loop variable in `dims` its index from the flat `flat`
  // (row-major over those dims); extent-1 variables are 0.
  void unflatten(std::ostream& os, const Kernel& k, const std::vector<std::size_t>& dims, const std::string& flat,
                 const char* indent) const {
    int64_t stride = 1;
    for (std::size_t j = dims.size(); j-- > 0;) {
      std::size_t d = dims[j];
      os << indent << "const int64_t i" << d << " = ";
      if (k.loop[d] == 1) os << "0";
      else if (j == 0) os << (stride == 1 ? flat : "(" + flat + " / " + std::to_string(stride) + "LL)");
      else if (stride == 1) os << "(" << flat << " % " << k.loop[d] << "LL)";
      else os << "((" << flat << " / " << stride << "LL) % " << k.loop[d] << "LL)";
      os << ";\n";
      stride *= k.loop[d];
    }
  }

  std::string open_function(std::ostream& os, const Kernel& k, int index, const std::string& suffix, int threads) {
    std::string name = "tc_g" + std::to_string(graph_) + "_k" + std::to_string(index) + suffix;
    os << "// " << k.label << "\nextern \"C\" __global__ void __launch_bounds__(" << threads << ") " << name
       << "(void* const* __restrict__ b, int* __restrict__ err) {\n  (void)err;\n";
    out_.functions.push_back(name);
    return name;
  }

  void launch(int kernel, int64_t grid, int block, bool barriers) {
    Step s;
    s.kind = Step::Launch;
    s.kernel = kernel;
    s.function = static_cast<int>(out_.functions.size()) - 1;
    s.grid = std::max<int64_t>(1, grid);
    s.block = block;
    s.barriers = barriers;
    out_.steps.push_back(s);
  }

  void memset_step(int kernel, int buf) {
    Step s;
    s.kind = Step::Memset;
    s.kernel = kernel;
    s.buf = buf;
    s.bytes = p_.bufs[static_cast<std::size_t>(buf)].bytes;
    if (s.bytes > 0) out_.steps.push_back(s);
  }

  static int64_t grid_for(int64_t n, int threads) { return std::clamp<int64_t>((n + threads - 1) / threads, 1, kMaxBlocks); }

  void kernel(std::ostream& os, const Kernel& k, int index) {
    std::vector<std::size_t> all;
    for (std::size_t d = 0; d < k.loop.size(); ++d) all.push_back(d);
    const int64_t n = numel(k.loop);
    const std::string out = "p" + std::to_string(k.out_buf);
    switch (k.kind) {
      case Kernel::Elementwise: {
        if (n == 0) return;
        open_function(os, k, index, "", kThreads);
        declare(os, k);
        os << "  for (int64_t f_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f_ < " << n
           << "LL; f_ += (int64_t)blockDim.x * gridDim.x) {\n";
        unflatten(os, k, all, "f_", "    ");
        os << "    " << out << "[" << ex(k, k.store) << "] = " << ex(k, k.value) << ";\n  }\n}\n";
        launch(index, grid_for(n, kThreads), kThreads, false);
        return;
      }
      case Kernel::ScatterAdd: {
        memset_step(index, k.out_buf);
        if (n == 0) return;
        DType t = p_.bufs[static_cast<std::size_t>(k.out_buf)].dtype;
        if (t == DType::b8) throw Error("tc: the cuda backend cannot scatter-add into a b8 buffer yet");
        open_function(os, k, index, "", kThreads);
        declare(os, k);
        os << "  for (int64_t f_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f_ < " << n
           << "LL; f_ += (int64_t)blockDim.x * gridDim.x) {\n";
        unflatten(os, k, all, "f_", "    ");
        os << "    atomicAdd(&" << out << "[" << ex(k, k.store) << "], (" << ctype(t) << ")(" << ex(k, k.value) << "));\n  }\n}\n";
        launch(index, grid_for(n, kThreads), kThreads, false);
        return;
      }
      case Kernel::Reduce: {
        std::vector<std::size_t> kept, red;
        for (std::size_t d : all) (k.reduced[d] ? red : kept).push_back(d);
        int64_t outputs = 1, per = 1;
        for (std::size_t d : kept) outputs *= k.loop[d];
        for (std::size_t d : red) per *= k.loop[d];
        if (outputs == 0) return;
        // One block per output (grid-stride over the outputs); a warp when a
        // row is short, so small rows do not idle 8 warps.
        const int threads = per <= 32 ? 32 : per <= 128 ? 128 : kThreads;
        open_function(os, k, index, "", threads);
        declare(os, k);
        const char* init = k.is_max ? "-TC_INF" : "0.0";
        os << "  __shared__ double tc_sh[32];\n"
           << "  for (int64_t o_ = blockIdx.x; o_ < " << outputs << "LL; o_ += gridDim.x) {\n";
        unflatten(os, k, kept, "o_", "    ");
        os << "    double acc = " << init << ";\n"
           << "    for (int64_t r_ = threadIdx.x; r_ < " << per << "LL; r_ += blockDim.x) {\n";
        unflatten(os, k, red, "r_", "      ");
        os << "      const double v = (double)" << ex(k, k.value) << ";\n"
           << "      " << (k.is_max ? "acc = v > acc ? v : acc;" : "acc += v;") << "\n    }\n"
           << "    acc = " << (k.is_max ? "tc_block_max" : "tc_block_sum") << "(acc, tc_sh);\n";
        std::string stored = k.epilogue >= 0 ? ex(k, k.epilogue) : "((" + std::string(ctype(k.out_dtype)) + ")acc)";
        os << "    if (threadIdx.x == 0) " << out << "[" << ex(k, k.store) << "] = " << stored << ";\n  }\n}\n";
        launch(index, std::min<int64_t>(outputs, kMaxBlocks), threads, true);
        return;
      }
      case Kernel::MatMul: {
        if (k.M == 0 || k.N == 0) return;
        if (k.K == 0) {
          if (!k.accumulate) memset_step(index, k.out_buf);
          return;
        }
        int alpha_slot = -1;
        if (k.alpha_buf >= 0) {
          // alpha = alpha_scale * (that buffer's element 0), computed where
          // the buffer lives: one thread writes it to the scratch floats.
          alpha_slot = out_.scratch_floats++;
          Kernel one = k;
          one.reads = {k.alpha_buf};
          one.out_buf = k.alpha_buf;
          open_function(os, one, index, "_alpha", 32);
          declare(os, one);
          os << "  if (blockIdx.x == 0 && threadIdx.x == 0) ((float*)b[" << scratch_slot() << "])[" << alpha_slot
             << "] = (float)(" << literal_d(k.alpha_scale) << " * (double)p" << k.alpha_buf << "[0]);\n}\n";
          launch(index, 1, 32, false);
        }
        gemms(k, index, alpha_slot);
        return;
      }
      case Kernel::Attention: {
        attention(os, k, index);
        return;
      }
      case Kernel::LayerNorm: {
        layer_norm(os, k, index);
        return;
      }
      case Kernel::Collective:
        throw Error("tc: the cuda backend cannot compile kernel kind collective yet");
      default: break;
    }
    // A kind added after this emitter: its number, and its ops as the label names them.
    throw Error("tc: the cuda backend cannot compile kernel kind " + std::to_string(static_cast<int>(k.kind)) + " (" + k.label +
                ") yet");
  }

  // Self-attention over packed qkv [B, T, 3D], one thread per (batch, head,
  // query): the scores against every key recomputed per pass (max, sum, then
  // the output or the gradient), no [T, T] tensor. Masked keys score -1e9
  // as on CPU. The gradient writes d q directly and adds d k, d v with
  // atomics over the queries (the output is cleared first).
  void attention(std::ostream& os, const Kernel& k, int index) {
    const int64_t B = k.loop[0], T = k.loop[1], H = k.loop[2], Dh = k.loop[3], D = H * Dh, ld = 3 * D;
    if (k.backward) memset_step(index, k.out_buf);
    if (B * T * H * Dh == 0) return;
    const std::string out = "p" + std::to_string(k.out_buf), qkv = "p" + std::to_string(k.a_buf);
    open_function(os, k, index, "", kThreads);
    declare(os, k);
    os << "  const float scale = (float)" << literal_d(k.alpha_scale) << ";\n"
       << "  for (int64_t f_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f_ < " << B * H * T
       << "LL; f_ += (int64_t)blockDim.x * gridDim.x) {\n"
       << "    const int64_t i = f_ % " << T << "LL, bh = f_ / " << T << "LL, h = bh % " << H << "LL, bb = bh / " << H << "LL;\n"
       << "    const float* q = " << qkv << " + (bb * " << T << "LL + i) * " << ld << "LL + h * " << Dh << "LL;\n"
       << "    const float* kb = " << qkv << " + bb * " << T * ld << "LL + " << D << "LL + h * " << Dh << "LL;\n"
       << "    const float* vb = kb + " << D << "LL;\n";
    std::string masked = k.b_buf >= 0 ? "p" + std::to_string(k.b_buf) + "[bb * " + std::to_string(T) + "LL + j]" : "0";
    os << "    float m = -TC_INFF, l = 0.0f;\n"
       << "#define TC_SCORE(j) ((" << masked << ") ? -1e9f : tc_attn_dot(q, kb + (j) * " << ld << "LL, " << Dh << ") * scale)\n"
       << "    for (int64_t j = 0; j < " << T << "LL; ++j) { const float s = TC_SCORE(j); m = s > m ? s : m; }\n"
       << "    for (int64_t j = 0; j < " << T << "LL; ++j) l += expf(TC_SCORE(j) - m);\n"
       << "    const float inv = 1.0f / l;\n";
    if (!k.backward) {
      os << "    float acc[" << Dh << "];\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) acc[c] = 0.0f;\n"
         << "    for (int64_t j = 0; j < " << T << "LL; ++j) {\n"
         << "      const float pr = expf(TC_SCORE(j) - m) * inv;\n"
         << "      for (int c = 0; c < " << Dh << "; ++c) acc[c] += pr * vb[j * " << ld << "LL + c];\n    }\n"
         << "    float* o = " << out << " + (bb * " << T << "LL + i) * " << D << "LL + h * " << Dh << "LL;\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) o[c] = acc[c];\n";
    } else {
      const std::string po = "p" + std::to_string(k.o_buf), pdo = "p" + std::to_string(k.do_buf);
      os << "    const int64_t oi = (bb * " << T << "LL + i) * " << D << "LL + h * " << Dh << "LL;\n"
         << "    const float* go = " << pdo << " + oi;\n"
         << "    const float di = tc_attn_dot(go, " << po << " + oi, " << Dh << ");\n"
         << "    float dq[" << Dh << "];\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) dq[c] = 0.0f;\n"
         << "    float* dkb = " << out << " + bb * " << T * ld << "LL + " << D << "LL + h * " << Dh << "LL;\n"
         << "    float* dvb = dkb + " << D << "LL;\n"
         << "    for (int64_t j = 0; j < " << T << "LL; ++j) {\n"
         << "      const float pr = expf(TC_SCORE(j) - m) * inv;\n"
         << "      float ds = pr * (tc_attn_dot(go, vb + j * " << ld << "LL, " << Dh << ") - di);\n"
         << "      if (" << masked << ") ds = 0.0f;\n"
         << "      for (int c = 0; c < " << Dh << "; ++c) {\n"
         << "        dq[c] += scale * ds * kb[j * " << ld << "LL + c];\n"
         << "        atomicAdd(&dkb[j * " << ld << "LL + c], scale * ds * q[c]);\n"
         << "        atomicAdd(&dvb[j * " << ld << "LL + c], pr * go[c]);\n      }\n    }\n"
         << "    float* dqo = " << out << " + (bb * " << T << "LL + i) * " << ld << "LL + h * " << Dh << "LL;\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) dqo[c] = dq[c];\n";
    }
    os << "#undef TC_SCORE\n  }\n}\n";
    launch(index, grid_for(B * H * T, kThreads), kThreads, false);
  }

  // Layer norm over rows of x [R, D]: one block per row (block sums in
  // double). The gradient's output is [R + 2, D]: d x, then d gamma and
  // d beta, which the rows add with atomics (cleared first).
  void layer_norm(std::ostream& os, const Kernel& k, int index) {
    const int64_t R = k.loop[0], D = k.loop[1];
    if (k.backward) memset_step(index, k.out_buf);
    if (R * D == 0) return;
    const int threads = D <= 32 ? 32 : D <= 128 ? 128 : kThreads;
    const std::string out = "p" + std::to_string(k.out_buf), x = "p" + std::to_string(k.a_buf),
                      gamma = "p" + std::to_string(k.b_buf), other = "p" + std::to_string(k.do_buf);
    open_function(os, k, index, "", threads);
    declare(os, k);
    os << "  __shared__ double tc_sh[32];\n  __shared__ float tc_stat[4];\n"
       << "  const float eps = (float)" << literal_d(k.alpha_scale) << ";\n"
       << "  for (int64_t r = blockIdx.x; r < " << R << "LL; r += gridDim.x) {\n"
       << "    const float* xr = " << x << " + r * " << D << "LL;\n"
       << "    double a = 0.0;\n"
       << "    for (int64_t j = threadIdx.x; j < " << D << "LL; j += blockDim.x) a += (double)xr[j];\n"
       << "    a = tc_block_sum(a, tc_sh);\n"
       << "    if (threadIdx.x == 0) tc_stat[0] = (float)(a / " << D << ".0);\n"
       << "    __syncthreads();\n"
       << "    const float mean = tc_stat[0];\n"
       << "    a = 0.0;\n"
       << "    for (int64_t j = threadIdx.x; j < " << D << "LL; j += blockDim.x) { const double d = (double)(xr[j] - mean); a += d * d; }\n"
       << "    a = tc_block_sum(a, tc_sh);\n"
       << "    if (threadIdx.x == 0) tc_stat[1] = 1.0f / sqrtf((float)(a / " << D << ".0) + eps);\n"
       << "    __syncthreads();\n"
       << "    const float rstd = tc_stat[1];\n";
    if (!k.backward) {
      os << "    for (int64_t j = threadIdx.x; j < " << D << "LL; j += blockDim.x)\n"
         << "      " << out << "[r * " << D << "LL + j] = (xr[j] - mean) * rstd * " << gamma << "[j] + " << other << "[j];\n";
    } else {
      os << "    const float* dy = " << other << " + r * " << D << "LL;\n"
         << "    double sg = 0.0, sgx = 0.0;\n"
         << "    for (int64_t j = threadIdx.x; j < " << D << "LL; j += blockDim.x) {\n"
         << "      const float xh = (xr[j] - mean) * rstd, g = dy[j] * " << gamma << "[j];\n"
         << "      sg += (double)g;\n      sgx += (double)g * (double)xh;\n"
         << "      atomicAdd(&" << out << "[" << R * D << "LL + j], dy[j] * xh);\n"
         << "      atomicAdd(&" << out << "[" << (R + 1) * D << "LL + j], dy[j]);\n    }\n"
         << "    sg = tc_block_sum(sg, tc_sh);\n"
         << "    sgx = tc_block_sum(sgx, tc_sh);\n"
         << "    if (threadIdx.x == 0) { tc_stat[2] = (float)(sg / " << D << ".0); tc_stat[3] = (float)(sgx / " << D << ".0); }\n"
         << "    __syncthreads();\n"
         << "    const float mg = tc_stat[2], mgx = tc_stat[3];\n"
         << "    for (int64_t j = threadIdx.x; j < " << D << "LL; j += blockDim.x) {\n"
         << "      const float xh = (xr[j] - mean) * rstd, g = dy[j] * " << gamma << "[j];\n"
         << "      " << out << "[r * " << D << "LL + j] = rstd * (g - mg - xh * mgx);\n    }\n";
    }
    os << "    __syncthreads();\n  }\n}\n";
    launch(index, std::min<int64_t>(R, kMaxBlocks), threads, true);
  }

  // The batch of products as strided-batched calls: adjacent batch dims
  // whose strides nest merge into one; the innermost merged dim is the
  // call's batch, the outer ones are enumerated.
  void gemms(const Kernel& k, int index, int alpha_slot) {
    struct Dim {
      int64_t n, sa, sb, sc;
    };
    std::vector<Dim> dims;  // outermost first; C is contiguous over the batch
    int64_t cs = k.M * k.N;
    std::vector<Dim> rev;
    for (std::size_t d = k.batch.size(); d-- > 0;) {
      if (k.batch[d] == 1) continue;
      rev.push_back({k.batch[d], k.a_stride[d], k.b_stride[d], cs});
      cs *= k.batch[d];
    }
    for (std::size_t j = rev.size(); j-- > 0;) dims.push_back(rev[j]);
    // Merge from the inside out: inner dim i and the one outside it, o.
    std::vector<Dim> m = dims;
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t j = 1; j < m.size(); ++j) {
        const Dim &o = m[j - 1], &i = m[j];
        if (o.sa == i.sa * i.n && o.sb == i.sb * i.n && o.sc == i.sc * i.n) {
          m[j - 1] = {o.n * i.n, i.sa, i.sb, i.sc};
          m.erase(m.begin() + static_cast<std::ptrdiff_t>(j));
          changed = true;
          break;
        }
      }
    }
    GemmCall g;
    g.ta = k.ta;
    g.tb = k.tb;
    g.M = k.M;
    g.N = k.N;
    g.K = k.K;
    g.lda = k.ta ? k.M : k.K;
    g.ldb = k.tb ? k.K : k.N;
    g.ldc = k.N;
    g.a_buf = k.a_buf;
    g.b_buf = k.b_buf;
    g.c_buf = k.out_buf;
    g.beta = k.accumulate ? 1.0f : 0.0f;
    g.alpha = k.alpha_scale;
    g.alpha_slot = alpha_slot;
    Dim inner{1, 0, 0, 0};
    if (!m.empty()) inner = m.back(), m.pop_back();
    g.count = inner.n;
    g.a_stride = inner.sa;
    g.b_stride = inner.sb;
    g.c_stride = inner.sc;
    int64_t outer = 1;
    for (const Dim& d : m) outer *= d.n;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t rest = o;
      GemmCall c = g;
      for (std::size_t j = m.size(); j-- > 0;) {
        int64_t v = rest % m[j].n;
        rest /= m[j].n;
        c.a_off += v * m[j].sa;
        c.b_off += v * m[j].sb;
        c.c_off += v * m[j].sc;
      }
      Step s;
      s.kind = Step::Gemm;
      s.kernel = index;
      s.gemm = c;
      out_.steps.push_back(s);
    }
  }
};

}  // namespace

CudaProgram emit_cuda(const Program& p, int64_t graph_id) { return CudaEmitter(p, graph_id).emit(); }

ColumnMajorGemm gemm_args(const GemmCall& g) {
  // Row-major C (M x N) = op(A) op(B) is column-major C^T (N x M) = op(B)^T op(A)^T:
  // B first, with B's own transpose flag, then A.
  return {g.tb, g.ta, g.N, g.M, g.K, g.ldb, g.lda, g.ldc};
}

void* buffer_address(const Program& p, int buf, void* const* table) {
  const BufDecl& d = p.bufs[static_cast<std::size_t>(buf)];
  if (d.kind == BufKind::input) return table[d.slot];
  if (d.kind == BufKind::output) return table[p.num_inputs + d.slot];
  return static_cast<char*>(table[p.num_inputs + p.num_outputs]) + d.offset;
}

void run_plan(const CudaProgram& cp, const Program& p, void* const* table, PlanDevice& dev) {
  int open = -1;
  for (const Step& s : cp.steps) {
    if (s.kernel != open) {
      if (open >= 0) dev.kernel_end(open);
      dev.kernel_begin(s.kernel);
      open = s.kernel;
    }
    switch (s.kind) {
      case Step::Launch: dev.launch(cp, s); break;
      case Step::Memset: dev.memset(buffer_address(p, s.buf, table), s.bytes); break;
      case Step::Gemm: {
        const GemmCall& g = s.gemm;
        dev.gemm(g, static_cast<const float*>(buffer_address(p, g.a_buf, table)) + g.a_off,
                 static_cast<const float*>(buffer_address(p, g.b_buf, table)) + g.b_off,
                 static_cast<float*>(buffer_address(p, g.c_buf, table)) + g.c_off);
        break;
      }
    }
  }
  if (open >= 0) dev.kernel_end(open);
}

}  // namespace tc::detail::cuda
