// The code cache of host objects (code_cache.h). Every build happens in a
// private directory and moves into place by rename, and an object is loaded
// only when its SHA-256 matches the record written when it was built and it
// says it was built for the key it was looked up by (disk.h). Anything else
// is rebuilt, with a warning.
#include "code_cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "../../clock.h"
#include "../../hash.h"
#include "disk.h"
#include "tc/error.h"

#ifndef TC_BLAS_LIBRARY_PATH
#define TC_BLAS_LIBRARY_PATH "-lopenblas"
#endif

namespace tc::detail::cache {
namespace {

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
// TC_GEMM=avx2 stands for a CPU with AVX2 and FMA but no AVX-512 (gemm.h):
// the generated code is then built without AVX-512 too, so an AVX-512
// machine runs the whole AVX2 path, not only its products.
const std::string& build_flags() {
  static const std::string flags = [] {
    std::string f = "-std=c++17 -O2 -march=native -ffp-contract=off -fno-math-errno -fPIC -shared";
    const char* gemm = std::getenv("TC_GEMM");
    if (gemm && std::string(gemm) == "avx2") f += " -mno-avx512f";
    return f;
  }();
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

// The first line of a host object's record.
constexpr const char* kRecordKind = "tc code cache entry 1";

// Loads tc_<key>.so if it is what tc built: a regular file of this user's,
// whose SHA-256 matches the one recorded beside it at build time, and whose
// code says it was built for `key`. nullptr with *why when it is absent (why
// empty) or fails a check.
void* load_verified(const std::string& so, const std::string& meta, const std::string& key, std::string* why) {
  why->clear();
  int fd = ::open(so.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) *why = std::string("cannot be opened (") + std::strerror(errno) + ")";
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
  if (ok && record != cache::record(kRecordKind, key, bytes)) ok = false, *why = "does not match its build record (digest or key)";
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
      throw Error(context + ": cannot write to the code cache " + cache + ": " + std::strerror(errno) +
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

}  // namespace

std::string machine_key() { return hex(hash_text(toolchain_key())); }

namespace {

// The cache key of `source`: it and everything it is built with.
std::string key_of(const std::string& source) {
  Hasher h;
  h.add(hash_text(source));
  h.add(hash_text(toolchain_key()));
  return hex(h.h) + hex(hash_text(source));
}

}  // namespace

bool find_built(const std::string& source, HostObject& out) {
  std::string dir = directory();
  const std::string key = key_of(source), base = dir + "/tc_" + key;
  std::string why;
  void* handle = load_verified(base + ".so", base + ".meta", key, &why);
  if (!handle) return false;
  out.handle = handle;
  out.path = base + ".so";
  out.source_path = base + ".cpp";
  out.disk_hit = true;
  out.build_ns = 0;
  return true;
}

HostObject build_and_load(const std::string& source, int64_t graph_id, int parts) {
  const std::string context = "tc: building graph " + std::to_string(graph_id);
  std::string dir = directory();
  std::string key = key_of(source);
  const std::string base = "tc_" + key;
  HostObject b;
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
                  (kept ? b.source_path : std::string("(nowhere: ") + std::strerror(errno) + ")") + ", the compiler's output at " +
                  (log_kept ? log : std::string("(nowhere)")) + ":\n" + first);
    }
    std::string bytes, rwhy;
    int fd = ::open(tmp.file("out.so").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    bool read_ok = fd >= 0 && read_owned(fd, bytes, std::size_t{1} << 30, &rwhy);
    if (fd >= 0) ::close(fd);
    if (!read_ok) throw Error(context + ": the built object cannot be read back (" + rwhy + ")");
    write_new(tmp.file("out.meta"), record(kRecordKind, key, bytes), context);
    // Object first, then its record: a reader in between sees a mismatch and rebuilds.
    if (std::rename(tmp.file("out.so").c_str(), so.c_str()) != 0 || std::rename(tmp.file("out.meta").c_str(), meta.c_str()) != 0)
      throw Error(context + ": cannot move the built object into the code cache " + dir + ": " + std::strerror(errno));
    handle = load_verified(so, meta, key, &why);
    if (!handle) throw Error(context + ": the object just built in " + dir + " does not load: " + why);
  }
  b.handle = handle;
  b.path = so;
  return b;
}

}  // namespace tc::detail::cache
