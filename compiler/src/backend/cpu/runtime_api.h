// What generated code calls back into (private): the pool that splits its
// loops (pool.h) and tc's matrix product (gemm.h). A loaded object gets the
// table from tc_set_runtime before its first tc_run; the generated preamble
// (codegen_cpp.cpp) declares the same layout again, and `version` guards it.
#pragma once

#include <cstdint>

#include "pool.h"

extern "C" {
// gemm.h's sgemm (ta, tb: 0 or 1).
typedef void (*tc_sgemm_fn)(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                            const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
struct tc_runtime_api {
  int32_t version;  // kRuntimeApiVersion
  int32_t threads;  // the pool's, the caller included
  void (*parallel_for)(int64_t n, int64_t grain, int32_t chunks_per_thread, tc_body_fn body, void* ctx);
  tc_sgemm_fn sgemm;
};
}

namespace tc::detail::cpu {

inline constexpr int32_t kRuntimeApiVersion = 2;

// The process's table. Throws tc::Error where TC_GEMM names a kernel this
// CPU cannot run (gemm.h), before any generated code runs.
const tc_runtime_api* runtime_api();

}  // namespace tc::detail::cpu
