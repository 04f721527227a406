// End-to-end: a program written only against the public API, where one
// line's matrix products do nearly all the work, under tc-profile; then
// tc-analyze kernels says that line holds the time, and the kernel times
// account for the execute time.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/json.h"
#include "support/process.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

// The line of hotspot.cpp marked HOT.
std::string hot_line() {
  std::ifstream f(std::string(TC_SOURCE_DIR) + "/tests/programs/hotspot.cpp");
  std::string line;
  for (int n = 1; std::getline(f, line); ++n)
    if (line.find("// HOT") != std::string::npos) return "hotspot.cpp:" + std::to_string(n);
  return "hotspot.cpp:?";
}

TEST(Kernels, OneLinesProductsHoldTheKernelTime) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-hotspot")},
                         {{"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}, {"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(e.code, 0) << e.err;
  Exit k = tc::test::run({bin("tc-analyze"), "kernels", out, "--json"});
  ASSERT_EQ(k.code, 0) << k.err;
  tc::test::JsonValue j = tc::test::parse_json(k.out);
  EXPECT_EQ(j["schema"].s, "tc-analyze-kernels/1");
  const double execute = j["execute_s"].n;
  ASSERT_GT(execute, 0);
  double total = 0, on_hot_line = 0;
  const std::string hot = hot_line();
  for (const auto& row : j["kernels"].a) {
    total += row["total_s"].n;
    bool hot_kernel = false;
    for (const auto& s : row["sites"].a) hot_kernel = hot_kernel || s.s == hot;
    if (hot_kernel) on_hot_line += row["total_s"].n;
    EXPECT_GE(row["calls"].n, 1);
  }
  EXPECT_GT(on_hot_line, 0.5 * total) << "the kernels of " << hot << " hold most of the kernel time: " << k.out;
  EXPECT_GE(total, 0.9 * execute) << "kernel time covers the execute time: " << k.out;
  // Per line: the hot line first; the text report names it in its summary and a hotspot finding.
  Exit s = tc::test::run({bin("tc-analyze"), "kernels", out, "--by", "site", "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(tc::test::parse_json(s.out)["kernels"].a.at(0)["name"].s, hot) << s.out;
  Exit r = tc::test::run({bin("tc-analyze"), out, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  tc::test::JsonValue rep = tc::test::parse_json(r.out);
  EXPECT_EQ(rep["summary"]["top_site"].s, hot);
  bool hotspot = false;
  for (const auto& f : rep["findings"].a) hotspot = hotspot || (f["kind"].s == "kernel.hotspot" && f["title"].s.find(hot) == 0);
  EXPECT_TRUE(hotspot) << r.out;
  Exit text = tc::test::run({bin("tc-analyze"), "kernels", out, "--by", "site"});
  EXPECT_NE(text.out.find(hot), std::string::npos) << text.out;
  // The Chrome export has every timed kernel run, each inside an execution.
  const std::string trace = dir.file("trace.json");
  Exit x = tc::test::run({bin("tc-analyze"), "export", out, "--format", "chrome", "-o", trace});
  ASSERT_EQ(x.code, 0) << x.err;
  tc::test::JsonValue t = tc::test::parse_json(tc::test::read_file(trace));
  int kernel_events = 0;
  for (const auto& ev : t["traceEvents"].a)
    if (ev.has("cat") && ev["cat"].s == "kernel") ++kernel_events;
  double runs = 0;
  for (const auto& row : j["kernels"].a) runs += row["calls"].n;
  EXPECT_EQ(kernel_events, static_cast<int>(runs));
}

}  // namespace
