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
inline constexpr int kSchemaVersion = 2;           // PRAGMA user_version
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

namespace schema {
extern const TableDecl run, strings, locations, processes, threads, ranges, instants, counters, dropped;
// Derived at finalize.
extern const TableDecl counter_series;
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
