// The IR: data-free nodes of the pending graph.
//
// A Node is (op, inputs, shape, dtype, attrs, source location, category). Its
// value lives in `data` only when realized: Data leaves always; other nodes
// after a cut (roots of an explicit evaluation keep their structure so that
// autodiff still sees through them). Executors treat a node with data as a
// leaf. Signatures/hashes must ignore `data`, `id` and `where`.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "buffer.h"
#include "tc/tensor.h"

namespace tc::detail {

enum class Op : uint8_t {
  // leaves
  Data,     // host data or a materialized value; `data` holds it
  Fill,     // attrs.scalar
  Random,   // attrs.seed, or the seed from input 0 (i32 [2]: low, high halves);
            // attrs.ints[0]: 0 normal, 1 uniform [0, 1)
  Arange,   // attrs.scalar start, attrs.scalar2 step
  // unary elementwise
  Neg, Relu, Tanh, Sigmoid, Exp, Log, Sqrt, Rsqrt, Abs, Not,
  // binary elementwise, numpy broadcasting
  Add, Sub, Mul, Div, Pow, Maximum, Minimum, Lt, Le, Gt, Ge, Eq, Ne,
  Where,    // (cond b8, a, b), broadcasting
  // reductions: attrs.ints = sorted axes, attrs.flag = keepdim
  Sum, Max,
  MatMul,   // [..., M, K] x [..., K, N], batch broadcast
  // movement
  Reshape,     // to `shape`
  Permute,     // attrs.ints = perm
  Broadcast,   // to `shape`
  Slice,       // attrs.ints = {axis, start, end}
  Concat,      // attrs.ints = {axis}
  Gather,      // (x, indices i32), attrs.ints = {axis}
  ScatterAdd,  // (src, indices i32), attrs.ints = {axis}; `shape` is the target's
  OneHot,      // (ids i32), attrs.ints = {depth}
  Cast,        // to `dtype`
  // collectives (tc::dist): a step's graph runs them at their place
  AllReduce,   // the f32 inputs (any shapes) packed flat, in order, into [total], averaged over the
               // ranks (compiler/src/collective.h); in a CGraph attrs.ints[0] is its ordinal there
  // fused attention (tc::self_attention): attrs.ints = {heads}, attrs.scalar = the score scale
  Attention,      // (qkv [B, T, 3D], key mask b8 [B, T] optional) -> [B, T, D]
  AttentionGrad,  // (qkv, out, d out, key mask optional) -> d qkv [B, T, 3D]; out is the Attention's value
  // fused layer norm over the last axis (tc::layer_norm): attrs.scalar = eps; R rows of D
  LayerNorm,      // (x [..., D], gamma [D], beta [D]) -> [..., D]
  LayerNormGrad,  // (x, gamma, d y) -> [R + 2, D]: rows 0..R-1 d x, row R d gamma, row R + 1 d beta
  Count
};
inline constexpr int kOpCount = static_cast<int>(Op::Count);
const char* op_name(Op op);

struct Attrs {
  std::vector<int64_t> ints;
  double scalar = 0, scalar2 = 0;
  uint64_t seed = 0;
  bool flag = false;
};

struct Node;
using NodePtr = std::shared_ptr<Node>;

struct Node {
  Op op = Op::Data;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<NodePtr> inputs;
  Attrs attrs;
  std::source_location where;
  std::string name;  // user-given name (inputs)
  std::vector<int8_t> dim_marks;  // per dim: 1 tc::mark_dynamic, -1 tc::mark_static, 0 automatic
  Category category = Category::activation;
  uint64_t id = 0;  // creation order, unique per process
  std::shared_ptr<Buffer> data;

  int64_t numel() const { return tc::numel(shape); }
  bool realized() const { return data != nullptr; }
};

// A Tensor handle's shared state: assign() swaps `node`.
struct TensorImpl {
  NodePtr node;
};

// Creates a node (shape/dtype already inferred), registers nothing.
NodePtr make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs, Attrs attrs,
                  std::source_location where);
// Wraps a node into a live Tensor (registered for mark_step); in eager mode
// the node is executed first.
Tensor wrap(NodePtr node);
// A Data leaf holding `buf`.
NodePtr make_data_node(std::shared_ptr<Buffer> buf, DType dtype, Shape shape,
                       std::source_location where, std::string name = {});

// ---- graphs and cuts ------------------------------------------------------
enum class Trigger : uint8_t { mark_step, explicit_eval, eager_op, collective };  // collective: tc::dist cut its inputs

// A cut: the unrealized nodes needed by `outputs`, in topological order.
// Leaves (realized nodes) reachable from them are `inputs`.
struct Graph {
  std::vector<Node*> nodes;    // topo order; every node here lacks data
  std::vector<Node*> inputs;   // realized leaves used by `nodes`
  std::vector<Node*> outputs;  // values that must survive the execution
};
Graph cut(const std::vector<Node*>& outputs);

// Runs a cut graph; afterwards every output has `data`. Compiled (signature,
// cache, compile on a miss; compile.h) unless eager mode is on or the trigger
// is an eager op. `site` is the call site that cut the graph. Returns the
// graph id executed (0: the eager executor).
int64_t run_graph(const Graph& g, Trigger trigger,
                  const std::source_location& site = std::source_location::current());
// The eager reference executor.
void execute_eager(const Graph& g, int64_t execution_id);
void execute_node(Node& n);  // computes n.data from realized inputs

// Materializes one node (explicit evaluation helper). Returns node count run.
int64_t realize(Node* node, Trigger trigger,
                const std::source_location& site = std::source_location::current(),
                int64_t* graph_id = nullptr);

inline Node& node_of(const Tensor& t) { return *t.node(); }

}  // namespace tc::detail
