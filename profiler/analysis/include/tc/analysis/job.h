// tc/analysis/job.h: the stores of one data-parallel job (tc::dist under
// mpirun: run.rank0.tcdb, run.rank1.tcdb, ...), merged into one report.
//
//   auto job = tc::analysis::analyze_job({"run.rank0.tcdb", "run.rank1.tcdb"});
//   if (!job.ok()) { puts(job.status().message().c_str()); return 2; }
//   for (const auto& r : job->ranks) printf("rank %lld waited %.3f s\n", (long long)r.rank, r.collective_wait_s);
//   for (const auto& f : job->findings) puts(f.finding.title.c_str());   // "rank 1 arrived last ...", "all 2 ranks: ..."
//   std::cout << tc::analysis::job_json(*job);                          // schema "tc-analyze-job/1"
//
// Which rank a store is: its `ranks` row (tc::dist::init), else the
// launcher's variables in run_env (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE;
// the job from PMIX_NAMESPACE, OMPI_MCA_orte_ess_jobid or SLURM_JOB_ID with
// SLURM_STEP_ID, "1234.0": tc/trace/launcher.h). A
// store may hold several ranks (one launcher over several processes): each
// `ranks` row is then one rank, its rows those of its process.
//
// Times line up on rank 0's clock: each store's ts plus its
// ranks.clock_offset_ns. A rank's wait at a collective (same seq on every
// rank) is the last arrival there minus its own arrival.
//
// Findings: each rank's own (analyze() of its store), the same kind and
// Finding::identity on several ranks merged into one whose title starts
// "all N ranks: " (every rank given), "rank R: " or "ranks 0-2,5: ", with the
// numbers of the rank that would save most; and the job's own:
// distributed.straggler and distributed.desync (docs/findings.md).
// Never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tc/analysis/report.h"

namespace tc::analysis {

// Where a store says it sits in its job.
struct RankIdentity {
  int64_t rank = -1;        // -1: the store names no rank
  int64_t world_size = 0;   // 0: unknown
  std::string job;          // "" when unknown
  std::string host;
  int64_t clock_offset_ns = 0, clock_error_ns = 0;
  int64_t upid = 0;         // the rank's process in its store (0: the whole store)
  int64_t process = 0;      // the process whose ranks row it is, whose pid and start the report shows (0: unknown)
  bool from_dist = false;   // from a `ranks` row (else from run_env)
};

// What a store may say of its ranks. A world is at most 2^20 ranks. Clock
// offsets are bounded by 10 years either way, not less: CLOCK_MONOTONIC
// counts from boot, so two hosts differ by the difference of their uptimes
// (months are legitimate); within the bound, ts + offset cannot overflow
// for any ts a run records (under 280 years of uptime).
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 20;
inline constexpr int64_t kMaxClockOffsetNs = int64_t{315'576'000} * 1'000'000'000;  // 10 years of 365.25 days

// Every rank a store names: its `ranks` rows by rank, else one from
// run_env, else none. kCorrupt, one line naming store.path(), for a rank the
// store cannot hold: outside 0 <= rank < world_size <= kMaxWorldSize (a
// `ranks` row must give its world; run_env may leave it unknown, 0), or a
// clock_offset_ns or clock_error_ns beyond kMaxClockOffsetNs (an error below
// 0 too). Every reader of a job's stores (analyze_job, tc-analyze, the
// timeline's load_job_timeline) goes through here.
StatusOr<std::vector<RankIdentity>> store_ranks(const store::Reader& store);

// Refuses, with one kInvalidArgument line, stores that are not one job:
// ranks[i] are the ranks paths[i] names (store_ranks). Among several stores,
// one that names none ("...; " + alone, e.g. "analyse it on its own"); stores
// of different jobs (job id or world size); a rank given twice. analyze_job
// and the timeline's job merge (timeline/job.h) refuse through here.
Status check_job_ranks(const std::vector<std::string>& paths, const std::vector<std::vector<RankIdentity>>& ranks,
                       const std::string& alone);

struct RankSummary {
  int64_t rank = 0;
  std::string store;  // the path it was read from
  std::string host;
  int64_t pid = 0;    // its process (0: unknown)
  bool complete = true;
  double wall_s = 0;
  int64_t steps = 0, compilations = 0, recompilations = 0, explicit_evaluations = 0, collectives = 0;
  // The sum over its collectives of (last arrival there - its arrival), on the aligned clock.
  double collective_wait_s = 0;
  double compile_s = 0, execute_s = 0;
  // As the report's JSON execute_source: "executions", "steps" (a framework's
  // rank: its steps less their compiling) or "not measured: WHY" (execute_s
  // then means nothing).
  std::string execute_source = "executions";
  int64_t clock_offset_ns = 0, clock_error_ns = 0;
};

struct JobFinding {
  Finding finding;             // title prefixed with its ranks (see above)
  std::vector<int64_t> ranks;  // the ranks it concerns, ascending
  // A rank's own finding: the rank whose evidence and numbers it shows (the
  // largest estimated saving); nullopt for the job's own findings.
  std::optional<int64_t> evidence_rank;
  // Where the finding is on the job's aligned clock (rank 0's: a store's ts
  // plus its rank's clock_offset_ns), for a viewer of every rank on one axis:
  // a rank's own finding's anchors_ts shifted by its evidence rank's offset,
  // a straggler's arrivals at its collectives, a desync's extra compilations.
  std::vector<int64_t> aligned_anchors_ts;
};

struct JobReport {
  std::string job;         // "" when no store names one
  int64_t world_size = 0;  // the job's size as recorded (may exceed ranks.size())
  std::vector<RankSummary> ranks;    // ascending rank
  std::vector<std::string> stores;   // the paths, in the order given
  std::vector<Report> reports;       // each store's own report, same order
  std::vector<std::vector<int64_t>> store_ranks;  // the ranks each store holds, same order
  std::vector<JobFinding> findings;  // most costly first
  std::vector<std::string> notes;    // e.g. which ranks of the world are missing
  int64_t collectives = 0;           // distinct seq numbers seen
  double collective_wait_s = 0;      // over every rank
  double straggler_wait_s = 0;       // total_waited_s over the distributed.straggler findings
};

// Reads and merges the stores (in parallel). kInvalidArgument, one line, for
// stores of different jobs (a job id or world size that differs), a rank
// given twice, or, among several stores, one that names no rank; a store
// that cannot be read gives its own Status (kNotFound, kCorrupt, ...). A
// single store without a rank is rank 0 of a world of 1.
StatusOr<JobReport> analyze_job(const std::vector<std::string>& paths, const Options& options = {});

// Whether no rank recorded anything a report can show (recorded_nothing()).
bool recorded_nothing(const JobReport& job);

// {"schema":"tc-analyze-job/1","job","world_size","ranks":[..],"summary":{..},"findings":[..],"notes":[..]}
// (docs/analyze-json.md).
std::string job_json(const JobReport& job);

// "all 4 ranks", "rank 1", "ranks 0-2,5" (of a job of `of` ranks given).
std::string rank_set(const std::vector<int64_t>& ranks, size_t of);

}  // namespace tc::analysis
