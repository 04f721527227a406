#include "tc/analysis/export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "json.h"
#include "tc/analysis/format.h"
#include "tc/analysis/timeline/timeline.h"
#include "tc/store/schema.h"

namespace tc::analysis {

namespace {

struct File {
  std::FILE* f = nullptr;
  std::string temp;  // removed unless committed
  ~File() {
    if (f) std::fclose(f);
    if (!temp.empty()) ::unlink(temp.c_str());
  }
};

// Writes events one per line; `first` tracks the commas.
class Writer {
 public:
  Writer(std::FILE* f, int64_t t0) : f_(f), t0_(t0) {}
  void event(const std::string& json) {
    std::fputs(first_ ? "\n" : ",\n", f_);
    std::fputs(json.c_str(), f_);
    first_ = false;
  }
  double us(int64_t ts) const { return static_cast<double>(ts - t0_) / 1e3; }

 private:
  std::FILE* f_;
  int64_t t0_;
  bool first_ = true;
};

// Refuses an output that is the store being read, or one of its side files,
// however it is named (a symlink, a relative path, a hard link).
Status check_not_input(const std::string& store, const std::string& output) {
  struct stat out{};
  if (::stat(output.c_str(), &out) != 0) return Status::Ok();  // does not exist yet
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    struct stat in{};
    if (::stat((store + suffix).c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      return {StatusCode::kInvalidArgument, output + ": is " + (*suffix ? "a file of " : "") + "the store being read (" + store +
                                                "); write the export to another file"};
    }
  }
  return Status::Ok();
}

// "#RRGGBB" of 0xAARRGGBB (the alpha is dropped: trace viewers take no alpha).
std::string rgb_text(int64_t argb) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%06X", static_cast<unsigned>(argb & 0xFFFFFF));
  return buf;
}

// A regular file (or a new one) is written beside and renamed into place at
// the end, so a failed export leaves no partial file and the old one intact.
// Anything else that exists (a pipe, /dev/stdout, a terminal) is written in
// place: renaming over it would replace the device node itself.
Status open_output(const std::string& path, File& out) {
  struct stat st{};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return {StatusCode::kIoError, path + ": is a directory; give a file path for the export"};
  if (exists && !S_ISREG(st.st_mode)) {
    out.f = std::fopen(path.c_str(), "w");
  } else {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    for (int attempt = 0; attempt < 100 && !out.f; ++attempt) {
      std::string temp = dir + "." + base + ".tc-tmp-" + std::to_string(::getpid()) + (attempt ? "-" + std::to_string(attempt) : "");
      int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? (st.st_mode & 07777) : 0666);
      if (fd < 0) {
        if (errno == EEXIST) continue;
        break;
      }
      if (exists) (void)::fchmod(fd, st.st_mode & 07777);  // the replaced file's permissions, whatever the umask
      out.temp = temp;
      out.f = ::fdopen(fd, "w");
      if (!out.f) ::close(fd);
    }
  }
  if (!out.f) {
    return {StatusCode::kIoError, path + ": cannot write the export (" + std::strerror(errno) + "); check the directory exists and is writable"};
  }
  return Status::Ok();
}

// Flushes and closes the output and puts it in place.
Status close_output(const std::string& path, File& out) {
  const bool write_failed = std::ferror(out.f) || std::fflush(out.f) != 0;
  const int write_errno = errno;
  const int closed = std::fclose(std::exchange(out.f, nullptr));
  if (write_failed || closed != 0) {
    return {StatusCode::kIoError, path + ": writing the export failed (" + std::strerror(write_failed ? write_errno : errno) +
                                      "); free space or raise the file size limit and run again"};
  }
  if (!out.temp.empty()) {
    if (::rename(out.temp.c_str(), path.c_str()) != 0) {
      return {StatusCode::kIoError, path + ": cannot put the export in place (" + std::strerror(errno) + "); check the directory is writable"};
    }
    out.temp.clear();
  }
  return Status::Ok();
}

// The store's tables as trace events, one table at a time, in the store's
// row order. NVTX sites and start/end ranges come from the timeline model.
class ChromeExport {
 public:
  ChromeExport(const store::Reader& r, Writer& w, int64_t end_ts) : r_(r), w_(w), end_ts_(end_ts) {}
  Status run();
  int64_t invalid_utf8_names() const { return text_of_.replaced(); }

 private:
  std::string text(const store::Query& q, int c) { return q.is_null(c) ? std::string() : text_of_(q.text(c)); }
  template <typename F>
  void each(const std::string& sql, F&& fn) {
    if (!status_.ok()) return;
    auto q = r_.query(sql);
    while (q.next()) fn(q);
    if (!q.status().ok()) status_ = q.status();
  }
  // A complete event ("X") on a thread.
  void complete(const std::string& name, const char* cat, int64_t upid, int64_t utid, int64_t ts, int64_t dur, Json* args);
  std::string nvtx_cat(const timeline::NvtxSite* s) {
    return s && !nv_.nvtx_domains[static_cast<size_t>(s->domain)].is_default
               ? "nvtx:" + text_of_(nv_.nvtx_domains[static_cast<size_t>(s->domain)].name)
               : std::string("nvtx");
  }
  void nvtx_args(Json& a, const timeline::NvtxSite* s, int64_t utid, int64_t loc, int64_t ts, int64_t payload);
  // A cut NVTX range lasts to its process's end (processes.end_ts), or to the run's when that is unknown.
  int64_t cut_end(int64_t upid, int64_t ts) const {
    auto it = process_end_.find(upid);
    return std::max(it != process_end_.end() ? it->second : end_ts_, ts);
  }
  void metadata();
  void read_nvtx();
  void ranges();
  void instants();
  void start_end_ranges();
  void compiler_events();
  void kernels_and_evaluations();

  static inline const std::string kUpidOf = "(SELECT upid FROM threads t WHERE t.utid = e.utid)";
  const store::Reader& r_;
  Writer& w_;
  const int64_t end_ts_;
  StoreText text_of_;
  Status status_;
  bool has_nvtx_ = false;
  timeline::Timeline nv_;                 // NVTX sites and real payloads (read_nvtx_sites)
  std::map<int64_t, int64_t> process_end_;  // upid -> processes.end_ts
};

void ChromeExport::complete(const std::string& name, const char* cat, int64_t upid, int64_t utid, int64_t ts, int64_t dur, Json* args) {
  Json j;
  j.begin_object().field("name", name).field("cat", cat).field("ph", "X").field("pid", upid).field("tid", utid);
  j.field("ts", w_.us(ts)).field("dur", static_cast<double>(dur) / 1e3);
  if (args) j.key("args").raw(args->str());
  j.end_object();
  w_.event(j.str());
}

// args of an NVTX event: domain, category (its name when nvtx_categories
// names it, else the number), payload (the real one when recorded, else the
// integer), colour; what the program did not give is null.
void ChromeExport::nvtx_args(Json& a, const timeline::NvtxSite* s, int64_t utid, int64_t loc, int64_t ts, int64_t payload) {
  const timeline::NvtxDomain* d = s ? &nv_.nvtx_domains[static_cast<size_t>(s->domain)] : nullptr;
  if (d && !d->is_default) a.field("domain", text_of_(d->name));
  else a.key("domain").null();
  if (s && !s->category_name.empty()) a.field("category", text_of_(s->category_name));
  else if (s && s->category) a.field("category", *s->category);
  else a.key("category").null();
  if (std::optional<double> real = nv_.nvtx_real_payload(utid, loc, ts)) a.field("payload", *real);
  else a.field("payload", payload);
  if (s && s->color) a.field("color", rgb_text(*s->color));
  else a.key("color").null();
}

// Metadata: names of processes and threads (pid = upid, tid = utid).
void ChromeExport::metadata() {
  each("SELECT upid, pid, name FROM processes", [&](const store::Query& q) {
    Json j;
    j.begin_object().field("name", "process_name").field("ph", "M").field("pid", q.i64(0)).field("tid", int64_t{0});
    j.key("args").begin_object().field("name", text(q, 2) + " (pid " + std::to_string(q.i64(1)) + ")").end_object().end_object();
    w_.event(j.str());
  });
  each("SELECT utid, upid, tid, name FROM threads", [&](const store::Query& q) {
    Json j;
    j.begin_object().field("name", "thread_name").field("ph", "M").field("pid", q.i64(1)).field("tid", q.i64(0));
    std::string name = q.is_null(3) ? "thread " + std::to_string(q.i64(2)) : text(q, 3);
    j.key("args").begin_object().field("name", name).end_object().end_object();
    w_.event(j.str());
  });
}

// NVTX (schema v3): push/pop ranges and marks are rows of ranges and
// instants whose site is in nvtx_sites; they are exported under cat "nvtx"
// or "nvtx:DOMAIN" with the site's domain, category, colour and payload.
void ChromeExport::read_nvtx() {
  has_nvtx_ = r_.has(store::schema::nvtx_sites, "loc_id");
  if (!has_nvtx_ || !status_.ok()) return;
  status_ = timeline::read_nvtx_sites(r_, &nv_);
  each("SELECT upid, end_ts FROM processes WHERE end_ts IS NOT NULL", [&](const store::Query& q) { process_end_[q.i64(0)] = q.i64(1); });
}

void ChromeExport::ranges() {
  each("SELECT coalesce(l.name, 'range'), " + kUpidOf + ", e.utid, e.ts, e.dur, e.arg, e.loc_id, e.depth FROM ranges e "
       "LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         const timeline::NvtxSite* site = nv_.nvtx_site(q.i64(6));
         Json a;
         a.begin_object();
         int64_t dur = q.i64(4);
         if (site) {
           nvtx_args(a, site, q.i64(2), q.i64(6), q.i64(3), q.i64(5));
           a.field("depth", q.i64(7));
           if (dur < 0) {
             a.field("cut", true);  // still open when its thread or process ended
             dur = cut_end(q.i64(1), q.i64(3)) - q.i64(3);
           }
           a.end_object();
           complete(text(q, 0), nvtx_cat(site).c_str(), q.i64(1), q.i64(2), q.i64(3), dur, &a);
           return;
         }
         a.field("arg", q.i64(5));
         if (dur < 0) {
           a.field("unfinished", true);  // the thread died inside it
           dur = end_ts_ > q.i64(3) ? end_ts_ - q.i64(3) : 0;
         }
         a.end_object();
         complete(text(q, 0), "range", q.i64(1), q.i64(2), q.i64(3), dur, &a);
       });
}

void ChromeExport::instants() {
  each("SELECT coalesce(l.name, 'instant'), " + kUpidOf + ", e.utid, e.ts, e.arg, e.loc_id FROM instants e LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         const timeline::NvtxSite* site = nv_.nvtx_site(q.i64(5));
         Json j;
         j.begin_object().field("name", text(q, 0)).field("cat", site ? nvtx_cat(site) : std::string("instant"));
         j.field("ph", "i").field("s", "t").field("pid", q.i64(1)).field("tid", q.i64(2)).field("ts", w_.us(q.i64(3)));
         j.key("args").begin_object();
         if (site) nvtx_args(j, site, q.i64(2), q.i64(5), q.i64(3), q.i64(4));
         else j.field("arg", q.i64(4));
         j.end_object().end_object();
         w_.event(j.str());
       });
}

// NVTX start/end ranges: async events, "b" on the thread that started it
// and "e" on the one that ended it, with a process-scoped id (id2.local, the
// range_id): they need not nest and may end on another thread. A start
// without an end is cut: its "e" is at its process's (or the run's) end, on
// the starting thread, with args.cut.
void ChromeExport::start_end_ranges() {
  if (!has_nvtx_ || !status_.ok()) return;
  auto pairs = timeline::read_nvtx_start_ends(r_);
  if (!pairs.ok()) {
    status_ = pairs.status();
    return;
  }
  if (pairs->empty()) return;
  std::map<int64_t, std::string> names;  // loc_id -> name
  each("SELECT id, name FROM locations WHERE name IS NOT NULL", [&](const store::Query& q) { names.emplace(q.i64(0), text(q, 1)); });
  std::map<int64_t, int64_t> upid_of;    // utid -> upid (0: a thread the store does not know)
  each("SELECT utid, upid FROM threads", [&](const store::Query& q) { upid_of.emplace(q.i64(0), q.i64(1)); });
  for (const timeline::NvtxStartEnd& se : *pairs) {
    const timeline::NvtxSite* site = nv_.nvtx_site(se.loc_id);
    auto name = names.find(se.loc_id);
    auto upid_at = upid_of.find(se.utid);
    const int64_t upid = upid_at != upid_of.end() ? upid_at->second : 0;
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(se.range_id));
    auto event = [&](const char* ph, int64_t tid, int64_t at, const Json& args) {
      Json j;
      j.begin_object().field("name", name != names.end() ? name->second : std::string("range")).field("cat", nvtx_cat(site));
      j.field("ph", ph).field("pid", upid).field("tid", tid);
      j.field("ts", w_.us(at)).key("id2").begin_object().field("local", hex).end_object();
      j.key("args").raw(args.str()).end_object();
      w_.event(j.str());
    };
    Json a;
    a.begin_object();
    nvtx_args(a, site, se.utid, se.loc_id, se.ts, se.payload);
    a.field("range_id", se.range_id).end_object();
    event("b", se.utid, se.ts, a);
    Json e;
    e.begin_object();
    if (!se.cut) {
      e.end_object();
      event("e", se.end_utid, se.end, e);
    } else {
      e.field("cut", true).end_object();
      event("e", se.utid, cut_end(upid, se.ts), e);
    }
  }
}

void ChromeExport::compiler_events() {
  each("SELECT coalesce(l.name, 'counter'), " + kUpidOf + ", e.ts, e.value FROM counters e LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         Json j;
         j.begin_object().field("name", text(q, 0)).field("ph", "C").field("pid", q.i64(1)).field("ts", w_.us(q.i64(2)));
         j.key("args").begin_object().field("value", q.f64(3)).end_object().end_object();
         w_.event(j.str());
       });
  each("SELECT " + kUpidOf + ", e.utid, e.ts, e.dur, e.step FROM steps e", [&](const store::Query& q) {
    Json a;
    a.begin_object().field("step", q.i64(4)).end_object();
    complete("mark_step " + std::to_string(q.i64(4)), "step", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
  });
  each("SELECT " + kUpidOf + ", e.utid, e.ts, e.dur, e.graph_id, e.reason, e.signature, e.nodes_after, e.kernels, e.cache, "
       "(SELECT group_concat(input || ' dim ' || dim || ': ' || old_value || ' -> ' || new_value, '; ') FROM compilation_inputs i "
       "WHERE i.graph_id = e.graph_id) FROM compilations e",
       [&](const store::Query& q) {
         Json a;
         a.begin_object().field("graph_id", q.i64(4)).field("reason", text(q, 5)).field("signature", text(q, 6));
         a.field("nodes", q.i64(7)).field("kernels", q.i64(8)).field("cache", text(q, 9));
         if (!q.is_null(10)) a.field("shape_changes", text(q, 10));
         a.end_object();
         complete("compile graph " + std::to_string(q.i64(4)) + " (" + text(q, 5) + ")", "compile", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
       });
  // graph_id (and execution_id) are unique in the run: no utid beside them in a join. v1 stores have no execution_id.
  const bool execution_ids = r_.has(store::schema::executions, "execution_id");
  each("SELECT " + kUpidOf + ", e.utid, e.ts, e.dur, e.graph_id, e.trigger, e.nodes, " + (execution_ids ? "e.execution_id" : "0") +
           " FROM executions e",
       [&](const store::Query& q) {
         Json a;
         a.begin_object().field("graph_id", q.i64(4)).field("trigger", text(q, 5)).field("nodes", q.i64(6));
         if (q.i64(7) != 0) a.field("execution_id", q.i64(7));
         a.end_object();
         complete("execute graph " + std::to_string(q.i64(4)), "execute", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
       });
}

void ChromeExport::kernels_and_evaluations() {
  // Kernel runs nest inside their execution on the same thread (schema v2).
  if (r_.has(store::schema::kernel_executions, "dur") && r_.has(store::schema::kernels, "sites")) {
    each("SELECT " + kUpidOf + ", e.utid, e.ts, e.dur, e.graph_id, e.kernel, k.ops, k.kind, k.sites, k.flops, k.bytes_read + k.bytes_written, "
         "e.execution_id FROM kernel_executions e JOIN kernels k ON k.graph_id = e.graph_id AND k.kernel = e.kernel",
         [&](const store::Query& q) {
           Json a;
           a.begin_object().field("graph_id", q.i64(4)).field("kernel", q.i64(5)).field("kind", text(q, 7)).field("sites", text(q, 8));
           a.field("flops", q.i64(9)).field("bytes", q.i64(10)).field("execution_id", q.i64(11)).end_object();
           complete(text(q, 6), "kernel", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
         });
  }
  each("SELECT " + kUpidOf + ", e.utid, e.ts, e.dur, e.kind, l.file, l.line, e.nodes FROM explicit_evaluations e "
       "LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         std::string where = text(q, 5) + ":" + std::to_string(q.i64(6));
         Json a;
         a.begin_object().field("call_site", where).field("nodes", q.i64(7)).end_object();
         complete(text(q, 4) + "() at " + where, "explicit_evaluation", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
       });
}

Status ChromeExport::run() {
  metadata();
  read_nvtx();
  ranges();
  instants();
  start_end_ranges();
  compiler_events();
  kernels_and_evaluations();
  return status_;
}

}  // namespace

Status export_chrome(const store::Reader& r, const std::string& path, ExportStats* stats) {
  if (path.empty()) return {StatusCode::kInvalidArgument, "the export's output path is empty; give a file name, e.g. -o trace.json"};
  TC_RETURN_IF_ERROR(check_not_input(r.path(), path));
  // Read the run first: nothing is created for a store that cannot be exported.
  auto q_run = r.query("SELECT start_ts, coalesce(end_ts, start_ts) FROM run WHERE id = 1");
  if (!q_run.next() || q_run.is_null(0)) {
    if (!q_run.status().ok()) return q_run.status();
    return {StatusCode::kCorrupt, r.path() + ": damaged store: it has no run row, so the timeline has no start; record the run again"};
  }
  const int64_t start = q_run.i64(0), end_ts = q_run.i64(1);
  File out;
  TC_RETURN_IF_ERROR(open_output(path, out));
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out.f);
  Writer w(out.f, start);
  ChromeExport chrome(r, w, end_ts);
  const Status status = chrome.run();
  std::fputs("\n]}\n", out.f);
  if (!status.ok()) return status;
  TC_RETURN_IF_ERROR(close_output(path, out));
  if (stats) stats->invalid_utf8_names = chrome.invalid_utf8_names();
  return Status::Ok();
}

}  // namespace tc::analysis
