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

std::optional<std::string> read_capped(const std::string& path, uint64_t cap, bool* cut, std::string* why, uint64_t min_mtime_unix_ns) {
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
  std::string text;
  text.resize(static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(std::max<off_t>(st.st_size, 0)), cap)));
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  *cut = static_cast<uint64_t>(st.st_size) > cap;
  return text;
}

std::string larger_than_note(const std::string& path, uint64_t cap) {
  return path + " is larger than " + std::to_string(cap >> 20) + " MiB: read up to there";
}

bool drop_cut_line(std::string_view& text, std::string_view* partial) {
  if (text.empty() || text.back() == '\n') return false;
  size_t nl = text.rfind('\n');
  const size_t keep = nl == std::string_view::npos ? 0 : nl + 1;
  if (partial) *partial = text.substr(keep);
  text = text.substr(0, keep);
  return true;
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

std::vector<std::string> list_logs(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> logs;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string_view n(e->d_name);
      if (n.ends_with(".log") && !n.starts_with(".") && n.starts_with(prefix)) logs.emplace_back(n);
    }
    ::closedir(d);
  }
  std::sort(logs.begin(), logs.end());
  return logs;
}

uint32_t pid_in_name(std::string_view name, std::string_view prefix) {
  constexpr size_t kSuffix = 4;  // ".log"
  if (name.size() < prefix.size() + kSuffix) return 0;
  auto pid = to_int(name.substr(prefix.size(), name.size() - prefix.size() - kSuffix));
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

Status write_summary(ImportTarget& t, const ImportSummary& s, const std::string& source) {
  auto row = t.writer->row(store::schema::framework_imports);
  row.null().text(s.framework).text(source);
  if (s.version.empty()) row.null(); else row.text(s.version);
  row.i64(s.files).i64(s.lines).i64(s.records).i64(s.compilations).i64(s.explicit_evaluations);
  row.i64(s.unknown_kinds).i64(s.malformed).i64(s.truncated ? 1 : 0);
  if (s.note.empty()) row.null(); else row.text(s.note);
  return row.insert();
}

Importer::Importer(ImportTarget& t, const ImportLimits& l, std::string framework, bool recent_only)
    : t_(t), limits_(l), recent_only_(recent_only) {
  s_.framework = std::move(framework);
}

void Importer::read_file(const std::string& path, uint32_t pid_from_name) {
  bool cut = false;
  std::string why;
  auto text = read_capped(path, limits_.max_file_bytes, &cut, &why, recent_only_ ? t_.min_mtime_unix_ns : 0);
  if (!text) {
    if (!why.empty()) note(why);  // empty: an earlier run's
    return;
  }
  if (cut) note(larger_than_note(path, limits_.max_file_bytes));
  ++s_.files;
  parse(*text, cut, pid_from_name);
}

Status Importer::write(const std::string& source) {
  TC_RETURN_IF_ERROR(write_rows());
  return write_summary(t_, s_, source);
}

Status Importer::write_evaluation(const Evaluation& e) {
  auto row = t_.writer->row(store::schema::explicit_evaluations);
  row.null().i64(e.utid).i64(e.ts).i64(e.dur).i64(e.step).text(e.kind).i64(e.location).i64(e.ops).i64(e.graph).text(s_.framework);
  if (e.what) row.text(*e.what); else row.null();
  TC_RETURN_IF_ERROR(row.insert());
  ++s_.explicit_evaluations;
  return Status::Ok();
}

Status Importer::write_input(int64_t utid, int64_t graph, const std::string& input, int64_t dim, int64_t old_value, int64_t new_value,
                             bool dynamic) {
  return t_.writer->row(store::schema::compilation_inputs)
      .null().i64(utid).i64(graph).text(input).i64(dim).i64(old_value).i64(new_value).i64(dynamic ? 1 : 0).insert();
}

int64_t Importer::utid(uint32_t pid) {
  auto it = utids_.find(pid);
  if (it != utids_.end()) return it->second;
  const int64_t u = t_.utid_for ? t_.utid_for(pid) : 0;
  utids_[pid] = u;
  return u;
}

StatusOr<ImportSummary> import_dir(Importer& im, const char* function, const std::string& dir, std::string_view prefix, const char* what) {
  if (!im.has_store()) return Status(StatusCode::kInvalidArgument, std::string(function) + ": no store to write to");
  std::vector<std::string> logs = list_logs(dir, prefix);
  if (logs.empty()) return im.summary();
  keep_first(logs, im.max_files(), what, im.summary());
  for (const std::string& n : logs) {
    if (stop_requested()) break;
    im.read_file(dir + "/" + n, pid_in_name(n, prefix));
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
  if (!s.note.empty()) out += std::string(out.empty() ? "" : "; ") + s.note;
  return out.empty() ? out : s.framework + (s.framework == "torch.compile" ? " trace: " : " log: ") + out;
}

}  // namespace tc::import

