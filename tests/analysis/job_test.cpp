// The stores of one data-parallel job merged (tc/analysis/job.h), on rank
// stores written here (rank_store.h), so that every wait is known exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "analysis/rank_store.h"
#include "support/json.h"
#include "support/process.h"
#include "tc/analysis/diff.h"
#include "tc/analysis/fail_on.h"
#include "tc/analysis/job.h"
#include "tc/store/reader.h"
#include "tc/store/writer.h"

namespace ta = tc::analysis;
using tc::test::JsonValue;
using tc::test::RankEvent;
using tc::test::RankPlan;
using tc::test::TempDir;

namespace {

constexpr int64_t kMs = tc::test::kRankMs;

std::vector<const ta::JobFinding*> of_kind(const ta::JobReport& job, const std::string& kind) {
  std::vector<const ta::JobFinding*> out;
  for (const auto& f : job.findings)
    if (f.finding.kind == kind) out.push_back(&f);
  return out;
}

ta::JobReport merged(const std::vector<std::string>& paths) {
  auto job = ta::analyze_job(paths);
  EXPECT_TRUE(job.ok()) << job.status().message();
  return job.ok() ? std::move(*job) : ta::JobReport{};
}

// Rank 1 (whose clock runs 5 ms behind rank 0's) sees tokens dim 1 grow from
// 12 to 20 at step 2 and compiles twice there: 300 ms before the first
// all-reduce, 200 ms in mark_step before the second.
std::vector<RankEvent> rank1_recompiles() {
  RankEvent a{.what = RankEvent::kCompile, .rank = 1, .step = 2, .ns = 300 * kMs, .signature = "sigA20"};
  RankEvent b{.what = RankEvent::kCompile, .rank = 1, .step = 2, .ns = 200 * kMs, .phase_b = true, .signature = "sigB20"};
  return {a, b};
}

std::vector<RankPlan> two_ranks() { return {{.rank = 0}, {.rank = 1, .clock_offset_ns = 5 * kMs}}; }

TEST(Job, AStragglerThatCompiledIsNamedWithItsShapeAndTheWaitOfEachRank) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 4, rank1_recompiles());
  // Given in the wrong order: the report is by rank.
  ta::JobReport job = merged({paths[1], paths[0]});
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[0].rank, 0);
  EXPECT_EQ(job.ranks[0].store, paths[0]);
  EXPECT_EQ(job.job, "job-7");
  EXPECT_EQ(job.world_size, 2);
  EXPECT_EQ(job.collectives, 8);
  // On the aligned clock rank 1 is late only at step 2; without the 5 ms offset rank 1 would wait at every collective.
  EXPECT_NEAR(job.ranks[0].collective_wait_s, 0.5, 1e-9);
  EXPECT_NEAR(job.ranks[1].collective_wait_s, 0.0, 1e-9);
  EXPECT_EQ(job.ranks[1].compilations, 4);
  EXPECT_EQ(job.ranks[1].recompilations, 2);
  EXPECT_EQ(job.ranks[0].steps, 4);

  auto stragglers = of_kind(job, "distributed.straggler");
  ASSERT_EQ(stragglers.size(), 1u) << "both collectives of step 2 are one finding";
  const ta::JobFinding& s = *stragglers[0];
  EXPECT_EQ(s.ranks, std::vector<int64_t>{1});
  EXPECT_FALSE(s.evidence_rank);
  JsonValue e = tc::test::parse_json(s.finding.evidence_json);
  EXPECT_EQ(e["rank"].n, 1);
  EXPECT_EQ(e["step"].n, 2);
  EXPECT_EQ(e["cause"].s, "compile");
  ASSERT_EQ(e["waited_s"].o.size(), 1u);
  EXPECT_NEAR(e["waited_s"]["0"].n, 0.5, 1e-9);
  EXPECT_NEAR(e["total_waited_s"].n, 0.5, 1e-9);
  ASSERT_EQ(e["collectives"].a.size(), 2u);
  EXPECT_EQ(e["collectives"].a[0]["seq"].n, 5);
  EXPECT_EQ(e["collectives"].a[1]["seq"].n, 6);
  ASSERT_EQ(e["compilations"].a.size(), 2u);
  const JsonValue& in = e["compilations"].a[0]["inputs"].a.at(0);
  EXPECT_EQ(in["input"].s, "tokens");
  EXPECT_EQ(in["dim"].n, 1);
  EXPECT_EQ(in["old_value"].n, 12);
  EXPECT_EQ(in["new_value"].n, 20);
  EXPECT_NE(s.finding.title.find("rank 1 arrived last at 2 collectives of step 2"), std::string::npos) << s.finding.title;
  EXPECT_NE(s.finding.title.find("tokens dim 1 12->20"), std::string::npos) << s.finding.title;
  EXPECT_NE(s.finding.title.find("rank 0 waited 500.0 ms"), std::string::npos) << s.finding.title;
  EXPECT_NE(s.finding.suggestion.find("Pad tokens dim 1 to 20 on every rank so that all ranks see the same shapes"), std::string::npos)
      << s.finding.suggestion;
  EXPECT_NEAR(s.finding.estimated_saving_s, 0.5, 1e-9);
  EXPECT_NEAR(job.straggler_wait_s, 0.5, 1e-9);
  // tc's own compilations: none of torch's remedies; its executions measured.
  EXPECT_EQ(s.finding.suggestion.find("torch"), std::string::npos) << s.finding.suggestion;
  EXPECT_FALSE(e.o.contains("torch_options"));
  EXPECT_EQ(job.ranks[0].execute_source, "executions");

  // The shape change is rank 1's alone: prefixed by its rank.
  auto shapes = of_kind(job, "recompilation.shape_change");
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0]->finding.title.rfind("rank 1: tokens dim 1", 0), 0u) << shapes[0]->finding.title;
  EXPECT_EQ(shapes[0]->ranks, std::vector<int64_t>{1});
  EXPECT_EQ(shapes[0]->evidence_rank, 1);

  // --fail-on over the job.
  EXPECT_NEAR(*ta::metric_value(job, "straggler_wait_s"), 0.5, 1e-9);
  EXPECT_NEAR(*ta::metric_value(job, "collective_wait_s"), 0.5, 1e-9);
  EXPECT_EQ(*ta::metric_value(job, "stragglers"), 1);
  EXPECT_EQ(*ta::metric_value(job, "recompilations"), 2) << "the worst rank";
  auto rule = ta::parse_fail_on("straggler_wait_s>0.4");
  ASSERT_TRUE(rule.ok());
  EXPECT_EQ(ta::crossed(*rule, job), "straggler_wait_s is 0.5, which crosses the threshold straggler_wait_s>0.4");
  EXPECT_EQ(ta::crossed(*ta::parse_fail_on("straggler_wait_s>0.6"), job), std::nullopt);
}

// The same job recorded from torch.compile (compilations.framework, steps
// without tc's executions): the straggler's fix also says which of torch's own
// mechanisms apply and what each costs here; a positional argument of a
// library frame (DDP's forward(*inputs): "args[0]") that changed as the
// program's named input did is the same tensor, named once; the rank table
// says execution was measured from the steps, or not at all.
TEST(Job, ATorchCompileStragglerGetsTorchsOwnRemediesWithTheirCosts) {
  TempDir dir;
  // Rank 1 is also 5 ms late at step 3 from host work: a finding in tc's job, jitter in a framework's.
  std::vector<RankEvent> events = rank1_recompiles();
  events.push_back({.what = RankEvent::kHost, .rank = 1, .step = 3, .ns = 5 * kMs});
  auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 4, events);
  EXPECT_EQ(of_kind(merged(paths), "distributed.straggler").size(), 2u) << "tc's: the recompilation and the host work";
  for (const std::string& p : paths) {
    tc::test::edit_store(p, "UPDATE compilations SET framework = 'torch.compile'; UPDATE compilation_inputs SET dynamic = 1; "
                            "INSERT INTO compilation_inputs SELECT NULL, utid, graph_id, 'args[0]', dim, old_value, new_value, dynamic "
                            "FROM compilation_inputs; DELETE FROM executions");
  }
  ta::JobReport job = merged(paths);
  auto stragglers = of_kind(job, "distributed.straggler");
  ASSERT_EQ(stragglers.size(), 1u);
  const ta::Finding& f = stragglers[0]->finding;
  EXPECT_NE(f.title.find("(shape_change: tokens dim 1 12->20, "), std::string::npos) << f.title;
  EXPECT_EQ(f.suggestion.find("args["), std::string::npos) << f.suggestion;
  for (const char* part : {"Pad tokens dim 1 to 20 on every rank", "torch._dynamo.mark_dynamic(tokens, 1) on every rank before the first step",
                            "here rank 1 alone made tokens dim 1 dynamic", "torch._dynamo.config.enable_compiler_collective = True"})
    EXPECT_NE(f.suggestion.find(part), std::string::npos) << part << " in: " << f.suggestion;
  JsonValue e = tc::test::parse_json(f.evidence_json);
  ASSERT_EQ(e["torch_options"].a.size(), 3u);
  EXPECT_NEAR(e["torch_options"].a[0]["waiting_saved_s"].n, 0.5, 1e-9);
  EXPECT_NEAR(e["torch_options"].a[1]["waiting_saved_s"].n, 0.5, 1e-9);
  EXPECT_GT(e["torch_options"].a[1]["compile_added_s"].n, 0) << "the other rank compiles instead";
  EXPECT_EQ(e["torch_options"].a[2]["waiting_saved_s"].n, 0) << "PGO helps the next run";
  for (const auto& r : job.ranks) EXPECT_NE(r.execute_source, "executions") << "rank " << r.rank << " executed nothing tc measured";
}

// tc-viewer draws every rank on rank 0's clock: each finding says where it
// is on that clock too (rank 1's store runs 5 ms behind).
TEST(Job, FindingsCarryTheirAnchorsOnTheAlignedClock) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 4, rank1_recompiles());
  ta::JobReport job = merged(paths);
  auto reader = tc::store::Reader::open(paths[1]);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<int64_t> arrivals, compiled;
  for (auto q = reader->query("SELECT ts FROM collectives WHERE seq IN (5, 6) ORDER BY seq"); q.next();) arrivals.push_back(q.i64(0) + 5 * kMs);
  for (auto q = reader->query("SELECT ts FROM compilations WHERE reason != 'first' ORDER BY ts"); q.next();) compiled.push_back(q.i64(0) + 5 * kMs);
  ASSERT_EQ(arrivals.size(), 2u);
  ASSERT_EQ(compiled.size(), 2u);

  auto stragglers = of_kind(job, "distributed.straggler");
  ASSERT_EQ(stragglers.size(), 1u);
  EXPECT_EQ(stragglers[0]->aligned_anchors_ts, arrivals) << "rank 1's arrivals at the two collectives of step 2";
  ASSERT_EQ(stragglers[0]->finding.anchors_ts.size(), 2u);
  EXPECT_EQ(stragglers[0]->finding.anchors_ts[0], arrivals[0] - 5 * kMs) << "anchors_ts stay in rank 1's store";

  auto desync = of_kind(job, "distributed.desync");
  ASSERT_EQ(desync.size(), 1u);
  std::vector<int64_t> d = desync[0]->aligned_anchors_ts;
  std::sort(d.begin(), d.end());
  EXPECT_EQ(d, compiled) << "the graphs rank 1 compiled alone";

  auto shapes = of_kind(job, "recompilation.shape_change");
  ASSERT_EQ(shapes.size(), 1u);
  ASSERT_FALSE(shapes[0]->finding.anchors_ts.empty());
  ASSERT_EQ(shapes[0]->aligned_anchors_ts.size(), shapes[0]->finding.anchors_ts.size());
  for (size_t i = 0; i < shapes[0]->aligned_anchors_ts.size(); ++i) {
    EXPECT_EQ(shapes[0]->aligned_anchors_ts[i], shapes[0]->finding.anchors_ts[i] + 5 * kMs) << "rank 1's own finding, shifted by its offset";
  }
}

TEST(Job, DesyncNamesTheRankAndTheGraphsTheOthersDidNotCompile) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 4, rank1_recompiles());
  ta::JobReport job = merged(paths);
  auto desync = of_kind(job, "distributed.desync");
  ASSERT_EQ(desync.size(), 1u);
  EXPECT_EQ(desync[0]->ranks, std::vector<int64_t>{1});
  JsonValue e = tc::test::parse_json(desync[0]->finding.evidence_json);
  EXPECT_EQ(e["graphs"]["0"].n, 2);
  EXPECT_EQ(e["graphs"]["1"].n, 4);
  EXPECT_EQ(e["common"].n, 2);
  ASSERT_EQ(e["extra"].a.size(), 1u);
  EXPECT_EQ(e["extra"].a[0]["rank"].n, 1);
  const auto& graphs = e["extra"].a[0]["compilations"].a;
  ASSERT_EQ(graphs.size(), 2u);
  EXPECT_EQ(graphs[0]["signature"].s, "sigA20");
  EXPECT_EQ(graphs[1]["signature"].s, "sigB20");
  EXPECT_EQ(graphs[0]["inputs"].a.at(0)["input"].s, "tokens");
  EXPECT_EQ(graphs[0]["inputs"].a.at(0)["new_value"].n, 20);
  EXPECT_NE(desync[0]->finding.title.find("rank 1 compiled 2 graphs that not every rank did (tokens dim 1 12->20, step 2)"), std::string::npos)
      << desync[0]->finding.title;

  // A different graph compiled in no time: a desync, but no one waited for it.
  TempDir quick;
  RankEvent fast{.what = RankEvent::kCompile, .rank = 0, .step = 1, .ns = kMs / 10, .signature = "sigA16", .new_value = 16};
  job = merged(tc::test::write_job(quick.path().string(), two_ranks(), 4, {fast}));
  EXPECT_EQ(of_kind(job, "distributed.desync").size(), 1u);
  EXPECT_TRUE(of_kind(job, "distributed.straggler").empty()) << "100 us late is not material";
  // Same graphs everywhere: neither.
  TempDir same;
  job = merged(tc::test::write_job(same.path().string(), two_ranks(), 4, {}));
  EXPECT_TRUE(of_kind(job, "distributed.desync").empty());
  EXPECT_TRUE(of_kind(job, "distributed.straggler").empty());
  EXPECT_NEAR(job.collective_wait_s, 0, 1e-12);
}

TEST(Job, EachCauseOfStragglingAndNoFindingForNoise) {
  TempDir dir;
  std::vector<RankPlan> plans;
  for (int64_t r = 0; r < 4; ++r) plans.push_back({.rank = r, .world_size = 4, .clock_offset_ns = r * 3 * kMs});
  std::vector<RankEvent> events = {
      {.what = RankEvent::kEvaluate, .rank = 2, .step = 1, .ns = 80 * kMs},
      {.what = RankEvent::kSlowExecute, .rank = 3, .step = 3, .ns = 60 * kMs},
      {.what = RankEvent::kHost, .rank = 1, .step = 4, .ns = 40 * kMs},
      {.what = RankEvent::kHost, .rank = 0, .step = 5, .ns = kMs / 2},  // under the 1 ms floor
  };
  ta::JobReport job = merged(tc::test::write_job(dir.path().string(), plans, 6, events));
  auto s = of_kind(job, "distributed.straggler");
  ASSERT_EQ(s.size(), 3u);
  struct Want {
    int64_t rank, step;
    const char* cause;
    double each;
  };
  // Most costly first.
  const Want want[] = {{2, 1, "explicit_evaluation", 0.080}, {3, 3, "execute", 0.060}, {1, 4, "other", 0.040}};
  for (size_t i = 0; i < 3; ++i) {
    JsonValue e = tc::test::parse_json(s[i]->finding.evidence_json);
    EXPECT_EQ(e["rank"].n, want[i].rank) << i;
    EXPECT_EQ(e["step"].n, want[i].step) << i;
    EXPECT_EQ(e["cause"].s, want[i].cause) << i;
    ASSERT_EQ(e["waited_s"].o.size(), 3u) << i;
    for (int64_t r = 0; r < 4; ++r) {
      if (r == want[i].rank) continue;
      EXPECT_NEAR(e["waited_s"][std::to_string(r)].n, want[i].each, 1e-9) << i << " rank " << r;
    }
    EXPECT_NEAR(e["total_waited_s"].n, 3 * want[i].each, 1e-9) << i;
    EXPECT_NE(s[i]->finding.title.find("3 ranks waited"), std::string::npos) << s[i]->finding.title;
  }
  EXPECT_NE(s[0]->finding.title.find("evaluated a tensor early (item() at train.cpp:95, 1 time, 80.0 ms)"), std::string::npos) << s[0]->finding.title;
  EXPECT_NE(s[0]->finding.suggestion.find("Move the item() at train.cpp:95 after tc::mark_step()"), std::string::npos) << s[0]->finding.suggestion;
  EXPECT_NE(s[1]->finding.title.find("executed slower (60.0 ms more than the median rank)"), std::string::npos) << s[1]->finding.title;
  EXPECT_NE(s[2]->finding.title.find("outside compiling and executing (40.0 ms"), std::string::npos) << s[2]->finding.title;
  // Every rank waited for the others at some collective: 3 x 80 + ... spread over the ranks.
  double total = 0;
  for (const auto& r : job.ranks) total += r.collective_wait_s;
  EXPECT_NEAR(total, 0.24 + 0.18 + 0.12 + 0.0015, 1e-9);
  EXPECT_NEAR(job.ranks[0].collective_wait_s, 0.08 + 0.06 + 0.04, 1e-9);
}

TEST(Job, FindingsAllRanksShareAreOneFindingOfAllRanks) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 4, {}, /*every_step_item=*/true);
  ta::JobReport job = merged(paths);
  auto evals = of_kind(job, "explicit_evaluation");
  ASSERT_EQ(evals.size(), 1u) << "one finding, not one per rank";
  EXPECT_EQ(evals[0]->finding.title.rfind("all 2 ranks: item() at train.cpp:88 cut the graph 4 times in 4 steps", 0), 0u) << evals[0]->finding.title;
  EXPECT_EQ(evals[0]->ranks, (std::vector<int64_t>{0, 1}));
  ASSERT_TRUE(evals[0]->evidence_rank);
  for (const auto& f : job.findings) {
    EXPECT_EQ(f.finding.title.rfind("rank ", 0), std::string::npos) << "every finding is both ranks': " << f.finding.title;
  }
  JsonValue j = tc::test::parse_json(ta::job_json(job));
  EXPECT_EQ(j["schema"].s, "tc-analyze-job/1");
  EXPECT_EQ(j["job"].s, "job-7");
  ASSERT_EQ(j["ranks"].a.size(), 2u);
  for (const char* k : {"rank", "store", "steps", "compilations", "collective_wait_s", "compile_s", "execute_s"}) {
    EXPECT_TRUE(j["ranks"].a[1].has(k)) << k;
  }
  EXPECT_EQ(j["ranks"].a[1]["rank"].n, 1);
  bool found = false;
  for (const auto& f : j["findings"].a) {
    if (f["kind"].s != "explicit_evaluation") continue;
    found = true;
    ASSERT_EQ(f["ranks"].a.size(), 2u);
    EXPECT_EQ(f["ranks"].a[1].n, 1);
    EXPECT_EQ(f["evidence"]["count"].n, 4);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ta::rank_set({0, 1, 2, 5, 7, 8}, 9), "ranks 0-2,5,7-8");
  EXPECT_EQ(ta::rank_set({0, 1, 2}, 3), "all 3 ranks");
  EXPECT_EQ(ta::rank_set({4}, 8), "rank 4");
}

TEST(Job, StoresOfDifferentJobsOrATwiceGivenRankAreRefused) {
  TempDir a, b, c;
  auto job7 = tc::test::write_job(a.path().string(), two_ranks(), 2, {});
  auto job8 = tc::test::write_job(b.path().string(), {{.rank = 0, .job = "job-8"}, {.rank = 1, .job = "job-8"}}, 2, {});
  auto four = tc::test::write_job(c.path().string(), {{.rank = 1, .world_size = 4, .job = "job-7"}}, 2, {});
  auto refused = [](const std::vector<std::string>& paths, const std::string& why) {
    auto job = ta::analyze_job(paths);
    ASSERT_FALSE(job.ok()) << why;
    EXPECT_EQ(job.status().code(), tc::StatusCode::kInvalidArgument);
    EXPECT_NE(job.status().message().find(why), std::string::npos) << job.status().message();
    EXPECT_EQ(job.status().message().find('\n'), std::string::npos) << "one line";
  };
  refused({job7[0], job8[1]}, "the stores come from different jobs");
  refused({job7[0], job7[1], job8[0]}, "different jobs");
  refused({job7[0], four[0]}, "says its job has 2 ranks but");
  refused({job7[0], job7[1], job7[0]}, "are both rank 0 of job job-7: give each rank's store once");
  // A store that names no rank cannot be placed among others.
  TempDir d;
  auto alone = tc::test::write_job(d.path().string(), {{.rank = 0, .dist = false, .launcher = false}}, 2, {});
  refused({job7[0], alone[0]}, "names no rank");
  // Alone it is rank 0 of a world of 1.
  ta::JobReport one = merged(alone);
  ASSERT_EQ(one.ranks.size(), 1u);
  EXPECT_EQ(one.ranks[0].rank, 0);
  // The launcher's variables are enough to place a store (a program without tc::dist::init), with a note for the missing ranks.
  TempDir e;
  auto env_only = tc::test::write_job(e.path().string(), {{.rank = 2, .world_size = 4, .dist = false}}, 2, {});
  auto ranks = ta::analyze_job({job7[0], env_only[0]});
  ASSERT_FALSE(ranks.ok()) << "world 2 against world 4";
  auto w4 = tc::test::write_job(e.path().string(), {{.rank = 0, .world_size = 4}}, 2, {});
  ta::JobReport partial = merged({w4[0], env_only[0]});
  ASSERT_EQ(partial.ranks.size(), 2u);
  EXPECT_EQ(partial.ranks[1].rank, 2);
  ASSERT_FALSE(partial.notes.empty());
  EXPECT_EQ(partial.notes[0], "ranks 1,3 of the job's 4 are missing: the waits and stragglers are over the 2 ranks given");
}

// #27: a rank the store cannot hold is a damaged store (kCorrupt, one line),
// refused where every reader of ranks gets it: store_ranks.
TEST(Job, RanksAndClocksOutOfRangeAreADamagedStore) {
  const std::string max = std::to_string(INT64_MAX);
  for (const auto& [set, says] : std::vector<std::pair<std::string, std::string>>{
           {"rank = 1000000", "says rank 1000000 of a world of 2"},
           {"rank = -1", "says rank -1 of a world of 2"},
           {"world_size = 0", "says rank 1 of a world of 0"},
           {"world_size = 2147483647", "of a world of 2147483647 (tc accepts 0 <= rank < world size <= 1048576)"},
           {"world_size = 1048577, rank = 0", "of a world of 1048577"},
           {"clock_offset_ns = " + max, "clock is " + max + " ns from rank 0's"},
           {"clock_offset_ns = -" + max, "clock is -" + max},
           {"clock_offset_ns = 315576000000000001", "at most 315576000000000000 ns, 10 years, either way"},
           {"clock_error_ns = -1", "+--1"},
       }) {
    TempDir dir;
    auto paths = tc::test::write_job(dir.path().string(), two_ranks(), 2, {});
    tc::test::edit_store(paths[1], "UPDATE ranks SET " + set);
    auto job = ta::analyze_job(paths);
    ASSERT_FALSE(job.ok()) << set;
    EXPECT_EQ(job.status().code(), tc::StatusCode::kCorrupt) << job.status().message();
    EXPECT_EQ(job.status().message().rfind(paths[1] + ": damaged store: its ranks row says", 0), 0u) << job.status().message();
    EXPECT_NE(job.status().message().find(says), std::string::npos) << job.status().message();
    EXPECT_NE(job.status().message().find("; record the run again"), std::string::npos) << job.status().message();
    EXPECT_EQ(job.status().message().find('\n'), std::string::npos);
    auto r = tc::store::Reader::open(paths[1]);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(ta::store_ranks(*r).status().code(), tc::StatusCode::kCorrupt) << set;
    EXPECT_EQ(ta::analyze_job({paths[1]}).status().code(), tc::StatusCode::kCorrupt) << "alone too: " << set;
  }
  // The launcher's variables: a rank beyond the world it names.
  TempDir e;
  auto env = tc::test::write_job(e.path().string(), {{.rank = 1, .dist = false}}, 2, {});
  tc::test::edit_store(env[0], "UPDATE run_env SET value = '5' WHERE name = 'OMPI_COMM_WORLD_RANK'");
  auto job = ta::analyze_job(env);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), tc::StatusCode::kCorrupt);
  EXPECT_NE(job.status().message().find("its launcher's variables (run_env) says rank 5 of a world of 2"), std::string::npos) << job.status().message();
  // Within the bounds: hosts booted 90 days apart, a world of 2^20 given by one of its ranks.
  TempDir f;
  auto fine = tc::test::write_job(f.path().string(), two_ranks(), 2, {});
  tc::test::edit_store(fine[1], "UPDATE ranks SET clock_offset_ns = -7776000000000000");
  EXPECT_TRUE(ta::analyze_job(fine).ok());
  tc::test::edit_store(fine[0], "UPDATE ranks SET world_size = 1048576, rank = 1048575");
  EXPECT_TRUE(ta::analyze_job({fine[0]}).ok());
}

// #27: two srun steps of one Slurm allocation share SLURM_JOB_ID; their
// ranks are different processes: the job is JOB.STEP, and such stores are
// refused as stores of different jobs.
TEST(Job, TwoSlurmStepsOfOneAllocationAreTwoJobs) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0, .dist = false, .launcher = false}, {.rank = 1, .dist = false, .launcher = false}}, 2, {});
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string r = std::to_string(i);
    tc::test::edit_store(paths[i], "INSERT INTO run_env (name, value) VALUES ('PMI_RANK', '" + r + "'), ('PMI_SIZE', '2'), ('SLURM_JOB_ID', '4242'), "
                                   "('SLURM_STEP_ID', '" + r + "'), ('SLURM_PROCID', '" + r + "')");
  }
  auto r = tc::store::Reader::open(paths[1]);
  ASSERT_TRUE(r.ok());
  auto ranks = ta::store_ranks(*r);
  ASSERT_TRUE(ranks.ok()) << ranks.status().message();
  ASSERT_EQ(ranks->size(), 1u);
  EXPECT_EQ((*ranks)[0].job, "4242.1");
  auto job = ta::analyze_job(paths);
  ASSERT_FALSE(job.ok()) << "one job of two steps";
  EXPECT_EQ(job.status().code(), tc::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("of job 4242.0 but"), std::string::npos) << job.status().message();
  EXPECT_NE(job.status().message().find("the stores come from different jobs"), std::string::npos) << job.status().message();
  // The same step: one job.
  tc::test::edit_store(paths[1], "UPDATE run_env SET value = '0' WHERE name = 'SLURM_STEP_ID'");
  ta::JobReport one = merged(paths);
  EXPECT_EQ(one.job, "4242.0");
  EXPECT_EQ(one.ranks.size(), 2u);
}

TEST(Job, DiffOfTwoSetsGivesEachRankAndTheTotals) {
  TempDir before_dir, after_dir;
  ta::JobReport before = merged(tc::test::write_job(before_dir.path().string(), two_ranks(), 4, rank1_recompiles()));
  // The fix: every rank padded to 20 from the start, so no rank compiles at step 2.
  ta::JobReport after = merged(tc::test::write_job(after_dir.path().string(), two_ranks(), 4, {}));
  JsonValue d = tc::test::parse_json(ta::job_diff_json(before, after));
  EXPECT_EQ(d["schema"].s, "tc-analyze-job-diff/1");
  ASSERT_EQ(d["ranks"].a.size(), 2u);
  EXPECT_NEAR(d["ranks"].a[0]["a"]["collective_wait_s"].n, 0.5, 1e-9);
  EXPECT_NEAR(d["ranks"].a[0]["b"]["collective_wait_s"].n, 0, 1e-9);
  EXPECT_EQ(d["ranks"].a[1]["a"]["compilations"].n, 4);
  EXPECT_EQ(d["ranks"].a[1]["b"]["compilations"].n, 2);
  EXPECT_NEAR(d["a"]["straggler_wait_s"].n, 0.5, 1e-9);
  EXPECT_EQ(d["a"]["compilations"].n, 6) << "summed over the ranks";
  EXPECT_EQ(d["b"]["stragglers"].n, 0);
  bool straggler = false;
  for (const auto& f : d["findings"].a) {
    if (f["kind"].s != "distributed.straggler") continue;
    straggler = true;
    EXPECT_EQ(f["a_count"].n, 1);
    EXPECT_EQ(f["b_count"].n, 0);
  }
  EXPECT_TRUE(straggler);
  std::string text = ta::job_diff_text(before, after);
  EXPECT_NE(text.find("rank 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("distributed.straggler"), std::string::npos) << text;
  EXPECT_NE(text.find("fixed"), std::string::npos) << text;
}

// One tc-profile over mpirun: one store holding both ranks, each row its process's.
TEST(Job, OneStoreOfSeveralRanksIsSplitByProcess) {
  namespace schema = tc::store::schema;
  TempDir dir;
  const std::string path = dir.file("run.tcdb");
  {
    auto w = tc::store::Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.status().message();
    auto& s = **w;
    auto ok = [](const tc::Status& st) { ASSERT_TRUE(st.ok()) << st.message(); };
    ok(s.row(schema::locations).i64(1).text("all_reduce_mean").text("/src/train.cpp").text("main").i64(70).insert());
    for (int64_t r = 0; r < 2; ++r) {
      ok(s.row(schema::processes).i64(r + 1).i64(700 + r).text("train").i64(0).null().insert());
      ok(s.row(schema::threads).i64(r + 1).i64(r + 1).i64(700 + r).null().insert());
      // Rank 1's thread is utid 2 but comes first in the table: ranks are by rank, not by row.
      ok(s.row(schema::ranks).null().i64(2 - r).i64(1 - r).i64(2).text("vm").text("job-1").i64(0).i64(0).insert());
    }
    // Three all-reduces; rank 1 (utid 2) is 100 ms late at the second, after compiling for 100 ms.
    for (int64_t seq = 1; seq <= 3; ++seq) {
      int64_t base = seq * 1000 * kMs;
      for (int64_t utid = 1; utid <= 2; ++utid) {
        int64_t late = utid == 2 && seq == 2 ? 100 * kMs : 0;
        if (late) {
          auto c = s.row(schema::compilations);
          c.null().i64(utid).i64(base - late).i64(late).i64(9).i64(seq).text("sig9").text("e").text("structure_change").text("collective").i64(1);
          ok(c.i64(1).i64(1).i64(1).i64(0).i64(0).i64(0).text("built").text("one more op").text("/tmp/g.cpp").insert());
        }
        ok(s.row(schema::collectives).null().i64(utid).i64(base + late).i64(kMs + 100 * kMs - late).i64(seq).i64(seq).text("all_reduce_mean").i64(8)
               .i64(1).i64(1).insert());
      }
    }
    auto r = s.row(schema::run);
    r.i64(1).text("0.1.0").text("[\"mpirun\"]").text("/").text("vm").text("tc-profile").text("monotonic");
    ok(r.i64(0).i64(4000 * kMs).i64(0).i64(0).null().i64(1).i64(0).i64(0).text("none").null().text("tc").null().insert());
    ok(s.finalize());
  }
  auto reader = tc::store::Reader::open(path);
  ASSERT_TRUE(reader.ok());
  auto ids = ta::store_ranks(*reader);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[0].rank, 0);
  EXPECT_EQ((*ids)[0].upid, 1);
  ta::JobReport job = merged({path});
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[0].pid, 700);
  EXPECT_EQ(job.ranks[1].pid, 701);
  EXPECT_EQ(job.ranks[1].compilations, 1);
  EXPECT_EQ(job.ranks[0].compilations, 0);
  EXPECT_NEAR(job.ranks[0].collective_wait_s, 0.1, 1e-9);
  auto s = of_kind(job, "distributed.straggler");
  ASSERT_EQ(s.size(), 1u);
  JsonValue e = tc::test::parse_json(s[0]->finding.evidence_json);
  EXPECT_EQ(e["rank"].n, 1);
  EXPECT_EQ(e["cause"].s, "compile");
  EXPECT_NEAR(e["waited_s"]["0"].n, 0.1, 1e-9);
  EXPECT_NE(s[0]->finding.suggestion.find("Make every rank compile the same graphs"), std::string::npos) << s[0]->finding.suggestion;
}

}  // namespace
