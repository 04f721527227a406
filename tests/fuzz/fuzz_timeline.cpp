// libFuzzer target: tc-viewer's model over a mutated store. The bytes are a
// store file; it is loaded as tc-viewer loads it (load_job_timeline: the
// quick load without ranges, then the full one), then what the viewer does
// per frame, without ImGui: the frame cache (draw lists, row pixels, memory
// columns) at a few views, each drawn item's colour, label and hover card,
// the statistics, the memory scale, the missing ranks, a finding's extent.
// A load gives a Status or a Timeline, never a crash, a hang, a sanitizer
// report or an allocation sized by the store's numbers (libFuzzer's
// -rss_limit_mb); a Timeline keeps the model's contract on times (checked
// here: a violation is a crash). Seeds: real stores (scripts/fuzz.sh).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "input_file.h"
#include "tc/analysis/timeline/job.h"
#include "tc/analysis/timeline/timeline.h"
#include "tc/viewer/frame_cache.h"
#include "tc/viewer/lod.h"

namespace {

using namespace tc::analysis::timeline;  // NOLINT(google-build-using-namespace)

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_timeline: %s\n", what);
  __builtin_trap();
}

// timeline.h: every time within ±(kTimeLimit + kClockOffsetLimit), end > ts.
void check_times(const Timeline& tl) {
  const int64_t limit = kTimeLimit + kClockOffsetLimit;
  check(tl.start_ts < tl.end_ts && tl.start_ts >= -limit && tl.end_ts <= limit, "the run's extent is out of bounds");
  for (const Lane& lane : tl.lanes) {
    for (const Track& t : lane.tracks) {
      check(t.ts.size() == t.end.size() && t.ref.size() == t.ts.size(), "a track's arrays differ in length");
      check(std::is_sorted(t.ts.begin(), t.ts.end()), "a track is not sorted by ts");
      for (size_t i = 0; i < t.size(); ++i) {
        check(t.ts[i] >= -limit && t.end[i] <= limit && t.end[i] > t.ts[i], "an event's time is out of bounds");
      }
    }
  }
}

// One frame of the view [t0, t1) at 1000 pixels, and what hovering each item shows.
void frame(const Timeline& tl, int64_t t0, int64_t t1) {
  using namespace tc::viewer;  // NOLINT(google-build-using-namespace)
  FrameCache cache;
  const ViewWindow w{t0, std::max(t1, t0 + 10), 1000};
  cache.prepare(tl, w, 190);
  const FrameCache::Frame& f = cache.frame();
  check(f.rows() <= static_cast<int>(FrameCache::Frame::kMaxRasterRows), "a frame holds more rows than its bound");
  size_t cards = 0;
  for (size_t l = 0; l < f.tracks.size(); ++l) {
    for (size_t k = 0; k < f.tracks[l].size(); ++k) {
      const Track& t = tl.lanes[l].tracks[k];
      check(f.tracks[l][k].items.size() <= 1003, "a draw list longer than its columns");
      for (const DrawItem& it : f.tracks[l][k].items) {
        (void)event_colour(tl, t, it.first);
        if (cards++ < 64) {  // a card is cheap, but not 10^5 of them per input
          (void)event_label(tl, t, it.first);
          (void)event_card(tl, tl.lanes[l], t, it.first);
        }
      }
    }
  }
  cache.show_rows(f.rows() > 0 ? static_cast<size_t>(f.rows()) * 2 : 0, static_cast<size_t>(f.rows()) * 2 + 40);
  cache.prepare(tl, w, 190);
}

void views(const Timeline& tl) {
  check_times(tl);
  const int64_t span = tl.end_ts - tl.start_ts, pad = std::max<int64_t>(span / 100, 1);
  frame(tl, tl.start_ts - pad, tl.end_ts + pad);             // fit_all
  frame(tl, tl.start_ts + span / 3, tl.start_ts + span / 2);  // zoomed in
  frame(tl, tl.start_ts, tl.start_ts + 10);                   // as far as one can zoom
  for (StatsBy by : {StatsBy::kKernel, StatsBy::kSite, StatsBy::kRange}) (void)event_statistics(tl, by);
  (void)memory_scale(tl);
  (void)missing_ranks(tl);
  (void)missing_rank_count(tl);
  int64_t a = 0, b = 0;
  std::vector<int64_t> anchors{tl.start_ts, tl.start_ts + span / 2};
  for (const Collective& c : tl.collectives) {
    if (anchors.size() < 8) anchors.push_back(c.ts);
  }
  (void)anchor_extent(tl, anchors, &a, &b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tc::fuzz::write_input("input.tcdb", data, size);
  LoadOptions quick;
  quick.ranges = false;
  quick.threads = 1;
  if (auto tl = load_job_timeline({path}, quick); tl.ok()) views(*tl);
  LoadOptions full;
  full.threads = 2;  // the parallel ranges reader, each thread its own Reader
  if (auto tl = load_job_timeline({path}, full); tl.ok()) views(*tl);
  std::remove(path.c_str());
  return 0;
}
