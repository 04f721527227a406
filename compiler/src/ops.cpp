// Public ops: argument checks, shape/dtype inference, node creation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <numeric>
#include <sstream>

#include "ir.h"
#include "ops_internal.h"

namespace tc {

using namespace detail;
using loc = std::source_location;

const char* dtype_name(DType d) {
  static constexpr const char* kNames[] = {"f32", "i32", "b8"};  // by DType
  return static_cast<size_t>(d) < std::size(kNames) ? kNames[static_cast<size_t>(d)] : "?";
}

int64_t dtype_size(DType d) { return d == DType::b8 ? 1 : 4; }

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

namespace detail {

const char* op_name(Op op) {
  static constexpr const char* names[] = {
      "data", "fill", "random", "arange", "neg", "relu", "tanh", "sigmoid", "exp", "log", "sqrt",
      "rsqrt", "abs", "not", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "lt", "le",
      "gt", "ge", "eq", "ne", "where", "sum", "max", "matmul", "reshape", "permute", "broadcast",
      "slice", "concat", "gather", "scatter_add", "one_hot", "cast", "all_reduce_mean", "attention", "attention_grad", "layer_norm", "layer_norm_grad"};
  static_assert(sizeof(names) / sizeof(names[0]) == kOpCount, "op_name table out of sync with Op");
  return names[static_cast<int>(op)];
}

std::string site(const loc& w) { return std::string(w.file_name()) + ":" + std::to_string(w.line()); }

[[noreturn]] void misuse(const std::string& what, const loc& w) {
  throw Error("tc: " + what + " at " + site(w));
}

const NodePtr& need(const Tensor& t, const char* op, const loc& w) {
  if (!t.defined()) misuse(std::string(op) + ": empty tc::Tensor argument", w);
  return t.node();
}

void need_dtype(const Tensor& t, std::initializer_list<DType> ok, const char* op, const loc& w) {
  DType d = t.dtype();
  for (DType o : ok)
    if (o == d) return;
  std::string list;
  for (DType o : ok) list += (list.empty() ? "" : " or ") + std::string(dtype_name(o));
  misuse(std::string(op) + " needs a " + list + " tensor, got " + dtype_name(d), w);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op, const loc& w) {
  std::size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(op, a, b, w.file_name(), w.line(), "not broadcastable");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t norm_axis(int64_t axis, int64_t rank, const char* op, const Shape& s, const loc& w) {
  if (axis < -rank || axis >= rank)
    throw ShapeError(op, s, Shape{axis}, w.file_name(), w.line(), "axis out of range");
  return axis < 0 ? axis + rank : axis;
}

Tensor constant(double v, DType dt, const loc& w) {
  Attrs a;
  a.scalar = v;
  return wrap(make_node(Op::Fill, dt, {}, {}, a, w));
}

Tensor unary(Op op, const Tensor& x, DType out, const loc& w) {
  auto n = need(x, op_name(op), w);
  return wrap(make_node(op, out, n->shape, {n}, {}, w));
}

Tensor binary(Op op, const Tensor& a, const Tensor& b, const loc& w) {
  auto na = need(a, op_name(op), w);
  auto nb = need(b, op_name(op), w);
  bool compare = op >= Op::Lt && op <= Op::Ne;
  if (na->dtype != nb->dtype)
    misuse(std::string(op_name(op)) + " of " + dtype_name(na->dtype) + " and " +
               dtype_name(nb->dtype) + " tensors (cast one first)",
           w);
  if (!compare && na->dtype == DType::b8)
    misuse(std::string(op_name(op)) + " is not defined on b8 masks (cast first)", w);
  if (op == Op::Pow && na->dtype != DType::f32) misuse("pow needs f32 tensors", w);
  Shape s = broadcast_shapes(na->shape, nb->shape, op_name(op), w);
  return wrap(make_node(op, compare ? DType::b8 : na->dtype, s, {na, nb}, {}, w));
}

Tensor binary(Op op, const Operand& a, const Operand& b) {
  const loc& w = a.is_scalar ? b.where : a.where;
  if (a.is_scalar && b.is_scalar) misuse(std::string(op_name(op)) + " of two scalars", w);
  Tensor ta = a.is_scalar ? constant(a.scalar, need(b.tensor, op_name(op), w)->dtype, w) : a.tensor;
  Tensor tb = b.is_scalar ? constant(b.scalar, need(a.tensor, op_name(op), w)->dtype, w) : b.tensor;
  return binary(op, ta, tb, w);
}

Tensor reduce(Op op, const Tensor& x, std::vector<int64_t> axes, bool keepdim, const loc& w) {
  auto n = need(x, op_name(op), w);
  if (n->dtype == DType::b8) misuse(std::string(op_name(op)) + " of a b8 mask (cast first)", w);
  int64_t r = static_cast<int64_t>(n->shape.size());
  if (axes.empty()) {
    axes.resize(static_cast<std::size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (auto& a : axes) a = norm_axis(a, r, op_name(op), n->shape, w);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    bool red = std::binary_search(axes.begin(), axes.end(), i);
    if (!red) out.push_back(n->shape[static_cast<std::size_t>(i)]);
    else if (keepdim) out.push_back(1);
    if (red && n->shape[static_cast<std::size_t>(i)] == 0 && op == Op::Max)
      throw ShapeError("max", n->shape, Shape{i}, w.file_name(), w.line(), "max over an empty axis");
  }
  Attrs a;
  a.ints = axes;
  a.flag = keepdim;
  return wrap(make_node(op, n->dtype, out, {n}, a, w));
}

Tensor reshape_node(const Tensor& x, Shape shape, const loc& w) {
  auto n = need(x, "reshape", w);
  int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) infer = static_cast<int64_t>(i);
    else if (shape[i] < 0)
      throw ShapeError("reshape", n->shape, shape, w.file_name(), w.line(), "bad dimension");
    else known *= shape[i];
  }
  if (infer >= 0) {
    if (known == 0 || n->numel() % known != 0)
      throw ShapeError("reshape", n->shape, shape, w.file_name(), w.line(), "cannot infer -1");
    shape[static_cast<std::size_t>(infer)] = n->numel() / known;
  }
  if (numel(shape) != n->numel())
    throw ShapeError("reshape", n->shape, shape, w.file_name(), w.line(),
                     "element counts differ");
  if (shape == n->shape) return x;
  return wrap(make_node(Op::Reshape, n->dtype, shape, {n}, {}, w));
}

// Sums g down to `target` (the reverse of broadcasting).
Tensor sum_to(const Tensor& g, const Shape& target, const loc& w) {
  const Shape& s = g.shape();
  if (s == target) return g;
  std::size_t lead = s.size() - target.size();
  std::vector<int64_t> axes;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  Tensor r = axes.empty() ? g : reduce(Op::Sum, g, axes, true, w);
  return reshape_node(r, target, w);
}

}  // namespace detail

// ---- creation ------------------------------------------------------------

namespace {
template <typename T>
Tensor host_data(std::span<const T> data, Shape shape, std::string_view name, DType dt,
                 const loc& w) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError("from_host", shape, {}, w.file_name(), w.line(), "negative dimension");
  if (static_cast<int64_t>(data.size()) != numel(shape))
    throw ShapeError("from_host", shape, Shape{static_cast<int64_t>(data.size())}, w.file_name(),
                     w.line(), "the data holds a different number of elements");
  auto buf = allocate(static_cast<int64_t>(data.size_bytes()), Category::input);
  if (!data.empty()) buf->copy_from_host(data.data(), data.size_bytes());
  return wrap(make_data_node(std::move(buf), dt, std::move(shape), w, std::string(name)));
}
}  // namespace

Tensor from_host(std::span<const float> data, Shape shape, std::string_view name, loc w) {
  return host_data(data, std::move(shape), name, DType::f32, w);
}
Tensor from_host(std::span<const int32_t> data, Shape shape, std::string_view name, loc w) {
  return host_data(data, std::move(shape), name, DType::i32, w);
}

Tensor full(Shape shape, double value, DType dtype, loc w) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError("full", shape, {}, w.file_name(), w.line(), "negative dimension");
  Attrs a;
  a.scalar = value;
  return wrap(make_node(Op::Fill, dtype, std::move(shape), {}, a, w));
}
Tensor zeros(Shape shape, DType dtype, loc w) { return full(std::move(shape), 0.0, dtype, w); }
Tensor ones(Shape shape, DType dtype, loc w) { return full(std::move(shape), 1.0, dtype, w); }

static Tensor random(Shape shape, uint64_t seed, int kind, const loc& w) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError("random", shape, {}, w.file_name(), w.line(), "negative dimension");
  Attrs a;
  a.seed = seed;
  a.ints = {kind};
  return wrap(make_node(Op::Random, DType::f32, std::move(shape), {}, a, w));
}
Tensor randn(Shape shape, uint64_t seed, loc w) { return random(std::move(shape), seed, 0, w); }
Tensor rand(Shape shape, uint64_t seed, loc w) { return random(std::move(shape), seed, 1, w); }

Tensor arange(double start, double end, double step, DType dtype, loc w) {
  if (step == 0 || dtype == DType::b8) misuse("arange needs a nonzero step and f32 or i32", w);
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  Attrs a;
  a.scalar = start;
  a.scalar2 = step;
  return wrap(make_node(Op::Arange, dtype, {n}, {}, a, w));
}
Tensor arange(int64_t n, DType dtype, loc w) {
  return arange(0.0, static_cast<double>(n), 1.0, dtype, w);
}

// ---- elementwise -----------------------------------------------------------

Tensor operator+(const Operand& a, const Operand& b) { return binary(Op::Add, a, b); }
Tensor operator-(const Operand& a, const Operand& b) { return binary(Op::Sub, a, b); }
Tensor operator*(const Operand& a, const Operand& b) { return binary(Op::Mul, a, b); }
Tensor operator/(const Operand& a, const Operand& b) { return binary(Op::Div, a, b); }
Tensor operator<(const Operand& a, const Operand& b) { return binary(Op::Lt, a, b); }
Tensor operator<=(const Operand& a, const Operand& b) { return binary(Op::Le, a, b); }
Tensor operator>(const Operand& a, const Operand& b) { return binary(Op::Gt, a, b); }
Tensor operator>=(const Operand& a, const Operand& b) { return binary(Op::Ge, a, b); }
Tensor operator-(const Operand& a) {
  if (a.is_scalar) misuse("negation of a scalar operand", a.where);
  return neg(a.tensor, a.where);
}

Tensor add(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Add, a, b, w); }
Tensor sub(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Sub, a, b, w); }
Tensor mul(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Mul, a, b, w); }
Tensor div(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Div, a, b, w); }
Tensor pow(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Pow, a, b, w); }
Tensor pow(const Tensor& a, double e, loc w) {
  return binary(Op::Pow, a, constant(e, need(a, "pow", w)->dtype, w), w);
}
Tensor maximum(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Maximum, a, b, w); }
Tensor minimum(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Minimum, a, b, w); }
Tensor lt(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Lt, a, b, w); }
Tensor le(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Le, a, b, w); }
Tensor gt(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Gt, a, b, w); }
Tensor ge(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Ge, a, b, w); }
Tensor eq(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Eq, a, b, w); }
Tensor ne(const Tensor& a, const Tensor& b, loc w) { return binary(Op::Ne, a, b, w); }

Tensor logical_not(const Tensor& m, loc w) {
  need(m, "logical_not", w);
  need_dtype(m, {DType::b8}, "logical_not", w);
  return unary(Op::Not, m, DType::b8, w);
}

Tensor where(const Tensor& c, const Tensor& a, const Tensor& b, loc w) {
  auto nc = need(c, "where", w);
  auto na = need(a, "where", w);
  auto nb = need(b, "where", w);
  need_dtype(c, {DType::b8}, "where (condition)", w);
  if (na->dtype != nb->dtype)
    misuse(std::string("where of ") + dtype_name(na->dtype) + " and " + dtype_name(nb->dtype), w);
  Shape s = broadcast_shapes(broadcast_shapes(nc->shape, na->shape, "where", w), nb->shape,
                             "where", w);
  return wrap(make_node(Op::Where, na->dtype, s, {nc, na, nb}, {}, w));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, loc w) {
  need(x, "masked_fill", w);
  return where(mask, constant(value, x.dtype(), w), x, w);
}

#define TC_UNARY_F32(fn, OP)                              \
  Tensor fn(const Tensor& x, loc w) {                     \
    need(x, #fn, w);                                      \
    need_dtype(x, {DType::f32}, #fn, w);                  \
    return unary(Op::OP, x, DType::f32, w);               \
  }
TC_UNARY_F32(relu, Relu)
TC_UNARY_F32(tanh, Tanh)
TC_UNARY_F32(sigmoid, Sigmoid)
TC_UNARY_F32(exp, Exp)
TC_UNARY_F32(log, Log)
TC_UNARY_F32(sqrt, Sqrt)
TC_UNARY_F32(rsqrt, Rsqrt)
#undef TC_UNARY_F32

Tensor neg(const Tensor& x, loc w) {
  need(x, "neg", w);
  need_dtype(x, {DType::f32, DType::i32}, "neg", w);
  return unary(Op::Neg, x, x.dtype(), w);
}
Tensor abs(const Tensor& x, loc w) {
  need(x, "abs", w);
  need_dtype(x, {DType::f32, DType::i32}, "abs", w);
  return unary(Op::Abs, x, x.dtype(), w);
}
Tensor square(const Tensor& x, loc w) { return mul(x, x, w); }

Tensor gelu(const Tensor& x, loc w) {
  need(x, "gelu", w);
  need_dtype(x, {DType::f32}, "gelu", w);
  auto c = [&](double v) { return constant(v, DType::f32, w); };
  const double k = std::sqrt(2.0 / M_PI);
  Tensor cube = mul(mul(x, x, w), x, w);
  Tensor inner = mul(add(x, mul(cube, c(0.044715), w), w), c(k), w);
  return mul(mul(x, c(0.5), w), add(tanh(inner, w), c(1.0), w), w);
}

// ---- reductions ------------------------------------------------------------

Tensor sum(const Tensor& x, std::vector<int64_t> axes, bool keepdim, loc w) {
  return reduce(Op::Sum, x, std::move(axes), keepdim, w);
}
Tensor max(const Tensor& x, std::vector<int64_t> axes, bool keepdim, loc w) {
  return reduce(Op::Max, x, std::move(axes), keepdim, w);
}
Tensor mean(const Tensor& x, std::vector<int64_t> axes, bool keepdim, loc w) {
  need(x, "mean", w);
  need_dtype(x, {DType::f32}, "mean", w);
  Tensor s = reduce(Op::Sum, x, axes, keepdim, w);
  int64_t count = x.numel() / std::max<int64_t>(1, s.numel());
  if (s.numel() == 0) count = 1;
  return mul(s, constant(1.0 / static_cast<double>(std::max<int64_t>(count, 1)), DType::f32, w), w);
}

Tensor softmax(const Tensor& x, int64_t axis, loc w) {
  need(x, "softmax", w);
  need_dtype(x, {DType::f32}, "softmax", w);
  axis = norm_axis(axis, x.rank(), "softmax", x.shape(), w);
  Tensor m = max(x, {axis}, true, w);
  Tensor e = exp(sub(x, m, w), w);
  return div(e, sum(e, {axis}, true, w), w);
}

Tensor log_softmax(const Tensor& x, int64_t axis, loc w) {
  need(x, "log_softmax", w);
  need_dtype(x, {DType::f32}, "log_softmax", w);
  axis = norm_axis(axis, x.rank(), "log_softmax", x.shape(), w);
  Tensor z = sub(x, max(x, {axis}, true, w), w);
  return sub(z, log(sum(exp(z, w), {axis}, true, w), w), w);
}

// ---- matmul ----------------------------------------------------------------

Tensor matmul(const Tensor& a, const Tensor& b, loc w) {
  auto na = need(a, "matmul", w);
  auto nb = need(b, "matmul", w);
  need_dtype(a, {DType::f32}, "matmul", w);
  need_dtype(b, {DType::f32}, "matmul", w);
  const Shape &sa = na->shape, &sb = nb->shape;
  if (sa.size() < 2 || sb.size() < 2)
    throw ShapeError("matmul", sa, sb, w.file_name(), w.line(), "operands need rank >= 2");
  if (sa.back() != sb[sb.size() - 2])
    throw ShapeError("matmul", sa, sb, w.file_name(), w.line(), "inner dimensions differ");
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  if (sb.size() == 2 && sa.size() > 2) {
    // [..., m, k] x [k, n]: one [rows, k] x [k, n] product, so its gradient
    // with respect to b is one product over all rows too (a batched product
    // would make one gradient per batch element and then sum them).
    Shape lead(sa.begin(), sa.end() - 1);
    Tensor flat = matmul(a.reshape({numel(lead), sa.back()}, w), b, w);
    lead.push_back(sb.back());
    return flat.reshape(lead, w);
  }
  Shape out = broadcast_shapes(ba, bb, "matmul", w);
  out.push_back(sa[sa.size() - 2]);
  out.push_back(sb.back());
  return wrap(make_node(Op::MatMul, DType::f32, out, {na, nb}, {}, w));
}

// ---- attention ----------------------------------------------------------------

Tensor self_attention(const Tensor& qkv, int64_t heads, const Tensor& mask, loc w) {
  auto n = need(qkv, "self_attention", w);
  need_dtype(qkv, {DType::f32}, "self_attention", w);
  const Shape& s = n->shape;
  if (s.size() != 3 || heads <= 0 || s[2] % (3 * heads) != 0 || s[2] == 0)
    throw ShapeError("self_attention", s, Shape{heads}, w.file_name(), w.line(),
                     "qkv must be [batch, seq, 3 * heads * head_dim]");
  int64_t D = s[2] / 3;
  std::vector<NodePtr> ins{n};
  if (mask.defined()) {
    if (mask.dtype() != DType::b8) misuse("self_attention: key_padding_mask must be b8 (true = padding)", w);
    if (mask.shape() != Shape{s[0], s[1]})
      throw ShapeError("self_attention", mask.shape(), Shape{s[0], s[1]}, w.file_name(), w.line(),
                       "key_padding_mask must be [batch, seq]");
    ins.push_back(mask.node());
  }
  Attrs a;
  a.ints = {heads};
  a.scalar = 1.0 / std::sqrt(static_cast<double>(D / heads));
  return wrap(make_node(Op::Attention, DType::f32, {s[0], s[1], D}, ins, a, w));
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, loc w) {
  auto n = need(x, "layer_norm", w);
  auto ng = need(gamma, "layer_norm", w);
  auto nb = need(beta, "layer_norm", w);
  need_dtype(x, {DType::f32}, "layer_norm", w);
  need_dtype(gamma, {DType::f32}, "layer_norm (gamma)", w);
  need_dtype(beta, {DType::f32}, "layer_norm (beta)", w);
  if (n->shape.empty() || ng->shape != Shape{n->shape.back()} || nb->shape != ng->shape)
    throw ShapeError("layer_norm", n->shape, ng->shape, w.file_name(), w.line(),
                     "gamma and beta must be [D], D the input's last dimension");
  if (!(eps > 0)) misuse("layer_norm needs eps > 0", w);
  Attrs a;
  a.scalar = eps;
  return wrap(make_node(Op::LayerNorm, DType::f32, n->shape, {n, ng, nb}, a, w));
}

// ---- movement ---------------------------------------------------------------

Tensor Tensor::reshape(Shape shape, loc w) const { return reshape_node(*this, std::move(shape), w); }

Tensor permute(const Tensor& x, std::vector<int64_t> perm, loc w) {
  auto n = need(x, "permute", w);
  int64_t r = static_cast<int64_t>(n->shape.size());
  if (static_cast<int64_t>(perm.size()) != r)
    throw ShapeError("permute", n->shape, perm, w.file_name(), w.line(), "perm length != rank");
  std::vector<bool> used(static_cast<std::size_t>(r), false);
  Shape out;
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    int64_t p = norm_axis(perm[i], r, "permute", n->shape, w);
    if (used[static_cast<std::size_t>(p)])
      throw ShapeError("permute", n->shape, perm, w.file_name(), w.line(), "repeated axis");
    used[static_cast<std::size_t>(p)] = true;
    perm[i] = p;
    identity = identity && p == static_cast<int64_t>(i);
    out.push_back(n->shape[static_cast<std::size_t>(p)]);
  }
  if (identity) return x;
  Attrs a;
  a.ints = perm;
  return wrap(make_node(Op::Permute, n->dtype, out, {n}, a, w));
}

Tensor transpose(const Tensor& x, int64_t a0, int64_t a1, loc w) {
  need(x, "transpose", w);
  int64_t r = x.rank();
  a0 = norm_axis(a0, r, "transpose", x.shape(), w);
  a1 = norm_axis(a1, r, "transpose", x.shape(), w);
  std::vector<int64_t> perm(static_cast<std::size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<std::size_t>(a0)], perm[static_cast<std::size_t>(a1)]);
  return permute(x, perm, w);
}

Tensor broadcast_to(const Tensor& x, Shape shape, loc w) {
  auto n = need(x, "broadcast_to", w);
  if (n->shape == shape) return x;
  Shape b = broadcast_shapes(n->shape, shape, "broadcast_to", w);
  if (b != shape)
    throw ShapeError("broadcast_to", n->shape, shape, w.file_name(), w.line(),
                     "cannot broadcast to the target");
  return wrap(make_node(Op::Broadcast, n->dtype, std::move(shape), {n}, {}, w));
}

Tensor unsqueeze(const Tensor& x, int64_t axis, loc w) {
  need(x, "unsqueeze", w);
  Shape s = x.shape();
  axis = norm_axis(axis, static_cast<int64_t>(s.size()) + 1, "unsqueeze", s, w);
  s.insert(s.begin() + axis, 1);
  return reshape_node(x, s, w);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, loc w) {
  auto n = need(x, "slice", w);
  axis = norm_axis(axis, static_cast<int64_t>(n->shape.size()), "slice", n->shape, w);
  int64_t d = n->shape[static_cast<std::size_t>(axis)];
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (start < 0 || end > d || start > end)
    throw ShapeError("slice", n->shape, Shape{axis, start, end}, w.file_name(), w.line(),
                     "range [start, end) outside the axis");
  if (start == 0 && end == d) return x;
  Shape out = n->shape;
  out[static_cast<std::size_t>(axis)] = end - start;
  Attrs a;
  a.ints = {axis, start, end};
  return wrap(make_node(Op::Slice, n->dtype, out, {n}, a, w));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis, loc w) {
  if (xs.empty()) misuse("concat of no tensors", w);
  std::vector<NodePtr> ins;
  for (auto& t : xs) ins.push_back(need(t, "concat", w));
  Shape out = ins[0]->shape;
  axis = norm_axis(axis, static_cast<int64_t>(out.size()), "concat", out, w);
  for (std::size_t i = 1; i < ins.size(); ++i) {
    const Shape& s = ins[i]->shape;
    if (ins[i]->dtype != ins[0]->dtype) misuse("concat of tensors with different dtypes", w);
    bool ok = s.size() == out.size();
    for (std::size_t k = 0; ok && k < s.size(); ++k)
      ok = static_cast<int64_t>(k) == axis || s[k] == out[k];
    if (!ok)
      throw ShapeError("concat", ins[0]->shape, s, w.file_name(), w.line(),
                       "shapes differ outside the concat axis");
    out[static_cast<std::size_t>(axis)] += s[static_cast<std::size_t>(axis)];
  }
  if (ins.size() == 1) return xs[0];
  Attrs a;
  a.ints = {axis};
  return wrap(make_node(Op::Concat, ins[0]->dtype, out, ins, a, w));
}

Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis, loc w) {
  auto n = need(x, "gather", w);
  auto ni = need(indices, "gather", w);
  need_dtype(indices, {DType::i32}, "gather (indices)", w);
  axis = norm_axis(axis, static_cast<int64_t>(n->shape.size()), "gather", n->shape, w);
  Shape out(n->shape.begin(), n->shape.begin() + axis);
  out.insert(out.end(), ni->shape.begin(), ni->shape.end());
  out.insert(out.end(), n->shape.begin() + axis + 1, n->shape.end());
  Attrs a;
  a.ints = {axis};
  return wrap(make_node(Op::Gather, n->dtype, out, {n, ni}, a, w));
}

Tensor embedding(const Tensor& table, const Tensor& ids, loc w) {
  need(table, "embedding", w);
  if (table.rank() != 2)
    throw ShapeError("embedding", table.shape(), ids.defined() ? ids.shape() : Shape{},
                     w.file_name(), w.line(), "the table must be [num, dim]");
  return gather(table, ids, 0, w);
}

Tensor one_hot(const Tensor& ids, int64_t depth, DType dtype, loc w) {
  auto n = need(ids, "one_hot", w);
  need_dtype(ids, {DType::i32}, "one_hot", w);
  if (depth <= 0) misuse("one_hot needs depth > 0", w);
  Shape out = n->shape;
  out.push_back(depth);
  Attrs a;
  a.ints = {depth};
  return wrap(make_node(Op::OneHot, dtype, out, {n}, a, w));
}

Tensor cast(const Tensor& x, DType dtype, loc w) {
  auto n = need(x, "cast", w);
  if (n->dtype == dtype) return x;
  return wrap(make_node(Op::Cast, dtype, n->shape, {n}, {}, w));
}

Tensor dropout(const Tensor& x, double p, uint64_t seed, loc w) {
  need(x, "dropout", w);
  need_dtype(x, {DType::f32}, "dropout", w);
  if (p < 0 || p >= 1) misuse("dropout needs 0 <= p < 1", w);
  if (p == 0) return x;
  // The seed is a device input, not an attribute: a new seed every step keeps
  // the step's graph (and its compiled code) the same.
  auto buf = allocate(2 * sizeof(int32_t), Category::other);
  const int32_t halves[2] = {static_cast<int32_t>(static_cast<uint32_t>(seed)),
                             static_cast<int32_t>(static_cast<uint32_t>(seed >> 32))};
  buf->copy_from_host(halves, sizeof halves);
  NodePtr seed_node = make_data_node(std::move(buf), DType::i32, {2}, w);
  Attrs a;
  a.ints = {1};
  Tensor r = wrap(make_node(Op::Random, DType::f32, x.shape(), {seed_node}, a, w));
  Tensor keep = ge(r, constant(p, DType::f32, w), w);
  return where(keep, mul(x, constant(1.0 / (1.0 - p), DType::f32, w), w),
               constant(0.0, DType::f32, w), w);
}

}  // namespace tc
