// The CPU backend: host memory, C++ code built by the system compiler, run
// on the host's cores with one thread pool.
#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "../../clock.h"
#include "../../collective.h"
#include "../backend.h"
#include "../cache/code_cache.h"
#include "cpu.h"
#include "gemm.h"
#include "runtime_api.h"

namespace tc::detail::cpu {
namespace {

// Host memory behind large buffers is kept for reuse: a training step frees
// and allocates the same sizes every step, and fresh mappings from malloc
// cost a page fault and a cleared page per 4 KiB (0.1 ms per step for the
// MLP's 2.4 MB arena). Accounting is unaffected: a kept block is not live.
class BlockCache {
 public:
  static constexpr std::size_t kMin = std::size_t{64} << 10;     // smaller blocks: malloc's own bins
  static constexpr std::size_t kLimit = std::size_t{256} << 20;  // bytes kept at most
  void* take(std::size_t n) {
    if (n < kMin) return nullptr;
    std::lock_guard lock(mu_);
    auto it = free_.find(n);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    kept_ -= n;
    return p;
  }
  bool keep(void* p, std::size_t n) {
    if (n < kMin) return false;
    std::lock_guard lock(mu_);
    if (kept_ + n > kLimit) return false;
    free_[n].push_back(p);
    kept_ += n;
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t kept_ = 0;
};

std::size_t block_size(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64; }

class CpuExecutable final : public Executable {
 public:
  explicit CpuExecutable(RunFn fn) : fn_(fn) {}
  int run(void* const* bufs, const RunIds&, const KernelClock* clock) override {
    SingleThreadedBlas one;
    return clock ? fn_(bufs, clock->ticks, clock->now) : fn_(bufs, nullptr, nullptr);
  }

 private:
  RunFn fn_;
};

// The built object's tc_run, its loops given the process's pool and its
// products tc's sgemm (runtime_api.h), its collectives the host's
// (collective.h).
RunFn bind(const cache::HostObject& b) {
  auto fn = reinterpret_cast<RunFn>(::dlsym(b.handle, "tc_run"));
  if (!fn) throw Error("tc: " + b.path + " has no tc_run (source at " + b.source_path + ")");
  using SetRuntime = int (*)(const tc_runtime_api*);
  auto set_runtime = reinterpret_cast<SetRuntime>(::dlsym(b.handle, "tc_set_runtime"));
  if (!set_runtime || set_runtime(runtime_api()) != 0)
    throw Error("tc: " + b.path + " does not take tc's runtime table (source at " + b.source_path + ")");
  using SetHost = int (*)(const tc_host_api*);
  if (auto set_host = reinterpret_cast<SetHost>(::dlsym(b.handle, "tc_set_host")); set_host && set_host(host_api()) != 0)
    throw Error("tc: " + b.path + " does not take tc's collectives (source at " + b.source_path + ")");
  return fn;
}

class CpuBackend final : public HostMemoryBackend {
 public:
  const char* name() const override { return "cpu"; }
  void* alloc(std::size_t bytes) override {
    std::size_t n = block_size(bytes);
    if (void* p = blocks_.take(n)) return p;
    return ::operator new(n, std::align_val_t{64}, std::nothrow);
  }
  void free(void* ptr, std::size_t bytes) override {
    if (!ptr) return;
    std::size_t n = block_size(bytes);
    if (!blocks_.keep(ptr, n)) ::operator delete(ptr, std::align_val_t{64});
  }

  CompiledCode compile(const Program& p, int64_t graph_id) override {
    CompiledCode out;
    return Build(p, graph_id, out).build();
  }
  std::unique_ptr<DeferredBuild> prepare(const Program& p, int64_t graph_id, CompiledCode* found) override {
    auto b = std::make_unique<Build>(p, graph_id, *found);
    cache::HostObject o;
    if (!cache::find_built(b->source, o)) return b;
    loaded(o, *found);
    return nullptr;
  }
  void synchronize() override {}  // run() returns when the host is done
  bool symbolic_sizes() const override { return true; }
  Ceilings ceilings() override {
    Measured m = measure_ceilings();
    return {m.gflops, m.gbps, m.cached, m.isa, m.kernel, m.threads};
  }

 private:
  static void loaded(const cache::HostObject& b, CompiledCode& out) {
    out.code = std::make_unique<CpuExecutable>(bind(b));
    out.source_path = b.source_path;
    out.disk_hit = b.disk_hit;
    out.build_ns = b.disk_hit ? 0 : b.build_ns;
  }
  // The rendered source of one graph, built (and loaded) when asked.
  struct Build final : DeferredBuild {
    Build(const Program& p, int64_t graph_id, CompiledCode& out) : graph_id(graph_id), parts(cache::build_parts(p.kernels.size())) {
      int64_t t0 = now_ns();
      source = emit_cpp(p, "graph " + std::to_string(graph_id), parts);
      codegen_ns = out.codegen_ns = now_ns() - t0;
    }
    CompiledCode build() override {
      CompiledCode out;
      out.codegen_ns = codegen_ns;
      loaded(cache::build_and_load(source, graph_id, parts), out);
      return out;
    }
    int64_t graph_id;
    int parts;
    int64_t codegen_ns = 0;
    std::string source;
  };
  BlockCache blocks_;
};

void runtime_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm(ta != 0, tb != 0, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

const tc_runtime_api* runtime_api() {
  (void)gemm_kernel();  // a TC_GEMM this CPU cannot honour is refused here, before anything runs
  static const tc_runtime_api api = {kRuntimeApiVersion, static_cast<int32_t>(pool_threads()), &pool_parallel_for,
                                     &runtime_sgemm};
  return &api;
}

Backend* make_backend(std::string*) {
  static auto* b = new CpuBackend;  // never destroyed: buffers may outlive static destruction
  return b;
}

}  // namespace tc::detail::cpu
