// End to end: an unmodified PyTorch/XLA script (samples/python/
// xla_classifier.py, torch 2.9 + torch-xla 2.9, PJRT_DEVICE=CPU) under plain
// `tc-profile`, then `tc-analyze --json`: tc's own findings on what tc's
// Python hook and PyTorch/XLA's debug output recorded (imported at the end of
// the run). torch-xla pins its own torch, so its venv is a second one that
// scripts/test.sh makes (.tc-test-venv-xla); without it the test is skipped,
// unless TC_REQUIRE_PYTHON_PEERS=1. Each new padded length compiles the
// step's graphs anew on XLA's CPU client: about 30 s of CPU for both runs here.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "python_sample_util.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::JsonParser;
using tc::test::JsonValue;
using tc::test::TempDir;
using tc::test::python_sample::findings;

namespace {

const std::string kSample = std::string(TC_SOURCE_DIR) + "/samples/python/xla_classifier.py";
const char* const kHow = "scripts/test.sh installs torch-xla 2.9 into .tc-test-venv-xla";
std::string python() { return tc::test::python_sample::python("TC_TEST_XLA_PYTHON", ".tc-test-venv-xla"); }

const std::vector<std::pair<std::string, std::string>> kEnv = {{"PJRT_DEVICE", "CPU"}};

TEST(XlaPython, AnUnmodifiedScriptGetsTcsDiagnosis) {
  const std::string py = python();
  TC_REQUIRE_PYTHON_PEER(py, "torch_xla", kEnv, kHow);
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  // 84 quotes in batches of 8: 10 full batches and a short one of 4; quotes
  // cut at 32 tokens, so that fewer lengths (about 7) each compile anew.
  Exit e = tc::test::run(
      {bin("tc-profile"), "-q", "-o", out, "--", py, kSample, "--examples", "84", "--batch-size", "8", "--max-length", "32", "--print-shapes"}, kEnv);
  ASSERT_EQ(e.code, 0) << e.err;
  // "shapes: 8x32 8x21 ... 4x32": what the script padded each batch to.
  const auto shapes = tc::test::python_sample::shapes(e.out);
  ASSERT_EQ(shapes.size(), 11u) << e.out;
  ASSERT_EQ(shapes.back().first, 4);

  Exit a = tc::test::run({bin("tc-analyze"), out, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  JsonValue j = JsonParser(a.out).parse();
  // Steps: one per torch_xla.sync() (xm.mark_step()), as tc's own are counted.
  EXPECT_EQ(j["summary"]["steps"].n, 11);
  EXPECT_EQ(j["summary"]["step_source"].s, "mark_step");

  const JsonValue* length = nullptr;
  const JsonValue* batch = nullptr;
  for (const JsonValue* f : findings(j, "recompilation.shape_change")) {
    const JsonValue& ev = (*f)["evidence"];
    if (ev["input"].s == "token_ids" && ev["dim"].n == 1) length = f;
    // The batch's dim 0: one finding for all of the batch's inputs (evidence.tied names the others).
    bool token_ids = ev["input"].s == "token_ids";
    if (ev.has("tied"))
      for (const JsonValue& t : ev["tied"].a) token_ids = token_ids || t.s == "token_ids dim 0";
    if (token_ids && ev["dim"].n == 0 && ev["short_last_batch"].b) batch = f;
  }
  // token_ids dim 1: every length the script padded to.
  ASSERT_NE(length, nullptr) << a.out;
  std::set<int64_t> compiled, lengths;
  for (const JsonValue& v : (*length)["evidence"]["values"].a) {
    compiled.insert(static_cast<int64_t>(v["value"].n));
    EXPECT_GE(v["compilations"].n, 1) << "length " << v["value"].n;
  }
  for (const auto& [rows, len] : shapes) lengths.insert(len);
  EXPECT_EQ(compiled, lengths) << a.out;
  // Each step under the length it ran (the hook's record of each sync's graph inputs), not under the last that compiled.
  std::map<int64_t, int64_t> steps_per_length, truth;
  for (const JsonValue& v : (*length)["evidence"]["values"].a) steps_per_length[static_cast<int64_t>(v["value"].n)] = static_cast<int64_t>(v["steps"].n);
  for (const auto& [rows, len] : shapes) ++truth[len];
  EXPECT_EQ(steps_per_length, truth) << a.out;
  const JsonValue& ev = (*length)["evidence"];
  EXPECT_GT(std::max(ev["pad"]["estimated_saving_s"].n, ev["buckets"]["estimated_saving_s"].n), 0) << a.out;
  EXPECT_GE(ev["pad"]["to"].n, static_cast<double>(*compiled.rbegin()));
  // The short last batch: 4 rows instead of 8.
  ASSERT_NE(batch, nullptr) << a.out;
  EXPECT_NE((*batch)["suggestion"].s.find("short last batch (4 instead of 8)"), std::string::npos) << (*batch)["suggestion"].s;
  // The loss.item() of each step, a forced evaluation at the sample's line.
  auto evals = findings(j, "explicit_evaluation");
  ASSERT_EQ(evals.size(), 1u) << a.out;
  EXPECT_EQ((*evals[0])["evidence"]["call_site"].s, kSample + ":" + std::to_string(tc::test::python_sample::line_of(kSample, "losses.append(loss.item())")));
  EXPECT_EQ((*evals[0])["evidence"]["count"].n, 11);
  // Nothing skipped.
  EXPECT_EQ(j["notes"].a.size(), 0u) << a.out;
}

// The fixes: --pad-to 32 --drop-last --no-item leave one shape, no forced
// evaluation per step and no shape-change finding (36 quotes: 4 full batches,
// the short one dropped).
TEST(XlaPython, TheFixesLeaveNothingToFind) {
  const std::string py = python();
  TC_REQUIRE_PYTHON_PEER(py, "torch_xla", kEnv, kHow);
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", py, kSample, "--examples", "36", "--batch-size", "8", "--max-length", "32",
                          "--pad-to", "32", "--drop-last", "--no-item"},
                         kEnv);
  ASSERT_EQ(e.code, 0) << e.err;
  Exit a = tc::test::run({bin("tc-analyze"), out, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  JsonValue j = JsonParser(a.out).parse();
  EXPECT_EQ(j["summary"]["steps"].n, 4);
  EXPECT_TRUE(findings(j, "recompilation.shape_change").empty()) << a.out;
  EXPECT_TRUE(findings(j, "explicit_evaluation").empty()) << a.out;
}

}  // namespace
