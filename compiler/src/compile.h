// The compiled execution path (private): cut graph -> CGraph -> passes ->
// kernel IR -> memory plan -> emitter (C++ today) -> shared object.
//
//   lower()      copies a cut Graph into a CGraph (indices, no pointers), so
//                passes never touch the user's nodes.
//   passes       a flat list of named rewrites over the CGraph (passes.cpp);
//                TC_VERIFY=1 runs verify() after each one.
//   schedule()   turns the fused CGraph into kernels (kernel IR, schedule.cpp).
//   plan()       assigns arena offsets by liveness (planner.cpp).
//   Emitter      renders a Program in one dialect (codegen_cpp.cpp; a CUDA C
//                emitter would be a second implementation).
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "ir.h"

namespace tc::detail {

// ---- CGraph: the compiler's own copy of a cut ------------------------------
struct CNode {
  Op op = Op::Data;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int> in;  // indices of earlier nodes
  Attrs attrs;
  std::source_location where;
  Category category = Category::activation;
  int input_slot = -1;  // >= 0: a leaf bound to Graph::inputs[input_slot]
  // Set by the fusion passes.
  bool materialize = false;  // gets its own buffer (a kernel root or an input)
  int epilogue_of = -1;      // this root's kernel also computes reduction node `epilogue_of`
  bool mm_trans[2] = {false, false};  // MatMul: operand read transposed from mm_base
  int mm_base[2] = {-1, -1};          // MatMul: materialized node holding each operand

  int64_t numel() const { return tc::numel(shape); }
  bool is_leaf() const { return input_slot >= 0; }
};

struct CGraph {
  std::vector<CNode> nodes;  // topological order; leaves first is not required
  std::vector<int> outputs;  // output slot -> node
  std::vector<bool> inplace_ok;  // per input slot: its buffer may be overwritten
  int live_nodes() const;
};

bool is_elementwise(Op op);  // unary, binary, where, cast
bool is_movement(Op op);     // reshape, broadcast, permute, slice

// ---- passes --------------------------------------------------------------
struct PassInfo {
  const char* name;
  int64_t ns;
  int nodes_after;
};
// Runs every pass in order; verify() between passes when `verify`.
std::vector<PassInfo> run_passes(CGraph& g, bool verify);
// Throws tc::Error naming `after` when an invariant is broken.
void verify(const CGraph& g, const char* after);

// ---- kernel IR ------------------------------------------------------------
// Scalar expressions evaluated per loop iteration. Index arithmetic is int64.
enum class KOp : uint8_t {
  Var,     // loop variable i (index)
  IConst,  // integer constant i (index)
  IAdd, IMul, IDiv, IMod, ILt, IEq,  // index arithmetic on a, b
  FConst,  // literal f of type dt
  Load,    // buffer buf at offset a, type dt
  Chk,     // a (an i32 value) checked against [0, i); out of range sets the error flag
  Unary,   // op applied to a
  Binary,  // op applied to a, b (operand type: the type of a)
  Select,  // a ? b : c
  Cast,    // a converted to dt
  Rand,    // counter-based random: flat index a, seed i or (b, c) loaded halves; f: 0 normal, 1 uniform
  Arange,  // f + a * f2, converted to dt
  Acc,     // the reduction's accumulator (epilogues)
  Seq,     // evaluates a (for its checks), then yields b
};

struct KExpr {
  KOp k;
  DType dt = DType::f32;
  Op op = Op::Count;
  int a = -1, b = -1, c = -1;
  int64_t i = 0;
  double f = 0, f2 = 0;
  int buf = -1;
};

struct Kernel {
  enum Kind : uint8_t { Elementwise, Reduce, MatMul, ScatterAdd } kind = Elementwise;
  int root = -1;        // the CGraph node it produces
  int out_buf = -1;     // Program buffer written
  DType out_dtype = DType::f32;
  std::string label;    // ops fused, for logs and comments
  Shape loop;           // loop extents, var d iterates loop[d]
  std::vector<KExpr> ex;
  int value = -1;       // per-iteration value (Reduce: the reduced operand)
  int store = -1;       // output offset (Reduce: over the kept vars)
  std::vector<bool> reduced;  // Reduce: which loop dims are reduced
  bool is_max = false;
  int epilogue = -1;    // Reduce: value stored, in terms of Acc; -1 stores Acc
  // MatMul: C[batch] = op(A[batch]) x op(B[batch]).
  int a_buf = -1, b_buf = -1;
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  Shape batch;
  std::vector<int64_t> a_stride, b_stride;  // per batch dim, in elements
  // MatMul epilogue: C = alpha * op(A) op(B) + (accumulate ? C : 0), alpha =
  // alpha_scale * (alpha_buf >= 0 ? that buffer's element 0 : 1). An SGD
  // update W - lr * (X^T G) becomes one sgemm into W's buffer.
  bool accumulate = false;
  double alpha_scale = 1.0;
  int alpha_buf = -1;
  // ScatterAdd: out[(o * dim + idx[j]) * inner + c] += value over loop (o, j, c).
  int index = -1;       // the index value (expr) for ScatterAdd
  int64_t dim = 0;
  std::vector<int> reads;  // buffers read
};

enum class BufKind : uint8_t { input, output, arena };
struct BufDecl {
  BufKind kind;
  int slot = -1;        // input slot / output slot
  int64_t bytes = 0;
  int64_t offset = 0;   // arena only
  int node = -1;        // the CGraph node it holds
  DType dtype = DType::f32;
};

struct Program {
  std::vector<Kernel> kernels;
  std::vector<BufDecl> bufs;
  int num_inputs = 0, num_outputs = 0;
  std::vector<int> output_buf;      // output slot -> buffer (may be an input's, in place)
  std::vector<int> inplace_input;   // output slot -> input slot it overwrites, or -1
  int64_t arena_bytes = 0;
  int64_t arena_batch_bytes = 0;  // bytes that grow with the batch: an upper bound on the arena growth per sample (see plan_arena)
};

// Builds kernels from a fused CGraph; in-place updates where safe.
Program schedule(const CGraph& g);
// Liveness-based arena offsets for the arena buffers of `p`.
void plan_arena(Program& p, const std::vector<bool>& batch_scaled_node);
// Throws tc::Error when a planned program is inconsistent: a kernel loads a
// buffer it does not declare, reads an arena buffer before any kernel wrote
// it, or two arena buffers live at the same time share bytes (TC_VERIFY=1).
void verify_program(const Program& p);

// One interface, several dialects (C++ for CPU now; CUDA C later).
class Emitter {
 public:
  virtual ~Emitter() = default;
  virtual const char* dialect() const = 0;
  // A whole translation unit exporting `extern "C" int tc_run(void* const* bufs)`
  // (bufs: inputs, outputs, then the arena; returns 0, or 1 for an index out of range).
  // With parts > 1 the unit splits its kernels into `parts` groups of about
  // equal size, each compiled alone with -DTC_PART=i (tc_run is in part 0),
  // so the build can use several cores; without TC_PART it is whole.
  virtual std::string emit(const Program& p, const std::string& graph_name, int parts = 1) const = 0;
};
std::unique_ptr<Emitter> make_cpp_emitter();

// ---- runtime entry (compiler.cpp) -------------------------------------------
// Compiles on a cache miss, then executes `g` with planner buffers. Returns the
// graph id executed.
int64_t run_compiled(const Graph& g, Trigger trigger, const std::source_location& site);

}  // namespace tc::detail
