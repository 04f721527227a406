// The compiler's 64-bit hashes: graph signatures (compiler.cpp) and code
// cache keys (backend/cache/). Changing them renames every cache entry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "random.h"

namespace tc::detail {

struct Hasher {
  uint64_t h = 0x6a09e667f3bcc908ULL;
  void add(uint64_t v) { h = mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))); }
  void add_double(double d) {
    uint64_t v;
    std::memcpy(&v, &d, sizeof v);
    add(v);
  }
};

inline uint64_t hash_text(const std::string& s) {
  Hasher h;
  for (std::size_t i = 0; i < s.size(); i += 8) {
    uint64_t v = 0;
    std::memcpy(&v, s.data() + i, std::min<std::size_t>(8, s.size() - i));
    h.add(v);
  }
  h.add(s.size());
  return h.h;
}

// 16 lowercase hex digits.
inline std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace tc::detail
