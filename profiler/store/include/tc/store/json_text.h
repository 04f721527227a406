// tc/store/json_text.h: the JSON text the store holds (run.command is a JSON
// array of strings), written and read in one place, and the UTF-8 rule every
// writer of JSON follows.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tc::store {

// Appends s to out as a JSON string body (no quotes), escaped per RFC 8259.
// Bytes that are not valid UTF-8 (a stray byte, a truncated or overlong
// sequence, a surrogate) become U+FFFD, so the result is always valid JSON;
// returns how many replacements were made.
size_t append_json_escaped(std::string& out, std::string_view s);
// s with each invalid UTF-8 sequence replaced by U+FFFD (as above); adds the
// number of replacements to *replaced when given.
std::string valid_utf8(std::string_view s, size_t* replaced = nullptr);
// ["a","b"] for {"a", "b"}.
std::string json_string_array(const std::vector<std::string>& items);
// The strings of a JSON array written by json_string_array (lenient: what
// cannot be read is skipped, never an error).
std::vector<std::string> parse_json_string_array(std::string_view json);

}  // namespace tc::store
