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

constexpr ColumnDecl kDroppedColumns[] = {
    {"id", "INTEGER", "row id"},
    {"upid", "INTEGER", "the process that lost the events (processes.upid)"},
    {"utid", "INTEGER", "the thread that lost them (threads.utid); NULL when no ring could be claimed"},
    {"count", "INTEGER", "how many events were lost"},
    {"reason", "TEXT", "why, e.g. 'ring full' or 'no free ring'"},
};

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

std::span<const TableDecl* const> all_tables() {
  static constexpr std::array<const TableDecl*, 10> kTables = {
      &run, &run_env, &strings, &locations, &processes, &threads, &ranges, &instants, &counters, &dropped};
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
