// tc/store/json_text.h: the JSON text the store holds (run.command is a JSON
// array of strings), written and read in one place.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tc::store {

// Appends s to out as a JSON string body (no quotes), escaped per RFC 8259.
void append_json_escaped(std::string& out, std::string_view s);
// ["a","b"] for {"a", "b"}.
std::string json_string_array(const std::vector<std::string>& items);
// The strings of a JSON array written by json_string_array (lenient: what
// cannot be read is skipped, never an error).
std::vector<std::string> parse_json_string_array(std::string_view json);

}  // namespace tc::store
