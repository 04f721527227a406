// The CPU backend (private): kernel IR -> C++ (codegen_cpp.cpp) -> g++ ->
// shared object in the code cache (code_cache.cpp) -> dlopen; device memory
// is host memory (cpu_backend.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../../compile.h"

namespace tc::detail {
class Backend;
}

namespace tc::detail::cpu {

// A whole translation unit exporting
// `extern "C" int tc_run(void* const* bufs, uint64_t* ticks, uint64_t (*now)(void))`
// (bufs: inputs, outputs, then the arena; ticks: nullptr, or 2 per kernel that
// receive its begin and end from now(); returns 0, or 1 for an index out of
// range). With parts > 1 the unit splits its kernels into `parts` groups of
// about equal size, each compiled alone with -DTC_PART=i (tc_run is in part
// 0), so the build can use several cores; without TC_PART it is whole.
std::string emit_cpp(const Program& p, const std::string& graph_name, int parts = 1);

using RunFn = int (*)(void* const*, uint64_t*, uint64_t (*)(void));

struct Built {
  RunFn fn = nullptr;
  std::string source_path;
  bool disk_hit = false;
  int64_t build_ns = 0;
};

// Parts a graph's source is split into for the build: one per core (at most
// 4) for a graph with many kernels, compiled at once; one otherwise.
int build_parts(std::size_t kernels);

// Builds `source` with TC_CXX (default g++) into a shared object in
// TC_CACHE_DIR, or loads the one a previous build left there, and returns its
// tc_run. Throws tc::Error naming the graph, the compiler's exit status and
// where the source and the log are kept when the build fails.
Built build_and_load(const std::string& source, int64_t graph_id, int parts);

// The code cache's directory, checked (see code_cache.cpp); throws tc::Error.
std::string cache_directory();
// Held while one cache key is checked, built and moved in: an exclusive
// flock() on `path` (created 0600, never through a link), so processes that
// need the same key at once build it once. Released on destruction or when
// the process dies. One that cannot be taken is said once; then nothing is
// held.
class CacheKeyLock {
 public:
  explicit CacheKeyLock(const std::string& path);
  ~CacheKeyLock();
  CacheKeyLock(const CacheKeyLock&) = delete;
  CacheKeyLock& operator=(const CacheKeyLock&) = delete;

 private:
  int fd_ = -1;
};
// A hex digest of everything built code depends on besides its source (the
// compiler, its flags, the CPU): the machine's key for cached calibrations.
std::string machine_key();

// Peak sgemm GFLOP/s and streaming-copy GB/s on every core (ceilings.cpp),
// cached in the code cache per machine key.
struct Measured {
  double gflops = 0, gbps = 0;
  bool cached = false;
};
Measured measure_ceilings();

// The process's CPU backend (registry.cpp registers it as "cpu").
Backend* make_backend(std::string* why);

}  // namespace tc::detail::cpu
