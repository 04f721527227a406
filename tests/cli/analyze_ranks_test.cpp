// tc-analyze over the stores of one MPI job (#16): synthetic rank stores
// (tests/analysis/rank_store.h), and the real thing under mpirun.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/rank_store.h"
#include "support/json.h"
#include "support/process.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::JsonValue;
using tc::test::RankEvent;
using tc::test::RankPlan;
using tc::test::TempDir;

namespace {

constexpr int64_t kMs = tc::test::kRankMs;

Exit analyze(std::vector<std::string> args) {
  args.insert(args.begin(), bin("tc-analyze"));
  return tc::test::run(args, {{"NO_COLOR", "1"}});
}

std::vector<RankPlan> two_ranks(const std::string& job = "job-7") {
  return {{.rank = 0, .job = job}, {.rank = 1, .job = job, .clock_offset_ns = 5 * kMs}};
}

std::vector<RankEvent> rank1_recompiles() {
  return {{.what = RankEvent::kCompile, .rank = 1, .step = 2, .ns = 300 * kMs, .signature = "sigA20"},
          {.what = RankEvent::kCompile, .rank = 1, .step = 2, .ns = 200 * kMs, .phase_b = true, .signature = "sigB20"}};
}

TEST(AnalyzeRanks, MergesTheStoresOfAJobByRank) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 4, rank1_recompiles(), true);
  Exit e = analyze({paths[1], paths[0]});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out.rfind("job job-7: 2 ranks, 8 collectives\n", 0), 0u) << e.out;
  size_t r0 = e.out.find(paths[0]), r1 = e.out.find(paths[1]);
  ASSERT_NE(r0, std::string::npos) << e.out;
  EXPECT_LT(r0, r1) << "rank 0 first: " << e.out;
  EXPECT_NE(e.out.find("rank 1 arrived last at 2 collectives of step 2 because it compiled 2 graphs (shape_change: tokens dim 1 12->20"),
            std::string::npos)
      << e.out;
  EXPECT_NE(e.out.find("kind: distributed.straggler"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("kind: distributed.desync"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("all 2 ranks: item() at train.cpp:88"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("rank 1: tokens dim 1 took 2 values"), std::string::npos) << e.out;

  Exit j = analyze({paths[0], paths[1], "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  JsonValue v = tc::test::parse_json(j.out);
  EXPECT_EQ(v["schema"].s, "tc-analyze-job/1");
  ASSERT_EQ(v["ranks"].a.size(), 2u);
  EXPECT_NEAR(v["ranks"].a[0]["collective_wait_s"].n, 0.5, 1e-9);
  EXPECT_EQ(v["ranks"].a[1]["store"].s, paths[1]);
  bool straggler = false;
  for (const auto& f : v["findings"].a) {
    if (f["kind"].s != "distributed.straggler") continue;
    straggler = true;
    EXPECT_EQ(f["ranks"].a.at(0).n, 1);
    EXPECT_EQ(f["evidence"]["cause"].s, "compile");
    EXPECT_NEAR(f["evidence"]["waited_s"]["0"].n, 0.5, 1e-9);
  }
  EXPECT_TRUE(straggler) << j.out;

  // Each store alone is the single-store report it always was.
  Exit one = analyze({paths[1]});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out.rfind(paths[1] + ": ./train (exited 0, complete)\n", 0), 0u) << one.out;
  EXPECT_EQ(one.out.find("distributed."), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("rank 1:"), std::string::npos) << one.out;

  Exit suggest = analyze({"suggest", paths[0], paths[1]});
  ASSERT_EQ(suggest.code, 0) << suggest.err;
  EXPECT_NE(suggest.out.find("Pad tokens dim 1 to 20 on every rank"), std::string::npos) << suggest.out;
  EXPECT_NE(suggest.out.find("rank 1: Pad tokens dim 1 to 24"), std::string::npos) << suggest.out;
}

TEST(AnalyzeRanks, FailOnGatesTheMergedReport) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 4, rank1_recompiles());
  Exit crossed = analyze({paths[0], paths[1], "--fail-on", "straggler_wait_s>0.1"});
  EXPECT_EQ(crossed.code, 1) << crossed.err;
  EXPECT_EQ(tc::test::count_lines(crossed.err), 1) << crossed.err;
  EXPECT_NE(crossed.err.find("straggler_wait_s is 0.5, which crosses the threshold straggler_wait_s>0.1"), std::string::npos) << crossed.err;
  EXPECT_EQ(analyze({paths[0], paths[1], "--fail-on", "stragglers>0"}).code, 1);
  EXPECT_EQ(analyze({paths[0], paths[1], "--fail-on", "recompilations>1"}).code, 1) << "rank 1 recompiled twice";
  Exit fine = analyze({paths[0], paths[1], "--fail-on", "collective_wait_s>1,recompilations>2"});
  EXPECT_EQ(fine.code, 0) << fine.err;
}

TEST(AnalyzeRanks, RefusesStoresOfDifferentJobsAndARankGivenTwice) {
  TempDir a, b;
  auto job7 = tc::test::write_job(a.path().string(), two_ranks("job-7"), 2, {});
  auto job8 = tc::test::write_job(b.path().string(), two_ranks("job-8"), 2, {});
  for (const auto& [args, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{job7[0], job8[1]}, "the stores come from different jobs"},
           {{job7[0], job7[1], job7[1]}, "are both rank 1 of job job-7"},
           {{"diff", job7[0], job7[1], "--", job8[0], job8[0]}, "are both rank 0"},
       }) {
    Exit e = analyze(args);
    EXPECT_EQ(e.code, 2) << why << ": " << e.err;
    EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
    EXPECT_EQ(e.err.rfind("tc-analyze: ", 0), 0u) << e.err;
    EXPECT_NE(e.err.find(why), std::string::npos) << e.err;
    EXPECT_TRUE(e.out.empty()) << e.out;
  }
  Exit missing = analyze({job7[0], a.file("run.rank9.tcdb")});
  EXPECT_EQ(missing.code, 3) << missing.err;
}

// #27: a rank of 1,000,000 in a world of 2, a world of 0 or of 2^31-1, a clock
// offset of INT64_MAX (9,223,372,037 s waits before): a damaged store, exit 5
// in one line, for every subcommand that reads the ranks.
TEST(AnalyzeRanks, RanksOutOfRangeAreADamagedStore) {
  for (const std::string set : {"rank = 1000000", "world_size = 0", "world_size = 2147483647", "clock_offset_ns = 9223372036854775807"}) {
    TempDir dir;
    auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 2, rank1_recompiles());
    tc::test::edit_store(paths[1], "UPDATE ranks SET " + set);
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {paths[0], paths[1]}, {paths[1]}, {"--json", paths[0], paths[1]}, {"recompiles", paths[0], paths[1]}, {"evals", paths[1]},
             {"memory", paths[0], paths[1]}, {"suggest", paths[0], paths[1]}, {"diff", paths[0], paths[1], "--", paths[0], paths[1]}}) {
      Exit e = analyze(args);
      EXPECT_EQ(e.code, 5) << set << ": " << args[0] << ": " << e.err;
      EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
      EXPECT_EQ(e.err.rfind("tc-analyze: " + paths[1] + ": damaged store: its ranks row says rank ", 0), 0u) << e.err;
      EXPECT_TRUE(e.out.empty()) << e.out;
    }
  }
}

// #27: two srun steps of one allocation share SLURM_JOB_ID but are two jobs.
TEST(AnalyzeRanks, TwoSrunStepsOfOneAllocationAreRefusedAsTwoJobs) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0, .dist = false, .launcher = false}, {.rank = 1, .dist = false, .launcher = false}}, 2,
                                   rank1_recompiles());
  for (int i = 0; i < 2; ++i) {
    tc::test::edit_store(paths[i], "INSERT INTO run_env (name, value) VALUES ('PMI_RANK', '" + std::to_string(i) +
                      "'), ('PMI_SIZE', '2'), ('SLURM_JOB_ID', '4242'), ('SLURM_STEP_ID', '" + std::to_string(i) + "')");
  }
  Exit e = analyze({paths[0], paths[1]});
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("is rank 0 of job 4242.0 but " + paths[1] + " is rank 1 of job 4242.1: the stores come from different jobs"), std::string::npos)
      << e.err;
  EXPECT_TRUE(e.out.empty()) << e.out;
}

TEST(AnalyzeRanks, DiffOfTwoSetsOfRankStores) {
  TempDir before, after;
  auto a = tc::test::write_job(before.path().string(), two_ranks(), 4, rank1_recompiles());
  auto b = tc::test::write_job(after.path().string(), two_ranks(), 4, {});
  Exit e = analyze({"diff", a[0], a[1], "--", b[0], b[1]});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("rank 0\n"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("  collective_wait_s"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("total (summed over the ranks"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("fixed"), std::string::npos) << e.out;
  Exit j = analyze({"diff", "--json", a[0], a[1], "--", b[0], b[1]});
  ASSERT_EQ(j.code, 0) << j.err;
  JsonValue v = tc::test::parse_json(j.out);
  EXPECT_EQ(v["schema"].s, "tc-analyze-job-diff/1");
  EXPECT_NEAR(v["ranks"].a.at(0)["a"]["collective_wait_s"].n, 0.5, 1e-9);
  EXPECT_NEAR(v["b"]["collective_wait_s"].n, 0, 1e-9);
  // --fail-on looks at B.
  EXPECT_EQ(analyze({"diff", "--fail-on", "straggler_wait_s>0", a[0], a[1], "--", b[0], b[1]}).code, 0);
  Exit worse = analyze({"diff", "--fail-on", "straggler_wait_s>0", b[0], b[1], "--", a[0], a[1]});
  EXPECT_EQ(worse.code, 1) << worse.err;
  EXPECT_EQ(tc::test::count_lines(worse.err), 1) << worse.err;
  // Two single stores either way are the old diff.
  Exit plain = analyze({"diff", a[0], "--", b[0]});
  ASSERT_EQ(plain.code, 0) << plain.err;
  Exit old = analyze({"diff", a[0], b[0]});
  EXPECT_EQ(plain.out, old.out);
}

std::string mpirun() {
  for (const char* p : {"/usr/bin/mpirun", "/usr/local/bin/mpirun"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

// The example: rank 1 sees tokens dim 1 grow from 12 to 20 at step 5,
// recompiles there, and rank 0 waits at the two all-reduces that follow.
TEST(AnalyzeRanks, RealJobUnderMpirunNamesTheStraggler) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  if (mpirun().empty()) FAIL() << "mpirun is missing; scripts/setup.sh installs Open MPI (openmpi-bin)";
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> env = {
      {"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}, {"ASAN_OPTIONS", "detect_leaks=0"},
      {"TC_CACHE_DIR", dir.file("cache")}, {"NO_COLOR", "1"}, {"OMPI_MCA_mpi_yield_when_idle", "1"}};
  Exit run = tc::test::run({mpirun(), "-np", "2", "--oversubscribe", bin("tc-profile"), "-q", "-o", dir.file("run.tcdb"), "--", bin("tc-test-dist"),
                            "--global-batch", "16", "--steps", "8", "--long-rank", "1", "--long-at", "5"},
                           env, tc::test::kMpirunLimit);
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string r0 = dir.file("run.rank0.tcdb"), r1 = dir.file("run.rank1.tcdb");
  ASSERT_TRUE(std::filesystem::exists(r0) && std::filesystem::exists(r1)) << run.err;
  Exit e = tc::test::run({bin("tc-analyze"), r0, r1, "--json"}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  JsonValue v = tc::test::parse_json(e.out);
  ASSERT_EQ(v["ranks"].a.size(), 2u);
  EXPECT_GT(v["ranks"].a[0]["collective_wait_s"].n, 0);
  const JsonValue* straggler = nullptr;
  for (const auto& f : v["findings"].a) {
    if (f["kind"].s == "distributed.straggler" && f["evidence"]["rank"].n == 1 && f["evidence"]["step"].n == 5) straggler = &f;
  }
  ASSERT_NE(straggler, nullptr) << e.out;
  const JsonValue& ev = (*straggler)["evidence"];
  EXPECT_EQ(ev["cause"].s, "compile");
  EXPECT_GT(ev["waited_s"]["0"].n, 0);
  EXPECT_GT(ev["total_waited_s"].n, 0);
  bool shape = false;
  for (const auto& c : ev["compilations"].a) {
    for (const auto& in : c["inputs"].a) {
      shape = shape || (in["input"].s == "tokens" && in["dim"].n == 1 && in["old_value"].n == 12 && in["new_value"].n == 20);
    }
  }
  EXPECT_TRUE(shape) << e.out;
  EXPECT_NE((*straggler)["title"].s.find("tokens dim 1 12->20"), std::string::npos) << (*straggler)["title"].s;
  bool desync = false;
  for (const auto& f : v["findings"].a) desync = desync || f["kind"].s == "distributed.desync";
  EXPECT_TRUE(desync) << e.out;
  // The text report says the same.
  Exit text = tc::test::run({bin("tc-analyze"), r0, r1}, env);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("rank 1 arrived last at "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" of step 5 because it compiled "), std::string::npos) << text.out;
}

}  // namespace
