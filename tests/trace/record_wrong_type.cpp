// Must not compile: a record field given a value of the wrong type (a raw
// integer where the field is Text, i.e. a StringId from intern()). ctest
// compiles it twice (tests/trace/CMakeLists.txt): as is, expecting the error,
// and with -DTC_COMPLETE_RECORD, expecting success.
#include "tc/trace/records.h"

namespace tr = tc::trace;

void send(uint64_t now, tr::StringId level, tr::StringId message) {
  tr::emit(tr::rec::Log{
      .ts = tr::Ticks{now},
#if defined(TC_COMPLETE_RECORD)
      .level = level,
#else
      .level = 3,
#endif
      .message = message,
  });
}
