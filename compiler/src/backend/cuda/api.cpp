// dlopen()/dlsym() of the driver, NVRTC and cuBLAS, and the device probe.
#include "api.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <mutex>

#include "cuda.h"

namespace tc::detail::cuda {
namespace api {
namespace {

void* open_first(std::initializer_list<const char*> names, std::string* why) {
  std::string tried;
  for (const char* n : names) {
    if (void* h = ::dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = ::dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(e ? e : n);
  }
  *why = tried;
  return nullptr;
}

template <class F>
bool sym(void* h, F& slot, std::initializer_list<const char*> names, std::string* missing) {
  for (const char* n : names)
    if (void* p = ::dlsym(h, n)) {
      slot = reinterpret_cast<F>(p);
      return true;
    }
  if (missing->empty()) *missing = *names.begin();
  return false;
}

template <class T>
struct Loaded {
  T table{};
  bool ok = false;
  std::string why;
};

}  // namespace

const Cupti* cupti_if_loaded() {
  static Loaded<Cupti> c = [] {
    Loaded<Cupti> l;
    void* h = nullptr;
    for (const char* n : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"})
      if ((h = ::dlopen(n, RTLD_NOW | RTLD_NOLOAD))) break;
    if (!h) return l;
    std::string m;
    sym(h, l.table.cuptiActivityPushExternalCorrelationId, {"cuptiActivityPushExternalCorrelationId"}, &m);
    sym(h, l.table.cuptiActivityPopExternalCorrelationId, {"cuptiActivityPopExternalCorrelationId"}, &m);
    l.ok = m.empty();
    return l;
  }();
  return c.ok ? &c.table : nullptr;
}

const Driver* driver(std::string* why) {
  static Loaded<Driver> d = [] {
    Loaded<Driver> l;
    void* h = open_first({"libcuda.so.1"}, &l.why);
    if (!h) {
      l.why = "no CUDA driver: libcuda.so.1 does not load (" + l.why + ")";
      return l;
    }
    std::string m;
    Driver& t = l.table;
    sym(h, t.cuInit, {"cuInit"}, &m);
    sym(h, t.cuDeviceGetCount, {"cuDeviceGetCount"}, &m);
    sym(h, t.cuDeviceGet, {"cuDeviceGet"}, &m);
    sym(h, t.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, &m);
    sym(h, t.cuDeviceGetName, {"cuDeviceGetName"}, &m);
    sym(h, t.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, &m);
    sym(h, t.cuCtxSetCurrent, {"cuCtxSetCurrent"}, &m);
    sym(h, t.cuCtxSynchronize, {"cuCtxSynchronize"}, &m);
    sym(h, t.cuModuleLoadData, {"cuModuleLoadData"}, &m);
    sym(h, t.cuModuleGetFunction, {"cuModuleGetFunction"}, &m);
    sym(h, t.cuLaunchKernel, {"cuLaunchKernel"}, &m);
    sym(h, t.cuMemAlloc, {"cuMemAlloc_v2"}, &m);
    sym(h, t.cuMemFree, {"cuMemFree_v2"}, &m);
    sym(h, t.cuMemGetInfo, {"cuMemGetInfo_v2"}, &m);
    sym(h, t.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, &m);
    sym(h, t.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, &m);
    sym(h, t.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, &m);
    sym(h, t.cuMemsetD8Async, {"cuMemsetD8Async"}, &m);
    sym(h, t.cuStreamCreate, {"cuStreamCreate"}, &m);
    sym(h, t.cuStreamSynchronize, {"cuStreamSynchronize"}, &m);
    sym(h, t.cuEventCreate, {"cuEventCreate"}, &m);
    sym(h, t.cuEventRecord, {"cuEventRecord"}, &m);
    sym(h, t.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &m);
    sym(h, t.cuGetErrorString, {"cuGetErrorString"}, &m);
    if (!m.empty()) l.why = "the CUDA driver libcuda.so.1 has no " + m + " (too old a driver?)";
    l.ok = m.empty();
    return l;
  }();
  if (!d.ok && why) *why = d.why;
  return d.ok ? &d.table : nullptr;
}

const Nvrtc* nvrtc(std::string* why) {
  static Loaded<Nvrtc> d = [] {
    Loaded<Nvrtc> l;
    void* h = open_first({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"}, &l.why);
    if (!h) {
      l.why = "no NVRTC (" + l.why + ")";
      return l;
    }
    std::string m;
    Nvrtc& t = l.table;
    sym(h, t.nvrtcVersion, {"nvrtcVersion"}, &m);
    sym(h, t.nvrtcCreateProgram, {"nvrtcCreateProgram"}, &m);
    sym(h, t.nvrtcCompileProgram, {"nvrtcCompileProgram"}, &m);
    sym(h, t.nvrtcGetProgramLogSize, {"nvrtcGetProgramLogSize"}, &m);
    sym(h, t.nvrtcGetProgramLog, {"nvrtcGetProgramLog"}, &m);
    sym(h, t.nvrtcGetCUBINSize, {"nvrtcGetCUBINSize"}, &m);
    sym(h, t.nvrtcGetCUBIN, {"nvrtcGetCUBIN"}, &m);
    sym(h, t.nvrtcGetPTXSize, {"nvrtcGetPTXSize"}, &m);
    sym(h, t.nvrtcGetPTX, {"nvrtcGetPTX"}, &m);
    sym(h, t.nvrtcDestroyProgram, {"nvrtcDestroyProgram"}, &m);
    sym(h, t.nvrtcGetErrorString, {"nvrtcGetErrorString"}, &m);
    if (!m.empty()) l.why = "NVRTC has no " + m;
    l.ok = m.empty();
    return l;
  }();
  if (!d.ok && why) *why = d.why;
  return d.ok ? &d.table : nullptr;
}

const Cublas* cublas(std::string* why) {
  static Loaded<Cublas> d = [] {
    Loaded<Cublas> l;
    void* h = open_first({"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"}, &l.why);
    if (!h) {
      l.why = "no cuBLAS (" + l.why + ")";
      return l;
    }
    std::string m;
    Cublas& t = l.table;
    sym(h, t.cublasCreate, {"cublasCreate_v2"}, &m);
    sym(h, t.cublasSetStream, {"cublasSetStream_v2"}, &m);
    sym(h, t.cublasSetPointerMode, {"cublasSetPointerMode_v2"}, &m);
    sym(h, t.cublasSgemmStridedBatched, {"cublasSgemmStridedBatched"}, &m);
    if (!m.empty()) l.why = "cuBLAS has no " + m;
    l.ok = m.empty();
    return l;
  }();
  if (!d.ok && why) *why = d.why;
  return d.ok ? &d.table : nullptr;
}

std::string driver_error(const char* call, CUresult r) {
  const char* text = nullptr;
  std::string ignored;
  if (const Driver* d = driver(&ignored)) d->cuGetErrorString(r, &text);
  return std::string(call) + " failed: CUDA error " + std::to_string(r) + (text ? std::string(" (") + text + ")" : "");
}

}  // namespace api

std::string device_unavailable() {
  // A CUDA device needs the kernel driver, whose nodes a stat finds (the
  // same test as tc-profile's probe): without them nothing is loaded.
  static const std::string why = [] {
    const char* const nodes[] = {"/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg"};
    bool node = false;
    for (const char* n : nodes) {
      struct stat st{};
      node = node || ::stat(n, &st) == 0;
    }
    if (!node) return std::string("no NVIDIA driver (none of /proc/driver/nvidia/version, /dev/nvidiactl, /dev/dxg)");
    std::string w;
    const api::Driver* d = api::driver(&w);
    if (!d) return w;
    if (api::CUresult r = d->cuInit(0); r != api::CUDA_SUCCESS)
      return r == api::CUDA_ERROR_NO_DEVICE ? std::string("no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)")
                                            : "the CUDA driver does not start: " + api::driver_error("cuInit", r);
    int count = 0;
    if (api::CUresult r = d->cuDeviceGetCount(&count); r != api::CUDA_SUCCESS) return api::driver_error("cuDeviceGetCount", r);
    if (count == 0) return std::string("no CUDA device (cuDeviceGetCount found 0)");
    return std::string();
  }();
  return why;
}

}  // namespace tc::detail::cuda
