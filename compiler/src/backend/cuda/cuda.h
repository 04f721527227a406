// The CUDA backend (private): kernel IR -> CUDA C (codegen_cuda.cpp) plus a
// launch plan for the host -> NVRTC cubin -> driver API (cuda_backend.cpp,
// libcuda.so.1 dlopen()ed, never linked); matrix products through cuBLAS
// (dlopen()ed too). The same source and plan also run on the CPU
// (emulated_backend.cpp, TC_DEVICE=cuda-emulated): the kernels compiled as
// C++ under a header that emulates the grid, blocks, shared memory, barriers,
// warp shuffles and atomics (one fiber per thread of a block), the products
// through a column-major BLAS call with cuBLAS's arguments. That is where
// kernel bugs are caught on a machine without a GPU.
//
// Every kernel is `extern "C" __global__ void tc_g<graph>_k<n>(void* const* b, int* err)`:
// b is the pointer table (inputs, outputs, the arena, a dynamic program's
// size table, then the scratch floats), err the run's error flag (a gather
// index out of range sets it to 1). A dynamic program (Program::sym) reads
// its size s and arena offsets from the size table in device memory: loop
// bounds and indices are computed from s, and the host resolves the plan's
// grids, memset sizes and products at s before each run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../compile.h"

namespace tc::detail {
class Backend;
}

namespace tc::detail::cuda {

// Threads per block of elementwise and scatter kernels, and the most blocks
// a grid-stride kernel is launched with.
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;

// One sgemm of the plan in row-major terms: C = alpha op(A) op(B) + beta C,
// `count` products at element strides (a_stride, b_stride, c_stride) from
// element offsets (a_off, b_off, c_off) of their buffers. A cuBLAS call
// computes C^T = op(B)^T op(A)^T in column-major terms (see gemm_args()).
struct GemmCall {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  int a_buf = -1, b_buf = -1, c_buf = -1;
  int64_t a_off = 0, b_off = 0, c_off = 0;
  int64_t count = 1, a_stride = 0, b_stride = 0, c_stride = 0;
  float beta = 0;
  double alpha = 1;    // used when alpha_slot < 0
  int alpha_slot = -1; // >= 0: alpha is scratch float alpha_slot (written on the device by the step before)
};

// A MatMul kernel's products before the size is known: its fields, forms of
// the size s in a dynamic program (constants otherwise). gemm_calls() turns
// them into calls at s: adjacent batch dims whose strides nest merge into
// one, the innermost merged dim is a call's batch, the outer ones are
// enumerated (one call each).
struct GemmPlan {
  bool ta = false, tb = false;
  SymInt M, N, K;
  std::vector<SymInt> batch, a_stride, b_stride;  // per batch dim, outermost first
  int a_buf = -1, b_buf = -1, c_buf = -1;
  float beta = 0;
  SymReal alpha;       // used when alpha_slot < 0
  int alpha_slot = -1; // as GemmCall's
};
std::vector<GemmCall> gemm_calls(const GemmPlan& g, int64_t s);

// What the host does, in order, for one run.
struct Step {
  enum Kind : uint8_t { Launch, Memset, Gemm } kind = Launch;
  int kernel = -1;  // the Program kernel this step belongs to (timing)
  // Launch: function `function` of CudaProgram::functions, grid() blocks of
  // `block` threads.
  int function = -1;
  int block = 1;
  bool barriers = false;  // uses __syncthreads / warp shuffles (the emulator then runs fibers)
  std::vector<SymInt> work;  // the kernel's work items: the product of these at s
  int64_t per_block = 1;     // work items a block takes per pass
  // Memset: `bytes` zero bytes at buffer `buf`.
  int buf = -1;
  SymInt bytes;
  GemmPlan gemm;
};
// A launch's blocks at size s: the work over per_block, rounded up, in
// [1, kMaxBlocks] (the kernels loop over the rest).
int64_t grid(const Step& step, int64_t s);

struct CudaProgram {
  std::string source;                  // the CUDA C translation unit (NVRTC-ready)
  std::vector<std::string> functions;  // the __global__ functions, by index
  std::vector<Step> steps;
  int slots = 0;          // pointer table entries: inputs, outputs, arena, [sizes,] scratch
  int sizes_slot = -1;    // a dynamic program's size table {s, arena offsets} (ProgramSyms::table_slot), else -1
  int scratch_floats = 0; // floats of the scratch buffer (device-computed sgemm alphas)
};

// Why emit_cuda() cannot render dynamic program `p` ("" when it can): an
// attention whose head size is symbolic (the kernels keep a head's row in
// registers).
std::string symbolic_unsupported(const Program& p);

// Renders `p` (graph `graph_id`) as CUDA C and its launch plan. Throws
// tc::Error naming a kernel kind this backend cannot compile yet.
CudaProgram emit_cuda(const Program& p, int64_t graph_id);

// The column-major arguments of the cuBLAS (or column-major BLAS) call for
// `g`: transa/transb (true = transposed), m, n, k, lda, ldb and which
// operand goes first (B, then A).
struct ColumnMajorGemm {
  bool trans_first, trans_second;
  int64_t m, n, k, ld_first, ld_second, ldc;
};
ColumnMajorGemm gemm_args(const GemmCall& g);

// Where buffer `buf` of `p` lives, given the pointer table's host copy and,
// for a dynamic program, its size table (host memory: {s, arena offsets}).
void* buffer_address(const Program& p, int buf, void* const* table, const int64_t* sizes);

// What running a plan needs from a device; run_plan() walks the steps.
class PlanDevice {
 public:
  virtual ~PlanDevice() = default;
  virtual void launch(const CudaProgram& cp, const Step& s, int64_t grid) = 0;
  virtual void memset(void* dst, int64_t bytes) = 0;
  virtual void gemm(const GemmCall& g, const float* a, const float* b, float* c) = 0;
  // Called before the first and after the last step of each Program kernel
  // (timing); `kernel` indexes Program::kernels.
  virtual void kernel_begin(int kernel) {}
  virtual void kernel_end(int kernel) {}
};
// `sizes`: a dynamic program's size table in host memory (nullptr for a
// static program); the plan's sizes are resolved at its s.
void run_plan(const CudaProgram& cp, const Program& p, void* const* table, const int64_t* sizes, PlanDevice& dev);

// Why there is no usable CUDA device here, in one line ("" when there is one):
// no NVIDIA driver (its device nodes), libcuda.so.1 does not load, cuInit
// fails, or it finds no device. Cheap without a driver: a stat per node.
std::string device_unavailable();

// The registry's rows: the real backend ("cuda": nullptr + why without a
// driver or device, or when tc was built without the CUDA toolkit) and the
// emulated one ("cuda-emulated": host memory, the kernels under g++).
Backend* make_backend(std::string* why);
Backend* make_emulated_backend(std::string* why);

// Test seam: the C++ translation unit the emulated backend builds for `cp`
// (the emulation header, the CUDA source, the kernel table).
std::string emulated_source(const CudaProgram& cp);

}  // namespace tc::detail::cuda
