#include "json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace tc::import::json {

const Value* Value::get(std::string_view key) const {
  if (type != kObject) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->second;
}

std::optional<std::string_view> Value::str(std::string_view key) const {
  const Value* v = get(key);
  if (v == nullptr || v->type != kString) return std::nullopt;
  return std::string_view(v->s);
}

std::optional<int64_t> Value::int64(std::string_view key) const {
  const Value* v = get(key);
  if (v == nullptr || v->type != kNumber || !v->integral) return std::nullopt;
  return v->i;
}

std::optional<double> Value::number(std::string_view key) const {
  const Value* v = get(key);
  if (v == nullptr || v->type != kNumber) return std::nullopt;
  return v->n;
}

namespace {

class Parser {
 public:
  Parser(std::string_view t, Limits l) : t_(t), limits_(l) {}

  bool parse(Value& out) {
    if (!value(out, 0)) return false;
    space();
    if (i_ != t_.size()) return fail("trailing characters");
    return true;
  }
  std::string error;

 private:
  bool fail(const char* why) {
    if (error.empty()) error = std::string(why) + " at offset " + std::to_string(i_);
    return false;
  }
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
  }
  bool eat(std::string_view lit) {
    if (t_.substr(i_, lit.size()) != lit) return false;
    i_ += lit.size();
    return true;
  }

  bool value(Value& v, size_t depth) {
    if (depth > limits_.max_depth) return fail("nested too deeply");
    space();
    if (i_ >= t_.size()) return fail("unexpected end");
    char c = t_[i_];
    if (c == '{') {
      v.type = Value::kObject;
      ++i_;
      space();
      if (eat("}")) return true;
      for (;;) {
        space();
        if (i_ >= t_.size() || t_[i_] != '"') return fail("expected a key");
        std::string k;
        if (!string(k)) return false;
        space();
        if (!eat(":")) return fail("expected ':'");
        Value member;
        if (!value(member, depth + 1)) return false;
        if (!v.o.emplace(std::move(k), std::move(member)).second) return fail("duplicate key");
        space();
        if (eat("}")) return true;
        if (!eat(",")) return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.type = Value::kArray;
      ++i_;
      space();
      if (eat("]")) return true;
      for (;;) {
        v.a.emplace_back();
        if (!value(v.a.back(), depth + 1)) return false;
        space();
        if (eat("]")) return true;
        if (!eat(",")) return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.type = Value::kString;
      return string(v.s);
    }
    if (eat("true")) {
      v.type = Value::kBool;
      v.b = true;
      return true;
    }
    if (eat("false")) {
      v.type = Value::kBool;
      return true;
    }
    if (eat("null")) return true;
    // Python's json writes NaN and Infinity for floats that have no JSON form.
    if (eat("NaN") || eat("Infinity") || eat("-Infinity")) {
      v.type = Value::kNumber;
      v.n = std::nan("");
      return true;
    }
    return number(v);
  }

  bool number(Value& v) {
    size_t start = i_;
    bool integral = true;
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    if (i_ >= t_.size() || t_[i_] < '0' || t_[i_] > '9') return fail("expected a value");
    if (t_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
    }
    if (i_ < t_.size() && t_[i_] == '.') {
      integral = false;
      ++i_;
      if (i_ >= t_.size() || t_[i_] < '0' || t_[i_] > '9') return fail("expected a digit after '.'");
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      integral = false;
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (i_ >= t_.size() || t_[i_] < '0' || t_[i_] > '9') return fail("expected an exponent");
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
    }
    std::string text(t_.substr(start, i_ - start));
    v.type = Value::kNumber;
    v.n = std::strtod(text.c_str(), nullptr);
    if (integral) {
      errno = 0;
      long long x = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == 0) {
        v.integral = true;
        v.i = x;
      }
    }
    return true;
  }

  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool hex4(uint32_t& cp) {
    if (i_ + 4 > t_.size()) return fail("short \\u escape");
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      char h = t_[i_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= static_cast<uint32_t>(h - 'A' + 10);
      else return fail("bad \\u escape");
    }
    return true;
  }

  bool string(std::string& out) {
    ++i_;  // the opening quote
    for (;;) {
      if (i_ >= t_.size()) return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(t_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= t_.size()) return fail("unterminated escape");
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
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00 && t_.substr(i_, 2) == "\\u") {
            size_t back = i_;
            i_ += 2;
            uint32_t lo = 0;
            if (!hex4(lo)) return false;
            if (lo >= 0xdc00 && lo < 0xe000) {
              cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else {
              i_ = back;
              cp = 0xfffd;
            }
          } else if (cp >= 0xd800 && cp < 0xe000) {
            cp = 0xfffd;  // a lone surrogate
          }
          utf8(out, cp);
          break;
        }
        default: return fail("bad escape");
      }
    }
  }

  std::string_view t_;
  Limits limits_;
  size_t i_ = 0;
};

}  // namespace

std::optional<Value> parse(std::string_view text, std::string* error, Limits limits) {
  Parser p(text, limits);
  Value v;
  if (!p.parse(v)) {
    if (error) *error = p.error;
    return std::nullopt;
  }
  return v;
}

}  // namespace tc::import::json
