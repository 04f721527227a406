#include "tc/store/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace tc::store {

namespace {

bool lexists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

// rename() that fails with EEXIST rather than replace `to`. Where the file
// system has no renameat2 flags (EINVAL), a hard link does the same.
int rename_noreplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (::link(from.c_str(), to.c_str()) != 0) return -1;
  ::unlink(from.c_str());
  return 0;
}

int move(const std::string& from, const std::string& to, bool replace) {
  return replace ? ::rename(from.c_str(), to.c_str()) : rename_noreplace(from, to);
}

std::string taken(const std::string& output) {
  return output + " was written by another process while this one ran, and is not replaced without --force";
}

}  // namespace

std::string temp_beside(const std::string& output) {
  std::filesystem::path p(output);
  std::string dir = p.parent_path().string();
  std::string base = (dir.empty() ? "" : dir + "/") + "." + p.filename().string() + ".tc-tmp-" + std::to_string(::getpid());
  for (int n = 0;; ++n) {
    std::string candidate = n == 0 ? base : base + "-" + std::to_string(n);
    if (!lexists(candidate) && !lexists(candidate + "-wal")) return candidate;
  }
}

std::string install(const std::string& temp, const std::string& output, bool replace) {
  if (!replace && lexists(output)) return taken(output);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (::unlink((output + suffix).c_str()) != 0 && errno != ENOENT) {
      return "cannot remove " + output + suffix + " (" + std::strerror(errno) + ")";
    }
  }
  ::unlink((temp + "-shm").c_str());  // rebuilt by the next reader
  const bool wal = lexists(temp + "-wal");
  if (wal && move(temp + "-wal", output + "-wal", replace) != 0) {
    if (errno == EEXIST) return taken(output);
    return "cannot move " + temp + "-wal to " + output + "-wal (" + std::strerror(errno) + ")";
  }
  if (move(temp, output, replace) != 0) {
    const int err = errno;
    if (wal) (void)::rename((output + "-wal").c_str(), (temp + "-wal").c_str());  // back with its store
    if (err == EEXIST) return taken(output);
    return "cannot move " + temp + " to " + output + " (" + std::strerror(err) + ")";
  }
  return "";
}

void remove_store_files(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal", "-reserve"}) ::unlink((path + suffix).c_str());
}

std::string not_a_regular_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

}  // namespace tc::store
