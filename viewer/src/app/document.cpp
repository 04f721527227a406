#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "app.h"

namespace tc::viewer::app {

namespace {

Loaded load(const std::string& path, bool ranges) {
  auto start = std::chrono::steady_clock::now();
  Loaded out;
  LoadOptions options;
  options.ranges = ranges;
  out.timeline = load_timeline(path, options);
  out.load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Analyzed analyze(const std::string& path) {
  Analyzed out;
  auto reader = store::Reader::open(path);
  if (!reader.ok()) {
    out.error = reader.status().message();
    return out;
  }
  auto report = analysis::analyze(*reader);
  if (!report.ok()) out.error = report.status().message();
  else out.findings = std::move(report->findings);
  return out;
}

}  // namespace

void Document::open(const std::string& path) {
  path_ = path;
  state_ = State::kLoading;
  error_.clear();
  // A quick load without the ranges puts the run on screen at once; the full
  // load replaces it when done.
  // One after the other, so that the quick one has the machine to itself.
  auto quick = std::make_shared<std::promise<Loaded>>();
  quick_ = quick->get_future();
  loading_ = std::async(std::launch::async, [path, quick] {
    quick->set_value(load(path, false));
    return load(path, true);
  });
}

void Document::take(Loaded loaded, bool full) {
  if (!loaded.timeline.ok()) {
    if (!full) return;  // the full load reports the same error
    // The previous store (if any) stays on screen under the error line.
    state_ = timeline_ ? State::kReady : State::kFailed;
    error_ = loaded.timeline.status().message();
    return;
  }
  const bool had_quick = timeline_ && !timeline_->ranges_loaded && timeline_->path == path_;
  timeline_ = std::make_unique<Timeline>(std::move(loaded.timeline).value());
  load_s_ = loaded.load_s;
  state_ = State::kReady;
  prepared_valid_ = false;
  if (had_quick) {
    selected = {};  // track indices change when the range tracks arrive
    set_view(view.t0, view.t1);  // keep where the user went meanwhile
  } else {
    selected = {};
    selected_finding = -1;
    findings_.clear();
    findings_error_.clear();
    fit_all();
  }
  // Findings come from the analyzer, after the first frame is up.
  if (full) {
    std::string path = timeline_->path;
    analysis_ = std::async(std::launch::async, [path] { return analyze(path); });
  }
}

void Document::poll() {
  using namespace std::chrono_literals;
  if (quick_.valid() && quick_.wait_for(0s) == std::future_status::ready) {
    Loaded q = quick_.get();
    if (loading_.valid()) take(std::move(q), false);  // unless the full load was taken already
  }
  if (loading_.valid() && loading_.wait_for(0s) == std::future_status::ready) take(loading_.get(), true);
  if (analysis_.valid() && analysis_.wait_for(0s) == std::future_status::ready) {
    Analyzed a = analysis_.get();
    findings_ = std::move(a.findings);
    findings_error_ = std::move(a.error);
  }
}

void Document::wait_first() {
  if (quick_.valid()) quick_.wait();
  poll();
  if (!timeline_ && loading_.valid()) loading_.wait();
  poll();
}

void Document::wait(bool findings) {
  if (quick_.valid()) quick_.wait();
  if (loading_.valid()) loading_.wait();
  poll();
  if (findings && analysis_.valid()) analysis_.wait();
  poll();
}

void Document::set_view(int64_t t0, int64_t t1) {
  if (!timeline_) return;
  const int64_t span = timeline_->end_ts - timeline_->start_ts;
  const int64_t margin = std::max<int64_t>(span / 20, 1);
  t1 = std::max(t1, t0 + 10);  // 10 ns is as far as one can zoom in
  int64_t w = std::min(t1 - t0, span + 2 * margin);
  t0 = std::clamp(t0, timeline_->start_ts - margin, timeline_->end_ts + margin - w);
  view.t0 = t0;
  view.t1 = t0 + w;
}

void Document::fit_all() {
  if (!timeline_) return;
  int64_t span = timeline_->end_ts - timeline_->start_ts;
  int64_t pad = std::max<int64_t>(span / 100, 1);
  set_view(timeline_->start_ts - pad, timeline_->end_ts + pad);
}

void Document::zoom(double factor, double around) {
  double w = static_cast<double>(view.t1 - view.t0);
  double pivot = view.t0 + around * w;
  double nw = std::max(10.0, w * factor);
  int64_t t0 = static_cast<int64_t>(std::llround(pivot - around * nw));
  set_view(t0, t0 + static_cast<int64_t>(nw));
}

void Document::pan(double fraction) {
  int64_t d = static_cast<int64_t>(fraction * static_cast<double>(view.t1 - view.t0));
  set_view(view.t0 + d, view.t1 + d);
}

const Track* Document::track(EventRef e) const {
  if (!timeline_ || !e.valid() || e.lane >= static_cast<int>(timeline_->lanes.size())) return nullptr;
  const Lane& lane = timeline_->lanes[e.lane];
  if (e.track >= static_cast<int>(lane.tracks.size())) return nullptr;
  const Track& t = lane.tracks[e.track];
  return e.event < t.size() ? &t : nullptr;
}

int64_t Document::event_ts(EventRef e) const {
  const Track* t = track(e);
  return t ? t->ts[e.event] : 0;
}

int64_t Document::event_end(EventRef e) const {
  const Track* t = track(e);
  return t ? t->end[e.event] : 0;
}

EventRef Document::find(TrackKind kind, uint32_t ref, int64_t ts) const {
  if (!timeline_) return {};
  for (size_t l = 0; l < timeline_->lanes.size(); ++l) {
    const Lane& lane = timeline_->lanes[l];
    for (size_t k = 0; k < lane.tracks.size(); ++k) {
      const Track& t = lane.tracks[k];
      if (t.kind != kind) continue;
      auto it = std::lower_bound(t.ts.begin(), t.ts.end(), ts);
      for (size_t i = static_cast<size_t>(it - t.ts.begin()); i < t.size() && t.ts[i] == ts; ++i) {
        if (t.ref[i] == ref) return {static_cast<int>(l), static_cast<int>(k), static_cast<uint32_t>(i)};
      }
    }
  }
  return {};
}

void Document::zoom_to(int64_t ts, int64_t end) {
  int64_t d = std::max<int64_t>(end - ts, 1000);
  set_view(ts - d, end + d);  // the event in the middle third
}

void Document::select(EventRef e, bool move_view) {
  selected = e;
  if (move_view && track(e)) zoom_to(event_ts(e), event_end(e));
}

void Document::prepare() {
  if (!timeline_) return;
  ViewWindow w{view.t0, view.t1, std::max(1.0f, view.width_px)};
  if (prepared_valid_ && w.t0 == prepared_.window.t0 && w.t1 == prepared_.window.t1 &&
      w.width_px == prepared_.window.width_px) {
    return;
  }
  prepared_.window = w;
  prepared_.tracks.resize(timeline_->lanes.size());
  for (size_t l = 0; l < timeline_->lanes.size(); ++l) {
    const Lane& lane = timeline_->lanes[l];
    prepared_.tracks[l].resize(lane.tracks.size());
    for (size_t k = 0; k < lane.tracks.size(); ++k) build_draw_list(lane.tracks[k], w, &prepared_.tracks[l][k]);
  }
  build_counter_draw_list(timeline_->memory, w, &prepared_.memory);
  prepared_valid_ = true;
}

std::string format_duration(int64_t ns) {
  char buf[64];
  double v = static_cast<double>(ns);
  if (ns < 0) return "unfinished";
  if (v < 1e3) std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (v < 1e6) std::snprintf(buf, sizeof buf, "%.2f us", v / 1e3);
  else if (v < 1e9) std::snprintf(buf, sizeof buf, "%.2f ms", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  return buf;
}

std::string format_bytes(double b) {
  char buf[64];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

std::string format_time(const Timeline& tl, int64_t ts) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f s", static_cast<double>(ts - tl.start_ts) / 1e9);
  return buf;
}

}  // namespace tc::viewer::app
