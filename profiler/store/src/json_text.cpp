#include "tc/store/json_text.h"

#include <cstdio>

namespace tc::store {

void append_json_escaped(std::string& out, std::string_view s) {
  for (unsigned char c : s) {
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
