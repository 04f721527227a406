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
#include "timeline/rows.h"
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

// The store's tables as trace events, one kind at a time, each read through
// the timeline model's reader of that kind (timeline/rows.h), in its order.
class ChromeExport {
 public:
  ChromeExport(const store::Reader& r, Writer& w, int64_t end_ts) : r_(r), w_(w), end_ts_(end_ts) {}
  Status run();
  void stats(ExportStats* s) const {
    s->invalid_utf8_names = text_of_.replaced();
    s->skipped_events = skipped_;
    s->skipped_locations = tl_.skipped.locations;
  }

 private:
  // A location's name, or `fallback` when the store names none.
  std::string name(int64_t loc_id, const char* fallback) {
    const timeline::Location* l = tl_.location(loc_id);
    return l && l->named ? text_of_(l->name) : std::string(fallback);
  }
  int64_t upid(int64_t utid) const {
    auto it = upid_of_.find(utid);
    return it != upid_of_.end() ? it->second : 0;  // 0: a thread the store does not know
  }
  // A complete event ("X") on a thread.
  void complete(const std::string& name, const char* cat, int64_t utid, int64_t ts, int64_t dur, const Json& args);
  std::string nvtx_cat(const timeline::NvtxSite* s) {
    return s && !tl_.nvtx_domains[static_cast<size_t>(s->domain)].is_default
               ? "nvtx:" + text_of_(tl_.nvtx_domains[static_cast<size_t>(s->domain)].name)
               : std::string("nvtx");
  }
  void nvtx_args(Json& a, const timeline::NvtxSite* s, int64_t utid, int64_t loc, int64_t ts, int64_t payload);
  // A cut NVTX range lasts to its process's end (processes.end_ts), or to the run's when that is unknown.
  int64_t cut_end(int64_t upid, int64_t ts) const {
    auto it = process_end_.find(upid);
    return std::max(it != process_end_.end() ? it->second : end_ts_, ts);
  }
  Status metadata();
  Status ranges();
  Status instants();
  Status start_end_ranges();
  Status counters();
  Status compiler_events();
  Status kernels_and_evaluations();

  const store::Reader& r_;
  Writer& w_;
  const int64_t end_ts_;
  StoreText text_of_;
  bool has_nvtx_ = false;
  timeline::Timeline tl_;                   // locations, NVTX sites and real payloads
  std::map<int64_t, int64_t> upid_of_;      // utid -> upid
  std::map<int64_t, int64_t> process_end_;  // upid -> processes.end_ts
  int64_t skipped_ = 0;                     // events out of time range (timeline::kTimeLimit)
};

void ChromeExport::complete(const std::string& name, const char* cat, int64_t utid, int64_t ts, int64_t dur, const Json& args) {
  Json j;
  j.begin_object().field("name", name).field("cat", cat).field("ph", "X").field("pid", upid(utid)).field("tid", utid);
  j.field("ts", w_.us(ts)).field("dur", static_cast<double>(dur) / 1e3);
  j.key("args").raw(args.str());
  j.end_object();
  w_.event(j.str());
}

// args of an NVTX event: domain, category (its name when nvtx_categories
// names it, else the number), payload (the real one when recorded, else the
// integer), colour; what the program did not give is null.
void ChromeExport::nvtx_args(Json& a, const timeline::NvtxSite* s, int64_t utid, int64_t loc, int64_t ts, int64_t payload) {
  const timeline::NvtxDomain* d = s ? &tl_.nvtx_domains[static_cast<size_t>(s->domain)] : nullptr;
  if (d && !d->is_default) a.field("domain", text_of_(d->name));
  else a.key("domain").null();
  if (s && !s->category_name.empty()) a.field("category", text_of_(s->category_name));
  else if (s && s->category) a.field("category", *s->category);
  else a.key("category").null();
  if (std::optional<double> real = tl_.nvtx_real_payload(utid, loc, ts)) a.field("payload", *real);
  else a.field("payload", payload);
  if (s && s->color) a.field("color", rgb_text(*s->color));
  else a.key("color").null();
}

// Metadata: names of processes and threads (pid = upid, tid = utid); then
// what the events name: locations and, for a store with NVTX (schema v3),
// its sites.
Status ChromeExport::metadata() {
  TC_RETURN_IF_ERROR(timeline::rows::each_process(r_, [&](const timeline::rows::Process& p) {
    if (p.end_ts) process_end_.emplace(p.upid, *p.end_ts);
    Json j;
    j.begin_object().field("name", "process_name").field("ph", "M").field("pid", p.upid).field("tid", int64_t{0});
    j.key("args").begin_object().field("name", (p.name ? text_of_(*p.name) : "") + " (pid " + std::to_string(p.pid) + ")");
    j.end_object().end_object();
    w_.event(j.str());
  }));
  TC_RETURN_IF_ERROR(timeline::rows::each_thread(r_, [&](const timeline::rows::Thread& t) {
    upid_of_.emplace(t.utid, t.upid);
    Json j;
    j.begin_object().field("name", "thread_name").field("ph", "M").field("pid", t.upid).field("tid", t.utid);
    j.key("args").begin_object().field("name", t.name ? text_of_(*t.name) : "thread " + std::to_string(t.tid)).end_object().end_object();
    w_.event(j.str());
  }));
  TC_RETURN_IF_ERROR(timeline::rows::read_locations(r_, &tl_));
  has_nvtx_ = r_.has(store::schema::nvtx_sites, "loc_id");
  return has_nvtx_ ? timeline::read_nvtx_sites(r_, &tl_) : Status::Ok();
}

// tc's ranges, and NVTX push/pop ranges (rows at an NVTX site) under cat
// "nvtx" or "nvtx:DOMAIN" with the site's domain, category, colour and payload.
Status ChromeExport::ranges() {
  return timeline::rows::each_range(r_, std::nullopt, &skipped_, [&](const timeline::rows::Range& e) {
    const timeline::NvtxSite* site = tl_.nvtx_site(e.loc_id);
    Json a;
    a.begin_object();
    int64_t dur = e.dur;
    if (site) {
      nvtx_args(a, site, e.utid, e.loc_id, e.ts, e.arg);
      a.field("depth", e.depth);
      if (dur < 0) {
        a.field("cut", true);  // still open when its thread or process ended
        dur = cut_end(upid(e.utid), e.ts) - e.ts;
      }
      a.end_object();
      complete(name(e.loc_id, "range"), nvtx_cat(site).c_str(), e.utid, e.ts, dur, a);
      return;
    }
    a.field("arg", e.arg);
    if (dur < 0) {
      a.field("unfinished", true);  // the thread died inside it
      dur = end_ts_ > e.ts ? end_ts_ - e.ts : 0;
    }
    a.end_object();
    complete(name(e.loc_id, "range"), "range", e.utid, e.ts, dur, a);
  });
}

Status ChromeExport::instants() {
  return timeline::rows::each_instant(r_, &skipped_, [&](const timeline::rows::Instant& e) {
    const timeline::NvtxSite* site = tl_.nvtx_site(e.loc_id);
    Json j;
    j.begin_object().field("name", name(e.loc_id, "instant")).field("cat", site ? nvtx_cat(site) : std::string("instant"));
    j.field("ph", "i").field("s", "t").field("pid", upid(e.utid)).field("tid", e.utid).field("ts", w_.us(e.ts));
    j.key("args").begin_object();
    if (site) nvtx_args(j, site, e.utid, e.loc_id, e.ts, e.arg);
    else j.field("arg", e.arg);
    j.end_object().end_object();
    w_.event(j.str());
  });
}

// NVTX start/end ranges: async events, "b" on the thread that started it
// and "e" on the one that ended it, with a process-scoped id (id2.local, the
// range_id): they need not nest and may end on another thread. A start
// without an end is cut: its "e" is at its process's (or the run's) end, on
// the starting thread, with args.cut.
Status ChromeExport::start_end_ranges() {
  if (!has_nvtx_) return Status::Ok();
  auto pairs = timeline::read_nvtx_start_ends(r_);
  TC_RETURN_IF_ERROR(pairs.status());
  for (const timeline::NvtxStartEnd& se : *pairs) {
    if (!timeline::rows::keep(se.ts, nullptr, &skipped_)) continue;
    const timeline::NvtxSite* site = tl_.nvtx_site(se.loc_id);
    const int64_t pid = upid(se.utid);
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(se.range_id));
    auto event = [&](const char* ph, int64_t tid, int64_t at, const Json& args) {
      Json j;
      j.begin_object().field("name", name(se.loc_id, "range")).field("cat", nvtx_cat(site));
      j.field("ph", ph).field("pid", pid).field("tid", tid);
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
      event("e", se.end_utid, std::min(se.end, timeline::kTimeLimit), e);
    } else {
      e.field("cut", true).end_object();
      event("e", se.utid, cut_end(pid, se.ts), e);
    }
  }
  return Status::Ok();
}

Status ChromeExport::counters() {
  return timeline::rows::each_counter(r_, nullptr, &skipped_, [&](const timeline::rows::Counter& c) {
    Json j;
    j.begin_object().field("name", name(c.loc_id, "counter")).field("ph", "C").field("pid", upid(c.utid)).field("ts", w_.us(c.ts));
    j.key("args").begin_object().field("value", c.value).end_object().end_object();
    w_.event(j.str());
  });
}

Status ChromeExport::compiler_events() {
  TC_RETURN_IF_ERROR(timeline::rows::each_step(r_, &skipped_, [&](int64_t utid, timeline::Step& s) {
    Json a;
    a.begin_object().field("step", s.step).end_object();
    complete("mark_step " + std::to_string(s.step), "step", utid, s.ts, s.dur, a);
  }));
  TC_RETURN_IF_ERROR(timeline::rows::each_compilation(r_, &skipped_, [&](timeline::Compilation& c) {
    const std::string reason = text_of_(c.reason_text);
    Json a;
    a.begin_object().field("graph_id", c.graph_id).field("reason", reason).field("signature", text_of_(c.signature));
    a.field("nodes", c.nodes_after).field("kernels", c.kernels).field("cache", text_of_(c.cache));
    std::string changes;
    for (const timeline::InputChange& in : c.inputs) {
      changes += (changes.empty() ? "" : "; ") + in.input + " dim " + std::to_string(in.dim) + ": " + std::to_string(in.old_value) + " -> " +
                 std::to_string(in.new_value);
    }
    if (!c.inputs.empty()) a.field("shape_changes", text_of_(changes));
    a.end_object();
    complete("compile graph " + std::to_string(c.graph_id) + " (" + reason + ")", "compile", c.utid, c.ts, c.dur, a);
  }));
  return timeline::rows::each_execution(r_, &skipped_, [&](int64_t utid, timeline::Execution& x) {
    Json a;
    a.begin_object().field("graph_id", x.graph_id).field("trigger", text_of_(x.trigger)).field("nodes", x.nodes);
    if (x.execution_id != 0) a.field("execution_id", x.execution_id);
    a.end_object();
    complete("execute graph " + std::to_string(x.graph_id), "execute", utid, x.ts, x.dur, a);
  });
}

Status ChromeExport::kernels_and_evaluations() {
  // Kernel runs nest inside their execution on the same thread (schema v2).
  std::vector<timeline::KernelInfo> kernels;
  TC_RETURN_IF_ERROR(timeline::rows::each_kernel_run(r_, &skipped_, &kernels, [&](int64_t utid, timeline::KernelRun& run) {
    const timeline::KernelInfo& k = kernels[run.kernel];
    Json a;
    a.begin_object().field("graph_id", k.graph_id).field("kernel", k.kernel).field("kind", text_of_(k.kind)).field("sites", text_of_(k.sites));
    a.field("flops", k.flops).field("bytes", k.bytes).field("execution_id", run.execution_id).end_object();
    complete(text_of_(k.ops), "kernel", utid, run.ts, run.dur, a);
  }));
  return timeline::rows::each_evaluation(r_, &skipped_, [&](timeline::Evaluation& e) {
    const timeline::Location* l = tl_.location(e.loc_id);
    std::string where = (l ? text_of_(l->file) : std::string()) + ":" + std::to_string(l ? l->line : 0);
    Json a;
    a.begin_object().field("call_site", where).field("nodes", e.nodes).end_object();
    complete(text_of_(e.kind) + "() at " + where, "explicit_evaluation", e.utid, e.ts, e.dur, a);
  });
}

Status ChromeExport::run() {
  TC_RETURN_IF_ERROR(metadata());
  TC_RETURN_IF_ERROR(ranges());
  TC_RETURN_IF_ERROR(instants());
  TC_RETURN_IF_ERROR(start_end_ranges());
  TC_RETURN_IF_ERROR(counters());
  TC_RETURN_IF_ERROR(compiler_events());
  return kernels_and_evaluations();
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
  if (stats) chrome.stats(stats);
  return Status::Ok();
}

std::string skipped_note(const ExportStats& stats) {
  std::string what;
  if (stats.skipped_events > 0) what = std::to_string(stats.skipped_events) + " events whose time is out of range";
  if (stats.skipped_locations > 0) {
    what += (what.empty() ? "" : " and ") + std::to_string(stats.skipped_locations) + " locations whose id is past the bound";
  }
  return what.empty() ? what : "left out " + what + " (a damaged store), as the timeline does";
}

}  // namespace tc::analysis
