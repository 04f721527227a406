// tc/tensor.h: lazy tensors and the ops that build the pending graph.
//
// A Tensor is a handle to a node of the pending graph (op, inputs, shape,
// dtype, attributes, the caller's source location). Building ops runs
// nothing. Values appear at a cut:
//   - tc::mark_step() materializes every live tensor (one graph per step);
//   - item(), to_host() and printing a pending tensor are explicit
//     evaluations: the subgraph it needs is cut and run on the spot.
// After a cut the same calls are free. TC_EAGER=1 runs every op at once.
//
// Every public function takes a defaulted std::source_location so graph
// nodes and errors point at the user's line. The API is single-threaded:
// build and cut graphs from one thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tc/error.h"

namespace tc {

enum class DType : uint8_t { f32, i32, b8 };
inline constexpr DType f32 = DType::f32;
inline constexpr DType i32 = DType::i32;
inline constexpr DType b8 = DType::b8;  // boolean / mask (one byte per element)
const char* dtype_name(DType d);
int64_t dtype_size(DType d);

int64_t numel(const Shape& s);
std::string to_string(const Shape& s);  // "[2, 3]"

using SourceLocation = std::source_location;
#define TC_HERE ::tc::SourceLocation where = ::tc::SourceLocation::current()

namespace detail {
struct TensorImpl;
struct Node;
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;  // an empty handle; using it throws tc::Error

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the back
  int64_t numel() const;
  const std::string& name() const;
  Category category() const;
  void set_category(Category c);  // e.g. mark a hand-made tensor as a parameter
  // True when the value exists on the device (no evaluation needed).
  bool is_materialized() const;

  // Explicit evaluations when pending; free once materialized.
  float item(TC_HERE) const;                          // needs numel() == 1
  std::vector<float> to_host(TC_HERE) const;          // any dtype, as float
  std::vector<int32_t> to_host_i32(TC_HERE) const;    // i32 / b8 tensors

  Tensor reshape(Shape shape, TC_HERE) const;  // one dim may be -1

  // In-place update: this handle (and every copy of it) now refers to
  // `value`, lazily. Shapes and dtypes must match. Optimizers use it so that
  // parameters keep their identity across mark_step().
  void assign(const Tensor& value, TC_HERE);

  // Internal.
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  const std::shared_ptr<detail::Node>& node() const;

 private:
  std::shared_ptr<detail::TensorImpl> impl_;
};

// An operand of an arithmetic operator: a tensor or a scalar, with the call
// site of the expression (operators cannot take default arguments).
struct Operand {
  Operand(const Tensor& t, SourceLocation w = SourceLocation::current()) : tensor(t), where(w) {}
  Operand(double v, SourceLocation w = SourceLocation::current())
      : scalar(v), is_scalar(true), where(w) {}
  Tensor tensor;
  double scalar = 0;
  bool is_scalar = false;
  SourceLocation where;
};

// Printing a pending tensor is an explicit evaluation (kind "print").
struct Printable {
  Printable(const Tensor& t, SourceLocation w = SourceLocation::current()) : tensor(t), where(w) {}
  Tensor tensor;
  SourceLocation where;
};
std::ostream& operator<<(std::ostream& os, const Printable& p);

// ---- creation ------------------------------------------------------------
Tensor from_host(std::span<const float> data, Shape shape, std::string_view name = {}, TC_HERE);
Tensor from_host(std::span<const int32_t> data, Shape shape, std::string_view name = {}, TC_HERE);
// Dynamic dims (TC_DYNAMIC, docs/environment.md). By default a dim of an
// input that took two distinct sizes in graphs of one structure becomes
// symbolic at the next compilation, and one build then serves its later
// sizes (sizes 0 and 1 stay specialized). mark_dynamic makes dim `dim` of
// this input symbolic from its second size on; mark_static keeps it one
// graph per size. The mark belongs to this tensor: mark each step's input.
// Both return `t`; a dim out of range throws tc::Error.
const Tensor& mark_dynamic(const Tensor& t, int64_t dim);
const Tensor& mark_static(const Tensor& t, int64_t dim);
Tensor zeros(Shape shape, DType dtype = f32, TC_HERE);
Tensor ones(Shape shape, DType dtype = f32, TC_HERE);
Tensor full(Shape shape, double value, DType dtype = f32, TC_HERE);
Tensor randn(Shape shape, uint64_t seed, TC_HERE);  // standard normal, counter-based
Tensor rand(Shape shape, uint64_t seed, TC_HERE);   // uniform [0, 1)
Tensor arange(int64_t n, DType dtype = f32, TC_HERE);  // 0, 1, ..., n-1
Tensor arange(double start, double end, double step = 1, DType dtype = f32, TC_HERE);

// ---- elementwise (numpy broadcasting) -------------------------------------
Tensor operator+(const Operand& a, const Operand& b);
Tensor operator-(const Operand& a, const Operand& b);
Tensor operator*(const Operand& a, const Operand& b);
Tensor operator/(const Operand& a, const Operand& b);
Tensor operator-(const Operand& a);
Tensor operator<(const Operand& a, const Operand& b);  // -> b8
Tensor operator<=(const Operand& a, const Operand& b);
Tensor operator>(const Operand& a, const Operand& b);
Tensor operator>=(const Operand& a, const Operand& b);
Tensor add(const Tensor& a, const Tensor& b, TC_HERE);
Tensor sub(const Tensor& a, const Tensor& b, TC_HERE);
Tensor mul(const Tensor& a, const Tensor& b, TC_HERE);
Tensor div(const Tensor& a, const Tensor& b, TC_HERE);
Tensor pow(const Tensor& a, const Tensor& b, TC_HERE);
Tensor pow(const Tensor& a, double exponent, TC_HERE);
Tensor maximum(const Tensor& a, const Tensor& b, TC_HERE);
Tensor minimum(const Tensor& a, const Tensor& b, TC_HERE);
Tensor lt(const Tensor& a, const Tensor& b, TC_HERE);
Tensor le(const Tensor& a, const Tensor& b, TC_HERE);
Tensor gt(const Tensor& a, const Tensor& b, TC_HERE);
Tensor ge(const Tensor& a, const Tensor& b, TC_HERE);
Tensor eq(const Tensor& a, const Tensor& b, TC_HERE);
Tensor ne(const Tensor& a, const Tensor& b, TC_HERE);
Tensor logical_not(const Tensor& mask, TC_HERE);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, TC_HERE);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, TC_HERE);

Tensor neg(const Tensor& x, TC_HERE);
Tensor relu(const Tensor& x, TC_HERE);
Tensor gelu(const Tensor& x, TC_HERE);  // tanh approximation
Tensor tanh(const Tensor& x, TC_HERE);
Tensor sigmoid(const Tensor& x, TC_HERE);
Tensor exp(const Tensor& x, TC_HERE);
Tensor log(const Tensor& x, TC_HERE);
Tensor sqrt(const Tensor& x, TC_HERE);
Tensor rsqrt(const Tensor& x, TC_HERE);
Tensor abs(const Tensor& x, TC_HERE);
Tensor square(const Tensor& x, TC_HERE);

// ---- reductions (empty axes = all; negative axes count from the back) ------
Tensor sum(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false, TC_HERE);
Tensor mean(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false, TC_HERE);
Tensor max(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false, TC_HERE);
Tensor softmax(const Tensor& x, int64_t axis = -1, TC_HERE);
Tensor log_softmax(const Tensor& x, int64_t axis = -1, TC_HERE);

// ---- linear algebra: [..., M, K] x [..., K, N], batch dims broadcast -------
Tensor matmul(const Tensor& a, const Tensor& b, TC_HERE);

// Multi-head scaled dot-product self-attention, one fused op (forward and
// backward), over a packed projection:
//   qkv  f32 [B, T, 3 * D], the last axis [q | k | v], each D = heads * Dh
//        wide with head h at [h * Dh, (h + 1) * Dh);
//   key_padding_mask  undefined, or b8 [B, T]: true marks a key that is
//        padding (its score is set to -1e9 before the softmax, as
//        masked_fill would; a row whose keys are all padding averages them).
// Returns [B, T, D], heads side by side: for query t of head h,
//   softmax_s(q_t . k_s / sqrt(Dh)) weighted sum of v_s.
// The same values as the unfused ops (matmul, masked_fill, softmax, matmul)
// within float rounding; no [B, heads, T, T] tensor is stored, and its
// gradient recomputes the scores from qkv.
Tensor self_attention(const Tensor& qkv, int64_t heads, const Tensor& key_padding_mask = {}, TC_HERE);

// Layer normalization over the last axis, one fused op (forward and
// backward): y = (x - mean) / sqrt(var + eps) * gamma + beta, mean and the
// biased variance over the last axis of each row; x f32 [..., D], gamma and
// beta f32 [D], eps > 0. The same values as the unfused ops within float
// rounding; the gradient recomputes each row's statistics from x.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5, TC_HERE);

// ---- shape and data movement ---------------------------------------------
Tensor transpose(const Tensor& x, int64_t axis0 = -2, int64_t axis1 = -1, TC_HERE);
Tensor permute(const Tensor& x, std::vector<int64_t> perm, TC_HERE);
Tensor broadcast_to(const Tensor& x, Shape shape, TC_HERE);
Tensor unsqueeze(const Tensor& x, int64_t axis, TC_HERE);
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, TC_HERE);  // [start, end)
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0, TC_HERE);
// numpy take: out = x.shape[:axis] + indices.shape + x.shape[axis+1:]; indices i32.
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis = 0, TC_HERE);
Tensor embedding(const Tensor& table, const Tensor& ids, TC_HERE);  // gather on axis 0
Tensor one_hot(const Tensor& ids, int64_t depth, DType dtype = f32, TC_HERE);  // out of range -> 0
Tensor cast(const Tensor& x, DType dtype, TC_HERE);
// Inverted dropout: zeroes with probability p, scales the rest by 1/(1-p).
Tensor dropout(const Tensor& x, double p, uint64_t seed, TC_HERE);

// ---- autodiff ------------------------------------------------------------
// Reverse mode over the pending graph: d loss / d param for each param, as
// lazy tensors (category gradient). loss must be a one-element f32 tensor.
// A param the loss does not depend on gets zeros.
std::vector<Tensor> grad(const Tensor& loss, const std::vector<Tensor>& params, TC_HERE);

// ---- cuts ----------------------------------------------------------------
// Materializes every live pending tensor; ends the step.
void mark_step(TC_HERE);
int64_t current_step();  // number of mark_step() calls so far
// Eager mode (TC_EAGER=1 at start-up, or this switch): every op runs at once.
void set_eager(bool on);
bool eager();

}  // namespace tc
