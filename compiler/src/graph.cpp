// Pending graph, live-tensor registry, cuts, and Tensor's evaluation methods.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "clock.h"
#include "compile.h"
#include "events.h"
#include "ir.h"

namespace tc {
namespace detail {
namespace {

struct State {
  uint64_t next_id = 1;
  int64_t step = 0;
  bool eager = false;
  std::vector<std::weak_ptr<TensorImpl>> live;
  std::size_t prune_at = 1024;

  State() {
    const char* e = std::getenv("TC_EAGER");
    eager = e && *e && std::string_view(e) != "0";
  }
  void prune() {
    std::erase_if(live, [](const std::weak_ptr<TensorImpl>& w) { return w.expired(); });
    prune_at = std::max<std::size_t>(1024, live.size() * 2);
  }
};

State& state() {
  static State s;
  return s;
}

}  // namespace

NodePtr make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs, Attrs attrs,
                  std::source_location where) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
  n->where = where;
  n->id = state().next_id++;
  return n;
}

NodePtr make_data_node(std::shared_ptr<Buffer> buf, DType dtype, Shape shape,
                       std::source_location where, std::string name) {
  auto n = make_node(Op::Data, dtype, std::move(shape), {}, {}, where);
  n->category = buf->category();
  n->data = std::move(buf);
  n->name = std::move(name);
  return n;
}

Tensor wrap(NodePtr node) {
  auto& s = state();
  if (s.eager && !node->realized()) realize(node.get(), Trigger::eager_op);
  auto impl = std::make_shared<TensorImpl>();
  impl->node = std::move(node);
  s.live.push_back(impl);
  if (s.live.size() >= s.prune_at) s.prune();
  return Tensor(std::move(impl));
}

Graph cut(const std::vector<Node*>& outputs) {
  Graph g;
  std::unordered_set<Node*> seen;
  // Iterative post-order DFS; realized nodes are leaves.
  std::vector<std::pair<Node*, std::size_t>> stack;
  std::unordered_set<Node*> out_set;
  for (Node* out : outputs)
    if (!out->realized() && out_set.insert(out).second) g.outputs.push_back(out);
  for (Node* out : g.outputs) {
    if (!seen.insert(out).second) continue;
    stack.push_back({out, 0});
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < n->inputs.size()) {
        Node* in = n->inputs[i++].get();
        if (!seen.insert(in).second) continue;
        if (in->realized()) {
          g.inputs.push_back(in);
        } else {
          stack.push_back({in, 0});
        }
      } else {
        g.nodes.push_back(n);
        stack.pop_back();
      }
    }
  }
  return g;
}

int64_t run_graph(const Graph& g, Trigger trigger, const std::source_location& site) {
  if (g.nodes.empty()) return 0;
  if (trigger != Trigger::eager_op && !state().eager) return run_compiled(g, trigger, site);
  int64_t t0 = now_ns();
  uint64_t start = events::ticks();
  int64_t execution_id = events::new_execution_id();
  execute_eager(g, execution_id);
  events::on_graph_executed(static_cast<events::ExecTrigger>(trigger),
                            static_cast<int64_t>(g.nodes.size()), now_ns() - t0, start, 0, execution_id);
  return 0;
}

int64_t realize(Node* node, Trigger trigger, const std::source_location& site, int64_t* graph_id) {
  if (node->realized()) return 0;
  Graph g = cut({node});
  int64_t id = run_graph(g, trigger, site);
  if (graph_id) *graph_id = id;
  return static_cast<int64_t>(g.nodes.size());
}

namespace {

void explicit_eval(const Tensor& t, events::EvalKind kind, const std::source_location& where) {
  Node& n = node_of(t);
  if (n.realized()) return;
  int64_t t0 = now_ns();
  uint64_t start = events::ticks();
  int64_t graph_id = 0;
  int64_t nodes = realize(&n, Trigger::explicit_eval, where, &graph_id);
  events::on_explicit_evaluation(kind, where, nodes, now_ns() - t0, start, graph_id);
}

// Reads a realized node's values to the host through its buffer's backend.
template <typename T>
void read_as(const Node& n, T* out) {
  int64_t count = n.numel();
  std::vector<unsigned char> staged;
  const void* src = n.data->raw();
  if (!n.data->host_memory()) {
    staged.resize(static_cast<std::size_t>(count * dtype_size(n.dtype)));
    n.data->copy_to_host(staged.data(), staged.size());
    src = staged.data();
  }
  switch (n.dtype) {
    case DType::f32: {
      const float* p = static_cast<const float*>(src);
      for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(p[i]);
      break;
    }
    case DType::i32: {
      const int32_t* p = static_cast<const int32_t*>(src);
      for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(p[i]);
      break;
    }
    case DType::b8: {
      const uint8_t* p = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(p[i]);
      break;
    }
  }
}

}  // namespace
}  // namespace detail

using namespace detail;

// ---- Tensor --------------------------------------------------------------

static const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw Error("tc: use of an empty tc::Tensor (default-constructed or moved-from)");
  return *impl;
}

const std::shared_ptr<Node>& Tensor::node() const { return checked(impl_).node; }
const Shape& Tensor::shape() const { return node()->shape; }
DType Tensor::dtype() const { return node()->dtype; }
int64_t Tensor::numel() const { return node()->numel(); }
const std::string& Tensor::name() const { return node()->name; }
Category Tensor::category() const { return node()->category; }
bool Tensor::is_materialized() const { return node()->realized(); }

int64_t Tensor::size(int64_t axis) const {
  int64_t r = rank();
  if (axis < -r || axis >= r)
    throw Error("tc: axis " + std::to_string(axis) + " out of range for shape " +
                to_string(shape()));
  return shape()[static_cast<std::size_t>(axis < 0 ? axis + r : axis)];
}

void Tensor::set_category(Category c) {
  Node& n = *node();
  n.category = c;
  if (n.data) n.data->set_category(c);
}

float Tensor::item(std::source_location where) const {
  if (numel() != 1)
    throw Error("tc: item() needs a tensor with one element, got shape " + to_string(shape()) +
                " at " + where.file_name() + ":" + std::to_string(where.line()));
  explicit_eval(*this, events::EvalKind::item, where);
  float v = 0;
  read_as(*node(), &v);
  return v;
}

std::vector<float> Tensor::to_host(std::source_location where) const {
  explicit_eval(*this, events::EvalKind::to_host, where);
  std::vector<float> out(static_cast<std::size_t>(numel()));
  read_as(*node(), out.data());
  return out;
}

std::vector<int32_t> Tensor::to_host_i32(std::source_location where) const {
  if (dtype() == DType::f32)
    throw Error("tc: to_host_i32() on an f32 tensor; use to_host() or cast() first");
  explicit_eval(*this, events::EvalKind::to_host, where);
  std::vector<int32_t> out(static_cast<std::size_t>(numel()));
  read_as(*node(), out.data());
  return out;
}

void Tensor::assign(const Tensor& value, std::source_location where) {
  const Node& cur = *node();
  const Node& v = *value.node();
  if (cur.shape != v.shape)
    throw ShapeError("assign", cur.shape, v.shape, where.file_name(), where.line(),
                     "the new value must have the tensor's shape");
  if (cur.dtype != v.dtype)
    throw Error(std::string("tc: assign() of a ") + dtype_name(v.dtype) + " value to a " +
                dtype_name(cur.dtype) + " tensor at " + where.file_name() + ":" +
                std::to_string(where.line()));
  // The tensor keeps its category (a parameter stays a parameter), also when
  // the value is already realized (eager mode).
  Category c = cur.category;
  impl_->node = value.node();
  impl_->node->category = c;
  if (impl_->node->data) impl_->node->data->set_category(c);
}

std::ostream& operator<<(std::ostream& os, const Printable& p) {
  const Tensor& t = p.tensor;
  explicit_eval(t, events::EvalKind::print, p.where);
  const Node& n = *t.node();
  std::vector<double> v(static_cast<std::size_t>(n.numel()));
  read_as(n, v.data());
  os << "tensor(" << dtype_name(n.dtype) << ", " << to_string(n.shape) << ", [";
  std::size_t shown = std::min<std::size_t>(v.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << v[i];
  if (shown < v.size()) os << ", ... (" << v.size() << " values)";
  return os << "])";
}

// ---- steps -----------------------------------------------------------------

void mark_step(std::source_location where) {
  uint64_t start = events::ticks();
  auto& s = state();
  events::NvtxScope nvtx(events::NvtxScope::kStep, s.step);
  s.prune();
  std::vector<std::shared_ptr<TensorImpl>> live;
  live.reserve(s.live.size());
  for (auto& w : s.live)
    if (auto p = w.lock()) live.push_back(std::move(p));
  std::vector<Node*> outs;
  for (auto& impl : live)
    if (!impl->node->realized()) outs.push_back(impl->node.get());
  Graph g = cut(outs);
  run_graph(g, Trigger::mark_step, where);
  // Cut the structure: each live tensor now holds a fresh leaf, so the step's
  // graph (and its buffers) is released.
  std::unordered_map<Node*, NodePtr> leaves;
  for (auto& impl : live) {
    Node* n = impl->node.get();
    if (n->op == Op::Data) continue;
    auto& leaf = leaves[n];
    if (!leaf) {
      leaf = make_data_node(n->data, n->dtype, n->shape, n->where, n->name);
      leaf->category = n->category;
      n->data->set_category(n->category);
    }
    impl->node = leaf;
  }
  live.clear();
  leaves.clear();
  events::on_mark_step(s.step, where, start);
  ++s.step;
}

int64_t current_step() { return state().step; }
void set_eager(bool on) { state().eager = on; }
bool eager() { return state().eager; }

}  // namespace tc
