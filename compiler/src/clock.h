// The compiler's own durations: steady-clock nanoseconds (not the recording
// clock, events.h's clock_now()).
#pragma once

#include <chrono>
#include <cstdint>

namespace tc::detail {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace tc::detail
