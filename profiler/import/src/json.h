// Strict JSON (RFC 8259, through simdjson) for the framework importers, as a
// plain tree: input written by another process, so every limit is checked
// and nothing throws. Also read, as Python's json module writes them: NaN,
// Infinity and -Infinity (numbers that are NaN), integers beyond 64 bits (not
// integral), lone UTF-16 surrogate escapes (U+FFFD). Refused: duplicate keys,
// nesting beyond Limits::max_depth, more values than Limits::max_values,
// invalid UTF-8.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tc::import::json {

struct Value {
  enum Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double n = 0;
  bool integral = false;  // written without fraction or exponent, and fits int64
  int64_t i = 0;          // the number, when integral
  std::string s;
  std::vector<Value> a;
  std::map<std::string, Value, std::less<>> o;

  // The member, or nullptr (also when this is not an object).
  const Value* get(std::string_view key) const;
  // Typed access with the type checked: nullopt when missing or of another type.
  std::optional<std::string_view> str(std::string_view key) const;
  std::optional<int64_t> int64(std::string_view key) const;  // an integral number
  std::optional<double> number(std::string_view key) const;
};

struct Limits {
  size_t max_depth = 64;
  // Values in one text at most: the tree costs ~200 bytes a value, whatever
  // the text's length ("[[],[],...]" is 3 bytes a value).
  size_t max_values = 1 << 16;
};

// The value of `text` (nothing else but white space around it), or nullopt
// with *error set to one line ("expected ':' at offset 17").
std::optional<Value> parse(std::string_view text, std::string* error = nullptr, Limits limits = {});

}  // namespace tc::import::json
