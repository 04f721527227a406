#include "tc/viewer/frame_cache.h"

#include <cmath>

namespace tc::viewer {

bool FrameCache::prepare(const Timeline& tl, const ViewWindow& w, int origin_px, const std::vector<uint8_t>* hidden_lanes) {
  Frame& f = frame_;
  static const std::vector<uint8_t> kNone;
  const std::vector<uint8_t>& hidden = hidden_lanes ? *hidden_lanes : kNone;
  auto is_hidden = [&](size_t l) { return l < hidden.size() && hidden[l]; };
  size_t rows = 0;
  for (size_t l = 0; l < tl.lanes.size(); ++l) rows += is_hidden(l) ? 0 : tl.lanes[l].tracks.size();
  // The rows with pixels: all of them, or a window around the shown ones.
  size_t first = 0, last = rows;
  if (rows > Frame::kMaxRasterRows) {
    const size_t mid = (show_first_ + std::min(show_last_, show_first_ + Frame::kMaxRasterRows)) / 2;
    first = std::min(mid > Frame::kMaxRasterRows / 2 ? mid - Frame::kMaxRasterRows / 2 : 0, rows - Frame::kMaxRasterRows);
    last = first + Frame::kMaxRasterRows;
  }
  const bool shown_have_pixels = rows <= Frame::kMaxRasterRows ||
                                 (raster_first_ <= show_first_ && std::min(show_last_, rows) <= raster_last_);
  if (valid_ && timeline_ == &tl && load_id_ == tl.load_id && w.t0 == f.window.t0 && w.t1 == f.window.t1 &&
      w.width_px == f.window.width_px && origin_px == f.origin_px && hidden == hidden_ && shown_have_pixels) {
    return false;
  }
  hidden_ = hidden;
  raster_first_ = first, raster_last_ = last;
  f.window = w;
  f.origin_px = origin_px;
  f.columns = std::max(1, static_cast<int>(std::ceil(w.width_px)));
  f.tracks.resize(tl.lanes.size());
  f.row_of.resize(tl.lanes.size());
  f.pixels.resize((last - first) * 4 * static_cast<size_t>(f.columns));
  if (f.pixels.capacity() > 2 * f.pixels.size()) f.pixels.shrink_to_fit();
  f.runs.resize(last - first);
  f.flat.resize(last - first);
  size_t row = 0;  // counts every row; those in [first, last) have pixels
  for (size_t l = 0; l < tl.lanes.size(); ++l) {
    const Lane& lane = tl.lanes[l];
    f.tracks[l].resize(lane.tracks.size());
    f.row_of[l].resize(lane.tracks.size());
    if (is_hidden(l)) {
      for (size_t k = 0; k < lane.tracks.size(); ++k) f.tracks[l][k].items.clear(), f.row_of[l][k] = -1;
      continue;
    }
    for (size_t k = 0; k < lane.tracks.size(); ++k, ++row) {
      build_draw_list(lane.tracks[k], w, &f.tracks[l][k]);
      if (row < first || row >= last) {
        f.row_of[l][k] = -1;
        continue;
      }
      const size_t slot = row - first;
      row_rects(tl, lane.tracks[k], f.tracks[l][k], static_cast<float>(origin_px), &rects_);
      f.row_of[l][k] = static_cast<int>(slot);
      uint8_t* pixels = f.pixels.data() + 4 * static_cast<size_t>(f.columns) * slot;
      rasterize_row(rects_, origin_px, f.columns, palette::kBackground, pixels);
      f.flat[slot] = pixel_runs(pixels, f.columns, palette::kBackground, Frame::kMaxFlatRuns, &f.runs[slot]);
    }
  }
  build_counter_draw_list(tl.memory, w, &f.memory);
  ++f.generation;
  valid_ = true;
  timeline_ = &tl;
  load_id_ = tl.load_id;
  return true;
}

}  // namespace tc::viewer
