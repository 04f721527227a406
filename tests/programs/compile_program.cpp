// tc-test-compile: a small MLP training loop for the compiled path's
// end-to-end tests (recompilation reasons, disk cache, memory plans).
//
//   tc-test-compile --batches 16,16,24,16 [--tanh-at K] [--momentum M] [--wait-builds-after K] [--item-first 1]
//
// One SGD step per listed batch size, inputs named "x" and "y"; with
// --tanh-at K step K uses tanh instead of relu (a structure change at the
// same mark_step call site); --momentum 0 makes plain SGD updates (which the
// kernel pass fuse_gemm_updates turns into accumulating products; default
// 0.9); --wait-builds-after K waits, after step K, until the tiered builds
// (TC_TIERED) submitted so far are done; --item-first 1 reads the loss
// (loss.item(): an explicit evaluation that cuts the graph) before
// mark_step(). Prints one "step S loss L" line per step, flushed.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <tc/tc.h>
#include <vector>

#include "compile.h"  // compiler/src: wait_for_tier_ups

int train(int argc, char** argv) {
  std::vector<int64_t> batches = {16, 16, 16};
  int tanh_at = -1, wait_after = -1, item_first = 0;
  double momentum = 0.9;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--batches") {
      batches.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string item; std::getline(ss, item, ',');) batches.push_back(std::stoll(item));
    } else if (a == "--tanh-at") {
      tanh_at = std::atoi(argv[i + 1]);
    } else if (a == "--wait-builds-after") {
      wait_after = std::atoi(argv[i + 1]);
    } else if (a == "--momentum") {
      momentum = std::atof(argv[i + 1]);
    } else if (a == "--item-first") {
      item_first = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: tc-test-compile --batches 16,16,24 [--tanh-at K] [--momentum M] [--wait-builds-after K] [--item-first 1]\n");
      return 2;
    }
  }
  const int64_t in = 12, hidden = 16, classes = 3;
  tc::nn::Linear l1(in, hidden, true, 1), l2(hidden, classes, true, 2);
  std::vector<tc::Tensor> params = l1.parameters();
  for (auto& p : l2.parameters()) params.push_back(p);
  tc::optim::SGD opt(params, {.lr = 0.05, .momentum = momentum});
  for (std::size_t step = 0; step < batches.size(); ++step) {
    int64_t b = batches[step];
    std::vector<float> xs(static_cast<std::size_t>(b * in));
    std::vector<int32_t> ys(static_cast<std::size_t>(b));
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 37 + step * 11) % 17) / 17.0f - 0.5f;
    for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>((i * 7 + step) % classes);
    auto x = tc::from_host(xs, {b, in}, "x");
    auto y = tc::from_host(ys, {b}, "y");
    auto h = l1(x);
    h = static_cast<int>(step) == tanh_at ? tc::tanh(h) : tc::relu(h);
    auto loss = tc::nn::cross_entropy(l2(h), y);
    const float first = item_first ? loss.item() : 0.0f;
    opt.step(tc::grad(loss, params));
    tc::mark_step();
    std::printf("step %zu loss %.6f\n", step, static_cast<double>(item_first ? first : loss.item()));
    std::fflush(stdout);
    if (static_cast<int>(step) == wait_after) tc::detail::wait_for_tier_ups();
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return train(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
