#include <cstdio>
#include <map>
#include <string>

#include "tc/collect/collector.h"

namespace tc::collect {

trace::launcher::Place launcher_place_from(std::string_view environ) {
  std::map<std::string, std::string, std::less<>> vars;  // the launcher's variables only
  while (!environ.empty()) {
    const size_t end = std::min(environ.find('\0'), environ.size());
    const std::string_view entry = environ.substr(0, end);
    environ.remove_prefix(std::min(end + 1, environ.size()));
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !trace::launcher::is_variable(entry.substr(0, eq))) continue;
    vars.try_emplace(std::string(entry.substr(0, eq)), entry.substr(eq + 1));  // the first of a name, as getenv
  }
  return trace::launcher::any_place([&](std::string_view name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

trace::launcher::Place launcher_place_of(uint32_t pid) {
  constexpr size_t kMaxEnviron = 1 << 20;
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/environ").c_str(), "rb");
  if (f == nullptr) return {};
  std::string text(kMaxEnviron, '\0');
  const size_t n = std::fread(text.data(), 1, text.size(), f);
  std::fclose(f);
  text.resize(n);
  return launcher_place_from(text);
}

}  // namespace tc::collect
