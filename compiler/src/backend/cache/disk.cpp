#include "disk.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../../events.h"
#include "sha256.h"
#include "tc/error.h"

namespace tc::detail::cache {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string octal_mode(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(m & 07777));
  return b;
}

// Where built code lives: TC_CACHE_DIR, else $XDG_CACHE_HOME/tc, else
// ~/.cache/tc (HOME, else the passwd entry). Never a directory every user
// shares, such as /tmp.
std::string cache_dir_path() {
  if (const char* e = std::getenv("TC_CACHE_DIR"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/tc";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tc";
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir && *pw->pw_dir) return std::string(pw->pw_dir) + "/.cache/tc";
  throw Error("tc: no directory for built code: HOME is unset and the user has no home directory; set TC_CACHE_DIR to a directory only you can write");
}

// Creates the cache directory (missing parts with mode 0700), then checks
// that nobody but this user can change what is in it: the directory is owned
// by the user and not writable by group or others, and every directory above
// it is owned by the user or root and not writable by group or others unless
// sticky (like /tmp). Another user who can write there could plant code that
// tc would load. Returns the canonical path; throws tc::Error in one line.
std::string secure_cache_dir() {
  std::string dir = cache_dir_path();
  const std::string what = "tc: the code cache " + dir;
  for (std::size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') {
      std::string part = dir.substr(0, i);
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
        throw Error(what + ": cannot create " + part + ": " + errno_text(errno) + "; set TC_CACHE_DIR to a directory you can write");
    }
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) throw Error(what + ": " + errno_text(errno) + "; set TC_CACHE_DIR to a directory you can write");
  std::string canon = real;
  std::free(real);
  uid_t me = ::geteuid();
  struct stat st;
  if (::lstat(canon.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(what + " is not a directory; set TC_CACHE_DIR to a directory only you can write");
  if (st.st_uid != me)
    throw Error(what + " belongs to uid " + std::to_string(st.st_uid) + ", not to you (uid " + std::to_string(me) +
                "); tc loads built code only from a directory of yours: set TC_CACHE_DIR to one");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw Error(what + " is writable by " + ((st.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " + octal_mode(st.st_mode) +
                "); tc loads built code only from a directory only you can write: chmod go-w " + canon + ", or set TC_CACHE_DIR");
  for (std::string up = canon; up.size() > 1;) {
    up = up.substr(0, std::max<std::size_t>(1, up.rfind('/')));
    if (::lstat(up.c_str(), &st) != 0) throw Error(what + ": cannot check " + up + ": " + errno_text(errno));
    bool sticky = st.st_mode & S_ISVTX;
    if ((st.st_uid != me && st.st_uid != 0) || ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky))
      throw Error(what + " lies under " + up + " (uid " + std::to_string(st.st_uid) + ", mode " + octal_mode(st.st_mode) +
                  "), which another user can change; set TC_CACHE_DIR to a directory only you and root can change");
  }
  return canon;
}

}  // namespace

std::string directory() { return secure_cache_dir(); }

bool read_owned(int fd, std::string& out, std::size_t limit, std::string* why) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return *why = "not a regular file", false;
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) return *why = "not owned by you alone", false;
  if (static_cast<uint64_t>(st.st_size) > limit) return *why = "too large", false;
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return *why = "cannot be read", false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

bool read_owned(const std::string& path, std::string& out, std::size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  std::string why;
  bool ok = read_owned(fd, out, limit, &why);
  ::close(fd);
  return ok;
}

void write_new(const std::string& path, std::string_view text, const std::string& context) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(context + ": cannot create " + path + ": " + errno_text(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(path.c_str());
      throw Error(context + ": cannot write " + path + ": " + errno_text(e));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw Error(context + ": cannot write " + path + ": " + errno_text(errno));
}

void put(const std::string& dir, const std::string& name, std::string_view bytes) {
  std::string tmp = dir + "/.tc-put-" + std::to_string(::getpid()) + "-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) return;
  bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) ::unlink(tmp.c_str());
}

std::string record(const char* kind, const std::string& key, std::string_view bytes) {
  return std::string(kind) + "\nkey " + key + "\nsha256 " + sha256_hex(bytes) + "\n";
}

void warn(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  events::log_warning(message);
}

// One key's build across processes: an exclusive flock() on the key's .lock
// file, held while the entry is checked, built, moved in and loaded. Ranks
// of one job (or any processes sharing the cache) that need the same graph
// at once then build it once: the others wait and load what the first moved
// in. The kernel drops the lock of a process that dies. Without it, a second
// build renamed its object over the first one's between that one's check and
// its load ("changed while it was being loaded"), and the first rank failed.
// A lock that cannot be taken is said once and the build goes on without it.
CacheKeyLock::CacheKeyLock(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  int rc = -1;
  if (fd_ >= 0) {
    while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
  }
  if (rc != 0) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) warn("tc: code cache: cannot lock " + path + " (" + errno_text(errno) + "); building without it");
  }
}

CacheKeyLock::~CacheKeyLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace tc::detail::cache
