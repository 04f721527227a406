#include <cmath>
#include <cstring>

#include "ir.h"
#include "ops_internal.h"
#include "random.h"
#include "tc/nn.h"

namespace tc::nn {

using namespace tc::detail;
using loc = std::source_location;

namespace {

uint64_t g_seed = 0x7c0ffee;
uint64_t next_seed() { return mix64(g_seed++); }

Tensor make_param(const std::vector<float>& v, Shape shape, const std::string& name) {
  if (static_cast<int64_t>(v.size()) != numel(shape)) throw Error("tc: internal: parameter size");
  auto buf = allocate(static_cast<int64_t>(v.size() * sizeof(float)), Category::parameter);
  buf->copy_from_host(v.data(), v.size() * sizeof(float));
  return wrap(make_data_node(std::move(buf), DType::f32, std::move(shape), loc::current(), name));
}

Tensor uniform_param(Shape shape, double bound, uint64_t seed, const std::string& name) {
  std::vector<float> v(static_cast<std::size_t>(numel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((2.0 * uniform01(seed, i) - 1.0) * bound);
  return make_param(v, std::move(shape), name);
}

Tensor constant_param(Shape shape, float value, const std::string& name) {
  std::vector<float> v(static_cast<std::size_t>(numel(shape)), value);
  return make_param(v, std::move(shape), name);
}

}  // namespace

void manual_seed(uint64_t seed) { g_seed = seed; }

Linear::Linear(int64_t in, int64_t out, bool has_bias, std::optional<uint64_t> seed) {
  if (in <= 0 || out <= 0) throw Error("tc::nn::Linear needs positive sizes");
  uint64_t s = seed ? *seed : next_seed();
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = uniform_param({in, out}, bound, s, "linear.weight");
  if (has_bias) bias = uniform_param({out}, bound, mix64(s + 1), "linear.bias");
}

Tensor Linear::forward(const Tensor& x, loc w) {
  need(x, "Linear", w);
  if (x.rank() < 2 || x.shape().back() != weight.shape()[0])
    throw ShapeError("Linear", x.shape(), weight.shape(), w.file_name(), w.line(),
                     "input's last dimension must equal in_features");
  Tensor y = matmul(x, weight, w);
  return bias.defined() ? add(y, bias, w) : y;
}

std::vector<Tensor> Linear::parameters() const {
  if (bias.defined()) return {weight, bias};
  return {weight};
}

Embedding::Embedding(int64_t num, int64_t dim, std::optional<uint64_t> seed) {
  if (num <= 0 || dim <= 0) throw Error("tc::nn::Embedding needs positive sizes");
  uint64_t s = seed ? *seed : next_seed();
  std::vector<float> v(static_cast<std::size_t>(num * dim));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(normal01(s, i));
  weight = make_param(v, {num, dim}, "embedding.weight");
}

Tensor Embedding::forward(const Tensor& ids, loc w) { return embedding(weight, ids, w); }

LayerNorm::LayerNorm(int64_t dim, double eps_) : eps(eps_) {
  gamma = constant_param({dim}, 1.0f, "layer_norm.gamma");
  beta = constant_param({dim}, 0.0f, "layer_norm.beta");
}

Tensor LayerNorm::forward(const Tensor& x, loc w) {
  need(x, "LayerNorm", w);
  if (x.rank() < 1 || x.shape().back() != gamma.shape()[0])
    throw ShapeError("LayerNorm", x.shape(), gamma.shape(), w.file_name(), w.line(),
                     "input's last dimension must equal the normalized size");
  return layer_norm(x, gamma, beta, eps, w);
}

Dropout::Dropout(double p_, std::optional<uint64_t> seed) : p(p_), next_seed_(seed ? *seed : next_seed()) {
  if (p < 0 || p >= 1) throw Error("tc::nn::Dropout needs 0 <= p < 1");
}

Tensor Dropout::forward(const Tensor& x, loc w) {
  if (!training_ || p == 0) return x;
  return dropout(x, p, next_seed_++, w);
}

Tensor Sequential::forward(const Tensor& x, loc w) {
  Tensor h = x;
  for (auto& m : modules_) h = m->forward(h, w);
  return h;
}

std::vector<Tensor> Sequential::parameters() const {
  std::vector<Tensor> out;
  for (auto& m : modules_)
    for (auto& p : m->parameters()) out.push_back(p);
  return out;
}

void Sequential::train(bool on) {
  training_ = on;
  for (auto& m : modules_) m->train(on);
}

static uint64_t seed_or_next(std::optional<uint64_t> s) { return s ? *s : next_seed(); }

MultiHeadAttention::MultiHeadAttention(int64_t dim_, int64_t heads_, std::optional<uint64_t> seed)
    : MultiHeadAttention(dim_, heads_, seed_or_next(seed), 0) {}

MultiHeadAttention::MultiHeadAttention(int64_t dim_, int64_t heads_, uint64_t s, int)
    : dim(dim_), heads(heads_),
      q(dim_, dim_, true, mix64(s + 1)),
      k(dim_, dim_, true, mix64(s + 2)),
      v(dim_, dim_, true, mix64(s + 3)),
      out(dim_, dim_, true, mix64(s + 4)) {
  if (heads <= 0 || dim % heads != 0)
    throw Error("tc::nn::MultiHeadAttention: dim " + std::to_string(dim) +
                " is not divisible by heads " + std::to_string(heads));
}

Tensor MultiHeadAttention::attend(const Tensor& x, const Tensor& mask, loc w) {
  need(x, "MultiHeadAttention", w);
  if (x.rank() != 3 || x.shape()[2] != dim)
    throw ShapeError("MultiHeadAttention", x.shape(), Shape{-1, -1, dim}, w.file_name(), w.line(),
                     "input must be [batch, seq, dim]");
  int64_t B = x.shape()[0], T = x.shape()[1];
  if (mask.defined()) {
    if (mask.dtype() != DType::b8)
      misuse("MultiHeadAttention: key_padding_mask must be b8 (true = padding)", w);
    if (mask.shape() != Shape{B, T})
      throw ShapeError("MultiHeadAttention", mask.shape(), Shape{B, T}, w.file_name(), w.line(),
                       "key_padding_mask must be [batch, seq]");
  }
  // One product for q, k and v: x [B, T, dim] x [dim, 3 dim] (the three
  // weights side by side; their gradients are slices of its gradient), then
  // the fused attention over the packed result.
  Tensor wqkv = concat({q.weight, k.weight, v.weight}, 1, w);
  Tensor qkv = matmul(x, wqkv, w);
  if (q.bias.defined()) qkv = add(qkv, concat({q.bias, k.bias, v.bias}, 0, w), w);
  Tensor ctx = self_attention(qkv, heads, mask, w);  // [B, T, dim]
  return out.forward(ctx, w);
}

std::vector<Tensor> MultiHeadAttention::parameters() const {
  std::vector<Tensor> p;
  for (const Linear* l : {&q, &k, &v, &out})
    for (auto& t : l->parameters()) p.push_back(t);
  return p;
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t dim, int64_t heads, int64_t ff_dim,
                                                 double p, std::optional<uint64_t> seed)
    : TransformerEncoderLayer(dim, heads, ff_dim, p, seed_or_next(seed), 0) {}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t dim, int64_t heads, int64_t ff_dim,
                                                 double p, uint64_t s, int)
    : attn(dim, heads, mix64(s + 1)),
      ff1(dim, ff_dim, true, mix64(s + 2)),
      ff2(ff_dim, dim, true, mix64(s + 3)),
      norm1(dim), norm2(dim), drop(p, mix64(s + 4)) {}

Tensor TransformerEncoderLayer::encode(const Tensor& x, const Tensor& mask, loc w) {
  Tensor h = norm1.forward(add(x, drop.forward(attn.attend(x, mask, w), w), w), w);
  Tensor f = ff2.forward(drop.forward(relu(ff1.forward(h, w), w), w), w);
  return norm2.forward(add(h, drop.forward(f, w), w), w);
}

std::vector<Tensor> TransformerEncoderLayer::parameters() const {
  std::vector<Tensor> p = attn.parameters();
  for (const Module* m : std::initializer_list<const Module*>{&ff1, &ff2, &norm1, &norm2})
    for (auto& t : m->parameters()) p.push_back(t);
  return p;
}

void TransformerEncoderLayer::train(bool on) {
  training_ = on;
  drop.train(on);
}

// ---- losses ------------------------------------------------------------------

static Tensor masked_nll(const Tensor& logits, const Tensor& labels, const Tensor& valid, loc w) {
  int64_t C = logits.shape().back();
  Tensor safe = where(valid, labels, zeros({}, DType::i32, w), w);
  Tensor picked = sum(mul(log_softmax(logits, -1, w), one_hot(safe, C, DType::f32, w), w), {-1},
                      false, w);
  Tensor weight = cast(valid, DType::f32, w);
  Tensor total = neg(sum(mul(picked, weight, w), {}, false, w), w);
  Tensor count = maximum(sum(weight, {}, false, w), constant(1.0, DType::f32, w), w);
  return div(total, count, w);
}

static void check_ce(const Tensor& logits, const Tensor& labels, loc w) {
  need(logits, "cross_entropy", w);
  need(labels, "cross_entropy", w);
  if (logits.dtype() != DType::f32) misuse("cross_entropy needs f32 logits", w);
  if (labels.dtype() != DType::i32) misuse("cross_entropy needs i32 labels", w);
  Shape lead(logits.shape().begin(), logits.shape().end() - (logits.rank() ? 1 : 0));
  if (logits.rank() < 1 || lead != labels.shape())
    throw ShapeError("cross_entropy", logits.shape(), labels.shape(), w.file_name(), w.line(),
                     "labels must have the logits' shape without the class axis");
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int64_t ignore_index, loc w) {
  check_ce(logits, labels, w);
  Tensor valid = ne(labels, constant(static_cast<double>(ignore_index), DType::i32, w), w);
  return masked_nll(logits, labels, valid, w);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& mask, loc w) {
  check_ce(logits, labels, w);
  need(mask, "cross_entropy", w);
  if (mask.dtype() != DType::b8) misuse("cross_entropy: mask must be b8", w);
  if (mask.shape() != labels.shape())
    throw ShapeError("cross_entropy", mask.shape(), labels.shape(), w.file_name(), w.line(),
                     "mask must have the labels' shape");
  return masked_nll(logits, labels, mask, w);
}

Tensor mse_loss(const Tensor& prediction, const Tensor& target, loc w) {
  need(prediction, "mse_loss", w);
  need(target, "mse_loss", w);
  if (prediction.shape() != target.shape())
    throw ShapeError("mse_loss", prediction.shape(), target.shape(), w.file_name(), w.line(),
                     "prediction and target shapes differ");
  Tensor d = sub(prediction, target, w);
  return mean(mul(d, d, w), {}, false, w);
}

}  // namespace tc::nn
