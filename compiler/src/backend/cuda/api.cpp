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

  // The table, or null with *why (when asked) saying why it is not there.
  const T* get(std::string* why_not) const {
    if (!ok && why_not) *why_not = why;
    return ok ? &table : nullptr;
  }
};

// The first library of `names` that loads, its table filled by fill(handle, table, missing) (a sym() per entry):
// ok when every symbol was found. Else why: not_loaded + " (the loader's errors)", or lacks + the first symbol
// missing + hint.
template <class T, class Fill>
Loaded<T> load(std::initializer_list<const char*> names, const char* not_loaded, const char* lacks, const char* hint, Fill fill) {
  Loaded<T> l;
  void* h = open_first(names, &l.why);
  if (!h) {
    l.why = not_loaded + (" (" + l.why + ")");
    return l;
  }
  std::string m;
  fill(h, l.table, m);
  if (!m.empty()) l.why = lacks + m + hint;
  l.ok = m.empty();
  return l;
}

// A table's entry (api.h's lists) looked up by its name and suffix.
#define TC_CUDA_SYM(name, ret, params, suffix) sym(h, t.name, {#name #suffix}, &m);

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
  static const Loaded<Driver> d = load<Driver>(
      {"libcuda.so.1"}, "no CUDA driver: libcuda.so.1 does not load", "the CUDA driver libcuda.so.1 has no ", " (too old a driver?)",
      [](void* h, Driver& t, std::string& m) {
        TC_CUDA_DRIVER_FUNCTIONS(TC_CUDA_SYM)
        sym(h, t.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &m);
      });
  return d.get(why);
}

const Nvrtc* nvrtc(std::string* why) {
  static const Loaded<Nvrtc> d = load<Nvrtc>(
      {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"}, "no NVRTC", "NVRTC has no ", "",
      [](void* h, Nvrtc& t, std::string& m) { TC_CUDA_NVRTC_FUNCTIONS(TC_CUDA_SYM) });
  return d.get(why);
}

const Cublas* cublas(std::string* why) {
  static const Loaded<Cublas> d = load<Cublas>(
      {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"}, "no cuBLAS", "cuBLAS has no ", "",
      [](void* h, Cublas& t, std::string& m) { TC_CUDA_CUBLAS_FUNCTIONS(TC_CUDA_SYM) });
  return d.get(why);
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
