// libFuzzer target: the JAX log of tc's Python hook as the program may write
// it; see fuzz_import.h. Seeds: scripts/fuzz.sh.
#include "fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tc_fuzz::fuzz_one(tc::import::import_jax_log, "jax", "jax-7.log", data, size);
}
