// Test support: CUPTI activity buffers built from real cupti.h structs, for
// the translation tests (cupti_activity_test.cpp) and the program that feeds
// them through libtc_cupti's emission (tests/programs/cupti_program.cpp).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tc::test::cupti {

// Records packed one after another, as CUPTI writes them.
struct Buffer {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(1 << 16);
  std::size_t used = 0;
  template <class R> void add(const R& r) {
    std::memcpy(bytes.data() + used, &r, sizeof r);
    used += sizeof r;
  }
};

// An external correlation: `execution` tags the activity of API call
// `correlation` (tc's kind unless told).
inline CUpti_ActivityExternalCorrelation external(uint32_t correlation, uint64_t execution,
                                                  CUpti_ExternalCorrelationKind kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = kind;
  e.externalId = execution;
  e.correlationId = correlation;
  return e;
}

inline CUpti_ActivityKernel10 kernel(const char* name, uint32_t correlation, uint64_t start, uint64_t end) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.correlationId = correlation;
  k.start = start;
  k.end = end;
  return k;
}

}  // namespace tc::test::cupti
