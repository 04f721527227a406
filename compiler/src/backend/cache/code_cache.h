// The code cache of host objects: generated C++ built by the system compiler
// (TC_CXX, default g++) into a shared object in the cache directory (disk.h)
// and loaded with dlopen, for the cpu backend and cuda-emulated. A second
// process (or run) with the same source, compiler and CPU loads the object
// and builds nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tc::detail::cache {

struct HostObject {
  void* handle = nullptr;   // dlopen()ed and never closed
  std::string path;         // the shared object
  std::string source_path;  // the source, kept beside it
  bool disk_hit = false;
  int64_t build_ns = 0;
};

// Parts a graph's source is split into for the build: one per core (at most
// 4) for a graph with many kernels, compiled at once; one otherwise.
int build_parts(std::size_t kernels);

// Builds `source` (which must define `extern "C" const char tc_built_for[] =
// TC_KEY;` under #ifdef TC_KEY) into a shared object, or loads the one a
// previous build left, checked: its digest matches its record and it says it
// was built for this key. With parts > 1 the source is compiled `parts` times
// with -DTC_PART=i and linked. Throws tc::Error naming the graph, the
// compiler's exit status and where the source and the log are kept when the
// build fails.
HostObject build_and_load(const std::string& source, int64_t graph_id, int parts);

// The object a previous build of `source` left, loaded when it passes
// build_and_load's checks; false, without building or waiting for another
// process's build, when there is none (or it fails a check: build_and_load
// then says so and rebuilds it).
bool find_built(const std::string& source, HostObject& out);

// A hex digest of everything built code depends on besides its source (the
// compiler, its flags, the CPU): the machine's key for cached calibrations.
std::string machine_key();

}  // namespace tc::detail::cache
