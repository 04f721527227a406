// End-to-end: what the compiler records reaches the store (tc-test-train run
// with TC_PROFILE= and under tc-profile, through libtc.so).
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

// The line of train.cpp that carries `marker` (so no line number is copied here).
int line_of(const std::string& marker) {
  std::ifstream in(std::string(TC_SOURCE_DIR) + "/tests/programs/train.cpp");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  return -1;
}

class CompilerEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }
};

TEST_F(CompilerEvents, ExplicitEvaluationsNameTheUsersLineAndKind) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-test-train"), "--steps", "3"}, {{"TC_PROFILE", out}, {"TC_PROFILE_QUIET", "1"}});
  ASSERT_EQ(e.code, 0) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int item_line = line_of("// EVAL: item"), host_line = line_of("// EVAL: to_host");
  ASSERT_GT(item_line, 0);
  std::map<std::pair<std::string, int>, int> seen;  // (kind, line) -> count
  for (auto q = r->query("SELECT e.kind, l.file, l.line, e.nodes, e.step FROM explicit_evaluations e JOIN locations l ON l.id = e.loc_id");
       q.next();) {
    EXPECT_NE(q.text(1).find("tests/programs/train.cpp"), std::string_view::npos) << q.text(1);
    EXPECT_GT(q.i64(3), 0) << "an explicit evaluation runs nodes";
    seen[{std::string(q.text(0)), static_cast<int>(q.i64(2))}]++;
  }
  // Two per step before mark_step; the item() after mark_step is free and not recorded.
  EXPECT_EQ(seen, (std::map<std::pair<std::string, int>, int>{{{"item", item_line}, 3}, {{"to_host", host_line}, 3}}));
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM steps"), 3);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM steps WHERE dur > 0"), 3);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM executions WHERE trigger = 'mark_step'"), 3);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM executions WHERE trigger = 'explicit_evaluation'"), 6);
  // Memory: live bytes are sampled, and never above the capacity.
  auto live = r->scalar_i64("SELECT count(*) FROM counters c JOIN locations l ON l.id = c.loc_id WHERE l.name = 'memory.live_bytes'");
  EXPECT_GT(*live, 0);
}

TEST_F(CompilerEvents, OutOfMemoryIsRecordedWithItsBreakdownUnderTcProfile) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-o", out, "--", bin("tc-test-train"), "--oom"});
  EXPECT_EQ(e.code, 3) << e.err;
  EXPECT_NE(e.err.find("out of device memory"), std::string::npos) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto q = r->query(
      "SELECT requested_bytes, live_bytes, capacity_bytes, parameter_bytes + gradient_bytes + optimizer_state_bytes + activation_bytes + "
      "input_bytes + other_bytes FROM out_of_memory");
  ASSERT_TRUE(q.next()) << "no out_of_memory row: " << q.status().message();
  EXPECT_EQ(q.i64(2), 4096);
  EXPECT_GT(q.i64(0) + q.i64(1), q.i64(2)) << "the request did not fit";
  EXPECT_EQ(q.i64(3), q.i64(1)) << "the breakdown adds up to the live bytes";
  EXPECT_FALSE(q.next());
}

}  // namespace
