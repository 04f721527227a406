// tc-test-hotspot: a training loop written against the public API only, in
// which one line (marked HOT) does nearly all the work: two large matrix
// products. The kernels end-to-end test checks that tc-analyze kernels puts
// the time there.
#include <cstdio>
#include <tc/tc.h>
#include <vector>

int main() {
  try {
    const int64_t n = 384;
    std::vector<float> a(static_cast<std::size_t>(n * n)), b(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 13) / 13.0f - 0.5f, b[i] = static_cast<float>(i % 7) / 7.0f - 0.5f;
    auto w = tc::from_host(b, {n, n}, "w");
    for (int step = 0; step < 6; ++step) {
      auto x = tc::from_host(a, {n, n}, "x");
      auto y = tc::matmul(tc::matmul(x, w), w);  // HOT
      auto s = tc::sum(tc::relu(y));
      tc::mark_step();
      std::printf("step %d sum %.3f\n", step, static_cast<double>(s.item()));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
