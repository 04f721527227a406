#include "tc/store/writer.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "sqlite_status.h"

namespace tc::store {
namespace {

namespace fs = std::filesystem;

// Measured on the 2-core dev machine (3-4M ranges rows, 200k rows per
// transaction, CPU time): 16 KiB pages ingest ~5% faster than 4 KiB; 64 KiB
// was within noise of 16 KiB and makes small stores bigger. SQLITE_OPEN_NOMUTEX
// (one writer thread) gave ~8%. Kept default: cache_size (64 MiB made
// finalize's CREATE INDEX ~10% slower), wal_autocheckpoint, threads.
constexpr int kPageSize = 16384;
constexpr int kBusyTimeoutMs = 5000;

const char* const kSideFiles[] = {"-wal", "-shm", "-journal", "-reserve"};

// Space kept back for the last transaction after a disk-full error: the run
// row, the dropped rows, threads and processes, a few 16 KiB WAL frames each.
// On a 2 MB file system the store used to end with 0 rows and no word of why.
constexpr off_t kReserveBytes = 256 * 1024;

void make_reserve(const std::string& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;  // best effort: without it a full disk keeps less
  if (::posix_fallocate(fd, 0, kReserveBytes) != 0) {
    std::vector<char> zeros(static_cast<size_t>(kReserveBytes));
    if (::write(fd, zeros.data(), zeros.size()) != static_cast<ssize_t>(zeros.size())) {
      ::close(fd);
      ::unlink(file.c_str());
      return;
    }
  }
  ::close(fd);
}

Status exec(sqlite3* db, const std::string& path, const std::string& sql, std::string_view doing) {
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::Ok() : sqlite_status(db, rc, path, doing);
}

// Runs a statement that returns one text value (PRAGMA journal_mode=...).
StatusOr<std::string> exec_text(sqlite3* db, const std::string& path, const char* sql, std::string_view doing) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  if (rc != SQLITE_ROW) {
    Status s = sqlite_status(db, rc, path, doing);
    sqlite3_finalize(stmt);
    return s;
  }
  const unsigned char* text = sqlite3_column_text(stmt, 0);
  std::string value = text ? reinterpret_cast<const char*>(text) : "";
  sqlite3_finalize(stmt);
  return value;
}

Status remove_store_files(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
  for (const char* suffix : kSideFiles) {
    if (!ec) fs::remove(path + suffix, ec);
  }
  if (ec) return {StatusCode::kIoError, path + ": cannot remove the existing store (" + ec.message() + ")"};
  return Status::Ok();
}

// Why path cannot be created, checked before SQLite gives a vaguer answer.
Status check_target(const std::string& path, bool overwrite) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (fs::exists(st)) {
    if (!overwrite) {
      return {StatusCode::kAlreadyExists, path + ": already exists; remove it, choose another path, or allow overwriting"};
    }
    if (fs::is_directory(st)) {
      return {StatusCode::kIoError, path + ": is a directory; give a file path for the store"};
    }
  }
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  fs::file_status dst = fs::status(dir, ec);
  if (!fs::exists(dst)) {
    return {StatusCode::kIoError, path + ": directory " + dir + " does not exist; create it or choose another path"};
  }
  if (!fs::is_directory(dst)) {
    return {StatusCode::kIoError, path + ": " + dir + " is not a directory; choose another path"};
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return {StatusCode::kIoError,
            path + ": cannot write in directory " + dir + " (" + std::strerror(errno) + "); choose a writable one"};
  }
  return Status::Ok();
}

// The schema and header fields are written before WAL mode is switched on, so
// the main file alone identifies a tc store even if the writer is killed
// before its first checkpoint. All of it is one transaction with its rollback
// journal in memory and no sync: it used to be four transactions, each
// creating, syncing and unlinking a -journal file (16 of the 23 fdatasync
// calls of `tc-profile -- /bin/true`, strace). Nothing is lost by that: a
// writer killed (or a machine that loses power) before the program starts
// recorded nothing yet, and the file is only a temporary name beside the
// output. The connection stays at synchronous=OFF until the first commit
// (Impl::sync_from_now): that commit writes the WAL's first header, and SQLite
// syncs a new WAL header (and the directory) only so that frames of an older
// WAL cannot be replayed after a power loss; a new WAL has none.
Status create_schema(sqlite3* db, const std::string& path) {
  std::string sql = "PRAGMA page_size=" + std::to_string(kPageSize) + ";PRAGMA journal_mode=MEMORY;PRAGMA synchronous=OFF;BEGIN;" +
                    "PRAGMA application_id=" + std::to_string(kApplicationId) + ";" +
                    "PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  for (const TableDecl* t : schema::all_tables()) sql += create_table_sql(*t) + ";\n";
  sql += "COMMIT;";
  TC_RETURN_IF_ERROR(exec(db, path, sql, "creating the schema"));
  StatusOr<std::string> mode = exec_text(db, path, "PRAGMA journal_mode=WAL", "switching to WAL");
  if (!mode.ok()) return mode.status();
  if (*mode != "wal") {
    return {StatusCode::kIoError, path + ": the file system does not support SQLite's WAL mode; choose a local disk"};
  }
  return Status::Ok();
}

}  // namespace

// Rows of bulk tables (TableDecl::bulk) are staged and inserted kBatchRows at
// a time with one multi-row INSERT: measured here, 32 rows per statement
// inserts ranges-shaped rows about 1.6x faster than one row per statement.
constexpr int kBatchRows = 32;

struct Value {
  enum Type : uint8_t { kNull, kInt, kReal, kText } type = kNull;
  int64_t i = 0;
  double d = 0;
  uint32_t offset = 0, size = 0;  // text in Table::arena
};

struct Writer::Table {
  const TableDecl* decl = nullptr;
  sqlite3_stmt* insert = nullptr;
  sqlite3_stmt* batch_insert = nullptr;  // kBatchRows rows; bulk tables only
  int columns = 0;
  std::span<const StoreColumn> store;  // the table's last columns, when a record table has them
  bool bulk = false;
  bool bad_key = false;       // the row being bound has a non-integer id
  std::vector<Value> staged;  // bulk: pending rows, columns values each
  std::string arena;
  int pending = 0;
  Status error;  // why this table cannot take rows (not in the store)
  int64_t uncommitted = 0;  // rows inserted in the open transaction
  int64_t committed = 0;    // rows durable

  Value& slot(int column) { return staged[static_cast<size_t>(pending * columns + column - 1)]; }
};

struct Writer::Impl {
  std::string path;
  WriterOptions options;
  sqlite3* db = nullptr;
  std::vector<std::unique_ptr<Table>> tables;  // stable addresses for Row
  sqlite3_stmt* begin = nullptr;
  sqlite3_stmt* commit = nullptr;
  bool in_transaction = false;
  int64_t rows_in_transaction = 0;
  int64_t rows_written = 0;
  bool synchronous = false;  // synchronous=NORMAL: from the first commit on (see create_schema)
  int64_t limit_pages = 0;   // under a file size limit (ulimit -f): the pages the file may have; 0: none
  Status failed;  // sticky: an I/O error or corruption ends the writer

  ~Impl() { close(); }

  std::string reserve_path() const { return path + "-reserve"; }
  void drop_reserve() { ::unlink(reserve_path().c_str()); }

  // The open transaction was rolled back: its rows are not in the store.
  void forget_transaction() {
    in_transaction = false;
    rows_in_transaction = 0;
    for (auto& t : tables) {
      t->uncommitted = 0;
      t->pending = 0;
      t->arena.clear();
    }
  }

  void close() {
    if (db) drop_reserve();
    for (auto& t : tables) {
      sqlite3_finalize(std::exchange(t->insert, nullptr));
      sqlite3_finalize(std::exchange(t->batch_insert, nullptr));
    }
    sqlite3_finalize(std::exchange(begin, nullptr));
    sqlite3_finalize(std::exchange(commit, nullptr));
    sqlite3_close_v2(std::exchange(db, nullptr));
  }

  Status usable() const {
    if (!failed.ok()) return failed;
    if (!db) return {StatusCode::kInvalidArgument, path + ": the store is already finalized"};
    return Status::Ok();
  }

  // Maps an SQLite failure to a Status; I/O errors and corruption stick.
  Status fail(int rc, std::string_view doing) {
    Status s = sqlite_status(db, rc, path, doing);
    if (s.code() == StatusCode::kIoError || s.code() == StatusCode::kCorrupt) failed = s;
    if (in_transaction && sqlite3_get_autocommit(db)) forget_transaction();  // SQLite rolled it back
    return s;
  }

  Status step(sqlite3_stmt* stmt, std::string_view doing) {
    int rc = sqlite3_step(stmt);
    Status s = rc == SQLITE_DONE ? Status::Ok() : fail(rc, doing);
    sqlite3_reset(stmt);
    return s;
  }

  Status prepare(const char* sql, sqlite3_stmt** stmt) {
    int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr);
    return rc == SQLITE_OK ? Status::Ok() : fail(rc, "preparing a statement");
  }

  Status insert(Table& t, int bound) {
    TC_RETURN_IF_ERROR(usable());
    if (!t.error.ok()) return t.error;
    bool bad_key = std::exchange(t.bad_key, false);
    if (bound != t.columns || bad_key) {
      if (t.insert) sqlite3_clear_bindings(t.insert);
      if (t.bulk) t.arena.resize(text_in_use(t));
      std::string what = bad_key ? "a non-integer id" : std::to_string(bound) + " values for its " + std::to_string(t.columns) + " columns";
      return {StatusCode::kInvalidArgument, path + ": a row of table " + std::string(t.decl->name) + " got " + what + "; row not written"};
    }
    if (!in_transaction) {
      TC_RETURN_IF_ERROR(step(begin, "starting a transaction"));
      in_transaction = true;
    }
    if (t.bulk) {
      ++t.uncommitted;
      if (++t.pending == kBatchRows) TC_RETURN_IF_ERROR(flush(t));
    } else {
      ++t.uncommitted;
      if (int rc = sqlite3_step(t.insert); rc != SQLITE_DONE) {  // the message is built only on failure
        Status s = fail(rc, "writing table " + std::string(t.decl->name));
        sqlite3_reset(t.insert);
        return s;
      }
      sqlite3_reset(t.insert);  // bindings stay; the next row overwrites them all
    }
    ++rows_written;
    if (++rows_in_transaction >= options.rows_per_transaction) return commit_transaction();
    return Status::Ok();
  }

  // Bytes of the arena used by fully bound pending rows.
  static size_t text_in_use(const Table& t) {
    size_t end = 0;
    for (int i = 0; i < t.pending * t.columns; ++i) {
      const Value& v = t.staged[static_cast<size_t>(i)];
      if (v.type == Value::kText) end = std::max<size_t>(end, v.offset + v.size);
    }
    return end;
  }

  static void bind(sqlite3_stmt* stmt, int index, const Value& v, const std::string& arena) {
    switch (v.type) {
      case Value::kNull: sqlite3_bind_null(stmt, index); break;
      case Value::kInt: sqlite3_bind_int64(stmt, index, v.i); break;
      case Value::kReal: sqlite3_bind_double(stmt, index, v.d); break;
      case Value::kText: sqlite3_bind_text64(stmt, index, arena.data() + v.offset, v.size, SQLITE_STATIC, SQLITE_UTF8); break;
    }
  }

  // Inserts a bulk table's pending rows: whole batches with the multi-row
  // statement, a remainder row by row.
  Status flush(Table& t) {
    if (t.pending == 0) return Status::Ok();
    int rows = t.pending;
    t.pending = 0;
    Status s;
    if (rows == kBatchRows) {
      for (int i = 0; i < rows * t.columns; ++i) bind(t.batch_insert, i + 1, t.staged[static_cast<size_t>(i)], t.arena);
      if (int rc = sqlite3_step(t.batch_insert); rc != SQLITE_DONE) s = fail(rc, "writing table " + std::string(t.decl->name));
      sqlite3_reset(t.batch_insert);
    } else {
      for (int r = 0; r < rows && s.ok(); ++r) {
        for (int c = 0; c < t.columns; ++c) bind(t.insert, c + 1, t.staged[static_cast<size_t>(r * t.columns + c)], t.arena);
        if (int rc = sqlite3_step(t.insert); rc != SQLITE_DONE) s = fail(rc, "writing table " + std::string(t.decl->name));
        sqlite3_reset(t.insert);
      }
    }
    t.arena.clear();
    return s;
  }

  Status flush_all() {
    for (auto& t : tables) {
      if (t->bulk) TC_RETURN_IF_ERROR(flush(*t));
    }
    return Status::Ok();
  }

  Status commit_transaction() {
    TC_RETURN_IF_ERROR(usable());
    if (!in_transaction) return Status::Ok();
    TC_RETURN_IF_ERROR(flush_all());
    TC_RETURN_IF_ERROR(step(commit, "committing"));
    in_transaction = false;
    rows_in_transaction = 0;
    for (auto& t : tables) t->committed += std::exchange(t->uncommitted, 0);
    sync_from_now();
    return Status::Ok();
  }

  // WAL with synchronous=NORMAL: a commit does not sync, a checkpoint syncs
  // the WAL before it writes the file, so the store stays valid whatever
  // happens. Cannot fail outside a transaction.
  // Under a file size limit (ulimit -f), the reserve file gives nothing back:
  // the limit is per file. The store then stops short of it (max_page_count,
  // with an eighth of the limit, at least kReserveBytes, left over) and
  // checkpoints its WAL at a quarter of it, so that after the disk-full error
  // recover() has room in both files for the run row and the reason. Without
  // it the last transaction hit the limit too, in most runs, and the store
  // could not say it was incomplete.
  void keep_headroom_under_file_size_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
    const int64_t bytes = static_cast<int64_t>(limit.rlim_cur);
    const int64_t headroom = std::max<int64_t>(kReserveBytes, bytes / 8);
    limit_pages = std::max<int64_t>(1, bytes / kPageSize);
    const int64_t pages = std::max<int64_t>(4, (bytes - headroom) / kPageSize);
    const int64_t checkpoint = std::max<int64_t>(1, bytes / 4 / kPageSize);
    const std::string sql = "PRAGMA max_page_count=" + std::to_string(pages) + ";PRAGMA wal_autocheckpoint=" + std::to_string(checkpoint);
    sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  }
  // After the disk-full error: the headroom is the last transaction's.
  void release_headroom() {
    if (limit_pages == 0) return;
    const std::string sql = "PRAGMA max_page_count=" + std::to_string(limit_pages);
    sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  }

  void sync_from_now() {
    if (synchronous) return;
    sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
    synchronous = true;
  }

  // The store's file or directory was removed while it was written: SQLite
  // goes on writing the unlinked file, and only the WAL's removal at the end
  // failed, with a message about "leaving WAL mode".
  Status still_there() const {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return Status::Ok();
    return {StatusCode::kIoError, path + ": the store was removed while it was written (" + std::strerror(errno) +
                                      "); nothing of this run was kept there"};
  }

  Table& table(const TableDecl& decl) {
    for (auto& t : tables) {
      if (t->decl == &decl) return *t;
    }
    auto t = std::make_unique<Table>();
    t->decl = &decl;
    t->columns = static_cast<int>(decl.columns.size());
    t->store = schema::store_columns(decl.name);
    t->bulk = decl.bulk;
    std::string one = "(";
    for (int i = 0; i < t->columns; ++i) one += i ? ",?" : "?";
    one += ")";
    std::string sql = "INSERT OR REPLACE INTO " + std::string(decl.name) + " VALUES " + one;
    std::string batch = sql;
    for (int r = 1; r < kBatchRows; ++r) batch += "," + one;
    if (Status s = usable(); !s.ok()) {
      t->error = s;
    } else if (sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &t->insert, nullptr) != SQLITE_OK ||
               (t->bulk && sqlite3_prepare_v3(db, batch.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &t->batch_insert, nullptr) != SQLITE_OK)) {
      t->error = {StatusCode::kInvalidArgument,
                  path + ": cannot write table " + std::string(decl.name) + " (" + sqlite_message(db, 0) + ")"};
    }
    if (t->bulk) t->staged.resize(static_cast<size_t>(kBatchRows * t->columns));
    tables.push_back(std::move(t));
    return *tables.back();
  }
};

StatusOr<std::unique_ptr<Writer>> Writer::create(const std::string& path, WriterOptions options) {
  TC_RETURN_IF_ERROR(check_target(path, options.overwrite));
  TC_RETURN_IF_ERROR(remove_store_files(path));  // side files of an old store would be replayed into the new one

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  if (impl->options.rows_per_transaction < 1) impl->options.rows_per_transaction = 1;
  int rc = sqlite3_open_v2(path.c_str(), &impl->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  Status s = rc == SQLITE_OK ? Status::Ok() : sqlite_status(impl->db, rc, path, "creating the store");
  if (s.ok()) {
    sqlite3_busy_timeout(impl->db, kBusyTimeoutMs);
    s = create_schema(impl->db, path);
  }
  if (s.ok()) impl->keep_headroom_under_file_size_limit();
  if (s.ok()) s = impl->prepare("BEGIN IMMEDIATE", &impl->begin);
  if (s.ok()) s = impl->prepare("COMMIT", &impl->commit);
  if (!s.ok()) {
    impl->close();
    (void)remove_store_files(path);  // a half-made store is worse than none
    return s;
  }
  make_reserve(impl->reserve_path());
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Writer::~Writer() {
  (void)impl_->commit_transaction();  // a no-op after finalize() or a failure
  // Closing the last connection checkpoints the WAL into the file and removes it.
  impl_->close();
}

Writer::Row Writer::row(const TableDecl& table) { return Row(impl_.get(), &impl_->table(table)); }

// The first column is the INTEGER PRIMARY KEY: SQLite refuses anything but
// an integer or NULL there, so that is checked while binding (a bulk row is
// inserted later, when its error could no longer name the row).
Writer::Table* Writer::Row::next(bool integer) {
  Table& t = *table_;
  if (++bound_ > t.columns || !t.insert) return nullptr;
  if (bound_ == 1 && !integer) t.bad_key = true;
  return &t;
}

Writer::Row& Writer::Row::i64(int64_t value) {
  if (Table* t = next(true); t && t->bulk) t->slot(bound_) = {.type = Value::kInt, .i = value};
  else if (t) sqlite3_bind_int64(t->insert, bound_, value);
  return *this;
}

Writer::Row& Writer::Row::f64(double value) {
  if (Table* t = next(false); t && t->bulk) t->slot(bound_) = {.type = Value::kReal, .d = value};
  else if (t) sqlite3_bind_double(t->insert, bound_, value);
  return *this;
}

Writer::Row& Writer::Row::text(std::string_view value) {
  Table* t = next(false);
  if (t && t->bulk) {
    t->slot(bound_) = {.type = Value::kText, .offset = static_cast<uint32_t>(t->arena.size()), .size = static_cast<uint32_t>(value.size())};
    t->arena.append(value);
  } else if (t) {
    sqlite3_bind_text64(t->insert, bound_, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  return *this;
}

// NULL is no integer, but SQLite takes it for the key (it picks the next id).
Writer::Row& Writer::Row::null() {
  if (Table* t = next(true); t && t->bulk) t->slot(bound_) = {};
  else if (t) sqlite3_bind_null(t->insert, bound_);
  return *this;
}

Status Writer::Row::insert() {
  Table& t = *table_;
  // Bound up to its record's fields (or some of the store columns): the rest take tc's values.
  const int first_store = t.columns - static_cast<int>(t.store.size());
  if (!t.store.empty() && bound_ >= first_store && bound_ < t.columns) {
    for (size_t i = static_cast<size_t>(bound_ - first_store); i < t.store.size(); ++i) {
      const StoreColumn& c = t.store[i];
      if (c.tc_null) {
        null();
      } else if (c.column.type == "INTEGER") {
        i64(c.tc_int);
      } else {
        text(c.tc_text);
      }
    }
  }
  return impl_->insert(t, std::exchange(bound_, 0));
}

Status Writer::commit() { return impl_->commit_transaction(); }

Status Writer::copy_processes(const std::string& source, const ProcessSubset& subset) {
  Impl& w = *impl_;
  TC_RETURN_IF_ERROR(w.commit_transaction());
  sqlite3_stmt* attach = nullptr;
  int rc = sqlite3_prepare_v2(w.db, "ATTACH DATABASE ? AS tc_src", -1, &attach, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(attach, 1, source.c_str(), -1, SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_step(attach);
  sqlite3_finalize(attach);
  if (rc != SQLITE_DONE) return sqlite_status(w.db, rc, source, "opening the store to copy from");
  StatusOr<std::string> version = exec_text(w.db, source, "PRAGMA tc_src.user_version", "reading the store's version");
  if (!version.ok() || *version != std::to_string(kSchemaVersion)) {
    sqlite3_exec(w.db, "DETACH DATABASE tc_src", nullptr, nullptr, nullptr);
    if (!version.ok()) return version.status();
    return {StatusCode::kInvalidArgument, source + ": schema version " + *version + ", not this tc's " + std::to_string(kSchemaVersion) +
                                              "; only a store this tc wrote can be split"};
  }
  std::string upids;
  for (int64_t u : subset.upids) upids += (upids.empty() ? "" : ",") + std::to_string(u);
  const std::string in_set = "(" + upids + ")";
  const std::string utids = "(SELECT utid FROM tc_src.threads WHERE upid IN " + in_set + ")";
  std::string sql = "BEGIN;";
  for (const TableDecl* t : schema::all_tables()) {
    if (!t->derive.empty()) continue;
    std::string columns;
    bool has_upid = false, has_utid = false;
    for (const ColumnDecl& c : t->columns) {
      columns += (columns.empty() ? "" : ",") + std::string(c.name);
      has_upid |= c.name == "upid";
      has_utid |= c.name == "utid";
    }
    const std::string key = has_upid ? "upid IN " + in_set : has_utid ? "utid IN " + utids : "";
    const std::string null_key = has_upid ? "upid IS NULL" : "utid IS NULL";
    std::string where;
    if (!key.empty()) where = subset.except ? " WHERE " + null_key + " OR NOT (" + key + ")" : " WHERE " + key;
    sql += "INSERT INTO main." + std::string(t->name) + "(" + columns + ") SELECT " + columns + " FROM tc_src." + std::string(t->name) + where + ";";
  }
  sql += "UPDATE main.run SET event_count = (SELECT count(*) FROM main.ranges) + (SELECT count(*) FROM main.instants) + "
         "(SELECT count(*) FROM main.counters), dropped_count = (SELECT coalesce(sum(count), 0) FROM main.dropped);"
         "COMMIT;";
  Status s = exec(w.db, w.path, sql, "copying rows from " + source);
  if (!s.ok()) sqlite3_exec(w.db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_exec(w.db, "DETACH DATABASE tc_src", nullptr, nullptr, nullptr);
  if (!s.ok()) w.failed = s;
  return s;
}

Status Writer::finalize() {
  Impl& w = *impl_;
  TC_RETURN_IF_ERROR(w.commit_transaction());
  std::string sql = "BEGIN;";
  for (const TableDecl* t : schema::all_tables()) {
    if (!t->derive.empty()) sql += std::string(t->derive);
    for (const IndexDecl& ix : t->indexes) sql += create_index_sql(*t, ix) + ";";
  }
  sql += "COMMIT;";
  if (Status gone = w.still_there(); !gone.ok()) return w.failed = gone;
  // No ANALYZE: every index leads with the column queries filter on, so the
  // planner picks them without statistics, and ANALYZE costs a full scan.
  if (Status s = exec(w.db, w.path, sql, "building indexes and derived tables"); !s.ok()) {
    sqlite3_exec(w.db, "ROLLBACK", nullptr, nullptr, nullptr);
    w.forget_transaction();
    return w.failed = s;
  }
  // Fold the WAL into the file and leave WAL mode, so that the store is one
  // file. A reader that has the store open (the sqlite3 shell, a viewer still
  // loading) pins the WAL: that used to wait out the 5 s busy timeout twice and
  // end in an error that made tc-profile exit 1 and call the store incomplete,
  // although every row had been committed. Now a few short tries, then the
  // store stays in WAL mode: valid, complete, with its -wal file beside it.
  //
  // The checkpoint syncs the WAL, then the file: from there the file holds
  // every row on its own. Leaving WAL mode then only rewrites the header's
  // first bytes (the journal-mode flag and a change counter), and either
  // header is a valid store with those rows, so that step runs with
  // synchronous=OFF and its journal in memory: no -journal file created and
  // unlinked, and none of the four syncs journal_mode=DELETE cost. FULL, not
  // TRUNCATE: the WAL is deleted right after, so truncating it first was one
  // more metadata write for nothing.
  sqlite3_busy_timeout(w.db, 100);
  w.sync_from_now();
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int rc = sqlite3_wal_checkpoint_v2(w.db, nullptr, SQLITE_CHECKPOINT_FULL, nullptr, nullptr);
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) continue;
    if (rc != SQLITE_OK) {
      if (Status gone = w.still_there(); !gone.ok()) return w.failed = gone;
      return w.failed = sqlite_status(w.db, rc, w.path, "folding the WAL into the store");
    }
    sqlite3_exec(w.db, "PRAGMA synchronous=OFF", nullptr, nullptr, nullptr);
    StatusOr<std::string> mode = exec_text(w.db, w.path, "PRAGMA journal_mode=MEMORY", "leaving WAL mode");
    if (mode.ok() && *mode == "memory") break;
    sqlite3_exec(w.db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
    if (!mode.ok() && mode.status().message().find("locked by another program") == std::string::npos) {
      if (Status gone = w.still_there(); !gone.ok()) return w.failed = gone;
      return w.failed = mode.status();
    }
  }
  w.close();
  return Status::Ok();
}

Status Writer::close() {
  Impl& w = *impl_;
  if (!w.db) return w.failed.ok() ? Status::Ok() : w.failed;
  Status s = w.commit_transaction();
  w.close();
  return s;
}

Status Writer::recover(bool fold_wal) {
  Impl& w = *impl_;
  if (w.failed.ok() && !fold_wal) return Status::Ok();
  if (!w.db || w.failed.code() == StatusCode::kCorrupt) return w.failed.ok() ? Status(StatusCode::kInvalidArgument, w.path + ": closed") : w.failed;
  if (!sqlite3_get_autocommit(w.db)) sqlite3_exec(w.db, "ROLLBACK", nullptr, nullptr, nullptr);
  w.release_headroom();
  w.sync_from_now();
  // A failed fold leaves the WAL as it was: nothing is lost by trying.
  if (fold_wal) (void)sqlite3_wal_checkpoint_v2(w.db, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  w.forget_transaction();
  for (auto& t : w.tables) {
    if (t->insert) sqlite3_clear_bindings(t->insert);
  }
  w.drop_reserve();
  w.failed = Status::Ok();
  return Status::Ok();
}

int64_t Writer::rows_committed(const TableDecl& table) const {
  for (const auto& t : impl_->tables) {
    if (t->decl == &table) return t->committed;
  }
  return 0;
}

int64_t Writer::rows_written() const { return impl_->rows_written; }

const std::string& Writer::path() const { return impl_->path; }

}  // namespace tc::store
