#include "tc/analysis/format.h"

#include <cstdio>

namespace tc::analysis {

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
}  // namespace

std::string format_seconds(double s) {
  if (s < 0) return "-" + format_seconds(-s);
  if (s >= 100) return fmt("%.0f s", s);
  if (s >= 1) return fmt("%.1f s", s);
  if (s >= 0.001) return fmt("%.1f ms", s * 1e3);
  return fmt("%.0f us", s * 1e6);
}

std::string format_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt(u == 0 ? "%.0f" : "%.1f", b) + " " + unit[u];
}

}  // namespace tc::analysis
