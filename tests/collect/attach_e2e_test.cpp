// Every process of the tree records, whatever the launcher does with file
// descriptors (tracker #29, item 1): a process whose inherited TC_PROFILE_FD
// was closed, or now names a pipe, or that a double fork and setsid put in a
// session of its own, attaches through tc-profile's /proc/PID/fd and records
// every event; one that cannot attach is named in the store (pid, command,
// why) and in one line of tc-analyze. tc-test-recorder prints "recorded N pid
// P" once its N events are recorded.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "collect/attach_test_util.h"
#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

using tc::test::attach::recorded;

TEST(AttachTree, ProcessesWhoseDescriptorIsGoneOrReusedRecordEveryEvent) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), fifo = dir.file("fifo");
  const std::string rec = "'" + bin("tc-test-recorder") + "'";
  // The descriptor closed for all that follows (close_fds=True); then reused
  // by a pipe ("Illegal seek" before); then a double fork into a session of
  // its own (setsid), whose end `cat` waits for.
  const std::string script = "eval \"exec $TC_PROFILE_FD<&-\"; " + rec + " --events 300 --threads 2 || exit 1; " +
                             "echo | { eval \"exec $TC_PROFILE_FD<&0\"; " + rec + " --events 301; } || exit 1; " +
                             "mkfifo '" + fifo + "' && ( setsid " + rec + " --events 302 > '" + fifo + "' & ) ; cat '" + fifo + "'";
  tc::test::attach::expect_every_event_stored({"sh", "-c", script}, out, 3);
}

TEST(AttachTree, AProcessThatCannotAttachIsNamedInTheStoreAndTheReport) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string rec = "'" + bin("tc-test-recorder") + "'";
  // The key of another run: neither its descriptor nor tc-profile's /proc one is accepted.
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", "sh", "-c",
                          rec + " --events 40 && TC_PROFILE_KEY=0123456789abcdef0123456789abcdef " + rec + " --events 50"});
  ASSERT_EQ(e.code, 0) << e.err;
  const auto ran = recorded(e.out);
  ASSERT_EQ(ran.size(), 2u) << e.out;
  int64_t lost = 0;
  for (const auto& [pid, n] : ran)
    if (n == 50) lost = pid;
  EXPECT_NE(e.err.find("tc: cannot record"), std::string::npos) << e.err;

  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->scalar_i64("SELECT complete FROM run"), 0) << "a process of the run is missing";
  auto q = r->query("SELECT p.pid, p.name, d.count, d.reason FROM dropped d JOIN processes p USING (upid)");
  ASSERT_TRUE(q.next()) << "no dropped row names the process";
  EXPECT_EQ(q.i64(0), lost);
  EXPECT_NE(std::string(q.text(1)).find("tc-test-recorder --events 50"), std::string::npos) << q.text(1);
  EXPECT_EQ(q.i64(2), 0);
  const std::string reason(q.text(3));
  EXPECT_EQ(reason.rfind("could not attach to the rings: ", 0), 0u) << reason;
  EXPECT_NE(reason.find("another run"), std::string::npos) << reason;
  EXPECT_FALSE(q.next());

  Exit a = tc::test::run({bin("tc-analyze"), out}, {{"NO_COLOR", "1"}});
  const std::string line = "1 process of the run recorded nothing, not attached to tc-profile's rings: pid " + std::to_string(lost) + " (";
  size_t at = a.out.find(line);
  ASSERT_NE(at, std::string::npos) << a.out << a.err;
  EXPECT_EQ(a.out.find(line, at + 1), std::string::npos) << "said once";
}

// The key that lets a process attach stays out of every store, even that of
// a tc-profile started under another (whose environment holds the outer key).
TEST(AttachTree, TheRunsKeyIsNeverStored) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string outer = dir.file("outer.tcdb"), inner = dir.file("inner.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", outer, "--", bin("tc-profile"), "-q", "-o", inner, "--", bin("tc-test-recorder"), "--events", "3"});
  ASSERT_EQ(e.code, 0) << e.err;
  for (const std::string& path : {outer, inner}) {
    auto r = tc::store::Reader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM run_env WHERE name = 'TC_PROFILE_KEY'"), 0) << path;
  }
  auto r = tc::store::Reader::open(inner);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM run_env WHERE name = 'TC_PROFILE_PID'"), 1) << "the other variables are kept";
}

// torchrun --nproc_per_node 2 --no-python tc-profile -o run.tcdb -- ...: each
// rank's tc-profile sees torchrun's variables (no MPI's) and writes
// run.rankR.tcdb, which tc-analyze reads as one job.
TEST(TorchrunRanks, EachRanksTcProfileWritesItsOwnStoreOfOneJob) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  for (int rank = 0; rank < 2; ++rank) {
    Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-recorder"), "--events", "10"},
                           {{"RANK", std::to_string(rank)}, {"LOCAL_RANK", std::to_string(rank)}, {"WORLD_SIZE", "2"},
                            {"TORCHELASTIC_RUN_ID", "job7"}, {"OMPI_COMM_WORLD_RANK", ""}, {"PMI_RANK", ""}, {"SLURM_PROCID", ""}, {"SLURM_JOB_ID", ""}});
    ASSERT_EQ(e.code, 0) << e.err;
  }
  const std::string r0 = dir.file("run.rank0.tcdb"), r1 = dir.file("run.rank1.tcdb");
  EXPECT_FALSE(std::filesystem::exists(out));
  ASSERT_TRUE(std::filesystem::exists(r0) && std::filesystem::exists(r1));
  Exit a = tc::test::run({bin("tc-analyze"), r0, r1}, {{"NO_COLOR", "1"}});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out.rfind("job torchrun:job7: 2 ranks", 0), 0u) << a.out;
}

// tc-profile -o run.tcdb -- torchrun ...: one tc-profile over the whole tree
// writes the same stores as each rank's own: run.rank0.tcdb, run.rank1.tcdb,
// each with its rank's processes (a child that inherits the rank's
// environment included), one ranks row, and its own event count; the
// processes of no rank (here the shell, the agent's place) are rank 0's.
TEST(TorchrunRanks, OneTcProfileOverTheTreeWritesAStorePerRank) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  // The collector reads a process's rank from /proc when it first drains its ring (every 10 ms): the ranks'
  // processes live until the shell ends them, as a rank does, and a second is ample (no time is asserted).
  const std::string rec = "'" + bin("tc-test-recorder") + "' --events ";
  const std::string job = "WORLD_SIZE=2 TORCHELASTIC_RUN_ID=job8 ";
  const std::string waits = " --end wait >/dev/null & ";
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", "sh", "-c",
                          rec + "3 >/dev/null || exit 1; " + job + "RANK=0 " + rec + "10" + waits + "a=$!; " + job + "RANK=1 " + rec + "20" + waits +
                              "b=$!; " + job + "RANK=1 " + rec + "5" + waits + "c=$!; sleep 1; kill -TERM $a $b $c; wait $a && wait $b && wait $c"},
                         {{"RANK", ""}, {"WORLD_SIZE", ""}, {"TORCHELASTIC_RUN_ID", ""}, {"LOCAL_RANK", ""}, {"OMPI_COMM_WORLD_RANK", ""}, {"PMI_RANK", ""},
                          {"SLURM_PROCID", ""}, {"SLURM_JOB_ID", ""}});
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string r0 = dir.file("run.rank0.tcdb"), r1 = dir.file("run.rank1.tcdb");
  EXPECT_FALSE(std::filesystem::exists(out)) << "a store per rank, not one";
  ASSERT_TRUE(std::filesystem::exists(r0) && std::filesystem::exists(r1)) << e.err;
  struct Want {
    std::string path;
    int64_t rank, processes, events;
  };
  for (const Want& w : {Want{r0, 0, 2, 3 + 10}, Want{r1, 1, 2, 20 + 5}}) {
    auto r = tc::store::Reader::open(w.path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM processes"), w.processes) << w.path;
    EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM ranges") + *r->scalar_i64("SELECT count(*) FROM instants") +
                  *r->scalar_i64("SELECT count(*) FROM counters"),
              w.events)
        << w.path;
    EXPECT_EQ(*r->scalar_i64("SELECT event_count FROM run"), w.events) << "the run row counts this store's events: " << w.path;
    EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM ranks"), 1) << "one ranks row, however many processes the rank has: " << w.path;
    EXPECT_EQ(*r->scalar_i64("SELECT rank FROM ranks"), w.rank) << w.path;
    EXPECT_EQ(*r->scalar_i64("SELECT world_size FROM ranks"), 2) << w.path;
    EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM threads WHERE upid NOT IN (SELECT upid FROM processes)"), 0) << w.path;
  }
  Exit a = tc::test::run({bin("tc-analyze"), r0, r1}, {{"NO_COLOR", "1"}});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out.rfind("job torchrun:job8: 2 ranks", 0), 0u) << a.out;
}

}  // namespace
