// Reverse-mode autodiff over the pending graph. Backward nodes are ordinary
// nodes built with the public ops, so forward + backward + update form one
// graph.
#include <unordered_map>
#include <unordered_set>

#include "ir.h"
#include "ops_internal.h"

namespace tc {
namespace detail {

Tensor scatter_add(const Tensor& src, const Tensor& indices, int64_t axis, const Shape& target,
                   const std::source_location& w) {
  Attrs a;
  a.ints = {axis};
  return wrap(make_node(Op::ScatterAdd, src.dtype(), target, {src.node(), indices.node()}, a, w));
}

namespace {

Tensor as_tensor(const NodePtr& n) {
  // A handle to an existing node, not registered as live (it need not survive a cut).
  auto impl = std::make_shared<TensorImpl>();
  impl->node = n;
  return Tensor(std::move(impl));
}

// Adjoints through the ops that move or reduce elements.
void shape_backward(const Node& n, const Tensor& out, const Tensor& g, const std::vector<bool>& want, std::vector<Tensor>& r) {
  const auto& w = n.where;
  switch (n.op) {
    case Op::Sum: {
      Shape keep = n.inputs[0]->shape;
      for (int64_t a : n.attrs.ints) keep[static_cast<std::size_t>(a)] = 1;
      r[0] = broadcast_to(g.reshape(keep, w), n.inputs[0]->shape, w);
      break;
    }
    case Op::Max: {
      Shape keep = n.inputs[0]->shape;
      for (int64_t a : n.attrs.ints) keep[static_cast<std::size_t>(a)] = 1;
      Tensor m = cast(eq(as_tensor(n.inputs[0]), out.reshape(keep, w), w), DType::f32, w);
      Tensor count = sum(m, n.attrs.ints, true, w);
      r[0] = div(mul(m, g.reshape(keep, w), w), count, w);
      break;
    }
    case Op::Reshape: r[0] = g.reshape(n.inputs[0]->shape, w); break;
    case Op::Permute: {
      std::vector<int64_t> inv(n.attrs.ints.size());
      for (std::size_t i = 0; i < inv.size(); ++i)
        inv[static_cast<std::size_t>(n.attrs.ints[i])] = static_cast<int64_t>(i);
      r[0] = permute(g, inv, w);
      break;
    }
    case Op::Slice: {
      int64_t axis = n.attrs.ints[0], start = n.attrs.ints[1], end = n.attrs.ints[2];
      const Shape& xs = n.inputs[0]->shape;
      std::vector<Tensor> parts;
      Shape s = xs;
      if (start > 0) {
        s[static_cast<std::size_t>(axis)] = start;
        parts.push_back(zeros(s, g.dtype(), w));
      }
      parts.push_back(g);
      if (end < xs[static_cast<std::size_t>(axis)]) {
        s[static_cast<std::size_t>(axis)] = xs[static_cast<std::size_t>(axis)] - end;
        parts.push_back(zeros(s, g.dtype(), w));
      }
      r[0] = concat(parts, axis, w);
      break;
    }
    case Op::Concat: {
      int64_t axis = n.attrs.ints[0], at = 0;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        int64_t d = n.inputs[i]->shape[static_cast<std::size_t>(axis)];
        if (want[i]) r[i] = slice(g, axis, at, at + d, w);
        at += d;
      }
      break;
    }
    default: break;
  }
}

// Adjoints through the fused ops: each has one gradient op of its own.
void fused_backward(const Node& n, const NodePtr& self, const Tensor& g, const std::vector<bool>& want, std::vector<Tensor>& r) {
  const auto& w = n.where;
  switch (n.op) {
    case Op::Attention: {
      // One op for d qkv (scores recomputed from qkv); the mask has none.
      if (!want[0]) break;
      std::vector<NodePtr> ins{n.inputs[0], self, g.node()};
      if (n.inputs.size() > 1) ins.push_back(n.inputs[1]);
      r[0] = wrap(make_node(Op::AttentionGrad, DType::f32, n.inputs[0]->shape, ins, n.attrs, w));
      break;
    }
    case Op::LayerNorm: {
      // One op for d x, d gamma and d beta (packed as rows of [R + 2, D]).
      const Shape& xs = n.inputs[0]->shape;
      const int64_t D = xs.back(), R = D == 0 ? 0 : n.inputs[0]->numel() / D;
      Tensor packed = wrap(make_node(Op::LayerNormGrad, DType::f32, {R + 2, D}, {n.inputs[0], n.inputs[1], g.node()}, n.attrs, w));
      if (want[0]) r[0] = slice(packed, 0, 0, R, w).reshape(xs, w);
      if (want[1]) r[1] = slice(packed, 0, R, R + 1, w).reshape({D}, w);
      if (want[2]) r[2] = slice(packed, 0, R + 1, R + 2, w).reshape({D}, w);
      break;
    }
    case Op::LayerNormGrad:
      throw Error(std::string("tc::grad: a second derivative through layer_norm (") + w.file_name() + ":" +
                  std::to_string(w.line()) + ") is not supported");
    case Op::AttentionGrad:
      throw Error(std::string("tc::grad: a second derivative through self_attention (") + w.file_name() + ":" +
                  std::to_string(w.line()) + ") is not supported");
    case Op::AllReduce:
      for (bool x : want)
        if (x)
          throw Error(std::string("tc::grad: a gradient through tc::dist::all_reduce_mean (") + w.file_name() + ":" +
                      std::to_string(w.line()) + ") is not supported; average the gradients, not the loss");
      break;
    default: break;
  }
}

// Adjoints of node n's inputs given its adjoint g. Entries may be empty
// (no gradient flows to that input).
std::vector<Tensor> backward(const Node& n, const NodePtr& self, const Tensor& g,
                             const std::vector<bool>& want) {
  const auto& w = n.where;
  std::vector<Tensor> in;
  for (auto& i : n.inputs) in.push_back(as_tensor(i));
  Tensor out = as_tensor(self);
  auto c = [&](double v) { return constant(v, DType::f32, w); };
  auto fmask = [&](const Tensor& m) { return cast(m, DType::f32, w); };
  std::vector<Tensor> r(n.inputs.size());
  auto to = [&](std::size_t i, const Tensor& t) {
    if (want[i]) r[i] = sum_to(t, n.inputs[i]->shape, w);
  };
  switch (n.op) {
    case Op::Add: to(0, g); to(1, g); break;
    case Op::Sub: to(0, g); if (want[1]) to(1, neg(g, w)); break;
    case Op::Mul:
      if (want[0]) to(0, mul(g, in[1], w));
      if (want[1]) to(1, mul(g, in[0], w));
      break;
    case Op::Div:
      if (want[0]) to(0, div(g, in[1], w));
      if (want[1]) to(1, neg(div(mul(g, out, w), in[1], w), w));
      break;
    case Op::Pow:
      if (want[0]) to(0, mul(mul(g, in[1], w), pow(in[0], sub(in[1], c(1), w), w), w));
      if (want[1]) to(1, mul(mul(g, out, w), log(in[0], w), w));
      break;
    case Op::Maximum: {
      Tensor m = fmask(ge(in[0], in[1], w));
      if (want[0]) to(0, mul(g, m, w));
      if (want[1]) to(1, mul(g, sub(c(1), m, w), w));
      break;
    }
    case Op::Minimum: {
      Tensor m = fmask(le(in[0], in[1], w));
      if (want[0]) to(0, mul(g, m, w));
      if (want[1]) to(1, mul(g, sub(c(1), m, w), w));
      break;
    }
    case Op::Where: {
      Tensor z = zeros({}, g.dtype(), w);
      if (want[1]) to(1, where(in[0], g, z, w));
      if (want[2]) to(2, where(in[0], z, g, w));
      break;
    }
    case Op::Neg: to(0, neg(g, w)); break;
    // relu(x) > 0 exactly when x > 0: reading the output lets the forward fuse
    // (bias add and relu in one loop) without keeping the pre-activation.
    case Op::Relu: to(0, mul(g, fmask(gt(out, c(0), w)), w)); break;
    case Op::Tanh: to(0, mul(g, sub(c(1), mul(out, out, w), w), w)); break;
    case Op::Sigmoid: to(0, mul(g, mul(out, sub(c(1), out, w), w), w)); break;
    case Op::Exp: to(0, mul(g, out, w)); break;
    case Op::Log: to(0, div(g, in[0], w)); break;
    case Op::Sqrt: to(0, div(mul(g, c(0.5), w), out, w)); break;
    case Op::Rsqrt: to(0, mul(mul(g, c(-0.5), w), div(out, in[0], w), w)); break;
    case Op::Abs: to(0, where(ge(in[0], c(0), w), g, neg(g, w), w)); break;
    case Op::MatMul:
      if (want[0]) to(0, matmul(g, transpose(in[1], -2, -1, w), w));
      if (want[1]) to(1, matmul(transpose(in[0], -2, -1, w), g, w));
      break;
    case Op::Sum:
    case Op::Max:
    case Op::Reshape:
    case Op::Permute:
    case Op::Slice:
    case Op::Concat: shape_backward(n, out, g, want, r); break;
    case Op::Broadcast: to(0, g); break;
    case Op::Gather:
      if (want[0]) r[0] = scatter_add(g, in[1], n.attrs.ints[0], n.inputs[0]->shape, w);
      break;
    case Op::ScatterAdd:
      if (want[0]) r[0] = gather(g, in[1], n.attrs.ints[0], w);
      break;
    case Op::Cast:
      if (n.inputs[0]->dtype == DType::f32 && n.dtype == DType::f32) r[0] = g;
      break;  // casts through integers carry no gradient
    case Op::Attention:
    case Op::LayerNorm:
    case Op::AttentionGrad:
    case Op::LayerNormGrad:
    case Op::AllReduce: fused_backward(n, self, g, want, r); break;
    default: break;  // leaves, comparisons, one_hot, not: no gradient
  }
  return r;
}

}  // namespace
}  // namespace detail

using namespace detail;

std::vector<Tensor> grad(const Tensor& loss, const std::vector<Tensor>& params,
                         std::source_location where) {
  const NodePtr& root = need(loss, "grad", where);
  if (root->dtype != DType::f32 || root->numel() != 1)
    misuse("grad needs a one-element f32 loss, got " + std::string(dtype_name(root->dtype)) + " " +
               to_string(root->shape),
           where);
  std::unordered_set<Node*> targets;
  for (auto& p : params) targets.insert(need(p, "grad (parameter)", where).get());

  // Topological order of everything reachable from the loss.
  std::vector<NodePtr> order;
  std::unordered_set<Node*> seen{root.get()};
  std::vector<std::pair<NodePtr, std::size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->inputs.size()) {
      const NodePtr& in = n->inputs[i++];
      if (seen.insert(in.get()).second) stack.push_back({in, 0});
    } else {
      order.push_back(n);
      stack.pop_back();
    }
  }
  // Which nodes lead to a parameter (only those need adjoints).
  std::unordered_set<Node*> leads;
  for (auto& n : order) {
    bool l = targets.count(n.get()) > 0;
    for (auto& in : n->inputs) l = l || leads.count(in.get()) > 0;
    if (l && n->dtype == DType::f32) leads.insert(n.get());
  }
  if (leads.empty() && root->op == Op::Data && !targets.count(root.get()))
    misuse("grad of a loss from a finished graph: it was materialized by mark_step() and has no "
           "history; compute the loss again in this step",
           where);

  std::unordered_map<Node*, Tensor> adj;
  adj[root.get()] = ones({}, DType::f32, where).reshape(root->shape, where);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodePtr& n = *it;
    auto a = adj.find(n.get());
    if (a == adj.end() || n->inputs.empty()) continue;
    std::vector<bool> want(n->inputs.size());
    bool any = false;
    for (std::size_t i = 0; i < want.size(); ++i) any |= want[i] = leads.count(n->inputs[i].get()) > 0;
    if (!any) continue;
    Tensor g = a->second;
    std::vector<Tensor> gi = backward(*n, n, g, want);
    for (std::size_t i = 0; i < gi.size(); ++i) {
      if (!want[i] || !gi[i].defined()) continue;
      Node* in = n->inputs[i].get();
      auto [slot, fresh] = adj.try_emplace(in, gi[i]);
      if (!fresh) slot->second = add(slot->second, gi[i], n->where);
    }
    if (!targets.count(n.get())) adj.erase(n.get());
  }

  std::vector<Tensor> out;
  for (auto& p : params) {
    auto a = adj.find(p.node().get());
    Tensor g = a != adj.end() ? a->second : zeros(p.shape(), DType::f32, where);
    if (g.shape() != p.shape()) g = broadcast_to(g, p.shape(), where);
    // A live handle of its own, so mark_step() materializes it as a gradient.
    Tensor h = wrap(g.node());
    if (h.node()->op != Op::Data) {
      h.node()->category = Category::gradient;
      if (h.node()->data) h.node()->data->set_category(Category::gradient);
    }
    out.push_back(h);
  }
  return out;
}

}  // namespace tc
