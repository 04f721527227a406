// The tc-viewer application: one Document (a store being shown) and the
// windows that draw it. Drawing code reads only the Document's plain structs;
// loading and level-of-detail preprocessing happen outside ImGui::Begin blocks.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tc/analysis/report.h"
#include "tc/viewer/frame_cache.h"
#include "tc/viewer/lod.h"
#include "tc/viewer/model.h"

struct ImVec2;
struct ImDrawList;

namespace tc::viewer::app {

// An event on the timeline: lane and track indices, and the event's index in
// that track. valid() is false for "nothing".
struct EventRef {
  int lane = -1, track = -1;
  uint32_t event = 0;
  bool valid() const { return lane >= 0 && track >= 0; }
  bool operator==(const EventRef&) const = default;
};

// What the timeline shows: time window, and the canvas' pixel width and
// left edge on the screen (as the last frame laid them out).
struct View {
  int64_t t0 = 0, t1 = 1;
  float width_px = 1200;
  int origin_px = 0;
};

// The draw lists and row pixels for one frame, built by Document::prepare
// before any window is drawn (Tracy's Preprocess, then Draw).
using Prepared = FrameCache::Frame;

struct Loaded {
  StatusOr<Timeline> timeline = Status(StatusCode::kInternal, "not loaded");
  double load_s = 0;
};
struct Analyzed {
  std::vector<analysis::Finding> findings;
  std::string error;
};

class Document {
 public:
  enum class State { kEmpty, kLoading, kReady, kFailed };

  // Starts loading path (or a job's stores, tc/analysis/timeline/job.h) on a
  // worker thread; the previous store stays until then.
  void open(const std::string& path) { open(std::vector<std::string>{path}); }
  void open(const std::vector<std::string>& paths);
  // Takes what the workers finished; call once per frame, before drawing.
  void poll();
  // Blocks until loading (and, with findings, the analysis) is done.
  void wait(bool findings);
  // Blocks until something can be drawn: the quick first load or the full one.
  void wait_first();
  // Whether the shown timeline has its ranges yet (the first frame may not).
  bool complete() const { return timeline_ && timeline_->ranges_loaded; }

  State state() const { return state_; }
  const std::string& path() const { return path_; }    // the paths, space-separated
  const std::string& error() const { return error_; }  // the one-line Status message
  StatusCode error_code() const { return error_code_; }  // its code (kCorrupt: a damaged store)
  const std::string& warning() const { return warning_; }  // e.g. the ranks of the job that were not given
  const Timeline* timeline() const { return timeline_.get(); }
  double load_s() const { return load_s_; }
  bool analyzing() const { return analysis_.valid(); }
  const std::vector<analysis::Finding>& findings() const { return findings_; }
  const std::string& findings_error() const { return findings_error_; }

  // The view, clamped so that it stays on the run.
  View view;
  void set_view(int64_t t0, int64_t t1);
  void fit_all();
  void zoom(double factor, double around_fraction);  // factor < 1 zooms in
  void pan(double fraction);

  // Selection and the jumps tables ask for.
  EventRef selected;
  int selected_finding = -1;
  void select(EventRef e, bool move_view);
  // Selects finding i and moves the view to its anchors' steps (anchor_extent).
  void select_finding(int i);
  // A job's rank groups drawn as their header row only (by Timeline::ranks index).
  bool collapsed(int group) const { return group >= 0 && static_cast<size_t>(group) < collapsed_.size() && collapsed_[group]; }
  void set_collapsed(int group, bool c);
  // The event of a compilation / explicit evaluation by its index in the timeline.
  EventRef find(TrackKind kind, uint32_t ref, int64_t ts) const;
  void zoom_to(int64_t ts, int64_t end);
  int64_t event_ts(EventRef e) const;
  int64_t event_end(EventRef e) const;
  const Track* track(EventRef e) const;

  // Level of detail for the current view; cheap when nothing changed.
  void prepare();
  void invalidate_prepared() { frame_cache_.invalidate(); }
  void show_rows(size_t first, size_t last) { frame_cache_.show_rows(first, last); }  // FrameCache::show_rows
  const Prepared& prepared() const { return frame_cache_.frame(); }

 private:
  State state_ = State::kEmpty;
  std::string path_, error_, warning_, findings_error_;
  StatusCode error_code_ = StatusCode::kOk;
  std::vector<std::string> paths_;
  std::vector<uint8_t> collapsed_, hidden_lanes_;
  std::unique_ptr<Timeline> timeline_;
  std::vector<analysis::Finding> findings_;
  double load_s_ = 0;
  std::future<Loaded> loading_, quick_;  // everything / everything but ranges
  void take(Loaded loaded, bool full);
  std::future<Analyzed> analysis_;
  FrameCache frame_cache_;
};

// The frame's row pixels (FrameCache::Frame::pixels) as one OpenGL texture,
// sampled nearest so that each pixel column of a row's quad shows its own
// texel. Uploaded only when the frame was rebuilt. Lives with the OpenGL
// context: release() before the context goes.
class RowTexture {
 public:
  // The texture (an ImTextureID) holding f's rows, uploading them if needed.
  void* update(const Prepared& f);
  // Texture coordinates of row r's pixel columns [0, columns).
  float u_end(const Prepared& f) const { return static_cast<float>(f.columns) / static_cast<float>(width_); }
  float v_of(int row) const { return (static_cast<float>(row) + 0.5f) / static_cast<float>(height_); }
  void release();

 private:
  unsigned id_ = 0;
  int width_ = 0, height_ = 0;
  uint64_t generation_ = 0;
};

struct Options {
  std::vector<std::string> paths;
  bool screenshot_mode = false;
};

// Which window the bottom panel shows.
enum class Panel { kCompilations, kEvaluations, kFindings, kStatistics };

class App {
 public:
  explicit App(Options options);
  // One frame: poll loaders, preprocess, then draw every window.
  void frame();
  // A path dropped on the window or typed in the file panel; several: the stores of one job.
  void request_open(const std::string& path) { request_open(std::vector<std::string>{path}); }
  void request_open(const std::vector<std::string>& paths);
  Document& doc() { return doc_; }
  // Screen position of the selected event's centre in the last frame, if drawn.
  std::optional<std::pair<float, float>> selected_screen_pos() const { return selected_pos_; }
  Panel panel = Panel::kCompilations;
  bool show_file_panel = false;
  // Frees what the app holds in the OpenGL context; call before it goes.
  void release_gl();

 private:
  Options options_;
  Document doc_;
  std::optional<std::pair<float, float>> selected_pos_;
  RowTexture row_texture_;
  bool first_frame_ = true;
  friend void draw_timeline_window(App& app, float height);
  friend void draw_file_panel(App& app);
  char path_buffer_[1024] = {};
};

// One file each.
void draw_timeline_window(App& app, float height);
void draw_compilations_window(Document& doc);
void draw_evaluations_window(Document& doc);
void draw_findings_window(Document& doc);
void draw_statistics_window(Document& doc);
void choose_statistics_row(const Document& doc, int row);
void draw_file_panel(App& app);
void draw_event_tooltip(const Document& doc, EventRef e, uint32_t merged_count);
void draw_memory_tooltip(const Document& doc, int64_t ts);

// Between these, fills are opaque and flat: blending is off, and textures
// are not sampled (gl_state.cpp); after opaque_textured, until end_opaque,
// they are sampled again (the rows' quads).
void begin_opaque(ImDrawList* dl);
void opaque_textured(ImDrawList* dl);
void end_opaque(ImDrawList* dl);
void release_gl_state();  // before the OpenGL context goes

// Formatting shared by windows.
std::string format_bytes(double bytes);
std::string format_time(const Timeline& tl, int64_t ts);  // seconds since the run's start

}  // namespace tc::viewer::app
