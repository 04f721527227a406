// tc/trace/records.h: every structured record, declared once.
//
// A record is one row of a store table (docs/schema.md). Its declaration
// below names its kind, its table, the table's doc, and its fields in order,
// each with a type and a one-line doc. A producer fills the struct generated
// from that declaration and emits it:
//
//   namespace tr = tc::trace;
//   tr::emit(tr::rec::Step{
//       .ts = tr::Ticks{start},
//       .dur = tr::Ticks{tr::now() - start},
//       .step = step,
//       .loc_id = tr::location_id("mark_step", where)});
//
// Contract:
// - Every field must be given: leaving one out does not compile, and neither
//   does a value of the wrong type (Text takes a StringId from intern(), Ts
//   and Dur take Ticks, Loc takes a LocationId from location_id(); a raw
//   integer is none of these). StringId{} is an explicit NULL.
// - emit() writes the fields in declaration order as one record (a kRecord
//   slot and its payload); it never allocates, locks or throws, and does
//   nothing while recording is off.
// - The store builds each record table from the same declaration: columns
//   id, utid (the recording thread), then the fields. The collector stores a
//   record only if it carries exactly the declared number of fields; any
//   other record is dropped, counted in the dropped table, and the run is
//   marked incomplete.
// - Changing a record: append fields only, each new one with
//   `.since = N` (N = the new tc::store::kSchemaVersion), and bump that
//   version. A new kind is appended with the next number. Never reorder.
//
// Standard library only: profiler/store and profiler/collect read the
// declarations (kRecords) as data.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tc::trace {

// ---------------------------------------------------------------- value types

// Recording-clock ticks (now()): a point in time, or a length (end - start).
struct Ticks {
  explicit constexpr Ticks(uint64_t v) noexcept : value(v) {}
  uint64_t value;
};

// An interned string (intern()). StringId{} is "no string" (NULL in the store).
// It converts to its number for the raw record() wire, never from one.
struct StringId {
  constexpr StringId() noexcept = default;
  explicit constexpr StringId(uint32_t v) noexcept : value(v) {}
  constexpr operator uint32_t() const noexcept { return value; }
  constexpr bool operator==(const StringId&) const noexcept = default;
  uint32_t value = 0;
};

// A recording location (location_id(), or a Site): locations.id in the store.
struct LocationId {
  constexpr LocationId() noexcept = default;
  explicit constexpr LocationId(uint32_t v) noexcept : value(v) {}
  constexpr bool operator==(const LocationId&) const noexcept = default;
  uint32_t value = 0;
};

// How a field travels (one int64) and becomes a column.
enum class FieldType : uint8_t {
  kTs,         // Ticks: a point in time; stored as CLOCK_MONOTONIC ns (INTEGER)
  kDur,        // Ticks: a length measured from the record's Ts field; stored as ns (INTEGER)
  kInt,        // any integer (INTEGER)
  kIntOrNull,  // an integer where 0 means unknown; 0 is stored as NULL (INTEGER)
  kText,       // StringId; stored as the text, StringId{} as NULL (TEXT)
  kReal,       // double (REAL)
  kLoc,        // LocationId; stored as locations.id (INTEGER)
};

// A field that must be initialized: it has no default, so omitting it from a
// record's initializer does not compile.
template <class T>
class Required {
 public:
  constexpr Required(T v) noexcept : v_(v) {}
  constexpr T get() const noexcept { return v_; }

 private:
  T v_;
};

// Integers of any width convert; class types (StringId, Ticks, ...) do not.
template <>
class Required<int64_t> {
 public:
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  constexpr Required(I v) noexcept : v_(static_cast<int64_t>(v)) {}
  constexpr int64_t get() const noexcept { return v_; }

 private:
  int64_t v_;
};

namespace detail {
template <FieldType> struct FieldArg;
template <> struct FieldArg<FieldType::kTs> { using type = Ticks; };
template <> struct FieldArg<FieldType::kDur> { using type = Ticks; };
template <> struct FieldArg<FieldType::kInt> { using type = int64_t; };
template <> struct FieldArg<FieldType::kIntOrNull> { using type = int64_t; };
template <> struct FieldArg<FieldType::kText> { using type = StringId; };
template <> struct FieldArg<FieldType::kReal> { using type = double; };
template <> struct FieldArg<FieldType::kLoc> { using type = LocationId; };

constexpr int64_t wire(Ticks t) noexcept { return static_cast<int64_t>(t.value); }
constexpr int64_t wire(StringId s) noexcept { return s.value; }
constexpr int64_t wire(LocationId l) noexcept { return l.value; }
constexpr int64_t wire(int64_t v) noexcept { return v; }
constexpr int64_t wire(double d) noexcept { return std::bit_cast<int64_t>(d); }
}  // namespace detail

// ---------------------------------------------------------------- the declarations
//
// R(Name, kind, table, table doc, utid doc, FIELDS); FIELDS(F) lists
// (an empty utid doc: the table has no utid column, the row is the run's)
// F(Type, name, doc[, .since = version]) with Type one of Ts, Dur, Int,
// IntOrNull, Text, Real, Loc (FieldType without the k).

#define TC_TRACE_RECORDS(R)                                                                                                  \
  R(Step, 1, steps, "Training steps: one row per tc::mark_step() call.",                                                     \
    "the thread that called tc::mark_step() (threads.utid)", TC_TRACE_STEP_FIELDS)                                          \
  R(Compilation, 2, compilations, "Every compilation of a cut graph, and why it happened.",                                  \
    "the thread that compiled (threads.utid)", TC_TRACE_COMPILATION_FIELDS)                                                 \
  R(CompilationInput, 3, compilation_inputs,                                                                                 \
    "For each shape_change compilation, every input dimension that differs from the closest earlier graph.",                \
    "the thread that compiled (threads.utid)", TC_TRACE_COMPILATION_INPUT_FIELDS)                                           \
  R(CompilePass, 4, compile_passes, "Each optimizing pass of each compilation, timed.",                                      \
    "the thread that compiled (threads.utid)", TC_TRACE_COMPILE_PASS_FIELDS)                                                \
  R(Execution, 5, executions, "Every execution of a graph, compiled or eager.", "the thread that executed (threads.utid)",   \
    TC_TRACE_EXECUTION_FIELDS)                                                                                               \
  R(ExplicitEvaluation, 6, explicit_evaluations,                                                                             \
    "item(), to_host() or printing of a pending tensor: each one cut the graph and ran it on the spot.",                     \
    "the thread (threads.utid)", TC_TRACE_EXPLICIT_EVALUATION_FIELDS)                                                       \
  R(MemoryPlan, 7, memory_plans, "The memory planner's result for each compiled graph.",                                    \
    "the thread that compiled (threads.utid)", TC_TRACE_MEMORY_PLAN_FIELDS)                                                 \
  R(OutOfMemory, 8, out_of_memory, "Allocations that exceeded the device's capacity, with what was live.",                   \
    "the thread whose allocation failed (threads.utid)", TC_TRACE_OUT_OF_MEMORY_FIELDS)                                     \
  R(Log, 9, logs, "Log lines from the compiler and runtime (TC_DEBUG=1 or tc-profile --debug).",                            \
    "the thread that logged (threads.utid)", TC_TRACE_LOG_FIELDS)                                                           \
  R(RunEnv, 10, run_env,                                                                                                     \
    "The TC_* environment variables of the run (and the MPI launcher's rank, size and job: OMPI_COMM_WORLD_RANK, ...), "    \
    "one row each, and what a process chose where the variable was unset (TC_DEVICE: the backend its graphs ran on).",                                                                  \
    "", TC_TRACE_RUN_ENV_FIELDS)                                                                                             \
  R(Kernel, 11, kernels,                                                                                                     \
    "Every kernel of every compiled graph (and each distinct op of the eager executor): what it computes, its cost from "   \
    "the kernel IR, and the user's source lines it came from.",                                                             \
    "the thread that compiled (threads.utid)", TC_TRACE_KERNEL_FIELDS)                                                      \
  R(KernelExecution, 12, kernel_executions,                                                                                  \
    "Every timed run of a kernel: one row per kernel per execution while recording.",                                       \
    "the thread that executed (threads.utid)", TC_TRACE_KERNEL_EXECUTION_FIELDS)                                            \
  R(Ceilings, 13, ceilings,                                                                                                  \
    "What this machine reaches, measured once per machine and backend by a short calibration: the roofline kernels are "    \
    "put against.",                                                                                                          \
    "the thread that recorded it (threads.utid)", TC_TRACE_CEILINGS_FIELDS)                                              \
  R(NvtxSite, 14, nvtx_sites,                                                                                                \
    "NVTX: one row per distinct (message, domain, category, colour) a program used in a range or mark; its ranges and "     \
    "marks are rows of ranges and instants with this loc_id (and of nvtx_range_starts for start/end ranges).",              \
    "the thread that first used it (threads.utid)", TC_TRACE_NVTX_SITE_FIELDS)                                              \
  R(NvtxCategory, 15, nvtx_categories, "NVTX: category names (nvtxNameCategory, nvtxDomainNameCategory).",                 \
    "the thread that named it (threads.utid)", TC_TRACE_NVTX_CATEGORY_FIELDS)                                               \
  R(NvtxRangeStart, 16, nvtx_range_starts,                                                                                   \
    "NVTX start/end ranges (nvtxRangeStart, nvtxDomainRangeStartEx): one row per start; the end, on any thread, is in "     \
    "nvtx_range_ends with the same process and range_id. A start without an end was cut by the program's end.",            \
    "the thread that started it (threads.utid)", TC_TRACE_NVTX_RANGE_START_FIELDS)                                          \
  R(NvtxRangeEnd, 17, nvtx_range_ends, "NVTX start/end ranges: one row per nvtxRangeEnd of a started range.",               \
    "the thread that ended it (threads.utid)", TC_TRACE_NVTX_RANGE_END_FIELDS)                                              \
  R(NvtxRealPayload, 18, nvtx_real_payloads,                                                                                 \
    "NVTX: a floating-point payload of a range or mark (integer payloads are in ranges.arg and instants.arg); it belongs "  \
    "to the event of the same thread, loc_id and ts.",                                                                      \
    "the thread (threads.utid)", TC_TRACE_NVTX_REAL_PAYLOAD_FIELDS)                                                         \
  R(NvtxThreadName, 19, nvtx_thread_names,                                                                                   \
    "NVTX: nvtxNameOsThread calls, naming a thread by its OS id (threads.tid) in the calling process; a thread that names " \
    "itself also gets threads.name.",                                                                                        \
    "the thread that called it (threads.utid)", TC_TRACE_NVTX_THREAD_NAME_FIELDS)                                        \
  R(Collective, 20, collectives,                                                                                             \
    "Data-parallel collectives (tc::dist): one row per call on this rank. ts is when this rank arrived, dur includes its " \
    "wait for the others; seq numbers the calls, equal on every rank for the same collective.",                           \
    "the thread that called it (threads.utid)", TC_TRACE_COLLECTIVE_FIELDS)                                                 \
  R(Rank, 21, ranks,                                                                                                         \
    "The process's place in a data-parallel job (tc::dist::init), one row per process; a world of 1 without a launcher.",  \
    "the thread that called tc::dist::init (threads.utid)", TC_TRACE_RANK_FIELDS)                                       \
  R(GpuActivity, 22, gpu_activity,                                                                                           \
    "GPU activity from CUPTI (libtc_cupti.so, loaded by the CUDA driver through CUDA_INJECTION64_PATH): one row per "      \
    "kernel, memcpy and memset of any program on the GPU; tc's own kernels (tc_g<graph>_k<n>) join executions and kernels.", \
    "the thread that drained CUPTI's buffer (threads.utid)", TC_TRACE_GPU_ACTIVITY_FIELDS)                                \
  R(GpuCapture, 23, gpu_capture,                                                                                             \
    "CUPTI capture per process: whether it recorded, what it wrote and what CUPTI lost (one row when the process ends, "  \
    "or when capture could not start).",                                                                                    \
    "the thread that wrote it (threads.utid)", TC_TRACE_GPU_CAPTURE_FIELDS)

#define TC_TRACE_GPU_ACTIVITY_FIELDS(F)                                                                                     \
  F(Ts, ts, "when it started on the device (CUPTI's timestamp, on the recording clock)")                                  \
  F(Dur, dur, "how long it ran on the device")                                                                             \
  F(Text, kind, "'kernel', 'memcpy_htod', 'memcpy_dtoh', 'memcpy_dtod', 'memcpy_other' or 'memset'")                      \
  F(Text, name, "the kernel's name as CUPTI reports it (mangled for C++ kernels); NULL for a copy or a set")              \
  F(Int, bytes, "bytes copied or set; 0 for a kernel")                                                                     \
  F(Int, device, "the CUDA device")                                                                                        \
  F(Int, stream, "CUPTI's stream id")                                                                                      \
  F(Int, correlation_id, "CUPTI's correlation id of the launching API call")                                             \
  F(IntOrNull, execution_id, "tc's execution that launched it (the external correlation id tc pushes); NULL for others")  \
  F(IntOrNull, graph_id, "for a tc kernel (tc_g<graph>_k<n>): its graph (kernels.graph_id); NULL otherwise")              \
  F(Int, kernel, "for a tc kernel: its kernel (kernels.kernel); -1 otherwise")                                             \
  F(Int, blocks, "blocks in the kernel's grid (x*y*z); 0 for a copy or a set")                                             \
  F(Int, threads, "threads per block (x*y*z); 0 for a copy or a set")

#define TC_TRACE_GPU_CAPTURE_FIELDS(F)                                                                                       \
  F(Ts, ts, "when it was written")                                                                                         \
  F(Text, status, "'recorded' (CUPTI ran; its rows are in gpu_activity) or 'unavailable' (capture did not start)")         \
  F(Text, detail, "for 'unavailable': what failed, e.g. 'cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_UNKNOWN'; "   \
    "for 'recorded': the CUPTI library loaded")                                                                             \
  F(Int, records, "rows written to gpu_activity by this process")                                                          \
  F(Int, dropped, "activity records CUPTI reported lost (cuptiActivityGetNumDroppedRecords): buffers were full")           \
  F(Int, buffers, "activity buffers drained")                                                                              \
  F(Int, other_records, "records of kinds tc does not translate (counted, not stored)")                                  \
  F(Int, unreadable, "records that could not be used: a buffer whose walk stopped at an incomplete or unknown record "   \
    "(the rest of that buffer, counted once), a kernel or copy without times")

#define TC_TRACE_COLLECTIVE_FIELDS(F)                                                                                  \
  F(Ts, ts, "when this rank entered it")                                                                               \
  F(Dur, dur, "until it returned: the wait for the last rank plus the transfer")                                      \
  F(Int, step, "the step during which it ran (steps.step)")                                                            \
  F(Int, seq, "its number among this rank's collectives, from 1: the same collective has the same seq on every rank") \
  F(Text, op, "'all_reduce_mean', 'broadcast' or 'barrier'")                                                           \
  F(Int, bytes, "bytes this rank sent (the packed buffer)")                                                            \
  F(Int, tensors, "tensors packed into it")                                                                            \
  F(Loc, loc_id, "the user's call site (locations.id)")

#define TC_TRACE_RANK_FIELDS(F)                                                                                         \
  F(Int, rank, "this process's rank")                                                                                   \
  F(Int, world_size, "ranks in the job")                                                                                \
  F(Text, host, "host name")                                                                                            \
  F(Text, job, "the launcher's job id (Open MPI's OMPI_MCA_orte_ess_jobid or PMIX_NAMESPACE, Slurm's SLURM_JOB_ID.SLURM_STEP_ID); NULL if none") \
  F(Int, clock_offset_ns, "rank 0's CLOCK_MONOTONIC minus this rank's, measured at init (0 on rank 0): add it to this store's ts to line up with rank 0") \
  F(Int, clock_error_ns, "half the shortest ping-pong round trip of that measurement: the offset's uncertainty")

#define TC_TRACE_NVTX_SITE_FIELDS(F)                                                                                      \
  F(Loc, loc_id, "the site (locations.id: name = the message, file = 'nvtx', function = the domain)")                    \
  F(Text, domain, "the NVTX domain (nvtxDomainCreate); NULL for NVTX's default domain")                                  \
  F(IntOrNull, category, "the category id (nvtx_categories.category); NULL when none was given")                         \
  F(IntOrNull, color, "the colour as 0xAARRGGBB; NULL when none was given")                                               \
  F(Text, message_type, "how the message came: 'ascii', 'unicode' (converted to UTF-8), 'registered' or 'none'")

#define TC_TRACE_NVTX_CATEGORY_FIELDS(F)                                         \
  F(Text, domain, "the domain; NULL for NVTX's default domain")                  \
  F(Int, category, "the category id")                                           \
  F(Text, name, "its name")

#define TC_TRACE_NVTX_RANGE_START_FIELDS(F)                                                                     \
  F(Ts, ts, "when it started")                                                                                  \
  F(Int, range_id, "the id nvtxRangeStart returned, unique in its process (processes.upid of utid)")            \
  F(Loc, loc_id, "what the range is (locations.id, nvtx_sites.loc_id)")                                         \
  F(Int, payload, "its integer payload (0 when none; a floating-point one is in nvtx_real_payloads)")

#define TC_TRACE_NVTX_RANGE_END_FIELDS(F)                                         \
  F(Ts, ts, "when it ended")                                                      \
  F(Int, range_id, "the range ended (nvtx_range_starts.range_id, same process)")

#define TC_TRACE_NVTX_REAL_PAYLOAD_FIELDS(F)                               \
  F(Ts, ts, "the event's ts (ranges.ts, instants.ts or nvtx_range_starts.ts)") \
  F(Loc, loc_id, "the event's loc_id")                                      \
  F(Real, value, "the payload")

#define TC_TRACE_NVTX_THREAD_NAME_FIELDS(F)                  \
  F(Int, tid, "the OS thread id named (threads.tid)")         \
  F(Text, name, "the name")

#define TC_TRACE_STEP_FIELDS(F)                                                    \
  F(Ts, ts, "when mark_step() was called")                                         \
  F(Dur, dur, "how long mark_step() took: cut, compile on a miss, execute")        \
  F(Int, step, "the step index, counting mark_step() calls from 0")               \
  F(Loc, loc_id, "the call site of mark_step() (locations.id)")

#define TC_TRACE_COMPILATION_FIELDS(F)                                                                                     \
  F(Ts, ts, "when the compilation started")                                                                                \
  F(Dur, dur, "its length: passes, planning, codegen and build")                                                           \
  F(Int, graph_id, "the compiled graph, unique in the run (across its processes); executions refer to it")                \
  F(Int, step, "the step during which it happened (steps.step)")                                                           \
  F(Text, signature, "structural hash of the graph: ops, attributes, dtypes, shapes (hex)")                                \
  F(Text, shape_erased, "the same hash without shapes (hex): equal for graphs that differ only in shapes")                 \
  F(Text, reason, "'first' (no graph of this structure before), 'shape_change' or 'structure_change'; 'tier_up': the optimized build of a graph that ran on its eager tier meanwhile (TC_TIERED)") \
  F(Text, trigger, "what cut the graph: 'mark_step', 'explicit_evaluation' or 'collective' (tc::dist::broadcast; an all-reduce is an op inside the graph); torch.compile: 'frame_call', 'graph_break' (a resume function) or 'backward' (the frame's backward graph, compiled at its first backward: part of the compilation `frame` names, not one more); tc: 'tier_up' (the build of a graph whose eager tier ran the steps meanwhile, on a thread of its own: no compilation more, and no time the program waited)")                                              \
  F(Loc, loc_id, "the user's call site that cut the graph (locations.id)")                                                 \
  F(Int, nodes_before, "IR nodes before the passes")                                                                       \
  F(Int, nodes_after, "IR nodes after the passes")                                                                         \
  F(Int, kernels, "kernels generated")                                                                                     \
  F(Int, passes_ns, "time in the optimizing passes")                                                                       \
  F(Int, codegen_ns, "time generating code")                                                                               \
  F(Int, build_ns, "time building the generated code (0 on a disk cache hit)")                                             \
  F(Text, cache, "'built' (compiled from source), 'disk_hit' (loaded from TC_CACHE_DIR) or 'eager' (runs on the eager executor until its build, the next 'tier_up' row of its signature, takes over)") \
  F(Text, diff,                                                                                                            \
    "for structure_change: what differs from the closest earlier graph (node counts, first differing op and its call "    \
    "site); NULL otherwise")                                                                                               \
  F(Text, source_path, "the generated source file, kept for the user")

#define TC_TRACE_COMPILATION_INPUT_FIELDS(F)                                                                  \
  F(Int, graph_id, "the compilation (compilations.graph_id) whose reason is shape_change")                    \
  F(Text, input, "the input whose shape changed: the user's name, else its creation site file:line")          \
  F(Int, dim, "the dimension that changed")                                                                   \
  F(Int, old_value, "its size in the closest earlier graph")                                                  \
  F(Int, new_value, "its size in this graph")                                                                 \
  F(Int, dynamic,                                                                                             \
    "1 when the compiler made this dimension dynamic (symbolic) in this compilation (tc's TC_DYNAMIC, "         \
    "torch.compile's automatic_dynamic), so later sizes reuse it; 0 for a static recompilation",               \
    .since = 4)

#define TC_TRACE_COMPILE_PASS_FIELDS(F)                              \
  F(Int, graph_id, "the compilation (compilations.graph_id)")        \
  F(Ts, ts, "when the pass started")                                 \
  F(Dur, dur, "how long it ran")                                     \
  F(Text, pass, "the pass, e.g. 'dce', 'cse', 'fuse_elementwise'")   \
  F(Int, nodes_after, "IR nodes after the pass")

#define TC_TRACE_EXECUTION_FIELDS(F)                                                                   \
  F(Ts, ts, "when the execution started")                                                              \
  F(Dur, dur, "how long it ran")                                                                       \
  F(Int, graph_id, "the graph executed (compilations.graph_id; 0 for the eager executor)")            \
  F(Int, step, "the step during which it ran")                                                         \
  F(Text, trigger, "'mark_step', 'explicit_evaluation', 'collective' or 'eager'")                                    \
  F(Int, nodes, "IR nodes executed")                                                                   \
  F(Int, execution_id, "this execution, unique in the run (an eager op is one execution too); kernel records refer to it", \
    .since = 2)                                                                                         \
  F(IntOrNull, dynamic_size, "a dynamic graph's size s in this execution (its symbolic dims are forms of s; the "       \
    "compilation_inputs rows with dynamic = 1 name them); NULL for a static graph or the eager executor", .since = 8)

#define TC_TRACE_EXPLICIT_EVALUATION_FIELDS(F)                                                      \
  F(Ts, ts, "when the evaluation was forced")                                                       \
  F(Dur, dur, "what it cost: cut, compile if needed, execute, copy to the host")                    \
  F(Int, step, "the step during which it happened")                                                 \
  F(Text, kind, "'item', 'to_host' or 'print'; torch.compile also 'graph_break' (any other break) and 'ddp' (a break inside DistributedDataParallel's forward)") \
  F(Loc, loc_id, "the user's call site (locations.id: file, line, function)")                      \
  F(Int, nodes, "IR nodes in the subgraph it cut")                                                  \
  F(Int, graph_id, "the graph it ran (compilations.graph_id; 0 when run eagerly)")

#define TC_TRACE_MEMORY_PLAN_FIELDS(F)                                                                                \
  F(Int, graph_id, "the compiled graph (compilations.graph_id)")                                                      \
  F(Int, peak_bytes, "planned peak device bytes while the graph runs, everything live included")                      \
  F(Int, parameter_bytes, "of the peak: parameters")                                                                  \
  F(Int, gradient_bytes, "of the peak: gradients")                                                                    \
  F(Int, optimizer_state_bytes, "of the peak: optimizer state")                                                       \
  F(Int, activation_bytes, "of the peak: activations and other intermediates")                                        \
  F(Int, input_bytes, "of the peak: inputs")                                                                          \
  F(Int, workspace_bytes, "of the peak: scratch space of kernels")                                                    \
  F(Int, batch_bytes, "of the peak: bytes that scale with the batch dimension")                                       \
  F(IntOrNull, batch_size,                                                                                            \
    "the batch dimension's size in this graph (dim 0 of named inputs unless the user said otherwise); NULL if none") \
  F(Int, capacity_bytes, "the device's capacity when planned")

#define TC_TRACE_OUT_OF_MEMORY_FIELDS(F)                                                         \
  F(Ts, ts, "when it failed")                                                                    \
  F(Int, step, "the step during which it failed")                                                \
  F(Int, requested_bytes, "the allocation that did not fit")                                     \
  F(Int, live_bytes, "bytes live at that moment")                                                \
  F(Int, capacity_bytes, "the device's capacity (TC_DEVICE_MEMORY_LIMIT on CPU)")                \
  F(Int, parameter_bytes, "live bytes of parameters")                                            \
  F(Int, gradient_bytes, "live bytes of gradients")                                              \
  F(Int, optimizer_state_bytes, "live bytes of optimizer state")                                 \
  F(Int, activation_bytes, "live bytes of activations")                                          \
  F(Int, input_bytes, "live bytes of inputs")                                                    \
  F(Int, other_bytes, "live bytes of everything else")                                           \
  F(IntOrNull, batch_size, "the batch dimension's size in the failing graph; NULL if unknown")

#define TC_TRACE_RUN_ENV_FIELDS(F)                       \
  F(Text, name, "variable name, e.g. 'TC_EAGER'")         \
  F(Text, value, "its value")

#define TC_TRACE_KERNEL_FIELDS(F)                                                                                      \
  F(Int, graph_id, "the compiled graph (compilations.graph_id); 0 for an op of the eager executor")                      \
  F(Int, kernel, "the kernel's index in its graph, in execution order (for the eager executor: an id unique in the run)") \
  F(Text, kind, "'elementwise', 'reduce', 'matmul', 'scatter', 'attention', 'attention_grad' (tc::self_attention, forward and gradient), 'layer_norm', 'layer_norm_grad' (tc::layer_norm) or 'collective' (a tc::dist all-reduce: its time includes the wait for the other ranks)")                                                         \
  F(Text, ops, "the IR ops fused into it, the root first, e.g. 'matmul,sub,mul'")                                        \
  F(Text, loop, "its loop shape: extents joined by 'x'; for a matmul [batch x] M x N x K")                              \
  F(Int, bytes_read, "bytes of the buffers it reads, each counted once")                                                 \
  F(Int, bytes_written, "bytes of the buffer it writes")                                                                 \
  F(Int, flops, "floating-point operations per run, from the kernel IR (2 M N K per matrix product)")                    \
  F(Text, sites, "the user's source lines of the ops fused into it, 'file:line' joined by ';', most ops first; a "      \
    "backward kernel carries its forward op's line, an optimizer update the step() call's")

#define TC_TRACE_KERNEL_EXECUTION_FIELDS(F)                                                                              \
  F(Int, execution_id, "the execution it ran in (executions.execution_id)")                                              \
  F(Int, graph_id, "the graph (kernels.graph_id)")                                                                       \
  F(Int, kernel, "the kernel (kernels.kernel)")                                                                          \
  F(Ts, ts, "when it started")                                                                                           \
  F(Dur, dur, "how long it ran")

#define TC_TRACE_CEILINGS_FIELDS(F)                                                                                      \
  F(Text, backend, "the backend measured, e.g. 'cpu'")                                                                   \
  F(Real, gflops, "peak single-precision GFLOP/s of the matrix-product path (the kernel below, over the pool's threads)") \
  F(Real, gbps, "peak bandwidth in GB/s (a streaming copy on every pool thread; best of in-cache and beyond-cache sizes)") \
  F(Text, source, "'measured' (this run calibrated) or 'cached' (from the calibration file in TC_CACHE_DIR)")            \
  F(Text, isa, "the CPU's widest vector instruction set: 'avx512f', 'avx2+fma' or 'baseline' (NULL: not a CPU)",         \
    .since = 6)                                                                                                          \
  F(Text, kernel, "the product kernel measured, as TC_GEMM chose it: 'avx512', 'avx2' or 'blas' (NULL: not a CPU)",      \
    .since = 6)                                                                                                          \
  F(Int, threads, "the threads both probes ran on: the pool's, as compiled code uses them (0: not a CPU)", .since = 6)

#define TC_TRACE_LOG_FIELDS(F)                                                                                       \
  F(Ts, ts, "when")                                                                                                  \
  F(Text, level, "'debug', 'info', 'warning' or 'error'")                                                            \
  F(Text, message, "the line (TC_DEBUG=1 logs each pass, its time, kernel counts and generated source paths)")

// ---------------------------------------------------------------- generated from the declarations

#define TC_TRACE_KIND_(Name, kind_, ...) k##Name = kind_,
// Kinds of structured records; each goes to the store table of its declaration.
enum class RecordKind : uint16_t { kNone = 0, TC_TRACE_RECORDS(TC_TRACE_KIND_) kCount };
#undef TC_TRACE_KIND_

// One field of a record, as the store and the collector see it.
struct FieldDecl {
  FieldType type;
  std::string_view name;
  std::string_view doc;  // one line; the column's doc in docs/schema.md
  int since = 1;         // the store schema version that added it
};

struct RecordDecl {
  RecordKind kind;
  std::string_view table;     // the store table
  std::string_view doc;       // the table's doc
  std::string_view utid_doc;  // the doc of its utid column
  std::span<const FieldDecl> fields;
};

namespace detail {
#define TC_TRACE_FIELD_DECL_(type_, name_, doc_, ...) \
  FieldDecl{.type = FieldType::k##type_, .name = #name_, .doc = doc_ __VA_OPT__(, ) __VA_ARGS__},
#define TC_TRACE_FIELDS_(Name, kind_, table_, doc_, utid_doc_, FIELDS) \
  inline constexpr FieldDecl k##Name##Fields[] = {FIELDS(TC_TRACE_FIELD_DECL_)};
TC_TRACE_RECORDS(TC_TRACE_FIELDS_)
#undef TC_TRACE_FIELDS_
#undef TC_TRACE_FIELD_DECL_
}  // namespace detail

#define TC_TRACE_RECORD_DECL_(Name, kind_, table_, doc_, utid_doc_, FIELDS) \
  RecordDecl{RecordKind::k##Name, #table_, doc_, utid_doc_, detail::k##Name##Fields},
// Every record kind, in kind order: kRecords[i].kind == i + 1.
inline constexpr RecordDecl kRecords[] = {TC_TRACE_RECORDS(TC_TRACE_RECORD_DECL_)};
#undef TC_TRACE_RECORD_DECL_
inline constexpr size_t kRecordCount = std::size(kRecords);

// The declaration of a kind, or nullptr for a number this tc does not know.
constexpr const RecordDecl* record_decl(uint16_t kind) noexcept {
  return kind >= 1 && kind <= kRecordCount ? &kRecords[kind - 1] : nullptr;
}

namespace detail {
constexpr bool declarations_are_sound() {
  if (kRecordCount + 1 != static_cast<size_t>(RecordKind::kCount)) return false;
  for (size_t i = 0; i < kRecordCount; ++i) {
    const RecordDecl& r = kRecords[i];
    if (static_cast<size_t>(r.kind) != i + 1 || r.fields.empty() || r.fields.size() > 64) return false;
    bool ts = false;
    for (const FieldDecl& f : r.fields) {
      if (f.type == FieldType::kTs) ts = true;
      if (f.type == FieldType::kDur && !ts) return false;  // a Dur is measured from an earlier Ts
      if (f.since < 1) return false;
    }
  }
  return true;
}
static_assert(declarations_are_sound(),
              "record kinds are numbered 1, 2, ... in order; each has 1..64 fields; every Dur follows a Ts");
}  // namespace detail

// The wire primitive (trace.h): one record of `kind` with these fields.
void record(RecordKind kind, std::span<const int64_t> fields) noexcept;

// One struct per record kind, e.g. rec::Compilation; members in field order.
namespace rec {
#define TC_TRACE_MEMBER_(type_, name_, doc_, ...) Required<detail::FieldArg<FieldType::k##type_>::type> name_;
#define TC_TRACE_STRUCT_(Name, kind_, table_, doc_, utid_doc_, FIELDS) \
  struct Name {                                                        \
    static constexpr RecordKind kKind = RecordKind::k##Name;           \
    FIELDS(TC_TRACE_MEMBER_)                                           \
  };
TC_TRACE_RECORDS(TC_TRACE_STRUCT_)
#undef TC_TRACE_STRUCT_
#undef TC_TRACE_MEMBER_
}  // namespace rec

// Sends one record (see the contract above).
#define TC_TRACE_WIRE_(type_, name_, doc_, ...) detail::wire(r.name_.get()),
#define TC_TRACE_EMIT_(Name, kind_, table_, doc_, utid_doc_, FIELDS) \
  inline void emit(const rec::Name& r) noexcept {                    \
    const int64_t fields[] = {FIELDS(TC_TRACE_WIRE_)};               \
    static_assert(std::size(fields) == std::size(detail::k##Name##Fields)); \
    record(RecordKind::k##Name, std::span<const int64_t>(fields));   \
  }
TC_TRACE_RECORDS(TC_TRACE_EMIT_)
#undef TC_TRACE_EMIT_
#undef TC_TRACE_WIRE_

}  // namespace tc::trace
