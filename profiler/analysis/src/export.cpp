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

// What an NVTX site (nvtx_sites, schema v3) says about its ranges and marks.
struct NvtxSite {
  std::optional<std::string> domain;  // nullopt: NVTX's default domain
  std::optional<int64_t> category, color;
  std::string category_name;          // from nvtx_categories; "" when none names it
  std::string cat() const { return domain ? "nvtx:" + *domain : "nvtx"; }
};

// "#RRGGBB" of 0xAARRGGBB (the alpha is dropped: trace viewers take no alpha).
std::string rgb_text(int64_t argb) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%06X", static_cast<unsigned>(argb & 0xFFFFFF));
  return buf;
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

  // A regular file (or a new one) is written beside and renamed into place at
  // the end, so a failed export leaves no partial file and the old one intact.
  // Anything else that exists (a pipe, /dev/stdout, a terminal) is written in
  // place: renaming over it would replace the device node itself.
  File out;
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
  StoreText text_of;
  auto text = [&](const store::Query& q, int c) { return q.is_null(c) ? std::string() : text_of(q.text(c)); };
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out.f);
  Writer w(out.f, start);
  Status status;
  auto each = [&](const std::string& sql, auto&& fn) {
    if (!status.ok()) return;
    auto q = r.query(sql);
    while (q.next()) fn(q);
    if (!q.status().ok()) status = q.status();
  };
  // Metadata: names of processes and threads (pid = upid, tid = utid).
  each("SELECT upid, pid, name FROM processes", [&](const store::Query& q) {
    Json j;
    j.begin_object().field("name", "process_name").field("ph", "M").field("pid", q.i64(0)).field("tid", int64_t{0});
    j.key("args").begin_object().field("name", text(q, 2) + " (pid " + std::to_string(q.i64(1)) + ")").end_object().end_object();
    w.event(j.str());
  });
  each("SELECT utid, upid, tid, name FROM threads", [&](const store::Query& q) {
    Json j;
    j.begin_object().field("name", "thread_name").field("ph", "M").field("pid", q.i64(1)).field("tid", q.i64(0));
    std::string name = q.is_null(3) ? "thread " + std::to_string(q.i64(2)) : text(q, 3);
    j.key("args").begin_object().field("name", name).end_object().end_object();
    w.event(j.str());
  });
  // A complete event ("X") on a thread.
  auto complete = [&](const std::string& name, const char* cat, int64_t upid, int64_t utid, int64_t ts, int64_t dur, Json* args) {
    Json j;
    j.begin_object().field("name", name).field("cat", cat).field("ph", "X").field("pid", upid).field("tid", utid);
    j.field("ts", w.us(ts)).field("dur", static_cast<double>(dur) / 1e3);
    if (args) j.key("args").raw(args->str());
    j.end_object();
    w.event(j.str());
  };
  const std::string upid_of = "(SELECT upid FROM threads t WHERE t.utid = e.utid)";
  // NVTX (schema v3): push/pop ranges and marks are rows of ranges and
  // instants whose site is in nvtx_sites; they are exported under cat "nvtx"
  // or "nvtx:DOMAIN" with the site's domain, category, colour and payload.
  std::map<int64_t, NvtxSite> nvtx;                                      // by loc_id
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> real_payload;  // (utid, loc_id, ts)
  std::map<int64_t, int64_t> process_end;                                // upid -> processes.end_ts
  const bool has_nvtx = r.has(store::schema::nvtx_sites, "loc_id");
  if (has_nvtx) {
    // A category's name (nvtx_categories) is looked for in the site's own process first, then in any.
    std::map<std::tuple<int64_t, std::optional<std::string>, int64_t>, std::string> names;  // (upid, domain, category)
    std::map<std::pair<std::optional<std::string>, int64_t>, std::string> any_names;        // (domain, category)
    auto domain_of = [&](const store::Query& q, int c) { return q.is_null(c) ? std::nullopt : std::optional(text(q, c)); };
    if (r.has(store::schema::nvtx_categories, "name")) {
      each("SELECT (SELECT upid FROM threads t WHERE t.utid = c.utid), c.domain, c.category, c.name FROM nvtx_categories c ORDER BY c.id",
           [&](const store::Query& q) {
             names[{q.i64(0), domain_of(q, 1), q.i64(2)}] = text(q, 3);
             any_names[{domain_of(q, 1), q.i64(2)}] = text(q, 3);
           });
    }
    each("SELECT s.loc_id, (SELECT upid FROM threads t WHERE t.utid = s.utid), s.domain, s.category, s.color FROM nvtx_sites s ORDER BY s.id",
         [&](const store::Query& q) {
           NvtxSite site;
           site.domain = domain_of(q, 2);
           if (!q.is_null(3)) {
             site.category = q.i64(3);
             auto own = names.find({q.i64(1), site.domain, *site.category});
             auto any = any_names.find({site.domain, *site.category});
             if (own != names.end()) site.category_name = own->second;
             else if (any != any_names.end()) site.category_name = any->second;
           }
           if (!q.is_null(4)) site.color = q.i64(4);
           nvtx.emplace(q.i64(0), std::move(site));  // the first row of a loc_id stands
         });
    if (r.has(store::schema::nvtx_real_payloads, "value")) {
      each("SELECT utid, loc_id, ts, value FROM nvtx_real_payloads",
           [&](const store::Query& q) { real_payload[{q.i64(0), q.i64(1), q.i64(2)}] = q.f64(3); });
    }
    each("SELECT upid, end_ts FROM processes WHERE end_ts IS NOT NULL", [&](const store::Query& q) { process_end[q.i64(0)] = q.i64(1); });
  }
  // A cut NVTX range lasts to its process's end (processes.end_ts), or to the run's when that is unknown.
  auto cut_end = [&](int64_t upid, int64_t ts) {
    auto it = process_end.find(upid);
    return std::max(it != process_end.end() ? it->second : end_ts, ts);
  };
  // args of an NVTX event: domain, category (its name when nvtx_categories
  // names it, else the number), payload (the real one when recorded, else the
  // integer), colour; what the program did not give is null.
  auto nvtx_args = [&](Json& a, const NvtxSite& s, int64_t utid, int64_t loc, int64_t ts, int64_t payload) {
    if (s.domain) a.field("domain", *s.domain);
    else a.key("domain").null();
    if (!s.category_name.empty()) a.field("category", s.category_name);
    else if (s.category) a.field("category", *s.category);
    else a.key("category").null();
    auto real = real_payload.find({utid, loc, ts});
    if (real != real_payload.end()) a.field("payload", real->second);
    else a.field("payload", payload);
    if (s.color) a.field("color", rgb_text(*s.color));
    else a.key("color").null();
  };
  each("SELECT coalesce(l.name, 'range'), " + upid_of + ", e.utid, e.ts, e.dur, e.arg, e.loc_id, e.depth FROM ranges e "
       "LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         auto site = nvtx.find(q.i64(6));
         Json a;
         a.begin_object();
         int64_t dur = q.i64(4);
         if (site != nvtx.end()) {
           nvtx_args(a, site->second, q.i64(2), q.i64(6), q.i64(3), q.i64(5));
           a.field("depth", q.i64(7));
           if (dur < 0) {
             a.field("cut", true);  // still open when its thread or process ended
             dur = cut_end(q.i64(1), q.i64(3)) - q.i64(3);
           }
           a.end_object();
           complete(text(q, 0), site->second.cat().c_str(), q.i64(1), q.i64(2), q.i64(3), dur, &a);
           return;
         }
         a.field("arg", q.i64(5));
         if (dur < 0) {
           a.field("unfinished", true);  // the thread died inside it
           dur = end_ts > q.i64(3) ? end_ts - q.i64(3) : 0;
         }
         a.end_object();
         complete(text(q, 0), "range", q.i64(1), q.i64(2), q.i64(3), dur, &a);
       });
  each("SELECT coalesce(l.name, 'instant'), " + upid_of + ", e.utid, e.ts, e.arg, e.loc_id FROM instants e LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         auto site = nvtx.find(q.i64(5));
         Json j;
         j.begin_object().field("name", text(q, 0)).field("cat", site != nvtx.end() ? site->second.cat() : std::string("instant"));
         j.field("ph", "i").field("s", "t").field("pid", q.i64(1)).field("tid", q.i64(2)).field("ts", w.us(q.i64(3)));
         j.key("args").begin_object();
         if (site != nvtx.end()) nvtx_args(j, site->second, q.i64(2), q.i64(5), q.i64(3), q.i64(4));
         else j.field("arg", q.i64(4));
         j.end_object().end_object();
         w.event(j.str());
       });
  // NVTX start/end ranges: async events, "b" on the thread that started it
  // and "e" on the one that ended it, with a process-scoped id (id2.local, the
  // range_id): they need not nest and may end on another thread. A start
  // without an end is cut: its "e" is at its process's (or the run's) end, on
  // the starting thread, with args.cut.
  if (has_nvtx && r.has(store::schema::nvtx_range_starts, "range_id") && r.has(store::schema::nvtx_range_ends, "range_id")) {
    std::multimap<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> ends;  // (upid, range_id) -> (ts, utid), by ts
    each("SELECT " + upid_of + ", e.range_id, e.ts, e.utid FROM nvtx_range_ends e ORDER BY e.ts, e.id",
         [&](const store::Query& q) { ends.emplace(std::pair{q.i64(0), q.i64(1)}, std::pair{q.i64(2), q.i64(3)}); });
    const NvtxSite no_site;
    each("SELECT coalesce(l.name, 'range'), " + upid_of + ", e.utid, e.ts, e.range_id, e.loc_id, e.payload FROM nvtx_range_starts e "
         "LEFT JOIN locations l ON l.id = e.loc_id ORDER BY e.ts, e.id",
         [&](const store::Query& q) {
           const int64_t upid = q.i64(1), utid = q.i64(2), ts = q.i64(3), id = q.i64(4), loc = q.i64(5);
           auto found = nvtx.find(loc);
           const NvtxSite& site = found != nvtx.end() ? found->second : no_site;
           // Its end: the first one of the same process and range_id at or after the start.
           auto [lo, hi] = ends.equal_range({upid, id});
           auto end = lo;
           while (end != hi && end->second.first < ts) ++end;
           char hex[24];
           std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(id));
           auto event = [&](const char* ph, int64_t tid, int64_t at, const Json& args) {
             Json j;
             j.begin_object().field("name", text(q, 0)).field("cat", site.cat()).field("ph", ph).field("pid", upid).field("tid", tid);
             j.field("ts", w.us(at)).key("id2").begin_object().field("local", hex).end_object();
             j.key("args").raw(args.str()).end_object();
             w.event(j.str());
           };
           Json a;
           a.begin_object();
           nvtx_args(a, site, utid, loc, ts, q.i64(6));
           a.field("range_id", id).end_object();
           event("b", utid, ts, a);
           Json e;
           e.begin_object();
           if (end != hi) {
             e.end_object();
             event("e", end->second.second, end->second.first, e);
             ends.erase(end);
           } else {
             e.field("cut", true).end_object();
             event("e", utid, cut_end(upid, ts), e);
           }
         });
  }
  each("SELECT coalesce(l.name, 'counter'), " + upid_of + ", e.ts, e.value FROM counters e LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         Json j;
         j.begin_object().field("name", text(q, 0)).field("ph", "C").field("pid", q.i64(1)).field("ts", w.us(q.i64(2)));
         j.key("args").begin_object().field("value", q.f64(3)).end_object().end_object();
         w.event(j.str());
       });
  each("SELECT " + upid_of + ", e.utid, e.ts, e.dur, e.step FROM steps e", [&](const store::Query& q) {
    Json a;
    a.begin_object().field("step", q.i64(4)).end_object();
    complete("mark_step " + std::to_string(q.i64(4)), "step", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
  });
  each("SELECT " + upid_of + ", e.utid, e.ts, e.dur, e.graph_id, e.reason, e.signature, e.nodes_after, e.kernels, e.cache, "
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
  const bool execution_ids = r.has(store::schema::executions, "execution_id");
  each("SELECT " + upid_of + ", e.utid, e.ts, e.dur, e.graph_id, e.trigger, e.nodes, " + (execution_ids ? "e.execution_id" : "0") +
           " FROM executions e",
       [&](const store::Query& q) {
         Json a;
         a.begin_object().field("graph_id", q.i64(4)).field("trigger", text(q, 5)).field("nodes", q.i64(6));
         if (q.i64(7) != 0) a.field("execution_id", q.i64(7));
         a.end_object();
         complete("execute graph " + std::to_string(q.i64(4)), "execute", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
       });
  // Kernel runs nest inside their execution on the same thread (schema v2).
  if (r.has(store::schema::kernel_executions, "dur") && r.has(store::schema::kernels, "sites")) {
    each("SELECT " + upid_of + ", e.utid, e.ts, e.dur, e.graph_id, e.kernel, k.ops, k.kind, k.sites, k.flops, k.bytes_read + k.bytes_written, "
         "e.execution_id FROM kernel_executions e JOIN kernels k ON k.graph_id = e.graph_id AND k.kernel = e.kernel",
         [&](const store::Query& q) {
           Json a;
           a.begin_object().field("graph_id", q.i64(4)).field("kernel", q.i64(5)).field("kind", text(q, 7)).field("sites", text(q, 8));
           a.field("flops", q.i64(9)).field("bytes", q.i64(10)).field("execution_id", q.i64(11)).end_object();
           complete(text(q, 6), "kernel", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
         });
  }
  each("SELECT " + upid_of + ", e.utid, e.ts, e.dur, e.kind, l.file, l.line, e.nodes FROM explicit_evaluations e "
       "LEFT JOIN locations l ON l.id = e.loc_id",
       [&](const store::Query& q) {
         std::string where = text(q, 5) + ":" + std::to_string(q.i64(6));
         Json a;
         a.begin_object().field("call_site", where).field("nodes", q.i64(7)).end_object();
         complete(text(q, 4) + "() at " + where, "explicit_evaluation", q.i64(0), q.i64(1), q.i64(2), q.i64(3), &a);
       });
  std::fputs("\n]}\n", out.f);
  if (!status.ok()) return status;
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
  if (stats) stats->invalid_utf8_names = text_of.replaced();
  return Status::Ok();
}

}  // namespace tc::analysis
