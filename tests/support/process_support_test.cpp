// tests/support/process.h: output read from both pipes at once, and a time
// limit that kills what the child started, not just the child.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/process.h"

namespace tc::test {
namespace {

// More than a pipe holds on stderr before anything on stdout: read one after
// the other, this would never end.
TEST(RunSupport, ReadsBothPipesTogether) {
  Exit e = run({"/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' e >&2; echo out"}, {}, std::chrono::seconds(60));
  EXPECT_FALSE(e.timed_out) << e.err.substr(e.err.size() > 2000 ? e.err.size() - 2000 : 0);
  EXPECT_EQ(e.code, 0);
  EXPECT_EQ(e.out, "out\n");
  EXPECT_EQ(e.err.size(), 300000u);
}

// A child whose own child keeps the pipes open: both are killed when the
// limit passes, and the Exit says so with the process tree.
TEST(RunSupport, ALimitKillsTheChildAndWhatItStarted) {
  Exit e = run({"/bin/sh", "-c", "sleep 1000 & echo $!; sleep 1000; echo never"}, {}, std::chrono::seconds(1));
  EXPECT_TRUE(e.timed_out);
  EXPECT_EQ(e.signal, SIGKILL);
  ASSERT_FALSE(e.out.empty());
  EXPECT_EQ(e.out.find("never"), std::string::npos) << e.out;
  // The background sleep is gone too (or a zombie its new parent has not
  // reaped yet), not left running with the pipes open. SIGKILL is delivered
  // asynchronously: a process can still read "R" while it dies, so wait for
  // its end (the sleep would run 1000 s; 60 s is only a bound on the wait).
  const std::string proc = "/proc/" + std::to_string(std::stol(e.out)) + "/stat";
  std::string state;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60); std::chrono::steady_clock::now() < until;) {
    const std::string stat = read_file(proc);
    const size_t paren = stat.rfind(')');
    state = stat.empty() ? "gone" : paren == std::string::npos || paren + 2 >= stat.size() ? "?" : stat.substr(paren + 2, 1);
    if (state == "gone" || state == "Z" || state == "X") break;
    std::this_thread::yield();
  }
  EXPECT_TRUE(state == "gone" || state == "Z" || state == "X") << "the background sleep still runs (state " << state << ")";
  EXPECT_NE(e.err.find("the time limit passed"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("sleep 1000"), std::string::npos) << "the tree names the sleeping processes: " << e.err;
}

TEST(RunSupport, NoLimitWaitsForTheEnd) {
  Exit e = run({"/bin/sh", "-c", "echo a; echo b >&2; exit 3"});
  EXPECT_FALSE(e.timed_out);
  EXPECT_EQ(e.code, 3);
  EXPECT_EQ(e.out, "a\n");
  EXPECT_EQ(e.err, "b\n");
}

}  // namespace
}  // namespace tc::test
