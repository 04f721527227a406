// Test support: what the tools print as JSON, parsed strictly by nlohmann-json
// (RFC 8259: invalid UTF-8 rejected; a duplicate key rejected too) into a
// small DOM the tests read. Throws std::runtime_error on malformed input.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tc::test {

struct JsonValue {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<JsonValue> a;
  std::map<std::string, JsonValue> o;

  bool has(const std::string& k) const { return type == kObject && o.count(k); }
  const JsonValue& operator[](const std::string& k) const {
    auto it = o.find(k);
    if (type != kObject || it == o.end()) throw std::runtime_error("no key " + k);
    return it->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : t_(text) {}
  JsonValue parse() {
    using nlohmann::json;
    std::vector<std::set<std::string>> keys;  // of each object being read
    std::string duplicate;
    auto check = [&](int, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) keys.emplace_back();
      if (event == json::parse_event_t::object_end) keys.pop_back();
      if (event == json::parse_event_t::key && !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
      return true;
    };
    json j;
    try {
      j = json::parse(t_.begin(), t_.end(), check);
    } catch (const json::exception& e) {
      throw std::runtime_error(std::string("JSON: ") + e.what());
    }
    if (!duplicate.empty()) throw std::runtime_error("JSON: duplicate key " + duplicate);
    return from(j);
  }

 private:
  static JsonValue from(const nlohmann::json& j) {
    JsonValue v;
    if (j.is_boolean()) {
      v.type = JsonValue::kBool;
      v.b = j.get<bool>();
    } else if (j.is_number()) {
      v.type = JsonValue::kNumber;
      v.n = j.get<double>();
    } else if (j.is_string()) {
      v.type = JsonValue::kString;
      v.s = j.get<std::string>();
    } else if (j.is_array()) {
      v.type = JsonValue::kArray;
      for (const auto& e : j) v.a.push_back(from(e));
    } else if (j.is_object()) {
      v.type = JsonValue::kObject;
      for (const auto& [k, e] : j.items()) v.o[k] = from(e);
    }
    return v;
  }
  std::string_view t_;
};

inline JsonValue parse_json(std::string_view text) { return JsonParser(text).parse(); }

}  // namespace tc::test
