// TC_DEVICE=cuda-emulated: the CUDA backend's kernels and launch plan run on
// the CPU. The CUDA source is compiled by g++ (through the CPU backend's code
// cache, with its trust rules) under a header that emulates what the kernels
// use: gridDim/blockIdx/blockDim/threadIdx, __shared__ (a static array: the
// blocks of a launch run one after another), __syncthreads and warp shuffles
// (one fiber per thread of a block, switched at each barrier),
// atomics (fibers switch only at barriers, so a plain add is atomic). The
// plan's sgemm calls go to a column-major BLAS call with exactly the
// arguments cuBLAS gets. Slow, single-threaded, and meant for tests: it is
// where a kernel's index math, reduction or barrier bug shows on a machine
// without a GPU.
#include <cblas.h>
#include <dlfcn.h>

#include <cstring>
#include <new>
#include <sstream>

#include "../../clock.h"
#include "../backend.h"
#include "../cache/code_cache.h"
#include "cuda.h"

namespace tc::detail::cuda {
namespace {

// The emulation runtime, compiled into the generated object (not into tc:
// fibers stay out of sanitizer-instrumented code).
constexpr const char* kEmulation = R"(// The CUDA emulation header of tc's cuda-emulated backend.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
struct tc_dim3 { unsigned x, y, z; };
// Fibers switch with a few instructions on x86-64 (callee-saved registers and
// the stack pointer; swapcontext's signal-mask system call made the table's
// reductions 10x slower), with ucontext elsewhere.
#if defined(__x86_64__)
#define TC_EMU_ASM_SWITCH 1
extern "C" void tc_emu_switch(void** save_sp, void* load_sp);
asm(".text\n.globl tc_emu_switch\n.hidden tc_emu_switch\n.type tc_emu_switch,@function\ntc_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n  ret\n"
    ".size tc_emu_switch, .-tc_emu_switch\n");
#endif
namespace tc_emu {
enum State : int { kRun, kBlockBarrier, kWarpBarrier, kDone };
struct Fiber { ucontext_t ctx; void* sp; int state; char* stack; };
constexpr size_t kStack = 64 * 1024;
inline tc_dim3 grid_dim{1, 1, 1}, block_dim{1, 1, 1}, block_idx{0, 0, 0}, thread_idx{0, 0, 0};
inline Fiber* fibers = nullptr;
inline int capacity = 0;
inline ucontext_t sched;
inline void* sched_sp = nullptr;
inline int current = -1;
inline bool fibered = false;
inline int failed = 0;  // 1: a barrier in a launch without barriers; 2: threads wait at different barriers
inline uint64_t xchg[1024];
inline void (*fn)(void* const*, int*) = nullptr;
inline void* const* fn_b = nullptr;
inline int* fn_err = nullptr;
inline void to_scheduler() {
#ifdef TC_EMU_ASM_SWITCH
  tc_emu_switch(&fibers[current].sp, sched_sp);
#else
  swapcontext(&fibers[current].ctx, &sched);
#endif
}
inline void wait_at(int state) {
  if (!fibered) { failed = 1; return; }
  fibers[current].state = state;
  to_scheduler();
}
inline void trampoline() {
  int t = current;
  fn(fn_b, fn_err);
  fibers[t].state = kDone;
#ifdef TC_EMU_ASM_SWITCH
  to_scheduler();  // never resumed
  abort();
#endif
}
// Thread t starts at trampoline() when it is first resumed.
inline void start(int t) {
#ifdef TC_EMU_ASM_SWITCH
  // The stack as tc_emu_switch leaves it: six saved registers, then the
  // return address (trampoline), then a fake caller's return address, so
  // trampoline starts with rsp = 8 mod 16 like any called function.
  uintptr_t top = ((uintptr_t)fibers[t].stack + kStack) & ~(uintptr_t)15;
  void** sp = (void**)top;
  *--sp = nullptr;
  *--sp = (void*)&trampoline;
  for (int i = 0; i < 6; ++i) *--sp = nullptr;
  fibers[t].sp = sp;
#else
  getcontext(&fibers[t].ctx);
  fibers[t].ctx.uc_stack.ss_sp = fibers[t].stack;
  fibers[t].ctx.uc_stack.ss_size = kStack;
  fibers[t].ctx.uc_link = &sched;
  makecontext(&fibers[t].ctx, trampoline, 0);
#endif
  fibers[t].state = kRun;
}
inline void resume(int t) {
  current = t;
  thread_idx = {(unsigned)t, 0, 0};
#ifdef TC_EMU_ASM_SWITCH
  tc_emu_switch(&sched_sp, fibers[t].sp);
#else
  swapcontext(&sched, &fibers[t].ctx);
#endif
}
}  // namespace tc_emu
#define gridDim (tc_emu::grid_dim)
#define blockDim (tc_emu::block_dim)
#define blockIdx (tc_emu::block_idx)
#define threadIdx (tc_emu::thread_idx)
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static
inline void __syncthreads() { tc_emu::wait_at(tc_emu::kBlockBarrier); }
inline void __syncwarp(unsigned = 0xffffffffu) { tc_emu::wait_at(tc_emu::kWarpBarrier); }
template <class T> inline T __shfl_down_sync(unsigned, T v, int delta) {
  const unsigned t = threadIdx.x, lane = t & 31u, src = lane + (unsigned)delta;
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  tc_emu::xchg[t] = bits;
  __syncwarp();
  T r = v;
  if (src < 32u && t - lane + src < blockDim.x) memcpy(&r, &tc_emu::xchg[t - lane + src], sizeof(T));
  __syncwarp();
  return r;
}
inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, sizeof d); return d; }
template <class T> inline T atomicAdd(T* p, T v) { T old = *p; *p = (T)(old + v); return old; }
)";

// After the CUDA source: the launcher and the entry points the code cache
// asks for (tc_run is never called: the backend launches kernels itself).
constexpr const char* kLauncher = R"(
extern "C" int tc_emu_launch(int function, int64_t grid, int block, int barriers, void* const* b, int* err) {
  using namespace tc_emu;
  void (*f)(void* const*, int*) = tc_emu_kernels[function];
  if (block < 1 || block > 1024) return 3;
  grid_dim = {(unsigned)grid, 1, 1};
  block_dim = {(unsigned)block, 1, 1};
  failed = 0;
  if (!barriers) {
    fibered = false;
    for (int64_t g = 0; g < grid; ++g) {
      block_idx = {(unsigned)g, 0, 0};
      for (int t = 0; t < block; ++t) {
        thread_idx = {(unsigned)t, 0, 0};
        f(b, err);
        if (failed) return failed;
      }
    }
    return 0;
  }
  if (capacity < block) {
    Fiber* grown = (Fiber*)calloc((size_t)block, sizeof(Fiber));
    if (!grown) return 4;
    for (int t = 0; t < capacity; ++t) grown[t].stack = fibers[t].stack;
    free(fibers);
    fibers = grown;
    for (int t = capacity; t < block; ++t)
      if (!(fibers[t].stack = (char*)malloc(kStack))) return 4;
    capacity = block;
  }
  fn = f;
  fn_b = b;
  fn_err = err;
  for (int64_t g = 0; g < grid; ++g) {
    block_idx = {(unsigned)g, 0, 0};
    for (int t = 0; t < block; ++t) start(t);
    fibered = true;
    for (;;) {
      for (int t = 0; t < block; ++t) {
        if (fibers[t].state == kRun) resume(t);
      }
      int done = 0, at_block = 0;
      for (int t = 0; t < block; ++t) done += fibers[t].state == kDone, at_block += fibers[t].state == kBlockBarrier;
      if (done == block) break;
      bool released = false;
      // A warp barrier opens when every lane of the warp that has not ended waits at it.
      for (int w = 0; w * 32 < block; ++w) {
        int lanes = 0, waiting = 0, ended = 0;
        for (int t = w * 32; t < block && t < w * 32 + 32; ++t)
          ++lanes, waiting += fibers[t].state == kWarpBarrier, ended += fibers[t].state == kDone;
        if (waiting > 0 && waiting + ended == lanes) {
          for (int t = w * 32; t < block && t < w * 32 + 32; ++t)
            if (fibers[t].state == kWarpBarrier) fibers[t].state = kRun;
          released = true;
        }
      }
      // The block barrier, when every thread that has not ended waits at it.
      if (!released && at_block > 0 && at_block + done == block) {
        for (int t = 0; t < block; ++t)
          if (fibers[t].state == kBlockBarrier) fibers[t].state = kRun;
        released = true;
      }
      if (!released) { fibered = false; return 2; }
    }
    fibered = false;
    if (failed) return failed;
  }
  return 0;
}
extern "C" int tc_run(void* const*, uint64_t*, uint64_t (*)(void)) { return 1; }
extern "C" int tc_set_runtime(const void*) { return 0; }
#ifdef TC_KEY
extern "C" const char tc_built_for[] = TC_KEY;
#endif
)";

using LaunchFn = int (*)(int, int64_t, int, int, void* const*, int*);

class EmulatedDevice final : public PlanDevice {
 public:
  EmulatedDevice(LaunchFn launch, void* const* table, int* err, const float* scratch, const KernelClock* clock)
      : launch_(launch), table_(table), err_(err), scratch_(scratch), clock_(clock) {}
  void launch(const CudaProgram& cp, const Step& s, int64_t grid) override {
    int rc = launch_(s.function, grid, s.block, s.barriers ? 1 : 0, table_, err_);
    const std::string& name = cp.functions[static_cast<std::size_t>(s.function)];
    if (rc == 1) throw Error("tc: cuda-emulated: " + name + " reached a barrier in a launch planned without barriers");
    if (rc == 2) throw Error("tc: cuda-emulated: the threads of " + name + " wait at different barriers (a divergent __syncthreads or shuffle)");
    if (rc != 0) throw Error("tc: cuda-emulated: cannot launch " + name + " (" + std::to_string(s.block) + " threads per block)");
  }
  void memset(void* dst, int64_t bytes) override { std::memset(dst, 0, static_cast<std::size_t>(bytes)); }
  void gemm(const GemmCall& g, const float* a, const float* b, float* c) override {
    const float alpha = g.alpha_slot >= 0 ? scratch_[g.alpha_slot] : static_cast<float>(g.alpha);
    const ColumnMajorGemm m = gemm_args(g);
    for (int64_t i = 0; i < g.count; ++i)
      cblas_sgemm(CblasColMajor, m.trans_first ? CblasTrans : CblasNoTrans, m.trans_second ? CblasTrans : CblasNoTrans,
                  static_cast<int>(m.m), static_cast<int>(m.n), static_cast<int>(m.k), alpha, b + i * g.b_stride,
                  static_cast<int>(m.ld_first), a + i * g.a_stride, static_cast<int>(m.ld_second), g.beta,
                  c + i * g.c_stride, static_cast<int>(m.ldc));
  }
  void kernel_begin(int k) override {
    if (clock_) clock_->ticks[2 * k] = clock_->now();
  }
  void kernel_end(int k) override {
    if (clock_) clock_->ticks[2 * k + 1] = clock_->now();
  }

 private:
  LaunchFn launch_;
  void* const* table_;
  int* err_;
  const float* scratch_;
  const KernelClock* clock_;
};

class EmulatedExecutable final : public Executable {
 public:
  EmulatedExecutable(CudaProgram cp, const Program& p, LaunchFn launch)
      : cp_(std::move(cp)), p_(p), launch_(launch), scratch_(static_cast<std::size_t>(cp_.scratch_floats) + 1) {}
  int run(void* const* bufs, const RunIds&, const KernelClock* clock) override {
    // The caller's table (inputs, outputs, the arena, a dynamic program's
    // size table: host memory here), then the scratch floats.
    std::vector<void*> table(static_cast<std::size_t>(cp_.slots));
    for (int i = 0; i + 1 < cp_.slots; ++i) table[static_cast<std::size_t>(i)] = bufs[i];
    table.back() = scratch_.data();
    const int64_t* sizes = cp_.sizes_slot >= 0 ? static_cast<const int64_t*>(bufs[cp_.sizes_slot]) : nullptr;
    if (clock) {
      const uint64_t t = clock->now();
      for (std::size_t k = 0; k < 2 * p_.kernels.size(); ++k) clock->ticks[k] = t;
    }
    int err = 0;
    EmulatedDevice dev(launch_, table.data(), &err, scratch_.data(), clock);
    run_plan(cp_, p_, table.data(), sizes, dev);
    return err ? 1 : 0;
  }

 private:
  CudaProgram cp_;
  Program p_;
  LaunchFn launch_;
  std::vector<float> scratch_;
};

class EmulatedBackend final : public HostMemoryBackend {
 public:
  const char* name() const override { return "cuda-emulated"; }
  void* alloc(std::size_t bytes) override {
    return ::operator new((std::max<std::size_t>(bytes, 1) + 63) / 64 * 64, std::align_val_t{64}, std::nothrow);
  }
  void free(void* ptr, std::size_t) override {
    if (ptr) ::operator delete(ptr, std::align_val_t{64});
  }
  CompiledCode compile(const Program& p, int64_t graph_id) override {
    CompiledCode out;
    int64_t t0 = now_ns();
    CudaProgram cp = emit_cuda(p, graph_id);
    std::string source = emulated_source(cp);
    out.codegen_ns = now_ns() - t0;
    cache::HostObject built = cache::build_and_load(source, graph_id, 1);
    auto launch = reinterpret_cast<LaunchFn>(::dlsym(built.handle, "tc_emu_launch"));
    if (!launch) throw Error("tc: cuda-emulated: the object built for graph " + std::to_string(graph_id) + " has no tc_emu_launch (source at " + built.source_path + ")");
    out.code = std::make_unique<EmulatedExecutable>(std::move(cp), p, launch);
    out.source_path = built.source_path;
    out.disk_hit = built.disk_hit;
    out.build_ns = built.disk_hit ? 0 : built.build_ns;
    return out;
  }
  void synchronize() override {}
  bool symbolic_sizes() const override { return true; }
  std::string symbolic_unsupported(const Program& p) const override { return cuda::symbolic_unsupported(p); }
  // The CPU's, which runs the kernels.
  Ceilings ceilings() override { return find_backend("cpu", nullptr)->ceilings(); }
};

}  // namespace

std::string emulated_source(const CudaProgram& cp) {
  std::ostringstream os;
  os << kEmulation << cp.source << "extern \"C\" void (*const tc_emu_kernels[])(void* const*, int*) = {";
  for (std::size_t i = 0; i < cp.functions.size(); ++i) os << (i ? ", " : "") << cp.functions[i];
  if (cp.functions.empty()) os << "nullptr";
  os << "};\n" << kLauncher;
  return os.str();
}

Backend* make_emulated_backend(std::string*) {
  static auto* b = new EmulatedBackend;  // never destroyed: buffers may outlive static destruction
  return b;
}

}  // namespace tc::detail::cuda
