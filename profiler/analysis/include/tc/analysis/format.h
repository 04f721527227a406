// tc/analysis/format.h: how the tools print times, sizes and text, in one place.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace tc::analysis {

// "41 s", "3.2 s", "12.5 ms", "80 us", "650 ns" (0 is "0 us").
std::string format_seconds(double s);
// "512 B", "4.1 GiB" (binary units).
std::string format_bytes(double bytes);
// A count or threshold as people write it: "14031700", not "1.40317e+07";
// "0.25" for a value that is not a whole number.
std::string format_number(double v);
// A count with its noun in the right number: counted(1, "compilation",
// "compilations") is "1 compilation", counted(3, ...) "3 compilations".
std::string counted(int64_t n, std::string_view one, std::string_view many);
// One number through a printf format: format_double("%.0f%%", 12.4) is "12%".
std::string format_double(const char* printf_format, double v);

// Text from a store (a name, a path, a command) made safe for a terminal:
// invalid UTF-8 becomes U+FFFD and control characters are written as escapes
// ("\x1b", "\n", "\u0085"), so a name can never move the cursor, change
// colours or split a line.
std::string printable(std::string_view text);

// Reads text columns of a store for a report: every string it returns is
// valid UTF-8 (each invalid sequence replaced by U+FFFD), and it counts the
// distinct strings that needed it, for the note that says so.
class StoreText {
 public:
  std::string operator()(std::string_view raw);
  int64_t replaced() const { return static_cast<int64_t>(bad_.size()); }

 private:
  std::set<std::string, std::less<>> bad_;
};

// "3 names contained invalid UTF-8, replaced with U+FFFD" (n > 0).
std::string invalid_utf8_note(int64_t n);

}  // namespace tc::analysis
