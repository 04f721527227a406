// The store schema (kSchemaVersion). See tc/store/schema.h for how to add a table.
#include "tc/store/schema.h"

#include <array>
#include <utility>

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
    {"step_range", "TEXT", "tc-profile --step-range NAME: the NVTX (or tc) range whose occurrences are the run's steps; NULL if not given", 3},
    {"nvtx", "TEXT", "NVTX capture: 'tc' (tc-profile injected libtc_nvtx), 'user: PATH' (NVTX_INJECTION64_PATH was the user's own, left alone), 'off' (no injection library); NULL for a run without tc-profile", 3},
    {"cupti", "TEXT", "GPU activity capture: 'tc' (tc-profile set CUDA_INJECTION64_PATH to libtc_cupti), 'user: PATH' (the user's own injection library, left alone), 'off'; NULL for a run without tc-profile. Whether CUPTI then ran is in gpu_capture", 5},
};

constexpr ColumnDecl kStringsColumns[] = {
    {"id", "INTEGER", "the interned string id, as events record it"},
    {"value", "TEXT", "the text"},
};

constexpr ColumnDecl kLocationsColumns[] = {
    {"id", "INTEGER", "the location id that events record in loc_id"},
    {"name", "TEXT", "the name given at the site, e.g. 'train.step'; for an NVTX range or mark, its message"},
    {"file", "TEXT", "source file of the site; 'nvtx' for an NVTX range or mark (see nvtx_sites)"},
    {"function", "TEXT", "function of the site; for NVTX, the domain's name ('' for NVTX's default domain)"},
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

constexpr ColumnDecl kFrameworkImportsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"framework", "TEXT", "'torch.compile', 'torch_xla' or 'jax'"},
    {"source", "TEXT", "what was read: the TORCH_TRACE directory, or the directory of the hook's JAX or PyTorch/XLA logs"},
    {"version", "TEXT", "the framework's version as its log says (torch_version artifact, jax.__version__, torch_xla.__version__), e.g. '2.15.0+cu132', '0.10.2', '2.9.0'; NULL if it does not say"},
    {"files", "INTEGER", "log files read"},
    {"lines", "INTEGER", "lines read"},
    {"records", "INTEGER", "records read (a header line and its payload lines; JAX: a JSON line)"},
    {"compilations", "INTEGER", "rows it added to compilations"},
    {"explicit_evaluations", "INTEGER", "rows it added to explicit_evaluations (graph breaks; JAX and PyTorch/XLA: forced evaluations)"},
    {"unknown_kinds", "INTEGER", "records of a kind this tc does not know, skipped"},
    {"malformed", "INTEGER", "lines that are not a well-formed record (bad prefix or JSON, wrong field types), skipped"},
    {"truncated", "INTEGER", "1 when a file ended inside a record (the writer was cut off): what was complete was imported"},
    {"note", "TEXT", "one line on anything else worth saying (a size limit hit, an unreadable file); NULL if nothing"},
};

constexpr ColumnDecl kStepInputsColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread whose step it is (threads.utid)"},
    {"step", "INTEGER", "the step (steps.step of the same thread)"},
    {"input", "TEXT", "the input's name as the program wrote it: the compiled function's parameter (torch.compile, jax), the variable that holds the graph input (torch_xla)"},
    {"dim", "INTEGER", "the dimension"},
    {"value", "INTEGER", "its size in this step"},
};

constexpr ColumnDecl kFrameworkMemoryColumns[] = {
    {"id", "INTEGER", "row id"},
    {"utid", "INTEGER", "the thread of the process whose function it is (threads.utid)"},
    {"ts", "INTEGER", "when the analysis was made"},
    {"framework", "TEXT", "'jax'"},
    {"function", "TEXT", "the compiled function, as compilations.frame names it: 'jit(train_step)'"},
    {"batch_size", "INTEGER", "the batch (dim 0 of the function's batch arguments) it was compiled for"},
    {"ran", "INTEGER", "1: the shapes the run ran; 0: compiled ahead of time at a larger batch by the hook, never run"},
    {"peak_bytes", "INTEGER", "argument + output + temp - alias bytes: what the executable holds while it runs"},
    {"argument_bytes", "INTEGER", "XLA's memory_analysis(): its arguments"},
    {"output_bytes", "INTEGER", "XLA's memory_analysis(): its outputs"},
    {"temp_bytes", "INTEGER", "XLA's memory_analysis(): its temporaries"},
    {"alias_bytes", "INTEGER", "XLA's memory_analysis(): outputs that reuse (alias) a donated argument's buffer"},
};

constexpr IndexDecl kCompilationsIndexes[] = {{"compilations_graph_id", "graph_id"}};
constexpr IndexDecl kExecutionsIndexes[] = {{"executions_graph_id", "graph_id"}};
constexpr IndexDecl kExplicitEvaluationsIndexes[] = {{"explicit_evaluations_loc_id", "loc_id"}};

constexpr IndexDecl kThreadsIndexes[] = {{"threads_upid", "upid"}};

// Compiler and runtime records (tc/trace/records.h). Every such table is id,
// utid, then the record's fields in order; ts and dur travel as recording-clock
// ticks and are converted by the collector, TEXT columns as interned string ids.

struct RecordIndexes {
  std::string_view table;
  std::span<const IndexDecl> indexes;
};
constexpr IndexDecl kKernelsIndexes[] = {{"kernels_graph_kernel", "graph_id, kernel"}};
constexpr IndexDecl kKernelExecutionsIndexes[] = {{"kernel_executions_graph_kernel", "graph_id, kernel"}};
constexpr IndexDecl kGpuActivityIndexes[] = {{"gpu_activity_execution_id", "execution_id"}};

constexpr RecordIndexes kRecordIndexes[] = {
    {"kernels", kKernelsIndexes},
    {"kernel_executions", kKernelExecutionsIndexes},
    {"gpu_activity", kGpuActivityIndexes},
    {"compilations", kCompilationsIndexes},
    {"executions", kExecutionsIndexes},
    {"explicit_evaluations", kExplicitEvaluationsIndexes},
};

constexpr std::span<const IndexDecl> indexes_of(std::string_view table) {
  for (const RecordIndexes& r : kRecordIndexes) {
    if (r.table == table) return r.indexes;
  }
  return {};
}

constexpr bool indexes_name_record_tables() {
  for (const RecordIndexes& ix : kRecordIndexes) {
    bool found = false;
    for (const trace::RecordDecl& r : trace::kRecords) found = found || r.table == ix.table;
    if (!found) return false;
  }
  return true;
}
static_assert(indexes_name_record_tables(), "kRecordIndexes names a table that no record declares");

constexpr std::string_view column_type(trace::FieldType t) {
  switch (t) {
    case trace::FieldType::kText: return "TEXT";
    case trace::FieldType::kReal: return "REAL";
    case trace::FieldType::kTs:
    case trace::FieldType::kDur:
    case trace::FieldType::kInt:
    case trace::FieldType::kIntOrNull:
    case trace::FieldType::kLoc: break;
  }
  return "INTEGER";
}

// Columns of record tables that no record carries: what the framework
// importers (tc/import/import.h) fill, with the value tc's own rows get.
constexpr StoreColumn kStoreColumns[] = {
    {"steps", {"framework", "TEXT", "who counted the step: 'tc' (tc::mark_step()), 'torch' (optimizer.step(), through tc's Python start-up hook), 'torch_xla' (torch_xla.sync(), so xm.mark_step(), through the hook) or 'jax' (a call of the jitted function called most, through the hook)", 4}, "tc"},
    {"compilations", {"framework", "TEXT", "the compiler: 'tc', 'torch.compile' (imported from its TORCH_TRACE log at the end of the run), 'torch_xla' (from the PyTorch/XLA log of tc's Python hook and PyTorch/XLA's debug output) or 'jax' (from the JAX log of tc's Python hook)", 4}, "tc"},
    {"compilations", {"frame", "TEXT", "torch.compile: its compile id 'frame/compile' (e.g. '0/3'); jax: the jitted function, 'jit(train_step)'; NULL for tc", 4}, {}, 0, true},
    {"compilations", {"failure", "TEXT", "why the compilation failed, e.g. 'Unsupported: Dynamo recompile limit exceeded' (the frame then runs uncompiled); NULL when it compiled", 4}, {}, 0, true},
    {"compilation_inputs", {"dynamic", "INTEGER", "1 when the compiler made this dimension dynamic (symbolic) in this compilation (tc's TC_DYNAMIC, torch.compile's automatic_dynamic), so later sizes reuse it; 0 for a static recompilation", 4}, {}, 0},
    {"explicit_evaluations", {"framework", "TEXT", "the compiler: 'tc', 'torch.compile' (a graph break), 'torch_xla' or 'jax' (a value read back: float(), item(), printing)", 4}, "tc"},
    {"explicit_evaluations", {"reason", "TEXT", "what forced it, as the framework says (torch.compile's graph break reason; jax: the call, e.g. 'float()'); NULL for tc", 4}, {}, 0, true},
    {"explicit_evaluations", {"code", "TEXT", "torch.compile: the graph break's code in torch's graph-break registry, e.g. 'GB0170' (data-dependent branching); NULL when the log names none, and for other frameworks", 6}, {}, 0, true},
    {"explicit_evaluations", {"broke_at", "TEXT", "torch.compile: 'FILE:LINE' of the library frame (torch, Python's library, site-packages) the break happened in, when loc_id is the user's frame that led into it; NULL when the break was in the user's own code", 6}, {}, 0, true},
};

constexpr bool store_columns_are_grouped() {
  for (size_t i = 0; i < std::size(kStoreColumns); ++i) {
    for (size_t j = i + 2; j < std::size(kStoreColumns); ++j) {
      if (kStoreColumns[j].table == kStoreColumns[i].table && kStoreColumns[j - 1].table != kStoreColumns[i].table) return false;
    }
  }
  return true;
}
static_assert(store_columns_are_grouped(), "kStoreColumns lists each table's columns together");

constexpr size_t store_column_count(std::string_view table) {
  size_t n = 0;
  for (const StoreColumn& c : kStoreColumns) n += c.table == table;
  return n;
}

// A record's last fields may be store columns too (compilation_inputs.dynamic:
// tc's compiler records it, importers write it, rows written without it take
// tc's value): such a field is the store column, declared once there.
constexpr size_t own_fields(const trace::RecordDecl& r) {
  size_t n = r.fields.size();
  while (n > 0) {
    bool store = false;
    for (const StoreColumn& s : kStoreColumns) store = store || (s.table == r.table && s.column.name == r.fields[n - 1].name);
    if (!store) break;
    --n;
  }
  return n;
}

template <size_t K>
constexpr auto record_columns() {
  constexpr const trace::RecordDecl& r = trace::kRecords[K];
  constexpr size_t lead = r.utid_doc.empty() ? 1 : 2;  // id, and utid unless the row is the run's
  constexpr size_t own = own_fields(r);
  static_assert(r.fields.size() - own <= store_column_count(r.table), "a record's shared fields are its table's first store columns");
  std::array<ColumnDecl, own + lead + store_column_count(r.table)> c{};
  c[0] = {"id", "INTEGER", "row id"};
  if constexpr (lead == 2) c[1] = {"utid", "INTEGER", r.utid_doc};
  for (size_t i = 0; i < own; ++i) {
    const trace::FieldDecl& f = r.fields[i];
    c[i + lead] = {f.name, column_type(f.type), f.doc, f.since};
  }
  size_t at = own + lead;
  for (const StoreColumn& s : kStoreColumns) {
    if (s.table == r.table) c[at++] = s.column;
  }
  return c;
}
template <size_t K>
constexpr auto kRecordColumns = record_columns<K>();

// Record tables added after v1, and those written in bulk (a row per kernel
// per execution).
struct RecordTableTraits {
  std::string_view table;
  int since;
  bool bulk;
};
constexpr RecordTableTraits kRecordTableTraits[] = {
    {"kernels", 2, false},
    {"kernel_executions", 2, true},
    {"ceilings", 2, false},
    {"nvtx_sites", 3, false},
    {"nvtx_categories", 3, false},
    {"nvtx_range_starts", 3, true},
    {"nvtx_range_ends", 3, true},
    {"nvtx_real_payloads", 3, true},
    {"nvtx_thread_names", 3, false},
    {"collectives", 3, false},
    {"ranks", 3, false},
    {"gpu_activity", 5, true},
    {"gpu_capture", 5, false},
};
constexpr RecordTableTraits traits_of(std::string_view table) {
  for (const RecordTableTraits& t : kRecordTableTraits)
    if (t.table == table) return t;
  return {table, 1, false};
}

template <size_t... K>
constexpr std::array<TableDecl, sizeof...(K)> make_record_tables(std::index_sequence<K...>) {
  return {TableDecl{trace::kRecords[K].table, trace::kRecords[K].doc, kRecordColumns<K>, indexes_of(trace::kRecords[K].table),
                    traits_of(trace::kRecords[K].table).bulk, {}, traits_of(trace::kRecords[K].table).since}...};
}
constexpr std::array<TableDecl, trace::kRecordCount> kRecordTables = make_record_tables(std::make_index_sequence<trace::kRecordCount>{});

}  // namespace

namespace schema {

// The bulk event tables (ranges, instants, counters) carry no index: measured
// on the 2-core machine, one (utid, ts) index on ranges took ingest from 3.0 M
// to 1.6 M events/s end to end, and their readers (the viewer, exports,
// aggregates) scan them whole anyway. Small tables get indexes at finalize.
const TableDecl run{"run", "The run: what was profiled, how it ended. One row, id = 1.", kRunColumns, {}};
const TableDecl strings{"strings",
                        "Interned strings: an event argument that names something (an input, a kernel) is an id here.",
                        kStringsColumns, {}};
const TableDecl locations{"locations", "Recording sites: every event names its site with loc_id.", kLocationsColumns,
                          {}};
const TableDecl processes{"processes", "Processes that recorded events (one per rank on the machine).",
                          kProcessesColumns, {}};
const TableDecl threads{"threads", "Threads that recorded events.", kThreadsColumns, kThreadsIndexes};
const TableDecl ranges{"ranges", "Ranges (TC_TRACE_RANGE, begin/end; NVTX push/pop): a span of time on one thread.", kRangesColumns,
                       {}, true};
const TableDecl instants{"instants", "Instants (TC_TRACE_INSTANT; NVTX marks): a point in time on one thread, with an argument.",
                         kInstantsColumns, {}, true};
const TableDecl counters{"counters", "Counter samples (TC_TRACE_COUNTER): a value over time, e.g. live device memory.",
                         kCountersColumns, {}, true};
const TableDecl dropped{"dropped", "Events lost before they reached the store, counted per thread and reason.",
                        kDroppedColumns, {}};

const TableDecl framework_imports{"framework_imports",
                                  "What each framework importer read at the end of the run (torch.compile's TORCH_TRACE log, the Python hook's JAX "
                                  "and PyTorch/XLA logs), and what it skipped: one row per import.",
                                  kFrameworkImportsColumns, {}, false, {}, 4};

const TableDecl step_inputs{"step_inputs",
                             "The shapes of each step's inputs, as tc's Python hook saw them (one record per step: the compiled "
                             "function's arguments for torch.compile and jax, the graph inputs at the sync for torch_xla): one row per "
                             "input dimension per step.",
                             kStepInputsColumns, {}, false, {}, 6};

const TableDecl framework_memory{"framework_memory",
                                  "A framework's own memory accounting of the step function at several batch sizes, the "
                                  "points of the batch model behind memory.headroom for framework runs: XLA's "
                                  "memory_analysis() of JAX's step at the shapes the run ran most, and of the same step "
                                  "compiled ahead of time at larger batches at the end of the run (docs/frameworks.md).",
                                  kFrameworkMemoryColumns, {}, false, {}, 7};

const TableDecl counter_series{"counter_series",
                               "One row per counter, computed from counters when the run ends, so readers need not scan counters "
                               "for a peak or a last value. Empty in a store whose writer was killed.",
                               kCounterSeriesColumns, {}, false, kCounterSeriesDerive};
#define TC_STORE_RECORD_TABLE_(Name, kind_, table_, ...) const TableDecl& table_ = kRecordTables[kind_ - 1];
TC_TRACE_RECORDS(TC_STORE_RECORD_TABLE_)
#undef TC_STORE_RECORD_TABLE_

const TableDecl* record_table(uint16_t kind) { return trace::record_decl(kind) ? &kRecordTables[kind - 1] : nullptr; }

namespace {
// Every table that is not a record's, in creation order; the record tables follow.
constexpr const TableDecl* kBaseTables[] = {&run,      &strings,        &locations, &processes, &threads,
                                            &ranges,   &instants, &counters,       &counter_series, &dropped, &framework_imports,
                                            &step_inputs, &framework_memory};
}  // namespace

std::span<const TableDecl* const> all_tables() {
  static constexpr auto kTables = [] {
    std::array<const TableDecl*, std::size(kBaseTables) + trace::kRecordCount> all{};
    size_t n = 0;
    for (const TableDecl* t : kBaseTables) all[n++] = t;
    for (const TableDecl& t : kRecordTables) all[n++] = &t;
    return all;
  }();
  return kTables;
}

std::span<const StoreColumn> store_columns(std::string_view table) {
  size_t first = 0;
  while (first < std::size(kStoreColumns) && kStoreColumns[first].table != table) ++first;
  size_t last = first;
  while (last < std::size(kStoreColumns) && kStoreColumns[last].table == table) ++last;
  return std::span<const StoreColumn>(kStoreColumns).subspan(first, last - first);
}

const ColumnDecl* find_column(const TableDecl& table, std::string_view name) {
  for (const ColumnDecl& c : table.columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
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

<!-- Generated by tc-store-schema from profiler/store/src/schema.cpp and profiler/trace/include/tc/trace/records.h; do not edit. Run `ninja schema-doc`. -->

A run recorded by `tc-profile` (or in process with `TC_PROFILE=FILE.tcdb`) is
one SQLite 3 file that `tc-analyze`, `tc-viewer` and the `sqlite3` shell read.
This page is generated from the schema declared in
`profiler/store/src/schema.cpp` and, for the tables of compiler and runtime
records (`steps` to `logs`), from the record declarations in
`profiler/trace/include/tc/trace/records.h` that the recording side compiles
against, so it always matches the code.

## Versioning

- `PRAGMA application_id` is `0x74636462` (the bytes `tcdb`): it marks the
  file as a tc store.
- `PRAGMA user_version` is the schema version: **@VERSION@** for this tc. Any
  change to a table or a column below changes it. tc reads stores up to its own
  version and refuses a newer one with a one-line error that says to upgrade.
  A table or column marked *(since vN)* is missing from older stores, which
  tc still reads.
- A finished store is one self-contained file. A store whose run was killed
  may still have a `FILE.tcdb-wal` beside it, holding the last rows written:
  keep the two together. Such a store is valid, with `run.complete = 0`.

## Conventions

- Times are int64 nanoseconds of `CLOCK_MONOTONIC`, shared by every process of
  the run, in columns named `ts` (a point in time) and `dur` (a length). For
  wall-clock time, add `run.start_unix_ns - run.start_ts`.
- `upid` and `utid` identify a process and a thread within the store; `pid`
  and `tid` are the operating system's ids, which can be reused.
- `graph_id` and `execution_id` are unique in the run: across every process
  that recorded into the store (they draw from one counter that tc-profile
  shares with all of them), so `executions.graph_id = compilations.graph_id`
  is the whole join, with no `utid` or `upid` beside it.
- A store holds one rank: under MPI (or srun, or torchrun) each rank writes its
  own store, and the analysis merges stores. The processes in a store are
  those that one `tc-profile` run started (or the one process of
  `TC_PROFILE=FILE.tcdb`); one `tc-profile` over a whole job divides its
  store by rank when the job ends, each store with its rank's processes and
  the processes of no rank (the launcher) in the lowest rank's. A store
  whose division failed holds every rank, one `ranks` row each.
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

GPU time per kernel name (any CUDA program under tc-profile), and what
CUPTI lost:

```sql
SELECT name, count(*) AS n, sum(dur) / 1e6 AS gpu_ms
FROM gpu_activity WHERE kind = 'kernel'
GROUP BY name ORDER BY gpu_ms DESC LIMIT 10;
```

```sql
SELECT status, detail, records, dropped FROM gpu_capture;
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
    md += "\n### " + std::string(t->name) + "\n\n" + std::string(t->doc) +
          (t->since > 1 ? " *(since v" + std::to_string(t->since) + ")*" : std::string()) + "\n\n";
    md += "| column | type | meaning |\n|---|---|---|\n";
    for (const ColumnDecl& c : t->columns) {
      std::string since = c.since > 1 ? " *(since v" + std::to_string(c.since) + ")*" : "";
      md += "| `" + std::string(c.name) + "` | " + std::string(c.type) + " | " + escape_cell(c.doc) + since + " |\n";
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
