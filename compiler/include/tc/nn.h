// tc/nn.h: modules and losses built from tc ops.
//
// Parameters are created materialized (category parameter) from a
// deterministic host-side initializer: seed a module explicitly, or it takes
// the next seed of tc::nn::manual_seed's counter. Modules are cheap handles
// (copies share parameters).
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "tc/tensor.h"

namespace tc::nn {

// Restart the seed counter modules use when not given a seed.
void manual_seed(uint64_t seed);

class Module {
 public:
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x, SourceLocation where) = 0;
  virtual std::vector<Tensor> parameters() const { return {}; }
  virtual void train(bool on) { training_ = on; }
  bool training() const { return training_; }
  Tensor operator()(const Tensor& x, TC_HERE) { return forward(x, where); }

 protected:
  bool training_ = true;
};

class Linear : public Module {
 public:
  // weight [in, out] (x @ weight + bias), uniform(-1/sqrt(in), 1/sqrt(in)).
  Linear(int64_t in_features, int64_t out_features, bool bias = true,
         std::optional<uint64_t> seed = std::nullopt);
  Tensor forward(const Tensor& x, SourceLocation where) override;
  std::vector<Tensor> parameters() const override;
  Tensor weight, bias;  // bias undefined when bias == false
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, std::optional<uint64_t> seed = std::nullopt);
  Tensor forward(const Tensor& ids, SourceLocation where) override;  // ids i32
  std::vector<Tensor> parameters() const override { return {weight}; }
  Tensor weight;  // [num_embeddings, dim], N(0, 1)
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  Tensor forward(const Tensor& x, SourceLocation where) override;  // over the last axis
  std::vector<Tensor> parameters() const override { return {gamma, beta}; }
  Tensor gamma, beta;
  double eps;
};

class Dropout : public Module {
 public:
  // Each call draws a new mask (seed, seed+1, ...); identity when !training().
  explicit Dropout(double p, std::optional<uint64_t> seed = std::nullopt);
  Tensor forward(const Tensor& x, SourceLocation where) override;
  double p;

 private:
  uint64_t next_seed_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x, SourceLocation where) override { return relu(x, where); }
};
class GELU : public Module {
 public:
  Tensor forward(const Tensor& x, SourceLocation where) override { return gelu(x, where); }
};
class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x, SourceLocation where) override { return tanh(x, where); }
};

class Sequential : public Module {
 public:
  Sequential() = default;
  template <typename... M>
    requires(sizeof...(M) > 0 && (std::derived_from<M, Module> && ...))
  explicit Sequential(M... modules) {
    (push(std::make_shared<M>(std::move(modules))), ...);
  }
  void push(std::shared_ptr<Module> m) { modules_.push_back(std::move(m)); }
  Tensor forward(const Tensor& x, SourceLocation where) override;
  std::vector<Tensor> parameters() const override;
  void train(bool on) override;
  std::size_t size() const { return modules_.size(); }
  Module& operator[](std::size_t i) { return *modules_[i]; }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

// Multi-head self-attention over x [B, T, D].
// key_padding_mask: b8 [B, T], true where the position is padding (ignored as
// a key), as in PyTorch.
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t dim, int64_t heads, std::optional<uint64_t> seed = std::nullopt);
  Tensor forward(const Tensor& x, SourceLocation where) override { return attend(x, Tensor{}, where); }
  Tensor attend(const Tensor& x, const Tensor& key_padding_mask, TC_HERE);
  std::vector<Tensor> parameters() const override;
  int64_t dim, heads;
  Linear q, k, v, out;

 private:
  MultiHeadAttention(int64_t dim, int64_t heads, uint64_t seed, int);
};

// Post-norm encoder layer (PyTorch's default): x = norm1(x + attn(x));
// x = norm2(x + ff(x)), ff = Linear(dim, ff) -> relu -> Linear(ff, dim).
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t dim, int64_t heads, int64_t ff_dim, double dropout = 0.0,
                          std::optional<uint64_t> seed = std::nullopt);
  Tensor forward(const Tensor& x, SourceLocation where) override { return encode(x, Tensor{}, where); }
  Tensor encode(const Tensor& x, const Tensor& key_padding_mask, TC_HERE);
  std::vector<Tensor> parameters() const override;
  void train(bool on) override;
  MultiHeadAttention attn;
  Linear ff1, ff2;
  LayerNorm norm1, norm2;
  Dropout drop;

 private:
  TransformerEncoderLayer(int64_t dim, int64_t heads, int64_t ff_dim, double dropout, uint64_t seed,
                          int);
};

// logits [..., C] f32, labels [...] i32. Mean over labels != ignore_index.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int64_t ignore_index = -100, TC_HERE);
// Same, counting only positions where mask (b8, labels' shape) is true.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& mask, TC_HERE);
Tensor mse_loss(const Tensor& prediction, const Tensor& target, TC_HERE);

}  // namespace tc::nn
