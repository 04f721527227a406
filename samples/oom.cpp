// oom: finding the batch size by trial, until the device runs out of memory.
//
// Each round doubles the batch size and runs one training step of an MLP
// under the device's capacity (TC_DEVICE_MEMORY_LIMIT on CPU; --memory-limit,
// default 64MiB when that variable is unset). When a step does not fit, tc
// throws tc::OutOfMemoryError (and records it in the store, with what was
// live); the program reports it in one line and exits with status 1, as a
// user's script would. The store's memory plans say which batch size fits
// without the trial.
#include <CLI/CLI.hpp>
#include <tc/tc.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/classifier.h"

namespace {

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  int64_t start_batch = 64, growth = 2, max_rounds = 16, steps_per_round = 1;
  tc_samples::TaskOptions o{.features = 256, .hidden = 1024, .classes = 10, .lr = 1e-3};
  std::string memory_limit;
  CLI::App app{"Double the batch size each round until a training step no longer fits in device memory,\n"
               "then report tc::OutOfMemoryError in one line and exit 1.",
               "tc-sample-oom"};
  app.add_option("--start-batch", start_batch, "Batch size of the first round")->capture_default_str();
  app.add_option("--growth", growth, "Factor the batch size grows by each round")->capture_default_str();
  app.add_option("--max-rounds", max_rounds, "Give up (exit 0) after this many rounds")->capture_default_str();
  app.add_option("--steps-per-round", steps_per_round, "Training steps per round")->capture_default_str();
  app.add_option("--memory-limit", memory_limit,
                 "Device capacity, e.g. 64MiB (default: TC_DEVICE_MEMORY_LIMIT, else 64MiB)");
  tc_samples::add_task_options(app, o, {"features", "hidden", "lr"});
  CLI11_PARSE(app, argc, argv);
  if (start_batch < 1 || growth < 2 || max_rounds < 1 || steps_per_round < 1 || o.features < 1 || o.hidden < 1)
    return tc_samples::bad_options(app, "--start-batch, --max-rounds, --steps-per-round, --features, --hidden must be >= 1 and --growth >= 2");

  int64_t batch = start_batch, fitted = 0;
  try {
    if (!memory_limit.empty()) tc::set_device_memory_limit(tc::parse_byte_size(memory_limit));
    else if (!std::getenv("TC_DEVICE_MEMORY_LIMIT")) tc::set_device_memory_limit(64ll << 20);
    int64_t capacity = tc::memory_stats().capacity;
    std::printf("device capacity %.1f MiB\n", mib(capacity));

    tc::nn::Sequential model{tc::nn::Linear(o.features, o.hidden, true, 1), tc::nn::ReLU(),
                             tc::nn::Linear(o.hidden, o.hidden, true, 2), tc::nn::ReLU(),
                             tc::nn::Linear(o.hidden, o.classes, true, 3)};
    auto params = model.parameters();
    tc::optim::AdamW opt(params, {.lr = o.lr});
    for (int64_t round = 0; round < max_rounds; ++round) {
      auto data = tc_samples::make_synthetic(batch, o.features, o.classes, static_cast<uint64_t>(round));
      tc::reset_peak_memory();
      float loss_v = 0;
      for (int64_t s = 0; s < steps_per_round; ++s) {
        tc::Tensor x = tc::from_host(data.x, {batch, o.features}, "x");
        tc::Tensor y = tc::from_host(data.y, {batch}, "labels");
        tc::Tensor loss = tc::nn::cross_entropy(model(x), y);
        opt.step(tc::grad(loss, params));
        tc::mark_step();
        loss_v = loss.item();  // after mark_step(): free
      }
      std::printf("round %2lld: batch %6lld fits, peak %.1f of %.1f MiB, loss %.4f\n",
                  static_cast<long long>(round), static_cast<long long>(batch),
                  mib(tc::memory_stats().peak), mib(capacity), loss_v);
      std::fflush(stdout);
      fitted = batch;
      batch *= growth;
    }
    std::printf("every round fitted; the largest batch tried was %lld\n", static_cast<long long>(fitted));
    return 0;
  } catch (const tc::OutOfMemoryError& e) {
    std::fprintf(stderr,
                 "tc-sample-oom: out of device memory at batch size %lld: asked for %.1f MiB with "
                 "%.1f MiB already live of %.1f MiB; the largest batch that fitted was %lld\n",
                 static_cast<long long>(batch), mib(e.requested), mib(e.live), mib(e.capacity),
                 static_cast<long long>(fitted));
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tc-sample-oom: %s\n", e.what());
    return 1;
  }
}
