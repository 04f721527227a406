// The compiled execution path (private): cut graph -> CGraph -> passes ->
// kernel IR -> memory plan -> emitter (C++ today) -> shared object.
//
//   lower()      copies a cut Graph into a CGraph (indices, no pointers), so
//                passes never touch the user's nodes.
//   passes       a flat list of named rewrites over the CGraph (passes.cpp);
//                TC_VERIFY=1 runs verify() after each one.
//   schedule()   turns the fused CGraph into kernels (kernel IR, schedule.cpp).
//   kernel passes  rewrites of the kernel IR (fuse_gemm_updates).
//   plan_memory()  assigns arena offsets by liveness (plan.cpp).
//   backend        renders, builds and loads the Program (backend/backend.h:
//                  cpu/ is C++ with g++; a CUDA backend is one more folder).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "events.h"
#include "ir.h"
#include "tc/error.h"

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
bool is_attention(Op op);    // attention, attention_grad
bool is_layer_norm(Op op);   // layer_norm, layer_norm_grad
// The materialized node whose buffer holds node i's value in row-major
// order at its start: i, or the base of a chain of reshapes and prefix
// slices (axis 0 from 0) of it; -1 when none has one.
int buffer_base(const CGraph& g, int i);
// FLOPs of an attention op (kernels table, eager and compiled alike): its
// matrix products plus about one per score for the softmax (forward) or
// two (the gradient's softmax and dS).
int64_t attention_flops(const Shape& qkv, int64_t heads, bool backward);
// FLOPs of a layer norm over `elements` inputs: about 8 per element forward,
// 14 for the gradient (statistics again, dx, d gamma, d beta).
int64_t layer_norm_flops(int64_t elements, bool backward);

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

// ---- symbolic sizes (dynamic.cpp) ------------------------------------------
// A dynamic program serves every size s of one symbolic dimension (the
// graph's only one; TC_DYNAMIC, docs/environment.md). Its integers are
// polynomials of s and its size-dependent constants (a mean's 1/n) forms of
// s, read by the generated code at run time; a static program has none.
struct SymInt {
  int64_t c0 = 0, c1 = 0, c2 = 0;  // c0 + c1 s + c2 s^2
  bool symbolic() const { return c1 != 0 || c2 != 0; }
  int64_t at(int64_t s) const { return c0 + c1 * s + c2 * s * s; }
};
struct SymReal {
  enum Kind : uint8_t { constant, poly, reciprocal } kind = constant;
  double d0 = 0, d1 = 0, d2 = 0;  // poly: d0 + d1 s + d2 s^2; reciprocal: 1 / that
  double at(double s) const {
    double v = d0 + d1 * s + d2 * s * s;
    return kind == reciprocal ? 1.0 / v : v;
  }
};
// The symbolic fields of one kernel, parallel to Kernel's (unset ones constant).
struct KernelSyms {
  std::vector<SymInt> loop, batch, a_stride, b_stride;
  SymInt M, N, K, dim;
  std::vector<SymInt> ex_i;   // per expression: IConst's and Chk's i
  std::vector<SymReal> ex_f;  // per expression: FConst's f
  SymReal alpha;              // alpha_scale
};
// A program's symbolic part: buffer bytes, and where the generated code
// finds s and the arena offsets at run time (an int64 table {s, offset of
// buffer 0, 1, ...} in pointer slot `table_slot`, after the arena's).
struct ProgramSyms {
  std::vector<SymInt> bytes;  // per buffer
  int table_slot = 0;
  int64_t planned_s = 0;      // the size the arena was planned for
};

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
  enum Kind : uint8_t { Elementwise, Reduce, MatMul, ScatterAdd, Collective, Attention, LayerNorm } kind = Elementwise;
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
  int product = -1;  // an SGD-update kernel: the matrix product node it absorbed (sites, ops)
  // ScatterAdd: out[(o * dim + idx[j]) * inner + c] += value over loop (o, j, c).
  int index = -1;       // the index value (expr) for ScatterAdd
  int64_t dim = 0;
  // Collective (an Op::AllReduce root, collective.h): the buffers packed, in
  // order, into out_buf (a buffer may repeat), then the host's all-reduce of
  // out_buf for the graph's `ordinal`-th collective.
  std::vector<int> pack;
  int64_t ordinal = -1;
  // Attention (an Op::Attention or Op::AttentionGrad root; backward for the
  // latter): qkv [B, T, 3D] in a_buf, the key mask [B, T] in b_buf (-1:
  // none); the gradient also reads the attention's value in o_buf and its
  // adjoint in do_buf. loop = {B, T, heads, Dh}; alpha_scale the score scale.
  // LayerNorm (an Op::LayerNorm or Op::LayerNormGrad root; backward for the
  // latter): x in a_buf, gamma in b_buf, beta (the gradient: dy) in do_buf;
  // loop = {R, D}; alpha_scale is eps.
  bool backward = false;
  int o_buf = -1, do_buf = -1;
  std::vector<int> reads;  // buffers read
  std::shared_ptr<const KernelSyms> sym;  // a dynamic program's kernel: its symbolic fields
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
  std::shared_ptr<const ProgramSyms> sym;  // set for a dynamic program (its fields hold planned_s's values)
};

// Builds kernels from a fused CGraph; in-place updates where safe. The
// graph the kernels refer to (the input plus a copy node for each output that
// is a leaf) is left in *scheduled for the kernel passes.
Program schedule(const CGraph& g, CGraph* scheduled);

// ---- kernel passes ----------------------------------------------------------
// Rewrites of the kernel IR after scheduling, before planning: a flat list
// like the graph passes (passes.cpp), skipped by TC_SKIP_PASSES, timed into
// compile_passes, checked by verify_kernels() under TC_VERIFY=1.
std::vector<PassInfo> run_kernel_passes(const CGraph& scheduled, Program& p, bool verify);
// Elementwise updates W - G * s into W where G is a product read by nothing
// else become one sgemm accumulating into W (schedule.cpp).
void fuse_gemm_updates(const CGraph& scheduled, Program& p);

// ---- what each kernel is (kernel_info.cpp) ------------------------------------
// For the kernels table: kind, fused ops, loop shape, bytes and FLOPs from
// the kernel IR, and the user's source lines of the nodes fused into it.
using KernelInfo = events::KernelRecord;
std::vector<KernelInfo> describe_kernels(const CGraph& scheduled, const Program& p);

// ---- memory plan (plan.cpp) ---------------------------------------------------
struct MemoryPlan {
  int64_t peak = 0, batch_bytes = 0, batch_size = 0, capacity = 0;
  std::array<int64_t, kCategoryCount> by_category{};
};
// Assigns arena offsets by liveness and returns the planned peak: everything
// live now, plus the outputs (by their category) and the arena; batch_bytes
// bounds the growth per sample (dim 0 of named host inputs).
MemoryPlan plan_memory(const CGraph& g, const std::vector<std::string>& input_names,
                       const std::vector<Category>& output_categories, Program& p);
// Liveness-based arena offsets for the arena buffers of `p`.
void plan_arena(Program& p, const std::vector<bool>& batch_scaled_node);
// Throws tc::Error when the kernels are inconsistent: a kernel loads a buffer
// it does not declare, or reads an arena buffer before any kernel wrote it.
void verify_kernels(const Program& p, const char* after);
// verify_kernels, and no two arena buffers live at the same time share bytes
// (after planning; TC_VERIFY=1).
void verify_program(const Program& p);

// ---- runtime entry (compiler.cpp) -------------------------------------------
// Compiles on a cache miss, then executes `g` with planner buffers. Returns the
// graph id executed.
int64_t run_compiled(const Graph& g, Trigger trigger, const std::source_location& site);
// Tiered builds (TC_TIERED, on unless "0"): a mark_step graph whose code is
// not in the code cache runs on the eager executor (its compilation recorded
// with cache 'eager') while the backend builds it on one builder thread; the
// built code (a compilation of its own: reason and trigger 'tier_up') replaces
// the eager tier once a mark_step's graph has run, so every graph of a step
// runs on one tier. Test-only: waits until every build submitted is done.
void wait_for_tier_ups();
// Benchmarks only: a dynamic program that serves a graph runs it even where a
// static graph of that size exists (dynamic against static, interleaved).
void prefer_dynamic_for_bench(bool on);

}  // namespace tc::detail
