// What the process-tree tests share (attach_e2e_test.cpp,
// attach_python_test.cpp): tc-profile over a command whose children each run
// tc-test-recorder, which prints "recorded N pid P" once its N events are
// recorded; every child's events must all be in the store.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/process.h"
#include "tc/store/reader.h"

namespace tc::test::attach {

// pid -> N of each "recorded N pid P" line.
inline std::map<int64_t, int64_t> recorded(const std::string& out) {
  std::map<int64_t, int64_t> r;
  static const std::regex line("recorded ([0-9]+) pid ([0-9]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) r[std::stoll((*it)[2])] = std::stoll((*it)[1]);
  return r;
}

// Runs `command` under tc-profile into `out` and checks that `children`
// recorders ran and that each one's every event was stored, with nothing dropped.
inline void expect_every_event_stored(const std::vector<std::string>& command, const std::string& out, size_t children) {
  std::vector<std::string> argv = {bin("tc-profile"), "-q", "-o", out, "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  Exit e = run(argv);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.err.find("cannot record"), std::string::npos) << e.err;
  const auto want = recorded(e.out);
  ASSERT_EQ(want.size(), children) << e.out;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<int64_t, int64_t> got;  // pid -> events stored
  for (auto q = r->query("SELECT p.pid, count(*) FROM (SELECT utid FROM ranges UNION ALL SELECT utid FROM instants UNION ALL "
                         "SELECT utid FROM counters) e JOIN threads t USING (utid) JOIN processes p USING (upid) GROUP BY p.upid");
       q.next();)
    got[q.i64(0)] += q.i64(1);
  for (const auto& [pid, n] : want) EXPECT_EQ(got[pid], n) << "pid " << pid << " (the child that recorded " << n << ")";
  EXPECT_EQ(*r->scalar_i64("SELECT complete FROM run"), 1);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM dropped"), 0);
}

}  // namespace tc::test::attach
