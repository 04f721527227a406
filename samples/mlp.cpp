// mlp: the happy path. A seeded synthetic task, static shapes (the dataset
// is a whole number of batches), the loss read after mark_step(): every step
// runs the same graph, so tc compiles once and then only executes.
#include <CLI/CLI.hpp>
#include <tc/tc.h>

#include <chrono>
#include <cstdio>

#include "common/classifier.h"

int main(int argc, char** argv) {
  tc_samples::TaskOptions o{.steps = 200};
  int64_t log_every = 50;
  CLI::App app{"Train a small MLP on a seeded synthetic task with static shapes: one compilation, then\n"
               "every step only executes. The loss is read with item() after mark_step(), which is free.",
               "tc-sample-mlp"};
  tc_samples::add_task_options(app, o, {"steps", "batch-size", "samples", "features", "hidden", "classes", "lr", "seed"});
  app.add_option("--log-every", log_every, "Print loss and accuracy every N steps (0: only at the end)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (o.steps < 1 || o.batch < 1 || o.samples < 1 || o.features < 1 || o.hidden < 1 || o.classes < 2)
    return tc_samples::bad_options(app, "--steps, --batch-size, --samples, --features, --hidden must be >= 1 and --classes >= 2");

  try {
    auto data = tc_samples::make_synthetic(o.samples, o.features, o.classes, o.seed);
    tc::nn::Sequential model{tc::nn::Linear(o.features, o.hidden, true, o.seed * 10 + 1), tc::nn::ReLU(),
                             tc::nn::Linear(o.hidden, o.hidden, true, o.seed * 10 + 2), tc::nn::ReLU(),
                             tc::nn::Linear(o.hidden, o.classes, true, o.seed * 10 + 3)};
    auto params = model.parameters();
    tc::optim::AdamW opt(params, {.lr = o.lr});
    auto t0 = std::chrono::steady_clock::now();
    float first_loss = 0, loss_v = 0, acc_v = 0;
    for (int64_t step = 0; step < o.steps; ++step) {
      auto [loss, acc] = tc_samples::train_step(data, (step * o.batch) % o.samples, o.batch, model, params, opt);
      tc::mark_step();
      bool last = step + 1 == o.steps;
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
                static_cast<long long>(o.steps), s, first_loss, loss_v, 100.0 * acc_v);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tc-sample-mlp: %s\n", e.what());
    return 1;
  }
}
