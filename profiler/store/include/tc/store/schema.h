// tc/store/schema.h: the schema of a .tcdb store, declared once.
//
// Every table and column is declared here with its doc string; the CREATE
// statements, the writer's INSERTs, the reader's checks and docs/schema.md are
// all generated from these declarations. Adding a table is one more TableDecl
// in schema.cpp, its extern below, and its entry in all_tables(). The tables
// of compiler and runtime records (steps, compilations, ...) are not written
// here: their columns come from the record declarations in
// tc/trace/records.h, so producer, collector and column cannot disagree.
// Changing a table or a column means bumping kSchemaVersion and marking what
// is new with `since`, so that stores of older versions still open.
//
// Conventions: names are plain snake_case; times are int64 CLOCK_MONOTONIC
// nanoseconds in columns named ts (a point) and dur (a length); the first
// column of every table is its INTEGER PRIMARY KEY.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tc/trace/records.h"

namespace tc::store {

// v2: executions.execution_id; graph ids unique in the run.
// v3: NVTX capture (nvtx_sites, nvtx_categories, nvtx_range_starts/ends,
//     nvtx_real_payloads, nvtx_thread_names); run.step_range, run.nvtx.
// v4: framework importers (torch.compile): framework_imports; the store
//     columns of record tables (StoreColumn): steps.framework,
//     compilations.framework/frame/failure, compilation_inputs.dynamic,
//     explicit_evaluations.framework/reason.
// v5: GPU activity from CUPTI: gpu_activity, gpu_capture; run.cupti.
// v6: explicit_evaluations.code/broke_at (torch.compile's graph-break registry
//     code, and the library frame a break happened in); step_inputs (the
//     shapes of each step's inputs, from the Python hook); ceilings.isa,
//     ceilings.kernel, ceilings.threads (what the roofline was measured on).
// v7: framework_memory (the batch model's points from a framework's own
//     memory accounting: XLA's memory_analysis() of JAX's step).
// v8: executions.dynamic_size (tc's dynamic graphs: the size each execution ran at).
inline constexpr int kSchemaVersion = 8;           // PRAGMA user_version
inline constexpr int32_t kApplicationId = 0x74636462;  // 'tcdb', PRAGMA application_id

struct ColumnDecl {
  std::string_view name;
  std::string_view type;  // "INTEGER", "REAL" or "TEXT"
  std::string_view doc;   // one line
  int since = 1;          // the schema version that added it; older stores lack it
};

// An index built by Writer::finalize(), not during ingest.
struct IndexDecl {
  std::string_view name;
  std::string_view columns;  // e.g. "utid, ts"
};

struct TableDecl {
  std::string_view name;
  std::string_view doc;
  std::span<const ColumnDecl> columns;  // columns[0] is the INTEGER PRIMARY KEY
  std::span<const IndexDecl> indexes;
  // Written in bulk (millions of rows): rows are staged and inserted many per
  // statement, so an I/O error surfaces at a later insert() or commit().
  bool bulk = false;
  // A derived table: filled by these SQL statements when the store is
  // finalized (a summary of a bulk table, so readers need not scan it).
  std::string_view derive = {};
  int since = 1;  // the schema version that added it; older stores lack it
};

// A column of a record table that is not a field of its record: the store
// side fills it. After the record's fields, in this order. The collector
// writes `tc_value` for a record from tc's rings (tc_text, else tc_int when
// the column is INTEGER, else NULL); a framework importer writes its own.
struct StoreColumn {
  std::string_view table;
  ColumnDecl column;
  std::string_view tc_text = {};  // "" with an INTEGER column: tc_int
  int64_t tc_int = 0;
  bool tc_null = false;
};

namespace schema {
// The store columns of a record table (empty for most).
std::span<const StoreColumn> store_columns(std::string_view table);
extern const TableDecl run, strings, locations, processes, threads, ranges, instants, counters, dropped;
// What each framework importer read, one row per import (v4).
extern const TableDecl framework_imports;
// The shapes of each step's inputs, from the Python hook (v6).
extern const TableDecl step_inputs;
// The points of a framework run's batch model, from the framework's own
// memory accounting (v7).
extern const TableDecl framework_memory;
// Derived at finalize.
extern const TableDecl counter_series;
// The instants names of tc's Python start-up hook (python/sitecustomize.py's
// NVTX marks, default domain): kStepMark ends an optimizer step and
// kStepsStartMark opens the first. The collector turns them into steps rows;
// the analysis keeps them out of the program's own marks. kCollectiveAllReduce
// is an NVTX start/end range around each of DDP's gradient all-reduces (from
// this rank's arrival to its completion), which the collector turns into
// collectives rows (op: the name after kCollectivePrefix).
inline constexpr const char* kStepMark = "tc.optimizer_step";
inline constexpr const char* kStepsStartMark = "tc.optimizer_steps_start";
inline constexpr const char* kCollectivePrefix = "tc.collective.";
inline constexpr const char* kCollectiveAllReduce = "tc.collective.all_reduce";
inline constexpr const char* kHookMarks[] = {kStepMark, kStepsStartMark, kCollectiveAllReduce};
// Compiler and runtime records, one table per kind of tc/trace/records.h
// (schema::steps, schema::compilations, ..., schema::run_env): columns id,
// utid (unless the row is the run's, as in run_env), then the record's fields.
#define TC_STORE_RECORD_TABLE_(Name, kind_, table_, ...) extern const TableDecl& table_;
TC_TRACE_RECORDS(TC_STORE_RECORD_TABLE_)
#undef TC_STORE_RECORD_TABLE_
// The table of a record kind; nullptr for a kind this tc does not know.
const TableDecl* record_table(uint16_t kind);
// Every table of the current version, in creation (and documentation) order.
std::span<const TableDecl* const> all_tables();
// The declared column of `table` named `name`, or nullptr.
const ColumnDecl* find_column(const TableDecl& table, std::string_view name);
}  // namespace schema

// The text of docs/schema.md.
std::string schema_markdown();
// "CREATE TABLE name (...)", with each column's doc as an SQL comment so that
// `.schema` in the sqlite3 shell shows it.
std::string create_table_sql(const TableDecl& table);
// "CREATE INDEX IF NOT EXISTS name ON table (columns)".
std::string create_index_sql(const TableDecl& table, const IndexDecl& index);

}  // namespace tc::store
