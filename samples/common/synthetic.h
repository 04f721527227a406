// synthetic.h: a seeded synthetic classification task for the samples that
// need no real data (mlp, logging, oom).
//
// x ~ N(0, 1) in `features` dimensions; the label is the argmax of x @ W for
// a fixed random teacher W, so a small MLP learns it well.
#pragma once

#include <cstdint>
#include <vector>

namespace tc_samples {

struct Synthetic {
  int64_t n = 0, features = 0, classes = 0;
  std::vector<float> x;    // [n, features]
  std::vector<int32_t> y;  // [n]

  // Rows [start, start + rows) as host vectors (wrapping around the end).
  std::vector<float> x_rows(int64_t start, int64_t rows) const;
  std::vector<int32_t> y_rows(int64_t start, int64_t rows) const;
};

Synthetic make_synthetic(int64_t n, int64_t features, int64_t classes, uint64_t seed);

}  // namespace tc_samples
