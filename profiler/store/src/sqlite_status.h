// Private: turns SQLite result codes into one-line tc::Status messages.
#pragma once

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

#include "tc/store/status.h"

namespace tc::store {

// One line: SQLite messages never carry a newline into a Status.
inline std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

inline std::string sqlite_message(sqlite3* db, int rc) {
  return one_line(db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

// Whether the file system holding path has (almost) no space left.
inline bool disk_nearly_full(const std::string& path) {
  std::string dir = path.substr(0, path.find_last_of('/') + 1);
  struct statvfs fs{};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) != 0) return false;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < (uint64_t{1} << 20);
}

// doing: what was under way, e.g. "writing table ranges".
inline Status sqlite_status(sqlite3* db, int rc, const std::string& path, std::string_view doing) {
  const std::string what = sqlite_message(db, rc);
  const std::string where = path + ": ";
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return {StatusCode::kIoError, where + "disk full while " + std::string(doing) + "; free space and run again"};
    case SQLITE_IOERR: {
      const int err = db ? sqlite3_system_errno(db) : 0;  // often 0: SQLite loses errno on a failed write
      if (err == ENOSPC || err == EDQUOT || disk_nearly_full(path)) {
        return {StatusCode::kIoError, where + "disk full while " + std::string(doing) + "; free space and run again"};
      }
      rlimit limit{};
      if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        return {StatusCode::kIoError, where + "write failed while " + std::string(doing) +
                                          "; files are limited to " + std::to_string(limit.rlim_cur) +
                                          " bytes here (ulimit -f); raise the limit and run again"};
      }
      if (err == EFBIG) {
        return {StatusCode::kIoError, where + "file too large for its file system while " + std::string(doing) +
                                          "; write to another file system"};
      }
      return {StatusCode::kIoError,
              where + "I/O error while " + std::string(doing) + " (" + what + "); check the disk and run again"};
    }
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return {StatusCode::kIoError,
              where + "cannot access the file while " + std::string(doing) + " (" + what + "); check permissions"};
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return {StatusCode::kIoError, where + "locked by another program while " + std::string(doing) + " (" + what +
                                        "); close it and run again"};
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return {StatusCode::kCorrupt, where + "damaged store (" + what + "); record the run again, or try `sqlite3 " +
                                        path + " .recover`"};
    case SQLITE_MISMATCH:
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return {StatusCode::kInvalidArgument, where + std::string(doing) + ": " + what};
    default:
      return {StatusCode::kInternal, where + std::string(doing) + " failed: " + what};
  }
}

}  // namespace tc::store
