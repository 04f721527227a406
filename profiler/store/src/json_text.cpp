#include "tc/store/json_text.h"

#include <cstdio>

namespace tc::store {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one; *bad
// is then the length of the maximal invalid subpart to replace by one U+FFFD
// (the Unicode standard's "substitution of maximal subparts").
size_t utf8_sequence(std::string_view s, size_t i, size_t* bad) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  *bad = 1;
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;         // no overlong forms
  else if (c == 0xED) n = 3, hi = 0x9F;         // no surrogates
  else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c == 0xF4) n = 4, hi = 0x8F;         // nothing above U+10FFFF
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else return 0;                                // 0x80-0xC1, 0xF5-0xFF never start one
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    unsigned char b = byte(i + k);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
    *bad = k + 1;
  }
  return n;
}

}  // namespace

size_t append_json_escaped(std::string& out, std::string_view s) {
  size_t replaced = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t bad = 0, n = utf8_sequence(s, i, &bad);
      if (n == 0) {
        out += kReplacement;
        ++replaced;
        i += bad;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return replaced;
}

std::string valid_utf8(std::string_view s, size_t* replaced) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t bad = 0, n = utf8_sequence(s, i, &bad);
    if (n == 0) {
      out += kReplacement;
      if (replaced) ++*replaced;
      i += bad;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string json_string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    out += i ? ",\"" : "\"";
    append_json_escaped(out, items[i]);
    out += '"';
  }
  return out + "]";
}

std::vector<std::string> parse_json_string_array(std::string_view json) {
  auto hex = [](char h) { return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1; };
  std::vector<std::string> out;
  size_t i = 0;
  while ((i = json.find('"', i)) != std::string_view::npos) {
    std::string s;
    for (++i; i < json.size() && json[i] != '"'; ++i) {
      if (json[i] != '\\' || i + 1 >= json.size()) {
        s += json[i];
        continue;
      }
      char e = json[++i];
      if (e == 'n') s += '\n';
      else if (e == 't') s += '\t';
      else if (e == 'r') s += '\r';
      else if (e == 'u' && i + 4 < json.size()) {
        int v = 0;
        for (int k = 1; k <= 4; ++k) v = v * 16 + (hex(json[i + k]) < 0 ? 0 : hex(json[i + k]));
        s += v < 0x80 ? static_cast<char>(v) : '?';
        i += 4;
      } else s += e;
    }
    out.push_back(std::move(s));
    ++i;
  }
  return out;
}

}  // namespace tc::store
