// tc/viewer/lod.h: level of detail. Turns a track (or the memory counter) and
// a visible window [t0, t1) drawn over width pixels into a draw list whose
// length is bounded by the width, not by the number of events: events that
// start in the same pixel column merge into one item that carries their count.
//
//   DrawList list;
//   build_draw_list(track, {t0, t1, 1600}, &list);   // before drawing
//   for (const DrawItem& it : list.items) draw(it.x0, it.x1, it.count);
//
// Cost: one search per item on the sorted arrays, started where the previous
// item's count says the next column starts (a step or two where events are
// about evenly spread, O(log events) at worst).
#pragma once

#include <cstdint>
#include <vector>

#include "tc/viewer/model.h"

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

// A track's row as pixels. The timeline fills a track's items as flat
// rectangles (level of detail above: one item per pixel column at most);
// row_rects gives those rectangles in drawing order, in screen pixels
// (origin_x: the canvas' left edge), merging what draws as one:
//   - items of several events (count > 1) that touch, or leave at most one
//     pixel between them, fill one rectangle, in their first event's colour
//     made darker (palette::merged): a dense stretch is one rectangle;
//   - single events of one colour that touch or overlap fill one rectangle.
// Every item lies inside the rectangle that fills it, and a rectangle covers
// nothing but its items and the at most one-pixel gaps between merged ones.
// rasterize_row then gives each pixel column the colour that filling the
// rectangles in order leaves at its centre, so that the row, however many
// items it has, is drawn as one textured quad (or, with pixel_runs, a few
// flat rectangles on whole pixels).
struct RowRect {
  float x0 = 0, x1 = 0;  // screen pixels, x0 < x1
  palette::Rgb colour{};
  uint32_t first_item = 0, items = 0;  // the draw list's items it fills: [first_item, first_item + items)
};
void row_rects(const Timeline& tl, const Track& track, const DrawList& list, float origin_x, std::vector<RowRect>* out);

// Pixel columns [origin_px, origin_px + columns) of a row, as RGBA bytes (4
// per column, alpha 255): a column takes the colour of the last rectangle
// whose [x0, x1) holds the column's centre (x + 0.5), at the 1/256-pixel
// precision a rasterizer snaps vertices to; a column no rectangle covers
// takes `empty`.
void rasterize_row(const std::vector<RowRect>& rects, int origin_px, int columns, palette::Rgb empty, uint8_t* rgba);

// Columns [x0, x1) of a row in one colour.
struct PixelRun {
  int x0 = 0, x1 = 0;
  palette::Rgb colour{};
};
// A row's pixels (rasterize_row's) as runs of one colour, leaving out the
// `empty` ones: a row of few runs is drawn as that many flat rectangles,
// cheaper per pixel than a textured quad. false, with *out empty, when it
// has more than max_runs.
bool pixel_runs(const uint8_t* rgba, int columns, palette::Rgb empty, size_t max_runs, std::vector<PixelRun>* out);

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
