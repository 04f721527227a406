// libFuzzer target: torch.compile's trace (TORCH_TRACE) as the program may
// write it; see fuzz_import.h. Seeds: scripts/fuzz.sh.
#include "fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tc_fuzz::fuzz_one(tc::import::import_torch_trace, "torch_trace", "trace.log", data, size);
}
