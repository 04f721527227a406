// End-to-end: tc-analyze's findings on the samples' real runs, and their
// fixes applied: the suggested setting must then run (and compile less).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "support/json.h"
#include "support/process.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::JsonValue;
using tc::test::TempDir;

namespace {

// The suite's shared code cache, unless a test needs its own (cold) one.
std::string g_cache_dir = TC_TEST_CACHE_DIR;

std::vector<std::pair<std::string, std::string>> env(const std::string& limit = "") {
  std::vector<std::pair<std::string, std::string>> e = {{"TC_CACHE_DIR", g_cache_dir}, {"NO_COLOR", "1"}};
  if (!limit.empty()) e.push_back({"TC_DEVICE_MEMORY_LIMIT", limit});
  return e;
}

// Runs a sample under tc-profile; returns tc-analyze --json of the store.
JsonValue profile_and_analyze(const TempDir& dir, const std::string& name, std::vector<std::string> program, int expected_exit = 0,
                              const std::string& limit = "") {
  std::string store = dir.file(name);
  std::vector<std::string> argv = {bin("tc-profile"), "-q", "-o", store, "--"};
  argv.insert(argv.end(), program.begin(), program.end());
  Exit run = tc::test::run(argv, env(limit));
  EXPECT_EQ(run.code, expected_exit) << run.err;
  Exit a = tc::test::run({bin("tc-analyze"), store, "--json"}, env());
  EXPECT_EQ(a.code, 0) << a.err;
  return tc::test::parse_json(a.out);
}

std::vector<const JsonValue*> findings(const JsonValue& report, const std::string& kind) {
  std::vector<const JsonValue*> out;
  for (const auto& f : report["findings"].a) {
    if (f["kind"].s == kind) out.push_back(&f);
  }
  return out;
}

int line_of(const std::string& file, const std::string& marker) {
  std::ifstream in(std::string(TC_SOURCE_DIR) + "/" + file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  return -1;
}

class SampleFindings : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }
};

TEST_F(SampleFindings, LoggingTrapNamesTheSamplesLines) {
  TempDir dir;
  JsonValue r = profile_and_analyze(dir, "logging.tcdb", {bin("tc-sample-logging"), "--steps", "6"});
  auto evals = findings(r, "explicit_evaluation");
  ASSERT_EQ(evals.size(), 2u);
  std::set<std::string> sites;
  for (const JsonValue* f : evals) {
    sites.insert((*f)["evidence"]["call_site"].s);
    EXPECT_EQ((*f)["evidence"]["count"].n, 6);
    EXPECT_NE((*f)["suggestion"].s.find("after tc::mark_step()"), std::string::npos);
  }
  for (const char* kind : {"item", "to_host"}) {
    int line = line_of("samples/logging.cpp", std::string("// tc-sample-trap: ") + kind);
    ASSERT_GT(line, 0);
    bool found = false;
    for (const auto& s : sites) found |= s.ends_with("samples/logging.cpp:" + std::to_string(line));
    EXPECT_TRUE(found) << kind << " at line " << line << " not among the findings' call sites";
  }
}

TEST_F(SampleFindings, OomSuggestsABatchThatThenRuns) {
  TempDir dir;
  JsonValue r = profile_and_analyze(dir, "oom.tcdb", {bin("tc-sample-oom"), "--memory-limit", "48MiB", "--start-batch", "256"}, 1);
  auto oom = findings(r, "memory.oom");
  ASSERT_EQ(oom.size(), 1u);
  int64_t fits = static_cast<int64_t>((*oom[0])["evidence"]["largest_batch_that_fits"].n);
  ASSERT_GT(fits, 0) << (*oom[0])["suggestion"].s;
  EXPECT_NE((*oom[0])["suggestion"].s.find("Use batch " + std::to_string(fits)), std::string::npos);
  // The suggested batch runs under the same limit.
  Exit again = tc::test::run({bin("tc-sample-oom"), "--memory-limit", "48MiB", "--start-batch", std::to_string(fits), "--max-rounds", "1"}, env());
  EXPECT_EQ(again.code, 0) << again.err;
}

TEST_F(SampleFindings, MlpHeadroomSuggestsALargerBatchThatRuns) {
  TempDir dir;
  const std::string limit = "16MiB";
  JsonValue r = profile_and_analyze(dir, "mlp.tcdb", {bin("tc-sample-mlp"), "--steps", "5", "--batch-size", "64", "--hidden", "256"}, 0, limit);
  auto head = findings(r, "memory.headroom");
  ASSERT_EQ(head.size(), 1u);
  const JsonValue& e = (*head[0])["evidence"];
  ASSERT_TRUE(e.has("suggested_batch")) << (*head[0])["suggestion"].s;
  int64_t fits = static_cast<int64_t>(e["suggested_batch"].n);
  EXPECT_GT(fits, 64) << (*head[0])["suggestion"].s;
  EXPECT_NE((*head[0])["suggestion"].s.find("to " + std::to_string(fits)), std::string::npos) << (*head[0])["suggestion"].s;
  Exit again = tc::test::run({bin("tc-sample-mlp"), "--steps", "2", "--batch-size", std::to_string(fits), "--hidden", "256"}, env(limit));
  EXPECT_EQ(again.code, 0) << "the suggested batch " << fits << " did not run under " << limit << ": " << again.err;
  // The plan's extrapolation holds at its limit too: the largest batch it
  // says fits (with the 10% margin) runs. (The busiest kernel at batch 64 is
  // not the busiest at batch 2000; the plan bounds the growth over all kernels.)
  int64_t largest = static_cast<int64_t>(e["largest_batch_that_fits"].n);
  EXPECT_GE(largest, fits);
  Exit edge = tc::test::run({bin("tc-sample-mlp"), "--steps", "2", "--batch-size", std::to_string(largest), "--hidden", "256"}, env(limit));
  EXPECT_EQ(edge.code, 0) << "the largest batch said to fit, " << largest << ", did not run under " << limit << ": " << edge.err;
}

TEST_F(SampleFindings, DynamicPaddingSuggestionCompilesLessAndRunsFaster) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "two cold-cache training runs: run in the plain build, not under the sanitizers";
#endif
  TempDir dir;
  // Both runs start from an empty code cache, so their compile and wall times compare.
  g_cache_dir = dir.file("cache");
  struct Restore {
    ~Restore() { g_cache_dir = TC_TEST_CACHE_DIR; }
  } restore;
  const std::vector<std::string> small = {"--steps", "12", "--train-examples", "384", "--eval-examples", "32", "--log-every", "0"};
  std::vector<std::string> longest = {bin("tc-sample-text-classifier"), "--padding", "longest"};
  longest.insert(longest.end(), small.begin(), small.end());
  JsonValue before = profile_and_analyze(dir, "longest.tcdb", longest);
  auto shape = findings(before, "recompilation.shape_change");
  const JsonValue* seq = nullptr;
  for (const JsonValue* f : shape) {
    if ((*f)["evidence"]["input"].s == "input_ids" && (*f)["evidence"]["dim"].n == 1) seq = f;
  }
  ASSERT_NE(seq, nullptr) << "no shape_change finding on input_ids dim 1";
  const JsonValue& e = (*seq)["evidence"];
  // Apply the cheaper of the two computed options: one padded length, or the buckets.
  std::vector<std::string> fixed = {bin("tc-sample-text-classifier")};
  size_t graphs = 1;
  if (e["buckets"]["sizes"].a.size() > 1 && e["buckets"]["estimated_saving_s"].n > e["pad"]["estimated_saving_s"].n) {
    std::string buckets;
    for (const auto& b : e["buckets"]["sizes"].a) buckets += (buckets.empty() ? "" : ",") + std::to_string(static_cast<int64_t>(b.n));
    fixed.insert(fixed.end(), {"--padding", "bucket", "--buckets", buckets});
    graphs = e["buckets"]["sizes"].a.size();
  } else {
    fixed.insert(fixed.end(), {"--padding", "max_length", "--max-length", std::to_string(static_cast<int64_t>(e["pad"]["to"].n))});
  }
  fixed.insert(fixed.end(), small.begin(), small.end());
  JsonValue after = profile_and_analyze(dir, "fixed.tcdb", fixed);
  // Training steps compile once per padded length; evaluation adds its own graphs per length.
  EXPECT_LE(after["summary"]["compilations"].n, 2.0 * static_cast<double>(graphs) + 1) << "suggested " << graphs << " length(s)";
  EXPECT_LT(after["summary"]["compilations"].n, before["summary"]["compilations"].n);
  EXPECT_LT(after["summary"]["compile_s"].n, before["summary"]["compile_s"].n);
  EXPECT_LT(after["run"]["wall_s"].n, before["run"]["wall_s"].n);
  EXPECT_TRUE(findings(after, "recompilation.shape_change").empty() || graphs > 1);
  Exit diff = tc::test::run({bin("tc-analyze"), "diff", dir.file("longest.tcdb"), dir.file("fixed.tcdb")}, env());
  EXPECT_EQ(diff.code, 0) << diff.err;
  EXPECT_NE(diff.out.find("recompilation.shape_change"), std::string::npos) << diff.out;
}

}  // namespace
