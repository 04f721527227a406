// What the framework importers (torch_trace.cpp, jax_log.cpp, xla_log.cpp)
// share: reading a log file as a bounded stream of lines, a hook's JSON-line
// records, the per-run caps and checks, listing a directory's logs, the locations rows,
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
#include "tc/store/schema.h"

namespace tc::import::import_common {

inline constexpr int64_t kMaxTs = int64_t{1} << 62;

// A decimal of at most 18 digits; nullopt for anything else.
std::optional<int64_t> to_int(std::string_view s);

// A time the hooks write: positive, below kMaxTs.
inline bool valid_ts(std::optional<int64_t> t) { return t && *t > 0 && *t < kMaxTs; }

// A byte count the hooks write (memory, a request that failed): 0 .. 2^56.
inline constexpr int64_t kMaxBytes = int64_t{1} << 56;
inline bool valid_bytes(std::optional<int64_t> b) { return b && *b >= 0 && *b <= kMaxBytes; }
// A JSON value that is such a byte count (an array's element).
inline bool valid_bytes(const json::Value& v) { return v.type == json::Value::kNumber && v.integral && valid_bytes(v.i); }
// A batch size the hooks write: 0 (none) .. 2^31 - 1.
inline bool valid_batch(std::optional<int64_t> b) { return b && *b >= 0 && *b <= INT32_MAX; }

// A log file as a stream of lines, read a block at a time: at most one
// line (max_line_bytes) and one block are held, whatever the file's size.
// Stops at max_file_bytes, and once request_stop() was called.
class LineReader {
 public:
  // Opens the regular file `path`. nullopt when it cannot be read (*why says
  // why), or when it was last modified before min_mtime_unix_ns (an earlier
  // run's; *why is left empty).
  static std::optional<LineReader> open(const std::string& path, const ImportLimits& limits, std::string* why,
                                        uint64_t min_mtime_unix_ns = 0);
  LineReader(LineReader&& o) noexcept;
  LineReader& operator=(LineReader&&) = delete;
  LineReader(const LineReader&) = delete;
  ~LineReader();

  enum Next { kLine, kTooLong, kEnd };
  // kLine: the next whole line, without its '\n' (valid until the next call).
  // kTooLong: a line longer than max_line_bytes, skipped to its end unheld.
  // kEnd: no more whole lines.
  Next next(std::string_view& line);
  // After kEnd: the file ended inside a line (written while it was cut, or
  // read only up to max_file_bytes).
  bool cut() const { return cut_; }
  // After kEnd: the start of that cut line (at most max_line_bytes).
  std::string_view partial() const { return partial_; }
  // The file was larger than max_file_bytes (read up to there).
  bool larger() const { return larger_; }
  // The first byte of the line kLine or kTooLong gave (0: it was empty).
  char first() const { return first_; }

 private:
  LineReader(int fd, const ImportLimits& limits);
  bool fill();  // reads one more block; false at the end (or the limit)
  int fd_ = -1;
  size_t max_line_;
  uint64_t left_;  // bytes that may still be read
  std::string buf_;
  size_t begin_ = 0, end_ = 0, scanned_ = 0;
  bool eof_ = false, cut_ = false, larger_ = false;
  char first_ = 0;
  std::string_view partial_;
};

// The note for a file read only up to `cap` bytes.
std::string larger_than_note(const std::string& path, uint64_t cap);

// "1 MiB", "512 KiB", "100 bytes".
std::string size_words(uint64_t bytes);

// The next line of `r` counted in s.lines; a line over the limit is counted
// in lines, malformed and too_long and skipped. false at the end.
bool next_line(LineReader& r, ImportSummary& s, std::string_view& line);

// A JSON line of a hook's log: an object with a string "k". Counts it in
// s.records, or in s.malformed (then nullopt).
std::optional<json::Value> parse_record(std::string_view line, ImportSummary& s);

// The records of a hook's JSON-lines log, in order: each whole line that is
// an object with a string "k" goes to each(record, k) (counted in records),
// any other non-empty line is counted as malformed. A last line without its
// newline was cut while it was written: it is dropped, and the summary says
// truncated (as it does for a file read only in part).
template <typename Each>
void for_each_record(LineReader& r, ImportSummary& s, Each&& each) {
  for (std::string_view line; next_line(r, s, line);) {
    if (line.empty()) continue;
    if (auto v = parse_record(line, s)) each(*v, *v->str("k"));
  }
  if (r.cut()) s.truncated = true;
}

// `text` cut to at most kMaxText bytes (not inside a UTF-8 sequence).
std::string bounded(std::string_view text, size_t max = kMaxText);

// Input shapes as the Python hook writes them: {"name": [d0, d1, ...], ...}.
using InputShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;
inline constexpr size_t kMaxInputs = 64;  // inputs of one record, and dims of one input, at most
// [d0, d1, ...]: at most kMaxInputs sizes in 0..kMaxTs; false otherwise.
bool read_shape(const json::Value* shape, std::vector<int64_t>& out);
// An object of named shapes, names not empty (bounded to 256 bytes); false otherwise.
bool read_shapes(const json::Value& inputs, InputShapes& out);

// The names in `dir` ending in `suffix` and starting with `prefix` (never with
// '.'), sorted. *why: why a directory that exists could not be read ("" when
// it was read, or does not exist).
std::vector<std::string> list_logs(const std::string& dir, std::string_view prefix, std::string* why = nullptr, std::string_view suffix = ".log");

// "jax-123.log" with prefix "jax-": 123; 0 when the name holds no pid.
uint32_t pid_in_name(std::string_view name, std::string_view prefix, std::string_view suffix = ".log");

// The first note stays.
inline void note(ImportSummary& s, const std::string& n) {
  if (s.note.empty()) s.note = n;
}

// The note column: what too_long and over_cap count, then s.note.
std::string full_note(const ImportSummary& s);

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
// parses each log's lines and writes its rows; import_dir() drives it.
class Importer {
 public:
  // `recent_only`: logs last written before t.min_mtime_unix_ns are skipped
  // (a directory the user chose keeps earlier runs' logs).
  Importer(ImportTarget& t, const ImportLimits& l, std::string framework, bool recent_only = false);
  virtual ~Importer() = default;
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  // Reads one log, streamed (ImportLimits), and hands it to parse().
  void read_file(const std::string& path, uint32_t pid_from_name);
  // After the logs: anything else of the directory (none by default).
  virtual void read_extra(const std::string& dir) { (void)dir; }
  // The rows, then the framework_imports row (source: the directory).
  Status write(const std::string& source);
  ImportSummary& summary() { return s_; }
  void note(const std::string& n) { import_common::note(s_, n); }
  bool has_store() const { return t_.writer != nullptr; }
  // Whether one more file fits the per-run cap (counted when it does; over_cap and a note when not).
  bool take_file(const std::string& path, const char* what);

 protected:
  // One opened log (`r`): its lines, each once.
  virtual void parse(LineReader& r, uint32_t pid_from_name) = 0;
  virtual Status write_rows() = 0;
  // Opens a file of the directory (a note when it cannot be read); counts it.
  std::optional<LineReader> open(const std::string& path, bool recent_only);
  // The thread a process's rows belong to (t.utid_for, asked once per pid).
  int64_t utid(uint32_t pid);
  StatusOr<uint32_t> location(const std::string& name, const std::string& file, const std::string& function, int64_t line) {
    return locations_.get(t_, s_, name, file, function, line);
  }
  // Whether a process's records may be imported: a pid in 1..2^22 that
  // t.pid_in_run accepts (else false, and `records` more malformed), within
  // the per-run cap of processes (else false, and `records` more over_cap).
  bool process(uint32_t pid, int64_t records = 1);
  // After one hook log: whether its process `pid` (0: the log named none,
  // then a note "LOG names no process") may be imported, its records being
  // those counted since `records_before` (process(); a refused pid's are
  // taken out of records again).
  bool take_process(uint32_t pid, int64_t records_before, const char* log);
  uint8_t process_state(uint32_t pid);  // ImportTarget::Used's, uncounted
  // Whether [ts, ts + dur] lies in the run ([t.start_ts - slack, t.end_ts + slack]; no end when t.end_ts is 0).
  bool in_run(int64_t ts, int64_t dur = 0, int64_t slack = 0) const;
  // Whether one more row of `table` fits the per-run cap (counted when it
  // does; ++over_cap and a note when not).
  bool room(const store::TableDecl& table);
  // Whether `kept` rows of `table` held in memory leave room for one more
  // (the per-run cap less what is written); ++over_cap when not.
  bool keep(const store::TableDecl& table, size_t kept);
  // ++over_cap and the cap's note; false.
  bool rows_over_cap(const store::TableDecl& table);
  // An explicit_evaluations row of this framework (`what`: its words, or
  // NULL), counted in the summary; nothing when over the cap.
  struct Evaluation {
    int64_t utid = 0, ts = 0, dur = 0, step = 0;
    std::string_view kind;  // item, to_host, print, graph_break
    uint32_t location = 0;
    int64_t ops = 0, graph = 0;  // the graph it cut (0: unknown)
    std::optional<std::string_view> what;
    std::string_view code, broke_at;  // torch.compile: the registry code and the library frame it broke in; "" for none (NULL)
  };
  Status write_evaluation(const Evaluation& e);
  // A compilation_inputs row: `input`'s dimension `dim` went from old_value
  // to new_value; nothing when over the cap.
  // `counted`: room() was asked already.
  Status write_input(int64_t utid, int64_t graph, const std::string& input, int64_t dim, int64_t old_value, int64_t new_value,
                     bool dynamic = false, bool counted = false);

  // step_inputs rows: each dimension of `shape`, `input`'s size in step
  // `step`; as many as the cap leaves room for.
  Status write_step_input(int64_t utid, int64_t step, const std::string& input, const std::vector<int64_t>& shape);

  // A counters row: counter `name`'s sample at ts (memory.live_bytes,
  // memory.capacity_bytes), its location's function saying whose count it is
  // ('jax', 'torch', 'torch.cuda', 'torch_xla': tc-analyze's memory source);
  // nothing when over the cap.
  Status write_counter(int64_t utid, int64_t ts, const std::string& name, const std::string& whose, double value);

  ImportTarget& t_;
  const ImportLimits& limits_;
  ImportSummary s_;

 private:
  bool recent_only_;
  Locations locations_;
  std::map<uint32_t, int64_t> utids_;
};

// The import of a directory: its logs named PREFIX*.log, each read in name
// order (at most the per-run cap of files: `what` names them in the note),
// then read_extra(), then the rows. A directory without such logs writes
// nothing; one that cannot be read writes the framework_imports row with
// why. An error only when the store fails (or there is none: `function`
// names the caller in that message).
StatusOr<ImportSummary> import_dir(Importer& im, const char* function, const std::string& dir, std::string_view prefix, const char* what);

}  // namespace tc::import::import_common
