// The table of track kinds, and what the model's users call through it.
#include "kinds.h"

#include <algorithm>
#include <cstdio>

namespace tc::analysis::timeline {
namespace detail {

CardLine& Card::add(CardLine::Style style, const char* fmt, va_list args) {
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  CardLine& line = lines_->emplace_back();
  line.style = style;
  line.text.resize(static_cast<size_t>(std::max(n, 0)) + 1);
  std::vsnprintf(line.text.data(), line.text.size(), fmt, again);
  va_end(again);
  line.text.pop_back();
  return line;
}

void Card::text(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  add(CardLine::Style::kText, fmt, args);
  va_end(args);
}

void Card::disabled(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  add(CardLine::Style::kDisabled, fmt, args);
  va_end(args);
}

void Card::coloured(palette::Rgb c, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  CardLine& line = add(CardLine::Style::kColoured, fmt, args);
  va_end(args);
  const float sc = 1.0f / 255.0f;  // as ImColor(int r, int g, int b) scales
  line.rgba[0] = static_cast<float>(c.r) * sc;
  line.rgba[1] = static_cast<float>(c.g) * sc;
  line.rgba[2] = static_cast<float>(c.b) * sc;
}

void Card::coloured(float r, float g, float b, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  CardLine& line = add(CardLine::Style::kColoured, fmt, args);
  va_end(args);
  line.rgba[0] = r;
  line.rgba[1] = g;
  line.rgba[2] = b;
}

const KindTraits& traits(TrackKind kind) {
  switch (kind) {
    case TrackKind::kSteps: return kStepsTraits;
    case TrackKind::kCompilations: return kCompilationsTraits;
    case TrackKind::kExecutions: return kExecutionsTraits;
    case TrackKind::kEvaluations: return kEvaluationsTraits;
    case TrackKind::kInstants: return kInstantsTraits;
    case TrackKind::kRanges: return kRangesTraits;
    case TrackKind::kKernels: return kKernelsTraits;
    case TrackKind::kNvtxMarks: return kNvtxMarksTraits;
    case TrackKind::kNvtxRanges: return kNvtxRangesTraits;
    case TrackKind::kNvtxStartEnd: return kNvtxStartEndTraits;
    case TrackKind::kCollectives: return kCollectivesTraits;
  }
  return kRangesTraits;
}

}  // namespace detail

const char* track_kind_name(TrackKind kind) { return detail::traits(kind).name; }

Marker track_marker(TrackKind kind) { return detail::traits(kind).marker; }

palette::Rgb event_colour(const Timeline& tl, const Track& t, uint32_t i) { return detail::traits(t.kind).colour(tl, t, i); }

std::string event_label(const Timeline& tl, const Track& t, uint32_t i) { return detail::traits(t.kind).label(tl, t, i); }

std::vector<CardLine> event_card(const Timeline& tl, const Lane& lane, const Track& t, uint32_t i) {
  std::vector<CardLine> lines;
  detail::Card card(&lines);
  detail::traits(t.kind).card(tl, lane, t, i, card);
  return lines;
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

}  // namespace tc::analysis::timeline
