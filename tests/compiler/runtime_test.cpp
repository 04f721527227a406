// Cuts, explicit evaluations, device memory, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <tc/tc.h>

#include "backend/backend.h"  // compiler/src: set_device_capacity
#include "events.h"  // compiler/src: the recording seam and its test observer

namespace {

struct Recorder : tc::events::TestObserver {
  struct Eval {
    tc::events::EvalKind kind;
    std::string file, function;
    int64_t line, nodes;
  };
  std::vector<Eval> evals;
  std::vector<int64_t> steps;
  int64_t ooms = 0, oom_requested = 0;
  void explicit_evaluation(tc::events::EvalKind kind, const std::source_location& where,
                           int64_t nodes, int64_t) override {
    evals.push_back({kind, where.file_name(), where.function_name(), where.line(), nodes});
  }
  void mark_step(int64_t step) override { steps.push_back(step); }
  void out_of_memory(int64_t requested, int64_t, int64_t) override { ++ooms, oom_requested = requested; }
};

class Runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    tc::set_eager(false);  // these tests are about laziness, whatever TC_EAGER says
    tc::events::set_test_observer(&rec);
  }
  void TearDown() override {
    tc::events::set_test_observer(nullptr);
    tc::set_device_memory_limit(0);
    tc::set_eager(false);
  }
  Recorder rec;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST_F(Runtime, NothingRunsBeforeACut) {
  auto x = tc::ones({4});
  auto y = tc::exp(x) * 2.0;
  EXPECT_FALSE(y.is_materialized());
  EXPECT_FALSE(x.is_materialized());
  tc::mark_step();
  EXPECT_TRUE(y.is_materialized());
  EXPECT_TRUE(x.is_materialized());  // every live tensor is materialized
  EXPECT_TRUE(rec.evals.empty());
}

TEST_F(Runtime, ExplicitEvaluationsRecordCallSiteAndKind) {
  auto x = tc::from_host(std::vector<float>{1, 2, 3}, {3}, "x");
  auto s = tc::sum(x * x);
  const int64_t item_line = __LINE__ + 1;
  float v = s.item();
  EXPECT_FLOAT_EQ(v, 14.0f);
  auto t = x * 3.0;
  const int64_t host_line = __LINE__ + 1;
  auto h = t.to_host();
  EXPECT_EQ(h, (std::vector<float>{3, 6, 9}));
  auto p = x + 1.0;
  std::ostringstream os;
  const int64_t print_line = __LINE__ + 1;
  os << p;
  EXPECT_NE(os.str().find("[2, 3, 4]"), std::string::npos) << os.str();

  ASSERT_EQ(rec.evals.size(), 3u);
  EXPECT_EQ(rec.evals[0].kind, tc::events::EvalKind::item);
  EXPECT_EQ(rec.evals[0].line, item_line);
  EXPECT_TRUE(ends_with(rec.evals[0].file, "runtime_test.cpp")) << rec.evals[0].file;
  EXPECT_NE(rec.evals[0].function.find("ExplicitEvaluations"), std::string::npos);
  EXPECT_EQ(rec.evals[0].nodes, 2);  // mul and sum; x is data
  EXPECT_EQ(rec.evals[1].kind, tc::events::EvalKind::to_host);
  EXPECT_EQ(rec.evals[1].line, host_line);
  EXPECT_EQ(rec.evals[2].kind, tc::events::EvalKind::print);
  EXPECT_EQ(rec.evals[2].line, print_line);
}

TEST_F(Runtime, EvaluationsAfterMarkStepAreFree) {
  auto x = tc::from_host(std::vector<float>{1, 2}, {2});
  auto loss = tc::sum(tc::exp(x));
  tc::mark_step();
  ASSERT_EQ(rec.steps.size(), 1u);
  (void)loss.item();
  (void)loss.to_host();
  std::ostringstream os;
  os << loss;
  EXPECT_TRUE(rec.evals.empty());
}

TEST_F(Runtime, ItemThenGradStillWorks) {
  // An explicit evaluation keeps the graph, so grad() after item() still sees it.
  auto w = tc::from_host(std::vector<float>{2}, {1}, "w");
  auto loss = tc::sum(w * w * 3.0);
  EXPECT_FLOAT_EQ(loss.item(), 12.0f);
  auto g = tc::grad(loss, {w});
  EXPECT_FLOAT_EQ(g[0].item(), 12.0f);
  EXPECT_EQ(rec.evals.size(), 2u);
}

TEST_F(Runtime, ParametersKeepTheirIdentityAcrossSteps) {
  tc::nn::Linear lin(3, 2, true, 1);
  auto impl_before = lin.weight.impl();
  tc::Tensor alias = lin.weight;
  auto before = lin.weight.to_host();
  tc::optim::SGD opt(lin.parameters(), {.lr = 0.1});
  auto x = tc::ones({4, 3});
  opt.step(tc::grad(tc::mean(lin(x)), lin.parameters()));
  EXPECT_FALSE(lin.weight.is_materialized());
  tc::mark_step();
  EXPECT_TRUE(lin.weight.is_materialized());
  EXPECT_EQ(lin.weight.impl(), impl_before);
  EXPECT_EQ(alias.to_host(), lin.weight.to_host());  // copies see the update
  EXPECT_NE(lin.weight.to_host(), before);
  EXPECT_EQ(lin.weight.category(), tc::Category::parameter);
}

TEST_F(Runtime, EagerModeRunsEveryOpAtOnce) {
  tc::set_eager(true);
  auto y = tc::exp(tc::ones({2}));
  EXPECT_TRUE(y.is_materialized());
  auto z = y + tc::ones({2});
  EXPECT_TRUE(z.is_materialized());
  EXPECT_FLOAT_EQ(z.to_host()[1], std::exp(1.0f) + 1.0f);
  EXPECT_TRUE(rec.evals.empty());  // nothing was pending
}

TEST_F(Runtime, MemoryIsAccountedByCategoryInEagerModeToo) {
  tc::set_eager(true);
  tc::nn::Linear lin(16, 8, true, 3);
  auto base = tc::memory_stats().live_by_category[static_cast<int>(tc::Category::parameter)];
  tc::optim::SGD opt(lin.parameters(), {.lr = 0.1});
  opt.step(tc::grad(tc::mean(lin(tc::ones({4, 16}))), lin.parameters()));
  tc::mark_step();
  EXPECT_EQ(tc::memory_stats().live_by_category[static_cast<int>(tc::Category::parameter)], base);
  EXPECT_EQ(lin.weight.category(), tc::Category::parameter);
}

TEST_F(Runtime, MemoryIsAccountedByCategory) {
  tc::reset_peak_memory();
  auto base = tc::memory_stats();
  tc::nn::Linear lin(16, 8, true, 3);
  tc::optim::SGD opt(lin.parameters(), {.lr = 0.1, .momentum = 0.9});
  auto x = tc::ones({4, 16});
  auto loss = tc::mean(lin(x));
  opt.step(tc::grad(loss, lin.parameters()));
  tc::mark_step();
  auto s = tc::memory_stats();
  const int64_t pbytes = (16 * 8 + 8) * 4;
  auto cat = [&](tc::Category c, const tc::MemoryStats& m) { return m.live_by_category[static_cast<int>(c)]; };
  EXPECT_EQ(cat(tc::Category::parameter, s) - cat(tc::Category::parameter, base), pbytes);
  // Velocity buffers (the learning-rate scalar died with the step graph).
  EXPECT_EQ(cat(tc::Category::optimizer_state, s) - cat(tc::Category::optimizer_state, base), pbytes);
  // Gradients were not held by anyone: freed. Live activations: x and the loss.
  EXPECT_EQ(cat(tc::Category::gradient, s), cat(tc::Category::gradient, base));
  EXPECT_EQ(cat(tc::Category::activation, s) - cat(tc::Category::activation, base), 4 * 16 * 4 + 4);
  EXPECT_GE(s.peak, s.live);
}

TEST_F(Runtime, IntermediatesAreFreedAfterTheirLastUse) {
  const int64_t n = 1 << 16, bytes = n * 4;
  auto x = tc::ones({n});
  tc::mark_step();
  tc::reset_peak_memory();
  auto base = tc::memory_stats().live;
  tc::Tensor y = x;
  for (int i = 0; i < 10; ++i) y = y * 1.5 + 1.0;
  tc::mark_step();
  auto s = tc::memory_stats();
  EXPECT_EQ(s.live - base, bytes);      // only y survives the step
  EXPECT_LE(s.peak - base, 3 * bytes);       // never more than two intermediates at once
}

TEST_F(Runtime, OutOfMemoryCarriesTheBreakdown) {
  tc::nn::Linear lin(8, 8, true, 2);  // some parameter bytes are live
  auto live = tc::memory_stats().live;
  tc::set_device_memory_limit(live + 1024);
  auto big = tc::ones({1024}) * 2.0;  // 4096 bytes at execution
  try {
    (void)big.to_host();
    FAIL() << "expected tc::OutOfMemoryError";
  } catch (const tc::OutOfMemoryError& e) {
    EXPECT_EQ(e.requested, 4096);
    EXPECT_EQ(e.capacity, live + 1024);
    EXPECT_GE(e.live, live);
    EXPECT_GE(e.live_by_category[static_cast<int>(tc::Category::parameter)], (8 * 8 + 8) * 4);
    std::string what = e.what();
    EXPECT_NE(what.find("requested 4096"), std::string::npos) << what;
    EXPECT_NE(what.find("parameter="), std::string::npos) << what;
    EXPECT_NE(what.find("optimizer_state="), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(live + 1024)), std::string::npos) << what;
  }
  EXPECT_EQ(rec.ooms, 1);
  EXPECT_EQ(rec.oom_requested, 4096);
  EXPECT_EQ(tc::memory_stats().live, live);  // nothing leaked by the failed cut
  tc::set_device_memory_limit(0);
  EXPECT_EQ(big.to_host()[0], 2.0f);  // the graph is still usable
}

// The CUDA backend gives the allocator cuMemGetInfo's total when it opens
// the device (set_device_capacity): the capacity the out-of-memory check and
// its message use, below a limit the program set. Here with a small one.
TEST_F(Runtime, TheDevicesCapacityIsTheOutOfMemoryCapacity) {
  if (const char* e = std::getenv("TC_DEVICE_MEMORY_LIMIT"); e && *e) GTEST_SKIP() << "TC_DEVICE_MEMORY_LIMIT is set: it wins over the device's";
  const int64_t before = tc::memory_stats().capacity;
  struct Restore {
    int64_t bytes;
    ~Restore() { tc::detail::set_device_capacity(bytes); }
  } restore{before};
  const int64_t live = tc::memory_stats().live;
  tc::detail::set_device_capacity(live + 2048);
  EXPECT_EQ(tc::memory_stats().capacity, live + 2048);
  auto big = tc::ones({1024}) * 3.0;  // 4096 bytes at execution
  try {
    (void)big.to_host();
    ADD_FAILURE() << "expected tc::OutOfMemoryError";
  } catch (const tc::OutOfMemoryError& e) {
    EXPECT_EQ(e.capacity, live + 2048);
    EXPECT_NE(std::string(e.what()).find("capacity of " + std::to_string(live + 2048)), std::string::npos) << e.what();
  }
  // A limit the program sets wins over the device's, and lifting it restores the device's.
  tc::set_device_memory_limit(live + 1024 * 1024);
  EXPECT_EQ(tc::memory_stats().capacity, live + 1024 * 1024);
  EXPECT_EQ(big.to_host()[0], 3.0f);
  tc::set_device_memory_limit(0);
  EXPECT_EQ(tc::memory_stats().capacity, live + 2048);
  tc::detail::set_device_capacity(before);
  EXPECT_EQ(tc::memory_stats().capacity, before);
}

TEST(Memory, ParsesByteSizes) {
  EXPECT_EQ(tc::parse_byte_size("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(tc::parse_byte_size("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(tc::parse_byte_size("123456"), 123456);
  EXPECT_EQ(tc::parse_byte_size("1GB"), 1000000000);
  EXPECT_THROW(tc::parse_byte_size("lots"), tc::Error);
  EXPECT_THROW(tc::parse_byte_size("12XB"), tc::Error);
}

// ---- errors -------------------------------------------------------------------

TEST(Errors, ShapeErrorNamesOpShapesAndCallSite) {
  auto a = tc::zeros({2, 3});
  auto b = tc::zeros({4});
  const int64_t line = __LINE__ + 2;
  try {
    auto c = a + b;
    FAIL() << "expected tc::ShapeError";
  } catch (const tc::ShapeError& e) {
    EXPECT_EQ(e.op, "add");
    EXPECT_EQ(e.lhs, (tc::Shape{2, 3}));
    EXPECT_EQ(e.rhs, (tc::Shape{4}));
    EXPECT_EQ(e.line, line);
    std::string what = e.what();
    EXPECT_NE(what.find("add"), std::string::npos);
    EXPECT_NE(what.find("[2, 3]"), std::string::npos);
    EXPECT_NE(what.find("[4]"), std::string::npos);
    EXPECT_NE(what.find("runtime_test.cpp:" + std::to_string(line)), std::string::npos) << what;
  }
}

TEST(Errors, MoreShapeErrors) {
  EXPECT_THROW(tc::matmul(tc::zeros({2, 3}), tc::zeros({4, 5})), tc::ShapeError);
  EXPECT_THROW(tc::zeros({6}).reshape({4, 2}), tc::ShapeError);
  EXPECT_THROW(tc::slice(tc::zeros({3}), 0, 1, 5), tc::ShapeError);
  EXPECT_THROW(tc::sum(tc::zeros({3}), {2}), tc::ShapeError);
  EXPECT_THROW(tc::concat({tc::zeros({2, 3}), tc::zeros({3, 3})}, 1), tc::ShapeError);
  tc::nn::Linear lin(4, 2, true, 1);
  EXPECT_THROW(lin(tc::zeros({3, 5})), tc::ShapeError);
  tc::nn::MultiHeadAttention mha(8, 2, 1);
  EXPECT_THROW(mha.attend(tc::zeros({2, 3, 8}), tc::cast(tc::zeros({2, 4}, tc::i32), tc::b8)),
               tc::ShapeError);
  EXPECT_THROW(tc::nn::cross_entropy(tc::zeros({4, 3}), tc::zeros({5}, tc::i32)), tc::ShapeError);
}

TEST(Errors, MisuseIsAClearError) {
  tc::Tensor empty;
  EXPECT_THROW((void)empty.shape(), tc::Error);
  EXPECT_THROW(tc::relu(empty), tc::Error);
  EXPECT_THROW(tc::log(tc::zeros({2}, tc::i32)), tc::Error);        // wrong dtype
  EXPECT_THROW(tc::zeros({2}) + tc::zeros({2}, tc::i32), tc::Error);  // mixed dtypes
  EXPECT_THROW(tc::gather(tc::zeros({3}), tc::zeros({2})), tc::Error);  // f32 indices
  EXPECT_THROW((void)tc::zeros({2}).item(), tc::Error);              // not one element
  EXPECT_THROW(tc::nn::MultiHeadAttention(10, 3), tc::Error);
  // grad of a loss whose graph was finished by mark_step.
  auto w = tc::from_host(std::vector<float>{1}, {1});
  auto loss = tc::sum(w * 2.0);
  tc::mark_step();
  EXPECT_THROW(tc::grad(loss, {w}), tc::Error);
  // An out-of-range index fails at execution with an Error, not a crash.
  auto idx = tc::from_host(std::vector<int32_t>{0, 7}, {2});
  auto g = tc::gather(tc::ones({3}), idx);
  EXPECT_THROW((void)g.to_host(), tc::Error);
}

}  // namespace
