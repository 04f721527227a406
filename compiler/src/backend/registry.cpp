// The table of backends and the process's choice among them (TC_DEVICE).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "tc/error.h"

namespace tc::detail {
namespace {

struct Registration {
  const char* name;
  Backend* (*make)(std::string* why);  // nullptr + why: cannot run here
};

// One row per backend. "cuda-emulated" runs the CUDA backend's kernels and
// plan on the CPU (cuda/emulated_backend.cpp: for tests and for debugging a
// kernel without a GPU).
constexpr Registration kBackends[] = {
    {"cpu", cpu::make_backend},
    {"cuda", cuda::make_backend},
    {"cuda-emulated", cuda::make_emulated_backend},
};

// TC_DEVICE unset takes the GPU when there is one. Off until the cuda
// backend has passed scripts/gpu-check.sh on a GPU (it was written without
// one) and compiles every kernel kind (collectives are not there yet): a
// program on a GPU machine keeps the CPU unless asked.
constexpr bool kAutoSelectCuda = false;

// The exit status of a process whose TC_DEVICE names a backend that cannot
// run here (cuda without a driver or device): EX_UNAVAILABLE of sysexits.h.
constexpr int kUnavailableExit = 69;

std::string known_names() {
  std::string s;
  for (const Registration& r : kBackends) s += (s.empty() ? "" : ", ") + std::string(r.name);
  return s;
}

Backend*& override_slot() {
  static Backend* b = nullptr;
  return b;
}

Backend& chosen() {
  static Backend* b = [] {
    const char* e = std::getenv("TC_DEVICE");
    std::string why;
    // Unset: the GPU when there is one (without a driver that costs a stat
    // per driver node), else the CPU.
    if (!e || !*e) {
      if (Backend* gpu = kAutoSelectCuda && cuda::device_unavailable().empty() ? find_backend("cuda", &why) : nullptr)
        return gpu;
      return find_backend("cpu", &why);
    }
    std::string name = e;
    Backend* found = find_backend(name, &why);
    if (found) return found;
    for (const Registration& r : kBackends)
      if (name == r.name) {
        // A known backend that cannot run here: one line, a status of its own.
        std::fprintf(stderr, "tc: TC_DEVICE=%s: %s\n", name.c_str(), why.c_str());
        std::fflush(nullptr);
        std::_Exit(kUnavailableExit);
      }
    throw Error("tc: TC_DEVICE=" + name + ": " + why);
  }();
  return *b;
}

}  // namespace

Backend* find_backend(std::string_view name, std::string* why) {
  for (const Registration& r : kBackends) {
    if (name != r.name) continue;
    std::string reason;
    Backend* b = r.make(&reason);
    if (!b && why) *why = reason.empty() ? "the " + std::string(name) + " backend cannot run here" : reason;
    return b;
  }
  if (why) *why = "no such backend (backends: " + known_names() + ")";
  return nullptr;
}

Backend& backend() {
  if (Backend* o = override_slot()) return *o;
  return chosen();
}

ScopedBackend::ScopedBackend(Backend& b) : saved_(override_slot()) { override_slot() = &b; }
ScopedBackend::~ScopedBackend() { override_slot() = saved_; }

}  // namespace tc::detail
