// libFuzzer target: the PyTorch/XLA log of tc's Python hook and PyTorch/XLA's
// debug output as the program may write them: the input up to its first
// "\n====\n" is xla-7.log, the rest pt_xla_debug.txt. See fuzz_import.h.
// Seeds: scripts/fuzz.sh.
#include <algorithm>
#include <cstdio>

#include "fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = tc_fuzz::scratch() + "/xla";
  ::mkdir(dir.c_str(), 0700);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSplit = "\n====\n";
  const size_t at = in.find(kSplit);
  const std::string debug = dir + "/pt_xla_debug.txt";
  if (at == std::string_view::npos) std::remove(debug.c_str());
  else tc_fuzz::write_file(debug, in.substr(at + kSplit.size()));
  return tc_fuzz::fuzz_one(tc::import::import_xla_log, "xla", "xla-7.log", data, std::min(size, at));
}
