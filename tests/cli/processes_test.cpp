// End-to-end: two processes recording into one store under one tc-profile.
// Each compiles its graphs from scratch (per process, both would be graph 1,
// 2, ...) and changes the length of an input of the same name, to different
// values. Graph ids must still be unique in the store, executions must join
// their own process's compilations, and the findings must keep the two
// processes apart.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "support/json.h"
#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

TEST(TwoProcesses, IdsAreUniqueInTheRunAndFindingsStayApart) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string shapes = bin("tc-test-shapes");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", "sh", "-c",
                          "'" + shapes + "' --lengths 8,12,12 & a=$!; '" + shapes + "' --lengths 20,24,24 || exit 1; wait $a"},
                         {{"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}});
  ASSERT_EQ(e.code, 0) << e.err;  // both programs exited 0
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();

  // Two processes, two compilations each (first, shape_change), every graph_id distinct.
  std::map<int64_t, std::set<int64_t>> graphs_of;  // upid -> graph ids
  std::set<int64_t> all;
  for (auto q = r->query("SELECT t.upid, c.graph_id FROM compilations c JOIN threads t USING (utid)"); q.next();) {
    graphs_of[q.i64(0)].insert(q.i64(1));
    EXPECT_TRUE(all.insert(q.i64(1)).second) << "graph " << q.i64(1) << " compiled twice in the run";
  }
  ASSERT_EQ(graphs_of.size(), 2u) << "two processes compiled";
  for (const auto& [upid, ids] : graphs_of) EXPECT_EQ(ids.size(), 2u) << "upid " << upid;

  // Every execution of a compiled graph joins, on graph_id alone, a compilation of its own process.
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM executions WHERE graph_id <> 0"), 6);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM executions e JOIN threads te ON te.utid = e.utid "
                           "JOIN compilations c ON c.graph_id = e.graph_id JOIN threads tc ON tc.utid = c.utid "
                           "WHERE e.graph_id <> 0 AND tc.upid = te.upid"),
            6);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM executions e JOIN compilations c ON c.graph_id = e.graph_id"), 6)
      << "each execution joins exactly one compilation";

  // tc-analyze: one shape_change finding per process, each with its own process's lengths.
  std::map<int64_t, int64_t> pid_of;  // upid -> pid
  for (auto q = r->query("SELECT upid, pid FROM processes"); q.next();) pid_of[q.i64(0)] = q.i64(1);
  Exit a = tc::test::run({bin("tc-analyze"), out, "--json"}, {{"NO_COLOR", "1"}});
  ASSERT_EQ(a.code, 0) << a.err;
  tc::test::JsonValue j = tc::test::parse_json(a.out);
  std::map<int64_t, std::set<int64_t>> values_of;  // pid -> lengths
  for (const auto& f : j["findings"].a) {
    if (f["kind"].s != "recompilation.shape_change") continue;
    const auto& ev = f["evidence"];
    EXPECT_EQ(ev["input"].s, "tokens");
    EXPECT_EQ(ev["dim"].n, 1);
    auto pid = static_cast<int64_t>(ev["pid"].n);
    EXPECT_NE(f["title"].s.find("(pid " + std::to_string(pid) + ")"), std::string::npos) << f["title"].s;
    for (const auto& v : ev["values"].a) EXPECT_TRUE(values_of[pid].insert(static_cast<int64_t>(v["value"].n)).second);
  }
  ASSERT_EQ(values_of.size(), 2u) << a.out;
  std::set<std::set<int64_t>> seen;
  for (const auto& [pid, values] : values_of) {
    bool ours = false;
    for (const auto& [upid, p] : pid_of) ours = ours || p == pid;
    EXPECT_TRUE(ours) << "pid " << pid << " is a process of the store";
    seen.insert(values);
  }
  EXPECT_EQ(seen, (std::set<std::set<int64_t>>{{8, 12}, {20, 24}}));
}

}  // namespace
