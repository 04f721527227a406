// See import_common.h.
#include "import_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "tc/store/schema.h"
#include "tc/store/writer.h"

namespace tc::import::import_common {

std::optional<int64_t> to_int(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

namespace {
constexpr size_t kBlock = 256 << 10;  // bytes read at a time
constexpr uint32_t kMaxPid = 1u << 22;  // the kernel's PID_MAX_LIMIT
}  // namespace

std::optional<LineReader> LineReader::open(const std::string& path, const ImportLimits& limits, std::string* why,
                                           uint64_t min_mtime_unix_ns) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    *why = "cannot read " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = path + " is not a regular file";
    return std::nullopt;
  }
  const uint64_t mtime = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec);
  if (mtime < min_mtime_unix_ns) {
    ::close(fd);
    why->clear();
    return std::nullopt;  // an earlier run's
  }
  LineReader r(fd, limits);
  r.larger_ = static_cast<uint64_t>(std::max<off_t>(st.st_size, 0)) > limits.max_file_bytes;
  return r;
}

LineReader::LineReader(int fd, const ImportLimits& limits)
    : fd_(fd), max_line_(std::max<size_t>(limits.max_line_bytes, 1)), left_(limits.max_file_bytes) {}

LineReader::LineReader(LineReader&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), max_line_(o.max_line_), left_(o.left_), buf_(std::move(o.buf_)), begin_(o.begin_), end_(o.end_),
      scanned_(o.scanned_), eof_(o.eof_), cut_(o.cut_), larger_(o.larger_) {}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep only the line at hand
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  const size_t want = static_cast<size_t>(std::min<uint64_t>(kBlock, left_));
  if (buf_.size() < end_ + want) buf_.resize(end_ + want);
  ssize_t n = 0;
  if (want > 0) {
    do n = ::read(fd_, buf_.data() + end_, want); while (n < 0 && errno == EINTR);
  }
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  end_ += static_cast<size_t>(n);
  left_ -= static_cast<uint64_t>(n);
  return true;
}

LineReader::Next LineReader::next(std::string_view& line) {
  bool skipping = false;  // inside a line over the limit: its bytes are dropped as they come
  for (;;) {
    if (stop_requested()) return kEnd;
    const char* at = static_cast<const char*>(std::memchr(buf_.data() + scanned_, '\n', end_ - scanned_));
    if (at != nullptr) {
      const size_t nl = static_cast<size_t>(at - buf_.data());
      line = std::string_view(buf_.data() + begin_, nl - begin_);
      if (!skipping) first_ = line.empty() ? 0 : line.front();
      begin_ = scanned_ = nl + 1;
      if (skipping || line.size() > max_line_) return kTooLong;
      return kLine;
    }
    scanned_ = end_;
    if (end_ - begin_ > max_line_) {
      if (!skipping) first_ = buf_[begin_];
      skipping = true;
      begin_ = scanned_ = end_ = 0;
    }
    if (!fill()) break;
  }
  if (end_ > begin_ || skipping) {
    cut_ = true;
    partial_ = skipping ? std::string_view() : std::string_view(buf_.data() + begin_, end_ - begin_);
    begin_ = scanned_ = end_;
  }
  if (larger_) cut_ = true;
  return kEnd;
}

std::string size_words(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string larger_than_note(const std::string& path, uint64_t cap) {
  return path + " is larger than " + size_words(cap) + ": read up to there";
}

bool next_line(LineReader& r, ImportSummary& s, std::string_view& line) {
  for (;;) {
    switch (r.next(line)) {
      case LineReader::kLine:
        ++s.lines;
        return true;
      case LineReader::kTooLong:
        ++s.lines;
        ++s.malformed;
        ++s.too_long;
        continue;
      case LineReader::kEnd:
        return false;
    }
  }
}

bool read_shape(const json::Value* shape, std::vector<int64_t>& out) {
  if (!shape || shape->type != json::Value::kArray || shape->a.size() > kMaxInputs) return false;
  for (const json::Value& d : shape->a) {
    if (d.type != json::Value::kNumber || !d.integral || d.i < 0 || d.i >= kMaxTs) return false;
    out.push_back(d.i);
  }
  return true;
}

bool read_shapes(const json::Value& inputs, InputShapes& out) {
  if (inputs.type != json::Value::kObject || inputs.o.size() > kMaxInputs) return false;
  for (const auto& [name, shape] : inputs.o) {
    std::vector<int64_t> dims;
    if (name.empty() || !read_shape(&shape, dims)) return false;
    out.emplace_back(bounded(name, 256), std::move(dims));
  }
  return true;
}

std::string bounded(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 sequence
  return std::string(text.substr(0, n));
}

std::optional<json::Value> parse_record(std::string_view line, ImportSummary& s) {
  auto v = json::parse(line);
  if (!v || v->type != json::Value::kObject || !v->str("k")) {
    ++s.malformed;
    return std::nullopt;
  }
  ++s.records;
  return v;
}

std::vector<std::string> list_logs(const std::string& dir, std::string_view prefix, std::string* why, std::string_view suffix) {
  std::vector<std::string> logs;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (why && errno != ENOENT) *why = "cannot read the directory " + dir + ": " + std::strerror(errno);
    return logs;
  }
  while (dirent* e = ::readdir(d)) {
    std::string_view n(e->d_name);
    if (n.ends_with(suffix) && !n.starts_with(".") && n.starts_with(prefix)) logs.emplace_back(n);
  }
  ::closedir(d);
  std::sort(logs.begin(), logs.end());
  return logs;
}

uint32_t pid_in_name(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (name.size() < prefix.size() + suffix.size()) return 0;
  auto pid = to_int(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  return pid && *pid > 0 && *pid <= UINT32_MAX ? static_cast<uint32_t>(*pid) : 0;
}

StatusOr<uint32_t> Locations::get(ImportTarget& t, ImportSummary& s, const std::string& name, const std::string& file,
                                  const std::string& function, int64_t line) {
  auto key = std::make_tuple(name, file, function, line);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  uint32_t id = t.first_location_id + static_cast<uint32_t>(ids_.size());
  TC_RETURN_IF_ERROR(t.writer->row(store::schema::locations).i64(id).text(name).text(file).text(function).i64(line).insert());
  ids_[key] = id;
  s.last_location_id = id;
  return id;
}

std::string full_note(const ImportSummary& s) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (s.too_long == 1) add("1 malformed line was longer than the limit of a line (skipped unread)");
  if (s.too_long > 1) add(std::to_string(s.too_long) + " malformed lines were longer than the limit of a line (skipped unread)");
  if (s.over_cap > 0) add(std::to_string(s.over_cap) + " over the per-run caps not imported");
  if (!s.note.empty()) add(s.note);
  return out;
}

Status write_summary(ImportTarget& t, const ImportSummary& s, const std::string& source) {
  auto row = t.writer->row(store::schema::framework_imports);
  row.null().text(s.framework).text(source);
  if (s.version.empty()) row.null(); else row.text(s.version);
  row.i64(s.files).i64(s.lines).i64(s.records).i64(s.compilations).i64(s.explicit_evaluations);
  row.i64(s.unknown_kinds).i64(s.malformed).i64(s.truncated ? 1 : 0);
  const std::string n = full_note(s);
  if (n.empty()) row.null(); else row.text(n);
  return row.insert();
}

Importer::Importer(ImportTarget& t, const ImportLimits& l, std::string framework, bool recent_only)
    : t_(t), limits_(l), recent_only_(recent_only) {
  s_.framework = std::move(framework);
}

bool Importer::take_file(const std::string& path, const char* what) {
  if (t_.used.files < limits_.max_files) {
    ++t_.used.files;
    return true;
  }
  ++s_.over_cap;
  note("more than " + std::to_string(limits_.max_files) + " log files in the run: " + what + " from " + path + " on were not read");
  return false;
}

std::optional<LineReader> Importer::open(const std::string& path, bool recent_only) {
  std::string why;
  auto r = LineReader::open(path, limits_, &why, recent_only ? t_.min_mtime_unix_ns : 0);
  if (!r) {
    if (!why.empty()) note(why);  // empty: an earlier run's
    return std::nullopt;
  }
  if (r->larger()) note(larger_than_note(path, limits_.max_file_bytes));
  ++s_.files;
  return r;
}

void Importer::read_file(const std::string& path, uint32_t pid_from_name) {
  auto r = open(path, recent_only_);
  if (r) parse(*r, pid_from_name);
}

uint8_t Importer::process_state(uint32_t pid) {
  using Used = ImportTarget::Used;
  auto it = t_.used.pids.find(pid);
  if (it != t_.used.pids.end()) return it->second;
  // Refused pids are remembered too, up to a bound: past it, a new pid is over the cap unasked.
  if (t_.used.pids.size() >= 4 * limits_.max_processes + 64) return Used::kOverCap;
  const bool valid = pid > 0 && pid <= kMaxPid && (!t_.pid_in_run || t_.pid_in_run(pid));
  const uint8_t state = !valid ? Used::kRefused : t_.used.processes < limits_.max_processes ? Used::kAccepted : Used::kOverCap;
  if (state == Used::kAccepted) ++t_.used.processes;
  if (state == Used::kOverCap) note("the per-run cap of " + std::to_string(limits_.max_processes) + " processes was reached");
  if (state == Used::kRefused) note("pid " + std::to_string(pid) + " is none of the run's processes: its records were counted as malformed");
  t_.used.pids.emplace(pid, state);
  return state;
}

bool Importer::process(uint32_t pid, int64_t records) {
  const uint8_t state = process_state(pid);
  if (state == ImportTarget::Used::kRefused) s_.malformed += records;
  if (state == ImportTarget::Used::kOverCap) s_.over_cap += records;
  return state == ImportTarget::Used::kAccepted;
}

bool Importer::in_run(int64_t ts, int64_t dur, int64_t slack) const {
  if (ts <= 0 || ts >= kMaxTs || dur < 0 || dur >= kMaxTs) return false;
  if (ts + slack < static_cast<int64_t>(std::min<uint64_t>(t_.start_ts, kMaxTs))) return false;
  return t_.end_ts == 0 || ts + dur <= static_cast<int64_t>(std::min<uint64_t>(t_.end_ts, kMaxTs)) + slack;
}

bool Importer::room(const store::TableDecl& table) {
  auto it = t_.used.rows.find(table.name);
  if (it == t_.used.rows.end()) it = t_.used.rows.emplace(std::string(table.name), 0).first;
  if (it->second < limits_.max_rows) {
    ++it->second;
    return true;
  }
  return rows_over_cap(table);
}

bool Importer::keep(const store::TableDecl& table, size_t kept) {
  auto it = t_.used.rows.find(table.name);
  const size_t written = it == t_.used.rows.end() ? 0 : it->second;
  return written + kept < limits_.max_rows || rows_over_cap(table);
}

bool Importer::rows_over_cap(const store::TableDecl& table) {
  ++s_.over_cap;
  note("the per-run cap of " + std::to_string(limits_.max_rows) + " " + std::string(table.name) + " rows was reached");
  return false;
}

Status Importer::write(const std::string& source) {
  TC_RETURN_IF_ERROR(write_rows());
  return write_summary(t_, s_, source);
}

Status Importer::write_evaluation(const Evaluation& e) {
  if (!room(store::schema::explicit_evaluations)) return Status::Ok();
  auto row = t_.writer->row(store::schema::explicit_evaluations);
  row.null().i64(e.utid).i64(e.ts).i64(e.dur).i64(e.step).text(e.kind).i64(e.location).i64(e.ops).i64(e.graph).text(s_.framework);
  if (e.what) row.text(*e.what); else row.null();
  if (e.code.empty()) row.null(); else row.text(e.code);
  if (e.broke_at.empty()) row.null(); else row.text(e.broke_at);
  TC_RETURN_IF_ERROR(row.insert());
  ++s_.explicit_evaluations;
  return Status::Ok();
}

Status Importer::write_input(int64_t utid, int64_t graph, const std::string& input, int64_t dim, int64_t old_value, int64_t new_value,
                             bool dynamic, bool counted) {
  if (!counted && !room(store::schema::compilation_inputs)) return Status::Ok();
  return t_.writer->row(store::schema::compilation_inputs)
      .null().i64(utid).i64(graph).text(input).i64(dim).i64(old_value).i64(new_value).i64(dynamic ? 1 : 0).insert();
}

Status Importer::write_step_input(int64_t utid, int64_t step, const std::string& input, const std::vector<int64_t>& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!room(store::schema::step_inputs)) break;
    TC_RETURN_IF_ERROR(
        t_.writer->row(store::schema::step_inputs).null().i64(utid).i64(step).text(input).i64(static_cast<int64_t>(d)).i64(shape[d]).insert());
  }
  return Status::Ok();
}

Status Importer::write_counter(int64_t utid, int64_t ts, const std::string& name, const std::string& whose, double value) {
  if (!room(store::schema::counters)) return Status::Ok();
  auto loc = location(name, "", whose, 0);
  if (!loc.ok()) return loc.status();
  return t_.writer->row(store::schema::counters).null().i64(utid).i64(ts).i64(*loc).f64(value).insert();
}

int64_t Importer::utid(uint32_t pid) {
  auto it = utids_.find(pid);
  if (it != utids_.end()) return it->second;
  const int64_t u = t_.utid_for ? t_.utid_for(pid) : 0;
  utids_[pid] = u;
  return u;
}

bool Importer::take_process(uint32_t pid, int64_t records_before, const char* log) {
  if (pid == 0) {
    note(std::string(log) + " names no process");
    return false;
  }
  const int64_t records = s_.records - records_before;
  if (process(pid, records)) return true;
  if (process_state(pid) == ImportTarget::Used::kRefused) s_.records -= records;
  return false;
}

StatusOr<ImportSummary> import_dir(Importer& im, const char* function, const std::string& dir, std::string_view prefix, const char* what) {
  if (!im.has_store()) return Status(StatusCode::kInvalidArgument, std::string(function) + ": no store to write to");
  std::string why;
  std::vector<std::string> logs = list_logs(dir, prefix, &why);
  if (!why.empty()) {
    im.note(why);  // the program took the directory's permissions away: say so
    TC_RETURN_IF_ERROR(im.write(dir));
    return im.summary();
  }
  if (logs.empty()) return im.summary();
  for (size_t i = 0; i < logs.size() && !stop_requested(); ++i) {
    if (!im.take_file(dir + "/" + logs[i], what)) {
      im.summary().over_cap += static_cast<int64_t>(logs.size() - i - 1);  // and the files after it
      break;
    }
    im.read_file(dir + "/" + logs[i], pid_in_name(logs[i], prefix));
  }
  if (!stop_requested()) im.read_extra(dir);
  if (stop_requested()) {
    im.summary().stopped = true;
    im.note("the import was stopped by a signal: what was read before it was imported");
  }
  TC_RETURN_IF_ERROR(im.write(dir));
  return im.summary();
}

}  // namespace tc::import::import_common

namespace tc::import {

namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);
}  // namespace

void request_stop() noexcept { g_stop.store(true, std::memory_order_relaxed); }
bool stop_requested() noexcept { return g_stop.load(std::memory_order_relaxed); }

std::string describe_skipped(const ImportSummary& s) {
  std::string what;
  auto add = [&](int64_t n, const char* one, const char* many) {
    if (n == 0) return;
    what += (what.empty() ? "" : " and ") + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  add(s.unknown_kinds, "record of an unknown kind", "records of unknown kinds");
  add(s.malformed, "malformed line", "malformed lines");
  std::string out;
  if (!what.empty()) out = what + " skipped";
  if (s.truncated) out += std::string(out.empty() ? "" : "; ") + "the trace was cut inside a record (what was complete was imported)";
  const std::string n = import_common::full_note(s);
  if (!n.empty()) out += std::string(out.empty() ? "" : "; ") + n;
  return out.empty() ? out : s.framework + (s.framework == "torch.compile" ? " trace: " : " log: ") + out;
}

}  // namespace tc::import

