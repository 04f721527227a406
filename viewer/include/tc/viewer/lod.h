// tc/viewer/lod.h: level of detail. Turns a track (or the memory counter) and
// a visible window [t0, t1) drawn over width pixels into a draw list whose
// length is bounded by the width, not by the number of events: events that
// start in the same pixel column merge into one item that carries their count.
//
//   DrawList list;
//   build_draw_list(track, {t0, t1, 1600}, &list);   // before drawing
//   for (const DrawItem& it : list.items) draw(it.x0, it.x1, it.count);
//
// Cost: O(items * log(events)) per track, by binary search on the sorted arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "tc/viewer/timeline.h"

namespace tc::viewer {

struct ViewWindow {
  int64_t t0 = 0, t1 = 1;  // visible time, t1 > t0
  float width_px = 1;      // pixels across that window
  double px_per_ns() const { return width_px / static_cast<double>(t1 - t0); }
  float x_of(int64_t ts) const { return static_cast<float>((ts - t0) * px_per_ns()); }
};

// An item to draw: one event (count == 1) or count events merged.
struct DrawItem {
  float x0 = 0, x1 = 0;   // pixels from the window's left edge, clipped to [-1, width+1]
  uint32_t first = 0;     // index of its first event in the track
  uint32_t count = 0;     // events it stands for: [first, first + count)
};

struct DrawList {
  std::vector<DrawItem> items;
  uint64_t events() const {  // the sum of counts
    uint64_t n = 0;
    for (const DrawItem& it : items) n += it.count;
    return n;
  }
};

// The events of track in the window: those with ts < t1 and end > t0.
// Every such event is counted by exactly one item (when the track's events do
// not overlap, which holds for every track load_timeline builds).
void build_draw_list(const Track& track, const ViewWindow& view, DrawList* out);

// Index range [first, last) of the events of track that may be visible.
void visible_range(const Track& track, int64_t t0, int64_t t1, size_t* first, size_t* last);

// One column of the memory plot: min and max of the samples that fall in it,
// and the value carried in from before (the counter holds its value until the
// next sample).
struct CounterColumn {
  float x0 = 0, x1 = 0;
  double lo = 0, hi = 0;
};
struct CounterDrawList {
  std::vector<CounterColumn> columns;
};
void build_counter_draw_list(const CounterSeries& series, const ViewWindow& view, CounterDrawList* out);

}  // namespace tc::viewer
