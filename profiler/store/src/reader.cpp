#include "tc/store/reader.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

#include "sqlite_status.h"
#include "tc/store/schema.h"

namespace tc::store {
namespace {

constexpr char kMagic[16] = "SQLite format 3";  // with its terminating NUL: 16 bytes
constexpr int kHeaderSize = 100;

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

Status not_a_store(const std::string& path, const std::string& why) {
  return {StatusCode::kNotAStore, path + ": not a tc store (" + why + "); pass a .tcdb file written by tc"};
}

Status truncated(const std::string& path, const std::string& why) {
  return {StatusCode::kCorrupt, path + ": truncated store (" + why +
                                    "); copy the whole file again or record the run again"};
}

Status damaged_version(const std::string& path, int64_t version) {
  return {StatusCode::kCorrupt, path + ": damaged store (schema version " + std::to_string(version) +
                                    " in its header); record the run again"};
}

// Checks what the 100-byte SQLite header says before SQLite sees the file.
// has_wal: the header may be stale (the WAL holds newer pages), so the size
// check is skipped; SQLite reads the WAL and the checks are redone after.
Status check_file(const std::string& path, bool has_wal) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return {StatusCode::kNotFound, path + ": no such file; check the path"};
    return {StatusCode::kIoError, path + ": cannot read (" + std::strerror(errno) + "); check permissions"};
  }
  if (S_ISDIR(st.st_mode)) return not_a_store(path, "a directory");
  if (!S_ISREG(st.st_mode)) return not_a_store(path, "not a regular file");
  if (st.st_size == 0) return not_a_store(path, "an empty file");

  unsigned char h[kHeaderSize] = {};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {StatusCode::kIoError, path + ": cannot read (" + std::strerror(errno) + "); check permissions"};
  ssize_t got = ::pread(fd, h, sizeof h, 0);
  int read_errno = errno;
  ::close(fd);
  if (got < 0) return {StatusCode::kIoError, path + ": cannot read (" + std::strerror(read_errno) + ")"};

  if (got < static_cast<ssize_t>(sizeof kMagic) || std::memcmp(h, kMagic, sizeof kMagic) != 0) {
    return not_a_store(path, "not an SQLite database");
  }
  if (got < kHeaderSize) return truncated(path, std::to_string(got) + " bytes, shorter than its header");

  uint32_t page_size = (uint32_t{h[16]} << 8) | h[17];
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) != 0) {
    return {StatusCode::kCorrupt, path + ": damaged store header (page size " + std::to_string(page_size) +
                                      "); record the run again"};
  }
  uint32_t app_id = be32(h + 68);
  if (app_id != static_cast<uint32_t>(kApplicationId)) {
    char id[16];
    std::snprintf(id, sizeof id, "0x%08x", app_id);
    return not_a_store(path, std::string("an SQLite database with application_id ") + id);
  }
  uint32_t version = be32(h + 60);
  // user_version is a signed 32-bit integer: a negative one (bit 31 set) is
  // no version tc ever wrote, not one from the future.
  if (version > static_cast<uint32_t>(INT32_MAX)) return damaged_version(path, static_cast<int64_t>(static_cast<int32_t>(version)));
  if (version > static_cast<uint32_t>(kSchemaVersion)) {
    return {StatusCode::kNewerVersion, path + ": written by tc schema v" + std::to_string(version) +
                                           "; this tc reads up to v" + std::to_string(kSchemaVersion) +
                                           "; upgrade tc"};
  }
  if (version == 0) return {StatusCode::kCorrupt, path + ": tc store without a schema version; record the run again"};

  // The in-header page count is valid only when bytes 92-95 match the change counter (bytes 24-27).
  uint64_t pages = be32(h + 28);
  if (!has_wal && pages > 0 && be32(h + 92) == be32(h + 24)) {
    uint64_t expected = pages * page_size;
    if (static_cast<uint64_t>(st.st_size) < expected) {
      return truncated(path, std::to_string(st.st_size) + " of " + std::to_string(expected) + " bytes");
    }
  }
  return Status::Ok();
}

// A failure while SQLite reads the store or runs a query. Extended result
// codes are on, so a plain SQLITE_READONLY is a query that tried to write.
Status read_error(sqlite3* db, int rc, const std::string& path, bool has_wal) {
  switch (rc & 0xff) {
    case SQLITE_ERROR:
      return {StatusCode::kInvalidArgument, path + ": query failed: " + sqlite_message(db, rc)};
    case SQLITE_READONLY:
      if (rc != SQLITE_READONLY) break;
      return {StatusCode::kInvalidArgument, path + ": opened read-only; queries cannot change the store"};
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_PERM:
      break;
    default:
      return sqlite_status(db, rc, path, "reading");
  }
  if (has_wal) {
    return {StatusCode::kIoError, path + ": cannot read its write-ahead log " + path +
                                      "-wal, left by a run that did not finish (" + sqlite_message(db, rc) +
                                      "); copy both files to a writable directory and open the copy"};
  }
  return sqlite_status(db, rc, path, "reading");
}

// Whether a -wal file (or something in its place) may hold pages newer than the file.
bool has_wal_file(const std::string& path) {
  struct stat st{};
  return ::lstat((path + "-wal").c_str(), &st) == 0 && !(S_ISREG(st.st_mode) && st.st_size == 0);
}

}  // namespace

struct Query::Impl {
  sqlite3_stmt* stmt = nullptr;
  const std::string* path = nullptr;
  bool has_wal = false;
  Status status;
  bool done = false;
  ~Impl() { sqlite3_finalize(stmt); }
};

struct Reader::Impl {
  std::string path;
  sqlite3* db = nullptr;
  bool has_wal = false;
  int schema_version = 0;
  ~Impl() { sqlite3_close_v2(db); }
};

Query::Query(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Query::Query(Query&&) noexcept = default;
Query& Query::operator=(Query&&) noexcept = default;
Query::~Query() = default;

bool Query::next() {
  if (!impl_ || impl_->done) return false;
  int rc = sqlite3_step(impl_->stmt);
  if (rc == SQLITE_ROW) return true;
  impl_->done = true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(impl_->stmt);
  // A statement that prepared fails while running with "integer overflow"
  // only on the store's values (sum() or abs() past 64 bits): damage, not usage.
  if ((rc & 0xff) == SQLITE_ERROR && std::strcmp(sqlite3_errmsg(db), "integer overflow") == 0) {
    impl_->status = Status(StatusCode::kCorrupt, *impl_->path + ": damaged store: it holds values out of range (integer overflow adding up its "
                                                                "times, e.g. a negative or huge dur); record the run again");
  } else {
    impl_->status = read_error(db, rc, *impl_->path, impl_->has_wal);
  }
  return false;
}

int Query::columns() const { return impl_ && impl_->stmt ? sqlite3_column_count(impl_->stmt) : 0; }

std::string_view Query::column_name(int col) const {
  const char* name = impl_ && impl_->stmt ? sqlite3_column_name(impl_->stmt, col) : nullptr;
  return name ? name : "";
}

bool Query::is_null(int col) const {
  return !impl_ || !impl_->stmt || sqlite3_column_type(impl_->stmt, col) == SQLITE_NULL;
}

int64_t Query::i64(int col) const { return impl_ && impl_->stmt ? sqlite3_column_int64(impl_->stmt, col) : 0; }

double Query::f64(int col) const { return impl_ && impl_->stmt ? sqlite3_column_double(impl_->stmt, col) : 0.0; }

std::string_view Query::text(int col) const {
  if (!impl_ || !impl_->stmt) return {};
  const unsigned char* p = sqlite3_column_text(impl_->stmt, col);
  if (!p) return {};
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(impl_->stmt, col))};
}

const Status& Query::status() const {
  static const Status kOk;
  return impl_ ? impl_->status : kOk;
}

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;
Reader::~Reader() = default;

StatusOr<Reader> Reader::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->has_wal = has_wal_file(path);
  TC_RETURN_IF_ERROR(check_file(path, impl->has_wal));

  int rc = sqlite3_open_v2(path.c_str(), &impl->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return read_error(impl->db, rc, path, impl->has_wal);
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_limit(impl->db, SQLITE_LIMIT_ATTACHED, 0);  // queries see this store only

  // Redo the header checks through SQLite: with a WAL, the file's header may be stale.
  Reader reader(std::move(impl));
  const std::string& p = reader.path();
  StatusOr<int64_t> app_id = reader.scalar_i64("PRAGMA application_id");
  StatusOr<int64_t> version = app_id.ok() ? reader.scalar_i64("PRAGMA user_version") : app_id.status();
  if (!version.ok()) return version.status();
  if (*app_id != kApplicationId) return not_a_store(p, "an SQLite database of another application");
  if (*version < 0) return damaged_version(p, *version);
  if (*version < 1) return Status(StatusCode::kCorrupt, p + ": tc store without a schema version; record the run again");
  if (*version > kSchemaVersion) {
    return Status(StatusCode::kNewerVersion, p + ": written by tc schema v" + std::to_string(*version) +
                                                 "; this tc reads up to v" + std::to_string(kSchemaVersion) +
                                                 "; upgrade tc");
  }
  // What the store's version declares must be there; what a later version added may not be.
  const int v = static_cast<int>(*version);
  for (const TableDecl* t : schema::all_tables()) {
    if (t->since > v) continue;
    std::set<std::string, std::less<>> have;
    auto q = reader.query("SELECT name FROM pragma_table_info('" + std::string(t->name) + "')");
    while (q.next()) have.emplace(q.text(0));
    if (!q.status().ok()) return q.status();
    if (have.empty()) {
      return Status(StatusCode::kCorrupt,
                    p + ": tc store without its " + std::string(t->name) + " table; record the run again");
    }
    for (const ColumnDecl& c : t->columns) {
      if (c.since > v || have.contains(c.name)) continue;
      return Status(StatusCode::kCorrupt, p + ": tc store v" + std::to_string(v) + " without column " + std::string(t->name) + "." +
                                              std::string(c.name) + "; record the run again");
    }
  }
  reader.impl_->schema_version = static_cast<int>(*version);
  return reader;
}

Query Reader::query(std::string_view sql) const {
  auto q = std::make_unique<Query::Impl>();
  q->path = &impl_->path;
  q->has_wal = impl_->has_wal;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(impl_->db, sql.data(), static_cast<int>(sql.size()), &q->stmt, &tail);
  if (rc != SQLITE_OK) {
    q->status = read_error(impl_->db, rc, impl_->path, impl_->has_wal);
  } else if (!q->stmt) {
    q->status = Status(StatusCode::kInvalidArgument, impl_->path + ": empty query");
  } else if (tail && tail < sql.data() + sql.size()) {
    sqlite3_stmt* more = nullptr;  // only comments and blanks may follow the statement
    rc = sqlite3_prepare_v2(impl_->db, tail, static_cast<int>(sql.data() + sql.size() - tail), &more, nullptr);
    if (rc != SQLITE_OK || more) q->status = Status(StatusCode::kInvalidArgument, impl_->path + ": one SQL statement per query");
    sqlite3_finalize(more);
  }
  q->done = !q->status.ok();
  return Query(std::move(q));
}

StatusOr<int64_t> Reader::scalar_i64(std::string_view sql) const {
  Query q = query(sql);
  if (!q.next()) {
    if (!q.status().ok()) return q.status();
    return Status(StatusCode::kNotFound, impl_->path + ": query returned no rows");
  }
  if (q.columns() < 1 || q.is_null(0)) return Status(StatusCode::kInvalidArgument, impl_->path + ": query returned NULL");
  return q.i64(0);
}

int Reader::schema_version() const { return impl_->schema_version; }

bool Reader::has(const TableDecl& table, std::string_view column) const {
  const ColumnDecl* c = schema::find_column(table, column);
  return c != nullptr && table.since <= impl_->schema_version && c->since <= impl_->schema_version;
}

const std::string& Reader::path() const { return impl_->path; }

}  // namespace tc::store
