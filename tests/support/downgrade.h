// Test support: turns a store this tc wrote into a store of an older schema
// version, the way that version's tc wrote it: every table and column the
// schema declares `since` a later version is dropped, and user_version set.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "tc/store/schema.h"

namespace tc::test {

// "" on success, else what SQLite said.
inline std::string downgrade_store(const std::string& path, int version) {
  std::string sql = "BEGIN;";
  for (const tc::store::TableDecl* t : tc::store::schema::all_tables()) {
    if (t->since > version) {
      sql += "DROP TABLE " + std::string(t->name) + ";";
      continue;
    }
    // Rebuilt rather than ALTER TABLE ... DROP COLUMN: SQLite's DROP COLUMN
    // of a table's last column swallows the newline that ends the previous
    // column's "--" doc comment, and the ")" with it ("error in table run
    // after drop column: incomplete input").
    std::vector<tc::store::ColumnDecl> kept;
    for (const tc::store::ColumnDecl& c : t->columns) {
      if (c.since <= version) kept.push_back(c);
    }
    if (kept.size() == t->columns.size()) continue;
    tc::store::TableDecl older = *t;
    older.columns = kept;
    std::string name(t->name), columns;
    for (const tc::store::ColumnDecl& c : kept) columns += (columns.empty() ? "" : ", ") + std::string(c.name);
    sql += "ALTER TABLE " + name + " RENAME TO tc_downgrade_old;" + tc::store::create_table_sql(older) + ";INSERT INTO " + name + " SELECT " +
           columns + " FROM tc_downgrade_old; DROP TABLE tc_downgrade_old;";
    for (const tc::store::IndexDecl& index : t->indexes) sql += tc::store::create_index_sql(*t, index) + ";";
  }
  sql += "COMMIT; PRAGMA user_version = " + std::to_string(version) + ";";
  sqlite3* db = nullptr;
  std::string error;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    error = db ? sqlite3_errmsg(db) : "cannot open";
  } else {
    char* msg = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) error = msg ? msg : "exec failed";
    sqlite3_free(msg);
  }
  sqlite3_close(db);
  return error;
}

}  // namespace tc::test
