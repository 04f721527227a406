#include "tc/analysis/format.h"

#include <cmath>
#include <cstdio>

#include "tc/store/json_text.h"

namespace tc::analysis {

std::string format_double(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string counted(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string format_seconds(double s) {
  if (s < 0) return "-" + format_seconds(-s);
  if (s >= 100) return format_double("%.0f s", s);
  if (s >= 1) return format_double("%.1f s", s);
  if (s >= 0.001) return format_double("%.1f ms", s * 1e3);
  if (s > 0 && s < 1e-6) return format_double("%.0f ns", s * 1e9);  // NVTX ranges can be this short
  return format_double("%.0f us", s * 1e6);
}

std::string format_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return format_double(u == 0 ? "%.0f" : "%.1f", b) + " " + unit[u];
}

std::string format_number(double v) {
  // Whole numbers print exactly up to 2^53, where doubles stop holding every integer.
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= 9007199254740992.0) return format_double("%.0f", v);
  return format_double("%.6g", v);
}

std::string printable(std::string_view text) {
  std::string valid = store::valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(valid[i]);
    char buf[8];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xC2 && i + 1 < valid.size() && static_cast<unsigned char>(valid[i + 1]) <= 0x9F) {
      // C1 controls (U+0080..U+009F): U+009B is a one-byte CSI on some terminals.
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(valid[++i]));
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string StoreText::operator()(std::string_view raw) {
  size_t replaced = 0;
  std::string s = store::valid_utf8(raw, &replaced);
  if (replaced > 0 && !bad_.contains(raw)) bad_.emplace(raw);
  return s;
}

std::string invalid_utf8_note(int64_t n) {
  return std::to_string(n) + (n == 1 ? " name contained" : " names contained") + " invalid UTF-8, replaced with U+FFFD";
}

}  // namespace tc::analysis
