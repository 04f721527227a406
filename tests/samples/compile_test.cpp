// End-to-end: the compilations each sample causes, read from its store.
// Needs the compiled execution path (compilations, compilation_inputs).
//
// Training steps are steps 0..N-1; the held-out evaluation runs after them,
// so "compilations of the training step" are those with step < N.
#include <gtest/gtest.h>

#include "sample_run.h"

using tc::test::profile_sample;
using tc::test::store_i64;
using tc::test::TempDir;

namespace {

std::string during_training(int steps) { return " AND c.step < " + std::to_string(steps); }

int64_t training_compilations(const std::string& store, int steps) {
  return store_i64(store, "SELECT count(*) FROM compilations c WHERE c.trigger = 'mark_step'" + during_training(steps));
}

int64_t shape_changes(const std::string& store, const std::string& where = "") {
  return store_i64(store, "SELECT count(*) FROM compilations c WHERE c.reason = 'shape_change'" + where);
}

// shape_change compilations that name input_ids' dimension `dim` as changed.
int64_t input_ids_changes(const std::string& store, int dim, const std::string& where = "") {
  return store_i64(store,
                   "SELECT count(DISTINCT c.graph_id) FROM compilations c"
                   " JOIN compilation_inputs i ON i.graph_id = c.graph_id"
                   " WHERE c.reason = 'shape_change' AND i.input = 'input_ids' AND i.dim = " +
                       std::to_string(dim) + where);
}

TEST(SampleCompilations, MlpCompilesOnce) {
  TempDir dir;
  auto r = profile_sample(dir, "mlp", {"--steps", "20", "--log-every", "0"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM compilations"), 1);
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM executions WHERE trigger = 'mark_step'"), 20);
}

// TC_DYNAMIC=off: the trap as it is without automatic dynamic, a graph per length.
TEST(SampleCompilations, LongestPaddingRecompilesOnTheSequenceDimension) {
  if (!tc::test::have_fortunes()) FAIL() << tc::test::kNoFortunes;
  TempDir dir;
  constexpr int kSteps = 6;
  auto r = profile_sample(dir, "text-classifier",
                          {"--padding", "longest", "--steps", std::to_string(kSteps), "--train-examples", "512",
                           "--eval-examples", "32", "--log-every", "0"},
                          {{"TC_DYNAMIC", "off"}});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  // Batches of 32 quotes rarely share a longest length (capped at 128).
  int64_t changes = input_ids_changes(r.store, 1, " AND c.step < " + std::to_string(kSteps));
  EXPECT_GE(changes, 3);
  EXPECT_EQ(shape_changes(r.store, during_training(kSteps)), changes);
  EXPECT_EQ(input_ids_changes(r.store, 0), 0) << "the batch dimension never changed";
  EXPECT_EQ(training_compilations(r.store, kSteps), changes + 1);
}

TEST(SampleCompilations, MaxLengthPaddingCompilesTheTrainingStepOnce) {
  if (!tc::test::have_fortunes()) FAIL() << tc::test::kNoFortunes;
  TempDir dir;
  constexpr int kSteps = 12;
  auto r = profile_sample(dir, "text-classifier",
                          {"--padding", "max_length", "--max-length", "32", "--steps", std::to_string(kSteps), "--train-examples", "512",
                           "--eval-examples", "40", "--batch-size", "32", "--log-every", "0"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_EQ(training_compilations(r.store, kSteps), 1);
  // The evaluation (40 quotes: batches of 32 and 8, the second padded to 32)
  // compiles its forward graph once and never changes shape either.
  EXPECT_EQ(shape_changes(r.store), 0);
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM compilations"), 2);
}

TEST(SampleCompilations, BucketPaddingCompilesAtMostOncePerBucket) {
  if (!tc::test::have_fortunes()) FAIL() << tc::test::kNoFortunes;
  TempDir dir;
  constexpr int kSteps = 12;
  auto r = profile_sample(dir, "text-classifier",
                          {"--padding", "bucket", "--buckets", "16,32,64", "--steps", std::to_string(kSteps),
                           "--train-examples", "512", "--eval-examples", "32", "--log-every", "0"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_LE(training_compilations(r.store, kSteps), 3);
  EXPECT_EQ(store_i64(r.store,
                      "SELECT count(*) FROM compilation_inputs WHERE input = 'input_ids' AND dim = 1"
                      " AND new_value NOT IN (16, 32, 64)"),
            0);
}

// 40 training quotes in batches of 16: 16, 16, then a short batch of 8.
const std::vector<std::string> kShortLastBatch = {"--padding", "max_length", "--max-length", "32", "--train-examples", "40",
                                                  "--batch-size", "16", "--eval-examples", "16",
                                                  "--log-every", "0"};

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> more) {
  args.insert(args.end(), more);
  return args;
}

TEST(SampleCompilations, ShortLastBatchRecompilesOnceOnDimensionZero) {
  if (!tc::test::have_fortunes()) FAIL() << tc::test::kNoFortunes;
  TempDir dir;
  auto r = profile_sample(dir, "text-classifier", with(kShortLastBatch, {"--steps", "4"}));
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_EQ(shape_changes(r.store, during_training(4)), 1);
  EXPECT_EQ(input_ids_changes(r.store, 0, during_training(4)), 1);
  EXPECT_EQ(store_i64(r.store,
                      "SELECT count(*) FROM compilation_inputs WHERE input = 'input_ids' AND dim = 0"
                      " AND old_value = 16 AND new_value = 8"),
            1);
  // The step after the short batch is full again: its graph is cached.
  EXPECT_EQ(training_compilations(r.store, 4), 2);
}

TEST(SampleCompilations, DropLastOrPaddingTheBatchKeepsOneShape) {
  if (!tc::test::have_fortunes()) FAIL() << tc::test::kNoFortunes;
  for (const char* fix : {"--drop-last", "--pad-last-batch"}) {
    TempDir dir;
    auto r = profile_sample(dir, "text-classifier", with(kShortLastBatch, {"--steps", "4", fix}));
    ASSERT_EQ(r.exit.code, 0) << fix << ": " << r.exit.err;
    TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
    EXPECT_EQ(shape_changes(r.store), 0) << fix;
    EXPECT_EQ(training_compilations(r.store, 4), 1) << fix;
  }
}

}  // namespace
