// Test support: turns a store this tc wrote into a store of an older schema
// version, the way that version's tc wrote it: every table and column the
// schema declares `since` a later version is dropped, and user_version set.
#pragma once

#include <sqlite3.h>

#include <string>

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
    for (const tc::store::ColumnDecl& c : t->columns) {
      if (c.since > version) sql += "ALTER TABLE " + std::string(t->name) + " DROP COLUMN " + std::string(c.name) + ";";
    }
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
