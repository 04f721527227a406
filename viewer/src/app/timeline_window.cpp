// The timeline: ruler, memory lane, then one lane per thread with its tracks.
// Draws only from Document::prepared() draw lists; no queries here.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "app.h"
#include "tc/viewer/model.h"

namespace tc::viewer::app {
namespace {

constexpr float kLabelWidth = 190;
constexpr float kRulerHeight = 22;
constexpr float kMemoryHeight = 72;
constexpr float kLaneHeader = 18;
constexpr float kTrackHeight = 16;
constexpr float kGroupHeader = 15;  // the label row of an NVTX domain's tracks
constexpr float kRankHeader = 20;   // the header row of a job's rank: click its label to collapse or expand it

std::string signed_duration(int64_t ns) { return (ns < 0 ? "-" : "+") + format_duration(ns < 0 ? -ns : ns); }

ImU32 col(palette::Rgb c, float scale = 1.0f) {
  return IM_COL32(static_cast<int>(c.r * scale), static_cast<int>(c.g * scale), static_cast<int>(c.b * scale), 255);
}

// Tick spacing of 1, 2 or 5 times a power of ten, about every 110 pixels.
int64_t tick_step(double ns_per_px) {
  double want = ns_per_px * 110;
  double p = std::pow(10.0, std::floor(std::log10(std::max(want, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (p * m >= want) return std::max<int64_t>(1, static_cast<int64_t>(p * m));
  }
  return static_cast<int64_t>(p * 10);
}

struct Interaction {
  bool panning = false, selecting = false;
  float press_x = 0, select_x0 = 0;
  float moved = 0;
};
Interaction g_ui;  // one timeline per process

void draw_ruler(ImDrawList* dl, const Timeline& tl, const ViewWindow& w, ImVec2 origin) {
  dl->AddRectFilled(origin, ImVec2(origin.x + w.width_px, origin.y + kRulerHeight), col(palette::kLaneHeader));
  int64_t step = tick_step(1.0 / w.px_per_ns());
  int64_t first = tl.origin_ts + ((w.t0 - tl.origin_ts) / step) * step;
  if (first < w.t0) first += step;
  for (int64_t t = first; t < w.t1; t += step) {
    float x = origin.x + w.x_of(t);
    dl->AddLine(ImVec2(x, origin.y + kRulerHeight - 6), ImVec2(x, origin.y + kRulerHeight), IM_COL32(200, 200, 200, 255));
    std::string label = t < tl.origin_ts ? "-" + format_duration(tl.origin_ts - t) : format_duration(t - tl.origin_ts);
    dl->AddText(ImVec2(x + 3, origin.y + 3), IM_COL32(210, 210, 210, 255), label.c_str());
  }
}

void draw_memory(ImDrawList* dl, const Document& doc, ImVec2 origin, float width, int64_t hover_ts, bool hovered) {
  const Timeline& tl = *doc.timeline();
  const Prepared& p = doc.prepared();
  float bottom = origin.y + kMemoryHeight - 2;
  float top = origin.y + 12;
  begin_opaque(dl);
  dl->AddRectFilled(origin, ImVec2(origin.x + width, origin.y + kMemoryHeight), IM_COL32(30, 33, 40, 255));
  MemoryScale scale = memory_scale(tl);
  auto y_of = [&](double v) {
    double f = (v - scale.lo) / (scale.hi - scale.lo);
    return bottom - static_cast<float>(std::clamp(f, 0.0, 1.0)) * (bottom - top);
  };
  for (const CounterColumn& c : p.memory.columns) {
    dl->AddRectFilled(ImVec2(origin.x + c.x0, y_of(c.hi)), ImVec2(origin.x + c.x1, bottom), col(palette::kMemory));
  }
  end_opaque(dl);
  if (tl.capacity_bytes > 0 && scale.capacity_in_range) {
    float y = y_of(tl.capacity_bytes);
    dl->AddLine(ImVec2(origin.x, y), ImVec2(origin.x + width, y), col(palette::kCapacity), 2.0f);
    std::string label = "capacity " + format_bytes(tl.capacity_bytes);
    dl->AddText(ImVec2(origin.x + 4, y - 14), col(palette::kCapacity), label.c_str());
  } else if (tl.capacity_bytes > 0) {
    // Far above the curve: drawn to scale it would flatten the run to a line.
    std::string label = "capacity " + format_bytes(tl.capacity_bytes) + " (off scale)";
    float tw = ImGui::CalcTextSize(label.c_str()).x;
    dl->AddText(ImVec2(origin.x + width - tw - 6, origin.y + 2), col(palette::kCapacity), label.c_str());
  }
  {
    std::string axis = format_bytes(scale.lo) + " .. " + format_bytes(scale.hi);
    dl->AddText(ImVec2(origin.x + 4, bottom - 14), col(palette::kMemory, 0.8f), axis.c_str());
  }
  for (const OutOfMemory& o : tl.out_of_memory) {
    if (o.ts < p.window.t0 || o.ts >= p.window.t1) continue;
    float x = origin.x + p.window.x_of(o.ts);
    dl->AddRectFilled(ImVec2(x - 1, top - 10), ImVec2(x + 2, bottom), col(palette::kOutOfMemory));
    dl->AddTriangleFilled(ImVec2(x - 6, top - 12), ImVec2(x + 7, top - 12), ImVec2(x + 0.5f, top - 4),
                          col(palette::kOutOfMemory));
    dl->AddText(ImVec2(x + 6, top - 2), col(palette::kOutOfMemory), "out of memory");
  }
  if (hovered) draw_memory_tooltip(doc, hover_ts);
}

// The lanes' child window of one frame: each rank's header, each lane's
// header and tracks (markers, hatching, labels, the selection), then every
// row's fills and the selected finding's anchors. What the mouse is on comes
// out in hovered.
class LanesPass {
 public:
  LanesPass(Document& doc, RowTexture& texture, std::optional<std::pair<float, float>>& selected_pos, ImVec2 top_left, float x0,
            ImVec2 mouse, bool over_canvas)
      : doc_(doc), texture_(texture), selected_pos_(selected_pos), tl_(*doc_.timeline()), p_(doc_.prepared()), w_(p_.window),
        top_left_(top_left), x0_(x0), mouse_(mouse), over_canvas_(over_canvas) {}
  void draw();
  EventRef hovered;
  uint32_t hovered_count = 0;

 private:
  void rank_header(int group);
  void lane(size_t l);
  void domain_row(const Track& t);
  void track(size_t l, size_t k, float ty);
  void items(size_t l, size_t k, float ty, bool mouse_here);
  void selection(size_t l, size_t k, float ty);
  void fills();
  void anchors();
  void channel(int c) { split_.SetCurrentChannel(ldl_, c); }

  Document& doc_;
  RowTexture& texture_;
  std::optional<std::pair<float, float>>& selected_pos_;  // where the selected event is drawn
  const Timeline& tl_;
  const Prepared& p_;
  const ViewWindow& w_;
  const ImVec2 top_left_;
  const float x0_;
  const ImVec2 mouse_;
  const bool over_canvas_;
  ImDrawList* ldl_ = nullptr;
  ImDrawListSplitter split_;
  float y_ = 0, clip_top_ = 0, clip_bottom_ = 0;
  bool lanes_hovered_ = false;
  int toggle_ = -1;                           // the rank whose header was clicked
  std::vector<std::pair<float, int>> rows_;  // visible tracks: top, and row in the frame's pixels
  size_t row_ = 0;                            // the next track's row, counted as FrameCache::show_rows counts
  size_t shown_first_ = SIZE_MAX, shown_last_ = 0;  // the visible ones
};

void LanesPass::draw() {
  ImGui::BeginChild("lanes", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse);
  ldl_ = ImGui::GetWindowDrawList();
  // Channel 0: opaque fills, drawn without blending; channel 1: text, markers, outlines.
  split_.Split(ldl_, 2);
  channel(0);
  begin_opaque(ldl_);
  y_ = ImGui::GetCursorScreenPos().y;
  const float y_start = y_;
  clip_top_ = ImGui::GetWindowPos().y, clip_bottom_ = clip_top_ + ImGui::GetWindowSize().y;
  int group = -1;
  lanes_hovered_ = ImGui::IsWindowHovered();
  for (size_t l = 0; l < tl_.lanes.size(); ++l) {
    const Lane& lane = tl_.lanes[l];
    if (lane.group >= 0 && lane.group != group) {
      group = lane.group;
      rank_header(group);
    }
    if (doc_.collapsed(lane.group)) continue;
    this->lane(l);
  }
  fills();
  end_opaque(ldl_);
  channel(1);
  anchors();
  split_.Merge(ldl_);
  ImGui::Dummy(ImVec2(kLabelWidth + w_.width_px, y_ - y_start));
  ImGui::EndChild();
  doc_.show_rows(std::min(shown_first_, shown_last_), shown_last_);  // the next frame's rows with pixels
  if (toggle_ >= 0) doc_.set_collapsed(toggle_, !doc_.collapsed(toggle_));  // after drawing: the next frame's rows follow
}

// A job's rank: its header row, then (unless collapsed) its lanes.
void LanesPass::rank_header(int group) {
  const RankGroup& g = tl_.ranks[static_cast<size_t>(group)];
  const bool closed = doc_.collapsed(group);
  const float gy = y_;
  y_ += kRankHeader;
  if (gy > clip_bottom_ || y_ < clip_top_) return;
  ldl_->AddRectFilled(ImVec2(top_left_.x, gy), ImVec2(x0_ + w_.width_px, y_), col(palette::kRankGroup));
  channel(1);
  const float cx = top_left_.x + 9, cy = gy + kRankHeader / 2;
  if (closed) ldl_->AddTriangleFilled(ImVec2(cx - 3, cy - 5), ImVec2(cx + 4, cy), ImVec2(cx - 3, cy + 5), col(palette::kRankGroupLabel));
  else ldl_->AddTriangleFilled(ImVec2(cx - 5, cy - 3), ImVec2(cx + 5, cy - 3), ImVec2(cx, cy + 4), col(palette::kRankGroupLabel));
  ldl_->AddText(ImVec2(top_left_.x + 18, gy + 3), col(palette::kRankGroupLabel), g.label().c_str());
  std::string about = (g.host.empty() ? std::string("host ?") : g.host) + " / pid " + std::to_string(g.pid) + "   clock " +
                      signed_duration(g.clock_offset_ns) + " to rank 0 (+-" + format_duration(g.clock_error_ns) + ")   " + g.store;
  if (closed) about += "   (" + std::to_string(g.lane_count) + (g.lane_count == 1 ? " lane" : " lanes") + " collapsed)";
  ldl_->AddText(ImVec2(x0_ + 4, gy + 3), IM_COL32(200, 205, 215, 255), about.c_str());
  channel(0);
  if (lanes_hovered_ && ImGui::IsMouseClicked(0) && mouse_.x >= top_left_.x && mouse_.x < x0_ && mouse_.y >= gy && mouse_.y < y_) toggle_ = group;
}

void LanesPass::lane(size_t l) {
  const Lane& lane = tl_.lanes[l];
  const float indent = lane.group >= 0 ? 10 : 0;
  ldl_->AddRectFilled(ImVec2(top_left_.x, y_), ImVec2(x0_ + w_.width_px, y_ + kLaneHeader), col(palette::kLaneHeader));
  channel(1);
  ldl_->AddText(ImVec2(top_left_.x + 4 + indent, y_ + 2), IM_COL32(235, 235, 235, 255), lane.name.c_str());
  channel(0);
  y_ += kLaneHeader;
  for (size_t k = 0; k < lane.tracks.size(); ++k, ++row_) {
    const Track& t = lane.tracks[k];
    if (t.domain >= 0 && (k == 0 || lane.tracks[k - 1].domain != t.domain)) domain_row(t);
    const float ty = y_;
    y_ += kTrackHeight;
    if (ty > clip_bottom_ || y_ < clip_top_) continue;
    shown_first_ = std::min(shown_first_, row_), shown_last_ = row_ + 1;
    channel(1);
    ldl_->AddText(ImVec2(top_left_.x + 12 + indent, ty + 1), IM_COL32(170, 170, 170, 255), t.name.c_str());
    ldl_->PushClipRect(ImVec2(x0_, ty), ImVec2(x0_ + w_.width_px, ty + kTrackHeight), true);
    channel(0);
    track(l, k, ty);
    channel(1);
    ldl_->PopClipRect();
    channel(0);
  }
  y_ += 4;
}

// An NVTX domain's tracks start with its label row.
void LanesPass::domain_row(const Track& t) {
  const float gy = y_;
  y_ += kGroupHeader;
  if (gy > clip_bottom_ || y_ < clip_top_) return;
  ldl_->AddRectFilled(ImVec2(top_left_.x, gy), ImVec2(x0_ + w_.width_px, y_), col(palette::kNvtxGroup));
  channel(1);
  const std::string label = tl_.nvtx_domains[static_cast<size_t>(t.domain)].label();
  ldl_->AddText(ImVec2(top_left_.x + 8, gy + 1), col(palette::kNvtxGroupLabel), label.c_str());
  channel(0);
}

// The row's fills are one textured quad (drawn after the lanes, in fills());
// here: markers, hatching and labels over it, and what the mouse is on.
void LanesPass::track(size_t l, size_t k, float ty) {
  const bool mouse_here = over_canvas_ && mouse_.y >= ty && mouse_.y < ty + kTrackHeight;
  if (p_.row_of[l][k] >= 0) rows_.push_back({ty, p_.row_of[l][k]});  // else no pixels this frame (the frame's window is elsewhere)
  items(l, k, ty, mouse_here);
  selection(l, k, ty);
}

void LanesPass::items(size_t l, size_t k, float ty, bool mouse_here) {
  const Track& t = tl_.lanes[l].tracks[k];
  const bool diamond = track_marker(t.kind) == Marker::kDiamond;
  const bool marker = track_marker(t.kind) != Marker::kNone;
  for (const DrawItem& it : p_.tracks[l][k].items) {
    float a = x0_ + it.x0, b = x0_ + it.x1;
    const bool cut = it.count == 1 && t.is_cut(it.first);
    if (marker || cut || (b - a > 40 && it.count == 1)) {
      const palette::Rgb c = event_colour(tl_, t, it.first);
      channel(1);
      if (diamond) {  // an NVTX mark: a diamond across the track
        const float cx = a + 0.5f, cy = ty + kTrackHeight / 2;
        ldl_->AddQuadFilled(ImVec2(cx, ty + 1), ImVec2(cx + 5, cy), ImVec2(cx, ty + kTrackHeight - 1), ImVec2(cx - 5, cy), col(c));
      } else if (marker) {  // a triangle so that a short event still shows
        ldl_->AddTriangleFilled(ImVec2(a - 4, ty + 1), ImVec2(a + 5, ty + 1), ImVec2(a + 0.5f, ty + 8), col(c));
      }
      if (cut) {
        // Hatched: the range was still open when its thread or process ended.
        const float ha = std::max(a, x0_), hb = std::min(b, x0_ + w_.width_px);
        ldl_->PushClipRect(ImVec2(ha, ty + 1), ImVec2(hb, ty + kTrackHeight - 1), true);
        for (float hx = ha - kTrackHeight; hx < hb; hx += 7) {
          ldl_->AddLine(ImVec2(hx, ty + kTrackHeight - 1), ImVec2(hx + kTrackHeight - 2, ty + 1), col(palette::kCutHatch), 1.5f);
        }
        ldl_->PopClipRect();
      }
      if (b - a > 40 && it.count == 1) {
        std::string label = event_label(tl_, t, it.first);
        ldl_->PushClipRect(ImVec2(a, ty), ImVec2(b, ty + kTrackHeight), true);
        ldl_->AddText(ImVec2(std::max(a, x0_) + 3, ty + 1), IM_COL32(15, 15, 15, 255), label.c_str());
        ldl_->PopClipRect();
      }
      channel(0);
    }
    if (mouse_here && mouse_.x >= a - (marker ? 4 : 1) && mouse_.x <= b + (marker ? 4 : 1)) {
      hovered = {static_cast<int>(l), static_cast<int>(k), it.first};
      hovered_count = it.count;
    }
  }
}

void LanesPass::selection(size_t l, size_t k, float ty) {
  const Track& t = tl_.lanes[l].tracks[k];
  const EventRef sel = doc_.selected;
  if (sel.lane != static_cast<int>(l) || sel.track != static_cast<int>(k) || sel.event >= t.size()) return;
  float a = x0_ + w_.x_of(std::max(t.ts[sel.event], w_.t0 - 1));
  float b = x0_ + w_.x_of(std::min(t.end[sel.event], w_.t1 + 1));
  if (b < x0_ || a > x0_ + w_.width_px) return;
  b = std::max(b, a + 2);
  channel(1);
  ldl_->AddRect(ImVec2(a - 1, ty), ImVec2(b + 1, ty + kTrackHeight), col(palette::kSelection), 0, 0, 2.0f);
  selected_pos_ = std::pair{std::clamp((a + b) / 2, x0_ + 1, x0_ + w_.width_px - 1), ty + kTrackHeight / 2};
  channel(0);
}

// Every visible row's fills, from the frame's pixels (FrameCache): a row
// of a few runs of one colour as flat rectangles on whole pixels, any
// other as one quad of the rows' texture, all of those in one draw call.
void LanesPass::fills() {
  if (rows_.empty()) return;
  const float ox = std::floor(x0_), ox1 = ox + static_cast<float>(p_.columns);
  ldl_->PushClipRect(ImVec2(x0_, clip_top_), ImVec2(x0_ + w_.width_px, clip_bottom_), true);
  size_t textured = 0;
  for (const auto& [ty, row] : rows_) {
    if (!p_.flat[static_cast<size_t>(row)]) {
      ++textured;
      continue;
    }
    for (const PixelRun& r : p_.runs[static_cast<size_t>(row)]) {
      ldl_->AddRectFilled(ImVec2(ox + static_cast<float>(r.x0), ty + 1), ImVec2(ox + static_cast<float>(r.x1), ty + kTrackHeight - 1),
                          col(r.colour));
    }
  }
  if (textured > 0) {
    void* texture = texture_.update(p_);
    const float u1 = texture_.u_end(p_);
    opaque_textured(ldl_);
    ldl_->PushTextureID(texture);
    ldl_->PrimReserve(6 * static_cast<int>(textured), 4 * static_cast<int>(textured));
    for (const auto& [ty, row] : rows_) {
      if (p_.flat[static_cast<size_t>(row)]) continue;
      const float v = texture_.v_of(row);
      ldl_->PrimRectUV(ImVec2(ox, ty + 1), ImVec2(ox1, ty + kTrackHeight - 1), ImVec2(0, v), ImVec2(u1, v), IM_COL32_WHITE);
    }
    ldl_->PopTextureID();
  }
  ldl_->PopClipRect();
}

// The selected finding's anchors.
void LanesPass::anchors() {
  const auto& findings = doc_.findings();
  if (doc_.selected_finding < 0 || doc_.selected_finding >= static_cast<int>(findings.size())) return;
  for (int64_t ts : findings[doc_.selected_finding].anchors_ts) {
    if (ts < w_.t0 || ts >= w_.t1) continue;
    float x = x0_ + w_.x_of(ts);
    ldl_->AddLine(ImVec2(x, clip_top_), ImVec2(x, clip_bottom_), IM_COL32(255, 160, 0, 255), 2.0f);
  }
}

// Mouse: wheel zooms around the cursor, left drag pans, right drag selects
// a time range and zooms to it, a click selects the event under the cursor.
void handle_mouse(Document& doc, const ViewWindow& w, ImVec2 top_left, float x0, float bottom, bool over_canvas, EventRef hovered) {
  const ImGuiIO& io = ImGui::GetIO();
  const ImVec2 mouse = io.MousePos;
  if (over_canvas && io.MouseWheel != 0) {
    doc.zoom(std::pow(0.8, io.MouseWheel), std::clamp((mouse.x - x0) / w.width_px, 0.0f, 1.0f));
  }
  if (over_canvas && ImGui::IsMouseClicked(0)) g_ui = {true, false, mouse.x, 0, 0};
  if (over_canvas && ImGui::IsMouseClicked(1)) g_ui = {false, true, mouse.x, mouse.x, 0};
  if (g_ui.panning) {
    g_ui.moved += std::fabs(io.MouseDelta.x) + std::fabs(io.MouseDelta.y);
    if (io.MouseDelta.x != 0) doc.pan(-io.MouseDelta.x / w.width_px);
    if (!ImGui::IsMouseDown(0)) {
      g_ui.panning = false;
      if (g_ui.moved < 3) doc.select(hovered, false);  // a click, not a drag
    }
  }
  if (g_ui.selecting) {
    float a = std::min(g_ui.select_x0, mouse.x), b = std::max(g_ui.select_x0, mouse.x);
    // Over the lanes (their rows are opaque), within the timeline.
    ImDrawList* fg = ImGui::GetForegroundDrawList();
    fg->PushClipRect(ImVec2(x0, top_left.y), ImVec2(x0 + w.width_px, bottom), true);
    fg->AddRectFilled(ImVec2(a, top_left.y), ImVec2(b, bottom), IM_COL32(255, 255, 255, 40));
    fg->PopClipRect();
    if (!ImGui::IsMouseDown(1)) {
      g_ui.selecting = false;
      if (b - a > 3) {
        doc.set_view(w.t0 + static_cast<int64_t>((a - x0) / w.px_per_ns()),
                     w.t0 + static_cast<int64_t>((b - x0) / w.px_per_ns()));
      }
    }
  }
}

// Keyboard: arrows or A/D pan, W/S or up/down zoom, F fits the run, Z zooms
// to the selected event.
void handle_keys(Document& doc) {
  if (ImGui::GetIO().WantTextInput) return;
  auto key = [](ImGuiKey k) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(k)); };
  if (key(ImGuiKey_LeftArrow) || ImGui::IsKeyPressed('A')) doc.pan(-0.1);
  if (key(ImGuiKey_RightArrow) || ImGui::IsKeyPressed('D')) doc.pan(0.1);
  if (key(ImGuiKey_UpArrow) || ImGui::IsKeyPressed('W')) doc.zoom(0.8, 0.5);
  if (key(ImGuiKey_DownArrow) || ImGui::IsKeyPressed('S')) doc.zoom(1.25, 0.5);
  if (key(ImGuiKey_Home) || ImGui::IsKeyPressed('F')) doc.fit_all();
  if (ImGui::IsKeyPressed('Z') && doc.selected.valid()) doc.select(doc.selected, true);
}

}  // namespace

void draw_timeline_window(App& app, float height) {
  Document& doc = app.doc();
  app.selected_pos_.reset();
  const Timeline* tl = doc.timeline();
  if (!tl) return;
  const Prepared& p = doc.prepared();
  const ViewWindow& w = p.window;
  ImGuiIO& io = ImGui::GetIO();

  ImGui::BeginChild("timeline", ImVec2(0, height), false, ImGuiWindowFlags_NoScrollWithMouse);
  const float canvas_w = std::max(50.0f, ImGui::GetContentRegionAvail().x - kLabelWidth - 14);
  doc.view.width_px = canvas_w;  // the next frame's draw lists match the canvas
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImVec2 top_left = ImGui::GetCursorScreenPos();
  const float x0 = top_left.x + kLabelWidth;
  doc.view.origin_px = static_cast<int>(std::floor(x0));  // where the next frame's row pixels start
  const float bottom = top_left.y + height;
  const ImVec2 mouse = io.MousePos;
  const bool over_canvas = ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows) && mouse.x >= x0 &&
                           mouse.x < x0 + w.width_px && mouse.y >= top_left.y && mouse.y < bottom;
  const int64_t mouse_ts = w.t0 + static_cast<int64_t>((mouse.x - x0) / w.px_per_ns());

  // Ruler and memory lane stay put; lanes scroll below them.
  dl->AddText(ImVec2(top_left.x + 4, top_left.y + 4), IM_COL32(200, 200, 200, 255), "time since start");
  draw_ruler(dl, *tl, w, ImVec2(x0, top_left.y));
  const float mem_y = top_left.y + kRulerHeight + 2;
  const bool memory_lane = has_memory_lane(*tl);  // no memory data: no lane
  if (memory_lane) {
    dl->AddText(ImVec2(top_left.x + 4, mem_y + 4), col(palette::kMemory), tl->ranks.empty() ? "memory (live bytes)" : "memory (fullest rank)");
    if (tl->memory.size() > 0) {
      std::string peak = "peak " + format_bytes(tl->memory.max_value);
      dl->AddText(ImVec2(top_left.x + 4, mem_y + 20), IM_COL32(180, 180, 180, 255), peak.c_str());
    }
    bool over_memory = over_canvas && mouse.y >= mem_y && mouse.y < mem_y + kMemoryHeight;
    draw_memory(dl, doc, ImVec2(x0, mem_y), w.width_px, mouse_ts, over_memory && !g_ui.panning);
  }
  ImGui::Dummy(ImVec2(kLabelWidth + w.width_px, kRulerHeight + (memory_lane ? kMemoryHeight : 0) + 4));

  LanesPass lanes(doc, app.row_texture_, app.selected_pos_, top_left, x0, mouse, over_canvas);
  lanes.draw();
  handle_mouse(doc, w, top_left, x0, bottom, over_canvas, lanes.hovered);
  handle_keys(doc);
  if (lanes.hovered.valid() && !g_ui.panning && !g_ui.selecting) draw_event_tooltip(doc, lanes.hovered, lanes.hovered_count);
  ImGui::EndChild();
}

}  // namespace tc::viewer::app
