// The compiled path against the eager reference: whole training runs step by
// step, the number of compilations, and the planned memory.
//
// Stated tolerances: losses within 1e-4 relative each step; parameters within
// 1e-4 * (1 + |eager|) after training (BLAS and reduction order are the same
// as eager; elementwise code is built with -ffp-contract=off).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <random>
#include <sstream>
#include <tc/tc.h>

#include "events.h"  // compiler/src: the test observer sees compilations and memory plans

namespace {

struct Watch : tc::events::TestObserver {
  int compilations = 0;
  std::vector<std::string> reasons;
  tc::events::MemoryPlanRecord plan;
  void compilation(const tc::events::CompilationRecord& c) override {
    ++compilations;
    reasons.push_back(c.reason);
  }
  void memory_plan(const tc::events::MemoryPlanRecord& m) override { plan = m; }
};

struct Observe {
  Watch w;
  Observe() { tc::events::set_test_observer(&w); }
  ~Observe() { tc::events::set_test_observer(nullptr); }
};

struct Eager {
  explicit Eager(bool on) { tc::set_eager(on); }
  ~Eager() { tc::set_eager(false); }
};

struct RunResult {
  std::vector<float> losses, params;
  int compilations = 0;
};

void expect_same_run(const RunResult& compiled, const RunResult& eager) {
  ASSERT_EQ(compiled.losses.size(), eager.losses.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i)
    EXPECT_LE(std::fabs(compiled.losses[i] - eager.losses[i]), 1e-4 * std::fabs(eager.losses[i]) + 1e-7)
        << "step " << i << ": compiled " << compiled.losses[i] << " eager " << eager.losses[i];
  ASSERT_EQ(compiled.params.size(), eager.params.size());
  int bad = 0;
  for (std::size_t i = 0; i < eager.params.size(); ++i)
    if (std::fabs(compiled.params[i] - eager.params[i]) > 1e-4 * (1 + std::fabs(eager.params[i])) && bad++ < 5)
      ADD_FAILURE() << "parameter " << i << ": compiled " << compiled.params[i] << " eager " << eager.params[i];
  if (bad) ADD_FAILURE() << bad << " parameters differ";
}

// ---- MLP ---------------------------------------------------------------------------

RunResult train_mlp(bool eager, int steps, int64_t batch = 32) {
  Eager mode(eager);
  Observe obs;
  tc::nn::Sequential model{tc::nn::Linear(24, 48, true, 1), tc::nn::ReLU(), tc::nn::Linear(48, 48, true, 2),
                           tc::nn::Tanh(), tc::nn::Linear(48, 5, true, 3)};
  tc::optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4});
  std::mt19937_64 gen(5);
  std::normal_distribution<float> nd(0, 1);
  RunResult r;
  for (int step = 0; step < steps; ++step) {
    std::vector<float> xs(static_cast<std::size_t>(batch * 24));
    for (auto& v : xs) v = nd(gen);
    std::vector<int32_t> ys(static_cast<std::size_t>(batch));
    for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>(xs[i * 24] > 0) + 2 * (xs[i * 24 + 1] > 0);
    auto x = tc::from_host(xs, {batch, 24}, "x");
    auto y = tc::from_host(ys, {batch}, "y");
    auto loss = tc::nn::cross_entropy(model(x), y);
    opt.step(tc::grad(loss, model.parameters()));
    tc::mark_step();
    r.losses.push_back(loss.item());
  }
  for (auto& p : model.parameters())
    for (float v : p.to_host()) r.params.push_back(v);
  r.compilations = obs.w.compilations;
  return r;
}

TEST(Compiled, MlpTrainsLikeEager) {
  RunResult eager = train_mlp(true, 12);
  RunResult compiled = train_mlp(false, 12);
  expect_same_run(compiled, eager);
  EXPECT_LE(compiled.compilations, 1);  // one step graph (0 when an earlier test built it)
  EXPECT_LT(compiled.losses.back(), compiled.losses.front());
}

// ---- Transformer encoder -----------------------------------------------------------

struct Seqs {
  int64_t b, t;
  std::vector<int32_t> ids, labels, pad;
};

Seqs make_seqs(uint64_t seed, int64_t b, int64_t t) {
  Seqs s{b, t, {}, {}, {}};
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < b; ++i) {
    int64_t len = std::uniform_int_distribution<int64_t>(t / 2, t)(gen);
    bool has = false;
    for (int64_t j = 0; j < t; ++j) {
      int tok = j < len ? std::uniform_int_distribution<int>(1, 5)(gen) : 0;
      has = has || tok == 5;
      s.ids.push_back(tok);
      s.pad.push_back(j >= len);
    }
    s.labels.push_back(has);
  }
  return s;
}

struct Classifier {
  tc::nn::Embedding emb;
  tc::nn::TransformerEncoderLayer layer;
  tc::nn::Linear head;
  Classifier(int64_t d, int64_t heads, int64_t ff, double p)
      : emb(6, d, 11), layer(d, heads, ff, p, 12), head(d, 2, true, 13) {}

  std::vector<tc::Tensor> parameters() const {
    auto p = emb.parameters();
    for (auto& t : layer.parameters()) p.push_back(t);
    for (auto& t : head.parameters()) p.push_back(t);
    return p;
  }
  tc::Tensor loss(const Seqs& s) {
    auto ids = tc::from_host(s.ids, {s.b, s.t}, "ids");
    auto pad = tc::cast(tc::from_host(s.pad, {s.b, s.t}, "pad"), tc::b8);
    auto labels = tc::from_host(s.labels, {s.b}, "labels");
    auto h = layer.encode(emb(ids), pad);
    auto keep = tc::unsqueeze(tc::cast(tc::logical_not(pad), tc::f32), -1);
    auto pooled = tc::sum(h * keep, {1}) / tc::sum(keep, {1});
    return tc::nn::cross_entropy(head(pooled), labels);
  }
};

RunResult train_transformer(bool eager, int steps, double dropout) {
  Eager mode(eager);
  Observe obs;
  Seqs data = make_seqs(3, 12, 8);
  Classifier model(16, 2, 32, dropout);
  tc::optim::SGD opt(model.parameters(), {.lr = 0.02, .momentum = 0.9});
  RunResult r;
  for (int step = 0; step < steps; ++step) {
    auto loss = model.loss(data);
    opt.step(tc::grad(loss, model.parameters()));
    tc::mark_step();
    r.losses.push_back(loss.item());
  }
  for (auto& p : model.parameters())
    for (float v : p.to_host()) r.params.push_back(v);
  r.compilations = obs.w.compilations;
  return r;
}

TEST(Compiled, TransformerEncoderTrainsLikeEager) {
  RunResult eager = train_transformer(true, 8, 0.0);
  RunResult compiled = train_transformer(false, 8, 0.0);
  expect_same_run(compiled, eager);
  EXPECT_LE(compiled.compilations, 1);
}

TEST(Compiled, TransformerWithDropoutTrainsLikeEager) {
  // Dropout draws counter-based random numbers from a seed that is a device
  // input: every step draws new masks, the step graph stays the same (one
  // compilation), and eager and compiled draw the same masks.
  RunResult eager = train_transformer(true, 8, 0.1);
  RunResult compiled = train_transformer(false, 8, 0.1);
  expect_same_run(compiled, eager);
  EXPECT_LE(compiled.compilations, 1);
  for (float l : compiled.losses) EXPECT_TRUE(std::isfinite(l));
  RunResult no_dropout = train_transformer(true, 8, 0.0);
  EXPECT_NE(no_dropout.losses[1], eager.losses[1]) << "dropout must change the run";
}

// ---- memory ---------------------------------------------------------------------------

// Peak device bytes of one training step (the second, so nothing compiles in
// it), measured by the runtime allocator; `planned` gets the memory plan's peak.
template <typename Model, typename Loss>
int64_t step_peak(bool eager, Model& model, Loss&& loss_fn, int64_t* planned) {
  Eager mode(eager);
  Observe obs;
  tc::optim::AdamW opt(model.parameters(), {.lr = 1e-3});
  int64_t peak = 0;
  for (int step = 0; step < 2; ++step) {
    tc::reset_peak_memory();
    auto loss = loss_fn();
    opt.step(tc::grad(loss, model.parameters()));
    tc::mark_step();
    peak = tc::memory_stats().peak;
  }
  if (planned) *planned = obs.w.plan.peak;
  return peak;
}

TEST(Compiled, TransformerStepPeakIsAtMostSevenTenthsOfEager) {
  Seqs data = make_seqs(9, 32, 128);
  int64_t eager_peak, compiled_peak, planned = 0;
  {
    Classifier model(32, 4, 64, 0.1);
    eager_peak = step_peak(true, model, [&] { return model.loss(data); }, nullptr);
  }
  {
    Classifier model(32, 4, 64, 0.1);
    compiled_peak = step_peak(false, model, [&] { return model.loss(data); }, &planned);
  }
  double ratio = static_cast<double>(compiled_peak) / static_cast<double>(eager_peak);
  std::printf("transformer encoder step (batch 32, seq 128): eager peak %lld, compiled peak %lld (planned %lld), ratio %.3f\n",
              static_cast<long long>(eager_peak), static_cast<long long>(compiled_peak),
              static_cast<long long>(planned), ratio);
  EXPECT_LE(ratio, 0.7);
  if (planned > 0) {
    EXPECT_EQ(planned, compiled_peak);
  }  // the plan predicts what the allocator sees
}

TEST(Compiled, MlpStepPeakRatioIsReported) {
  auto make = [] {
    return tc::nn::Sequential{tc::nn::Linear(784, 512, true, 1), tc::nn::ReLU(), tc::nn::Linear(512, 512, true, 2),
                              tc::nn::ReLU(), tc::nn::Linear(512, 10, true, 3)};
  };
  std::vector<float> xs(128 * 784, 0.25f);
  std::vector<int32_t> ys(128, 3);
  int64_t eager_peak, compiled_peak;
  {
    auto model = make();
    eager_peak = step_peak(true, model, [&] {
      return tc::nn::cross_entropy(model(tc::from_host(xs, {128, 784}, "x")), tc::from_host(ys, {128}, "y"));
    }, nullptr);
  }
  {
    auto model = make();
    compiled_peak = step_peak(false, model, [&] {
      return tc::nn::cross_entropy(model(tc::from_host(xs, {128, 784}, "x")), tc::from_host(ys, {128}, "y"));
    }, nullptr);
  }
  double ratio = static_cast<double>(compiled_peak) / static_cast<double>(eager_peak);
  std::printf("MLP 784-512-512-10 step (batch 128, AdamW): eager peak %lld, compiled peak %lld, ratio %.3f\n",
              static_cast<long long>(eager_peak), static_cast<long long>(compiled_peak), ratio);
  EXPECT_LT(ratio, 1.0);
}

// ---- recompilation reasons (in process; the store is checked end to end elsewhere) ----

TEST(Compiled, BatchChangeRecompilesOnceAndReturningCompilesNothing) {
  Observe obs;
  tc::nn::Linear lin(6, 3, true, 4);
  tc::optim::SGD opt(lin.parameters(), {.lr = 0.1});
  std::vector<int> compiles;
  for (int64_t b : {5, 5, 7, 7, 5}) {
    std::vector<float> xs(static_cast<std::size_t>(b * 6), 0.5f);
    auto loss = tc::mean(tc::relu(lin(tc::from_host(xs, {b, 6}, "x"))));
    opt.step(tc::grad(loss, lin.parameters()));
    tc::mark_step();
    compiles.push_back(obs.w.compilations);
  }
  ASSERT_EQ(compiles.back(), 2) << "one first compilation, one recompilation";
  EXPECT_EQ(compiles[0], 1);
  EXPECT_EQ(compiles[1], 1);
  EXPECT_EQ(compiles[2], 2);
  EXPECT_EQ(obs.w.reasons[0], "first");
  EXPECT_EQ(obs.w.reasons[1], "shape_change");
}

}  // namespace

namespace {
TEST(Compiled, DropoutGradientsMatchEager) {
  std::vector<std::vector<float>> got;
  for (int eager = 1; eager >= 0; --eager) {
    Eager mode(eager);
    tc::nn::Linear lin(6, 5, true, 3);
    tc::nn::Dropout drop(0.3, 9);
    std::vector<float> xs(4 * 6);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 7) * 0.3f - 0.8f;
    auto x = tc::from_host(xs, {4, 6}, "x");
    auto h = drop.forward(lin(x), tc::SourceLocation::current());
    auto loss = tc::sum(h * h);
    auto g = tc::grad(loss, lin.parameters());
    tc::mark_step();
    got.push_back(g[0].to_host());
    got.push_back(h.to_host());
  }
  ASSERT_EQ(got[0].size(), got[2].size());
  for (std::size_t i = 0; i < got[0].size(); ++i) EXPECT_NEAR(got[2][i], got[0][i], 1e-5) << "grad " << i;
  for (std::size_t i = 0; i < got[1].size(); ++i) EXPECT_NEAR(got[3][i], got[1][i], 1e-5) << "value " << i;
}
}  // namespace

namespace {
struct NodeWatch : tc::events::TestObserver {
  std::vector<tc::events::CompilationRecord> recs;
  void compilation(const tc::events::CompilationRecord& c) override { recs.push_back(c); }
};

TEST(Compiled, PermuteOfPermuteBecomesOnePermute) {
  NodeWatch w;
  tc::events::set_test_observer(&w);
  std::vector<float> xs(2 * 3 * 4);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) - 7.5f;
  auto x = tc::from_host(xs, {2, 3, 4}, "x");
  // permute {1,0,2} then {0,2,1}: out[a][b][c] = x[c][a][b], shape [3,4,2].
  auto y = tc::relu(tc::permute(tc::permute(x, {1, 0, 2}), {0, 2, 1}));
  // transpose twice is the identity: no permute is left at all.
  auto z = tc::neg(tc::transpose(tc::transpose(x, 0, 2), 0, 2));
  tc::mark_step();
  auto yv = y.to_host();
  auto zv = z.to_host();
  tc::events::set_test_observer(nullptr);
  ASSERT_EQ(y.shape(), (tc::Shape{3, 4, 2}));
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 2; ++c)
        EXPECT_EQ(yv[static_cast<std::size_t>((a * 4 + b) * 2 + c)], std::max(0.0f, xs[static_cast<std::size_t>((c * 3 + a) * 4 + b)]));
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(zv[i], -xs[i]);
  ASSERT_EQ(w.recs.size(), 1u);
  // Before: 4 permutes, relu, neg. After: one permute, relu, neg.
  EXPECT_EQ(w.recs[0].nodes_before, 6);
  EXPECT_EQ(w.recs[0].nodes_after, 3);
}
}  // namespace

namespace {
// Plain SGD: each weight update W - lr * (X^T G) is one sgemm accumulating
// into W's buffer (alpha = -lr, beta = 1); the run still equals eager.
RunResult train_plain_sgd(bool eager, int steps, std::string* source) {
  Eager mode(eager);
  NodeWatch w;
  tc::events::set_test_observer(&w);
  tc::nn::Sequential model{tc::nn::Linear(20, 32, true, 1), tc::nn::ReLU(), tc::nn::Linear(32, 32, true, 2),
                           tc::nn::ReLU(), tc::nn::Linear(32, 4, true, 3)};
  tc::optim::SGD opt(model.parameters(), {.lr = 0.1});
  std::mt19937_64 gen(11);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> xs(16 * 20);
  for (auto& v : xs) v = nd(gen);
  std::vector<int32_t> ys(16);
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>(i % 4);
  RunResult r;
  for (int step = 0; step < steps; ++step) {
    auto loss = tc::nn::cross_entropy(model(tc::from_host(xs, {16, 20}, "x")), tc::from_host(ys, {16}, "y"));
    opt.step(tc::grad(loss, model.parameters()));
    tc::mark_step();
    r.losses.push_back(loss.item());
  }
  for (auto& p : model.parameters())
    for (float v : p.to_host()) r.params.push_back(v);
  tc::events::set_test_observer(nullptr);
  r.compilations = static_cast<int>(w.recs.size());
  if (source && !w.recs.empty()) *source = w.recs[0].source_path;
  return r;
}

TEST(Compiled, SgdUpdatesAccumulateIntoTheWeightsProduct) {
  std::string path;
  RunResult eager = train_plain_sgd(true, 10, nullptr);
  RunResult compiled = train_plain_sgd(false, 10, &path);
  expect_same_run(compiled, eager);
  EXPECT_LT(compiled.losses.back(), compiled.losses.front());
  if (compiled.compilations == 0) GTEST_SKIP() << "compiled by an earlier test in this process";
  std::ifstream f(path);
  ASSERT_TRUE(f) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string src = ss.str();
  int accumulating = 0;
  for (std::size_t at = 0; (at = src.find(", 1.0f, p", at)) != std::string::npos; ++at) ++accumulating;
  EXPECT_EQ(accumulating, 3) << "one accumulating sgemm per weight matrix, in " << path;
}
}  // namespace

namespace {
// A build that fails names the graph and the compiler, keeps the generated
// source (whole, also when it was split into parts) and says where it is.
TEST(Compiled, BuildFailureNamesTheGraphAndKeepsTheSource) {
  char dir[] = "/tmp/tc-build-fail-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string old_cache = std::getenv("TC_CACHE_DIR") ? std::getenv("TC_CACHE_DIR") : "";
  ::setenv("TC_CACHE_DIR", dir, 1);
  ::setenv("TC_CXX", "false", 1);
  std::vector<std::string> sources;
  auto expect_failure = [&](const std::function<void()>& step, const char* what) {
    try {
      step();
      ADD_FAILURE() << what << ": the build did not fail";
    } catch (const tc::Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("tc: building graph "), std::string::npos) << m;
      EXPECT_NE(m.find("failed (false exit status 1)"), std::string::npos) << m;
      auto at = m.find("the generated source is kept at ");
      ASSERT_NE(at, std::string::npos) << m;
      std::string path = m.substr(at + 32, m.find(',', at) - at - 32);
      std::ifstream f(path);
      ASSERT_TRUE(f) << what << ": no source at " << path;
      std::stringstream ss;
      ss << f.rdbuf();
      EXPECT_NE(ss.str().find("extern \"C\" int tc_run"), std::string::npos) << path;
      sources.push_back(ss.str());
    }
  };
  // A small graph (one part) and a training step with many kernels (several parts).
  expect_failure([] {
    auto y = tc::relu(tc::from_host(std::vector<float>(3 * 97, 0.5f), {3, 97}, "x"));
    tc::mark_step();
  }, "small graph");
  expect_failure([] {
    tc::nn::Sequential m{tc::nn::Linear(13, 29, true, 1), tc::nn::ReLU(), tc::nn::Linear(29, 3, true, 2)};
    tc::optim::SGD opt(m.parameters(), {.lr = 0.1});
    auto loss = tc::nn::cross_entropy(m(tc::from_host(std::vector<float>(7 * 13, 0.25f), {7, 13}, "x")),
                                      tc::from_host(std::vector<int32_t>(7, 1), {7}, "y"));
    opt.step(tc::grad(loss, m.parameters()));
    tc::mark_step();
  }, "training step");
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0].find("#if TC_IN(1)"), std::string::npos) << "the small graph is one part";
  if (std::thread::hardware_concurrency() > 1)
    EXPECT_NE(sources[1].find("#if TC_IN(1)"), std::string::npos) << "the training step is split into parts";
  ::unsetenv("TC_CXX");
  if (old_cache.empty()) ::unsetenv("TC_CACHE_DIR");
  else ::setenv("TC_CACHE_DIR", old_cache.c_str(), 1);
  std::filesystem::remove_all(dir);
}
}  // namespace
