#include "tc/viewer/lod.h"

#include <algorithm>
#include <cmath>

namespace tc::viewer {
namespace {

// The first index in [from, to) whose value is >= key, found by galloping
// forward from `from`: O(log distance), touching memory near `from` first.
size_t gallop(const std::vector<int64_t>& v, size_t from, size_t to, int64_t key) {
  size_t lo = from, hi = from, step = 1;
  while (hi < to && v[hi] < key) {
    lo = hi + 1;
    hi = std::min(to, hi + step);
    step *= 2;
  }
  return static_cast<size_t>(std::lower_bound(v.begin() + lo, v.begin() + hi, key) - v.begin());
}

// The first position in [from, to) whose value is >= key, else to, looked
// for from `guess` (where the previous column's step says it is): galloping
// forward past it, or back from it, so a good guess costs a step or two.
size_t search_from(const std::vector<int64_t>& v, size_t from, size_t to, size_t guess, int64_t key) {
  guess = std::clamp(guess, from, to);
  if (guess < to && v[guess] < key) return gallop(v, guess + 1, to, key);
  size_t hi = guess, step = 1, lo = from;  // the answer is at most hi
  while (hi - from > step) {
    const size_t p = hi - step;
    if (v[p] < key) {
      lo = p + 1;
      break;
    }
    hi = p;
    step *= 2;
  }
  return static_cast<size_t>(std::lower_bound(v.begin() + lo, v.begin() + hi, key) - v.begin());
}

}  // namespace

void visible_range(const Track& track, int64_t t0, int64_t t1, size_t* first, size_t* last) {
  const std::vector<int64_t>& ends = track.max_end.empty() ? track.end : track.max_end;
  *first = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), t0) - ends.begin());
  *last = static_cast<size_t>(std::lower_bound(track.ts.begin(), track.ts.end(), t1) - track.ts.begin());
  if (*last < *first) *last = *first;
}

void build_draw_list(const Track& track, const ViewWindow& view, DrawList* out) {
  out->items.clear();
  size_t i, last;
  visible_range(track, view.t0, view.t1, &i, &last);
  const double scale = view.px_per_ns();
  const float right = view.width_px + 1;
  const std::vector<int64_t>& ts = track.ts;
  const std::vector<int64_t>& ends = track.max_end.empty() ? track.end : track.max_end;
  // The next column's first event is looked for where the last item's count
  // says it is (events are about as dense from one column to the next), and
  // the events kAhead columns on are fetched into the cache meanwhile: at
  // 10 M events, waiting for one cache miss after another was most of a
  // zoomed-out rebuild.
  constexpr size_t kAhead = 8;
  size_t count = 0;
  while (i < last) {
    double x0 = (ts[i] - view.t0) * scale;
    // The column this event starts in; everything before the window is column -1.
    double col = x0 < 0 ? -1.0 : std::floor(x0);
    // Events starting before the next column's left edge merge with this one.
    int64_t boundary = view.t0 + static_cast<int64_t>(std::ceil((col + 1) / scale));
    size_t j = search_from(ts, i + 1, last, i + std::max<size_t>(count, 1), boundary);
    count = j - i;
    if (count > 16) {
      const size_t ahead = std::min(j + kAhead * count, last - 1);
      __builtin_prefetch(&ts[ahead]);
      __builtin_prefetch(&ends[ahead - 1]);
    }
    double x1 = (ends[j - 1] - view.t0) * scale;
    DrawItem item;
    item.x0 = static_cast<float>(std::max(x0, -1.0));
    item.x1 = static_cast<float>(std::min<double>(std::max(x1, std::max(x0, -1.0) + 1.0), right));
    item.first = static_cast<uint32_t>(i);
    item.count = static_cast<uint32_t>(j - i);
    out->items.push_back(item);
    i = j;
  }
}

void row_rects(const Timeline& tl, const Track& track, const DrawList& list, float origin_x, std::vector<RowRect>* out) {
  out->clear();
  // One rectangle pending at a time, emitted when the next item cannot join
  // it, so the rectangles keep the items' drawing order.
  RowRect pending;
  bool have = false, pending_merged = false;
  for (uint32_t k = 0; k < list.items.size(); ++k) {
    const DrawItem& it = list.items[k];
    const float a = origin_x + it.x0, b = origin_x + it.x1;
    const bool merged = it.count > 1;
    // A merged item joining a merged stretch needs no colour (most of a dense row's items).
    if (have && merged && pending_merged && a <= pending.x1 + 1) {
      pending.x1 = std::max(pending.x1, b);
      ++pending.items;
      continue;
    }
    const palette::Rgb c = event_colour(tl, track, it.first);
    const palette::Rgb colour = merged ? palette::merged(c) : c;
    const bool joins = have && !merged && !pending_merged && a <= pending.x1 && colour.r == pending.colour.r &&
                       colour.g == pending.colour.g && colour.b == pending.colour.b;
    if (joins) {
      pending.x1 = std::max(pending.x1, b);
      ++pending.items;
      continue;
    }
    if (have) out->push_back(pending);
    pending = {a, b, colour, k, 1};
    pending_merged = merged;
    have = true;
  }
  if (have) out->push_back(pending);
}

namespace {

// Vertices snap to 1/256 of a pixel; a pixel's centre is inside [x0, x1)
// when snap(x0) <= centre < snap(x1). The first such pixel for an edge x.
int64_t first_pixel_from(float x) {
  const int64_t fixed = std::llround(static_cast<double>(x) * 256.0) - 128;  // against the centre's +0.5
  return fixed >= 0 ? (fixed + 255) / 256 : -((-fixed) / 256);              // ceil(fixed / 256)
}

}  // namespace

void rasterize_row(const std::vector<RowRect>& rects, int origin_px, int columns, palette::Rgb empty, uint8_t* rgba) {
  for (int c = 0; c < columns; ++c) {
    uint8_t* p = rgba + 4 * static_cast<size_t>(c);
    p[0] = empty.r, p[1] = empty.g, p[2] = empty.b, p[3] = 255;
  }
  for (const RowRect& r : rects) {
    const int64_t from = std::max<int64_t>(first_pixel_from(r.x0) - origin_px, 0);
    const int64_t to = std::min<int64_t>(first_pixel_from(r.x1) - origin_px, columns);
    for (int64_t c = from; c < to; ++c) {
      uint8_t* p = rgba + 4 * static_cast<size_t>(c);
      p[0] = r.colour.r, p[1] = r.colour.g, p[2] = r.colour.b;
    }
  }
}

bool pixel_runs(const uint8_t* rgba, int columns, palette::Rgb empty, size_t max_runs, std::vector<PixelRun>* out) {
  out->clear();
  for (int c = 0; c < columns;) {
    const uint8_t* p = rgba + 4 * static_cast<size_t>(c);
    const palette::Rgb colour{p[0], p[1], p[2]};
    int e = c + 1;
    while (e < columns && std::equal(p, p + 3, rgba + 4 * static_cast<size_t>(e))) ++e;
    if (colour.r != empty.r || colour.g != empty.g || colour.b != empty.b) {
      if (out->size() == max_runs) {
        out->clear();
        return false;
      }
      out->push_back({c, e, colour});
    }
    c = e;
  }
  return true;
}

void build_counter_draw_list(const CounterSeries& series, const ViewWindow& view, CounterDrawList* out) {
  out->columns.clear();
  if (series.size() == 0) return;
  const double ns_per_px = 1.0 / view.px_per_ns();
  const int columns = std::max(1, static_cast<int>(std::ceil(view.width_px)));
  size_t a = static_cast<size_t>(std::lower_bound(series.ts.begin(), series.ts.end(), view.t0) - series.ts.begin());
  for (int c = 0; c < columns; ++c) {
    int64_t col_end = view.t0 + static_cast<int64_t>(std::ceil((c + 1) * ns_per_px));
    size_t b = gallop(series.ts, a, series.ts.size(), col_end);
    double lo, hi;
    bool have = false;
    if (a > 0) {  // the value carried in from the last sample before this column
      lo = hi = series.value[a - 1];
      have = true;
    }
    if (b > a) {
      double mn, mx;
      series.min_max(a, b, &mn, &mx);
      lo = have ? std::min(lo, mn) : mn;
      hi = have ? std::max(hi, mx) : mx;
      have = true;
    }
    if (have) {
      CounterColumn col{static_cast<float>(c), static_cast<float>(c + 1), lo, hi};
      if (!out->columns.empty() && out->columns.back().lo == lo && out->columns.back().hi == hi &&
          out->columns.back().x1 == col.x0) {
        out->columns.back().x1 = col.x1;  // a flat stretch: one column
      } else {
        out->columns.push_back(col);
      }
    }
    a = b;
  }
}

}  // namespace tc::viewer
