// Data-parallel training with tc::dist under mpirun (tracker #16).
// tc-test-dist (tests/programs/dist_train.cpp) trains one model on a global
// batch split over the ranks; with 2 ranks of batch b it must train like 1
// rank of batch 2b: the mean of the ranks' gradients is the gradient of the
// whole batch. Open MPI comes from scripts/setup.sh (openmpi-bin).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "support/json.h"
#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// Open MPI as root, on 2 cores, and its own allocations not counted as ours
// by LeakSanitizer (the sanitizer build).
Env mpi_env(const TempDir& dir, Env more = {}) {
  Env env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}, {"ASAN_OPTIONS", "detect_leaks=0"},
             {"TC_CACHE_DIR", dir.file("cache")}, {"OMPI_MCA_rmaps_base_oversubscribe", "1"},
             // Ranks waiting in a collective yield the core instead of spinning:
             // on 2 cores the rank they wait for (compiling) needs it.
             {"OMPI_MCA_mpi_yield_when_idle", "1"}};
  for (auto& kv : more) env.push_back(kv);
  return env;
}

std::string mpirun() {
  for (const char* p : {"/usr/bin/mpirun", "/usr/local/bin/mpirun"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

std::vector<double> numbers(const std::string& text, const std::string& after) {
  std::vector<double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t at = after.empty() ? 0 : line.find(after);
    if (at == std::string::npos) continue;
    out.push_back(std::atof(line.c_str() + at + after.size()));
  }
  return out;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(a[i])));
  EXPECT_LE(worst, tol) << what << ": the largest relative difference";
}

class DataParallel : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (mpirun().empty()) FAIL() << "mpirun is missing; scripts/setup.sh installs Open MPI (openmpi-bin)";
  }
};

// 2 ranks x batch 8 against 1 rank x batch 16, 20 steps: losses and final
// parameters, compiled (false) and eager (true).
TEST_P(DataParallel, TwoRanksTrainLikeOneRankWithTheDoubleBatch) {
  TempDir dir;
  Env env = mpi_env(dir, GetParam() ? Env{{"TC_EAGER", "1"}} : Env{});
  const std::string one = dir.file("one.txt"), two = dir.file("two.txt");
  Exit a = tc::test::run({bin("tc-test-dist"), "--global-batch", "16", "--steps", "20", "--params", one}, env);
  ASSERT_EQ(a.code, 0) << a.err;
  Exit b = tc::test::run({mpirun(), "-np", "2", bin("tc-test-dist"), "--global-batch", "16", "--steps", "20", "--params", two}, env,
                         tc::test::kMpirunLimit);
  ASSERT_EQ(b.code, 0) << b.err;
  std::vector<double> la = numbers(a.out, " loss "), lb = numbers(b.out, " loss ");
  EXPECT_EQ(la.size(), 20u);
  expect_close(la, lb, 1e-5, "losses");
  expect_close(numbers(tc::test::read_file(one), ""), numbers(tc::test::read_file(two), ""), 1e-5, "final parameters");
  EXPECT_NE(la.front(), la.back()) << "it trained";
}

// Rank 1 fails before step 3 while rank 0 goes into step 3's all-reduce: the
// job ends with rank 1's status instead of hanging (rank 0 waited in the
// collective and rank 1 in MPI_Finalize), and under tc-profile both ranks'
// stores are written, rank 0's marked incomplete.
TEST_P(DataParallel, ARankThatFailsEndsTheJob) {
  TempDir dir;
  Env env = mpi_env(dir, GetParam() ? Env{{"TC_EAGER", "1"}} : Env{});
  Exit e = tc::test::run({mpirun(), "-np", "2", bin("tc-profile"), "-q", "-o", dir.file("run.tcdb"), "--", bin("tc-test-dist"),
                          "--global-batch", "8", "--steps", "6", "--fail-rank", "1", "--fail-at", "3"},
                         env, tc::test::kMpirunLimit);
  ASSERT_FALSE(e.timed_out) << "the job hung: " << e.err;
  EXPECT_NE(e.code, 0) << e.err;
  EXPECT_NE(e.err.find("rank 1 fails at step 3"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("tc::dist: rank 1 of 2 exits with status 1; aborting the job"), std::string::npos) << e.err;
  EXPECT_NE(e.out.find("step 2 loss "), std::string::npos) << e.out;
  EXPECT_EQ(e.out.find("step 3 loss "), std::string::npos) << e.out;
  EXPECT_TRUE(std::filesystem::exists(dir.file("run.rank0.tcdb"))) << e.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("run.rank1.tcdb"))) << e.err;
}

INSTANTIATE_TEST_SUITE_P(CompiledAndEager, DataParallel, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Eager" : "Compiled"; });

TEST(Dist, AWorldOfOneNeedsNoMpi) {
  TempDir dir;
  Exit e = tc::test::run({bin("tc-test-dist"), "--global-batch", "4", "--steps", "2"},
                         {{"TC_MPI_LIBRARY", dir.file("no-such-libtc_mpi.so")}, {"TC_CACHE_DIR", dir.file("cache")}});
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("step 1 loss "), std::string::npos) << e.out;
}

TEST(Dist, ALauncherWithoutMpiLibraryIsOneLine) {
  TempDir dir;
  Exit e = tc::test::run({bin("tc-test-dist"), "--global-batch", "4", "--steps", "2"},
                         {{"TC_MPI_LIBRARY", dir.file("no-such-libtc_mpi.so")}, {"OMPI_COMM_WORLD_SIZE", "2"},
                          {"OMPI_COMM_WORLD_RANK", "0"}, {"TC_CACHE_DIR", dir.file("cache")}});
  EXPECT_EQ(e.code, 1);
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("tc::dist::init: the launcher started 2 ranks but"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("install Open MPI"), std::string::npos) << e.err;
}

// Under mpirun, each tc-profile writes its rank's store; the rank that met a
// longer input at step 5 compiled there, and the other waited for it.
TEST(Dist, EachRankWritesItsOwnStoreAndTheWaitShows) {
  if (mpirun().empty()) FAIL() << "mpirun is missing; scripts/setup.sh installs Open MPI (openmpi-bin)";
  TempDir dir;
  Exit e = tc::test::run({mpirun(), "-np", "2", bin("tc-profile"), "-q", "-o", dir.file("run.tcdb"), "--", bin("tc-test-dist"),
                          "--global-batch", "8", "--steps", "8", "--long-rank", "1", "--long-at", "5"},
                         mpi_env(dir), tc::test::kMpirunLimit);
  ASSERT_EQ(e.code, 0) << e.err;
  ASSERT_TRUE(std::filesystem::exists(dir.file("run.rank0.tcdb")));
  ASSERT_TRUE(std::filesystem::exists(dir.file("run.rank1.tcdb")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("run.tcdb")));
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  int64_t wait[2] = {0, 0}, collectives[2] = {0, 0};
  for (int r = 0; r < 2; ++r) {
    auto s = tc::store::Reader::open(dir.file("run.rank" + std::to_string(r) + ".tcdb"));
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(*s->scalar_i64("SELECT rank FROM ranks"), r);
    EXPECT_EQ(*s->scalar_i64("SELECT world_size FROM ranks"), 2);
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM run_env WHERE name = 'OMPI_COMM_WORLD_RANK' AND value = '" + std::to_string(r) + "'"), 1);
    collectives[r] = *s->scalar_i64("SELECT count(*) FROM collectives");
    // The all-reduces of step 5, after rank 1's new shape: its compile is rank 0's wait.
    wait[r] = *s->scalar_i64("SELECT coalesce(sum(dur), 0) FROM collectives WHERE step = 5 AND op = 'all_reduce_mean'");
    const int64_t recompiled = *s->scalar_i64(
        "SELECT count(*) FROM compilations c JOIN compilation_inputs i USING (graph_id) WHERE c.step = 5 AND c.reason = 'shape_change' "
        "AND i.input = 'tokens' AND i.dim = 1 AND i.old_value = 12 AND i.new_value = 20");
    EXPECT_EQ(recompiled, r == 1 ? 1 : 0) << "rank " << r << ": the step's graph, which holds the all-reduce";
  }
  EXPECT_EQ(collectives[0], collectives[1]) << "the same collectives on both ranks";
  EXPECT_EQ(collectives[0], 1 + 2 * 8 + 1) << "broadcast, two all-reduces per step, the final barrier";
  EXPECT_GT(wait[0], wait[1]) << "rank 0 waited for rank 1's compilations";
}

// all_reduce_mean is an op of the step's graph: each rank compiles one graph
// for every step and cuts none for the collective, and the collective's row
// (this rank's arrival and wait, the packed bytes, the call site) lies inside
// the execution of its step's graph.
TEST(Dist, ADataParallelStepIsOneCompiledGraphThatHoldsTheAllReduce) {
  if (mpirun().empty()) FAIL() << "mpirun is missing; scripts/setup.sh installs Open MPI (openmpi-bin)";
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const int steps = 6;
  Exit e = tc::test::run({mpirun(), "-np", "2", bin("tc-profile"), "-q", "-o", dir.file("run.tcdb"), "--", bin("tc-test-dist"),
                          "--global-batch", "8", "--steps", std::to_string(steps)},
                         mpi_env(dir), tc::test::kMpirunLimit);
  ASSERT_EQ(e.code, 0) << e.err;
  // The gradients of l1 (8x16, 16) and l2 (16x4, 4), packed.
  const int64_t grad_bytes = 4 * (8 * 16 + 16 + 16 * 4 + 4);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    auto s = tc::store::Reader::open(dir.file("run.rank" + std::to_string(r) + ".tcdb"));
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM executions WHERE trigger = 'collective'"), 0);
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM compilations WHERE trigger = 'collective'"), 0);
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM compilations WHERE trigger = 'mark_step'"), 1);
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM executions WHERE trigger = 'mark_step'"), steps);
    EXPECT_EQ(*s->scalar_i64("SELECT count(DISTINCT graph_id) FROM executions WHERE trigger = 'mark_step'"), 1);
    // One kernel of the step's graph is the collective.
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM kernels k JOIN compilations c USING (graph_id) WHERE c.trigger = 'mark_step' "
                             "AND k.kind = 'collective'"),
              1);
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM collectives WHERE op = 'all_reduce_mean' AND tensors = 4 AND bytes = " +
                             std::to_string(grad_bytes)),
              steps);
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM collectives c JOIN executions e ON e.step = c.step AND e.trigger = 'mark_step' "
                             "WHERE c.tensors = 4 AND c.ts >= e.ts AND c.ts + c.dur <= e.ts + e.dur AND c.dur > 0"),
              steps)
        << "each step's all-reduce ran inside the execution of its step's graph";
    EXPECT_EQ(*s->scalar_i64("SELECT count(*) FROM collectives c JOIN locations l ON l.id = c.loc_id WHERE c.op = 'all_reduce_mean' AND c.tensors = 4 "
                             "AND l.file LIKE '%dist_train.cpp'"),
              steps)
        << "the row names the user's all_reduce_mean call";
  }
  // The collective is a kernel of the kernels table, but its time (mostly the
  // wait for the other rank) is no kernel.hotspot: that is the straggler's.
  const std::string r0 = dir.file("run.rank0.tcdb");
  Exit k = tc::test::run({bin("tc-analyze"), "kernels", r0, "--json"}, {});
  ASSERT_EQ(k.code, 0) << k.err;
  std::string collective_site;
  const tc::test::JsonValue table = tc::test::parse_json(k.out);
  for (const auto& row : table["kernels"].a)
    if (row["kind"].s == "collective" && !row["sites"].a.empty()) collective_site = row["sites"].a[0].s;
  EXPECT_NE(collective_site.find("dist_train.cpp:"), std::string::npos) << k.out;
  Exit a = tc::test::run({bin("tc-analyze"), r0, "--json"}, {});
  ASSERT_EQ(a.code, 0) << a.err;
  int hotspots = 0;
  const tc::test::JsonValue report = tc::test::parse_json(a.out);
  for (const auto& f : report["findings"].a) {
    if (f["kind"].s != "kernel.hotspot") continue;
    ++hotspots;
    EXPECT_EQ(f["title"].s.find(collective_site), std::string::npos) << f["title"].s;
  }
  EXPECT_EQ(hotspots, 1) << a.out;
}

TEST(Dist, PercentRPlacesTheRank) {
  if (mpirun().empty()) FAIL() << "mpirun is missing; scripts/setup.sh installs Open MPI (openmpi-bin)";
  TempDir dir;
  std::filesystem::create_directories(dir.file("r0"));
  std::filesystem::create_directories(dir.file("r1"));
  Exit e = tc::test::run({mpirun(), "-np", "2", bin("tc-profile"), "-q", "-o", dir.file("r%r/train.tcdb"), "--", bin("tc-test-dist"),
                          "--global-batch", "4", "--steps", "1"},
                         mpi_env(dir), tc::test::kMpirunLimit);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("r0/train.tcdb")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("r1/train.tcdb")));
}

}  // namespace
