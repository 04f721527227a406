#include "tc/store/output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tc::store {

namespace {

bool lexists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
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

std::string install(const std::string& temp, const std::string& output) {
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (::unlink((output + suffix).c_str()) != 0 && errno != ENOENT) {
      return "cannot remove " + output + suffix + " (" + std::strerror(errno) + ")";
    }
  }
  ::unlink((temp + "-shm").c_str());  // rebuilt by the next reader
  if (lexists(temp + "-wal") && ::rename((temp + "-wal").c_str(), (output + "-wal").c_str()) != 0) {
    return "cannot move " + temp + "-wal to " + output + "-wal (" + std::strerror(errno) + ")";
  }
  if (::rename(temp.c_str(), output.c_str()) != 0) return "cannot move " + temp + " to " + output + " (" + std::strerror(errno) + ")";
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
