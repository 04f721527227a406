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

#include "common/classifier.h"

int main(int argc, char** argv) {
  tc_samples::TaskOptions o{.steps = 100};
  int64_t log_every = 1;
  bool read_after_step = false;
  CLI::App app{"Log the loss (item()) and the accuracy (to_host()) before mark_step(), every step: each\n"
               "read cuts the graph (an explicit evaluation). --log-every N and --read-after-step fix it.",
               "tc-sample-logging"};
  tc_samples::add_task_options(app, o, {"steps", "batch-size", "lr", "seed"});
  app.add_option("--log-every", log_every, "Read and print the loss and accuracy every N steps (0: never)")->capture_default_str();
  app.add_flag("--read-after-step", read_after_step, "Read them after mark_step() (free) instead of before");
  CLI11_PARSE(app, argc, argv);
  if (o.steps < 1 || o.batch < 1 || log_every < 0)
    return tc_samples::bad_options(app, "--steps and --batch-size must be >= 1, --log-every >= 0");

  try {
    auto data = tc_samples::make_synthetic(o.samples, o.features, o.classes, o.seed);
    tc::nn::Sequential model{tc::nn::Linear(o.features, o.hidden, true, o.seed * 10 + 1), tc::nn::ReLU(),
                             tc::nn::Linear(o.hidden, o.classes, true, o.seed * 10 + 2)};
    auto params = model.parameters();
    tc::optim::AdamW opt(params, {.lr = o.lr});
    for (int64_t step = 0; step < o.steps; ++step) {
      auto [loss, acc] = tc_samples::train_step(data, (step * o.batch) % o.samples, o.batch, model, params, opt);
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
