// logging: the explicit-evaluation trap.
//
// The loop logs the loss with item() and the accuracy with to_host() *before*
// mark_step(), every step. Each read of a pending tensor cuts the graph on the
// spot: tc compiles and runs the subgraph it needs there and then (recorded
// in the store with this file and line), and mark_step() runs the rest.
// The fixes:
//   --log-every N        read every N steps instead of every step;
//   --read-after-step    read after mark_step(), when the values exist: free.
#include <CLI/CLI.hpp>
#include <tc/tc.h>

#include <cstdio>

#include "common/metrics.h"
#include "common/synthetic.h"

int main(int argc, char** argv) {
  int64_t steps = 100, batch = 64, samples = 2048, features = 16, hidden = 64, classes = 4;
  int64_t log_every = 1;
  bool read_after_step = false;
  double lr = 3e-3;
  uint64_t seed = 0;
  CLI::App app{"Log the loss (item()) and the accuracy (to_host()) before mark_step(), every step: each\n"
               "read cuts the graph (an explicit evaluation). --log-every N and --read-after-step fix it.",
               "tc-sample-logging"};
  app.add_option("--steps", steps, "Training steps")->capture_default_str();
  app.add_option("--batch-size", batch, "Examples per batch")->capture_default_str();
  app.add_option("--log-every", log_every, "Read and print the loss and accuracy every N steps (0: never)")->capture_default_str();
  app.add_flag("--read-after-step", read_after_step, "Read them after mark_step() (free) instead of before");
  app.add_option("--lr", lr, "AdamW learning rate")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the data and of the initialization")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (steps < 1 || batch < 1 || log_every < 0) {
    std::fprintf(stderr, "tc-sample-logging: --steps and --batch-size must be >= 1, --log-every >= 0\n");
    return 2;
  }

  try {
    auto data = tc_samples::make_synthetic(samples, features, classes, seed);
    tc::nn::Sequential model{tc::nn::Linear(features, hidden, true, seed * 10 + 1), tc::nn::ReLU(),
                             tc::nn::Linear(hidden, classes, true, seed * 10 + 2)};
    auto params = model.parameters();
    tc::optim::AdamW opt(params, {.lr = lr});
    for (int64_t step = 0; step < steps; ++step) {
      int64_t start = (step * batch) % samples;
      tc::Tensor x = tc::from_host(data.x_rows(start, batch), {batch, features}, "x");
      tc::Tensor y = tc::from_host(data.y_rows(start, batch), {batch}, "labels");
      tc::Tensor logits = model(x);
      tc::Tensor loss = tc::nn::cross_entropy(logits, y);
      tc::Tensor acc = tc_samples::accuracy(logits, y);
      opt.step(tc::grad(loss, params));
      bool log_now = log_every > 0 && step % log_every == 0;
      float loss_v = 0, acc_v = 0;
      if (log_now && !read_after_step) {
        loss_v = loss.item();       // tc-sample-trap: item (pending: cuts the graph)
        acc_v = acc.to_host()[0];   // tc-sample-trap: to_host (pending: cuts the graph)
      }
      tc::mark_step();
      if (log_now && read_after_step) {
        loss_v = loss.item();      // after mark_step(): free
        acc_v = acc.to_host()[0];  // after mark_step(): free
      }
      if (log_now)
        std::printf("step %4lld  loss %.4f  accuracy %.1f%%\n", static_cast<long long>(step), loss_v, 100.0 * acc_v);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tc-sample-logging: %s\n", e.what());
    return 1;
  }
}
