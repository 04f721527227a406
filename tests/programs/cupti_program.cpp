// tc-test-cupti: CUPTI capture without a GPU (tests/cuda/cupti_e2e_test.cpp).
//   feed: buffers of real CUPTI activity structs, stamped with CLOCK_MONOTONIC
//         as CUPTI's clock, through the same translation and emission as
//         libtc_cupti.so (activity.h, emit.h) into tc-profile's rings. Prints
//         "window A B": CLOCK_MONOTONIC ns before the first and after the last
//         activity it made up.
//   init: what the CUDA driver does with CUDA_INJECTION64_PATH: dlopen() it and
//         call InitializeInjection. Prints the path ("<unset>" when unset) and,
//         when set, "InitializeInjection N".
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "activity.h"
#include "cuda/cupti_records.h"
#include "emit.h"
#include "tc/trace/trace.h"

namespace cp = tc::capture::cupti;

namespace {

using tc::test::cupti::Buffer;

int feed() {
  std::string why;
  cp::NextRecordFn next = cp::load_next_record(&why);
  if (!next) {
    std::fprintf(stderr, "tc-test-cupti: %s\n", why.c_str());
    return 3;
  }
  cp::ClockMap clock(tc::trace::monotonic_ns);
  cp::Emitter emitter(&clock);
  cp::Translator t(next);
  const uint64_t start = tc::trace::monotonic_ns();
  constexpr uint64_t kMs = 1'000'000;
  Buffer b;
  b.add(tc::test::cupti::external(5, 77));
  CUpti_ActivityKernel10 k = tc::test::cupti::kernel("tc_g3_k1", 5, start, start + 2 * kMs);
  k.gridX = 64, k.gridY = 1, k.gridZ = 1, k.blockX = 128, k.blockY = 1, k.blockZ = 1;
  k.streamId = 13;
  b.add(k);
  CUpti_ActivityKernel10 f = k;
  f.name = "ampere_sgemm_128x64_nn";
  f.start = start + 2 * kMs;
  f.end = start + 5 * kMs;
  b.add(f);
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 4096;
  m.correlationId = 9;
  m.start = start + 5 * kMs;
  m.end = start + 6 * kMs;
  b.add(m);
  // The activity "ran" for 6 ms; the buffer comes back after it, as CUPTI's do.
  while (tc::trace::monotonic_ns() < start + 6 * kMs) {
  }
  clock.refresh();
  t.buffer(b.bytes.data(), b.used);
  const int64_t n = emitter.emit(t.rows());
  std::printf("window %llu %llu\nemitted %lld\n", static_cast<unsigned long long>(start),
              static_cast<unsigned long long>(tc::trace::monotonic_ns()), static_cast<long long>(n));
  return 0;
}

int init() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  std::printf("%s\n", path && *path ? path : "<unset>");
  if (!path || !*path) return 0;
  void* h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "tc-test-cupti: %s\n", ::dlerror());
    return 3;
  }
  auto fn = reinterpret_cast<int (*)()>(::dlsym(h, "InitializeInjection"));
  if (!fn) {
    std::fprintf(stderr, "tc-test-cupti: no InitializeInjection in %s\n", path);
    return 3;
  }
  std::printf("InitializeInjection %d\n", fn());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tc::trace::start_from_environment();
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "feed") return feed();
  if (mode == "init") return init();
  std::fprintf(stderr, "usage: tc-test-cupti feed|init\n");
  return 2;
}
