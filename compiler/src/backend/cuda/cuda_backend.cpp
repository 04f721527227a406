// TC_DEVICE=cuda: the driver API through dlopen (api.h), NVRTC to a cubin
// for the device's architecture (cached in TC_CACHE_DIR), cuBLAS for the
// products, a caching device allocator with cuMemGetInfo's capacity.
//
// NOT VERIFIED ON A GPU: this file was written on a machine without one (no
// driver). What runs here is everything up to the driver: the emitter, NVRTC,
// ptxas (tests/cuda) and the same plan on the CPU (cuda-emulated).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "../../clock.h"
#include "../backend.h"
#include "../cache/disk.h"
#include "../cache/sha256.h"
#include "api.h"
#include "cuda.h"

namespace tc::detail::cuda {
namespace {

using api::CUdeviceptr;
using api::CUresult;

void check(CUresult r, const char* call) {
  if (r != api::CUDA_SUCCESS) throw Error("tc: cuda: " + api::driver_error(call, r));
}

// The process's device 0: context, stream, cuBLAS handle, architecture.
struct Device {
  const api::Driver* d = nullptr;
  const api::Cublas* blas = nullptr;
  api::CUdevice dev = 0;
  api::CUcontext ctx = nullptr;
  api::CUstream stream = nullptr;
  api::cublasHandle_t handle = nullptr;
  int sm = 0;  // e.g. 90
  std::string name;
  void make_current() const { d->cuCtxSetCurrent(ctx); }
};

// Device memory kept for reuse, by rounded size: a training step frees and
// allocates the same sizes every step, and cuMemAlloc synchronizes.
class CachingAllocator {
 public:
  explicit CachingAllocator(const Device& dev) : dev_(dev) {}
  static std::size_t rounded(std::size_t n) {
    n = std::max<std::size_t>(n, 1);
    const std::size_t q = n < (std::size_t{1} << 20) ? 512 : std::size_t{2} << 20;
    return (n + q - 1) / q * q;
  }
  void* alloc(std::size_t bytes) {
    const std::size_t n = rounded(bytes);
    std::lock_guard lock(mu_);
    auto it = free_.find(n);
    if (it != free_.end() && !it->second.empty()) {
      CUdeviceptr p = it->second.back();
      it->second.pop_back();
      kept_ -= n;
      return reinterpret_cast<void*>(p);
    }
    dev_.make_current();
    CUdeviceptr p = 0;
    CUresult r = dev_.d->cuMemAlloc(&p, n);
    if (r == api::CUDA_ERROR_OUT_OF_MEMORY && kept_ > 0) {
      release_locked();
      r = dev_.d->cuMemAlloc(&p, n);
    }
    if (r != api::CUDA_SUCCESS) return nullptr;  // the runtime reports out-of-memory with its accounting
    return reinterpret_cast<void*>(p);
  }
  void free(void* ptr, std::size_t bytes) {
    if (!ptr) return;
    std::lock_guard lock(mu_);
    const std::size_t n = rounded(bytes);
    free_[n].push_back(reinterpret_cast<CUdeviceptr>(ptr));
    kept_ += n;
  }

 private:
  void release_locked() {
    dev_.d->cuCtxSynchronize();
    for (auto& [n, v] : free_)
      for (CUdeviceptr p : v) dev_.d->cuMemFree(p);
    free_.clear();
    kept_ = 0;
  }
  const Device& dev_;
  std::mutex mu_;
  std::map<std::size_t, std::vector<CUdeviceptr>> free_;
  std::size_t kept_ = 0;
};

// The cubin cache: tc_cuda_<key>.cubin and its record .meta in the code
// cache's directory, used only when the record matches (cache/disk.h).
constexpr const char* kRecordKind = "tc-cubin 1";

class CudaExecutable final : public Executable {
 public:
  CudaExecutable(const Device& dev, CudaProgram cp, const Program& p, api::CUmodule module)
      : dev_(dev), cp_(std::move(cp)), p_(p) {
    for (const std::string& f : cp_.functions) {
      api::CUfunction fn = nullptr;
      check(dev_.d->cuModuleGetFunction(&fn, module, f.c_str()), "cuModuleGetFunction");
      functions_.push_back(fn);
    }
    // Device memory of the run: the pointer table, the error flag, the
    // scratch floats (alphas, then the constants 0 and 1 for cuBLAS's
    // device pointer mode).
    scratch_n_ = static_cast<std::size_t>(cp_.scratch_floats) + 2;
    check(dev_.d->cuMemAlloc(&table_, sizeof(void*) * static_cast<std::size_t>(cp_.slots)), "cuMemAlloc");
    check(dev_.d->cuMemAlloc(&err_, sizeof(int)), "cuMemAlloc");
    check(dev_.d->cuMemAlloc(&scratch_, sizeof(float) * scratch_n_), "cuMemAlloc");
    // A dynamic program's size table {s, arena offsets}, copied in per run.
    if (cp_.sizes_slot >= 0) {
      sizes_n_ = p_.bufs.size() + 1;
      check(dev_.d->cuMemAlloc(&sizes_, sizeof(int64_t) * sizes_n_), "cuMemAlloc");
    }
    std::vector<float> init(scratch_n_, 0.0f);
    init.back() = 1.0f;
    check(dev_.d->cuMemcpyHtoD(scratch_, init.data(), sizeof(float) * scratch_n_), "cuMemcpyHtoD");
    for (int i = 0; i < 2 * static_cast<int>(p_.kernels.size()); ++i) {
      api::CUevent e = nullptr;
      check(dev_.d->cuEventCreate(&e, 0), "cuEventCreate");
      events_.push_back(e);
    }
  }

  int run(void* const* bufs, const RunIds& ids, const KernelClock* clock) override {
    std::lock_guard lock(mu_);  // one pointer table per executable
    dev_.make_current();
    // Under tc-profile's CUDA injection (libtc_cupti.so), CUPTI tags what
    // this run launches with its execution id (gpu_activity.execution_id).
    struct Correlation {
      const api::Cupti* c = api::cupti_if_loaded();
      explicit Correlation(int64_t id) {
        if (c) c->cuptiActivityPushExternalCorrelationId(api::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, static_cast<uint64_t>(id));
      }
      ~Correlation() {
        uint64_t last = 0;
        if (c) c->cuptiActivityPopExternalCorrelationId(api::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &last);
      }
    } correlation(ids.execution_id);
    host_table_.assign(static_cast<std::size_t>(cp_.slots), nullptr);
    for (int i = 0; i + 1 < cp_.slots; ++i) host_table_[static_cast<std::size_t>(i)] = bufs[i];
    host_table_.back() = reinterpret_cast<void*>(scratch_);
    // The size table comes in host memory (execute()); the kernels read
    // the device copy, the plan the host one.
    const int64_t* sizes = nullptr;
    if (cp_.sizes_slot >= 0) {
      sizes = static_cast<const int64_t*>(bufs[cp_.sizes_slot]);
      check(dev_.d->cuMemcpyHtoDAsync(sizes_, sizes, sizeof(int64_t) * sizes_n_, dev_.stream), "cuMemcpyHtoDAsync");
      host_table_[static_cast<std::size_t>(cp_.sizes_slot)] = reinterpret_cast<void*>(sizes_);
    }
    check(dev_.d->cuMemcpyHtoDAsync(table_, host_table_.data(), sizeof(void*) * host_table_.size(), dev_.stream), "cuMemcpyHtoDAsync");
    check(dev_.d->cuMemsetD8Async(err_, 0, sizeof(int), dev_.stream), "cuMemsetD8Async");
    Plan plan(*this, clock);
    const uint64_t t0 = clock ? clock->now() : 0;
    run_plan(cp_, p_, host_table_.data(), sizes, plan);
    check(dev_.d->cuStreamSynchronize(dev_.stream), "cuStreamSynchronize");
    int err = 0;
    check(dev_.d->cuMemcpyDtoH(&err, err_, sizeof err), "cuMemcpyDtoH");
    if (clock) fill_ticks(*clock, t0, plan);
    return err ? 1 : 0;
  }

 private:
  struct Plan final : PlanDevice {
    Plan(CudaExecutable& x, const KernelClock* c) : x(x), clock(c) {}
    CudaExecutable& x;
    const KernelClock* clock;
    std::vector<bool> timed = std::vector<bool>(x.p_.kernels.size(), false);
    void launch(const CudaProgram&, const Step& s, int64_t grid) override {
      void* args[] = {&x.table_, &x.err_};
      check(x.dev_.d->cuLaunchKernel(x.functions_[static_cast<std::size_t>(s.function)], static_cast<unsigned>(grid), 1, 1,
                                     static_cast<unsigned>(s.block), 1, 1, 0, x.dev_.stream, args, nullptr),
            "cuLaunchKernel");
    }
    void memset(void* dst, int64_t bytes) override {
      check(x.dev_.d->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), 0, static_cast<std::size_t>(bytes), x.dev_.stream),
            "cuMemsetD8Async");
    }
    void gemm(const GemmCall& g, const float* a, const float* b, float* c) override {
      const api::Cublas& cb = *x.dev_.blas;
      const ColumnMajorGemm m = gemm_args(g);
      const float* scratch = reinterpret_cast<const float*>(x.scratch_);
      float alpha = static_cast<float>(g.alpha), beta = g.beta;
      const bool device_alpha = g.alpha_slot >= 0;
      cb.cublasSetPointerMode(x.dev_.handle, device_alpha ? api::CUBLAS_POINTER_MODE_DEVICE : api::CUBLAS_POINTER_MODE_HOST);
      const float* pa = device_alpha ? scratch + g.alpha_slot : &alpha;
      const float* pb = device_alpha ? scratch + x.scratch_n_ - (g.beta != 0 ? 1 : 2) : &beta;
      int rc = cb.cublasSgemmStridedBatched(
          x.dev_.handle, m.trans_first ? api::CUBLAS_OP_T : api::CUBLAS_OP_N, m.trans_second ? api::CUBLAS_OP_T : api::CUBLAS_OP_N,
          static_cast<int>(m.m), static_cast<int>(m.n), static_cast<int>(m.k), pa, b, static_cast<int>(m.ld_first), g.b_stride, a,
          static_cast<int>(m.ld_second), g.a_stride, pb, c, static_cast<int>(m.ldc), g.c_stride, static_cast<int>(g.count));
      if (rc != 0) throw Error("tc: cuda: cublasSgemmStridedBatched failed: status " + std::to_string(rc));
    }
    void kernel_begin(int k) override {
      if (clock) x.dev_.d->cuEventRecord(x.events_[2 * static_cast<std::size_t>(k)], x.dev_.stream), timed[k] = true;
    }
    void kernel_end(int k) override {
      if (clock) x.dev_.d->cuEventRecord(x.events_[2 * static_cast<std::size_t>(k) + 1], x.dev_.stream);
    }
  };

  // Device times to the recording clock: the events' offsets from the first
  // one, scaled onto [t0, now] (the host's view of the run; the clock may
  // count TSC ticks, not ns).
  void fill_ticks(const KernelClock& clock, uint64_t t0, const Plan& plan) {
    const uint64_t t1 = clock.now();
    int first = -1, last = -1;
    for (std::size_t k = 0; k < plan.timed.size(); ++k)
      if (plan.timed[k]) last = static_cast<int>(k), first = first < 0 ? static_cast<int>(k) : first;
    for (std::size_t i = 0; i < 2 * p_.kernels.size(); ++i) clock.ticks[i] = t1;
    if (first < 0) return;
    float span = 0;
    dev_.d->cuEventElapsedTime(&span, events_[2 * static_cast<std::size_t>(first)], events_[2 * static_cast<std::size_t>(last) + 1]);
    for (std::size_t k = 0; k < plan.timed.size(); ++k) {
      if (!plan.timed[k]) continue;
      for (int e = 0; e < 2; ++e) {
        float ms = 0;
        dev_.d->cuEventElapsedTime(&ms, events_[2 * static_cast<std::size_t>(first)], events_[2 * k + static_cast<std::size_t>(e)]);
        double f = span > 0 ? std::clamp(static_cast<double>(ms / span), 0.0, 1.0) : 0.0;
        clock.ticks[2 * k + static_cast<std::size_t>(e)] = t0 + static_cast<uint64_t>(f * static_cast<double>(t1 - t0));
      }
    }
  }

  const Device& dev_;
  CudaProgram cp_;
  Program p_;
  std::vector<api::CUfunction> functions_;
  std::vector<api::CUevent> events_;
  CUdeviceptr table_ = 0, err_ = 0, scratch_ = 0, sizes_ = 0;
  std::size_t scratch_n_ = 0, sizes_n_ = 0;
  std::vector<void*> host_table_;
  std::mutex mu_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(Device dev) : dev_(dev), memory_(dev_) {}
  const char* name() const override { return "cuda"; }
  bool host_memory() const override { return false; }
  bool symbolic_sizes() const override { return true; }
  std::string symbolic_unsupported(const Program& p) const override { return cuda::symbolic_unsupported(p); }
  void* alloc(std::size_t bytes) override { return memory_.alloc(bytes); }
  void free(void* ptr, std::size_t bytes) override { memory_.free(ptr, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    dev_.make_current();
    check(dev_.d->cuStreamSynchronize(dev_.stream), "cuStreamSynchronize");
    check(dev_.d->cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes), "cuMemcpyDtoH");
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    dev_.make_current();
    check(dev_.d->cuStreamSynchronize(dev_.stream), "cuStreamSynchronize");
    check(dev_.d->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, bytes), "cuMemcpyHtoD");
  }

  CompiledCode compile(const Program& p, int64_t graph_id) override {
    CompiledCode out;
    const int64_t t0 = now_ns();
    CudaProgram cp = emit_cuda(p, graph_id);
    out.codegen_ns = now_ns() - t0;
    std::string why;
    const api::Nvrtc* rtc = api::nvrtc(&why);
    if (!rtc) throw Error("tc: cuda: cannot compile graph " + std::to_string(graph_id) + ": " + why);
    int major = 0, minor = 0;
    rtc->nvrtcVersion(&major, &minor);
    const std::string arch = "-arch=sm_" + std::to_string(dev_.sm);
    const char* const opts[] = {arch.c_str(), "--fmad=false", "-std=c++17"};
    const std::string key_text = cp.source + "|" + arch + "|nvrtc " + std::to_string(major) + "." + std::to_string(minor) + "|--fmad=false -std=c++17";
    const std::string key = cache::sha256_hex(key_text);
    const std::string dir = cache::directory();
    const std::string base = "tc_cuda_" + key;
    out.source_path = dir + "/" + base + ".cu";
    std::string cubin, meta;
    const int64_t t1 = now_ns();
    auto cached = [&] {
      return cache::read_owned(dir + "/" + base + ".cubin", cubin, std::size_t{1} << 30) &&
             cache::read_owned(dir + "/" + base + ".meta", meta, 4096) && meta == cache::record(kRecordKind, key, cubin);
    };
    // Not there: looked at again under the key's lock, where another
    // process's compile of it (a rank of the same job) has finished; only
    // the first compiles (as for host objects).
    std::optional<cache::CacheKeyLock> lock;
    bool hit = cached();
    if (!hit) {
      lock.emplace(dir + "/" + base + ".lock");
      hit = cached();
    }
    if (hit) {
      out.disk_hit = true;
    } else {
      cache::put(dir, base + ".cu", cp.source);
      cubin = nvrtc_compile(*rtc, cp.source, graph_id, opts, 3, out.source_path);
      cache::put(dir, base + ".cubin", cubin);
      cache::put(dir, base + ".meta", cache::record(kRecordKind, key, cubin));
      out.build_ns = now_ns() - t1;
    }
    dev_.make_current();
    api::CUmodule module = nullptr;
    check(dev_.d->cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
    out.code = std::make_unique<CudaExecutable>(dev_, std::move(cp), p, module);
    return out;
  }

  void synchronize() override {
    dev_.make_current();
    check(dev_.d->cuStreamSynchronize(dev_.stream), "cuStreamSynchronize");
  }
  Ceilings ceilings() override { return {}; }  // not measured on the GPU yet

 private:
  static std::string nvrtc_compile(const api::Nvrtc& rtc, const std::string& source, int64_t graph_id, const char* const* opts,
                                   int nopts, const std::string& kept) {
    const std::string context = "tc: cuda: NVRTC cannot compile graph " + std::to_string(graph_id);
    api::nvrtcProgram prog = nullptr;
    std::string name = "tc_graph_" + std::to_string(graph_id) + ".cu";
    if (int r = rtc.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr); r != 0)
      throw Error(context + ": " + rtc.nvrtcGetErrorString(r));
    int r = rtc.nvrtcCompileProgram(prog, nopts, opts);
    std::size_t n = 0;
    rtc.nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) rtc.nvrtcGetProgramLog(prog, log.data());
    if (r != 0) {
      rtc.nvrtcDestroyProgram(&prog);
      throw Error(context + " (" + rtc.nvrtcGetErrorString(r) + "); the source is kept at " + kept + ":\n" + log.substr(0, 2000));
    }
    rtc.nvrtcGetCUBINSize(prog, &n);
    std::string cubin(n, '\0');
    rtc.nvrtcGetCUBIN(prog, cubin.data());
    rtc.nvrtcDestroyProgram(&prog);
    return cubin;
  }

  Device dev_;
  CachingAllocator memory_;
};

}  // namespace

Backend* make_backend(std::string* why) {
  static std::string reason;
  static Backend* b = [&]() -> Backend* {
    reason = device_unavailable();
    if (!reason.empty()) return nullptr;
    Device dev;
    std::string w;
    dev.d = api::driver(&w);
    dev.blas = api::cublas(&w);
    if (!dev.d || !dev.blas) return reason = w, nullptr;
    try {
      check(dev.d->cuDeviceGet(&dev.dev, 0), "cuDeviceGet");
      int major = 0, minor = 0;
      check(dev.d->cuDeviceGetAttribute(&major, api::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev.dev), "cuDeviceGetAttribute");
      check(dev.d->cuDeviceGetAttribute(&minor, api::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev.dev), "cuDeviceGetAttribute");
      dev.sm = major * 10 + minor;
      char name[256] = {};
      dev.d->cuDeviceGetName(name, sizeof name, dev.dev);
      dev.name = name;
      check(dev.d->cuDevicePrimaryCtxRetain(&dev.ctx, dev.dev), "cuDevicePrimaryCtxRetain");
      check(dev.d->cuCtxSetCurrent(dev.ctx), "cuCtxSetCurrent");
      check(dev.d->cuStreamCreate(&dev.stream, 0), "cuStreamCreate");
      if (int rc = dev.blas->cublasCreate(&dev.handle); rc != 0) return reason = "cublasCreate failed: status " + std::to_string(rc), nullptr;
      dev.blas->cublasSetStream(dev.handle, dev.stream);
      // The device's memory is the capacity the plans and the out-of-memory
      // report use (unless TC_DEVICE_MEMORY_LIMIT says otherwise).
      std::size_t free_bytes = 0, total_bytes = 0;
      if (dev.d->cuMemGetInfo(&free_bytes, &total_bytes) == api::CUDA_SUCCESS) set_device_capacity(static_cast<int64_t>(total_bytes));
    } catch (const Error& e) {
      reason = e.what();
      return nullptr;
    }
    return new CudaBackend(dev);  // never destroyed: buffers may outlive static destruction
  }();
  if (!b && why) *why = reason;
  return b;
}

}  // namespace tc::detail::cuda
