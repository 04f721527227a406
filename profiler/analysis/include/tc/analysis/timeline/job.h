// tc/analysis/timeline/job.h: the stores of one data-parallel job (tc::dist
// under mpirun: run.rank0.tcdb, run.rank1.tcdb, ...) on one time axis.
//
//   auto tl = tc::analysis::timeline::load_job_timeline({"run.rank0.tcdb", "run.rank1.tcdb"});
//   if (!tl.ok()) show(tl.status().message());           // one line, never a crash
//   for (const RankGroup& g : tl->ranks)                  // ascending rank
//     for (size_t l = g.first_lane; l < g.first_lane + g.lane_count; ++l) draw(tl->lanes[l]);
//
// Which rank a store (or a process of a store) is comes from
// tc::analysis::store_ranks, as for tc-analyze: its `ranks` rows, else the
// launcher's variables in run_env. Every time of a rank's lanes and records
// is its store's ts plus that rank's ranks.clock_offset_ns, so the job is on
// rank 0's clock and one collective (same seq on every rank) starts where
// each rank arrived; Collective::wait is the last arrival minus this one.
// Lanes are ordered by rank, each rank's in its store's order; a store's
// processes that are no rank come last, as "other processes". Locations are
// shared by name, file, function and line, so one call site keeps one colour
// on every rank. The memory lane is the fullest rank's live bytes at each
// time (the largest of the ranks' counters), under the largest capacity.
//
// Refused with one line, as analyze_job refuses them: a store that cannot be
// read (its own Status: not a store, newer schema, no such file), stores of
// different jobs (job id or world size), a rank given twice, or, among
// several stores, one that names no rank; and a rank whose clock offset is
// beyond ±kClockOffsetLimit (kCorrupt: a damaged store). Ranks of the world that were not
// given are no error: missing_ranks() names them.
#pragma once

#include <string>
#include <vector>

#include "tc/analysis/timeline/timeline.h"

namespace tc::analysis::timeline {

// Loads the stores (in parallel) into one Timeline. One store of at most one
// rank loads as load_timeline does (Timeline::ranks empty).
StatusOr<Timeline> load_job_timeline(const std::vector<std::string>& paths, const LoadOptions& options = {});

// The ranks of [0, world_size) that tl has no lanes for, the first `limit`
// of them (world_size is the stores' number: it costs nothing beyond that);
// missing_rank_count counts them all.
std::vector<int64_t> missing_ranks(const Timeline& tl, size_t limit = 1024);
int64_t missing_rank_count(const Timeline& tl);

// Sets each collective's wait, last_rank and ranks_seen from the others of
// its seq in tl, and rebuilds each lane's kCollectives tracks as two rows:
// "collectives" (depth 0, arg 1): [ts + wait, end), the transfer, which
// starts at the same time on every rank; "waiting" (depth 1, arg 0, only
// when some wait > 0): [ts, ts + wait). load_timeline and load_job_timeline
// call it.
void settle_collectives(Timeline* tl);

// Where a finding's anchors (times on tl's axis) take the view: the anchors;
// on every rank, the step that holds an anchor (the step of that number),
// or, for an anchor outside every step, the step of the collective that
// arrives there; and every rank's time in such a collective (the waits a
// straggler caused). False when there are no anchors (anchors beyond the
// model's times, timeline.h, are none).
bool anchor_extent(const Timeline& tl, const std::vector<int64_t>& anchors_ts, int64_t* t0, int64_t* t1);

}  // namespace tc::analysis::timeline
