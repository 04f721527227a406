#include "tc/collect/collector.h"

#include <cstdio>

#if TC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tc::collect {

std::string cuda_probe() {
#if TC_HAVE_CUDA
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // Without a driver this is error 35 (insufficient driver) and count is untouched.
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
  return "built without CUDA";
#endif
}

}  // namespace tc::collect
