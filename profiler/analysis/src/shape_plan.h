// Fix for a dimension whose size varied: pad to one size, or bucket, chosen
// from a cost model fitted on the run itself.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tc::analysis {

// What the run did with one value of the varying dimension.
struct DimValue {
  int64_t value = 0;
  int64_t steps = 0;          // executions of graphs with this value
  int64_t compilations = 0;
  double compile_s = 0;
  double execute_s = 0;       // all executions of those graphs
  int64_t first_ts = 0;       // when it first caused a compilation (0: the first graph)
};

struct ShapePlan {
  // The model: a compilation costs compile_per_graph_s; a step at size v
  // executes in exec_a + exec_b * v seconds (least squares over the run).
  double compile_per_graph_s = 0, exec_a = 0, exec_b = 0;
  double observed_total_s = 0;  // compile + execute time the run spent at these graphs
  // Pad everything to one size (a multiple of 8 at or above the largest).
  int64_t pad_to = 0;
  double pad_total_s = 0, pad_saving_s = 0, pad_waste = 0;  // waste: padded share of the executed sizes
  // Buckets (multiples of 8) minimizing compilations + padded execution.
  std::vector<int64_t> buckets;
  double bucket_total_s = 0, bucket_saving_s = 0, bucket_waste = 0;
  // A short last batch: one common value and a few smaller, rare ones.
  bool short_batch = false;
  int64_t short_value = 0, common_value = 0;
  double short_saving_s = 0;
};

// `values` sorted by value, at least two.
ShapePlan plan_for(const std::vector<DimValue>& values);

// y = a + b * x by weighted least squares; nullopt without two distinct x.
struct WeightedPoint {
  double x = 0, y = 0, w = 1;
};
struct Line {
  double a = 0, b = 0;
  double at(double x) const { return a + b * x; }
};
std::optional<Line> fit_line(const std::vector<WeightedPoint>& points);

}  // namespace tc::analysis
