// Counter-based random numbers: value i of stream `seed` is a pure function
// of (seed, i), so any executor (eager, compiled, GPU) reproduces it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tc::detail {

inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
inline double uniform01(uint64_t seed, uint64_t i) {
  return static_cast<double>(mix64(mix64(seed) + i) >> 11) * 0x1.0p-53;
}
inline double normal01(uint64_t seed, uint64_t i) {
  double u1 = std::max(uniform01(seed, 2 * i), 1e-300);
  double u2 = uniform01(seed, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace tc::detail
