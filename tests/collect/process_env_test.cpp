// A process's rank from its environment at exec (/proc/PID/environ): what one
// tc-profile over a whole torchrun records for each rank's process.
#include <gtest/gtest.h>

#include <signal.h>

#include <string>

#include "support/process.h"
#include "tc/collect/collector.h"

namespace {

using namespace std::string_literals;

TEST(ProcessEnv, TorchrunsVariablesInAnEnvironBlock) {
  auto p = tc::collect::launcher_place_from("HOME=/root\0RANK=1\0WORLD_SIZE=2\0TORCHELASTIC_RUN_ID=j7\0RANK=0\0"s);
  EXPECT_EQ(p.rank, 1) << "the first of a name, as getenv";
  EXPECT_EQ(p.size, 2);
  EXPECT_EQ(p.job, "torchrun:j7");
  EXPECT_EQ(tc::collect::launcher_place_from("RANK=5\0WORLD_SIZE=2\0"s).rank, -1) << "past the world's size";
  EXPECT_EQ(tc::collect::launcher_place_from("RANK\0=1\0\0\0"s).rank, -1);
  EXPECT_EQ(tc::collect::launcher_place_from("RANK=1"s).rank, 1) << "an unterminated last entry";
}

TEST(ProcessEnv, ALiveChildsRankAndAGoneProcessHasNone) {
  tc::test::Child c({tc::test::bin("tc-test-recorder"), "--events", "1", "--end", "wait"},
                    {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"TORCHELASTIC_RUN_ID", "j9"}, {"OMPI_COMM_WORLD_RANK", ""}, {"PMI_RANK", ""}});
  ASSERT_EQ(c.read_line().rfind("recorded 1", 0), 0u) << "it runs (exec'ed: /proc shows its own environment)";
  auto p = tc::collect::launcher_place_of(static_cast<uint32_t>(c.pid()));
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.size, 4);
  EXPECT_EQ(p.job, "torchrun:j9");
  kill(c.pid(), SIGTERM);
  EXPECT_EQ(c.wait(std::chrono::seconds(30)).code, 0);
  EXPECT_EQ(tc::collect::launcher_place_of(0).rank, -1);
}

}  // namespace
