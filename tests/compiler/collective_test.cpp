// tc::dist::all_reduce_mean inside the step's graph (#16), in a world of 1
// (no MPI): the collective is lazy, the step compiles to one graph that holds
// it (no 'collective' cut), the signature counts it, and compiled equals
// eager. tests/dist runs the same under mpirun with 2 ranks.
#include <gtest/gtest.h>
#include <tc/dist.h>
#include <tc/tc.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "events.h"  // compiler/src: the test observer

namespace {

using tc::events::ExecTrigger;

struct Watch : tc::events::TestObserver {
  int compilations = 0;
  std::vector<std::string> triggers;  // of the compilations
  std::map<ExecTrigger, int> executed;
  void compilation(const tc::events::CompilationRecord& c) override {
    ++compilations;
    triggers.push_back(c.trigger);
  }
  void graph_executed(ExecTrigger t, int64_t) override { ++executed[t]; }
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

struct Trained {
  std::vector<float> losses, params;
  Watch watch;
  bool lazy = false;  // all_reduce_mean's results were pending until mark_step
};

// A model of its own shapes (no other file's test compiles its graphs), SGD
// with momentum on gradients averaged by all_reduce_mean, `steps` steps of
// `rows` examples; the last `plain` steps skip the all-reduce. Tests that
// count compilations take a `rows` of their own: the compiled graphs stay in
// the process's cache when tests run in one process.
Trained train(bool eager, int steps, int plain = 0, int rows = 5) {
  Eager mode(eager);
  Observe obs;
  tc::nn::Linear l1(7, 13, true, 21), l2(13, 3, true, 22);
  std::vector<tc::Tensor> params = l1.parameters();
  for (auto& p : l2.parameters()) params.push_back(p);
  tc::optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9});
  Trained r;
  r.lazy = true;
  for (int step = 0; step < steps; ++step) {
    std::vector<float> xs(static_cast<std::size_t>(rows) * 7);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 37 + step * 11) % 17) / 17.0f - 0.5f;
    std::vector<int32_t> ys(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>((i + step) % 3);
    auto x = tc::from_host(xs, {rows, 7}, "x");
    auto y = tc::from_host(ys, {rows}, "y");
    auto loss = tc::nn::cross_entropy(l2(tc::relu(l1(x))), y);
    auto grads = tc::grad(loss, params);
    if (step < steps - plain) {
      grads = tc::dist::all_reduce_mean(grads);
      for (const auto& g : grads) r.lazy = r.lazy && !g.is_materialized();
    }
    opt.step(grads);
    tc::mark_step();
    r.losses.push_back(loss.item());
  }
  for (auto& p : params)
    for (float v : p.to_host()) r.params.push_back(v);
  r.watch = obs.w;
  return r;
}

TEST(Collective, AllReduceMeanIsPartOfTheStepsOneGraph) {
  Trained compiled = train(false, 5);
  EXPECT_TRUE(compiled.lazy) << "all_reduce_mean returned materialized tensors: it cut the graph";
  EXPECT_EQ(compiled.watch.compilations, 1) << "one graph for every step, the collective inside it";
  for (const std::string& t : compiled.watch.triggers) EXPECT_EQ(t, "mark_step");
  EXPECT_EQ(compiled.watch.executed[ExecTrigger::collective], 0) << "no graph was cut for the collective";
  EXPECT_EQ(compiled.watch.executed[ExecTrigger::mark_step], 5);

  Trained eager = train(true, 5);
  ASSERT_EQ(compiled.losses.size(), eager.losses.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i)
    EXPECT_NEAR(compiled.losses[i], eager.losses[i], 1e-5 * (1 + std::fabs(eager.losses[i]))) << "step " << i;
  ASSERT_EQ(compiled.params.size(), eager.params.size());
  for (std::size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_NEAR(compiled.params[i], eager.params[i], 1e-5 * (1 + std::fabs(eager.params[i]))) << "parameter " << i;
  EXPECT_NE(compiled.losses.front(), compiled.losses.back()) << "it trained";
}

// The signature counts the collective: the same step without it is another graph.
TEST(Collective, TheSignatureCountsTheCollective) {
  Trained r = train(false, 4, 2, 6);
  EXPECT_EQ(r.watch.compilations, 2) << "the steps with and without the all-reduce";
}

// A world of 1 averages over one rank: the values pass unchanged, as a view of
// the packed buffer (any shapes, in order, the same tensor twice).
TEST(Collective, AWorldOfOneReturnsTheValues) {
  for (bool eager : {false, true}) {
    Eager mode(eager);
    auto a = tc::from_host(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, "a");
    auto b = tc::from_host(std::vector<float>{-7}, {1}, "b");
    auto out = tc::dist::all_reduce_mean({a * 2.0f, b, a});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].shape(), (tc::Shape{2, 3}));
    EXPECT_EQ(out[2].name(), "a");
    EXPECT_EQ(out[0].to_host(), (std::vector<float>{2, 4, 6, 8, 10, 12})) << (eager ? "eager" : "compiled");
    EXPECT_EQ(out[1].to_host(), (std::vector<float>{-7}));
    EXPECT_EQ(out[2].to_host(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_TRUE(tc::dist::all_reduce_mean({}).empty());
  }
}

// Values already materialized (a loss read after mark_step()) have no graph to
// join: the collective runs at the call, and no graph runs for it.
TEST(Collective, MaterializedValuesAreReducedAtTheCall) {
  Observe obs;
  auto loss = tc::from_host(std::vector<float>{0.25f}, {}, "loss");
  auto out = tc::dist::all_reduce_mean({loss});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].is_materialized());
  EXPECT_EQ(out[0].item(), 0.25f);
  EXPECT_EQ(obs.w.executed.size(), 0u) << "no graph (and no explicit evaluation) for it";
  EXPECT_EQ(obs.w.compilations, 0);
}

}  // namespace
