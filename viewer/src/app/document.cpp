#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "app.h"
#include "tc/analysis/job.h"
#include "tc/viewer/model.h"

namespace tc::viewer::app {

namespace {

Loaded load(const std::vector<std::string>& paths, bool ranges) {
  auto start = std::chrono::steady_clock::now();
  Loaded out;
  LoadOptions options;
  options.ranges = ranges;
  out.timeline = load_job_timeline(paths, options);
  out.load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// A job's findings (analyze_job): each rank's own, merged, and the job's
// (distributed.straggler, distributed.desync), anchored on the aligned clock.
Analyzed analyze_ranks(const std::vector<std::string>& paths) {
  Analyzed out;
  auto job = analysis::analyze_job(paths);
  if (!job.ok()) {
    out.error = job.status().message();
    return out;
  }
  for (analysis::JobFinding& jf : job->findings) {
    jf.finding.anchors_ts = std::move(jf.aligned_anchors_ts);
    out.findings.push_back(std::move(jf.finding));
  }
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

void Document::open(const std::vector<std::string>& paths) {
  paths_ = paths;
  path_.clear();
  for (const std::string& p : paths) path_ += (path_.empty() ? "" : " ") + p;
  state_ = State::kLoading;
  error_.clear();
  error_code_ = StatusCode::kOk;
  // A quick load without the ranges puts the run on screen at once; the full
  // load replaces it when done.
  // One after the other, so that the quick one has the machine to itself.
  auto quick = std::make_shared<std::promise<Loaded>>();
  quick_ = quick->get_future();
  loading_ = std::async(std::launch::async, [paths, quick] {
    quick->set_value(load(paths, false));
    return load(paths, true);
  });
}

void Document::take(Loaded loaded, bool full) {
  if (!loaded.timeline.ok()) {
    if (!full) return;  // the full load reports the same error
    // The previous store (if any) stays on screen under the error line.
    state_ = timeline_ ? State::kReady : State::kFailed;
    error_ = loaded.timeline.status().message();
    error_code_ = loaded.timeline.status().code();
    return;
  }
  const bool had_quick = timeline_ && !timeline_->ranges_loaded && timeline_->paths == paths_;
  timeline_ = std::make_unique<Timeline>(std::move(loaded.timeline).value());
  load_s_ = loaded.load_s;
  state_ = State::kReady;
  frame_cache_.invalidate();
  warning_.clear();
  if (std::vector<int64_t> missing = missing_ranks(*timeline_, 64); !missing.empty()) {
    const int64_t count = missing_rank_count(*timeline_), more = count - static_cast<int64_t>(missing.size());
    warning_ = analysis::rank_set(missing, 0) + (more > 0 ? " and " + std::to_string(more) + " more" : "") + " of the job's " +
               std::to_string(timeline_->world_size) + " " + (count == 1 ? "is" : "are") +
               " missing: open every rank's store (run.rank*.tcdb) to see all the waits";
  }
  if (const Timeline::Skipped& s = timeline_->skipped; s.events > 0 || s.locations > 0) {
    warning_ += std::string(warning_.empty() ? "" : "; ") + "damaged store: skipped " + std::to_string(s.events) +
                " events with times beyond 73 years and " + std::to_string(s.locations) + " locations with ids out of range";
  }
  if (collapsed_.size() != timeline_->ranks.size() || !had_quick) collapsed_.assign(timeline_->ranks.size(), 0);
  hidden_lanes_.assign(timeline_->lanes.size(), 0);
  for (size_t l = 0; l < timeline_->lanes.size(); ++l) hidden_lanes_[l] = collapsed(timeline_->lanes[l].group);
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
    std::vector<std::string> paths = timeline_->paths;
    const bool job = !timeline_->ranks.empty();
    analysis_ = std::async(std::launch::async, [paths, job] { return job ? analyze_ranks(paths) : analyze(paths.front()); });
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

namespace {

// Saturating: a view asked for around an event of a damaged store's extreme
// times must not wrap (the model's times are within ±2^62, timeline.h).
int64_t add_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
int64_t sub_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

}  // namespace

void Document::set_view(int64_t t0, int64_t t1) {
  if (!timeline_) return;
  const int64_t span = timeline_->end_ts - timeline_->start_ts;
  const int64_t margin = std::max<int64_t>(span / 20, 1);
  t1 = std::max(t1, add_sat(t0, 10));  // 10 ns is as far as one can zoom in
  int64_t w = std::min(sub_sat(t1, t0), span + 2 * margin);
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
  if (!timeline_) return;
  // In long double (64-bit mantissa: exact for int64), within the run and its
  // margins, so that zooming out of an extreme store's run does not overflow.
  const long double span = static_cast<long double>(timeline_->end_ts - timeline_->start_ts);
  const long double lo = timeline_->start_ts - span / 10, hi = timeline_->end_ts + span / 10;
  long double w = static_cast<long double>(view.t1 - view.t0);
  long double pivot = view.t0 + around * w;
  long double nw = std::clamp(w * factor, 10.0L, hi - lo);
  int64_t t0 = static_cast<int64_t>(std::llround(std::clamp(pivot - around * nw, lo, hi - nw)));
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
  int64_t d = std::max<int64_t>(sub_sat(end, ts), 1000);
  set_view(sub_sat(ts, d), add_sat(end, d));  // the event in the middle third
}

void Document::select(EventRef e, bool move_view) {
  selected = e;
  if (move_view && track(e)) zoom_to(event_ts(e), event_end(e));
}

void Document::prepare() {
  if (!timeline_) return;
  frame_cache_.prepare(*timeline_, {view.t0, view.t1, std::max(1.0f, view.width_px)}, view.origin_px, &hidden_lanes_);
}

void Document::set_collapsed(int group, bool c) {
  if (!timeline_ || group < 0 || static_cast<size_t>(group) >= collapsed_.size()) return;
  collapsed_[group] = c;
  for (size_t l = 0; l < timeline_->lanes.size(); ++l) hidden_lanes_[l] = collapsed(timeline_->lanes[l].group);
  if (selected.valid() && hidden_lanes_[static_cast<size_t>(selected.lane)]) selected = {};
}

void Document::select_finding(int i) {
  if (i < 0 || static_cast<size_t>(i) >= findings_.size()) return;
  selected_finding = i;
  int64_t t0 = 0, t1 = 0;
  if (timeline_ && anchor_extent(*timeline_, findings_[i].anchors_ts, &t0, &t1)) {
    const int64_t pad = std::max<int64_t>(sub_sat(t1, t0) / 10, 1000);
    set_view(sub_sat(t0, pad), add_sat(t1, pad));
  }
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
  std::snprintf(buf, sizeof buf, "%.6f s", static_cast<double>(ts - tl.origin_ts) / 1e9);
  return buf;
}

}  // namespace tc::viewer::app
