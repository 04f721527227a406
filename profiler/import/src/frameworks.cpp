// The frameworks table (tc/import/frameworks.h).
#include "tc/import/frameworks.h"

#include <array>

namespace tc::import {

namespace {

constexpr std::array<const char*, 2> kXlaDebugEnv = {"PT_XLA_DEBUG_LEVEL=2", "PT_XLA_DEBUG_FILE={dir}/pt_xla_debug.txt"};
constexpr std::array<const char*, 3> kXlaDebugUnless = {"PT_XLA_DEBUG_LEVEL", "PT_XLA_DEBUG_FILE", "PT_XLA_DEBUG"};

const std::array<Framework, 3> kFrameworks = {{
    {.name = "torch.compile",
     .title = "torch.compile",
     .log = "torch.compile's log",
     .variable = "TORCH_TRACE",
     .subdir = "torch_trace",
     .user_dir = true,
     .hook = false,
     .debug_env = {},
     .debug_unless = {},
     .importer = import_torch_trace,
     .imports = "compilations, shape changes and graph breaks from its structured trace",
     .docs = "docs/frameworks.md#what-is-imported-from-the-trace"},
    {.name = "jax",
     .title = "JAX",
     .log = "the JAX log",
     .variable = "TC_JAX_LOG_DIR",
     .subdir = "jax",
     .user_dir = false,
     .hook = true,
     .debug_env = {},
     .debug_unless = {},
     .importer = import_jax_log,
     .imports = "compile stages, cache misses, jitted calls and forced evaluations",
     .docs = "docs/frameworks.md#jax"},
    {.name = "torch_xla",
     .title = "PyTorch/XLA",
     .log = "the PyTorch/XLA log",
     .variable = "TC_XLA_LOG_DIR",
     .subdir = "xla",
     .user_dir = false,
     .hook = true,
     .debug_env = kXlaDebugEnv,
     .debug_unless = kXlaDebugUnless,
     .importer = import_xla_log,
     .imports = "syncs, compilations with their causes (and PyTorch/XLA's debug output), shape changes and forced evaluations",
     .docs = "docs/frameworks.md#pytorchxla"},
}};

}  // namespace

std::span<const Framework> frameworks() { return kFrameworks; }

}  // namespace tc::import
