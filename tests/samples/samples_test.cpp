// End-to-end: each sample runs a few steps under tc-profile, and the store
// holds what the sample is there to show. Compilation counts are checked in
// compile_test.cpp.
#include <gtest/gtest.h>

#include "sample_run.h"

using tc::test::bin;
using tc::test::lines_marked;
using tc::test::lines_starting;
using tc::test::profile_sample;
using tc::test::store_i64;
using tc::test::TempDir;

namespace {

const std::string kLoggingSource = std::string(TC_SOURCE_DIR) + "/samples/logging.cpp";

TEST(Samples, EachExplainsItselfWithHelp) {
  for (const char* name : {"text-classifier", "mlp", "logging", "oom"}) {
    auto e = tc::test::run({bin(std::string("tc-sample-") + name), "--help"});
    EXPECT_EQ(e.code, 0) << name << ": " << e.err;
    EXPECT_NE(e.out.find("--"), std::string::npos) << name << ": " << e.out;
  }
}

TEST(Mlp, RecordsOneStepPerMarkStepAndNoExplicitEvaluation) {
  TempDir dir;
  auto r = profile_sample(dir, "mlp", {"--steps", "20", "--log-every", "10"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_NE(r.exit.out.find("trained 20 steps"), std::string::npos) << r.exit.out;
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM steps"), 20);
  EXPECT_GE(store_i64(r.store, "SELECT count(*) FROM executions WHERE trigger = 'mark_step'"), 20);
  EXPECT_EQ(store_i64(r.store, "SELECT count(DISTINCT step) FROM executions WHERE trigger = 'mark_step'"), 20);
  // It reads the loss only after mark_step(): nothing cuts the graph early.
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM explicit_evaluations"), 0);
}

// Explicit evaluations of `kind` recorded at `line` of samples/logging.cpp.
int64_t evals_at(const std::string& store, const std::string& kind, int64_t line) {
  return store_i64(store,
                   "SELECT count(*) FROM explicit_evaluations e JOIN locations l ON l.id = e.loc_id"
                   " WHERE e.kind = '" + kind + "' AND l.line = " + std::to_string(line) +
                       " AND l.file LIKE '%samples/logging.cpp'");
}

TEST(Logging, RecordsExplicitEvaluationsAtTheSamplesOwnLines) {
  auto item_lines = lines_marked(kLoggingSource, "tc-sample-trap: item");
  auto host_lines = lines_marked(kLoggingSource, "tc-sample-trap: to_host");
  ASSERT_EQ(item_lines.size(), 1u);
  ASSERT_EQ(host_lines.size(), 1u);
  TempDir dir;
  auto r = profile_sample(dir, "logging", {"--steps", "4"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_EQ(evals_at(r.store, "item", item_lines[0]), 4);
  EXPECT_EQ(evals_at(r.store, "to_host", host_lines[0]), 4);
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM explicit_evaluations"), 8);
  EXPECT_EQ(store_i64(r.store, "SELECT count(DISTINCT step) FROM explicit_evaluations"), 4);
}

TEST(Logging, LogEveryNCutsTheGraphOnlyEveryNSteps) {
  TempDir dir;
  auto r = profile_sample(dir, "logging", {"--steps", "6", "--log-every", "3"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM explicit_evaluations WHERE kind = 'item'"), 2);
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM explicit_evaluations WHERE kind = 'to_host'"), 2);
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM steps"), 6);
}

TEST(Logging, ReadingAfterMarkStepCutsNothing) {
  TempDir dir;
  auto r = profile_sample(dir, "logging", {"--steps", "4", "--read-after-step"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_EQ(lines_starting(r.exit.out, "step ").size(), 4u) << r.exit.out;
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM explicit_evaluations"), 0);
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM steps"), 4);
}

// Fits at 256 (round 0), runs out of memory at 1024 or before.
const std::vector<std::string> kSmallOom = {"--hidden", "512", "--start-batch", "256"};

TEST(Oom, RecordsTheOutOfMemoryAndExitsNonZeroWithOneLine) {
  TempDir dir;
  auto r = profile_sample(dir, "oom", kSmallOom, {{"TC_DEVICE_MEMORY_LIMIT", "16MiB"}});
  EXPECT_EQ(r.exit.code, 1) << r.exit.out << r.exit.err;
  auto said = lines_starting(r.exit.err, "tc-sample-oom:");
  ASSERT_EQ(said.size(), 1u) << r.exit.err;
  EXPECT_NE(said[0].find("out of device memory at batch size"), std::string::npos) << said[0];
  EXPECT_NE(r.exit.out.find("round  0: batch    256 fits"), std::string::npos) << r.exit.out;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  EXPECT_GE(store_i64(r.store, "SELECT count(*) FROM out_of_memory"), 1);
  EXPECT_EQ(store_i64(r.store, "SELECT min(capacity_bytes) FROM out_of_memory"), 16 << 20);
  EXPECT_EQ(store_i64(r.store, "SELECT exit_code FROM run"), 1);
  // The failing compiled graph's plan knows its batch: the record names it.
  auto at = said[0].find("batch size ");
  ASSERT_NE(at, std::string::npos);
  int64_t batch = std::stoll(said[0].substr(at + 11));
  EXPECT_EQ(store_i64(r.store, "SELECT batch_size FROM out_of_memory ORDER BY ts DESC LIMIT 1"), batch) << said[0];
}

TEST(Oom, AloneItsWholeErrorOutputIsOneLine) {
  auto e = tc::test::run({bin("tc-sample-oom"), "--hidden", "512", "--start-batch", "256", "--memory-limit", "16MiB"},
                         tc::test::sample_env());
  EXPECT_EQ(e.code, 1);
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_EQ(e.err.rfind("tc-sample-oom: out of device memory", 0), 0u) << e.err;
}

TEST(TextClassifier, TrainsAndEvaluatesUnderTcProfile) {
  if (!tc::test::have_fortunes()) FAIL() << tc::test::kNoFortunes;
  TempDir dir;
  auto r = profile_sample(dir, "text-classifier",
                          {"--steps", "4", "--padding", "max_length", "--max-length", "32", "--train-examples", "256",
                           "--eval-examples", "32", "--log-every", "2"});
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  EXPECT_EQ(lines_starting(r.exit.out, "step ").size(), 2u) << r.exit.out;
  EXPECT_NE(r.exit.out.find("held-out accuracy:"), std::string::npos) << r.exit.out;
  EXPECT_NE(r.exit.out.find("majority-class baseline:"), std::string::npos) << r.exit.out;
  TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING();
  // 4 training steps, then one evaluation batch (32 quotes, batch size 32).
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM steps"), 5);
  EXPECT_GE(store_i64(r.store, "SELECT count(*) FROM executions"), 5);
  EXPECT_EQ(store_i64(r.store, "SELECT count(*) FROM explicit_evaluations"), 0);
}

TEST(TextClassifier, RefusesBadOptionsAndMissingDataInOneLine) {
  auto bad = tc::test::run({bin("tc-sample-text-classifier"), "--padding", "sideways"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(tc::test::count_lines(bad.err), 1) << bad.err;
  TempDir dir;
  auto missing = tc::test::run({bin("tc-sample-text-classifier"), "--data-dir", dir.file("nowhere")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(tc::test::count_lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("fortunes"), std::string::npos) << missing.err;
}

}  // namespace
