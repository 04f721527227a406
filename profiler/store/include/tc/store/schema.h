// tc/store/schema.h: the schema of a .tcdb store, declared once.
//
// Every table and column is declared here with its doc string; the CREATE
// statements, the writer's INSERTs, the reader's checks and docs/schema.md are
// all generated from these declarations. Adding a table is one more TableDecl
// in schema.cpp, its extern below, and its entry in all_tables(). Changing a
// table or a column means bumping kSchemaVersion.
//
// Conventions: names are plain snake_case; times are int64 CLOCK_MONOTONIC
// nanoseconds in columns named ts (a point) and dur (a length); the first
// column of every table is its INTEGER PRIMARY KEY.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tc::store {

inline constexpr int kSchemaVersion = 1;           // PRAGMA user_version
inline constexpr int32_t kApplicationId = 0x74636462;  // 'tcdb', PRAGMA application_id

struct ColumnDecl {
  std::string_view name;
  std::string_view type;  // "INTEGER", "REAL" or "TEXT"
  std::string_view doc;   // one line
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
};

namespace schema {
extern const TableDecl run, run_env, strings, locations, processes, threads, ranges, instants, counters, dropped;
// Compiler and runtime records (columns id, utid, then the record's fields).
// Derived at finalize.
extern const TableDecl counter_series;
extern const TableDecl steps, compilations, compilation_inputs, compile_passes, executions, explicit_evaluations, memory_plans,
    out_of_memory, logs;
// Every table of the current version, in creation (and documentation) order.
std::span<const TableDecl* const> all_tables();
}  // namespace schema

// The text of docs/schema.md.
std::string schema_markdown();
// "CREATE TABLE name (...)", with each column's doc as an SQL comment so that
// `.schema` in the sqlite3 shell shows it.
std::string create_table_sql(const TableDecl& table);
// "CREATE INDEX IF NOT EXISTS name ON table (columns)".
std::string create_index_sql(const TableDecl& table, const IndexDecl& index);

}  // namespace tc::store
