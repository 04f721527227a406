// tc/store/writer.h: writes a .tcdb store.
//
//   auto w = tc::store::Writer::create("run.tcdb");
//   if (!w.ok()) return w.status();
//   auto r = (*w)->row(tc::store::schema::ranges);   // reuse r for many rows
//   TC_RETURN_IF_ERROR(r.null().i64(utid).i64(ts).i64(dur).i64(depth).i64(loc).i64(arg).insert());
//   TC_RETURN_IF_ERROR((*w)->finalize());
//
// Rows are batched into transactions; a store is valid after every commit(),
// so a run that is killed still leaves a readable file (with its -wal file).
// Not thread-safe: one thread writes. Errors are one-line Status messages that
// name the path; after an I/O error (disk full) every later call fails too,
// until recover().
//
// Full disk: while it writes, the store keeps a small reserve file next to it
// (PATH-reserve, removed when it closes). After a disk-full error, recover()
// gives that space back so that a last small transaction (the run row, and
// why it ended) still fits; every row committed before the error is kept.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tc/store/schema.h"
#include "tc/store/status.h"

namespace tc::store {

struct WriterOptions {
  bool overwrite = false;                  // replace an existing file at path
  // Commit automatically every N rows. A failed transaction (disk full) loses
  // its rows: at 200,000 rows (~6 MB) a 2 MB file system kept none. 16,384
  // ingested as fast here (tc-bench-trace --quick, alternating runs: 1.70-1.84
  // M events/s with either).
  int64_t rows_per_transaction = 16384;
};

// Which processes' rows Writer::copy_processes() takes from another store.
struct ProcessSubset {
  std::vector<int64_t> upids;  // processes.upid in the source store
  // false: the rows of these processes only. true: every row except theirs,
  // rows that belong to no process (a NULL utid) included.
  bool except = false;
};

class Writer {
  struct Impl;
  struct Table;

 public:
  // Creates a new store at path: schema, user_version, application_id, WAL.
  // kAlreadyExists if path exists and !options.overwrite; kIoError when its
  // directory is missing, not a directory or not writable. It syncs nothing
  // (one transaction, its journal in memory) and neither does the first
  // commit: what they write is safe from a killed process at once, and from
  // a power loss once a checkpoint (at the latest finalize()) has synced.
  static StatusOr<std::unique_ptr<Writer>> create(const std::string& path, WriterOptions options = {});

  // One row of one table. Bind every column in declaration order, then
  // insert(); the Row is then ready for the next row. The id column may be
  // bound null() for an automatic id. Only one Row per table at a time, and
  // none may outlive its Writer.
  class Row {
   public:
    Row& i64(int64_t value);
    Row& f64(double value);
    Row& text(std::string_view value);  // copied
    Row& null();
    // INSERT OR REPLACE. kInvalidArgument if the number of values bound is not
    // the table's column count (the row is then discarded, not written). A
    // record table's store columns (schema::store_columns) may be left out,
    // all or the last of them: they take the value tc's own rows have.
    Status insert();

   private:
    friend class Writer;
    Row(Impl* impl, Table* table) : impl_(impl), table_(table) {}
    // Counts the next column; its table when it is to be bound, else null (past the last column, or no insert).
    Table* next(bool integer);
    Impl* impl_;
    Table* table_;  // null when the table is unknown to the store
    int bound_ = 0;
  };

  Row row(const TableDecl& table);  // cheap: statements are cached per table

  // Ends the current transaction: rows so far are durable and visible to readers.
  Status commit();
  // Copies into this (new, empty) store the rows of `source`, a finalized
  // store of this schema version, that belong to `subset`'s processes: a
  // table with a upid column by it, else one with a utid column by its
  // thread's process; the tables of no process (run, strings, locations,
  // run_env, framework_imports) whole; derived tables are rebuilt by
  // finalize(). The run row's event_count and dropped_count are then this
  // store's. Committed when it returns; call finalize() after it. How one
  // tc-profile over a whole torchrun writes a store per rank.
  Status copy_processes(const std::string& source, const ProcessSubset& subset);
  // commit(), build the indexes, fold the WAL into the file and close it: the
  // result is one self-contained file, synced (the WAL and its directory,
  // then the file: three fdatasync calls in all). Later calls fail. When another program
  // has the store open (the sqlite3 shell, a viewer), the WAL cannot be folded
  // in: the store is closed valid and complete with its -wal file beside it,
  // and that is not an error. kIoError, naming the path, if the store's file
  // or directory was removed while it was written.
  Status finalize();
  // Commits what it can and closes without building indexes (the store stays
  // valid; queries are slower). For a store that cannot be finalized.
  Status close();
  // After an I/O error (disk full, ulimit -f): drops the failed transaction,
  // removes the reserve file, and lets the writer take rows again. Rows
  // committed before the error stay. A failure after it sticks again.
  // With fold_wal, it also folds the WAL into the store file, which empties
  // the WAL: what makes room under a per-file limit (ulimit -f), where the
  // reserve file does not help. (On a full file system that would spend the
  // space the reserve gave back: try without first.)
  Status recover(bool fold_wal = false);

  int64_t rows_written() const;
  // Rows of `table` durable so far (committed), for saying what a failure kept.
  int64_t rows_committed(const TableDecl& table) const;
  const std::string& path() const;

  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  // Without finalize(): commits what it has and closes; the store stays valid.
  ~Writer();

 private:
  explicit Writer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tc::store
