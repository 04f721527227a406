// The store schema, version 1. See tc/store/schema.h for how to add a table.
#include "tc/store/schema.h"

#include <array>

namespace tc::store {
namespace {

constexpr ColumnDecl kRunColumns[] = {
    {"id", "INTEGER", "always 1: a store holds one run"},
    {"tc_version", "TEXT", "version of the tc that recorded the run, e.g. '0.1.0'"},
    {"command", "TEXT", "the profiled command line, a JSON array of its argv strings"},
    {"cwd", "TEXT", "working directory of the command"},
    {"host", "TEXT", "host name of the machine"},
    {"collector", "TEXT", "'tc-profile' (launcher, shared-memory rings) or 'in-process' (TC_PROFILE or the API)"},
    {"clock", "TEXT", "what the recording hot path read: 'tsc' (converted to ns by the collector) or 'monotonic'"},
    {"start_ts", "INTEGER", "when the run started"},
    {"end_ts", "INTEGER", "when the run ended; NULL until it ends"},
    {"start_unix_ns", "INTEGER", "wall clock at start_ts, in ns since the Unix epoch"},
    {"exit_code", "INTEGER", "the program's exit status; NULL if it was killed by a signal or is unknown"},
    {"exit_signal", "INTEGER", "the signal that killed the program; NULL unless it was killed by a signal"},
    {"complete", "INTEGER", "1 when the program exited and every recorded event was collected; 0 for a crashed or killed run"},
    {"event_count", "INTEGER", "events collected into ranges, instants and counters"},
    {"dropped_count", "INTEGER", "events lost before they reached the store (the sum of dropped.count)"},
    {"cuda", "TEXT", "what the CUDA probe said, e.g. 'no device: cudaGetDeviceCount error 35'"},
};

constexpr ColumnDecl kRunEnvColumns[] = {
    {"id", "INTEGER", "row id"},
    {"name", "TEXT", "variable name, e.g. 'TC_EAGER'"},
    {"value", "TEXT", "its value"},
};

constexpr ColumnDecl kStringsColumns[] = {
    {"id", "INTEGER", "the interned string id, as events record it"},
    {"value", "TEXT", "the text"},
};

constexpr ColumnDecl kLocationsColumns[] = {
    {"id", "INTEGER", "the location id that events record in loc_id"},
    {"name", "TEXT", "the name given at the site, e.g. 'train.step'"},
    {"file", "TEXT", "source file of the site"},
    {"function", "TEXT", "function of the site"},
    {"line", "INTEGER", "source line of the site"},
};

constexpr ColumnDecl kProcessesColumns[] = {
    {"upid", "INTEGER", "process id unique within the store (an OS pid can be reused)"},
    {"pid", "INTEGER", "the operating system's process id"},
    {"name", "TEXT", "process name"},
    {"start_ts", "INTEGER", "when the process started, or was first seen"},
    {"end_ts", "INTEGER", "when the process ended; NULL if unknown"},
};

constexpr ColumnDecl kThreadsColumns[] = {
    {"utid", "INTEGER", "thread id unique within the store (an OS tid can be reused)"},
    {"upid", "INTEGER", "the thread's process (processes.upid)"},
    {"tid", "INTEGER", "the operating system's thread id"},
    {"name", "TEXT", "thread name (tc::trace::set_thread_name); NULL if never named"},
};

constexpr ColumnDecl kRangesColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread (threads.utid)"},
    {"ts", "INTEGER", "when the range began"},
    {"dur", "INTEGER", "its length in ns; -1 when the range never ended (the thread died inside it)"},
    {"depth", "INTEGER", "nesting level on its thread, 0 = outermost"},
    {"loc_id", "INTEGER", "what the range is (locations.id)"},
    {"arg", "INTEGER", "argument recorded with the range; its meaning depends on the location"},
};

constexpr ColumnDecl kInstantsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread (threads.utid)"},
    {"ts", "INTEGER", "when it happened"},
    {"loc_id", "INTEGER", "what happened (locations.id)"},
    {"arg", "INTEGER", "argument recorded with it; its meaning depends on the location (a count, bytes, a strings.id)"},
};

constexpr ColumnDecl kCountersColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that recorded the sample (threads.utid)"},
    {"ts", "INTEGER", "when the value was sampled"},
    {"loc_id", "INTEGER", "the counter (locations.id; its name is the counter's name)"},
    {"value", "REAL", "the counter's value from ts on"},
};

constexpr ColumnDecl kCounterSeriesColumns[] = {
    {"id", "INTEGER", "row id"},
    {"loc_id", "INTEGER", "the counter (locations.id; its name, e.g. 'memory.live_bytes')"},
    {"samples", "INTEGER", "how many samples counters holds for it"},
    {"min_value", "REAL", "its smallest value"},
    {"max_value", "REAL", "its largest value (for memory.live_bytes: the peak)"},
    {"first_ts", "INTEGER", "its first sample"},
    {"last_ts", "INTEGER", "its last sample"},
    {"last_value", "REAL", "the value of its last sample"},
};

// Two passes over counters, once, when the run ends.
constexpr std::string_view kCounterSeriesDerive =
    "CREATE TEMP TABLE tc_counter_last AS SELECT loc_id, value, max(ts) FROM counters GROUP BY loc_id;"
    "INSERT INTO counter_series SELECT NULL, c.loc_id, count(*), min(c.value), max(c.value), min(c.ts), max(c.ts), "
    "(SELECT value FROM tc_counter_last t WHERE t.loc_id = c.loc_id) FROM counters c GROUP BY c.loc_id;"
    "DROP TABLE tc_counter_last;";

constexpr ColumnDecl kDroppedColumns[] = {
    {"id", "INTEGER", "row id"},
    {"upid", "INTEGER", "the process that lost the events (processes.upid)"},
    {"utid", "INTEGER", "the thread that lost them (threads.utid); NULL when no ring could be claimed"},
    {"count", "INTEGER", "how many events were lost"},
    {"reason", "TEXT", "why, e.g. 'ring full' or 'no free ring'"},
};

// Compiler and runtime records (tc::trace::record). Every such table starts
// with id and utid; the recording side sends the remaining columns in order.
// ts and dur travel as recording-clock ticks and are converted by the
// collector; TEXT columns travel as interned string ids.

constexpr ColumnDecl kStepsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that called tc::mark_step() (threads.utid)"},
    {"ts", "INTEGER", "when mark_step() was called"},
    {"dur", "INTEGER", "how long mark_step() took: cut, compile on a miss, execute"},
    {"step", "INTEGER", "the step index, counting mark_step() calls from 0"},
    {"loc_id", "INTEGER", "the call site of mark_step() (locations.id)"},
};

constexpr ColumnDecl kCompilationsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that compiled (threads.utid)"},
    {"ts", "INTEGER", "when the compilation started"},
    {"dur", "INTEGER", "its length: passes, planning, codegen and build"},
    {"graph_id", "INTEGER", "the compiled graph, unique in the process; executions refer to it"},
    {"step", "INTEGER", "the step during which it happened (steps.step)"},
    {"signature", "TEXT", "structural hash of the graph: ops, attributes, dtypes, shapes (hex)"},
    {"shape_erased", "TEXT", "the same hash without shapes (hex): equal for graphs that differ only in shapes"},
    {"reason", "TEXT", "'first' (no graph of this structure before), 'shape_change' or 'structure_change'"},
    {"trigger", "TEXT", "what cut the graph: 'mark_step' or 'explicit_evaluation'"},
    {"loc_id", "INTEGER", "the user's call site that cut the graph (locations.id)"},
    {"nodes_before", "INTEGER", "IR nodes before the passes"},
    {"nodes_after", "INTEGER", "IR nodes after the passes"},
    {"kernels", "INTEGER", "kernels generated"},
    {"passes_ns", "INTEGER", "time in the optimizing passes"},
    {"codegen_ns", "INTEGER", "time generating code"},
    {"build_ns", "INTEGER", "time building the generated code (0 on a disk cache hit)"},
    {"cache", "TEXT", "'built' (compiled from source) or 'disk_hit' (loaded from TC_CACHE_DIR)"},
    {"diff", "TEXT", "for structure_change: what differs from the closest earlier graph (node counts, first differing op and its call site); NULL otherwise"},
    {"source_path", "TEXT", "the generated source file, kept for the user"},
};

constexpr ColumnDecl kCompilationInputsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that compiled (threads.utid)"},
    {"graph_id", "INTEGER", "the compilation (compilations.graph_id) whose reason is shape_change"},
    {"input", "TEXT", "the input whose shape changed: the user's name, else its creation site file:line"},
    {"dim", "INTEGER", "the dimension that changed"},
    {"old_value", "INTEGER", "its size in the closest earlier graph"},
    {"new_value", "INTEGER", "its size in this graph"},
};

constexpr ColumnDecl kCompilePassesColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that compiled (threads.utid)"},
    {"graph_id", "INTEGER", "the compilation (compilations.graph_id)"},
    {"ts", "INTEGER", "when the pass started"},
    {"dur", "INTEGER", "how long it ran"},
    {"pass", "TEXT", "the pass, e.g. 'dce', 'cse', 'fuse_elementwise'"},
    {"nodes_after", "INTEGER", "IR nodes after the pass"},
};

constexpr ColumnDecl kExecutionsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that executed (threads.utid)"},
    {"ts", "INTEGER", "when the execution started"},
    {"dur", "INTEGER", "how long it ran"},
    {"graph_id", "INTEGER", "the graph executed (compilations.graph_id; 0 for the eager executor)"},
    {"step", "INTEGER", "the step during which it ran"},
    {"trigger", "TEXT", "'mark_step', 'explicit_evaluation' or 'eager'"},
    {"nodes", "INTEGER", "IR nodes executed"},
};

constexpr ColumnDecl kExplicitEvaluationsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread (threads.utid)"},
    {"ts", "INTEGER", "when the evaluation was forced"},
    {"dur", "INTEGER", "what it cost: cut, compile if needed, execute, copy to the host"},
    {"step", "INTEGER", "the step during which it happened"},
    {"kind", "TEXT", "'item', 'to_host' or 'print'"},
    {"loc_id", "INTEGER", "the user's call site (locations.id: file, line, function)"},
    {"nodes", "INTEGER", "IR nodes in the subgraph it cut"},
    {"graph_id", "INTEGER", "the graph it ran (compilations.graph_id; 0 when run eagerly)"},
};

constexpr ColumnDecl kMemoryPlansColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that compiled (threads.utid)"},
    {"graph_id", "INTEGER", "the compiled graph (compilations.graph_id)"},
    {"peak_bytes", "INTEGER", "planned peak device bytes while the graph runs, everything live included"},
    {"parameter_bytes", "INTEGER", "of the peak: parameters"},
    {"gradient_bytes", "INTEGER", "of the peak: gradients"},
    {"optimizer_state_bytes", "INTEGER", "of the peak: optimizer state"},
    {"activation_bytes", "INTEGER", "of the peak: activations and other intermediates"},
    {"input_bytes", "INTEGER", "of the peak: inputs"},
    {"workspace_bytes", "INTEGER", "of the peak: scratch space of kernels"},
    {"batch_bytes", "INTEGER", "of the peak: bytes that scale with the batch dimension"},
    {"batch_size", "INTEGER", "the batch dimension's size in this graph (dim 0 of named inputs unless the user said otherwise); NULL if none"},
    {"capacity_bytes", "INTEGER", "the device's capacity when planned"},
};

constexpr ColumnDecl kOutOfMemoryColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread whose allocation failed (threads.utid)"},
    {"ts", "INTEGER", "when it failed"},
    {"step", "INTEGER", "the step during which it failed"},
    {"requested_bytes", "INTEGER", "the allocation that did not fit"},
    {"live_bytes", "INTEGER", "bytes live at that moment"},
    {"capacity_bytes", "INTEGER", "the device's capacity (TC_DEVICE_MEMORY_LIMIT on CPU)"},
    {"parameter_bytes", "INTEGER", "live bytes of parameters"},
    {"gradient_bytes", "INTEGER", "live bytes of gradients"},
    {"optimizer_state_bytes", "INTEGER", "live bytes of optimizer state"},
    {"activation_bytes", "INTEGER", "live bytes of activations"},
    {"input_bytes", "INTEGER", "live bytes of inputs"},
    {"other_bytes", "INTEGER", "live bytes of everything else"},
    {"batch_size", "INTEGER", "the batch dimension's size in the failing graph; NULL if unknown"},
};

constexpr ColumnDecl kLogsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread that logged (threads.utid)"},
    {"ts", "INTEGER", "when"},
    {"level", "TEXT", "'debug', 'info', 'warning' or 'error'"},
    {"message", "TEXT", "the line (TC_DEBUG=1 logs each pass, its time, kernel counts and generated source paths)"},
};

constexpr IndexDecl kCompilationsIndexes[] = {{"compilations_graph_id", "graph_id"}};
constexpr IndexDecl kExecutionsIndexes[] = {{"executions_graph_id", "graph_id"}};
constexpr IndexDecl kExplicitEvaluationsIndexes[] = {{"explicit_evaluations_loc_id", "loc_id"}};

constexpr IndexDecl kThreadsIndexes[] = {{"threads_upid", "upid"}};

}  // namespace

namespace schema {

// The bulk event tables (ranges, instants, counters) carry no index: measured
// on the 2-core machine, one (utid, ts) index on ranges took ingest from 3.0 M
// to 1.6 M events/s end to end, and their readers (the viewer, exports,
// aggregates) scan them whole anyway. Small tables get indexes at finalize.
const TableDecl run{"run", "The run: what was profiled, how it ended. One row, id = 1.", kRunColumns, {}};
const TableDecl run_env{"run_env", "The TC_* environment variables of the run, one row each.", kRunEnvColumns, {}};
const TableDecl strings{"strings",
                        "Interned strings: an event argument that names something (an input, a kernel) is an id here.",
                        kStringsColumns, {}};
const TableDecl locations{"locations", "Recording sites: every event names its site with loc_id.", kLocationsColumns,
                          {}};
const TableDecl processes{"processes", "Processes that recorded events (one per rank on the machine).",
                          kProcessesColumns, {}};
const TableDecl threads{"threads", "Threads that recorded events.", kThreadsColumns, kThreadsIndexes};
const TableDecl ranges{"ranges", "Ranges (TC_TRACE_RANGE, begin/end): a span of time on one thread.", kRangesColumns,
                       {}, true};
const TableDecl instants{"instants", "Instants (TC_TRACE_INSTANT): a point in time on one thread, with an argument.",
                         kInstantsColumns, {}, true};
const TableDecl counters{"counters", "Counter samples (TC_TRACE_COUNTER): a value over time, e.g. live device memory.",
                         kCountersColumns, {}, true};
const TableDecl dropped{"dropped", "Events lost before they reached the store, counted per thread and reason.",
                        kDroppedColumns, {}};

const TableDecl counter_series{"counter_series",
                               "One row per counter, computed from counters when the run ends, so readers need not scan counters "
                               "for a peak or a last value. Empty in a store whose writer was killed.",
                               kCounterSeriesColumns, {}, false, kCounterSeriesDerive};
const TableDecl steps{"steps", "Training steps: one row per tc::mark_step() call.", kStepsColumns, {}};
const TableDecl compilations{"compilations", "Every compilation of a cut graph, and why it happened.", kCompilationsColumns,
                             kCompilationsIndexes};
const TableDecl compilation_inputs{"compilation_inputs",
                                   "For each shape_change compilation, every input dimension that differs from the closest earlier graph.",
                                   kCompilationInputsColumns, {}};
const TableDecl compile_passes{"compile_passes", "Each optimizing pass of each compilation, timed.", kCompilePassesColumns, {}};
const TableDecl executions{"executions", "Every execution of a graph, compiled or eager.", kExecutionsColumns, kExecutionsIndexes};
const TableDecl explicit_evaluations{"explicit_evaluations",
                                     "item(), to_host() or printing of a pending tensor: each one cut the graph and ran it on the spot.",
                                     kExplicitEvaluationsColumns, kExplicitEvaluationsIndexes};
const TableDecl memory_plans{"memory_plans", "The memory planner's result for each compiled graph.", kMemoryPlansColumns, {}};
const TableDecl out_of_memory{"out_of_memory", "Allocations that exceeded the device's capacity, with what was live.",
                              kOutOfMemoryColumns, {}};
const TableDecl logs{"logs", "Log lines from the compiler and runtime (TC_DEBUG=1 or tc-profile --debug).", kLogsColumns, {}};

std::span<const TableDecl* const> all_tables() {
  static constexpr std::array<const TableDecl*, 20> kTables = {
      &run,   &run_env,    &strings,      &locations,          &processes,      &threads,    &ranges,
      &instants, &counters, &counter_series, &dropped,     &steps,              &compilations,   &compilation_inputs,
      &compile_passes, &executions, &explicit_evaluations, &memory_plans, &out_of_memory, &logs};
  return kTables;
}

}  // namespace schema

std::string create_table_sql(const TableDecl& table) {
  std::string sql = "CREATE TABLE " + std::string(table.name) + " (";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const ColumnDecl& c = table.columns[i];
    sql += "\n  " + std::string(c.name) + " " + std::string(c.type);
    if (i == 0) sql += " PRIMARY KEY";
    if (i + 1 < table.columns.size()) sql += ",";
    sql += "  -- " + std::string(c.doc);
  }
  return sql + "\n)";
}

std::string create_index_sql(const TableDecl& table, const IndexDecl& index) {
  return "CREATE INDEX IF NOT EXISTS " + std::string(index.name) + " ON " + std::string(table.name) + " (" +
         std::string(index.columns) + ")";
}

namespace {

constexpr std::string_view kIntro = R"(# Store schema (`.tcdb`)

<!-- Generated by tc-store-schema from profiler/store/src/schema.cpp; do not edit. Run `ninja schema-doc`. -->

A run recorded by `tc-profile` (or in process with `TC_PROFILE=FILE.tcdb`) is
one SQLite 3 file that `tc-analyze`, `tc-viewer` and the `sqlite3` shell read.
This page is generated from the schema declared in
`profiler/store/src/schema.cpp`, so it always matches the code.

## Versioning

- `PRAGMA application_id` is `0x74636462` (the bytes `tcdb`): it marks the
  file as a tc store.
- `PRAGMA user_version` is the schema version: **@VERSION@** for this tc. Any
  change to a table or a column below changes it. tc reads stores up to its own
  version and refuses a newer one with a one-line error that says to upgrade.
- A finished store is one self-contained file. A store whose run was killed
  may still have a `FILE.tcdb-wal` beside it, holding the last rows written:
  keep the two together. Such a store is valid, with `run.complete = 0`.

## Conventions

- Times are int64 nanoseconds of `CLOCK_MONOTONIC`, shared by every process of
  the run, in columns named `ts` (a point in time) and `dur` (a length). For
  wall-clock time, add `run.start_unix_ns - run.start_ts`.
- `upid` and `utid` identify a process and a thread within the store; `pid`
  and `tid` are the operating system's ids, which can be reused.
- Events name their recording site with `loc_id` (`locations.id`); arguments
  that name something are ids into `strings`.
- The first column of every table is its `INTEGER PRIMARY KEY`.
- Indexes are built when the run ends; a store from a killed run has none, so
  queries on it are slower but give the same answers.

## Querying with the sqlite3 shell

```sh
sqlite3 -header -column run.tcdb
```

The ten longest ranges, with their thread:

```sql
SELECT l.name, r.dur / 1e6 AS ms, t.name AS thread
FROM ranges r JOIN locations l ON l.id = r.loc_id JOIN threads t USING (utid)
ORDER BY r.dur DESC LIMIT 10;
```

Total time per site, outermost ranges only:

```sql
SELECT l.name, count(*) AS n, sum(r.dur) / 1e6 AS total_ms
FROM ranges r JOIN locations l ON l.id = r.loc_id
WHERE r.depth = 0 AND r.dur >= 0
GROUP BY l.name ORDER BY total_ms DESC;
```

How the run ended:

```sql
SELECT complete, exit_code, exit_signal, event_count, dropped_count FROM run;
```

In the shell, `.schema ranges` shows each column's meaning as a comment.

## Tables
)";

std::string escape_cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string schema_markdown() {
  std::string md(kIntro);
  md.replace(md.find("@VERSION@"), 9, std::to_string(kSchemaVersion));
  for (const TableDecl* t : schema::all_tables()) {
    md += "\n### " + std::string(t->name) + "\n\n" + std::string(t->doc) + "\n\n";
    md += "| column | type | meaning |\n|---|---|---|\n";
    for (const ColumnDecl& c : t->columns) {
      md += "| `" + std::string(c.name) + "` | " + std::string(c.type) + " | " + escape_cell(c.doc) + " |\n";
    }
    if (!t->indexes.empty()) {
      md += "\nIndexes:";
      for (size_t i = 0; i < t->indexes.size(); ++i) {
        const IndexDecl& ix = t->indexes[i];
        md += std::string(i == 0 ? " " : ", ") + "`" + std::string(ix.name) + "` (" + std::string(ix.columns) + ")";
      }
      md += ".\n";
    }
  }
  return md;
}

}  // namespace tc::store
