// Test support: a strict JSON parser (RFC 8259) into a small DOM, to check
// what the tools print. Throws std::runtime_error on malformed input,
// invalid UTF-8 included.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
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
    JsonValue v = value();
    space();
    if (i_ != t_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw std::runtime_error("JSON: " + why + " at offset " + std::to_string(i_)); }
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
  }
  bool eat(std::string_view lit) {
    if (t_.substr(i_, lit.size()) == lit) {
      i_ += lit.size();
      return true;
    }
    return false;
  }
  JsonValue value() {
    space();
    if (i_ >= t_.size()) fail("unexpected end");
    JsonValue v;
    char c = t_[i_];
    if (c == '{') {
      v.type = JsonValue::kObject;
      ++i_;
      space();
      if (eat("}")) return v;
      for (;;) {
        space();
        if (i_ >= t_.size() || t_[i_] != '"') fail("expected a key");
        std::string k = string();
        space();
        if (!eat(":")) fail("expected ':'");
        if (v.o.count(k)) fail("duplicate key " + k);
        v.o[k] = value();
        space();
        if (eat("}")) return v;
        if (!eat(",")) fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.type = JsonValue::kArray;
      ++i_;
      space();
      if (eat("]")) return v;
      for (;;) {
        v.a.push_back(value());
        space();
        if (eat("]")) return v;
        if (!eat(",")) fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.type = JsonValue::kString;
      v.s = string();
      return v;
    }
    if (eat("true")) {
      v.type = JsonValue::kBool;
      v.b = true;
      return v;
    }
    if (eat("false")) {
      v.type = JsonValue::kBool;
      return v;
    }
    if (eat("null")) return v;
    size_t start = i_;
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    if (i_ >= t_.size() || !isdigit(static_cast<unsigned char>(t_[i_]))) fail("bad value");
    if (t_[i_] == '0' && i_ + 1 < t_.size() && isdigit(static_cast<unsigned char>(t_[i_ + 1]))) fail("leading zero");
    while (i_ < t_.size() && isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (i_ >= t_.size() || !isdigit(static_cast<unsigned char>(t_[i_]))) fail("bad fraction");
      while (i_ < t_.size() && isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (i_ >= t_.size() || !isdigit(static_cast<unsigned char>(t_[i_]))) fail("bad exponent");
      while (i_ < t_.size() && isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
    }
    v.type = JsonValue::kNumber;
    v.n = std::strtod(std::string(t_.substr(start, i_ - start)).c_str(), nullptr);
    return v;
  }
  std::string string() {
    ++i_;  // opening quote
    std::string out;
    while (i_ < t_.size() && t_[i_] != '"') {
      unsigned char c = static_cast<unsigned char>(t_[i_++]);
      if (c < 0x20) fail("control character in a string");
      if (c >= 0x80) {
        // RFC 8259 section 8.1: JSON text is UTF-8.
        size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (n == 0 || i_ - 1 + n > t_.size()) fail("invalid UTF-8 in a string");
        unsigned char c1 = static_cast<unsigned char>(t_[i_]);
        unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        if (c1 < lo || c1 > hi) fail("invalid UTF-8 in a string");
        for (size_t k = 1; k < n; ++k) {
          unsigned char b = static_cast<unsigned char>(t_[i_ - 1 + k]);
          if (b < 0x80 || b > 0xBF) fail("invalid UTF-8 in a string");
        }
        out.append(t_.substr(i_ - 1, n));
        i_ += n - 1;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= t_.size()) fail("bad escape");
      char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > t_.size()) fail("bad \\u escape");
          unsigned code = static_cast<unsigned>(std::stoul(std::string(t_.substr(i_, 4)), nullptr, 16));
          i_ += 4;
          if (code < 0x80) out += static_cast<char>(code);
          else out += '?';
          break;
        }
        default: fail("bad escape");
      }
    }
    if (i_ >= t_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  std::string_view t_;
  size_t i_ = 0;
};

inline JsonValue parse_json(std::string_view text) { return JsonParser(text).parse(); }

}  // namespace tc::test
