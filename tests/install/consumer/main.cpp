// Trains a tiny linear model through the installed tc and prints the losses.
#include <tc/tc.h>
#include <tc/trace/trace.h>

#include <cstdio>
#include <vector>

int main() {
  std::vector<float> xs, ys;
  for (int i = 0; i < 32; ++i) {
    float x = static_cast<float>(i) / 32.0f;
    xs.push_back(x);
    ys.push_back(3.0f * x - 1.0f);
  }
  auto x = tc::from_host(std::span<const float>(xs), {32, 1}, "x");
  auto y = tc::from_host(std::span<const float>(ys), {32, 1}, "y");
  tc::nn::Linear layer(1, 1);
  tc::optim::SGD opt(layer.parameters(), {.lr = 0.5});
  float first = 0, last = 0;  // losses of the first and last steps
  for (int step = 0; step < 60; ++step) {
    TC_TRACE_RANGE("consumer.step");
    auto loss = tc::nn::mse_loss(layer(x), y);
    opt.step(tc::grad(loss, layer.parameters()));
    tc::mark_step();
    float l = loss.item();
    if (step == 0) first = l;
    last = l;
  }
  std::printf("first loss %.6f last loss %.6f\n", first, last);
  return last < first * 0.05f ? 0 : 1;
}
