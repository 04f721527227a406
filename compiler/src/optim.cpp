#include <cmath>
#include <cstring>

#include "ir.h"
#include "ops_internal.h"
#include "tc/optim.h"

namespace tc::optim {

using namespace tc::detail;
using loc = std::source_location;

namespace {

// A device scalar fed from the host (category optimizer_state): changing its
// value never changes the graph's structure.
Tensor device_scalar(double v) {
  auto buf = allocate(sizeof(float), Category::optimizer_state);
  const float f = static_cast<float>(v);
  buf->copy_from_host(&f, sizeof f);
  return wrap(make_data_node(std::move(buf), DType::f32, {}, loc::current()));
}

Tensor state_like(const Tensor& p) {
  auto buf = allocate(p.numel() * static_cast<int64_t>(sizeof(float)), Category::optimizer_state);
  const std::vector<float> zeros(static_cast<std::size_t>(p.numel()), 0.0f);
  buf->copy_from_host(zeros.data(), static_cast<std::size_t>(buf->bytes()));
  return wrap(make_data_node(std::move(buf), DType::f32, p.shape(), loc::current()));
}

void check_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const loc& w) {
  if (params.size() != grads.size())
    misuse("optimizer step() got " + std::to_string(grads.size()) + " gradients for " +
               std::to_string(params.size()) + " parameters",
           w);
  for (std::size_t i = 0; i < params.size(); ++i) {
    need(grads[i], "optimizer step", w);
    if (grads[i].shape() != params[i].shape())
      throw ShapeError("optimizer step", params[i].shape(), grads[i].shape(), w.file_name(),
                       w.line(), "gradient " + std::to_string(i) + " has another shape");
    if (grads[i].dtype() != DType::f32) misuse("optimizer step() needs f32 gradients", w);
  }
}

Tensor scalar(double v, const loc& w) { return constant(v, DType::f32, w); }

}  // namespace

template <class Options>
Optimizer<Options>::Optimizer(std::vector<Tensor> params, Options options, const char* name)
    : params_(std::move(params)), options_(options) {
  for (const Tensor& p : params_)
    if (!p.defined() || p.dtype() != DType::f32) throw Error(std::string("tc::optim::") + name + ": parameters must be f32 tensors");
}
template class Optimizer<SGDOptions>;
template class Optimizer<AdamWOptions>;

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : Optimizer(std::move(params), options, "SGD") {
  if (options_.momentum != 0)
    for (const Tensor& p : params_) velocity_.push_back(state_like(p));
}

void SGD::step(const std::vector<Tensor>& grads, loc w) {
  check_grads(params_, grads, w);
  Tensor lr = device_scalar(options_.lr);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = grads[i];
    if (options_.weight_decay != 0) g = add(g, mul(p, scalar(options_.weight_decay, w), w), w);
    Tensor upd = g;
    if (options_.momentum != 0) {
      Tensor& v = velocity_[i];
      v.assign(add(mul(v, scalar(options_.momentum, w), w), g, w), w);
      upd = options_.nesterov ? add(g, mul(v, scalar(options_.momentum, w), w), w) : v;
    }
    p.assign(sub(p, mul(upd, lr, w), w), w);
  }
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : Optimizer(std::move(params), options, "AdamW") {
  for (const Tensor& p : params_) {
    m_.push_back(state_like(p));
    v_.push_back(state_like(p));
  }
}

void AdamW::step(const std::vector<Tensor>& grads, loc w) {
  check_grads(params_, grads, w);
  ++t_;
  const auto& o = options_;
  double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(t_));
  double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(t_));
  Tensor step_size = device_scalar(o.lr / bc1);
  Tensor inv_sqrt_bc2 = device_scalar(1.0 / std::sqrt(bc2));
  Tensor decay = device_scalar(1.0 - o.lr * o.weight_decay);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor& g = grads[i];
    m_[i].assign(add(mul(m_[i], scalar(o.beta1, w), w), mul(g, scalar(1 - o.beta1, w), w), w), w);
    v_[i].assign(add(mul(v_[i], scalar(o.beta2, w), w), mul(mul(g, g, w), scalar(1 - o.beta2, w), w), w),
                 w);
    Tensor denom = add(mul(sqrt(v_[i], w), inv_sqrt_bc2, w), scalar(o.eps, w), w);
    p.assign(sub(mul(p, decay, w), mul(step_size, div(m_[i], denom, w), w), w), w);
  }
}

}  // namespace tc::optim
