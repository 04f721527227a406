// What the framework importers (torch_trace.cpp, jax_log.cpp, xla_log.cpp)
// share: reading a log file up to a size limit, walking its whole lines and
// a hook's JSON-line records, listing a directory's logs, the locations rows,
// the one framework_imports row, and the import of a directory (Importer,
// import_dir). Private to tc_import.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "json.h"
#include "tc/import/import.h"

namespace tc::import::import_common {

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

// The lines of `text` that end in '\n', in order, without it; none more once
// request_stop() was called.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (at_ >= text_.size() || stop_requested()) return false;
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

// The records of a hook's JSON-lines log, in order: each whole line that is
// an object with a string "k" goes to each(record, k) (counted in records),
// any other non-empty line is counted as malformed. A last line without its
// newline was cut while it was written: it is dropped, and the summary says
// truncated (as it does for a file read only in part: `cut`).
template <typename Each>
void for_each_record(std::string_view text, bool cut, ImportSummary& s, Each&& each) {
  if (drop_cut_line(text)) cut = true;
  if (cut) s.truncated = true;
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    ++s.lines;
    if (line.empty()) continue;
    if (auto v = parse_record(line, s)) each(*v, *v->str("k"));
  }
}

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

// One import: what every importer keeps and does the same way. A subclass
// parses each log's text and writes its rows; import_dir() drives it.
class Importer {
 public:
  // `recent_only`: logs last written before t.min_mtime_unix_ns are skipped
  // (a directory the user chose keeps earlier runs' logs).
  Importer(ImportTarget& t, const ImportLimits& l, std::string framework, bool recent_only = false);
  virtual ~Importer() = default;
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  // Reads one log (at most limits.max_file_bytes) and hands it to parse().
  void read_file(const std::string& path, uint32_t pid_from_name);
  // After the logs: anything else of the directory (none by default).
  virtual void read_extra(const std::string& dir) { (void)dir; }
  // The rows, then the framework_imports row (source: the directory).
  Status write(const std::string& source);
  ImportSummary& summary() { return s_; }
  void note(const std::string& n) { import_common::note(s_, n); }
  bool has_store() const { return t_.writer != nullptr; }
  size_t max_files() const { return limits_.max_files; }

 protected:
  // `cut`: the file was read only up to the limit.
  virtual void parse(std::string_view text, bool cut, uint32_t pid_from_name) = 0;
  virtual Status write_rows() = 0;
  // The thread a process's rows belong to (t.utid_for, asked once per pid).
  int64_t utid(uint32_t pid);
  StatusOr<uint32_t> location(const std::string& name, const std::string& file, const std::string& function, int64_t line) {
    return locations_.get(t_, s_, name, file, function, line);
  }
  // An explicit_evaluations row of this framework (`what`: its words, or
  // NULL), counted in the summary.
  struct Evaluation {
    int64_t utid = 0, ts = 0, dur = 0, step = 0;
    std::string_view kind;  // item, to_host, print, graph_break
    uint32_t location = 0;
    int64_t ops = 0, graph = 0;  // the graph it cut (0: unknown)
    std::optional<std::string_view> what;
  };
  Status write_evaluation(const Evaluation& e);
  // A compilation_inputs row: `input`'s dimension `dim` went from old_value to new_value.
  Status write_input(int64_t utid, int64_t graph, const std::string& input, int64_t dim, int64_t old_value, int64_t new_value,
                     bool dynamic = false);

  ImportTarget& t_;
  const ImportLimits& limits_;
  ImportSummary s_;

 private:
  bool recent_only_;
  Locations locations_;
  std::map<uint32_t, int64_t> utids_;
};

// The import of a directory: its logs named PREFIX*.log (`what` names them in
// the note when there are more than limits.max_files), each read in name
// order, then read_extra(), then the rows. A directory without such logs
// writes nothing. An error only when the store fails (or there is none:
// `function` names the caller in that message).
StatusOr<ImportSummary> import_dir(Importer& im, const char* function, const std::string& dir, std::string_view prefix, const char* what);

template <typename T>
void keep_first(std::vector<T>& logs, size_t max_files, const char* what, ImportSummary& s) {
  if (logs.size() <= max_files) return;
  note(s, std::to_string(logs.size()) + " " + what + ": read the first " + std::to_string(max_files));
  logs.resize(max_files);
}

}  // namespace tc::import::import_common
