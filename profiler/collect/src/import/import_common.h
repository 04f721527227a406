// What the framework importers (torch_trace.cpp, jax_log.cpp, xla_log.cpp)
// share: reading a log file up to a size limit, walking its whole lines,
// listing a directory's logs, the locations rows, and the one
// framework_imports row. Private to tc_collect.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "json.h"
#include "tc/collect/import.h"

namespace tc::collect::import_common {

inline constexpr int64_t kMaxTs = int64_t{1} << 62;

// A decimal of at most 18 digits; nullopt for anything else.
std::optional<int64_t> to_int(std::string_view s);

// A time the hooks write: positive, below kMaxTs.
inline bool valid_ts(std::optional<int64_t> t) { return t && *t > 0 && *t < kMaxTs; }

// The regular file's text, at most `cap` bytes; *cut: it was larger. nullopt
// when it cannot be read (*why says why), or when it was last modified
// before min_mtime_unix_ns (an earlier run's; *why is left empty).
std::optional<std::string> read_capped(const std::string& path, uint64_t cap, bool* cut, std::string* why,
                                       uint64_t min_mtime_unix_ns = 0);

// The note for a file read only up to `cap` bytes.
std::string larger_than_note(const std::string& path, uint64_t cap);

// A last line without its newline was cut while it was written: drops it from
// `text`. Returns whether there was one; *partial (if given): that line.
bool drop_cut_line(std::string_view& text, std::string_view* partial = nullptr);

// The lines of `text` that end in '\n', in order, without it.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (at_ >= text_.size()) return false;
    size_t nl = text_.find('\n', at_);
    if (nl == std::string_view::npos) return false;  // a cut last line
    line = text_.substr(at_, nl - at_);
    at_ = nl + 1;
    return true;
  }
  // Whether all of the text was read (false: a last line without its newline is left).
  bool done() const { return at_ >= text_.size(); }

 private:
  std::string_view text_;
  size_t at_ = 0;
};

// A JSON line of a hook's log: an object with a string "k". Counts it in
// s.records, or in s.malformed (then nullopt).
std::optional<json::Value> parse_record(std::string_view line, ImportSummary& s);

// The names in `dir` ending in ".log" and starting with `prefix` (never with
// '.'), sorted.
std::vector<std::string> list_logs(const std::string& dir, std::string_view prefix);

// "jax-123.log" with prefix "jax-": 123; 0 when the name holds no pid.
uint32_t pid_in_name(std::string_view name, std::string_view prefix);

// More than `max_files` logs: keeps the first, with a note ("N <what>: read the first M").
template <typename T>
void keep_first(std::vector<T>& logs, size_t max_files, const char* what, ImportSummary& s);

// The first note stays.
inline void note(ImportSummary& s, const std::string& n) {
  if (s.note.empty()) s.note = n;
}

// The locations rows an import writes: one per (name, file, function, line), ids from t.first_location_id.
class Locations {
 public:
  StatusOr<uint32_t> get(ImportTarget& t, ImportSummary& s, const std::string& name, const std::string& file, const std::string& function,
                         int64_t line);

 private:
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, uint32_t> ids_;
};

// The framework_imports row of one import (s.framework, from `source`).
Status write_summary(ImportTarget& t, const ImportSummary& s, const std::string& source);

template <typename T>
void keep_first(std::vector<T>& logs, size_t max_files, const char* what, ImportSummary& s) {
  if (logs.size() <= max_files) return;
  note(s, std::to_string(logs.size()) + " " + what + ": read the first " + std::to_string(max_files));
  logs.resize(max_files);
}

}  // namespace tc::collect::import_common
