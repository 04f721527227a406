// Symbolic dims (issue 31): one build serves every size of a dim that took
// two sizes; compiled equals eager at every size, the size-1 and largest
// edges included; TC_DYNAMIC=off and mark_static keep one graph per size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tc/tc.h>

#include "backend/backend.h"  // compiler/src: the backends the rows run on
#include "events.h"           // compiler/src: counts compilations and plans

namespace {

using T = tc::Tensor;

std::vector<float> randv(int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(gen));
  return v;
}

struct Count : tc::events::TestObserver {
  int compilations = 0, plans = 0;
  void compilation(const tc::events::CompilationRecord&) override { ++compilations; }
  void memory_plan(const tc::events::MemoryPlanRecord&) override { ++plans; }
};

struct EnvGuard {
  explicit EnvGuard(const char* v) {
    if (v) {
      ::setenv("TC_DYNAMIC", v, 1);
    } else {
      ::unsetenv("TC_DYNAMIC");
    }
  }
  ~EnvGuard() { ::unsetenv("TC_DYNAMIC"); }
};

tc::detail::Backend& cpu_backend() {
  std::string why;
  tc::detail::Backend* b = tc::detail::find_backend("cpu", &why);
  if (!b) throw std::runtime_error("no cpu backend: " + why);
  return *b;
}

// The policy tests run on the cpu backend, TC_DYNAMIC unset.
class Dynamic : public ::testing::Test {
 protected:
  tc::detail::ScopedBackend use_{cpu_backend()};
  EnvGuard env_{nullptr};
};

// Compiled equals eager on every backend with dynamic programs: cpu,
// cuda-emulated (the CUDA source and launch plan run on the CPU) and cuda
// (skipped without a device; scripts/gpu-check.sh runs it on one).
class DynamicOnBackend : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string why;
    tc::detail::Backend* b = tc::detail::find_backend(GetParam(), &why);
    if (!b) GTEST_SKIP() << "backend " << GetParam() << " cannot run here: " << why;
    use_.emplace(*b);
  }
  // Each backend's own graph where a test counts compilations: the shapes
  // the compiler has seen are the process's, whatever the backend.
  int variant() const { return std::string(GetParam()) == "cpu" ? 0 : std::string(GetParam()) == "cuda-emulated" ? 1 : 2; }
  std::optional<tc::detail::ScopedBackend> use_;
  EnvGuard env_{nullptr};
};

constexpr int64_t kB = 2, kD = 8, kH = 2, kV = 11, kN = 5;

// Every row's value (each op with the sequence length t as a dim) and the
// gradients of their weighted sum: one graph, one compilation per size.
// `variant` adds that many rows (another graph for another backend).
std::vector<std::vector<float>> rows(int64_t t, bool eager, bool mark_static = false, int variant = 0) {
  tc::set_eager(eager);
  const uint64_t seed = static_cast<uint64_t>(t) * 101;
  T x = tc::from_host(randv(kB * t * kD, seed), {kB, t, kD}, "x");
  if (mark_static) tc::mark_static(x, 1);
  T qkv = tc::from_host(randv(kB * t * 3 * kD, seed + 1), {kB, t, 3 * kD}, "qkv");
  std::vector<int32_t> ids(static_cast<std::size_t>(kB * t)), pad(static_cast<std::size_t>(kB * t));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7 + 3) % kV), pad[i] = i % 5 == 4;
  T tok = tc::from_host(ids, {kB, t}, "ids");
  T mask = tc::cast(tc::from_host(pad, {kB, t}, "mask"), tc::b8);
  T w = tc::from_host(randv(kD * kN, 7), {kD, kN}, "w");
  T gamma = tc::from_host(randv(kD, 8), {kD}, "gamma");
  T beta = tc::from_host(randv(kD, 9), {kD}, "beta");
  T table = tc::from_host(randv(kV * kD, 10), {kV, kD}, "table");
  std::vector<T> out = {
      tc::gelu(x * gamma + beta),                                         // elementwise, broadcast
      tc::mean(x, {1}),                                                   // 1/t
      tc::softmax(x, 1),                                                  // reduce over t
      tc::max(x, {1}, true),
      tc::matmul(x, w),                                                   // [B, t, D] x [D, N]
      tc::matmul(x.reshape({kB * t, kD}), w),                        // [B t, D]
      tc::matmul(x, tc::transpose(x)),                                    // [B, t, t]: t^2 strides
      tc::layer_norm(x, gamma, beta),
      tc::self_attention(qkv, kH, mask),
      tc::embedding(table, tok) * x,                                      // gather
      tc::slice(x, 1, 1, t),                                              // bounds follow t
      tc::concat({x, tc::relu(x)}, 1),
      tc::permute(x, {1, 0, 2}) * 2.0,
      tc::log_softmax(tc::matmul(x, w), -1) * tc::one_hot(tc::cast(tc::slice(tok, 0, 0, 1), tc::i32), kN),
      tc::sum(tc::square(x), {0, 2}),
  };
  for (int v = 0; v < variant; ++v) out.push_back(tc::exp(x) * static_cast<double>(v + 2));
  T loss = tc::zeros({});
  for (std::size_t r = 0; r < out.size(); ++r) {
    T wr = tc::from_host(randv(out[r].numel(), 50 + r), out[r].shape());
    loss = loss + tc::sum(out[r] * wr);
  }
  std::vector<T> grads = tc::grad(loss, {x, qkv, w, gamma, beta, table});
  tc::mark_step();
  tc::set_eager(false);
  std::vector<std::vector<float>> values;
  for (const T& o : out) values.push_back(o.to_host());
  for (const T& g : grads) values.push_back(g.to_host());
  return values;
}

void expect_close(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want, int64_t t) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t r = 0; r < got.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << "row " << r << " at t=" << t;
    for (std::size_t i = 0; i < got[r].size(); ++i)
      ASSERT_LE(std::fabs(got[r][i] - want[r][i]), 1e-4 * (1 + std::fabs(want[r][i])))
          << "row " << r << " element " << i << " at t=" << t << ": compiled " << got[r][i] << ", eager " << want[r][i];
  }
}

// Sizes 3 and 5 compile static graphs; 7 the dynamic one, which then serves
// 2, 9 (the largest: its arena grows, a new plan is recorded), 4 and 7 again;
// 1 stays specialized. Each against the eager executor.
TEST_P(DynamicOnBackend, OpRowsMatchEagerAtEverySize) {
  Count count;
  tc::events::set_test_observer(&count);
  int grown = 0;
  for (int64_t t : {3, 5, 7, 2, 9, 1, 4, 7}) {
    const int before = count.compilations, plans = count.plans;
    auto compiled = rows(t, false, false, variant());
    auto eager = rows(t, true, false, variant());
    expect_close(compiled, eager, t);
    if (t == 9) grown = count.plans - plans;
    if (t == 2 || t == 9 || t == 4 || t == 7) {
      EXPECT_EQ(count.compilations, before + (t == 7 && before == 2 ? 1 : 0)) << "t=" << t;
    }
  }
  tc::events::set_test_observer(nullptr);
  EXPECT_EQ(count.compilations, 4);  // 3, 5, dynamic at 7, and 1
  EXPECT_EQ(grown, 1);               // 9 > 7: the arena grew, with its plan recorded
}

// A small graph: f(x) * x summed over the length, x [2, t, 4]; its value.
// (Tests in one process share the compiler's caches: each test its own f.)
std::vector<float> small(int64_t t, bool mark_static, bool mark_dynamic = false) {
  T x = tc::from_host(randv(2 * t * 4, 1), {2, t, 4}, "x");
  if (mark_static) tc::mark_static(x, 1);
  if (mark_dynamic) tc::mark_dynamic(x, -2);
  T y = tc::sum((mark_dynamic ? tc::sigmoid(x) : tc::tanh(x)) * x, {1});
  tc::mark_step();
  EXPECT_TRUE(y.is_materialized());
  return y.to_host();
}

// TC_DYNAMIC=off and mark_static: one graph per size, as before.
TEST_F(Dynamic, OffAndMarkStaticCompileEverySize) {
  for (int mode = 0; mode < 2; ++mode) {
    EnvGuard env(mode == 0 ? "off" : nullptr);
    Count count;
    tc::events::set_test_observer(&count);
    for (int64_t t : {12, 13, 14, 15}) small(t + 4 * mode, mode == 1);
    tc::events::set_test_observer(nullptr);
    EXPECT_EQ(count.compilations, 4) << (mode == 0 ? "TC_DYNAMIC=off" : "mark_static");
  }
}

// mark_dynamic: the dim is symbolic from its second size (2 compilations
// where automatic dynamic takes 3); compiled equals eager at every size.
TEST_F(Dynamic, MarkDynamicMakesTheSecondSizeSymbolic) {
  Count count;
  tc::events::set_test_observer(&count);
  std::vector<std::vector<float>> got;
  for (int64_t t : {22, 23, 24, 25}) got.push_back(small(t, false, true));
  tc::events::set_test_observer(nullptr);
  EXPECT_EQ(count.compilations, 2);
  tc::set_eager(true);
  for (std::size_t k = 0; k < got.size(); ++k) {
    std::vector<float> want = small(22 + static_cast<int64_t>(k), false, true);
    ASSERT_EQ(got[k].size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[k][i], want[i], 1e-5 * (1 + std::fabs(want[i])));
  }
  tc::set_eager(false);
  EXPECT_THROW(tc::mark_dynamic(tc::zeros({2, 3}), 2), tc::Error);
}

// A small Transformer classifier (the demo's shape: embedding, positions,
// an encoder layer with a key-padding mask, mean pooling, AdamW) trained for
// 30 steps whose sequence length changes every step, compiled against eager.
struct Trained {
  std::vector<float> losses, params;
  std::size_t key_bias = 0;  // where the attention's key bias starts in params
  int compilations = 0;
};

Trained train_lengths(bool eager) {
  tc::set_eager(eager);
  constexpr int64_t B = 4, Dm = 16, V = 23, P = 16, C = 3;
  tc::nn::Embedding tokens(V, Dm, 1), positions(P, Dm, 2);
  tc::nn::TransformerEncoderLayer layer(Dm, 2, 32, 0.0, 3);
  tc::nn::Linear head(Dm, C, true, 4);
  std::vector<T> params = tokens.parameters();
  for (auto* m : std::initializer_list<tc::nn::Module*>{&positions, &layer, &head})
    for (const T& p : m->parameters()) params.push_back(p);
  tc::optim::AdamW opt(params, {.lr = 1e-2});
  Count count;
  tc::events::set_test_observer(&count);
  Trained r;
  for (int step = 0; step < 30; ++step) {
    const int64_t len = step == 20 ? 1 : 2 + (step * 5) % 13;  // 1 and 2..14: the edges and every size between
    std::vector<int32_t> ids(static_cast<std::size_t>(B * len)), labels(B);
    for (int64_t b = 0; b < B; ++b) {
      labels[static_cast<std::size_t>(b)] = static_cast<int32_t>((b + step) % C);
      for (int64_t j = 0; j < len; ++j)  // a padded tail in the last row
        ids[static_cast<std::size_t>(b * len + j)] = b == B - 1 && j >= 1 && j == len - 1 ? 0 : static_cast<int32_t>(1 + (b * 7 + j * 3 + step) % (V - 1));
    }
    T x_ids = tc::from_host(ids, {B, len}, "input_ids");
    T pad = x_ids < 1;
    T x = tokens(x_ids) + positions(tc::arange(len, tc::i32)) * 0.1;
    x = layer.encode(x, pad);
    T keep = tc::cast(tc::logical_not(pad), tc::f32);
    T pooled = tc::sum(x * tc::unsqueeze(keep, -1), {1}) / tc::sum(keep, {1}, true);
    T loss = tc::nn::cross_entropy(head(pooled), tc::from_host(labels, {B}, "labels"));
    opt.step(tc::grad(loss, params));
    tc::mark_step();
    r.losses.push_back(loss.item());
  }
  tc::events::set_test_observer(nullptr);
  tc::set_eager(false);
  for (const T& p : params) {
    if (p.node() == layer.attn.k.bias.node()) r.key_bias = r.params.size();
    for (float v : p.to_host()) r.params.push_back(v);
  }
  r.compilations = count.compilations;
  return r;
}

TEST_P(DynamicOnBackend, TrainingWithALengthPerStepMatchesEager) {
  Trained eager = train_lengths(true);
  Trained lazy = train_lengths(false);
  ASSERT_EQ(lazy.params.size(), eager.params.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i)
    EXPECT_NEAR(lazy.losses[i], eager.losses[i], 1e-4 * (1 + std::fabs(eager.losses[i]))) << "step " << i;
  // The key bias adds the same score to every key of a query: softmax
  // cancels it, its gradient is 0 up to rounding, and AdamW turns either
  // executor's rounding noise into steps of lr (so does TC_DYNAMIC=off).
  for (std::size_t i = 0; i < eager.params.size(); ++i)
    if (i < eager.key_bias || i >= eager.key_bias + 16) {
      EXPECT_NEAR(lazy.params[i], eager.params[i], 1e-4 * (1 + std::fabs(eager.params[i]))) << "parameter element " << i;
    }
  // Two static graphs, the dynamic one at the third length, length 1's own.
  EXPECT_LE(lazy.compilations, 4);
}

INSTANTIATE_TEST_SUITE_P(Backends, DynamicOnBackend, ::testing::Values("cpu", "cuda-emulated", "cuda"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
