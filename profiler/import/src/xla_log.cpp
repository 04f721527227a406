// The PyTorch/XLA log of tc's Python hook (TC_XLA_LOG_DIR/xla-PID.log) and
// PyTorch/XLA's own debug output (PT_XLA_DEBUG_LEVEL=2 into
// PT_XLA_DEBUG_FILE = TC_XLA_LOG_DIR/pt_xla_debug.txt) into the store; see
// tc/import/import.h for the contract and docs/frameworks.md for the format.

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "import_common.h"
#include "json.h"
#include "tc/import/import.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"

namespace tc::import {

namespace {

using namespace import_common;  // what the importers share
constexpr const char* kDebugFile = "pt_xla_debug.txt";
// Compilations one record of the hook may count: more is no sync's.
constexpr int64_t kMaxCompilesPerRecord = 64;

bool valid_count(std::optional<int64_t> n) { return n && *n >= 0 && *n < kMaxTs; }

// One "Compilation Analysis" block of PyTorch/XLA's debug output: its cause and
// the first Python frame outside torch_xla ("main (/x/train.py:101)").
struct Analysis {
  std::string cause, function, file;
  int64_t line = 0;
};

using Shapes = import_common::InputShapes;  // input name -> shape

// What the hook saw: a sync (a step), a forced evaluation, or a graph input.
struct Event {
  enum Kind { kSync, kEval, kInput } kind = kSync;
  int64_t ts = 0, end = 0, line = 0, compiles = 0, compile_ns = 0;
  std::string file, fn, what, eval_kind, name;
  std::vector<int64_t> shape;
  // A sync: the graph inputs it cut (the XLA tensors of its caller's frame),
  // and whether it ran no graph (MpDeviceLoader's sync before the first batch
  // and after the last): then it is not a step.
  Shapes inputs;
  bool empty = false;
  // A sync: the device's memory after it, where the runtime reported it
  // (xm.get_memory_info(): an accelerator's); -1 where not.
  int64_t mem_used = -1, mem_limit = -1, mem_peak = -1;
};

struct Process {
  uint32_t pid = 0;
  int64_t start = 0;
  int64_t last_sync_end = 0;  // syncs are one after another: one that began before this is malformed
  std::vector<Event> events;
};

class XlaImporter : public import_common::Importer {
 public:
  XlaImporter(ImportTarget& t, const ImportLimits& l) : Importer(t, l, "torch_xla") {}

  // PyTorch/XLA's debug output: the compilations' causes and frames, in order.
  void read_extra(const std::string& dir) override {
    const std::string path = dir + "/" + kDebugFile;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !take_file(path, "PyTorch/XLA's debug output")) return;
    auto r = open(path, false);
    if (!r) return;
    constexpr std::string_view kTag = "Compilation Analysis: ";
    std::optional<Analysis> open;
    int state = 0;  // 1: next line is the cause; 2: in the frames
    for (std::string_view l; import_common::next_line(*r, s_, l);) {
      if (!l.starts_with(kTag)) continue;
      l.remove_prefix(kTag.size());
      std::string_view body = l;
      while (!body.empty() && body.front() == ' ') body.remove_prefix(1);
      if (body == "Compilation Cause") {
        if (open) add_analysis(std::move(*open));  // a block without its end line
        open = Analysis{};
        state = 1;
        ++s_.records;
      } else if (!open) {
        continue;
      } else if (state == 1) {
        open->cause = bounded(body, 200);
        state = 0;
      } else if (body.starts_with("Python Frame Triggered Execution")) {
        state = 2;
      } else if (body.starts_with("-----") || body.starts_with("=====")) {
        add_analysis(std::move(*open));
        open.reset();
        state = 0;
      } else if (state == 2 && open->file.empty()) {
        frame(*open, body);
      }
    }
    if (open || r->cut()) s_.truncated = true;
  }

  // "main (/x/train.py:101)": the block's frame, unless PyTorch/XLA's own or a hook's.
  void frame(Analysis& a, std::string_view body) {
    size_t paren = body.rfind(" (");
    size_t colon = body.rfind(':');
    if (paren == std::string_view::npos || colon == std::string_view::npos || colon < paren || !body.ends_with(")")) {
      ++s_.malformed;
      return;
    }
    std::string_view file = body.substr(paren + 2, colon - paren - 2);
    auto line = to_int(body.substr(colon + 1, body.size() - colon - 2));
    if (!line || *line > INT32_MAX) {
      ++s_.malformed;
      return;
    }
    // PyTorch/XLA's and torch's own frames (torch/_ops.py calls a hook's kernel), and a hook's (tc's
    // sitecustomize): not the program's.
    if (file.find("/torch_xla/") != std::string_view::npos || file.find("-packages/torch/") != std::string_view::npos ||
        file.ends_with("/sitecustomize.py"))
      return;
    a.function = bounded(body.substr(0, paren));
    a.file = bounded(file);
    a.line = *line;
  }

  void add_analysis(Analysis&& a) {
    if (keep(store::schema::compilations, analyses_.size())) analyses_.push_back(std::move(a));
  }

  Status write_rows() override {
    if (!analyses_.empty() && processes_.size() > 1) {
      note("PyTorch/XLA's debug output of several processes is not used (the hook's causes are)");
      analyses_.clear();
    }
    for (Process& p : processes_) TC_RETURN_IF_ERROR(write_process(p));
    return Status::Ok();
  }

 private:
  void parse(import_common::LineReader& r, uint32_t pid_from_name) override {
    Process p;
    p.pid = pid_from_name;
    const int64_t before = s_.records;
    import_common::for_each_record(r, s_, [&](const json::Value& v, std::string_view k) {
      if (!take(p, v, k)) ++s_.malformed;
    });
    if (p.pid == 0) return note("a PyTorch/XLA log names no process");
    // A process that is not the run's: none of its records is.
    const int64_t records = s_.records - before;
    if (!process(p.pid, records)) {
      if (process_state(p.pid) == ImportTarget::Used::kRefused) s_.records -= records;
      return;
    }
    processes_.push_back(std::move(p));
  }

  // One record; false when it is malformed.
  bool take(Process& p, const json::Value& v, std::string_view k) {
    auto ts = v.int64("ts");
    if (k == "start") {
      auto pid = v.int64("pid");
      if (!pid || *pid <= 0 || *pid > UINT32_MAX || !valid_ts(ts) || !in_run(*ts)) return false;
      p.pid = static_cast<uint32_t>(*pid);
      p.start = *ts;
      if (auto ver = v.str("torch_xla"); ver && s_.version.empty() && ver->size() <= 64) s_.version = std::string(*ver);
      return true;
    }
    if (k != "sync" && k != "eval" && k != "input") {
      ++s_.unknown_kinds;
      return true;
    }
    Event e;
    e.ts = ts.value_or(0);
    auto file = v.str("file");
    auto ln = v.int64("line");
    if (!valid_ts(ts) || !file || !valid_count(ln) || *ln > INT32_MAX) return false;
    e.file = bounded(*file);
    e.line = *ln;
    if (!(k == "input" ? input(e, v) : k == "sync" ? sync(e, v) : eval(e, v))) return false;
    // Its time, and its compilations' before its end, within the run.
    if (!in_run(e.ts, e.end - e.ts) || (e.compiles > 0 && (e.compile_ns > e.end || !in_run(e.end - e.compile_ns, e.compile_ns)))) return false;
    if (e.kind == Event::kSync) {
      if (e.ts < p.last_sync_end) return false;
      p.last_sync_end = e.end;
    }
    size_t& kept = e.kind == Event::kSync ? kept_syncs_ : e.kind == Event::kEval ? kept_evals_ : kept_inputs_;
    if (!keep(e.kind == Event::kSync ? store::schema::steps : e.kind == Event::kEval ? store::schema::explicit_evaluations
                                                                                      : store::schema::compilation_inputs,
              kept))
      return true;
    ++kept;
    p.events.push_back(std::move(e));
    return true;
  }

  // A graph input the program moved to the device: its name and shape.
  static bool input(Event& e, const json::Value& v) {
    auto name = v.str("name");
    if (!name || name->empty() || !read_shape(v.get("shape"), e.shape)) return false;
    e.kind = Event::kInput;
    e.name = bounded(*name, 256);
    e.end = e.ts;
    return true;
  }

  // The compilations PyTorch/XLA counted since the record before.
  static bool compiles(Event& e, const json::Value& v) {
    auto compiles = v.int64("compiles");
    auto compile_ns = v.int64("compile_ns");
    if (!valid_count(compiles) || *compiles > kMaxCompilesPerRecord || !valid_count(compile_ns)) return false;
    e.compiles = *compiles;
    e.compile_ns = *compile_ns;
    return true;
  }

  static bool sync(Event& e, const json::Value& v) {
    if (!compiles(e, v)) return false;
    auto end = v.int64("end");
    if (!valid_ts(end) || *end < e.ts) return false;
    e.kind = Event::kSync;
    e.end = *end;
    // "cached": the cache hits PyTorch/XLA counted (hooks before it did not say).
    if (const json::Value* cached = v.get("cached")) {
      if (cached->type != json::Value::kNumber || !cached->integral || cached->i < 0 || cached->i > kMaxCompilesPerRecord) return false;
      e.empty = cached->i == 0 && e.compiles == 0;
    }
    if (const json::Value* inputs = v.get("inputs"); inputs && !import_common::read_shapes(*inputs, e.inputs)) return false;
    // The device's memory (bytes in 0..2^56): in use and the limit together, the peak with them.
    auto bytes = [&](const char* key, int64_t& out) {
      const json::Value* x = v.get(key);
      if (x == nullptr) return true;
      if (!valid_bytes(*x)) return false;
      out = x->i;
      return true;
    };
    if (!bytes("mem_used", e.mem_used) || !bytes("mem_limit", e.mem_limit) || !bytes("mem_peak", e.mem_peak)) return false;
    if ((e.mem_used >= 0) != (e.mem_limit >= 0) || (e.mem_peak >= 0 && e.mem_used < 0)) return false;
    return true;
  }

  static bool eval(Event& e, const json::Value& v) {
    if (!compiles(e, v)) return false;
    auto dur = v.int64("dur");
    auto kind = v.str("kind");
    if (!valid_count(dur) || !kind || (*kind != "item" && *kind != "to_host" && *kind != "print")) return false;
    e.kind = Event::kEval;
    e.end = e.ts + *dur;
    e.eval_kind = std::string(*kind);
    e.what = bounded(v.str("what").value_or(*kind), 64);
    e.fn = bounded(v.str("fn").value_or(""), 256);
    return true;
  }

  // What write_process() keeps from one event to the next.
  struct Graphs {
    int64_t utid = 0, step = 0, next_graph = 0;
    std::map<std::string, int64_t> compiled;  // structure -> its compilations so far
    // This step's graph inputs and the step before's: name -> shape, in the order first moved.
    Shapes now, before;
    std::map<std::string, size_t, std::less<>> now_at, before_at;  // name -> index
    std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>> dims;  // input, dim, old, new: now against before
    bool dims_stale = false;
  };

  Status write_process(Process& p) {
    Graphs g;
    g.utid = utid(p.pid);
    // Steps: each sync, from the end of the one before it (the first: from the hook's start).
    int64_t from = p.start;
    int64_t step = 0;
    for (const Event& e : p.events) {
      if (e.kind != Event::kSync || e.empty) continue;
      if (from == 0 || from > e.ts) from = e.ts;  // no start record, or one after the first sync
      if (!room(store::schema::steps)) continue;
      TC_RETURN_IF_ERROR(t_.writer->row(store::schema::steps).null().i64(g.utid).i64(from).i64(e.end - from).i64(step++).i64(0).text("torch_xla").insert());
      from = e.end;
      ++s_.steps;
    }
    TC_RETURN_IF_ERROR(write_memory(p, g.utid));
    s_.step_function = "torch_xla.sync";
    g.next_graph = std::max<int64_t>(t_.first_graph_id, s_.last_graph_id + 1);
    size_t next_sync = 0;  // the sync that ends this step: its graph inputs are the step's
    step_inputs_from_sync(p, g, next_sync);
    for (const Event& e : p.events) {
      if (e.kind == Event::kInput) {
        if (g.now_at.try_emplace(e.name, g.now.size()).second) {
          g.now.emplace_back(e.name, e.shape);
          g.dims_stale = true;
        }
        continue;
      }
      if (e.kind == Event::kEval) {
        auto loc = location(e.what, e.file, e.fn, e.line);
        if (!loc.ok()) return loc.status();
        TC_RETURN_IF_ERROR(write_evaluation({.utid = g.utid, .ts = e.ts, .dur = e.end - e.ts, .step = g.step, .kind = e.eval_kind, .location = *loc, .what = e.what}));
      }
      for (int64_t c = 0; c < e.compiles; ++c) TC_RETURN_IF_ERROR(write_compilation(g, e, c));
      if (e.kind == Event::kSync && !e.empty) {
        for (const auto& [name, shape] : g.now) TC_RETURN_IF_ERROR(write_step_input(g.utid, g.step, name, shape));
        ++g.step;
        if (!g.now.empty()) {
          g.before = std::move(g.now);
          g.before_at = std::move(g.now_at);
          g.dims_stale = true;
        }
        g.now.clear();
        g.now_at.clear();
        step_inputs_from_sync(p, g, ++next_sync);
      }
    }
    return Status::Ok();
  }

  // Each sync's device memory a memory.live_bytes sample at its end (its peak
  // where given, else the bytes in use; location function 'torch_xla'), the
  // largest limit one memory.capacity_bytes sample.
  Status write_memory(const Process& p, int64_t utid) {
    int64_t limit = -1, first = 0;
    for (const Event& e : p.events) {
      if (e.kind != Event::kSync || e.mem_used < 0) continue;
      if (limit < 0) first = e.end;
      limit = std::max(limit, e.mem_limit);
      TC_RETURN_IF_ERROR(
          write_counter(utid, e.end, "memory.live_bytes", "torch_xla", static_cast<double>(e.mem_peak >= 0 ? e.mem_peak : e.mem_used)));
    }
    if (limit > 0) TC_RETURN_IF_ERROR(write_counter(utid, first, "memory.capacity_bytes", "torch_xla", static_cast<double>(limit)));
    return Status::Ok();
  }

  // The graph inputs of the step that the first sync from `next_sync` on ends
  // (a step sync, `next_sync` moved to it), when the hook recorded them there.
  static void step_inputs_from_sync(const Process& p, Graphs& g, size_t& next_sync) {
    while (next_sync < p.events.size() && (p.events[next_sync].kind != Event::kSync || p.events[next_sync].empty)) ++next_sync;
    if (next_sync == p.events.size()) return;
    for (const auto& [name, shape] : p.events[next_sync].inputs) {
      if (g.now_at.try_emplace(name, g.now.size()).second) g.now.emplace_back(name, shape);
      g.dims_stale = true;
    }
  }

  // The dims of this step's inputs that changed since the step before (computed once per change).
  const auto& changed_dims(Graphs& g) {
    if (!g.dims_stale) return g.dims;
    g.dims.clear();
    for (const auto& [name, shape] : g.now) {
      auto at = g.before_at.find(name);
      if (at == g.before_at.end()) continue;
      const std::vector<int64_t>& old = g.before[at->second].second;
      if (old.size() != shape.size()) continue;
      for (size_t d = 0; d < shape.size(); ++d)
        if (old[d] != shape[d]) g.dims.emplace_back(name, static_cast<int64_t>(d), old[d], shape[d]);
    }
    g.dims_stale = false;
    return g.dims;
  }

  // The c-th compilation PyTorch/XLA counted at event e.
  Status write_compilation(Graphs& g, const Event& e, int64_t c) {
    if (!room(store::schema::compilations)) return Status::Ok();
    // The cause and frame: PyTorch/XLA's own, in order; without them the hook's.
    Analysis a;
    if (next_analysis_ < analyses_.size()) {
      a = analyses_[next_analysis_++];
    } else {
      a.cause = e.kind == Event::kEval ? "most likely user code trying to access tensor value before torch_xla.sync" : "user torch_xla.sync";
    }
    if (a.file.empty()) {
      a.file = e.file;
      a.line = e.line;
      a.function = e.fn;
    }
    const bool forced = a.cause.find("access tensor value") != std::string::npos;
    const std::string structure = "torch_xla " + std::string(forced ? "evaluation" : "sync") + " at " + a.file + ":" + std::to_string(a.line);
    const int64_t index = g.compiled[structure]++;
    const auto& dims = changed_dims(g);
    const char* reason = index == 0 ? "first" : !dims.empty() ? "shape_change" : "structure_change";
    const int64_t each = e.compile_ns / std::max<int64_t>(e.compiles, 1);
    const int64_t ts = std::max<int64_t>(1, e.end - e.compile_ns + c * each);
    const int64_t graph = g.next_graph++;
    s_.last_graph_id = graph;
    auto loc = location(forced ? "evaluation" : "sync", a.file, a.function, a.line);
    if (!loc.ok()) return loc.status();
    auto row = t_.writer->row(store::schema::compilations);
    row.null().i64(g.utid).i64(ts).i64(each).i64(graph).i64(g.step);
    row.text(structure + " #" + std::to_string(index)).text(structure).text(reason).text(forced ? "explicit_evaluation" : "mark_step").i64(*loc);
    row.i64(0).i64(0).i64(0).i64(0).i64(0).i64(each).text("built");
    if (std::string_view(reason) == "structure_change") row.text("PyTorch/XLA compiled a new graph with the same input shapes: " + a.cause); else row.null();
    row.null();  // source_path
    row.text("torch_xla").text(a.cause).null();
    TC_RETURN_IF_ERROR(row.insert());
    ++s_.compilations;
    if (std::string_view(reason) != "shape_change") return Status::Ok();
    for (const auto& [name, dim, old, nw] : dims) {
      if (!room(store::schema::compilation_inputs)) break;
      TC_RETURN_IF_ERROR(write_input(g.utid, graph, name, dim, old, nw, false, /*counted=*/true));
    }
    return Status::Ok();
  }

  std::vector<Process> processes_;
  std::vector<Analysis> analyses_;
  size_t next_analysis_ = 0;
  size_t kept_syncs_ = 0, kept_evals_ = 0, kept_inputs_ = 0;  // events held for write_rows(), all files
};

}  // namespace

StatusOr<ImportSummary> import_xla_log(const std::string& dir, ImportTarget& target, const ImportLimits& limits) {
  XlaImporter im(target, limits);
  return import_common::import_dir(im, "import_xla_log", dir, "xla-", "PyTorch/XLA logs");
}

}  // namespace tc::import
