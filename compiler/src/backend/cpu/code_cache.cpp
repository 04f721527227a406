// The CPU backend's code cache: builds generated C++ with the system compiler
// into a shared object under TC_CACHE_DIR and loads it with dlopen. A second
// process (or run) with the same source, compiler and CPU loads the object
// and builds nothing.
//
// Loading code means running it, so the cache trusts nothing it finds: the
// directory must be this user's alone, every build happens in a private
// directory and moves into place by rename (no file is ever opened through a
// link or written over), and an object is loaded only when its SHA-256
// matches the record written when it was built and it says it was built for
// the key it was looked up by. Anything else is rebuilt, with a warning.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "../../collective.h"
#include "../../events.h"
#include "../../random.h"
#include "cpu.h"
#include "runtime_api.h"
#include "sha256.h"
#include "tc/error.h"

#ifndef TC_BLAS_LIBRARY_PATH
#define TC_BLAS_LIBRARY_PATH "-lopenblas"
#endif

namespace tc::detail::cpu {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

struct Hasher {
  uint64_t h = 0x6a09e667f3bcc908ULL;
  void add(uint64_t v) { h = mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))); }
};

uint64_t hash_text(const std::string& s) {
  Hasher h;
  for (std::size_t i = 0; i < s.size(); i += 8) {
    uint64_t v = 0;
    std::memcpy(&v, s.data() + i, std::min<std::size_t>(8, s.size() - i));
    h.add(v);
  }
  h.add(s.size());
  return h.h;
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    ::pclose(f);
  }
  return out;
}

// The C++ compiler that builds generated code: TC_CXX (a command; default g++).
std::string cxx() {
  const char* e = std::getenv("TC_CXX");
  return e && *e ? std::string(e) : std::string("g++");
}

// The flags and everything else the built code depends on besides its source.
const std::string& build_flags() {
  static const std::string flags =
      "-std=c++17 -O2 -march=native -ffp-contract=off -fno-math-errno -fPIC -shared";
  return flags;
}

const std::string& toolchain_key() {
  static const std::string key = [] {
    std::string k = build_flags() + "|" + run_capture(cxx() + " -dumpfullversion 2>/dev/null") + "|" TC_BLAS_LIBRARY_PATH;
    // -march=native: the code is only valid on this CPU model.
    std::ifstream cpu("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpu, line))
      if (line.rfind("flags", 0) == 0 || line.rfind("model name", 0) == 0) k += line;
      else if (line.empty()) break;
    return k;
  }();
  return key;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

int build_parts(std::size_t kernels) {
  if (kernels < 16) return 1;
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::clamp<long>(cores, 1, 4));
}

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

// Reads a file this user owns and only this user can write, through `fd`.
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

// Writes a new file (never through a link, never over an existing file).
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

// The record of a built object: the key it was built for and its digest.
std::string meta_text(const std::string& key, const std::string& digest) {
  return "tc code cache entry 1\nkey " + key + "\nsha256 " + digest + "\n";
}

// Loads tc_<key>.so if it is what tc built: a regular file of this user's,
// whose SHA-256 matches the one recorded beside it at build time, and whose
// code says it was built for `key`. nullptr with *why when it is absent (why
// empty) or fails a check.
void* load_verified(const std::string& so, const std::string& meta, const std::string& key, std::string* why) {
  why->clear();
  int fd = ::open(so.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) *why = "cannot be opened (" + errno_text(errno) + ")";
    return nullptr;
  }
  std::string bytes, record;
  bool ok = read_owned(fd, bytes, std::size_t{1} << 30, why);
  if (ok) {
    int mfd = ::open(meta.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (mfd < 0) ok = false, *why = "has no build record";
    else {
      std::string mwhy;
      ok = read_owned(mfd, record, 4096, &mwhy);
      if (!ok) *why = "has a build record that is " + mwhy;
      ::close(mfd);
    }
  }
  if (ok && record != meta_text(key, sha256_hex(bytes))) ok = false, *why = "does not match its build record (digest or key)";
  void* handle = nullptr;
  if (ok) {
    // dlopen by path (a /proc/self/fd name would be reused by the next
    // graph, and the loader matches libraries by name first); only this user
    // can change the directory, and the loaded file must still be the one
    // whose bytes were checked.
    struct stat checked, now;
    handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) *why = std::string("cannot be loaded (") + ::dlerror() + ")";
    else if (::fstat(fd, &checked) != 0 || ::stat(so.c_str(), &now) != 0 || checked.st_ino != now.st_ino ||
             checked.st_dev != now.st_dev)
      ::dlclose(handle), handle = nullptr, *why = "changed while it was being loaded";
  }
  ::close(fd);
  if (handle) {
    const char* built_for = static_cast<const char*>(::dlsym(handle, "tc_built_for"));
    if (!built_for || key != built_for) {
      ::dlclose(handle);
      handle = nullptr;
      *why = "was built for another graph";
    }
  }
  if (!why->empty()) *why = so + " " + *why;
  return handle;
}

// Removes what builds of processes that no longer run left behind
// (tc-build-<pid>-* directories of a killed build).
void remove_stale_builds(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("tc-build-", 0) != 0) continue;
    long pid = std::strtol(name.c_str() + 9, nullptr, 10);
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::string sub = dir + "/" + name;
    struct stat st;
    if (::lstat(sub.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (DIR* s = ::opendir(sub.c_str())) {
      while (dirent* f = ::readdir(s))
        if (std::strcmp(f->d_name, ".") && std::strcmp(f->d_name, "..")) ::unlinkat(::dirfd(s), f->d_name, 0);
      ::closedir(s);
    }
    ::rmdir(sub.c_str());
  }
  ::closedir(d);
}

// A private directory for one build, removed with everything in it.
class BuildDir {
 public:
  BuildDir(const std::string& cache, const std::string& context) {
    std::string t = cache + "/tc-build-" + std::to_string(::getpid()) + "-XXXXXX";
    if (!::mkdtemp(t.data()))
      throw Error(context + ": cannot write to the code cache " + cache + ": " + errno_text(errno) +
                  "; set TC_CACHE_DIR to a directory you can write");
    path_ = t;
  }
  ~BuildDir() {
    if (DIR* s = ::opendir(path_.c_str())) {
      while (dirent* f = ::readdir(s))
        if (std::strcmp(f->d_name, ".") && std::strcmp(f->d_name, "..")) ::unlinkat(::dirfd(s), f->d_name, 0);
      ::closedir(s);
    }
    ::rmdir(path_.c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void warn(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  events::log_warning(message);
}

}  // namespace

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

std::string cache_directory() { return secure_cache_dir(); }
std::string machine_key() { return hex(hash_text(toolchain_key())); }

Built build_and_load(const std::string& source, int64_t graph_id, int parts) {
  const std::string context = "tc: building graph " + std::to_string(graph_id);
  std::string dir = secure_cache_dir();
  Hasher h;
  h.add(hash_text(source));
  h.add(hash_text(toolchain_key()));
  std::string key = hex(h.h) + hex(hash_text(source));
  const std::string base = "tc_" + key;
  Built b;
  b.source_path = dir + "/" + base + ".cpp";
  const std::string so = dir + "/" + base + ".so", meta = dir + "/" + base + ".meta", log = dir + "/" + base + ".log";
  std::string why;
  void* handle = load_verified(so, meta, key, &why);
  // Not there (or not whole): looked at again under the key's lock, where
  // another process's build of it has finished (CacheKeyLock).
  std::optional<CacheKeyLock> lock;
  if (!handle) {
    lock.emplace(dir + "/" + base + ".lock");
    handle = load_verified(so, meta, key, &why);
  }
  b.disk_hit = handle != nullptr;
  if (!handle) {
    if (!why.empty()) warn("tc: code cache: " + why + "; rebuilding it");
    remove_stale_builds(dir);
    int64_t t0 = now_ns();
    BuildDir tmp(dir, context);
    // Everything is built inside the private directory under relative names
    // (the object is then the same whichever process built it), and moved
    // into the cache only when complete.
    const std::string src = base + ".cpp";
    write_new(tmp.file(src), source, context);
    const std::string key_flag = quote("-DTC_KEY=\"" + key + "\"");
    std::string cmd = "cd " + quote(tmp.path()) + " && { ";
    if (parts <= 1) {
      cmd += cxx() + " " + build_flags() + " " + key_flag + " -o out.so " + src + " " + quote(TC_BLAS_LIBRARY_PATH) + " > build.log 2>&1; }";
    } else {
      // Each part compiles in the background; the shared object links them
      // once all succeeded. Their output ends up in the one log.
      std::string objs, logs, wait_all = "s=0;";
      for (int i = 0; i < parts; ++i) {
        std::string obj = "part" + std::to_string(i) + ".o", plog = "part" + std::to_string(i) + ".log";
        cmd += cxx() + " " + build_flags() + " " + key_flag + " -DTC_PART=" + std::to_string(i) + " -c -o " + obj + " " + src + " > " +
               plog + " 2>&1 & p" + std::to_string(i) + "=$!; ";
        wait_all += " wait $p" + std::to_string(i) + " || s=1;";
        objs += " " + obj;
        logs += " " + plog;
      }
      cmd += wait_all + " cat" + logs + " > build.log 2>/dev/null; if [ $s = 0 ]; then " + cxx() + " " + build_flags() + " -o out.so" +
             objs + " " + quote(TC_BLAS_LIBRARY_PATH) + " >> build.log 2>&1; s=$?; fi; exit $s; }";
    }
    int rc = std::system(cmd.c_str());
    b.build_ns = now_ns() - t0;
    // The source and the log are kept for the user, built or not.
    bool kept = std::rename(tmp.file(src).c_str(), b.source_path.c_str()) == 0;
    std::string first, line;
    {
      std::ifstream f(tmp.file("build.log"));
      for (int i = 0; i < 20 && std::getline(f, line); ++i) first += line + "\n";
    }
    bool log_kept = std::rename(tmp.file("build.log").c_str(), log.c_str()) == 0;
    if (rc != 0) {
      int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : rc;
      throw Error(context + " failed (" + cxx() + " exit status " + std::to_string(status) + "); the generated source is kept at " +
                  (kept ? b.source_path : std::string("(nowhere: ") + errno_text(errno) + ")") + ", the compiler's output at " +
                  (log_kept ? log : std::string("(nowhere)")) + ":\n" + first);
    }
    std::string bytes, rwhy;
    int fd = ::open(tmp.file("out.so").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    bool read_ok = fd >= 0 && read_owned(fd, bytes, std::size_t{1} << 30, &rwhy);
    if (fd >= 0) ::close(fd);
    if (!read_ok) throw Error(context + ": the built object cannot be read back (" + rwhy + ")");
    write_new(tmp.file("out.meta"), meta_text(key, sha256_hex(bytes)), context);
    // Object first, then its record: a reader in between sees a mismatch and rebuilds.
    if (std::rename(tmp.file("out.so").c_str(), so.c_str()) != 0 || std::rename(tmp.file("out.meta").c_str(), meta.c_str()) != 0)
      throw Error(context + ": cannot move the built object into the code cache " + dir + ": " + errno_text(errno));
    handle = load_verified(so, meta, key, &why);
    if (!handle) throw Error(context + ": the object just built in " + dir + " does not load: " + why);
  }
  b.fn = reinterpret_cast<RunFn>(::dlsym(handle, "tc_run"));
  if (!b.fn) throw Error("tc: " + so + " has no tc_run (source at " + b.source_path + ")");
  // Its loops run on the process's pool, its products on tc's sgemm (runtime_api.h).
  using SetRuntime = int (*)(const tc_runtime_api*);
  auto set_runtime = reinterpret_cast<SetRuntime>(::dlsym(handle, "tc_set_runtime"));
  if (!set_runtime || set_runtime(runtime_api()) != 0)
    throw Error("tc: " + so + " does not take tc's runtime table (source at " + b.source_path + ")");
  // A graph with collectives calls back into the runtime (collective.h).
  using SetHost = int (*)(const tc_host_api*);
  if (auto set_host = reinterpret_cast<SetHost>(::dlsym(handle, "tc_set_host")); set_host && set_host(host_api()) != 0)
    throw Error("tc: " + so + " does not take tc's collectives (source at " + b.source_path + ")");
  return b;
}
}  // namespace tc::detail::cpu
