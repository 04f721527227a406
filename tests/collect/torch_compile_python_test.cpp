// End to end: an unmodified torch.compile script (samples/python/
// torch_compile_classifier.py, CPU, Inductor) under plain `tc-profile`, then
// `tc-analyze --json`: tc's own findings on what torch.compile logged
// (TORCH_TRACE, imported at the end of the run) and the steps tc's Python
// hook marked (optimizer.step()). The venv is the one scripts/test.sh makes
// (.tc-test-venv); without it the test is skipped, unless
// TC_REQUIRE_PYTHON_PEERS=1. 11 steps of a 32-wide model: about 20 s here.
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

const std::string kSample = std::string(TC_SOURCE_DIR) + "/samples/python/torch_compile_classifier.py";
const char* const kHow = "scripts/test.sh installs it into .tc-test-venv";
std::string python() { return tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv"); }

// The line of the sample that reads the loss back inside the compiled step.
int item_line() { return tc::test::python_sample::line_of(kSample, "return loss, loss.item()"); }

TEST(TorchCompilePython, AnUnmodifiedScriptGetsTcsDiagnosis) {
  const std::string py = python();
  TC_REQUIRE_PYTHON_PEER(py, "torch", {}, kHow);
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  // 84 quotes in batches of 8: 10 full batches and a short one of 4. Inductor's
  // cache goes to the test's own directory, so every run compiles from cold.
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", py, kSample, "--examples", "84", "--batch-size", "8", "--print-shapes"},
                         {{"TORCHINDUCTOR_CACHE_DIR", dir.file("inductor")}, {"TORCH_TRACE", ""}});
  ASSERT_EQ(e.code, 0) << e.err;
  // "shapes: 8x39 8x40 ... 4x57": what the script padded each batch to.
  const auto shapes = tc::test::python_sample::shapes(e.out);
  ASSERT_EQ(shapes.size(), 11u) << e.out;
  ASSERT_EQ(shapes.back().first, 4);

  Exit a = tc::test::run({bin("tc-analyze"), out, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  JsonValue j = JsonParser(a.out).parse();
  // Steps: one per optimizer.step(), from tc's hook.
  EXPECT_EQ(j["summary"]["steps"].n, 11);
  EXPECT_EQ(j["summary"]["step_source"].s, "optimizer_step");

  // The padded length: token_ids dim 1, the first two lengths compiled (the second made it dynamic), with a plan that saves.
  const JsonValue* length = nullptr;
  const JsonValue* batch = nullptr;
  for (const JsonValue* f : findings(j, "recompilation.shape_change")) {
    const JsonValue& ev = (*f)["evidence"];
    if (ev["input"].s == "token_ids" && ev["dim"].n == 1) length = f;
    if (ev["dim"].n == 0 && ev["short_last_batch"].b) batch = f;
  }
  ASSERT_NE(length, nullptr) << a.out;
  // The sizes that compiled, and every step under the length the script padded it to (tc's hook records each step's
  // inputs; the lengths after the dim went dynamic compile nothing and are only there).
  std::set<int64_t> compiled;
  std::map<int64_t, int64_t> steps, printed;
  for (const JsonValue& v : (*length)["evidence"]["values"].a) {
    if (v["compilations"].n > 0) compiled.insert(static_cast<int64_t>(v["value"].n));
    steps[static_cast<int64_t>(v["value"].n)] = static_cast<int64_t>(v["steps"].n);
  }
  for (const auto& [rows, len] : shapes) ++printed[len];
  EXPECT_EQ(steps, printed) << a.out;
  int64_t second = 0;
  for (const auto& [rows, len] : shapes)
    if (len != shapes.front().second) {
      second = len;
      break;
    }
  EXPECT_EQ(compiled, (std::set<int64_t>{shapes.front().second, second})) << a.out;
  const JsonValue& ev = (*length)["evidence"];
  EXPECT_GT(std::max(ev["pad"]["estimated_saving_s"].n, ev["buckets"]["estimated_saving_s"].n), 0) << a.out;
  EXPECT_GE(ev["pad"]["to"].n, static_cast<double>(*compiled.rbegin()));
  EXPECT_GE(ev["pad"]["to"].n, static_cast<double>(printed.rbegin()->first)) << "never below the data's largest";
  // The short last batch: 4 rows instead of 8.
  ASSERT_NE(batch, nullptr) << a.out;
  EXPECT_NE((*batch)["suggestion"].s.find("short last batch (4 instead of 8)"), std::string::npos) << (*batch)["suggestion"].s;
  // The graph break at the .item() line.
  auto breaks = findings(j, "explicit_evaluation");
  ASSERT_EQ(breaks.size(), 1u) << a.out;
  const std::string site = (*breaks[0])["evidence"]["call_site"].s;
  EXPECT_EQ(site, kSample + ":" + std::to_string(item_line()));
  EXPECT_EQ((*breaks[0])["evidence"]["kind"].s, "item");
  // The dims torch.compile made dynamic.
  bool dynamic_length = false;
  for (const JsonValue* f : findings(j, "recompilation.dynamic_marked"))
    dynamic_length = dynamic_length || ((*f)["evidence"]["input"].s == "token_ids" && (*f)["evidence"]["dim"].n == 1);
  EXPECT_TRUE(dynamic_length) << a.out;
  // Nothing of the private TORCH_TRACE directory is left.
  EXPECT_EQ(j["notes"].a.size(), 0u) << a.out;
}

// torch.compile with lengths that repeat (samples/python/torch_buckets.py,
// backend eager: a few seconds): automatic dynamic makes the length dynamic at
// its second size and torch logs no size after that. tc's hook records each
// step's inputs, so every step counts under the size it ran, as the script
// says it did (its last line), and the pad size is never below the largest.
TEST(TorchCompilePython, EachStepCountsUnderTheSizeItRan) {
  const std::string py = python();
  TC_REQUIRE_PYTHON_PEER(py, "torch", {}, kHow);
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string script = std::string(TC_SOURCE_DIR) + "/samples/python/torch_buckets.py";
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", py, script}, {{"TORCH_TRACE", ""}});
  ASSERT_EQ(e.code, 0) << e.err;
  JsonValue truth = JsonParser(e.out.substr(e.out.rfind("{\"steps\""))).parse();  // the script's last line
  std::map<int64_t, int64_t> expected;
  for (const auto& [size, steps] : truth["token_ids dim 1 steps per size"].o) expected[std::stoll(size)] = static_cast<int64_t>(steps.n);
  ASSERT_EQ(expected.size(), 3u) << e.out;

  Exit a = tc::test::run({bin("tc-analyze"), out, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  JsonValue j = JsonParser(a.out).parse();
  EXPECT_EQ(j["summary"]["steps"].n, truth["steps"].n);
  const JsonValue* length = nullptr;
  for (const JsonValue* f : findings(j, "recompilation.shape_change"))
    if ((*f)["evidence"]["input"].s == "token_ids" && (*f)["evidence"]["dim"].n == 1) length = f;
  ASSERT_NE(length, nullptr) << a.out;
  const JsonValue& ev = (*length)["evidence"];
  std::map<int64_t, int64_t> steps;
  for (const JsonValue& v : ev["values"].a) steps[static_cast<int64_t>(v["value"].n)] = static_cast<int64_t>(v["steps"].n);
  EXPECT_EQ(steps, expected) << a.out;
  EXPECT_GE(ev["pad"]["to"].n, truth["largest"].n) << "never below the data's largest";
  EXPECT_NEAR(ev["pad"]["padding_waste"].n, truth["padding share at the largest"].n, 0.05);
  EXPECT_EQ(ev["steps_unrecorded"].n, 0);
}

// The fixes: --pad-to 128 --drop-last --no-item leave one compilation of the
// step's frame, no graph break, and no shape-change finding.
TEST(TorchCompilePython, TheFixesLeaveNothingToFind) {
  const std::string py = python();
  TC_REQUIRE_PYTHON_PEER(py, "torch", {}, kHow);
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", py, kSample, "--examples", "84", "--batch-size", "8", "--pad-to", "128",
                          "--drop-last", "--no-item"},
                         {{"TORCHINDUCTOR_CACHE_DIR", dir.file("inductor")}, {"TORCH_TRACE", ""}});
  ASSERT_EQ(e.code, 0) << e.err;
  Exit a = tc::test::run({bin("tc-analyze"), out, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  JsonValue j = JsonParser(a.out).parse();
  EXPECT_EQ(j["summary"]["steps"].n, 10);
  EXPECT_EQ(j["summary"]["compilations"].n, 1) << a.out;
  EXPECT_TRUE(findings(j, "recompilation.shape_change").empty()) << a.out;
  EXPECT_TRUE(findings(j, "explicit_evaluation").empty()) << a.out;
}

}  // namespace
