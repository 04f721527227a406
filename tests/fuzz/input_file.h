// The fuzz input as a file, for targets whose code under test reads a path
// (a store): written into a directory of its own per process.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace tc::fuzz {

// The process's directory for inputs (made once).
inline const std::string& input_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/tc-fuzz-XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  return dir;
}

// Writes data to input_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = input_dir() + "/" + name;
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace tc::fuzz
