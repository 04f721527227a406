// tc/analysis/format.h: how the tools print times and sizes, in one place.
#pragma once

#include <string>

namespace tc::analysis {

// "41 s", "3.2 s", "12.5 ms", "80 us".
std::string format_seconds(double s);
// "512 B", "4.1 GiB" (binary units).
std::string format_bytes(double bytes);

}  // namespace tc::analysis
