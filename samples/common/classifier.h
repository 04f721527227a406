// classifier.h: what the samples that train a small classifier on the
// synthetic task (mlp, logging, oom) share: the step, and their command line's
// one-line complaint.
#pragma once

#include <CLI/CLI.hpp>
#include <tc/tc.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "metrics.h"
#include "synthetic.h"

namespace tc_samples {

// The task and the classifier trained on it: each sample starts from its
// own defaults and offers the options it names.
struct TaskOptions {
  int64_t steps = 200, batch = 64, samples = 2048, features = 16, hidden = 64, classes = 4;
  double lr = 3e-3;
  uint64_t seed = 0;
};

// --NAME for each of `names` ("steps", "batch-size", "samples", "features",
// "hidden", "classes", "lr", "seed"), bound to o's field, its default shown.
inline void add_task_options(CLI::App& app, TaskOptions& o, std::initializer_list<std::string_view> names) {
  auto add = [&](std::string_view name, auto& field, const char* help) {
    if (std::find(names.begin(), names.end(), name) != names.end())
      app.add_option("--" + std::string(name), field, help)->capture_default_str();
  };
  add("steps", o.steps, "Training steps");
  add("batch-size", o.batch, "Examples per batch");
  add("samples", o.samples, "Size of the synthetic dataset");
  add("features", o.features, "Input features");
  add("hidden", o.hidden, "Hidden width");
  add("classes", o.classes, "Classes");
  add("lr", o.lr, "AdamW learning rate");
  add("seed", o.seed, "Seed of the data and of the initialization");
}

struct TrainStep {
  tc::Tensor loss, accuracy;  // pending: free to read after tc::mark_step(), a graph cut before it
};

// One training step on rows [start, start + batch) of `data` (wrapping
// around its end): the cross-entropy loss of model's logits, the batch
// accuracy and opt's update of `params`, appended to the pending graph and
// recorded at the caller's line.
inline TrainStep train_step(const Synthetic& data, int64_t start, int64_t batch, tc::nn::Sequential& model,
                            const std::vector<tc::Tensor>& params, tc::optim::AdamW& opt, TC_HERE) {
  tc::Tensor x = tc::from_host(data.x_rows(start, batch), {batch, data.features}, "x", where);
  tc::Tensor y = tc::from_host(data.y_rows(start, batch), {batch}, "labels", where);
  tc::Tensor logits = model(x, where);
  TrainStep s{tc::nn::cross_entropy(logits, y, -100 /* its default ignore_index */, where), accuracy(logits, y, where)};
  opt.step(tc::grad(s.loss, params, where), where);
  return s;
}

// Options out of range: "PROGRAM: what" on stderr, and the exit status 2.
inline int bad_options(const CLI::App& app, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), what.c_str());
  return 2;
}

}  // namespace tc_samples
