// The compiler's only seam to the recording layer (profiler/trace).
//
// Every event the compiler emits goes through these functions; they turn it
// into tc::trace records (store tables steps, explicit_evaluations,
// executions, out_of_memory; counter memory.live_bytes). Each costs one
// branch when recording is off. start is a ticks() value taken when the
// thing began; the end is read inside.
#pragma once

#include <array>
#include <cstddef>
#include <vector>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

#include "tc/error.h"

namespace tc::events {

enum class EvalKind : uint8_t { item, to_host, print };
const char* eval_kind_name(EvalKind k);
enum class ExecTrigger : uint8_t { mark_step, explicit_eval, eager_op, collective };  // the values of Trigger

// The recording clock (tc::trace::now()), for the start arguments below.
uint64_t ticks();

// Ids unique in the run (across every process recording into one store,
// tc::trace::new_graph_id()), >= 1; a process-local count when not recording.
// One per compiled graph; one per execution of a compiled graph.
int64_t new_graph_id();
int64_t new_execution_id();

void on_mark_step(int64_t step, const std::source_location& where, uint64_t start);
// A pending tensor forced an evaluation: the call site, what kind, how many
// nodes ran and how long (steady_clock ns) the cut + execution took.
void on_explicit_evaluation(EvalKind kind, const std::source_location& where, int64_t nodes,
                            int64_t dur_ns, uint64_t start, int64_t graph_id);
// A cut graph ran (any trigger); graph_id 0 for the eager executor,
// execution_id from new_execution_id() (each eager op is one too). The eager
// path calls this once per op: recording it neither locks nor allocates.
// dynamic_size: a dynamic program's size s for this execution, 0 for a static one.
void on_graph_executed(ExecTrigger trigger, int64_t nodes, int64_t dur_ns, uint64_t start, int64_t graph_id,
                       int64_t execution_id = 0, int64_t dynamic_size = 0);
// Live bytes go to the counter memory.live_bytes, the capacity (when it
// changes) to memory.capacity_bytes.
void on_alloc(int64_t bytes, Category c, int64_t live, int64_t capacity);
void on_free(int64_t bytes, Category c, int64_t live);
// batch_size: the failing compiled graph's batch size (its memory plan's),
// 0 when unknown (stored as NULL).
void on_out_of_memory(int64_t requested, int64_t live, int64_t capacity,
                      const std::array<int64_t, kCategoryCount>& live_by_category, int64_t batch_size = 0);

// ---- the compiled path ----------------------------------------------------
struct CompilationRecord {
  uint64_t start = 0;  // ticks()
  int64_t graph_id = 0, step = 0;
  std::string signature, shape_erased, reason, trigger, diff, source_path, cache;
  const char* site_name = "mark_step";
  std::source_location site;
  int64_t nodes_before = 0, nodes_after = 0, kernels = 0, passes_ns = 0, codegen_ns = 0, build_ns = 0;
};
void on_compilation(const CompilationRecord& c);
void on_compilation_input(int64_t graph_id, const std::string& input, int64_t dim, int64_t old_value,
                          int64_t new_value, bool dynamic);
void on_compile_pass(int64_t graph_id, uint64_t start, uint64_t end, const char* pass, int64_t nodes_after);
struct MemoryPlanRecord {
  int64_t graph_id = 0, peak = 0, workspace = 0, batch_bytes = 0, batch_size = 0, capacity = 0;
  std::array<int64_t, kCategoryCount> by_category{};
};
void on_memory_plan(const MemoryPlanRecord& m);
// ---- kernels ------------------------------------------------------------------
// What a kernel of a compiled graph is (the kernels table).
struct KernelRecord {
  std::string kind, ops, loop, sites;
  int64_t bytes_read = 0, bytes_written = 0, flops = 0;
};
void on_kernels(int64_t graph_id, const std::vector<KernelRecord>& kernels);
// True when kernel times are wanted (recording is on): the runtime then times
// each kernel of an execution and reports the ticks below.
bool timing_kernels();
// The recording clock, for the backend's kernel timing.
uint64_t clock_now();
// Kernel k of `graph_id` ran from ticks[2k] to ticks[2k+1] in `execution_id`.
void on_kernel_times(int64_t execution_id, int64_t graph_id, const uint64_t* ticks, std::size_t kernels);
// An op of the eager executor is a kernel of graph 0: described once per
// distinct op, site and shapes (kernel: an id unique in the run), then timed
// on every run.
void on_eager_kernel(int64_t kernel, const KernelRecord& k);
void on_eager_op_time(int64_t execution_id, int64_t kernel, uint64_t start, uint64_t end);
// A number that changes when a new recording session starts (0: none), so
// that what was described once per session is described again.
uint32_t recording_session();
// The machine's ceilings for the roofline (once per run and backend).
struct CeilingsRecord {
  double gflops = 0, gbps = 0;
  const char* source = "";       // "measured" or "cached"
  std::string_view isa, kernel;  // "" where the backend does not say
  int64_t threads = 0;
};
void on_ceilings(const char* backend, const CeilingsRecord& c);
// True once on_ceilings() ran in this recording session.
bool ceilings_recorded();
// A setting this process chose (run_env; one row per distinct name and value),
// e.g. ("TC_DEVICE", "cpu") for the backend.
void on_setting(const char* name, const char* value);
// Names the calling thread in the store's threads table (e.g. "tc builder").
void on_thread_name(std::string_view name);
// TC_DEBUG=1: the line goes to stderr and to the logs table.
bool debug_enabled();
void log_debug(const std::string& message);
// A warning the caller has shown the user (stderr): recorded in the logs
// table with level 'warning', whatever TC_DEBUG says.
void log_warning(const std::string& message);

// Test-only observer (not for production use): sees explicit evaluations,
// mark_steps and out-of-memory events. nullptr to detach.
struct TestObserver {
  virtual ~TestObserver() = default;
  virtual void explicit_evaluation(EvalKind kind, const std::source_location& where, int64_t nodes,
                                   int64_t dur_ns) {}
  virtual void mark_step(int64_t step) {}
  virtual void graph_executed(ExecTrigger trigger, int64_t nodes) {}
  virtual void out_of_memory(int64_t requested, int64_t live, int64_t capacity) {}
  virtual void compilation(const CompilationRecord& c) {}
  virtual void memory_plan(const MemoryPlanRecord& m) {}
};
void set_test_observer(TestObserver* observer);

// tc::dist: a collective on this rank (ts = arrival), and the process's rank.
void on_collective(uint64_t start, int64_t seq, const char* op, int64_t bytes, int64_t tensors, const std::source_location& where);
void on_rank(int64_t rank, int64_t world_size, const std::string& host, const std::string& job, int64_t offset_ns, int64_t error_ns);

// tc's structure as NVTX ranges in domain "tc" ("tc.step", "tc.compile",
// "tc.execute", the payload the step index or the graph id), for a tool other
// than tc that is attached to the program (Nsight Systems sets
// NVTX_INJECTION64_PATH). Nothing when no tool is attached, and nothing when
// the tool is tc's own libtc_nvtx: tc-profile records these already, and
// would count them twice.
class NvtxScope {
 public:
  enum Kind { kStep = 0, kCompile = 1, kExecute = 2 };
  NvtxScope(Kind kind, int64_t payload) noexcept;
  ~NvtxScope();
  NvtxScope(const NvtxScope&) = delete;
  NvtxScope& operator=(const NvtxScope&) = delete;

 private:
  bool on_;
};
// Whether NvtxScope emits: decided once per process from NVTX_INJECTION64_PATH.
bool nvtx_to_other_tool();

}  // namespace tc::events
