// tc/optim.h: optimizers whose step() builds lazy in-place updates.
//
// step(grads) appends the update of every parameter and of the optimizer
// state (device buffers, category optimizer_state) to the pending graph;
// tc::mark_step() makes them real. The learning rate and the AdamW bias
// corrections are fed as device scalars, so changing them does not change the
// graph's structure.
#pragma once

#include <vector>

#include "tc/tensor.h"

namespace tc::optim {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;  // L2, added to the gradient
  bool nesterov = false;
};

// What the optimizers share: the parameters they update and their options,
// whose learning rate may change between steps.
template <class Options>
class Optimizer {
 public:
  void set_lr(double lr) { options_.lr = lr; }
  double lr() const { return options_.lr; }

 protected:
  // Throws tc::Error unless every parameter is an f32 tensor (`name` says whose).
  Optimizer(std::vector<Tensor> params, Options options, const char* name);
  std::vector<Tensor> params_;
  Options options_;
};

class SGD : public Optimizer<SGDOptions> {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options = {});
  void step(const std::vector<Tensor>& grads, TC_HERE);
  const std::vector<Tensor>& state() const { return velocity_; }

 private:
  std::vector<Tensor> velocity_;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // decoupled
};

class AdamW : public Optimizer<AdamWOptions> {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  void step(const std::vector<Tensor>& grads, TC_HERE);
  int64_t steps() const { return t_; }

 private:
  std::vector<Tensor> m_, v_;
  int64_t t_ = 0;
};

}  // namespace tc::optim
