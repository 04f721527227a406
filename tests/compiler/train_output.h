// What tc-test-compile (tests/programs/compile_program.cpp) prints: one
// "step S loss L" line per step.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace tc::test {

// The losses of the "step S loss L" lines of `out`, in order.
inline std::vector<double> losses(const std::string& out) {
  std::vector<double> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto at = line.find(" loss ");
    if (line.rfind("step ", 0) == 0 && at != std::string::npos) v.push_back(std::stod(line.substr(at + 6)));
  }
  return v;
}

}  // namespace tc::test
