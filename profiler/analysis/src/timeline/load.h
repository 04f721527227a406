// How load_timeline reads a store: the parts each track kind's file fills
// (src/timeline/<kind>.cpp). Private to the model.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kinds.h"
#include "tc/analysis/timeline/timeline.h"

namespace tc::analysis::timeline::detail {

constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();  // end of a range that never ended

// Events of one track as the loader collects them, before sorting.
struct Pending {
  std::vector<int64_t> ts, end, arg;
  std::vector<uint32_t> ref;
  std::vector<uint8_t> cut;  // NVTX tracks only
  void add(int64_t t, int64_t e, uint32_t r, int64_t a, bool with_arg) {
    ts.push_back(t);
    end.push_back(e);
    ref.push_back(r);
    if (with_arg) arg.push_back(a);
  }
  void add_nvtx(int64_t t, int64_t e, uint32_t r, int64_t a, bool is_cut) {
    add(t, e, r, a, true);
    cut.push_back(is_cut);
  }
  void append(Pending&& o);
  // Event i of o, appended.
  void take(const Pending& o, size_t i);
};

// A store's time the model takes (timeline.h: kTimeLimit).
inline bool in_time_range(int64_t ts) { return ts >= -kTimeLimit && ts < kTimeLimit; }

// A duration from an in-range ts, cut so that the event ends by kTimeLimit.
inline int64_t bounded_dur(int64_t ts, int64_t dur) { return std::min(dur, kTimeLimit - ts); }

// end of a [ts, ts+dur) event (ts in range): at least one ns, so point events
// are visible, and at most kTimeLimit.
inline int64_t end_of(int64_t ts, int64_t dur) { return dur < 0 ? kOpen : ts + bounded_dur(ts, std::max<int64_t>(dur, 1)); }

// The track of p's events sorted by ts; an open end becomes run_end.
Track finish_track(Pending&& p, TrackKind kind, int depth, std::string name, int64_t run_end);

// Ranges of rows [lo, hi) by id: tc's bucketed per (utid, depth), NVTX's per
// (utid, domain).
struct RangeChunk {
  std::map<std::pair<int64_t, int64_t>, Pending> tracks;
  std::map<std::pair<int64_t, int>, Pending> nvtx;
  Status status;
  int64_t min_ts = kOpen, max_end = std::numeric_limits<int64_t>::min();
  int64_t skipped = 0;  // rows out of time range
};

// One load in progress: the Timeline's records, filled by the readers below,
// and each thread's events, which become its tracks at the end.
struct Load {
  Load(const store::Reader& r, Timeline& t) : reader(r), tl(t) {}
  const store::Reader& reader;
  Timeline& tl;
  std::map<int64_t, size_t> lane_of;  // utid -> index in tl.lanes
  // Per lane, per kind of one row (KindTraits::row): pending events (ranges
  // are keyed by depth in chunks, NVTX by domain below).
  std::map<int64_t, std::array<Pending, kKinds>> pending;
  // Per (utid, NVTX domain): marks and start/end ranges (push/pop ranges come with the ranges).
  struct NvtxPending {
    Pending marks, start_ends;
  };
  std::map<std::pair<int64_t, int>, NvtxPending> nvtx_pending;
  std::vector<int32_t> domain_of;  // by loc_id: the NVTX domain of the site, -1 for tc's own
  std::vector<RangeChunk> chunks;  // the ranges table, read in parallel
  int64_t min_ts = kOpen, max_end = std::numeric_limits<int64_t>::min();

  void see(int64_t ts, int64_t end) {
    min_ts = std::min(min_ts, ts);
    if (end != kOpen) max_end = std::max(max_end, end);
  }
  // The event at ts is one to keep; else it is counted as skipped.
  bool keep(int64_t ts) {
    if (in_time_range(ts)) return true;
    ++tl.skipped.events;
    return false;
  }
  // A record of [ts, ts + dur) on thread utid: one more event of its track
  // (skipped out of time range).
  template <typename T>
  void add(TrackKind kind, int64_t utid, std::vector<T>& records, T record, int64_t arg = 0, bool with_arg = false) {
    if (!keep(record.ts)) return;
    record.dur = bounded_dur(record.ts, record.dur);
    const int64_t end = end_of(record.ts, record.dur);
    see(record.ts, end);
    pending[utid][static_cast<size_t>(kind)].add(record.ts, end, static_cast<uint32_t>(records.size()), arg, with_arg);
    records.push_back(std::move(record));
  }
  // A cut NVTX range lasts to its process's end: the timeline reaches that far.
  void see_cut_end(int64_t utid);
  // The lane of utid, made for a thread the threads table does not know.
  Lane& lane_for(int64_t utid);
};

// The KindTraits::read of a kind whose rows (`Each`: rows::each_compilation, ...) name their thread: each row
// one event of that thread's track of `Kind`, its record in Timeline::*Records.
template <auto Each, auto Records, TrackKind Kind>
Status read_rows(Load& ld) {
  return Each(ld.reader, &ld.tl.skipped.events, [&](auto& x) { ld.add(Kind, x.utid, ld.tl.*Records, std::move(x)); });
}

// The readers that are no kind's KindTraits::read, in load order around those.
Status read_nvtx(Load& ld);  // sites, real payloads, start/end ranges: before the events that name them
Status read_memory(Load& ld);
Status read_ranges(Load& ld, const LoadOptions& options);  // tc's ranges and NVTX push/pop ranges

// After the reads: each lane's NVTX tracks, by domain (marks, push/pop
// ranges by depth, start/end ranges in rows), after tc's own.
void add_nvtx_tracks(Load& ld, std::map<std::pair<int64_t, int>, Pending>& nvtx_ranges);

}  // namespace tc::analysis::timeline::detail
