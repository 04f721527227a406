// tc/import/frameworks.h: the frameworks whose logs tc reads, one descriptor
// each, in one table. tc-profile makes each one's log directory, sets its
// environment in the program and lists it in --help; the collector imports
// each directory at the end of the run, in the table's order.
//
//   for (const tc::import::Framework& f : tc::import::frameworks())
//     if (auto s = f.importer(dir_of(f), target, {}); !s.ok()) return s.status();
//
// A new framework is one row of the table (src/frameworks.cpp) plus its
// importer file (src/NAME.cpp, declared in tc/import/import.h); a hook-written
// log also needs the hook's part in profiler/capture/python/sitecustomize.py,
// switched on by `variable`.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tc/import/import.h"

namespace tc::import {

using ImportFn = StatusOr<ImportSummary> (*)(const std::string& dir, ImportTarget& target, const ImportLimits& limits);

struct Framework {
  const char* name;   // the framework column and ImportSummary::framework: "torch.compile", "jax", "torch_xla"
  const char* title;  // for people: "torch.compile", "JAX", "PyTorch/XLA"
  const char* log;    // its log, for people: "torch.compile's log", "the JAX log"
  // The variable that names the log directory in the program: the
  // framework's own (TORCH_TRACE), or the switch of the Python hook's part
  // for it (TC_JAX_LOG_DIR: that part writes only when it is set).
  const char* variable;
  const char* subdir;  // the directory tc-profile makes for it in its private one
  // A directory the user set in `variable` is used as it is and kept (only
  // the logs written since the run started are read). Otherwise tc-profile
  // sets its own, or unsets the variable when it collects none.
  bool user_dir;
  bool hook;  // written by tc's Python hook: collected only with the hook on
  // The framework's own debug output into the directory: "NAME=VALUE" set in
  // the program ("{dir}" in VALUE is the directory), unless the user set any
  // variable of `debug_unless`.
  std::span<const char* const> debug_env;
  std::span<const char* const> debug_unless;
  ImportFn importer;
  const char* imports;  // what is imported, for tc-profile --help
  const char* docs;     // its section of the docs: "docs/frameworks.md#jax"
};

// torch.compile, JAX, PyTorch/XLA: the order the collector imports them in.
std::span<const Framework> frameworks();

}  // namespace tc::import
