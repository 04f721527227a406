#include "tc/store/baseline.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>

namespace tc::store {

StatusOr<double> raw_insert_rate(const std::string& path, int64_t rows) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
  sqlite3* db = nullptr;
  auto fail = [&](const char* what) {
    std::string msg = path + ": raw SQLite baseline failed " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return Status(StatusCode::kIoError, msg);
  };
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return fail("opening");
  if (sqlite3_exec(db,
                   "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                   "CREATE TABLE t (id INTEGER PRIMARY KEY, utid INTEGER, ts INTEGER, dur INTEGER, depth INTEGER, loc_id INTEGER, arg INTEGER);",
                   nullptr, nullptr, nullptr) != SQLITE_OK)
    return fail("creating the table");
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES (NULL, ?, ?, ?, ?, ?, ?)", -1, &stmt, nullptr) != SQLITE_OK) return fail("preparing");
  auto t0 = std::chrono::steady_clock::now();
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  for (int64_t i = 0; i < rows; ++i) {
    sqlite3_bind_int64(stmt, 1, i & 3);
    sqlite3_bind_int64(stmt, 2, 1'000'000'000 + i * 37);
    sqlite3_bind_int64(stmt, 3, 25);
    sqlite3_bind_int64(stmt, 4, 0);
    sqlite3_bind_int64(stmt, 5, 7);
    sqlite3_bind_int64(stmt, 6, i);
    if (sqlite3_step(stmt) != SQLITE_DONE) {
      sqlite3_finalize(stmt);
      return fail("inserting");
    }
    sqlite3_reset(stmt);
  }
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return fail("committing");
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
  return static_cast<double>(rows) / secs;
}

}  // namespace tc::store
