// tc/viewer/frame_cache.h: what the timeline draws for one view, built once
// and reused while the view stays put (Tracy's Preprocess, then Draw).
//
//   FrameCache cache;
//   cache.prepare(timeline, {t0, t1, width}, canvas_left);  // every frame, before drawing
//   const FrameCache::Frame& f = cache.frame();
//   f.tracks[lane][track].items ... ;  f.row(lane, track) ...  // RGBA, f.columns wide
//
// A frame holds, for every track, its level-of-detail draw list (lod.h) and
// its row of pixels (row_rects, rasterize_row), and the memory columns. It is
// rebuilt when the timeline (another load), the time window, the width or
// the canvas' left edge change, or after invalidate(); hovering and
// selecting do not rebuild it (they are drawn over it).
//
// Memory: a row of pixels costs 4 bytes a column (6 KB at 1600 pixels), so
// a frame holds at most kMaxRasterRows of them: every row of a timeline of
// up to that many rows, else a window of that many around the rows the
// caller said it draws (show_rows); the others have row_of -1 and no pixels,
// like a hidden lane's. Draw lists are kept for every row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tc/viewer/lod.h"
#include "tc/viewer/model.h"

namespace tc::viewer {

class FrameCache {
 public:
  struct Frame {
    ViewWindow window;
    int origin_px = 0;                          // screen x of the canvas' left edge
    std::vector<std::vector<DrawList>> tracks;  // [lane][track]
    CounterDrawList memory;
    int columns = 0;                            // pixels per row: ceil(window.width_px)
    std::vector<std::vector<int>> row_of;       // [lane][track]: its row in pixels; -1: none (hidden, or out of the window)
    std::vector<uint8_t> pixels;                // rows of columns RGBA pixels, one per track with a row
    // Rows (tracks not hidden, in lane and track order) with pixels at most.
    static constexpr size_t kMaxRasterRows = 2048;
    // Per row: its pixels as at most kMaxFlatRuns runs of one colour (flat
    // rectangles draw them), else flat[row] is 0 and the row is a textured quad.
    static constexpr size_t kMaxFlatRuns = 32;
    std::vector<std::vector<PixelRun>> runs;
    std::vector<uint8_t> flat;
    uint64_t generation = 0;                    // counts the builds; a texture of the rows re-uploads when it moves
    int rows() const { return columns ? static_cast<int>(pixels.size() / (4 * static_cast<size_t>(columns))) : 0; }
    const uint8_t* row(size_t lane, size_t track) const {
      return pixels.data() + 4 * static_cast<size_t>(columns) * static_cast<size_t>(row_of[lane][track]);
    }
  };

  // Builds the frame for this view unless it holds it already; true when it
  // built. hidden_lanes[l] != 0: lane l is not drawn (a collapsed rank): its
  // draw lists stay empty, its rows are -1 and take no pixels.
  bool prepare(const Timeline& tl, const ViewWindow& window, int origin_px, const std::vector<uint8_t>* hidden_lanes = nullptr);
  // The next prepare builds, whatever the view.
  void invalidate() { valid_ = false; }
  // The rows [first, last) (counted as for kMaxRasterRows) are drawn next:
  // a prepare gives them pixels, building if the frame's window lacks one.
  void show_rows(size_t first, size_t last) { show_first_ = first, show_last_ = std::max(first, last); }
  const Frame& frame() const { return frame_; }

 private:
  Frame frame_;
  bool valid_ = false;
  const Timeline* timeline_ = nullptr;
  uint64_t load_id_ = 0;
  std::vector<uint8_t> hidden_;
  size_t show_first_ = 0, show_last_ = 0;
  size_t raster_first_ = 0, raster_last_ = 0;  // the frame's rows with pixels
  std::vector<RowRect> rects_;  // scratch
};

}  // namespace tc::viewer
