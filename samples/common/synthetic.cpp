#include "synthetic.h"

#include <random>

namespace tc_samples {

Synthetic make_synthetic(int64_t n, int64_t features, int64_t classes, uint64_t seed) {
  Synthetic s{n, features, classes, {}, {}};
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> teacher(static_cast<std::size_t>(features * classes));
  for (auto& w : teacher) w = normal(gen);
  s.x.resize(static_cast<std::size_t>(n * features));
  for (auto& v : s.x) v = normal(gen);
  for (int64_t i = 0; i < n; ++i) {
    int32_t best = 0;
    float best_score = 0;
    for (int64_t k = 0; k < classes; ++k) {
      float score = 0;
      for (int64_t j = 0; j < features; ++j)
        score += s.x[static_cast<std::size_t>(i * features + j)] * teacher[static_cast<std::size_t>(j * classes + k)];
      if (k == 0 || score > best_score) best = static_cast<int32_t>(k), best_score = score;
    }
    s.y.push_back(best);
  }
  return s;
}

std::vector<float> Synthetic::x_rows(int64_t start, int64_t rows) const {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(rows * features));
  for (int64_t r = 0; r < rows; ++r) {
    auto row = static_cast<std::size_t>(((start + r) % n) * features);
    out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(row),
               x.begin() + static_cast<std::ptrdiff_t>(row + static_cast<std::size_t>(features)));
  }
  return out;
}

std::vector<int32_t> Synthetic::y_rows(int64_t start, int64_t rows) const {
  std::vector<int32_t> out;
  for (int64_t r = 0; r < rows; ++r) out.push_back(y[static_cast<std::size_t>((start + r) % n)]);
  return out;
}

}  // namespace tc_samples
