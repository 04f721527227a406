// A small JSON writer: objects and arrays built in order, strings escaped.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "tc/store/json_text.h"

namespace tc::analysis {

class Json {
 public:
  Json& begin_object() { return open('{'); }
  Json& end_object() { return close('}'); }
  Json& begin_array() { return open('['); }
  Json& end_array() { return close(']'); }
  Json& key(std::string_view k) {
    comma();
    string(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  Json& value(std::string_view s) {
    comma();
    string(s);
    return *this;
  }
  Json& value(const char* s) { return value(std::string_view(s)); }
  Json& value(int64_t v) {
    comma();
    out_ += std::to_string(v);
    return *this;
  }
  Json& value(int v) { return value(static_cast<int64_t>(v)); }
  Json& value(double v) {
    comma();
    if (!std::isfinite(v)) {
      out_ += "null";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.10g", v);
      out_ += buf;
    }
    return *this;
  }
  Json& value(bool v) {
    comma();
    out_ += v ? "true" : "false";
    return *this;
  }
  Json& null() {
    comma();
    out_ += "null";
    return *this;
  }
  // Inserts already-serialized JSON (e.g. a finding's evidence object).
  Json& raw(std::string_view json) {
    comma();
    out_ += json.empty() ? std::string_view("{}") : json;
    return *this;
  }
  template <typename T>
  Json& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

  static void escape(std::string& out, std::string_view s) { store::append_json_escaped(out, s); }

 private:
  Json& open(char c) {
    comma();
    out_ += c;
    first_ = true;
    return *this;
  }
  Json& close(char c) {
    out_ += c;
    first_ = false;
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_ && !out_.empty()) out_ += ',';
    first_ = false;
  }
  void string(std::string_view s) {
    out_ += '"';
    escape(out_, s);
    out_ += '"';
  }
  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace tc::analysis
