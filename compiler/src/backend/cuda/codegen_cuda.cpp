// The CUDA dialect of the kernel IR: grid-stride loops for elementwise and
// scatter kernels (atomics for the scatter), one block per output of a
// reduction (a warp-shuffle then shared-memory block reduction, in double
// like the C++ emitter), matrix products as cuBLAS calls of the host's plan.
// A dynamic program's kernels compute their extents from the size s they
// read on the device (c_render's Extent, as the C++ dialect does); the plan
// keeps grids, memsets and products as forms of s, resolved per run.
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
    .libm_prefix = "", .libm_suffix = "f", .fn_qualifier = "TC_D"};

// Device helpers (preamble(): these texts around the helpers c_render writes
// alike for every dialect). The random functions match compiler/src/random.h:
// the device's double log/cos/sqrt are correctly rounded to within an ulp,
// and the result is rounded to float.
constexpr const char* kPreambleHead = R"(#ifdef __CUDACC_RTC__
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
)";

// Then c_render's random helpers (random.h), and:
constexpr const char* kPreambleMid = R"(TC_D int64_t tc_chk(int64_t v, int64_t n, int* err) {
  if (v < 0 || v >= n) { *err = 1; return 0; }
  return v;
}
template <class T> TC_D T tc_cv(double v) { return (T)v; }
template <> TC_D uint8_t tc_cv<uint8_t>(double v) { return v != 0; }
template <class T> TC_D T tc_neg(T a) { return (T)-a; }
TC_D float tc_abs(float a) { return fabsf(a); }
TC_D int32_t tc_abs(int32_t a) { return a < 0 ? -a : a; }
TC_D uint8_t tc_abs(uint8_t a) { return a; }
)";

// Then c_render's op helpers, and:
constexpr const char* kPreambleTail = R"(template <class T> TC_D T tc_div(T a, T b) { return b == 0 ? (T)0 : (T)(a / b); }
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
    std::string out = kPreambleHead + c_render::random_helpers(kCuda) + kPreambleMid + c_render::op_helpers(kCuda) + kPreambleTail;
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

// A kernel field as a form of s (a constant in a static program).
SymInt sym_or(const std::shared_ptr<const KernelSyms>& sym, const SymInt KernelSyms::*f, int64_t v) {
  return sym ? (*sym).*f : SymInt{v};
}
std::vector<SymInt> syms_or(const std::shared_ptr<const KernelSyms>& sym, const std::vector<SymInt> KernelSyms::*f,
                            const std::vector<int64_t>& v) {
  if (sym) return (*sym).*f;
  std::vector<SymInt> out;
  for (int64_t x : v) out.push_back(SymInt{x});
  return out;
}

using c_render::Extent;
using c_render::loop_x;

// An extent as a double expression ("12.0", or the symbolic one converted).
std::string as_double(const Extent& e) { return e.fixed() ? std::to_string(e.v) + ".0" : "(double)" + e.sym; }

class CudaEmitter {
 public:
  CudaEmitter(const Program& p, int64_t graph_id) : p_(p), graph_(graph_id) {}

  CudaProgram emit() {
    if (p_.sym) {
      if (std::string why = symbolic_unsupported(p_); !why.empty())
        throw Error("tc: the cuda backend cannot compile dynamic graph " + std::to_string(graph_) + ": " + why);
      out_.sizes_slot = p_.sym->table_slot;
    }
    out_.slots = static_cast<int>(p_.num_inputs + p_.num_outputs + 1 + (p_.sym ? 1 : 0) + 1);
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

  int scratch_slot() const { return out_.slots - 1; }

  static std::string ex(const Kernel& k, int i) { return c_render::expr(kCuda, k, i); }
  static std::string literal_d(double v) { return c_render::literal_d(kCuda, v); }
  void declare(std::ostream& os, const Kernel& k) const { c_render::declare(kCuda, os, p_, k); }

  // Gives each loop variable in `dims` its index from the flat `flat`
  // (row-major over those dims); extent-1 variables are 0.
  void unflatten(std::ostream& os, const Kernel& k, const std::vector<std::size_t>& dims, const std::string& flat,
                 const char* indent) const {
    Extent stride;
    for (std::size_t j = dims.size(); j-- > 0;) {
      const std::size_t d = dims[j];
      const Extent e = loop_x(k, d);
      const bool unit = stride.fixed() && stride.v == 1;
      os << indent << "const int64_t i" << d << " = ";
      if (e.fixed() && e.v == 1) os << "0";
      else if (j == 0) os << (unit ? flat : "(" + flat + " / " + stride.str() + ")");
      else if (unit) os << "(" << flat << " % " << e.str() << ")";
      else os << "((" << flat << " / " << stride.str() << ") % " << e.str() << ")";
      os << ";\n";
      stride = stride * e;
    }
  }

  static Extent product(const Kernel& k, const std::vector<std::size_t>& dims) {
    Extent n;
    for (std::size_t d : dims) n = n * loop_x(k, d);
    return n;
  }
  static std::vector<SymInt> work_of(const Kernel& k, const std::vector<std::size_t>& dims) {
    std::vector<SymInt> w;
    for (std::size_t d : dims) w.push_back(k.sym ? k.sym->loop[d] : SymInt{k.loop[d]});
    return w;
  }

  std::string open_function(std::ostream& os, const Kernel& k, int index, const std::string& suffix, int threads) {
    std::string name = "tc_g" + std::to_string(graph_) + "_k" + std::to_string(index) + suffix;
    os << "// " << k.label << "\nextern \"C\" __global__ void __launch_bounds__(" << threads << ") " << name
       << "(void* const* __restrict__ b, int* __restrict__ err) {\n  (void)err;\n" << c_render::sizes_prologue(p_);
    out_.functions.push_back(name);
    return name;
  }

  // A launch of the function opened last: `work` items, `per_block` a block.
  void launch(int kernel, std::vector<SymInt> work, int64_t per_block, int block, bool barriers) {
    Step s;
    s.kind = Step::Launch;
    s.kernel = kernel;
    s.function = static_cast<int>(out_.functions.size()) - 1;
    s.work = std::move(work);
    s.per_block = per_block;
    s.block = block;
    s.barriers = barriers;
    out_.steps.push_back(s);
  }

  void memset_step(int kernel, int buf) {
    Step s;
    s.kind = Step::Memset;
    s.kernel = kernel;
    s.buf = buf;
    s.bytes = p_.sym ? p_.sym->bytes[static_cast<std::size_t>(buf)] : SymInt{p_.bufs[static_cast<std::size_t>(buf)].bytes};
    if (s.bytes.symbolic() || s.bytes.c0 > 0) out_.steps.push_back(s);
  }

  void kernel(std::ostream& os, const Kernel& k, int index) {
    std::vector<std::size_t> all;
    for (std::size_t d = 0; d < k.loop.size(); ++d) all.push_back(d);
    const Extent n = product(k, all);
    const std::string out = "p" + std::to_string(k.out_buf);
    switch (k.kind) {
      case Kernel::Elementwise: {
        if (n.v == 0) return;
        open_function(os, k, index, "", kThreads);
        declare(os, k);
        os << "  for (int64_t f_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f_ < " << n.str()
           << "; f_ += (int64_t)blockDim.x * gridDim.x) {\n";
        unflatten(os, k, all, "f_", "    ");
        os << "    " << out << "[" << ex(k, k.store) << "] = " << ex(k, k.value) << ";\n  }\n}\n";
        launch(index, work_of(k, all), kThreads, kThreads, false);
        return;
      }
      case Kernel::ScatterAdd: {
        memset_step(index, k.out_buf);
        if (n.v == 0) return;
        DType t = p_.bufs[static_cast<std::size_t>(k.out_buf)].dtype;
        if (t == DType::b8) throw Error("tc: the cuda backend cannot scatter-add into a b8 buffer yet");
        open_function(os, k, index, "", kThreads);
        declare(os, k);
        os << "  for (int64_t f_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f_ < " << n.str()
           << "; f_ += (int64_t)blockDim.x * gridDim.x) {\n";
        unflatten(os, k, all, "f_", "    ");
        os << "    atomicAdd(&" << out << "[" << ex(k, k.store) << "], (" << ctype(t) << ")(" << ex(k, k.value) << "));\n  }\n}\n";
        launch(index, work_of(k, all), kThreads, kThreads, false);
        return;
      }
      case Kernel::Reduce: {
        std::vector<std::size_t> kept, red;
        for (std::size_t d : all) (k.reduced[d] ? red : kept).push_back(d);
        const Extent outputs = product(k, kept), per = product(k, red);
        if (outputs.v == 0) return;
        // One block per output (grid-stride over the outputs); a warp when a
        // row is short, so small rows do not idle 8 warps.
        const int threads = per.v <= 32 ? 32 : per.v <= 128 ? 128 : kThreads;
        open_function(os, k, index, "", threads);
        declare(os, k);
        const char* init = k.is_max ? "-TC_INF" : "0.0";
        os << "  __shared__ double tc_sh[32];\n"
           << "  for (int64_t o_ = blockIdx.x; o_ < " << outputs.str() << "; o_ += gridDim.x) {\n";
        unflatten(os, k, kept, "o_", "    ");
        os << "    double acc = " << init << ";\n"
           << "    for (int64_t r_ = threadIdx.x; r_ < " << per.str() << "; r_ += blockDim.x) {\n";
        unflatten(os, k, red, "r_", "      ");
        os << "      const double v = (double)" << ex(k, k.value) << ";\n"
           << "      " << (k.is_max ? "acc = v > acc ? v : acc;" : "acc += v;") << "\n    }\n"
           << "    acc = " << (k.is_max ? "tc_block_max" : "tc_block_sum") << "(acc, tc_sh);\n";
        std::string stored = k.epilogue >= 0 ? ex(k, k.epilogue) : "((" + std::string(ctype(k.out_dtype)) + ")acc)";
        os << "    if (threadIdx.x == 0) " << out << "[" << ex(k, k.store) << "] = " << stored << ";\n  }\n}\n";
        launch(index, work_of(k, kept), 1, threads, true);
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
          const std::string scale = k.sym && k.sym->alpha.kind != SymReal::constant ? c_render::real(kCuda, k.sym->alpha)
                                                                                    : literal_d(k.alpha_scale);
          os << "  if (blockIdx.x == 0 && threadIdx.x == 0) ((float*)b[" << scratch_slot() << "])[" << alpha_slot
             << "] = (float)(" << scale << " * (double)p" << k.alpha_buf << "[0]);\n}\n";
          launch(index, {}, 1, 32, false);
        }
        Step s;
        s.kind = Step::Gemm;
        s.kernel = index;
        GemmPlan& g = s.gemm;
        g.ta = k.ta;
        g.tb = k.tb;
        g.M = sym_or(k.sym, &KernelSyms::M, k.M);
        g.N = sym_or(k.sym, &KernelSyms::N, k.N);
        g.K = sym_or(k.sym, &KernelSyms::K, k.K);
        g.batch = syms_or(k.sym, &KernelSyms::batch, k.batch);
        g.a_stride = syms_or(k.sym, &KernelSyms::a_stride, k.a_stride);
        g.b_stride = syms_or(k.sym, &KernelSyms::b_stride, k.b_stride);
        g.a_buf = k.a_buf;
        g.b_buf = k.b_buf;
        g.c_buf = k.out_buf;
        g.beta = k.accumulate ? 1.0f : 0.0f;
        g.alpha = k.sym ? k.sym->alpha : SymReal{SymReal::constant, k.alpha_scale, 0, 0};
        g.alpha_slot = alpha_slot;
        out_.steps.push_back(std::move(s));
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
  // atomics over the queries (the output is cleared first). The head size
  // Dh is a constant (symbolic_unsupported()): a head's row is in registers.
  void attention(std::ostream& os, const Kernel& k, int index) {
    const Extent B = loop_x(k, 0), T = loop_x(k, 1), H = loop_x(k, 2), D = H * Extent{k.loop[3], ""}, ld = Extent{3, ""} * D;
    const int64_t Dh = k.loop[3];
    if (k.backward) memset_step(index, k.out_buf);
    if (B.v * T.v * H.v * Dh == 0) return;
    const std::string out = "p" + std::to_string(k.out_buf), qkv = "p" + std::to_string(k.a_buf);
    open_function(os, k, index, "", kThreads);
    declare(os, k);
    os << "  const float scale = (float)" << literal_d(k.alpha_scale) << ";\n"
       << "  for (int64_t f_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f_ < " << (B * H * T).str()
       << "; f_ += (int64_t)blockDim.x * gridDim.x) {\n"
       << "    const int64_t i = f_ % " << T.str() << ", bh = f_ / " << T.str() << ", h = bh % " << H.str() << ", bb = bh / " << H.str() << ";\n"
       << "    const float* q = " << qkv << " + (bb * " << T.str() << " + i) * " << ld.str() << " + h * " << Dh << "LL;\n"
       << "    const float* kb = " << qkv << " + bb * " << (T * ld).str() << " + " << D.str() << " + h * " << Dh << "LL;\n"
       << "    const float* vb = kb + " << D.str() << ";\n";
    std::string masked = k.b_buf >= 0 ? "p" + std::to_string(k.b_buf) + "[bb * " + T.str() + " + j]" : "0";
    os << "    float m = -TC_INFF, l = 0.0f;\n"
       << "#define TC_SCORE(j) ((" << masked << ") ? -1e9f : tc_attn_dot(q, kb + (j) * " << ld.str() << ", " << Dh << ") * scale)\n"
       << "    for (int64_t j = 0; j < " << T.str() << "; ++j) { const float s = TC_SCORE(j); m = s > m ? s : m; }\n"
       << "    for (int64_t j = 0; j < " << T.str() << "; ++j) l += expf(TC_SCORE(j) - m);\n"
       << "    const float inv = 1.0f / l;\n";
    if (!k.backward) {
      os << "    float acc[" << Dh << "];\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) acc[c] = 0.0f;\n"
         << "    for (int64_t j = 0; j < " << T.str() << "; ++j) {\n"
         << "      const float pr = expf(TC_SCORE(j) - m) * inv;\n"
         << "      for (int c = 0; c < " << Dh << "; ++c) acc[c] += pr * vb[j * " << ld.str() << " + c];\n    }\n"
         << "    float* o = " << out << " + (bb * " << T.str() << " + i) * " << D.str() << " + h * " << Dh << "LL;\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) o[c] = acc[c];\n";
    } else {
      const std::string po = "p" + std::to_string(k.o_buf), pdo = "p" + std::to_string(k.do_buf);
      os << "    const int64_t oi = (bb * " << T.str() << " + i) * " << D.str() << " + h * " << Dh << "LL;\n"
         << "    const float* go = " << pdo << " + oi;\n"
         << "    const float di = tc_attn_dot(go, " << po << " + oi, " << Dh << ");\n"
         << "    float dq[" << Dh << "];\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) dq[c] = 0.0f;\n"
         << "    float* dkb = " << out << " + bb * " << (T * ld).str() << " + " << D.str() << " + h * " << Dh << "LL;\n"
         << "    float* dvb = dkb + " << D.str() << ";\n"
         << "    for (int64_t j = 0; j < " << T.str() << "; ++j) {\n"
         << "      const float pr = expf(TC_SCORE(j) - m) * inv;\n"
         << "      float ds = pr * (tc_attn_dot(go, vb + j * " << ld.str() << ", " << Dh << ") - di);\n"
         << "      if (" << masked << ") ds = 0.0f;\n"
         << "      for (int c = 0; c < " << Dh << "; ++c) {\n"
         << "        dq[c] += scale * ds * kb[j * " << ld.str() << " + c];\n"
         << "        atomicAdd(&dkb[j * " << ld.str() << " + c], scale * ds * q[c]);\n"
         << "        atomicAdd(&dvb[j * " << ld.str() << " + c], pr * go[c]);\n      }\n    }\n"
         << "    float* dqo = " << out << " + (bb * " << T.str() << " + i) * " << ld.str() << " + h * " << Dh << "LL;\n"
         << "    for (int c = 0; c < " << Dh << "; ++c) dqo[c] = dq[c];\n";
    }
    os << "#undef TC_SCORE\n  }\n}\n";
    launch(index, work_of(k, {0, 1, 2}), kThreads, kThreads, false);
  }

  // Layer norm over rows of x [R, D]: one block per row (block sums in
  // double). The gradient's output is [R + 2, D]: d x, then d gamma and
  // d beta, which the rows add with atomics (cleared first).
  void layer_norm(std::ostream& os, const Kernel& k, int index) {
    const Extent R = loop_x(k, 0), D = loop_x(k, 1);
    const Extent R1 = R.fixed() ? Extent{R.v + 1, ""} : Extent{R.v + 1, "(" + R.sym + " + 1LL)"};
    if (k.backward) memset_step(index, k.out_buf);
    if (R.v * D.v == 0) return;
    const int threads = D.v <= 32 ? 32 : D.v <= 128 ? 128 : kThreads;
    const std::string out = "p" + std::to_string(k.out_buf), x = "p" + std::to_string(k.a_buf),
                      gamma = "p" + std::to_string(k.b_buf), other = "p" + std::to_string(k.do_buf);
    const std::string d = D.str(), dd = as_double(D);
    open_function(os, k, index, "", threads);
    declare(os, k);
    os << "  __shared__ double tc_sh[32];\n  __shared__ float tc_stat[4];\n"
       << "  const float eps = (float)" << literal_d(k.alpha_scale) << ";\n"
       << "  for (int64_t r = blockIdx.x; r < " << R.str() << "; r += gridDim.x) {\n"
       << "    const float* xr = " << x << " + r * " << d << ";\n"
       << "    double a = 0.0;\n"
       << "    for (int64_t j = threadIdx.x; j < " << d << "; j += blockDim.x) a += (double)xr[j];\n"
       << "    a = tc_block_sum(a, tc_sh);\n"
       << "    if (threadIdx.x == 0) tc_stat[0] = (float)(a / " << dd << ");\n"
       << "    __syncthreads();\n"
       << "    const float mean = tc_stat[0];\n"
       << "    a = 0.0;\n"
       << "    for (int64_t j = threadIdx.x; j < " << d << "; j += blockDim.x) { const double d = (double)(xr[j] - mean); a += d * d; }\n"
       << "    a = tc_block_sum(a, tc_sh);\n"
       << "    if (threadIdx.x == 0) tc_stat[1] = 1.0f / sqrtf((float)(a / " << dd << ") + eps);\n"
       << "    __syncthreads();\n"
       << "    const float rstd = tc_stat[1];\n";
    if (!k.backward) {
      os << "    for (int64_t j = threadIdx.x; j < " << d << "; j += blockDim.x)\n"
         << "      " << out << "[r * " << d << " + j] = (xr[j] - mean) * rstd * " << gamma << "[j] + " << other << "[j];\n";
    } else {
      os << "    const float* dy = " << other << " + r * " << d << ";\n"
         << "    double sg = 0.0, sgx = 0.0;\n"
         << "    for (int64_t j = threadIdx.x; j < " << d << "; j += blockDim.x) {\n"
         << "      const float xh = (xr[j] - mean) * rstd, g = dy[j] * " << gamma << "[j];\n"
         << "      sg += (double)g;\n      sgx += (double)g * (double)xh;\n"
         << "      atomicAdd(&" << out << "[" << (R * D).str() << " + j], dy[j] * xh);\n"
         << "      atomicAdd(&" << out << "[" << (R1 * D).str() << " + j], dy[j]);\n    }\n"
         << "    sg = tc_block_sum(sg, tc_sh);\n"
         << "    sgx = tc_block_sum(sgx, tc_sh);\n"
         << "    if (threadIdx.x == 0) { tc_stat[2] = (float)(sg / " << dd << "); tc_stat[3] = (float)(sgx / " << dd << "); }\n"
         << "    __syncthreads();\n"
         << "    const float mg = tc_stat[2], mgx = tc_stat[3];\n"
         << "    for (int64_t j = threadIdx.x; j < " << d << "; j += blockDim.x) {\n"
         << "      const float xh = (xr[j] - mean) * rstd, g = dy[j] * " << gamma << "[j];\n"
         << "      " << out << "[r * " << d << " + j] = rstd * (g - mg - xh * mgx);\n    }\n";
    }
    os << "    __syncthreads();\n  }\n}\n";
    launch(index, work_of(k, {0}), 1, threads, true);
  }
};

}  // namespace

CudaProgram emit_cuda(const Program& p, int64_t graph_id) { return CudaEmitter(p, graph_id).emit(); }

std::string symbolic_unsupported(const Program& p) {
  if (!p.sym) return "";
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    if (k.kind == Kernel::Attention && k.sym && k.sym->loop.size() > 3 && k.sym->loop[3].symbolic())
      return "kernel " + std::to_string(i) + " (" + k.label + ") is an attention whose head size varies";
  }
  return "";
}

int64_t grid(const Step& step, int64_t s) {
  int64_t n = 1;
  for (const SymInt& w : step.work) n *= w.at(s);
  return std::clamp<int64_t>((n + step.per_block - 1) / step.per_block, 1, kMaxBlocks);
}

std::vector<GemmCall> gemm_calls(const GemmPlan& plan, int64_t s) {
  struct Dim {
    int64_t n, sa, sb, sc;
  };
  const int64_t M = plan.M.at(s), N = plan.N.at(s), K = plan.K.at(s);
  std::vector<Dim> dims;  // outermost first; C is contiguous over the batch
  int64_t cs = M * N;
  std::vector<Dim> rev;
  for (std::size_t d = plan.batch.size(); d-- > 0;) {
    const int64_t n = plan.batch[d].at(s);
    if (n == 1) continue;
    rev.push_back({n, plan.a_stride[d].at(s), plan.b_stride[d].at(s), cs});
    cs *= n;
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
  g.ta = plan.ta;
  g.tb = plan.tb;
  g.M = M;
  g.N = N;
  g.K = K;
  g.lda = std::max<int64_t>(1, plan.ta ? M : K);
  g.ldb = std::max<int64_t>(1, plan.tb ? K : N);
  g.ldc = std::max<int64_t>(1, N);
  g.a_buf = plan.a_buf;
  g.b_buf = plan.b_buf;
  g.c_buf = plan.c_buf;
  g.beta = plan.beta;
  g.alpha = plan.alpha.at(static_cast<double>(s));
  g.alpha_slot = plan.alpha_slot;
  Dim inner{1, 0, 0, 0};
  if (!m.empty()) inner = m.back(), m.pop_back();
  g.count = inner.n;
  g.a_stride = inner.sa;
  g.b_stride = inner.sb;
  g.c_stride = inner.sc;
  int64_t outer = 1;
  for (const Dim& d : m) outer *= d.n;
  std::vector<GemmCall> calls;
  if (M == 0 || N == 0 || g.count == 0) return calls;
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
    calls.push_back(c);
  }
  return calls;
}

ColumnMajorGemm gemm_args(const GemmCall& g) {
  // Row-major C (M x N) = op(A) op(B) is column-major C^T (N x M) = op(B)^T op(A)^T:
  // B first, with B's own transpose flag, then A.
  return {g.tb, g.ta, g.N, g.M, g.K, g.ldb, g.lda, g.ldc};
}

void* buffer_address(const Program& p, int buf, void* const* table, const int64_t* sizes) {
  const BufDecl& d = p.bufs[static_cast<std::size_t>(buf)];
  if (d.kind == BufKind::input) return table[d.slot];
  if (d.kind == BufKind::output) return table[p.num_inputs + d.slot];
  const int64_t offset = p.sym && sizes ? sizes[1 + buf] : d.offset;
  return static_cast<char*>(table[p.num_inputs + p.num_outputs]) + offset;
}

void run_plan(const CudaProgram& cp, const Program& p, void* const* table, const int64_t* sizes, PlanDevice& dev) {
  if (p.sym && !sizes) throw Error("tc: internal: a dynamic graph ran without its size table");
  const int64_t s = p.sym ? sizes[0] : 0;
  int open = -1;
  for (const Step& st : cp.steps) {
    if (st.kernel != open) {
      if (open >= 0) dev.kernel_end(open);
      dev.kernel_begin(st.kernel);
      open = st.kernel;
    }
    switch (st.kind) {
      case Step::Launch: dev.launch(cp, st, grid(st, s)); break;
      case Step::Memset: {
        const int64_t bytes = st.bytes.at(s);
        if (bytes > 0) dev.memset(buffer_address(p, st.buf, table, sizes), bytes);
        break;
      }
      case Step::Gemm: {
        const GemmPlan& g = st.gemm;
        const float* a = static_cast<const float*>(buffer_address(p, g.a_buf, table, sizes));
        const float* b = static_cast<const float*>(buffer_address(p, g.b_buf, table, sizes));
        float* c = static_cast<float*>(buffer_address(p, g.c_buf, table, sizes));
        for (const GemmCall& call : gemm_calls(g, s)) dev.gemm(call, a + call.a_off, b + call.b_off, c + call.c_off);
        break;
      }
    }
  }
  if (open >= 0) dev.kernel_end(open);
}

}  // namespace tc::detail::cuda
