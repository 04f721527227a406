#include "shape_plan.h"

#include <algorithm>
#include <limits>

namespace tc::analysis {

namespace {

int64_t round_up8(int64_t v) { return (v + 7) / 8 * 8; }

// Compile cost per graph (the mean over the values that compiled) and the
// time the run spent at these graphs.
void fit_compile(const std::vector<DimValue>& values, ShapePlan& p) {
  double csum = 0;
  int64_t cn = 0;
  for (const DimValue& d : values) {
    csum += d.compile_s;
    cn += d.compilations;
    p.observed_total_s += d.compile_s + d.execute_s;
  }
  p.compile_per_graph_s = cn ? csum / static_cast<double>(cn) : 0;
}

// Execute time per step as a + b * v, weighted by steps.
void fit_execute(const std::vector<DimValue>& values, ShapePlan& p) {
  std::vector<WeightedPoint> points;
  double executed = 0, execute_s = 0;  // sizes and seconds over the steps
  for (const DimValue& d : values) {
    if (d.steps == 0) continue;
    const double w = static_cast<double>(d.steps);
    points.push_back({static_cast<double>(d.value), d.execute_s / w, w});
    executed += w * static_cast<double>(d.value);
    execute_s += d.execute_s;
  }
  const std::optional<Line> line = fit_line(points);
  if (line && line->b >= 0 && line->a >= 0) {
    p.exec_a = line->a;
    p.exec_b = line->b;
  } else {
    // Too few points for a line, or a nonsense one: time proportional to size.
    p.exec_a = 0;
    p.exec_b = executed > 0 ? execute_s / executed : 0;
  }
}

double step_time(const ShapePlan& p, int64_t v) { return p.exec_a + p.exec_b * static_cast<double>(v); }

// Sizes the run executed: the sum over steps of each step's value.
int64_t executed_size(const std::vector<DimValue>& values) {
  int64_t executed = 0;
  for (const DimValue& d : values) executed += d.steps * d.value;
  return executed;
}

// Pad to one size.
void plan_pad(const std::vector<DimValue>& values, ShapePlan& p) {
  p.pad_to = round_up8(values.back().value);
  p.pad_total_s = p.compile_per_graph_s;
  int64_t padded = 0;
  for (const DimValue& d : values) {
    p.pad_total_s += static_cast<double>(d.steps) * step_time(p, p.pad_to);
    padded += d.steps * p.pad_to;
  }
  p.pad_waste = padded > 0 ? 1.0 - static_cast<double>(executed_size(values)) / static_cast<double>(padded) : 0;
  p.pad_saving_s = p.observed_total_s - p.pad_total_s;
}

// The lower envelope of lines y = b - m' x added by non-increasing slope
// (m = -P[i] below), for the minimum at any x in O(log n). Of lines equally
// low at x, the one added last wins.
class LowerHull {
 public:
  struct Line {
    long double m, b;
    size_t i;
  };
  void add(const Line& l) {
    if (!h_.empty() && h_.back().m == l.m) {
      if (l.b > h_.back().b) return;
      h_.pop_back();
    }
    while (h_.size() >= 2 && hidden(h_[h_.size() - 2], h_.back(), l)) h_.pop_back();
    h_.push_back(l);
  }
  // The line lowest at x (the hull is not empty).
  size_t argmin(long double x) const {
    size_t lo = 0, hi = h_.size() - 1;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (at(h_[mid + 1], x) <= at(h_[mid], x)) lo = mid + 1; else hi = mid;
    }
    return h_[lo].i;
  }

 private:
  static long double at(const Line& l, long double x) { return l.b + l.m * x; }
  // b is nowhere strictly lowest once c is there (slopes a > b > c).
  static bool hidden(const Line& a, const Line& b, const Line& c) { return (c.b - a.b) * (a.m - b.m) <= (b.b - a.b) * (a.m - c.m); }
  std::vector<Line> h_;
};

// Buckets: f[j] = best cost of covering values[0..j) with the last bucket
// at cap = round_up8(values[j-1]): the minimum over i < j of
// f[i] + compile + t(cap) * (P[j] - P[i]), P the prefix sums of steps. That
// is a line in t(cap) per i, so a lower hull finds it in O(log n) (the
// search over every i was quadratic: 50,000 distinct sizes took 2 s, #27).
void plan_buckets(const std::vector<DimValue>& values, ShapePlan& p) {
  size_t n = values.size();
  std::vector<double> f(n + 1, std::numeric_limits<double>::infinity());
  std::vector<size_t> from(n + 1, 0);
  std::vector<int64_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + std::max<int64_t>(values[i].steps, 0);
  f[0] = 0;
  LowerHull hull;
  for (size_t j = 1; j <= n; ++j) {
    hull.add({-static_cast<long double>(prefix[j - 1]), f[j - 1], j - 1});
    const double t = step_time(p, round_up8(values[j - 1].value));
    const size_t i = hull.argmin(t);
    f[j] = f[i] + p.compile_per_graph_s + t * static_cast<double>(prefix[j] - prefix[i]);
    from[j] = i;
  }
  std::vector<int64_t> caps;
  int64_t bucket_padded = 0;
  for (size_t j = n; j > 0; j = from[j]) {
    int64_t cap = round_up8(values[j - 1].value);
    caps.push_back(cap);
    for (size_t i = from[j]; i < j; ++i) bucket_padded += values[i].steps * cap;
  }
  std::reverse(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  p.buckets = caps;
  p.bucket_total_s = f[n];
  p.bucket_saving_s = p.observed_total_s - p.bucket_total_s;
  p.bucket_waste = bucket_padded > 0 ? 1.0 - static_cast<double>(executed_size(values)) / static_cast<double>(bucket_padded) : 0;
}

// A short last batch: the most frequent value is the largest, and the
// others are rare (at most 10% of the steps).
void find_short_batch(const std::vector<DimValue>& values, ShapePlan& p) {
  int64_t total_steps = 0;
  for (const DimValue& d : values) total_steps += d.steps;
  const DimValue* common = &values[0];
  for (const DimValue& d : values) {
    if (d.steps > common->steps) common = &d;
  }
  int64_t others = total_steps - common->steps;
  if (common == &values.back() && total_steps > 0 && others * 10 <= total_steps) {
    p.short_batch = true;
    p.common_value = common->value;
    p.short_value = values.front().value;
    for (const DimValue& d : values) {
      if (&d != common) p.short_saving_s += d.compile_s;
    }
  }
}

}  // namespace

std::optional<Line> fit_line(const std::vector<WeightedPoint>& points) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const WeightedPoint& q : points) {
    sw += q.w;
    sx += q.w * q.x;
    sy += q.w * q.y;
    sxx += q.w * q.x * q.x;
    sxy += q.w * q.x * q.y;
  }
  const double denom = sw * sxx - sx * sx;
  if (points.size() < 2 || denom <= 0) return std::nullopt;
  Line line;
  line.b = (sw * sxy - sx * sy) / denom;
  line.a = (sy - line.b * sx) / sw;
  return line;
}

ShapePlan plan_for(const std::vector<DimValue>& values) {
  ShapePlan p;
  fit_compile(values, p);
  fit_execute(values, p);
  plan_pad(values, p);
  plan_buckets(values, p);
  find_short_batch(values, p);
  return p;
}

}  // namespace tc::analysis
