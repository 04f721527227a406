// The backend layer (private): where a planned Program becomes code that runs
// on a device, and where device memory comes from. In the spirit of ggml's
// backend table: a small interface, one folder per backend, one registration.
//
//   compiler.cpp (driver) ── Program ──> Backend::compile ──> Executable code
//                         ── buffers ──> Executable::run(bufs, {graph, execution})
//   Buffer (buffer.h)     ── alloc/free/copies ──> Backend memory
//
// Adding a backend: a folder compiler/src/backend/NAME/ with a class that
// implements Backend, and one row in the table of registry.cpp. Nothing else
// in the compiler names a backend. A C-like language renders the kernels'
// expressions through c_render.h with a Dialect of its own; built code goes
// to the code cache through cache/ (disk.h, code_cache.h for host objects).
//
// Contract for implementations:
// - compile() turns a verified, planned Program into loaded code: render it in
//   the backend's dialect, build it (or take it from the backend's cache),
//   load it. It throws tc::Error with a one-line reason (and where the
//   generated source and the build log are kept) when that fails.
// - run() executes the whole program once with bound buffers (timing each
//   kernel when given a KernelClock): inputs, then
//   outputs, then the arena (nullptr when the arena is empty), in the order of
//   Program::bufs' slots. It may return before the device finished
//   (synchronize() waits). It returns 0, or 1 when a gather/embedding index
//   was out of range.
// - Memory: alloc() returns nullptr when the device has no room (the runtime
//   turns that into tc::OutOfMemoryError with its own accounting); copies are
//   synchronous. host_memory() true means device pointers are host pointers
//   that the eager executor may read and write directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace tc::detail {

struct Program;

// What run() passes along, so a device profiler can correlate what the device
// did with the execution that asked for it (both ids are unique in the run).
struct RunIds {
  int64_t graph_id = 0;
  int64_t execution_id = 0;
};

// Per-kernel timing of one run: ticks[2k] and ticks[2k+1] receive kernel k's
// begin and end, read with `now` (the recording clock). A backend whose
// device runs asynchronously fills them when synchronize() returns.
struct KernelClock {
  uint64_t* ticks;
  uint64_t (*now)();
};

// Loaded code of one compiled graph. Owned by the compile cache; lives as
// long as the process may run the graph again.
class Executable {
 public:
  virtual ~Executable() = default;
  // clock == nullptr: untimed (recording off costs one branch per run).
  virtual int run(void* const* bufs, const RunIds& ids, const KernelClock* clock) = 0;
};

// How compile() got its code, for the compilations table.
struct CompiledCode {
  std::unique_ptr<Executable> code;
  std::string source_path;  // the generated source, kept for the user
  bool disk_hit = false;    // loaded from the backend's on-disk cache
  int64_t codegen_ns = 0;   // rendering the Program as source
  int64_t build_ns = 0;     // building it (0 on a disk hit)
};

// A build left for later (tiered builds, TC_TIERED in compiler.cpp): build()
// builds and loads what compile() would have returned. It may run on another
// thread while the one that made it goes on running graphs; it touches
// nothing but the code cache and its own state.
class DeferredBuild {
 public:
  virtual ~DeferredBuild() = default;
  virtual CompiledCode build() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The name TC_DEVICE selects, e.g. "cpu".
  virtual const char* name() const = 0;

  // ---- device memory
  virtual bool host_memory() const = 0;
  virtual void* alloc(std::size_t bytes) = 0;  // 64-byte aligned; nullptr: no room
  virtual void free(void* ptr, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  virtual void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) = 0;

  // ---- code
  // `graph_id` names the graph in messages and generated code.
  virtual CompiledCode compile(const Program& program, int64_t graph_id) = 0;
  // Tiered builds: renders `program` and, when its code is in the backend's
  // cache already, loads it into *found (as compile() would, a disk hit) and
  // returns nullptr; else returns the build, to run later. The default (a
  // backend without it) returns nullptr and leaves *found empty: the caller
  // then calls compile().
  virtual std::unique_ptr<DeferredBuild> prepare(const Program& program, int64_t graph_id, CompiledCode* found) {
    (void)program, (void)graph_id, (void)found;
    return nullptr;
  }
  // Waits until everything run() started has finished.
  virtual void synchronize() = 0;
  // Whether compile() takes dynamic programs (Program::sym: sizes and arena
  // offsets read from the pointer table's last slot, compile.h).
  virtual bool symbolic_sizes() const { return false; }
  // Why compile() cannot take dynamic program `p` after all ("" when it
  // can): the graph then stays static, and the reason goes to the debug log.
  virtual std::string symbolic_unsupported(const Program& p) const {
    (void)p;
    return "";
  }

  // ---- the roofline
  // What this device reaches: peak single-precision GFLOP/s of its
  // matrix-product path and memory bandwidth in GB/s, measured by a short
  // calibration once per machine and cached (cached = true) like built code;
  // isa, kernel (the product kernel) and threads: what it was measured on
  // ("" / 0 where the backend does not say).
  struct Ceilings {
    double gflops = 0, gbps = 0;
    bool cached = false;
    std::string isa, kernel;
    int threads = 0;
  };
  virtual Ceilings ceilings() = 0;
};

// A backend whose device memory is host memory (cpu, cuda-emulated).
class HostMemoryBackend : public Backend {
 public:
  bool host_memory() const final { return true; }
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) final {
    if (bytes) std::memcpy(host_dst, device_src, bytes);
  }
  void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) final {
    if (bytes) std::memcpy(device_dst, host_src, bytes);
  }
};

// The backend of this process, chosen once at first use from TC_DEVICE
// ("cpu" when unset). An unknown or unavailable name throws tc::Error naming
// the known backends.
Backend& backend();
// The backend registered under `name`, or nullptr when there is none or it
// cannot run here; `why` then says why in one line. For tests that run one
// table of cases on every backend.
Backend* find_backend(std::string_view name, std::string* why = nullptr);
// Test-only: makes `b` the process's backend until the returned guard goes
// out of scope. Buffers remember the backend that allocated them.
class ScopedBackend {
 public:
  explicit ScopedBackend(Backend& b);
  ~ScopedBackend();
  ScopedBackend(const ScopedBackend&) = delete;
  ScopedBackend& operator=(const ScopedBackend&) = delete;

 private:
  Backend* saved_;
};

// The device's capacity as its backend found it when it opened the device
// (the CUDA backend: cuMemGetInfo's total): the allocator's capacity from
// then on, for the memory plans, the out-of-memory check and its message,
// unless TC_DEVICE_MEMORY_LIMIT or tc::set_device_memory_limit() set one.
// Defined in memory.cpp.
void set_device_capacity(int64_t bytes);

}  // namespace tc::detail
