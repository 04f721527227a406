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
  const std::vector<int64_t>& ends = track.max_end.empty() ? track.end : track.max_end;
  while (i < last) {
    double x0 = (track.ts[i] - view.t0) * scale;
    // The column this event starts in; everything before the window is column -1.
    double col = x0 < 0 ? -1.0 : std::floor(x0);
    // Events starting before the next column's left edge merge with this one.
    int64_t boundary = view.t0 + static_cast<int64_t>(std::ceil((col + 1) / scale));
    size_t j = gallop(track.ts, i + 1, last, boundary);
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
