// The CUDA backend without a GPU:
// - every op of the op table (tests/compiler/op_table_test.cpp: the same ops,
//   shapes and gradients; here compared with the eager executor, the oracle),
//   plus rows sized to reach the kernels' other paths (multi-warp and
//   256-thread reductions, more outputs than blocks, more elements than one
//   grid-stride pass), as one graph of forward values and gradients, run on
//   "cuda-emulated": the CUDA source and the launch plan executed on the CPU
//   (one g++ build for the whole table);
// - the same graph's CUDA source compiled by NVRTC for compute_90 and the
//   PTX assembled by ptxas for sm_90;
// - MLP training steps (SGD: the fused sgemm update with beta = 1 and a
//   device-computed alpha; AdamW) on cuda-emulated against eager;
// - TC_DEVICE=cuda without a driver or device: one line, exit status 69.
// Built twice: part 1 (tc_cuda_tests) all but NVRTC, part 2
// (tc_cuda_nvrtc_test) the NVRTC/ptxas check, labelled slow so that CI runs it
// once (it does not depend on tracing or sanitizers; ~12 s of NVRTC and ptxas).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <random>
#include <tc/tc.h>

#include "backend/backend.h"
#include "backend/cuda/api.h"
#include "backend/cuda/cuda.h"
#include "compile.h"
#include "support/process.h"

namespace {

using T = tc::Tensor;
using Ts = std::vector<tc::Tensor>;
namespace cu = tc::detail::cuda;

struct In {
  tc::Shape shape;
  tc::DType dtype = tc::f32;
  double lo = -1, hi = 1;
};
struct Row {
  const char* name;
  std::vector<In> ins;
  std::function<T(const Ts&)> build;
  bool grad = true;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      {"add", {{{2, 3}}, {{3}}}, [](const Ts& x) { return x[0] + x[1]; }},
      {"sub", {{{2, 1, 3}}, {{4, 1}}}, [](const Ts& x) { return x[0] - x[1]; }},
      {"mul", {{{3, 4}}, {{3, 1}}}, [](const Ts& x) { return x[0] * x[1]; }},
      {"div", {{{2, 3}}, {{2, 3}, tc::f32, 0.5, 2}}, [](const Ts& x) { return x[0] / x[1]; }},
      {"scalar_ops", {{{2, 3}}}, [](const Ts& x) { return 1.0 - (x[0] * 2.5 + 1) / 4 * x[0]; }},
      {"neg", {{{5}}}, [](const Ts& x) { return -x[0]; }},
      {"pow_scalar", {{{2, 3}, tc::f32, 0.5, 2}}, [](const Ts& x) { return tc::pow(x[0], 3.0); }},
      {"pow", {{{2, 3}, tc::f32, 0.5, 2}, {{3}, tc::f32, -1, 2}}, [](const Ts& x) { return tc::pow(x[0], x[1]); }},
      {"maximum", {{{3, 4}}, {{4}}}, [](const Ts& x) { return tc::maximum(x[0], x[1]); }},
      {"minimum", {{{3, 4}}, {{3, 4}}}, [](const Ts& x) { return tc::minimum(x[0], x[1]); }},
      {"relu", {{{4, 5}}}, [](const Ts& x) { return tc::relu(x[0]); }},
      {"gelu", {{{4, 5}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::gelu(x[0]); }},
      {"tanh", {{{4, 5}, tc::f32, -2, 2}}, [](const Ts& x) { return tc::tanh(x[0]); }},
      {"sigmoid", {{{4, 5}, tc::f32, -4, 4}}, [](const Ts& x) { return tc::sigmoid(x[0]); }},
      {"exp", {{{4, 5}, tc::f32, -2, 2}}, [](const Ts& x) { return tc::exp(x[0]); }},
      {"log", {{{4, 5}, tc::f32, 0.5, 3}}, [](const Ts& x) { return tc::log(x[0]); }},
      {"sqrt", {{{4, 5}, tc::f32, 0.5, 3}}, [](const Ts& x) { return tc::sqrt(x[0]); }},
      {"rsqrt", {{{4, 5}, tc::f32, 0.5, 3}}, [](const Ts& x) { return tc::rsqrt(x[0]); }},
      {"abs", {{{4, 5}}}, [](const Ts& x) { return tc::abs(x[0]); }},
      {"square", {{{4, 5}}}, [](const Ts& x) { return tc::square(x[0]); }},
      {"lt", {{{3, 4}}, {{4}}}, [](const Ts& x) { return x[0] < x[1]; }, false},
      {"ge", {{{3, 4}}, {{3, 1}}}, [](const Ts& x) { return x[0] >= x[1]; }, false},
      {"gt", {{{3, 4}}, {{4}}}, [](const Ts& x) { return x[0] > x[1]; }, false},
      {"le_scalar", {{{3, 4}}}, [](const Ts& x) { return x[0] <= 0.25; }, false},
      {"eq_i32", {{{6}, tc::i32, 0, 2}, {{6}, tc::i32, 0, 2}}, [](const Ts& x) { return tc::eq(x[0], x[1]); }, false},
      {"ne_i32", {{{6}, tc::i32, 0, 2}, {{6}, tc::i32, 0, 2}}, [](const Ts& x) { return tc::ne(x[0], x[1]); }, false},
      {"logical_not", {{{7}, tc::b8, 0, 1}}, [](const Ts& x) { return tc::logical_not(x[0]); }, false},
      {"where", {{{3, 4}, tc::b8, 0, 1}, {{3, 4}}, {{4}}}, [](const Ts& x) { return tc::where(x[0], x[1], x[2]); }},
      {"masked_fill", {{{3, 4}}, {{1, 4}, tc::b8, 0, 1}}, [](const Ts& x) { return tc::masked_fill(x[0], x[1], -7.0); }},
      {"sum_axis_keepdim", {{{2, 3, 4}}}, [](const Ts& x) { return tc::sum(x[0], {1}, true); }},
      {"sum_all", {{{2, 3, 4}}}, [](const Ts& x) { return tc::sum(x[0]); }},
      {"sum_i32", {{{2, 3}, tc::i32, -5, 5}}, [](const Ts& x) { return tc::sum(x[0], {0}); }, false},
      {"mean_axes", {{{2, 3, 4}}}, [](const Ts& x) { return tc::mean(x[0], {0, -1}); }},
      {"sum_rows", {{{3, 260}}}, [](const Ts& x) { return tc::sum(x[0], {0}); }},
      {"max_rows_keepdim", {{{9, 70}}}, [](const Ts& x) { return tc::max(x[0], {0}, true); }},
      {"mean_leading", {{{5, 3, 130}}}, [](const Ts& x) { return tc::mean(x[0], {0, 1}); }},
      {"max_axis", {{{3, 5}}}, [](const Ts& x) { return tc::max(x[0], {-1}); }},
      {"max_all_keepdim", {{{3, 5}}}, [](const Ts& x) { return tc::max(x[0], {}, true); }},
      {"softmax", {{{3, 5}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::softmax(x[0]); }},
      {"log_softmax", {{{2, 2, 5}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::log_softmax(x[0], -1); }},
      {"matmul_2d", {{{3, 4}}, {{4, 5}}}, [](const Ts& x) { return tc::matmul(x[0], x[1]); }},
      {"matmul_batched", {{{2, 3, 4}}, {{2, 4, 2}}}, [](const Ts& x) { return tc::matmul(x[0], x[1]); }},
      {"matmul_broadcast", {{{2, 3, 4}}, {{4, 5}}}, [](const Ts& x) { return tc::matmul(x[0], x[1]); }},
      {"reshape", {{{2, 6}}}, [](const Ts& x) { return x[0].reshape({3, -1}) * x[0].reshape({3, 4}); }},
      {"unsqueeze", {{{3}}}, [](const Ts& x) { return tc::unsqueeze(x[0], 0) * 2.0; }},
      {"transpose", {{{2, 3, 4}}}, [](const Ts& x) { return tc::transpose(x[0], 0, 2); }},
      {"permute", {{{2, 3, 4}}}, [](const Ts& x) { return tc::permute(x[0], {1, 2, 0}); }},
      {"broadcast_to", {{{3, 1}}}, [](const Ts& x) { return tc::broadcast_to(x[0], {2, 3, 4}); }},
      {"slice", {{{4, 5}}}, [](const Ts& x) { return tc::slice(x[0], 1, 1, 4); }},
      {"concat", {{{2, 3}}, {{2, 2}}}, [](const Ts& x) { return tc::concat({x[0], x[1]}, 1); }},
      {"gather_axis1", {{{2, 4, 3}}, {{5}, tc::i32, 0, 3}}, [](const Ts& x) { return tc::gather(x[0], x[1], 1); }},
      {"embedding", {{{5, 3}}, {{2, 3}, tc::i32, 0, 4}}, [](const Ts& x) { return tc::embedding(x[0], x[1]); }},
      {"one_hot", {{{4}, tc::i32, -1, 3}}, [](const Ts& x) { return tc::one_hot(x[0], 3); }, false},
      {"cast_f32_i32", {{{6}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::cast(x[0], tc::i32); }, false},
      {"cast_i32_f32", {{{6}, tc::i32, -3, 3}}, [](const Ts& x) { return tc::cast(x[0], tc::f32) * 0.5; }, false},
      {"dropout", {{{4, 8}}}, [](const Ts& x) { return tc::dropout(x[0], 0.25, 42); }},
      {"randn_plus", {{{3, 4}}}, [](const Ts& x) { return x[0] + tc::randn({3, 4}, 7); }},
      {"arange_full", {{{4}}},
       [](const Ts& x) { return x[0] * tc::arange(4) + tc::full({4}, 0.5) - tc::ones({4}) + tc::zeros({1}); }},
      {"rand_times", {{{2, 5}}}, [](const Ts& x) { return x[0] * tc::rand({2, 5}, 3); }},
      {"arange_range_i32", {{{3}, tc::i32, -2, 2}}, [](const Ts& x) { return x[0] + tc::arange(2.0, 8.0, 2.0, tc::i32); }, false},
      {"softmax_axis0", {{{4, 3}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::softmax(x[0], 0); }},
      {"cross_entropy_mask", {{{2, 3, 4}, tc::f32, -2, 2}, {{2, 3}, tc::i32, 0, 3}, {{2, 3}, tc::b8, 0, 1}},
       [](const Ts& x) { return tc::nn::cross_entropy(x[0], x[1], x[2]); }},
      {"mse_loss", {{{3, 4}}, {{3, 4}}}, [](const Ts& x) { return tc::nn::mse_loss(x[0], x[1]); }},
      {"cross_entropy_ignore", {{{4, 5}, tc::f32, -2, 2}, {{4}, tc::i32, -1, 4}},
       [](const Ts& x) { return tc::nn::cross_entropy(x[0], x[1], -1); }},
      {"layer_norm", {{{3, 6}}}, [](const Ts& x) { return tc::nn::LayerNorm(6).forward(x[0], tc::SourceLocation::current()); }},
      {"self_attention", {{{2, 5, 18}}}, [](const Ts& x) { return tc::self_attention(x[0], 2); }},
      {"self_attention_mask", {{{2, 6, 12}}, {{2, 6}, tc::b8, 0, 1}}, [](const Ts& x) { return tc::self_attention(x[0], 1, x[1]); }},
      {"layer_norm_affine", {{{70, 10}, tc::f32, -2, 2}, {{10}}, {{10}}},
       [](const Ts& x) { return tc::layer_norm(x[0], x[1], x[2], 1e-3); }},
      {"layer_norm_3d", {{{2, 3, 12}}, {{12}}, {{12}}}, [](const Ts& x) { return tc::layer_norm(x[0], x[1], x[2]) * x[0]; }},
      {"self_attention_blocks", {{{1, 70, 12}, tc::f32, -2, 2}, {{1, 70}, tc::b8, 0, 1}},
       [](const Ts& x) { return tc::self_attention(x[0], 2, x[1]); }},
      // The layer norm from its primitive ops (reductions and elementwise).
      {"layer_norm_primitives", {{{3, 6}}},
       [](const Ts& x) {
         T d = x[0] - tc::mean(x[0], {-1}, true);
         return d * tc::rsqrt(tc::mean(d * d, {-1}, true) + 1e-5);
       }},
      {"layer_norm_wide", {{{5, 300}}, {{300}}, {{300}}}, [](const Ts& x) { return tc::layer_norm(x[0], x[1], x[2]); }},
      // Sized for the CUDA kernels' other paths: 128- and 256-thread
      // reductions (several warps through shared memory), more outputs than
      // a grid has blocks (8192), more elements than one grid-stride pass
      // (256 x 8192), a product with both operands transposed.
      {"sum_rows_128", {{{6, 100}}}, [](const Ts& x) { return tc::sum(x[0], {1}); }},
      {"max_long_rows", {{{3, 3000}}}, [](const Ts& x) { return tc::max(x[0], {1}); }},
      {"softmax_long_rows", {{{2, 700}}, }, [](const Ts& x) { return tc::softmax(x[0]); }},
      {"sum_many_outputs", {{{9000, 3}}}, [](const Ts& x) { return tc::sum(x[0], {1}); }},
      {"tanh_beyond_one_pass", {{{2100000}}}, [](const Ts& x) { return tc::tanh(x[0]) * 0.5; }, false},
      {"matmul_transposed", {{{4, 3}}, {{5, 4}}},
       [](const Ts& x) { return tc::matmul(tc::transpose(x[0], 0, 1), tc::transpose(x[1], 0, 1)); }},
  };
  return r;
}

Ts make_inputs(const Row& row, uint64_t seed) {
  std::mt19937_64 gen(seed);
  Ts out;
  for (const In& in : row.ins) {
    const int64_t n = tc::numel(in.shape);
    if (in.dtype == tc::f32) {
      std::vector<float> v(static_cast<std::size_t>(n));
      for (auto& x : v) x = static_cast<float>(std::uniform_real_distribution<double>(in.lo, in.hi)(gen));
      out.push_back(tc::from_host(v, in.shape));
    } else {
      std::vector<int32_t> v(static_cast<std::size_t>(n));
      for (auto& x : v) x = std::uniform_int_distribution<int>(int(in.lo), int(in.hi))(gen);
      T t = tc::from_host(v, in.shape);
      out.push_back(in.dtype == tc::b8 ? tc::cast(t, tc::b8) : t);
    }
  }
  return out;
}

struct Values {
  std::vector<float> fwd;
  std::vector<std::vector<float>> grads;
};

// Every row's forward value and the gradients of sum(out * w), lazily in one
// mark_step() (one graph) or eagerly.
std::vector<Values> all_rows(bool eager) {
  tc::set_eager(eager);
  std::vector<T> fwd;
  std::vector<Ts> grads(rows().size());
  for (std::size_t i = 0; i < rows().size(); ++i) {
    const Row& row = rows()[i];
    Ts xs = make_inputs(row, 1234 + i);
    fwd.push_back(row.build(xs));
    if (!row.grad) continue;
    std::mt19937_64 gen(99 + i);
    std::vector<float> w(static_cast<std::size_t>(fwd.back().numel()));
    for (auto& x : w) x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(gen));
    Ts params;
    for (std::size_t k = 0; k < xs.size(); ++k)
      if (row.ins[k].dtype == tc::f32) params.push_back(xs[k]);
    grads[i] = tc::grad(tc::sum(fwd.back() * tc::from_host(w, fwd.back().shape())), params);
  }
  tc::mark_step();
  tc::set_eager(false);
  std::vector<Values> out(rows().size());
  for (std::size_t i = 0; i < rows().size(); ++i) {
    out[i].fwd = fwd[i].to_host();
    for (auto& g : grads[i]) out[i].grads.push_back(g.to_host());
  }
  return out;
}

[[maybe_unused]] void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && bad < 5; ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i]))))
      ++bad, ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", eager " << want[i];
}

// A backend that keeps the programs it compiles and hands them to cuda-emulated.
class Capturing final : public tc::detail::Backend {
 public:
  explicit Capturing(tc::detail::Backend& inner) : inner_(inner) {}
  struct Compiled {
    tc::detail::Program program;
    int64_t graph_id;
  };
  std::vector<Compiled> programs;
  const char* name() const override { return inner_.name(); }
  bool host_memory() const override { return inner_.host_memory(); }
  void* alloc(std::size_t n) override { return inner_.alloc(n); }
  void free(void* p, std::size_t n) override { inner_.free(p, n); }
  void copy_to_host(void* d, const void* s, std::size_t n) override { inner_.copy_to_host(d, s, n); }
  void copy_from_host(void* d, const void* s, std::size_t n) override { inner_.copy_from_host(d, s, n); }
  tc::detail::CompiledCode compile(const tc::detail::Program& p, int64_t graph_id) override {
    programs.push_back({p, graph_id});
    return inner_.compile(p, graph_id);
  }
  void synchronize() override { inner_.synchronize(); }
  bool symbolic_sizes() const override { return inner_.symbolic_sizes(); }
  std::string symbolic_unsupported(const tc::detail::Program& p) const override { return inner_.symbolic_unsupported(p); }
  Ceilings ceilings() override { return inner_.ceilings(); }

 private:
  tc::detail::Backend& inner_;
};

// The backend under test: cuda-emulated, or TC_CUDA_TEST_BACKEND (=cuda on a
// GPU: scripts/gpu-check.sh runs these tests on the device).
std::string backend_under_test() {
  const char* e = std::getenv("TC_CUDA_TEST_BACKEND");
  return e && *e ? e : "cuda-emulated";
}

tc::detail::Backend& emulated() {
  std::string why;
  tc::detail::Backend* b = tc::detail::find_backend(backend_under_test(), &why);
  if (!b) throw std::runtime_error(why);
  return *b;
}

// The op table's graph, captured once for the tests below.
Capturing& table_run(std::vector<Values>* eager_out = nullptr, std::vector<Values>* emulated_out = nullptr) {
  static Capturing capture(emulated());
  static std::vector<Values> eager, compiled;
  static bool done = [] {
    eager = all_rows(true);
    tc::detail::ScopedBackend use(capture);
    compiled = all_rows(false);
    return true;
  }();
  (void)done;
  if (eager_out) *eager_out = eager;
  if (emulated_out) *emulated_out = compiled;
  return capture;
}

// One step's graph whose dims follow the sequence length t (a dynamic
// program from the third length on); its values, run now.
[[maybe_unused]] std::vector<std::vector<float>> length_graph(int64_t t) {
  constexpr int64_t B = 2, D = 8, V = 11;
  Ts x = make_inputs({"x", {{{B, t, D}}, {{D, 5}}, {{D}}, {{3 * D, 3 * D}}}, nullptr}, 7);
  std::vector<int32_t> ids(static_cast<std::size_t>(B * t));
  std::vector<float> pad(static_cast<std::size_t>(B * t));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7 + 3) % V), pad[i] = i % 5 == 4;
  T mask = tc::cast(tc::from_host(pad, {B, t}), tc::b8);
  T table = make_inputs({"t", {{{V, D}}}, nullptr}, 8)[0];
  T qkv = tc::matmul(tc::concat({x[0], x[0] * 0.5, tc::tanh(x[0])}, 2), x[3]);
  Ts out = {
      tc::gelu(x[0] * x[2]),
      tc::mean(x[0], {1}),
      tc::softmax(x[0], 1),
      tc::matmul(x[0], x[1]),
      tc::matmul(x[0], tc::transpose(x[0], 1, 2)),
      tc::matmul(tc::transpose(x[0], 1, 2), x[0]),
      tc::layer_norm(x[0], x[2], x[2]),
      tc::self_attention(qkv, 2, mask),
      tc::embedding(table, tc::from_host(ids, {B, t})) * x[0],
      tc::slice(x[0], 1, 1, t),
  };
  T loss = tc::zeros({});
  for (const T& o : out) loss = loss + tc::sum(o * o);
  Ts grads = tc::grad(loss, {x[0], x[1], x[2], x[3], table});
  tc::mark_step();
  std::vector<std::vector<float>> values;
  for (const T& o : out) values.push_back(o.to_host());
  for (const T& g : grads) values.push_back(g.to_host());
  return values;
}

#if TC_CUDA_TEST_PART == 1
TEST(CudaEmulated, EveryOpTableRowMatchesEager) {
  std::vector<Values> eager, got;
  Capturing& c = table_run(&eager, &got);
  EXPECT_EQ(c.programs.size(), 1u);  // one graph for every row
  for (std::size_t i = 0; i < rows().size(); ++i) {
    SCOPED_TRACE(rows()[i].name);
    expect_close(got[i].fwd, eager[i].fwd, 1e-5, "forward");
    ASSERT_EQ(got[i].grads.size(), eager[i].grads.size());
    for (std::size_t p = 0; p < got[i].grads.size(); ++p)
      expect_close(got[i].grads[p], eager[i].grads[p], 1e-4, "gradient " + std::to_string(p));
  }
}

// Dynamic programs on the backend under test: lengths 3 and 5 compile
// static graphs, 7 the dynamic one (sizes, indices and arena offsets read
// from the size table), which serves 2, 9 (the arena grows) and 4; each
// against eager.
TEST(CudaEmulated, ALengthPerStepMatchesEagerWithOneDynamicBuild) {
  Capturing c(emulated());
  for (int64_t t : {3, 5, 7, 2, 9, 4}) {
    std::vector<std::vector<float>> got;
    {
      tc::detail::ScopedBackend use(c);
      got = length_graph(t);
    }
    tc::set_eager(true);
    std::vector<std::vector<float>> want = length_graph(t);
    tc::set_eager(false);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t r = 0; r < got.size(); ++r) expect_close(got[r], want[r], 1e-4, "t=" + std::to_string(t) + " value " + std::to_string(r));
  }
  ASSERT_EQ(c.programs.size(), 3u);
  EXPECT_FALSE(c.programs[1].program.sym);
  EXPECT_TRUE(c.programs[2].program.sym);
}

TEST(CudaEmulated, TheTableUsesEveryKernelPath) {
  Capturing& c = table_run();
  ASSERT_FALSE(c.programs.empty());
  cu::CudaProgram cp = cu::emit_cuda(c.programs[0].program, c.programs[0].graph_id);
  std::set<int> blocks;
  bool barrier = false, memset = false, gemm = false, batched = false, strided = false;
  for (const cu::Step& s : cp.steps) {
    if (s.kind == cu::Step::Launch && s.barriers) blocks.insert(s.block), barrier = true;
    if (s.kind == cu::Step::Launch && !s.barriers && cu::grid(s, 0) == cu::kMaxBlocks) strided = true;
    memset = memset || s.kind == cu::Step::Memset;
    gemm = gemm || s.kind == cu::Step::Gemm;
    if (s.kind == cu::Step::Gemm)
      for (const cu::GemmCall& g : cu::gemm_calls(s.gemm, 0)) batched = batched || g.count > 1;
  }
  EXPECT_TRUE(barrier && memset && gemm && batched && strided);
  EXPECT_EQ(blocks, (std::set<int>{32, 128, 256}));
  // Kernels are named for the CUPTI join: tc_g<graph>_k<n>.
  const std::string prefix = "tc_g" + std::to_string(c.programs[0].graph_id) + "_k";
  for (const std::string& f : cp.functions) EXPECT_EQ(f.rfind(prefix, 0), 0u) << f;
}

#endif  // TC_CUDA_TEST_PART == 1

#if TC_CUDA_TEST_PART == 2
#ifdef TC_PTXAS
// NVRTC for compute_90, then ptxas for sm_90: the CUDA C of `cp` is valid and
// assembles for the H100/H200 architecture, every kernel an entry.
void expect_compiles_for_sm90(const cu::CudaProgram& cp) {
  std::string why;
  const cu::api::Nvrtc* rtc = cu::api::nvrtc(&why);
  ASSERT_TRUE(rtc) << why;
  tc::test::TempDir dir;
  cu::api::nvrtcProgram prog = nullptr;
  ASSERT_EQ(rtc->nvrtcCreateProgram(&prog, cp.source.c_str(), "table.cu", 0, nullptr, nullptr), 0);
  const char* opts[] = {"-arch=compute_90", "--fmad=false", "-std=c++17"};
  int rc = rtc->nvrtcCompileProgram(prog, 3, opts);
  std::size_t n = 0;
  rtc->nvrtcGetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  if (n) rtc->nvrtcGetProgramLog(prog, log.data());
  ASSERT_EQ(rc, 0) << rtc->nvrtcGetErrorString(rc) << "\n" << log.substr(0, 4000);
  rtc->nvrtcGetPTXSize(prog, &n);
  std::string ptx(n, '\0');
  rtc->nvrtcGetPTX(prog, ptx.data());
  rtc->nvrtcDestroyProgram(&prog);
  for (const std::string& f : cp.functions) EXPECT_NE(ptx.find(".entry " + f), std::string::npos) << f;
  {
    std::ofstream out(dir.file("table.ptx"));
    out << ptx.c_str();
  }
  auto e = tc::test::run({TC_PTXAS, "-arch=sm_90", "-o", dir.file("table.cubin"), dir.file("table.ptx")});
  EXPECT_EQ(e.code, 0) << e.err.substr(0, 4000);
  EXPECT_GT(std::filesystem::file_size(dir.file("table.cubin")), 0u);
}
#endif

TEST(CudaNvrtc, TheTableCompilesForSm90) {
#ifndef TC_PTXAS
  GTEST_SKIP() << "built without the CUDA toolkit (CMake found no CUDAToolkit), so no NVRTC or ptxas to check with";
#else
  Capturing& c = table_run();
  ASSERT_FALSE(c.programs.empty());
  for (const auto& compiled : c.programs) expect_compiles_for_sm90(cu::emit_cuda(compiled.program, compiled.graph_id));
#endif
}

// A dynamic program (its sizes read from the size table on the device:
// loops, indices, the arena's offsets) compiles too: the graph of
// tests/compiler/dynamic_test.cpp's kinds (elementwise, reductions over the
// length, products with the length as M, K and batch, layer norm, masked
// attention, a gather, a slice) at lengths 3, 5 and 7 on cuda-emulated.
TEST(CudaNvrtc, ADynamicProgramCompilesForSm90) {
#ifndef TC_PTXAS
  GTEST_SKIP() << "built without the CUDA toolkit (CMake found no CUDAToolkit), so no NVRTC or ptxas to check with";
#else
  Capturing c(emulated());
  {
    tc::detail::ScopedBackend use(c);
    for (int64_t t : {3, 5, 7}) length_graph(t);
  }
  int dynamic = 0;
  for (const auto& compiled : c.programs)
    if (compiled.program.sym) {
      ++dynamic;
      cu::CudaProgram cp = cu::emit_cuda(compiled.program, compiled.graph_id);
      EXPECT_EQ(cp.sizes_slot, compiled.program.sym->table_slot);
      EXPECT_NE(cp.source.find("tc_s"), std::string::npos);
      expect_compiles_for_sm90(cp);
    }
  EXPECT_EQ(dynamic, 1);  // the third length's graph
#endif
}
#endif  // TC_CUDA_TEST_PART == 2

#if TC_CUDA_TEST_PART == 1
// A kernel kind the emitter does not know stops in one line naming it.
TEST(CudaEmitter, AnUnknownKernelKindIsOneLine) {
  tc::detail::Program p;
  tc::detail::Kernel k;
  k.kind = tc::detail::Kernel::Collective;
  p.kernels.push_back(k);
  try {
    cu::emit_cuda(p, 1);
    FAIL() << "no error";
  } catch (const tc::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("the cuda backend cannot compile kernel kind collective yet"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

// A dynamic program with an attention whose head size is symbolic (the
// kernels keep a head's row in registers) is refused before it is emitted:
// the compiler keeps that graph static (Backend::symbolic_unsupported), and
// emit_cuda() says why in one line. (tc's own graphs do not reach it: the
// score scale 1/sqrt(Dh) is part of the shape-erased signature.)
TEST(CudaEmitter, AnAttentionWithASymbolicHeadSizeIsRefused) {
  tc::detail::Program p;
  auto syms = std::make_shared<tc::detail::ProgramSyms>();
  p.sym = syms;
  tc::detail::Kernel k;
  k.kind = tc::detail::Kernel::Attention;
  k.label = "attention";
  k.loop = {1, 3, 2, 4};
  auto ks = std::make_shared<tc::detail::KernelSyms>();
  ks->loop = {{1, 0, 0}, {3, 0, 0}, {2, 0, 0}, {0, 1, 0}};
  k.sym = ks;
  p.kernels.push_back(k);
  const std::string why = cu::symbolic_unsupported(p);
  EXPECT_NE(why.find("head size varies"), std::string::npos) << why;
  try {
    cu::emit_cuda(p, 9);
    FAIL() << "no error";
  } catch (const tc::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot compile dynamic graph 9"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  auto fixed = std::make_shared<tc::detail::KernelSyms>(*ks);
  fixed->loop[3] = {4, 0, 0};
  p.kernels[0].sym = fixed;
  EXPECT_EQ(cu::symbolic_unsupported(p), "");  // a constant head size is fine
}

// Row-major C = op(A) op(B) as cuBLAS's column-major call: B first.
TEST(CudaEmitter, GemmArgumentsSwapTheOperands) {
  cu::GemmCall g;
  g.ta = true;
  g.tb = false;
  g.M = 3, g.N = 5, g.K = 4, g.lda = 3, g.ldb = 5, g.ldc = 5;
  cu::ColumnMajorGemm m = cu::gemm_args(g);
  EXPECT_FALSE(m.trans_first);
  EXPECT_TRUE(m.trans_second);
  EXPECT_EQ(m.m, 5);
  EXPECT_EQ(m.n, 3);
  EXPECT_EQ(m.k, 4);
  EXPECT_EQ(m.ld_first, 5);
  EXPECT_EQ(m.ld_second, 3);
  EXPECT_EQ(m.ldc, 5);
}

// MLP training steps compiled for the CUDA backend (run emulated) give the
// eager model: SGD without momentum exercises the fused update (sgemm into W
// with beta = 1, alpha = -lr read from a device buffer), AdamW the rest.
template <typename Opt, typename Options>
std::vector<float> train_mlp(Options options, int steps, std::vector<float>* losses) {
  std::mt19937_64 gen(7);
  std::vector<float> x(64 * 8);
  std::vector<int32_t> y(64);
  for (auto& v : x) v = static_cast<float>(std::normal_distribution<double>(0, 1)(gen));
  for (auto& v : y) v = std::uniform_int_distribution<int>(0, 2)(gen);
  tc::nn::Sequential model{tc::nn::Linear(8, 32, true, 1), tc::nn::Tanh(), tc::nn::Linear(32, 3, true, 2)};
  Opt opt(model.parameters(), options);
  for (int step = 0; step < steps; ++step) {
    auto loss = tc::nn::cross_entropy(model(tc::from_host(x, {64, 8}, "x")), tc::from_host(y, {64}, "y"));
    opt.step(tc::grad(loss, model.parameters()));
    tc::mark_step();
    losses->push_back(loss.item());
  }
  std::vector<float> params;
  for (auto& p : model.parameters())
    for (float v : p.to_host()) params.push_back(v);
  return params;
}

// Returns the programs compiled (each graph once per process: the compile
// cache is in memory).
template <typename Opt, typename Options>
std::vector<Capturing::Compiled> expect_training_matches(Options options) {
  std::vector<float> eager_loss, emu_loss;
  tc::set_eager(true);
  auto eager = train_mlp<Opt>(options, 4, &eager_loss);
  tc::set_eager(false);
  Capturing capture(emulated());
  std::vector<float> emu;
  {
    tc::detail::ScopedBackend use(capture);
    emu = train_mlp<Opt>(options, 4, &emu_loss);
  }
  EXPECT_FALSE(capture.programs.empty());
  expect_close(emu_loss, eager_loss, 1e-5, "loss");
  expect_close(emu, eager, 1e-4, "parameters");
  return capture.programs;
}

TEST(CudaEmulated, MlpSgdStepsMatchEager) {
  auto programs = expect_training_matches<tc::optim::SGD>(tc::optim::SGDOptions{.lr = 0.1});
  // The fused update is in the plan: an sgemm into W with beta = 1 and alpha
  // computed on the device.
  bool fused = false;
  for (const auto& c : programs)
    for (const cu::Step& s : cu::emit_cuda(c.program, c.graph_id).steps)
      fused = fused || (s.kind == cu::Step::Gemm && s.gemm.beta == 1.0f && s.gemm.alpha_slot >= 0);
  EXPECT_TRUE(fused) << programs.size() << " programs";
}
TEST(CudaEmulated, MlpAdamWStepsMatchEager) {
  expect_training_matches<tc::optim::AdamW>(tc::optim::AdamWOptions{.lr = 0.01});
}

// The in-memory compile cache is per backend: a graph the cpu backend built
// is built again for another backend in the same process, never run there
// with the cpu's code (on a GPU that would hand device pointers to host code).
TEST(CudaEmulated, AGraphBuiltForTheCpuIsBuiltAgainForAnotherBackend) {
  std::vector<float> cpu_loss, emu_loss;
  tc::set_eager(false);
  auto cpu = train_mlp<tc::optim::SGD>(tc::optim::SGDOptions{.lr = 0.05}, 2, &cpu_loss);
  Capturing capture(emulated());
  std::vector<float> emu;
  {
    tc::detail::ScopedBackend use(capture);
    emu = train_mlp<tc::optim::SGD>(tc::optim::SGDOptions{.lr = 0.05}, 2, &emu_loss);
  }
  EXPECT_FALSE(capture.programs.empty()) << "the cpu backend's executable ran under another backend";
  expect_close(emu_loss, cpu_loss, 1e-5, "loss");
  expect_close(emu, cpu, 1e-4, "parameters");
}

// A Transformer encoder layer's training steps (fused attention and layer
// norm, matmuls, SGD) against eager.
TEST(CudaBackend, TransformerStepsMatchEager) {
  auto train = [](std::vector<float>* losses) {
    std::mt19937_64 gen(11);
    std::vector<float> x(4 * 16 * 32);
    std::vector<int32_t> y(4);
    for (auto& v : x) v = static_cast<float>(std::normal_distribution<double>(0, 1)(gen));
    for (auto& v : y) v = std::uniform_int_distribution<int>(0, 2)(gen);
    tc::nn::TransformerEncoderLayer layer(32, 4, 64, 0.0, uint64_t{5});
    tc::nn::Linear head(32, 3, true, 6);
    auto params = layer.parameters();
    for (auto& p : head.parameters()) params.push_back(p);
    tc::optim::SGD opt(params, {.lr = 0.05});
    for (int step = 0; step < 3; ++step) {
      auto h = layer.encode(tc::from_host(x, {4, 16, 32}, "x"), tc::Tensor{});
      auto loss = tc::nn::cross_entropy(head(tc::mean(h, {1})), tc::from_host(y, {4}, "y"));
      opt.step(tc::grad(loss, params));
      tc::mark_step();
      losses->push_back(loss.item());
    }
    std::vector<float> out;
    for (auto& p : params)
      for (float v : p.to_host()) out.push_back(v);
    return out;
  };
  std::vector<float> eager_loss, dev_loss;
  tc::set_eager(true);
  auto eager = train(&eager_loss);
  tc::set_eager(false);
  std::vector<float> dev;
  Capturing capture(emulated());
  {
    tc::detail::ScopedBackend use(capture);
    dev = train(&dev_loss);
  }
  bool attention = false, layer_norm = false;
  for (const auto& c : capture.programs)
    for (const auto& k : c.program.kernels)
      attention = attention || k.kind == tc::detail::Kernel::Attention, layer_norm = layer_norm || k.kind == tc::detail::Kernel::LayerNorm;
  EXPECT_TRUE(attention && layer_norm) << capture.programs.size() << " programs";
  expect_close(dev_loss, eager_loss, 1e-4, "loss");
  expect_close(dev, eager, 1e-3, "parameters");
}

// TC_DEVICE=cuda where there is no driver or device: the program stops at its
// first tensor with one line naming what is missing, exit status 69.
TEST(CudaDevice, MissingDeviceIsOneLineAndExit69) {
  const std::string why = cu::device_unavailable();
  if (why.empty()) GTEST_SKIP() << "this machine has a CUDA device";
  tc::test::TempDir cache;
  auto e = tc::test::run({tc::test::bin("tc-test-compile"), "--batches", "4"},
                         {{"TC_DEVICE", "cuda"}, {"TC_CACHE_DIR", cache.path().string()}, {"TC_PROFILE", ""}, {"TC_PROFILE_FD", ""}});
  EXPECT_EQ(e.code, 69) << e.err;
  EXPECT_EQ(e.err, "tc: TC_DEVICE=cuda: " + why + "\n");
  EXPECT_TRUE(why.find("driver") != std::string::npos || why.find("device") != std::string::npos) << why;
  EXPECT_EQ(e.out, "");
  // An unknown name is still an error naming the backends there are.
  std::string none;
  EXPECT_EQ(tc::detail::find_backend("tpu", &none), nullptr);
  EXPECT_NE(none.find("cpu, cuda, cuda-emulated"), std::string::npos) << none;
}
#endif  // TC_CUDA_TEST_PART == 1

}  // namespace
