// tc/import/import.h: framework importers. At the end of a run, the
// collector reads what a framework logged about its compiler into the same
// tables as tc's own compiler (compilations, compilation_inputs,
// explicit_evaluations), marked with their `framework` column, so that one
// findings engine serves every compiler.
//
//   tc::import::ImportTarget t{.writer = &writer, .start_ts = run.start_ts, .start_unix_ns = run.start_unix_ns};
//   auto s = tc::import::import_torch_trace("/tmp/tc-XXXX/torch_trace", t);
//   if (!s.ok()) return s.status();          // only when the store failed
//   // s->unknown_kinds, s->malformed, s->truncated: also in framework_imports
//
// torch.compile (TORCH_TRACE=DIR, torch 2.15; docs/frameworks.md): each
// compilation_metrics record is a compilations row (framework
// 'torch.compile', frame = its compile id 'F/C', failure = fail_type:
// fail_reason); each automatic_dynamic event and each "size mismatch" in a
// recompile_reason is a compilation_inputs row (dynamic = 1 for the former),
// the input named as the user wrote it (token_ids, not L['token_ids']); each
// graph break ("Graph break in user code at FILE:LINE") is an
// explicit_evaluations row at that line. One framework_imports row says what
// was read and what was skipped.
//
// JAX (jax 0.10; tc's Python hook writes TC_JAX_LOG_DIR/jax-PID.log, JSON
// lines, docs/frameworks.md): each backend compile (jax.monitoring's
// /jax/core/compile/backend_compile_duration) is a compilations row
// (framework 'jax', frame 'jit(FUN)', from the start of its tracing to the
// end of its backend compile); the TRACING CACHE MISS explanation before it
// gives its call site and reason ('first' for a never seen function,
// 'shape_change' with a compilation_inputs row per changed dim, old_value
// being JAX's "before": its closest previous key, not always the previous
// compilation; else 'structure_change' with JAX's words in diff). A
// compilation with no explanation is JAX's own (an op run outside jit:
// trigger 'eager_op', reason 'first'). The calls of the jitted function
// called most are the process's steps (steps rows, framework 'jax'); each
// float()/item()/tolist()/asarray()/print of an array is an
// explicit_evaluations row at the program's file:line.
//
// PyTorch/XLA (torch_xla 2.9; tc's Python hook writes TC_XLA_LOG_DIR/xla-PID.log,
// JSON lines, and tc-profile points PT_XLA_DEBUG_FILE at
// TC_XLA_LOG_DIR/pt_xla_debug.txt with PT_XLA_DEBUG_LEVEL=2;
// docs/frameworks.md): each torch_xla.sync() (xm.mark_step()) is a step
// (steps rows, framework 'torch_xla'); each compilation PyTorch/XLA's metrics
// counted (UncachedCompile, CompileTime) during a sync or a forced evaluation
// is a compilations row (framework 'torch_xla', frame = PyTorch/XLA's cause,
// "user torch_xla.sync" or "most likely user code trying to access tensor
// value before torch_xla.sync", call site = its Python frame, both from the
// debug output's "Compilation Analysis" blocks in order, else the hook's);
// 'shape_change' when a graph input the program moved to the device
// (`name = x.to(device)`) changed shape since the step before, with a
// compilation_inputs row per changed dim; each item()/float()/tolist()/print
// of an XLA tensor an explicit_evaluations row at the program's file:line.
//
// Contract:
// - The directory and its files are written by the profiled program: nothing
//   in them is trusted. Sizes are bounded (ImportLimits), types are checked,
//   and bad content never fails the import: a malformed line or a record of
//   an unknown kind is skipped and counted; a file that ends inside a record
//   (the program was killed) imports every record before it.
// - Times: torch logs wall-clock microseconds (start_time_us). A time t is
//   stored as start_ts + (t * 1000 - start_unix_ns), the run row's own pair
//   of clocks, so imported rows line up with the rings' CLOCK_MONOTONIC
//   times to within the wall clock's steps during the run (NTP).
// - Steps: a trace has none. A row's step is the number of entries of
//   step_ends (for its process) at or before its ts; with none given, 0.
//   The JAX log has them (its steps rows), unless step_ends has the
//   process's (torch's optimizer steps), which then stand.
// - JAX's times are the hook's CLOCK_MONOTONIC ns: stored as they are.
// - Bounds (docs/frameworks.md#limits-of-the-import): files are read as a
//   stream of lines, never whole; a line (or a torch record's payload that is
//   read) longer than ImportLimits::max_line_bytes is skipped without being
//   held, counted in malformed and in too_long. Memory is the line at hand
//   (a small constant times max_line_bytes) plus the rows kept until they
//   are written (at most max_rows per table, strings cut to kMaxText).
// - Per run: the caps (files, processes, rows per table) count everything
//   imported into one ImportTarget, by every importer it is passed to; what
//   is over a cap is counted in over_cap and named in the note.
// - Values: a time outside the run ([start_ts, end_ts] when end_ts is set),
//   a duration longer than the run, a pid outside 1..2^22 or that
//   pid_in_run refuses, a negative size or count: the record is counted as
//   malformed and none of it is stored.
// - Work is linear in the input (each line parsed once, each lookup a map's).
// - A directory that exists but cannot be read writes a framework_imports
//   row whose note says why.
// - Returns an error only when the store fails (one line naming the path).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tc/store/status.h"

namespace tc::store {
class Writer;
}

namespace tc::import {

struct ImportTarget {
  store::Writer* writer = nullptr;
  uint64_t start_ts = 0;       // run.start_ts (CLOCK_MONOTONIC ns)
  uint64_t start_unix_ns = 0;  // run.start_unix_ns: the wall clock at start_ts
  int64_t first_graph_id = 1;       // graph ids from here up: above every id tc's compiler gave
  uint32_t first_location_id = 1;   // location ids from here up: above every id in the store
  // Log files last written before this wall-clock time are skipped (a user's
  // own TORCH_TRACE directory keeps the logs of earlier runs). 0: none.
  uint64_t min_mtime_unix_ns = 0;
  // The thread whose rows a process's records become (threads.utid); may
  // write that process and thread. Unset: utid 0.
  std::function<int64_t(uint32_t pid)> utid_for;
  // Per process: where each of its steps ended (store ts, ascending).
  std::map<uint32_t, std::vector<int64_t>> step_ends;
  // When the run ended (CLOCK_MONOTONIC ns): imported times after it (and
  // before start_ts) are refused. 0: no upper bound.
  uint64_t end_ts = 0;
  // Whether a pid can be one of the run's processes (the collector: one the
  // rings saw, or one that did not exist before the run). Unset: any pid in
  // 1..2^22. A record of a refused pid is malformed.
  std::function<bool(uint32_t pid)> pid_in_run;

  // What the imports into this target used so far, against the per-run caps
  // of ImportLimits (kept by the importers; the collector passes one target
  // to each framework's importer in turn).
  struct Used {
    enum : uint8_t { kAccepted, kRefused, kOverCap };
    size_t files = 0, processes = 0;  // processes: pids accepted
    std::map<uint32_t, uint8_t> pids;  // pid -> kAccepted, kRefused (pid_in_run) or kOverCap
    std::map<std::string, size_t, std::less<>> rows;  // table name -> rows written
  } used;
};

struct ImportLimits {
  uint64_t max_file_bytes = 256ull << 20;  // a larger file is read up to here (and counted as truncated)
  size_t max_line_bytes = 1 << 20;         // a longer line is skipped unread (malformed, too_long)
  size_t max_files = 64;                   // log files read per run (of a directory: by name order)
  size_t max_processes = 1024;             // processes per run; records of others are over_cap
  size_t max_rows = 1 << 18;               // rows of each table per run
};

// Text imported into a row (names, files, reasons) is cut to this many bytes.
inline constexpr size_t kMaxText = 1024;

// What an import read: the framework_imports row.
struct ImportSummary {
  std::string framework = "torch.compile";  // or "jax", "torch_xla"
  std::string version;  // torch's version ('2.15.0+cu132'), jax's ('0.10.2'); "" if the log does not say
  int64_t files = 0, lines = 0, records = 0;
  int64_t compilations = 0, explicit_evaluations = 0;
  int64_t steps = 0;           // steps rows (JAX: calls of step_function)
  std::string step_function;   // JAX: the jitted function whose calls are the steps
  int64_t unknown_kinds = 0, malformed = 0;
  int64_t too_long = 0;  // lines over max_line_bytes (also counted in malformed)
  int64_t over_cap = 0;  // records or rows over a per-run cap (files, processes, rows)
  bool truncated = false;
  std::string note;
  bool stopped = false;  // request_stop() ended it early: the rows before it were written
  int64_t last_graph_id = 0;       // the highest graph id it used (0: none)
  uint32_t last_location_id = 0;   // the highest location id it used (0: none)
};

// Imports every *.log file of a TORCH_TRACE directory. A directory that is
// missing or holds no log writes nothing and returns files = 0.
StatusOr<ImportSummary> import_torch_trace(const std::string& dir, ImportTarget& target, const ImportLimits& limits = {});

// Imports every jax-PID.log of the hook's TC_JAX_LOG_DIR. A directory that
// is missing or holds no log writes nothing and returns files = 0.
StatusOr<ImportSummary> import_jax_log(const std::string& dir, ImportTarget& target, const ImportLimits& limits = {});

// Imports every xla-PID.log of the hook's TC_XLA_LOG_DIR, and its
// pt_xla_debug.txt (PyTorch/XLA's debug output) when there. A directory that
// is missing or holds no log writes nothing and returns files = 0.
StatusOr<ImportSummary> import_xla_log(const std::string& dir, ImportTarget& target, const ImportLimits& limits = {});

// Asks every import of this process to stop at its next line: the rows read
// so far are still written, with the summary's `stopped` set and a note.
// Async-signal-safe (one atomic store), for tc-profile's SIGTERM, SIGINT and
// SIGHUP once the program has exited. It stays requested for the process.
void request_stop() noexcept;
bool stop_requested() noexcept;

// "torch.compile trace: 2 records of unknown kinds and 1 malformed line skipped; the trace was cut inside a record",
// ("jax log: ..." for JAX), or "" when nothing was skipped (what tc-analyze prints, as one line).
std::string describe_skipped(const ImportSummary& s);

}  // namespace tc::import
