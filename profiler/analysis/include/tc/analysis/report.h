// tc/analysis/report.h: what a run cost, why, and what to change.
//
//   auto store = tc::store::Reader::open("run.tcdb");
//   auto report = tc::analysis::analyze(*store);
//   for (const auto& f : report->findings) std::cout << f.title << "\n  " << f.suggestion << "\n";
//   std::cout << tc::analysis::to_json(*report);   // schema "tc-analyze/1"
//
// Used by tc-analyze and tc-viewer. Reads a store only through
// profiler/store; never throws; a store it cannot make sense of gives a Status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tc/analysis/ranges.h"
#include "tc/store/reader.h"
#include "tc/store/status.h"

namespace tc::analysis {

enum class Severity { kInfo, kWarning, kError };
const char* severity_name(Severity s);  // "info", "warning", "error"

// One finding: a problem in the run, its evidence, the fix and its saving.
struct Finding {
  std::string kind;  // exact strings: recompilation.shape_change, recompilation.structure_change,
                     // recompilation.limit_reached, recompilation.dynamic_marked (torch.compile),
                     // explicit_evaluation, memory.headroom, memory.oom, compile.amortization,
                     // kernel.hotspot; over several ranks' stores also distributed.straggler,
                     // distributed.desync (tc/analysis/job.h)
  Severity severity = Severity::kInfo;
  std::string title;       // one line: what happened and what it cost
  std::string suggestion;  // the concrete change, with numbers
  double estimated_saving_s = 0;
  std::string evidence_json;  // a JSON object with the numbers behind the finding
  // What the finding is about, without its numbers ("input_ids dim 1: 12,20"
  // for a shape change, the call site for an explicit evaluation): two ranks'
  // findings of one kind and identity are the same finding (tc/analysis/job.h).
  std::string identity;
  // Where on the timeline (store ns) the viewer jumps when the finding is
  // selected; may be empty.
  std::vector<int64_t> anchors_ts;
};

struct RunInfo {
  std::vector<std::string> command;
  std::string cwd, host, collector, tc_version;
  bool complete = false;
  std::optional<int64_t> exit_code, exit_signal;
  int64_t start_ts = 0, end_ts = 0;  // end_ts = start_ts when unknown
  double wall_s = 0;
  int64_t event_count = 0, dropped_count = 0;
  // tc-profile --step-range NAME, and how NVTX was captured ('tc',
  // 'user: PATH', 'off'); absent when not recorded (and before schema v3).
  std::optional<std::string> step_range, nvtx;
  std::optional<std::string> cupti;  // run.cupti (v5): "tc", "user: PATH", "off"
};

struct Summary {
  int64_t steps = 0;                 // Report::steps.size()
  // Where the steps came from: "mark_step" (the steps table), "range" (the
  // occurrences of the range `step_range`) or "" (no steps).
  std::string step_source, step_range;
  double step_p50_s = 0, step_p99_s = 0;  // step durations, nearest rank as in RangeStats
  int64_t compilations = 0;
  int64_t recompilations = 0;        // compilations whose reason is not 'first'
  int64_t explicit_evaluations = 0;
  double compile_s = 0, execute_s = 0;
  // How execute_s was measured: "executions" (tc's graph executions), "steps"
  // (a framework's compiler logs none: its steps' time less the compiling
  // inside them) or "" when it was not: execute_s is then 0 and means
  // nothing, and execute_unmeasured says why in one phrase.
  std::string execute_source = "executions", execute_unmeasured;
  int64_t peak_bytes = 0;            // highest memory.live_bytes sample, or planned peak
  int64_t capacity_bytes = 0;        // device capacity (0 if unknown); Options::capacity_bytes when given
  // Where peak_bytes came from: "counter" (memory.live_bytes samples), "plan"
  // (tc's memory plans), "xla_memory_analysis" (a JAX run: XLA's
  // memory_analysis() of each compiled executable), "torch_tensors" (a torch
  // run on the CPU: its steps' parameters, gradients, optimizer state and
  // saved activations), "torch_cuda_allocator" (a torch run on a GPU:
  // torch.cuda's peak allocated bytes per step), "xla_memory_info" (a
  // PyTorch/XLA run on an accelerator: xm.get_memory_info() after each
  // sync), "" (no memory data).
  std::string memory_source;
  // A framework run without memory numbers: why, in one phrase (the text
  // summary's memory line; docs/frameworks.md#memory). "" otherwise.
  std::string memory_unmeasured;
  // The user's source line whose kernels took most of the execute time
  // ("train.cpp:88"; empty without kernel timings) and its share.
  std::string top_site;
  double top_site_share = 0;
  // GPU activity CUPTI recorded (gpu_activity, schema v5): kernel time on
  // the device, the kernel name that held most of it and its share, bytes
  // copied or set; gpu_capture: "recorded", "unavailable" (gpu_capture_detail
  // says why) or "" when no capture ran.
  double gpu_kernel_s = 0;
  std::string gpu_top_kernel;
  double gpu_top_kernel_share = 0;
  int64_t gpu_copy_bytes = 0;
  std::string gpu_capture, gpu_capture_detail;
};

// Kernel time by what the kernel computes and where it came from
// ("matmul @ train.cpp:88"): graph numbers differ between runs, this does not.
struct KernelTotal {
  std::string name;
  int64_t calls = 0;
  double total_s = 0;
};

// One training step: a tc::mark_step() call, or one occurrence of the step range.
struct Step {
  int64_t index = 0;  // mark_step(): its step column; from a range: 0, 1, 2, ... by ts
  int64_t utid = 0, ts = 0, dur = 0;
  int64_t compile_ns = 0;  // compiling of its process inside [ts, ts + dur]
  int64_t execute_ns() const { return dur > compile_ns ? dur - compile_ns : 0; }
};

struct Report {
  RunInfo run;
  Summary summary;
  // What the findings save together (tc-analyze suggest's total): each
  // group of findings whose savings are the same seconds (alternatives, one
  // compilation's dims) counted once, by its largest; at most the wall time.
  double total_saving_s = 0;
  // The run's steps, sorted by ts: every finding that needs steps reads
  // these. The steps table's rows; when it has none and a step range is named
  // (Options::step_range, else run.step_range), that range's outermost
  // occurrences on each thread (an occurrence inside another of the same name
  // on its thread is not a step; a cut one is not a step either).
  std::vector<Step> steps;
  // Every range and mark of the run, unfiltered (tc/analysis/ranges.h).
  RangeTable ranges;
  // One line for each thing the report lacks and what it would take, e.g.
  // "no training steps: the program does not link tc and no --step-range was
  // given; ..."; also in to_json()'s "notes".
  std::vector<std::string> notes;
  std::vector<KernelTotal> kernels;  // largest first; empty without kernel timings
  std::vector<Finding> findings;  // most costly first
  // Distinct names (and other text) of the store that were not valid UTF-8;
  // the report holds them with U+FFFD in place of each bad sequence.
  int64_t invalid_utf8_names = 0;
};

struct Options {
  double memory_safety_margin = 0.10;  // headroom kept free when suggesting a batch size
  // The memory the run may use, in bytes (tc-analyze --capacity): replaces
  // the capacity the store recorded. 0: the store's.
  int64_t capacity_bytes = 0;
  // Take the steps from this range (tc-analyze --step-range) instead of the
  // one the run recorded (run.step_range); used only when the steps table is empty.
  std::optional<std::string> step_range;
};

StatusOr<Report> analyze(const store::Reader& store, const Options& options = {});

// Whether the run recorded nothing a report can show: no steps, ranges,
// marks, compilations, executions, explicit evaluations or GPU activity
// (tc-analyze exit 12).
bool recorded_nothing(const Report& report);

// The report as one JSON object (docs/analyze-json.md), schema "tc-analyze/1".
// Always valid JSON and UTF-8, whatever bytes the store's names hold.
std::string to_json(const Report& report);

}  // namespace tc::analysis
