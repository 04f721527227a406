// JSON through simdjson (its DOM parser), turned into json::Value with the
// checks simdjson leaves to its caller: the depth limit and duplicate keys.
#include "json.h"

#include <simdjson.h>

#include <cmath>

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

// simdjson refuses what Python's json module may write and tc's importers
// have always read: NaN, Infinity and -Infinity (floats with no JSON form),
// integers beyond 64 bits, and lone UTF-16 surrogates (\udcff, from a file
// name Python decoded with surrogateescape). A text simdjson refused is read
// again with them rewritten: the non-numbers into this string, read back as
// a number that is not one; long integers as decimals (a double); lone
// surrogates as U+FFFD.
constexpr std::string_view kNotANumber = "\"\\u0000NaN\"";
constexpr std::string_view kNotANumberValue = std::string_view("\0NaN", 4);

int32_t hex4(std::string_view text, size_t at) {
  if (at + 4 > text.size()) return -1;
  int32_t v = 0;
  for (size_t k = at; k < at + 4; ++k) {
    const char h = text[k];
    v <<= 4;
    if (h >= '0' && h <= '9') v |= h - '0';
    else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
    else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
    else return -1;
  }
  return v;
}

bool digit(char c) { return c >= '0' && c <= '9'; }

// A string from its opening quote at text[i]: copied to `out`, lone surrogates replaced. Returns the index after it.
size_t copy_string(std::string_view text, size_t i, std::string& out, bool& changed) {
  out += text[i++];
  while (i < text.size() && text[i] != '"') {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    const int32_t cp = text[i + 1] == 'u' ? hex4(text, i + 2) : -1;
    if (cp < 0xd800 || cp >= 0xe000) {
      out += text.substr(i, 2);
      i += 2;
      continue;
    }
    const int32_t lo = cp < 0xdc00 && text.substr(i + 6, 2) == "\\u" ? hex4(text, i + 8) : -1;
    if (lo >= 0xdc00 && lo < 0xe000) {
      out += text.substr(i, 12);  // a pair
      i += 12;
    } else {
      out += "\\ufffd";
      i += 6;
      changed = true;
    }
  }
  if (i < text.size()) out += text[i++];
  return i;
}

// `text` rewritten as above; nullopt when there was nothing to rewrite.
std::optional<std::string> python_compatible(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool changed = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      i = copy_string(text, i, out, changed);
      continue;
    }
    size_t word = 0;
    for (std::string_view w : {"-Infinity", "Infinity", "NaN"}) {
      if (text.substr(i, w.size()) == w) word = w.size();
    }
    if (word > 0) {
      out += kNotANumber;
      i += word;
      changed = true;
      continue;
    }
    if (c == '-' || digit(c)) {
      size_t j = i + 1;
      while (j < text.size() && digit(text[j])) ++j;
      out += text.substr(i, j - i);
      const bool decimal = j < text.size() && (text[j] == '.' || text[j] == 'e' || text[j] == 'E');
      if (!decimal && j - i - (c == '-' ? 1 : 0) > 19) {
        out += ".0";
        changed = true;
      }
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  if (!changed) return std::nullopt;
  return out;
}

class Converter {
 public:
  // rewritten: the text is python_compatible()'s, so its NaN string stands for a number.
  Converter(Limits limits, bool rewritten) : limits_(limits), rewritten_(rewritten) {}

  bool convert(simdjson::dom::element e, Value& v, size_t depth) {
    if (depth > limits_.max_depth) return fail("nested too deeply");
    if (++values_ > limits_.max_values) return fail("too many values");
    switch (e.type()) {
      case simdjson::dom::element_type::ARRAY: {
        v.type = Value::kArray;
        simdjson::dom::array array;
        if (e.get_array().get(array) != simdjson::SUCCESS) return fail("not an array");
        for (simdjson::dom::element x : array) {
          v.a.emplace_back();
          if (!convert(x, v.a.back(), depth + 1)) return false;
        }
        return true;
      }
      case simdjson::dom::element_type::OBJECT: {
        v.type = Value::kObject;
        simdjson::dom::object object;
        if (e.get_object().get(object) != simdjson::SUCCESS) return fail("not an object");
        for (simdjson::dom::key_value_pair kv : object) {
          Value member;
          if (!convert(kv.value, member, depth + 1)) return false;
          if (!v.o.emplace(std::string(kv.key), std::move(member)).second) return fail("duplicate key");
        }
        return true;
      }
      case simdjson::dom::element_type::INT64:
        v.type = Value::kNumber;
        v.integral = true;
        v.i = e.get_int64().value_unsafe();
        v.n = static_cast<double>(v.i);
        return true;
      case simdjson::dom::element_type::UINT64:  // above INT64_MAX: not an int64
        v.type = Value::kNumber;
        v.n = static_cast<double>(e.get_uint64().value_unsafe());
        return true;
      case simdjson::dom::element_type::DOUBLE:
        v.type = Value::kNumber;
        v.n = e.get_double().value_unsafe();
        return true;
      case simdjson::dom::element_type::STRING: {
        std::string_view s = e.get_string().value_unsafe();
        if (rewritten_ && s == kNotANumberValue) {  // a program's own "\u0000NaN" stays a string
          v.type = Value::kNumber;
          v.n = std::nan("");
          return true;
        }
        v.type = Value::kString;
        v.s = std::string(s);
        return true;
      }
      case simdjson::dom::element_type::BOOL:
        v.type = Value::kBool;
        v.b = e.get_bool().value_unsafe();
        return true;
      case simdjson::dom::element_type::NULL_VALUE:
        return true;
    }
    return fail("unknown element");
  }

  std::string error;

 private:
  bool fail(const char* why) {
    if (error.empty()) error = why;
    return false;
  }
  Limits limits_;
  bool rewritten_;
  size_t values_ = 0;
};

}  // namespace

std::optional<Value> parse(std::string_view text, std::string* error, Limits limits) {
  // One parser per thread: its buffers are reused from one line to the next.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  auto code = parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root);
  std::optional<std::string> rewritten;
  if (code != simdjson::SUCCESS && (rewritten = python_compatible(text))) {
    code = parser.parse(rewritten->data(), rewritten->size(), true).get(root);
  }
  if (code != simdjson::SUCCESS) {
    if (error) *error = simdjson::error_message(code);
    return std::nullopt;
  }
  Converter c(limits, rewritten.has_value() && code == simdjson::SUCCESS);
  Value v;
  if (!c.convert(root, v, 0)) {
    if (error) *error = c.error;
    return std::nullopt;
  }
  return v;
}

}  // namespace tc::import::json
