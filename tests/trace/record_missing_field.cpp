// Must not compile: a record with a field left out. ctest compiles it twice
// (tests/trace/CMakeLists.txt): as is, expecting the error, and with
// -DTC_COMPLETE_RECORD, expecting success, so the error is the missing field's.
#include "tc/trace/records.h"

namespace tr = tc::trace;

void send(uint64_t start, uint64_t end, int64_t step, tr::LocationId where) {
  tr::emit(tr::rec::Step{
      .ts = tr::Ticks{start},
      .dur = tr::Ticks{end - start},
      .step = step,
#if defined(TC_COMPLETE_RECORD)
      .loc_id = where,
#endif
  });
}
