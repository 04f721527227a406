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

// A whole translation unit exporting `extern "C" int tc_run(void* const* bufs)`
// (bufs: inputs, outputs, then the arena; returns 0, or 1 for an index out of
// range). With parts > 1 the unit splits its kernels into `parts` groups of
// about equal size, each compiled alone with -DTC_PART=i (tc_run is in part
// 0), so the build can use several cores; without TC_PART it is whole.
std::string emit_cpp(const Program& p, const std::string& graph_name, int parts = 1);

using RunFn = int (*)(void* const*);

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

// The process's CPU backend (registry.cpp registers it as "cpu").
Backend* make_backend(std::string* why);

}  // namespace tc::detail::cpu
