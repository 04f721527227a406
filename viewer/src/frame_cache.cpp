#include "tc/viewer/frame_cache.h"

#include <cmath>

namespace tc::viewer {

bool FrameCache::prepare(const Timeline& tl, const ViewWindow& w, int origin_px, const std::vector<uint8_t>* hidden_lanes) {
  Frame& f = frame_;
  static const std::vector<uint8_t> kNone;
  const std::vector<uint8_t>& hidden = hidden_lanes ? *hidden_lanes : kNone;
  auto is_hidden = [&](size_t l) { return l < hidden.size() && hidden[l]; };
  if (valid_ && timeline_ == &tl && load_id_ == tl.load_id && w.t0 == f.window.t0 && w.t1 == f.window.t1 &&
      w.width_px == f.window.width_px && origin_px == f.origin_px && hidden == hidden_) {
    return false;
  }
  hidden_ = hidden;
  f.window = w;
  f.origin_px = origin_px;
  f.columns = std::max(1, static_cast<int>(std::ceil(w.width_px)));
  f.tracks.resize(tl.lanes.size());
  f.row_of.resize(tl.lanes.size());
  size_t rows = 0;
  for (size_t l = 0; l < tl.lanes.size(); ++l) rows += is_hidden(l) ? 0 : tl.lanes[l].tracks.size();
  f.pixels.resize(rows * 4 * static_cast<size_t>(f.columns));
  f.runs.resize(rows);
  f.flat.resize(rows);
  int row = 0;
  for (size_t l = 0; l < tl.lanes.size(); ++l) {
    const Lane& lane = tl.lanes[l];
    f.tracks[l].resize(lane.tracks.size());
    f.row_of[l].resize(lane.tracks.size());
    if (is_hidden(l)) {
      for (size_t k = 0; k < lane.tracks.size(); ++k) f.tracks[l][k].items.clear(), f.row_of[l][k] = -1;
      continue;
    }
    for (size_t k = 0; k < lane.tracks.size(); ++k) {
      build_draw_list(lane.tracks[k], w, &f.tracks[l][k]);
      row_rects(tl, lane.tracks[k], f.tracks[l][k], static_cast<float>(origin_px), &rects_);
      f.row_of[l][k] = row;
      uint8_t* pixels = f.pixels.data() + 4 * static_cast<size_t>(f.columns) * static_cast<size_t>(row);
      rasterize_row(rects_, origin_px, f.columns, palette::kBackground, pixels);
      f.flat[static_cast<size_t>(row)] =
          pixel_runs(pixels, f.columns, palette::kBackground, Frame::kMaxFlatRuns, &f.runs[static_cast<size_t>(row)]);
      ++row;
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
