#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "tc/collect/collector.h"

#if TC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tc::collect {

namespace {

#if TC_HAVE_CUDA
bool exists(const char* path) {
  struct stat st{};
  return ::stat(path, &st) == 0;
}
#endif

// Linux's NVIDIA driver, its control device, WSL's GPU device.
const char* const kDriverNodes[] = {"/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg"};

}  // namespace

std::string cuda_probe(std::span<const char* const> driver_nodes, const char* driver_library) {
#if TC_HAVE_CUDA
  // cudaGetDeviceCount() alone looks for the driver library itself: on a
  // machine without one, 42 failed opens along the library paths (strace),
  // before every program tc-profile started. A CUDA device needs the kernel
  // driver, whose nodes a stat finds; only then is the library loaded, once,
  // here, and the runtime finds it already loaded.
  bool node = false;
  std::string looked;
  for (const char* path : driver_nodes) {
    if (exists(path)) {
      node = true;
      break;
    }
    looked += (looked.empty() ? "" : ", ") + std::string(path);
  }
  if (!node) return "no device: no NVIDIA driver (none of " + looked + ")";
  // Kept open when it loads: the runtime's own dlopen then finds it loaded.
  if (dlopen(driver_library, RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char* why = dlerror();
    return std::string("no device: cannot load ") + driver_library + " (" + (why ? why : "unknown error") + ")";
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // An old driver is error 35 (insufficient driver); count is untouched.
    char buf[256];
    std::snprintf(buf, sizeof buf, "no device: cudaGetDeviceCount error %d (%s)", static_cast<int>(err), cudaGetErrorString(err));
    return buf;
  }
  if (count == 0) return "no device: cudaGetDeviceCount found 0";
  std::string out = std::to_string(count) + (count == 1 ? " device:" : " devices:");
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    char buf[320];
    std::snprintf(buf, sizeof buf, "%s %s (sm_%d%d, %.1f GiB)", i ? "," : "", p.name, p.major, p.minor,
                  static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024));
    out += buf;
  }
  return out;
#else
  (void)driver_nodes;
  (void)driver_library;
  return "built without CUDA";
#endif
}

std::string cuda_probe() { return cuda_probe(kDriverNodes, "libcuda.so.1"); }

}  // namespace tc::collect
