// tc/store/reader.h: reads a .tcdb store, read-only.
//
//   auto r = tc::store::Reader::open("run.tcdb");
//   if (!r.ok()) { std::fprintf(stderr, "%s\n", r.status().message().c_str()); return 2; }
//   auto q = r->query("SELECT ts, dur FROM ranges WHERE utid = 1 ORDER BY ts");
//   while (q.next()) use(q.i64(0), q.i64(1));
//   if (!q.status().ok()) return q.status();
//
// open() checks the file itself before handing it to SQLite and never writes
// to it. Each refusal is one line naming the path, the problem and what to do:
// kNotFound, kNotAStore (directory, empty, not SQLite, another SQLite file),
// kCorrupt (truncated or damaged, or a table or column its version declares
// is missing), kNewerVersion (written by a newer tc). Older versions open:
// what a later version added (`since` in the schema) is then absent, so ask
// has() before querying it. A store whose writer was killed (it still has a
// -wal file) is readable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tc/store/schema.h"
#include "tc/store/status.h"

namespace tc::store {

// The rows of one SQL statement. Must not outlive the Reader that made it.
class Query {
 public:
  // Steps to the next row: false at the end or on error (see status()).
  bool next();
  int columns() const;
  std::string_view column_name(int col) const;
  // Values of the current row; a NULL reads as 0, 0.0 or "".
  bool is_null(int col) const;
  int64_t i64(int col) const;
  double f64(int col) const;
  std::string_view text(int col) const;  // valid until the next call to next()
  // After next() returned false: ok at the end, else why the query failed:
  // kInvalidArgument for bad SQL, kCorrupt for a damaged store, including
  // values whose arithmetic overflows 64 bits (SQLite's "integer overflow").
  const Status& status() const;

  Query(Query&&) noexcept;
  Query& operator=(Query&&) noexcept;
  ~Query();

 private:
  friend class Reader;
  struct Impl;
  explicit Query(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Reader {
 public:
  static StatusOr<Reader> open(const std::string& path);

  // One statement; an error shows in the Query's status(), not as a crash.
  Query query(std::string_view sql) const;
  // The first column of the first row, or an error (no row, NULL, bad SQL).
  StatusOr<int64_t> scalar_i64(std::string_view sql) const;

  int schema_version() const;
  // Whether this store's version has `column` of `table` (declared, and not
  // added by a later version): e.g. has(schema::executions, "execution_id").
  bool has(const TableDecl& table, std::string_view column) const;
  const std::string& path() const;

  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;
  ~Reader();

 private:
  struct Impl;
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tc::store
