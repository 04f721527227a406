// The CPU backend (private): kernel IR -> C++ (codegen_cpp.cpp) -> g++ ->
// shared object in the code cache (../cache/code_cache.h) -> dlopen; device
// memory is host memory (cpu_backend.cpp).
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

// Peak sgemm GFLOP/s (the chosen kernel over the pool) and streaming-copy
// GB/s on every pool thread (ceilings.cpp), cached in the code cache per
// machine key, kernel and thread count; with what they were measured on.
struct Measured {
  double gflops = 0, gbps = 0;
  bool cached = false;
  std::string isa, kernel;  // cpu_isa(), gemm_kernel_name() (gemm.h)
  int threads = 0;          // pool_threads()
};
Measured measure_ceilings();

// The process's CPU backend (registry.cpp registers it as "cpu").
Backend* make_backend(std::string* why);

}  // namespace tc::detail::cpu
