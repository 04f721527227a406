// The table of backends and the process's choice among them (TC_DEVICE).
#include <cstdlib>
#include <string>

#include "backend.h"
#include "cpu/cpu.h"
#include "tc/error.h"

namespace tc::detail {
namespace {

struct Registration {
  const char* name;
  Backend* (*make)(std::string* why);  // nullptr + why: cannot run here
};

// One row per backend. A CUDA backend is one more row: {"cuda", cuda::make_backend}.
constexpr Registration kBackends[] = {
    {"cpu", cpu::make_backend},
};

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
    std::string name = e && *e ? e : "cpu";
    std::string why;
    Backend* found = find_backend(name, &why);
    if (!found) throw Error("tc: TC_DEVICE=" + name + ": " + why);
    return found;
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
  if (why) {
    *why = name == "cuda" ? "this tc has no CUDA backend yet (backends: " + known_names() + ")"
                          : "no such backend (backends: " + known_names() + ")";
  }
  return nullptr;
}

Backend& backend() {
  if (Backend* o = override_slot()) return *o;
  return chosen();
}

ScopedBackend::ScopedBackend(Backend& b) : saved_(override_slot()) { override_slot() = &b; }
ScopedBackend::~ScopedBackend() { override_slot() = saved_; }

}  // namespace tc::detail
