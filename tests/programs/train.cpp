// tc-test-train: a tiny training loop through libtc.so for the tests that
// check what the compiler records in the store.
//
//   tc-test-train [--steps N] [--oom]
//
// Each step reads the loss with item() and the predictions with to_host()
// before mark_step() (two explicit evaluations per step, at the lines marked
// below), then once after mark_step() (free, not recorded). With --oom the
// device limit is set below what the model needs: the first step throws
// tc::OutOfMemoryError, reported in one line, exit 3.
#include <tc/tc.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  int steps = 3;
  bool oom = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--oom")) oom = true;
    else {
      std::fprintf(stderr, "usage: tc-test-train [--steps N] [--oom]\n");
      return 2;
    }
  }
  if (oom) tc::set_device_memory_limit(4096);
  try {
    std::vector<float> xs(64 * 8), ys(64);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 7919) % 101) / 101.0f;
    for (size_t i = 0; i < ys.size(); ++i) ys[i] = xs[i * 8] - xs[i * 8 + 3];
    tc::nn::Linear l1(8, 32, true, 1), l2(32, 1, true, 2);
    std::vector<tc::Tensor> params = l1.parameters();
    for (auto& p : l2.parameters()) params.push_back(p);
    tc::optim::SGD opt(params, {.lr = 0.1});
    for (int step = 0; step < steps; ++step) {
      auto x = tc::from_host(std::span<const float>(xs), {64, 8}, "features");
      auto y = tc::from_host(std::span<const float>(ys), {64, 1}, "targets");
      auto pred = l2(tc::relu(l1(x)));
      auto loss = tc::nn::mse_loss(pred, y);
      opt.step(tc::grad(loss, params));
      float before = loss.item();                   // EVAL: item
      std::vector<float> p = pred.to_host();        // EVAL: to_host
      tc::mark_step();
      float after = loss.item();  // free after mark_step: not an explicit evaluation
      std::printf("step %d loss %.6f %.6f %zu\n", step, before, after, p.size());
    }
  } catch (const tc::OutOfMemoryError& e) {
    std::fprintf(stderr, "tc-test-train: out of device memory: %s\n", e.what());
    return 3;
  }
  return 0;
}
