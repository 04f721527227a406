// mlp: the happy path. A seeded synthetic task, static shapes (the dataset
// is a whole number of batches), the loss read after mark_step(): every step
// runs the same graph, so tc compiles once and then only executes.
#include <CLI/CLI.hpp>
#include <tc/tc.h>

#include <chrono>
#include <cstdio>

#include "common/metrics.h"
#include "common/synthetic.h"

int main(int argc, char** argv) {
  int64_t steps = 200, batch = 64, samples = 2048, features = 16, hidden = 64, classes = 4;
  int64_t log_every = 50;
  double lr = 3e-3;
  uint64_t seed = 0;
  CLI::App app{"Train a small MLP on a seeded synthetic task with static shapes: one compilation, then\n"
               "every step only executes. The loss is read with item() after mark_step(), which is free.",
               "tc-sample-mlp"};
  app.add_option("--steps", steps, "Training steps")->capture_default_str();
  app.add_option("--batch-size", batch, "Examples per batch")->capture_default_str();
  app.add_option("--samples", samples, "Size of the synthetic dataset")->capture_default_str();
  app.add_option("--features", features, "Input features")->capture_default_str();
  app.add_option("--hidden", hidden, "Hidden width")->capture_default_str();
  app.add_option("--classes", classes, "Classes")->capture_default_str();
  app.add_option("--lr", lr, "AdamW learning rate")->capture_default_str();
  app.add_option("--log-every", log_every, "Print loss and accuracy every N steps (0: only at the end)")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the data and of the initialization")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (steps < 1 || batch < 1 || samples < 1 || features < 1 || hidden < 1 || classes < 2) {
    std::fprintf(stderr, "tc-sample-mlp: --steps, --batch-size, --samples, --features, --hidden must be >= 1 and --classes >= 2\n");
    return 2;
  }

  try {
    auto data = tc_samples::make_synthetic(samples, features, classes, seed);
    tc::nn::Sequential model{tc::nn::Linear(features, hidden, true, seed * 10 + 1), tc::nn::ReLU(),
                             tc::nn::Linear(hidden, hidden, true, seed * 10 + 2), tc::nn::ReLU(),
                             tc::nn::Linear(hidden, classes, true, seed * 10 + 3)};
    auto params = model.parameters();
    tc::optim::AdamW opt(params, {.lr = lr});
    auto t0 = std::chrono::steady_clock::now();
    float first_loss = 0, loss_v = 0, acc_v = 0;
    for (int64_t step = 0; step < steps; ++step) {
      int64_t start = (step * batch) % samples;
      tc::Tensor x = tc::from_host(data.x_rows(start, batch), {batch, features}, "x");
      tc::Tensor y = tc::from_host(data.y_rows(start, batch), {batch}, "labels");
      tc::Tensor logits = model(x);
      tc::Tensor loss = tc::nn::cross_entropy(logits, y);
      tc::Tensor acc = tc_samples::accuracy(logits, y);
      opt.step(tc::grad(loss, params));
      tc::mark_step();
      bool last = step + 1 == steps;
      if (step == 0) first_loss = loss.item();  // after mark_step(): free
      if ((log_every > 0 && (step + 1) % log_every == 0) || last) {
        loss_v = loss.item();
        acc_v = acc.item();
        std::printf("step %5lld  loss %.4f  batch accuracy %.1f%%\n", static_cast<long long>(step + 1),
                    loss_v, 100.0 * acc_v);
        std::fflush(stdout);
      }
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("trained %lld steps in %.2fs: loss %.4f -> %.4f, last batch accuracy %.1f%%\n",
                static_cast<long long>(steps), s, first_loss, loss_v, 100.0 * acc_v);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tc-sample-mlp: %s\n", e.what());
    return 1;
  }
}
