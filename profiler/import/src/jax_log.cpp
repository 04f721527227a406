// The JAX log of tc's Python hook (TC_JAX_LOG_DIR/jax-PID.log) into the
// store; see tc/import/import.h for the contract and docs/frameworks.md for
// the format.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
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

// Jitted functions (and pending stages, misses) kept per process at most.
constexpr size_t kMaxFuns = 1 << 14;
// Changed dims of one cache miss at most.
constexpr size_t kMaxMissDims = 1024;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t' || s.back() == ':')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t nl = s.find('\n');
    out.push_back(s.substr(0, nl));
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  return out;
}

// "FILE:LINE" or "FILE:LINE:COL": the file and the line.
bool split_site(std::string_view site, std::string& file, int64_t& line) {
  size_t c = site.rfind(':');
  if (c == std::string_view::npos) return false;
  auto last = to_int(site.substr(c + 1));
  if (!last) return false;
  size_t c2 = site.rfind(':', c == 0 ? 0 : c - 1);
  if (c2 != std::string_view::npos && c2 < c) {
    if (auto l = to_int(site.substr(c2 + 1, c - c2 - 1))) {
      file = std::string(site.substr(0, c2));
      line = *l;
      return true;
    }
  }
  file = std::string(site.substr(0, c));
  line = *last;
  return true;
}

// An aval as JAX prints it: "i32[8,24]" -> dtype "i32", dims {8, 24}; nullopt when a dim is not a number.
struct Aval {
  std::string dtype;
  std::vector<int64_t> dims;
};
std::optional<Aval> parse_aval(std::string_view t) {
  t = trim(t);
  size_t open = t.find('[');
  size_t close = t.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open || open == 0) return std::nullopt;
  Aval a;
  a.dtype = std::string(t.substr(0, open));
  std::string_view in = t.substr(open + 1, close - open - 1);
  while (!in.empty()) {
    size_t comma = in.find(',');
    auto d = to_int(trim(in.substr(0, comma)));
    if (!d || a.dims.size() >= 64) return std::nullopt;
    a.dims.push_back(*d);
    if (comma == std::string_view::npos) break;
    in.remove_prefix(comma + 1);
  }
  return a;
}

struct DimChange {
  std::string input;
  int64_t dim = 0, old_value = 0, new_value = 0;
};

// One TRACING CACHE MISS explanation.
struct Miss {
  int64_t ts = 0;
  std::string fun;                 // the jitted function's name
  std::string call_file, call_fn;  // where it was called
  int64_t call_line = 0;
  bool first = false;              // "never seen function"
  std::vector<DimChange> dims;     // shape changes against JAX's closest previous key
  std::string diff;                // otherwise: what differs, as JAX says it
};

// "TRACING CACHE MISS at FILE:LINE:COL (FN):\n  never seen function:\n    NAME id=... defined at ..."
// "TRACING CACHE MISS at FILE:LINE (FN):\n  for NAME defined at FILE:LINE\n  ...\n  * at token_ids, now i32[8,24] and before i32[8,16]"
std::optional<Miss> parse_miss(std::string_view msg) {
  constexpr std::string_view kHead = "TRACING CACHE MISS at ";
  size_t at = msg.find(kHead);
  if (at == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> ls = lines_of(msg.substr(at + kHead.size()));
  if (ls.size() < 2) return std::nullopt;
  Miss m;
  std::string_view head = ls[0];
  if (head.ends_with(":")) head.remove_suffix(1);
  size_t paren = head.rfind(" (");
  if (paren == std::string_view::npos || !head.ends_with(")")) return std::nullopt;
  m.call_fn = bounded(head.substr(paren + 2, head.size() - paren - 3));
  if (!split_site(head.substr(0, paren), m.call_file, m.call_line) || m.call_line > INT32_MAX) return std::nullopt;
  m.call_file = bounded(m.call_file);
  std::vector<std::string> other;
  bool after_closest = false;
  for (size_t i = 1; i < ls.size(); ++i) {
    std::string_view l = trim(ls[i]);
    if (l == "never seen function") {
      m.first = true;
      if (i + 1 < ls.size()) {
        std::string_view n = trim(ls[i + 1]);
        m.fun = bounded(n.substr(0, n.find(' ')));
      }
      break;
    }
    if (l.starts_with("for ") && m.fun.empty()) {
      std::string_view n = l.substr(4);
      m.fun = bounded(n.substr(0, n.find(' ')));
      continue;
    }
    if (l.find("For the closest previous key") != std::string_view::npos) {
      after_closest = true;
      continue;
    }
    if (l.starts_with("* at ")) {
      std::string_view rest = l.substr(5);
      size_t now = rest.find(", now ");
      size_t before = rest.rfind(" and before ");
      if (now != std::string_view::npos && before != std::string_view::npos && before > now) {
        std::string input = bounded(rest.substr(0, now));
        auto a = parse_aval(rest.substr(now + 6, before - now - 6));
        auto b = parse_aval(rest.substr(before + 12));
        if (a && b && a->dtype == b->dtype && a->dims.size() == b->dims.size()) {
          for (size_t d = 0; d < a->dims.size(); ++d) {
            if (a->dims[d] != b->dims[d]) m.dims.push_back({input, static_cast<int64_t>(d), b->dims[d], a->dims[d]});
          }
          if (m.dims.size() > kMaxMissDims) return std::nullopt;
          continue;
        }
      }
      other.emplace_back(l);
      continue;
    }
    if (after_closest && !l.empty() && l != "different input types") other.emplace_back(l);
  }
  if (m.fun.empty()) return std::nullopt;
  if (!m.first && (m.dims.empty() || !other.empty())) {
    for (const std::string& o : other) {
      if (m.diff.size() > 300) break;
      m.diff += (m.diff.empty() ? "" : "; ") + o;
    }
    if (m.diff.empty()) m.diff = "JAX gave no explanation";
  }
  return m;
}

struct Stage {
  int64_t end = 0;  // when it ended (the listener's call)
  int64_t dur = 0;
};

struct Compilation {
  int64_t ts = 0, dur = 0, lower_ns = 0, backend_ns = 0;
  std::string fun;  // without jit(...)
  std::optional<Miss> miss;
  int64_t index = 0;  // the n-th compilation of fun in its process
};

struct Call {
  int64_t f = 0, ts = 0, end = 0;
  // Its arguments' shapes when they differ from the function's call before ("in"); else the same as that one's.
  std::optional<import_common::InputShapes> in;
  int64_t peak = 0;  // XLA's analysis of its executable, when the hook logged one after it (its first call with these shapes)
};

struct Eval {
  int64_t ts = 0, dur = 0, line = 0;
  std::string kind, what, file, fn;
};

struct Fun {
  std::string name, file;
  int64_t line = 0;
};

// XLA's memory_analysis() of one executable (the hook's k="mem").
struct Mem {
  int64_t f = 0, ts = 0, batch = 0, arg = 0, out = 0, temp = 0, alias = 0;
  bool ran = true, model = false;
  int64_t peak() const { return arg + out + temp - alias; }
};

// XLA's RESOURCE_EXHAUSTED from a call of the program's jitted function (the
// hook's k="oom"): the bytes its text says (0: not said), the call's batch.
struct Oom {
  int64_t f = 0, ts = 0, requested = 0, batch = 0;
};

// What one file (one process) said.
struct Process {
  uint32_t pid = 0;
  std::vector<Compilation> compilations;
  std::vector<Call> calls;
  std::vector<Eval> evals;
  std::map<int64_t, Fun> funs;
  std::vector<Mem> mems;
  std::vector<Oom> ooms;  // at most 16 (the hook's limit)
  int64_t capacity = 0;  // the hook's k="capacity": the device's limit, the cgroup's or the RAM
  int64_t last_ts = 0;
};

class JaxImporter : public import_common::Importer {
 public:
  JaxImporter(ImportTarget& t, const ImportLimits& l) : Importer(t, l, "jax") {}

 private:
  // What parse() keeps between the records of one file.
  struct Reading {
    Process p;
    std::map<std::string, Stage> trace, lower;  // fun -> its last stage not yet part of a compilation
    std::map<std::string, Miss> misses;
    std::map<std::string, int64_t> compiled;  // fun -> compilations so far
    int64_t last_compile_end = 0;
  };

  void parse(import_common::LineReader& lr, uint32_t pid_from_name) override {
    Reading r;
    r.p.pid = pid_from_name;
    const int64_t before = s_.records;
    import_common::for_each_record(lr, s_, [&](const json::Value& v, std::string_view k) {
      if (!take(r, v, k)) ++s_.malformed;
    });
    if (r.p.pid == 0) return note("a JAX log names no process");
    // A process that is not the run's: none of its records is.
    const int64_t records = s_.records - before;
    if (!process(r.p.pid, records)) {
      if (process_state(r.p.pid) == ImportTarget::Used::kRefused) s_.records -= records;
      return;
    }
    processes_.push_back(std::move(r.p));
  }

  // One record; false when it is malformed.
  bool take(Reading& r, const json::Value& v, std::string_view k) {
    Process& p = r.p;
    auto ts = v.int64("ts");
    if (k == "start") {
      auto pid = v.int64("pid");
      if (!pid || *pid <= 0 || *pid > UINT32_MAX) return false;
      p.pid = static_cast<uint32_t>(*pid);
      if (auto ver = v.str("jax"); ver && s_.version.empty() && ver->size() <= 64) s_.version = std::string(*ver);
    } else if (k == "fun") {
      auto i = v.int64("i");
      auto name = v.str("name");
      auto line = v.int64("line").value_or(0);
      if (!i || *i < 0 || !name || line < 0 || line > INT32_MAX) return false;
      if (!p.funs.contains(*i) && p.funs.size() >= kMaxFuns) return ++s_.over_cap, true;
      p.funs[*i] = {bounded(*name), bounded(v.str("file").value_or("")), line};
    } else if (k == "call") {
      auto f = v.int64("f");
      auto end = v.int64("end");
      if (!f || !valid_ts(ts) || !valid_ts(end) || *end < *ts || !in_run(*ts, *end - *ts)) return false;
      import_common::InputShapes in;
      const json::Value* shapes = v.get("in");
      if (shapes && !import_common::read_shapes(*shapes, in)) return false;
      if (!keep(store::schema::steps, kept_calls_)) return true;
      ++kept_calls_;
      p.calls.push_back({*f, *ts, *end, shapes ? std::optional(std::move(in)) : std::nullopt});
      p.last_ts = std::max(p.last_ts, *end);
    } else if (k == "eval") {
      auto dur = v.int64("dur");
      auto kind = v.str("kind");
      auto file = v.str("file");
      auto ln = v.int64("line");
      if (!valid_ts(ts) || !dur || *dur < 0 || *dur > kMaxTs || !kind || !file || !ln || *ln < 0 || *ln > INT32_MAX ||
          (*kind != "item" && *kind != "to_host" && *kind != "print") || !in_run(*ts, *dur))
        return false;
      if (!keep(store::schema::explicit_evaluations, kept_evals_)) return true;
      ++kept_evals_;
      p.evals.push_back({*ts, *dur, *ln, std::string(*kind), bounded(v.str("what").value_or(*kind)), bounded(*file),
                         bounded(v.str("fn").value_or(""))});
      p.last_ts = std::max(p.last_ts, *ts + *dur);
    } else if (k == "miss") {
      auto msg = v.str("msg");
      if (!valid_ts(ts) || !msg || !in_run(*ts)) return false;
      auto m = parse_miss(*msg);
      if (!m) return false;
      m->ts = *ts;
      if (!r.misses.contains(m->fun) && r.misses.size() >= kMaxFuns) return ++s_.over_cap, true;
      r.misses[m->fun] = std::move(*m);
    } else if (k == "dur") {
      return duration(r, v, ts);
    } else if (k == "mem" || k == "capacity" || k == "mem_skipped" || k == "mem_failed") {
      return memory(p, v, k, ts);
    } else if (k == "oom") {
      auto f = v.int64("f");
      auto requested = v.int64("requested");
      auto batch = v.int64("batch");
      if (!f || *f < 0 || !valid_ts(ts) || !in_run(*ts) || !valid_bytes(requested) || !valid_batch(batch) || p.ooms.size() >= 16)
        return false;
      p.ooms.push_back({*f, *ts, *requested, *batch});
    } else if (k == "limit") {
      note("the hook stopped writing at its size limit (64 MiB)");
    } else {
      ++s_.unknown_kinds;
    }
    return true;
  }

  // The hook's memory records: XLA's memory_analysis() of an executable, the
  // capacity, a probe the budget skipped or that failed (a note).
  bool memory(Process& p, const json::Value& v, std::string_view k, std::optional<int64_t> ts) {
    auto f = v.int64("f");
    auto batch = v.int64("batch");
    if (k == "capacity") {
      auto bytes = v.int64("bytes");
      if (!valid_bytes(bytes) || *bytes == 0) return false;
      p.capacity = *bytes;
      return true;
    }
    if (!f || *f < 0 || !valid_batch(batch)) return false;
    if (k != "mem") {
      note(std::string("the memory probe of batch ") + std::to_string(*batch) +
           (k == "mem_skipped" ? " was skipped: TC_MEMORY_PROBE_S spent" : " failed: " + bounded(v.str("why").value_or("?"))));
      return true;
    }
    Mem m{.f = *f, .ts = ts.value_or(0), .batch = *batch};
    int64_t* fields[] = {&m.arg, &m.out, &m.temp, &m.alias};
    const char* names[] = {"arg", "out", "temp", "alias"};
    for (size_t i = 0; i < 4; ++i) {
      auto b = v.int64(names[i]);
      if (!valid_bytes(b)) return false;
      *fields[i] = *b;
    }
    m.ran = v.int64("ran").value_or(1) != 0;
    m.model = v.int64("model").value_or(0) != 0;
    if (!valid_ts(ts) || !in_run(*ts) || m.peak() < 0) return false;
    if (!keep(store::schema::memory_plans, kept_mems_)) return true;
    ++kept_mems_;
    if (m.ran && !m.model && !p.calls.empty() && p.calls.back().f == m.f && p.calls.back().end <= m.ts) p.calls.back().peak = m.peak();
    p.mems.push_back(m);
    return true;
  }

  // A jax.monitoring duration: a stage of a compilation; a backend compile
  // ends one (a compilations row, with the stages and the miss before it).
  bool duration(Reading& r, const json::Value& v, std::optional<int64_t> ts) {
    auto event = v.str("event");
    auto secs = v.number("s");
    auto fun = v.str("fun");
    if (!valid_ts(ts) || !event || !secs || !fun || !std::isfinite(*secs) || *secs < 0 || *secs > 1e6) return false;
    // "jit(train_step)" for lowering and backend compile, "train_step" for tracing.
    std::string name = bounded(*fun);
    if (name.starts_with("jit(") && name.ends_with(")")) name = name.substr(4, name.size() - 5);
    const Stage st{*ts, static_cast<int64_t>(*secs * 1e9)};
    if (st.end - st.dur <= 0 || !in_run(st.end - st.dur, st.dur)) return false;  // a stage in the run
    auto full = [&](const auto& m) { return !m.contains(name) && m.size() >= kMaxFuns; };
    if (*event == "/jax/core/compile/jaxpr_trace_duration") {
      if (full(r.trace)) return ++s_.over_cap, true;
      r.trace[name] = st;
    } else if (*event == "/jax/core/compile/jaxpr_to_mlir_module_duration") {
      if (full(r.lower)) return ++s_.over_cap, true;
      r.lower[name] = st;
    } else if (*event == "/jax/core/compile/backend_compile_duration") {
      if (full(r.compiled)) return ++s_.over_cap, true;
      // A stage belongs to this compilation only if it ended after the
      // last one: a jitted function traced inside another's trace (and
      // compiled as part of it) leaves stages of its own behind.
      auto fresh = [&](auto& m) -> std::optional<Stage> {
        auto it = m.find(name);
        if (it == m.end()) return std::nullopt;
        Stage s = it->second;
        m.erase(it);
        if (s.end <= r.last_compile_end) return std::nullopt;
        return s;
      };
      Compilation c;
      c.fun = name;
      c.backend_ns = st.dur;
      int64_t start = st.end - st.dur;
      if (auto l = fresh(r.lower)) {
        c.lower_ns = l->dur;
        start = std::min(start, l->end - l->dur);
      }
      if (auto t = fresh(r.trace)) start = std::min(start, t->end - t->dur);
      if (auto m = r.misses.find(name); m != r.misses.end()) {
        if (m->second.ts > r.last_compile_end) c.miss = std::move(m->second);
        r.misses.erase(m);
      }
      c.ts = std::max<int64_t>(start, 1);
      c.dur = st.end - c.ts;
      c.index = r.compiled[name]++;
      r.last_compile_end = st.end;
      if (!keep(store::schema::compilations, kept_compilations_)) return true;
      ++kept_compilations_;
      if (c.miss && !c.miss->dims.empty()) {
        if (!keep(store::schema::compilation_inputs, kept_inputs_)) c.miss->dims.clear();
        kept_inputs_ += c.miss->dims.size();
      }
      r.p.compilations.push_back(std::move(c));
    }
    r.p.last_ts = std::max(r.p.last_ts, *ts);
    return true;
  }

  Status write_rows() override {
    for (Process& p : processes_) TC_RETURN_IF_ERROR(write_process(p));
    return Status::Ok();
  }

  Status write_process(Process& p) {
    const int64_t u = utid(p.pid);
    // Steps: the calls of the jitted function called most (the first of a tie),
    // each from its start to the next one's; the last to the log's last time.
    // A process whose steps the torch hook marked keeps those.
    std::vector<int64_t> ends;
    if (auto torch = t_.step_ends.find(p.pid); torch != t_.step_ends.end() && !torch->second.empty()) {
      ends = torch->second;
    } else if (!p.calls.empty()) {
      std::map<int64_t, int64_t> count;
      std::map<int64_t, int64_t> first_seen;
      for (size_t i = 0; i < p.calls.size(); ++i) {
        ++count[p.calls[i].f];
        first_seen.try_emplace(p.calls[i].f, static_cast<int64_t>(i));
      }
      int64_t step_fun = -1, most = 0;
      for (const auto& [f, n] : count) {
        if (n > most || (n == most && first_seen[f] < first_seen[step_fun])) {
          step_fun = f;
          most = n;
        }
      }
      std::vector<const Call*> steps;
      const import_common::InputShapes* shapes = nullptr;  // the last "in" of the step function, in log order
      std::vector<const import_common::InputShapes*> shapes_of;  // each step's, parallel to steps
      for (const Call& c : p.calls) {
        if (c.f != step_fun) continue;
        if (c.in) shapes = &*c.in;
        steps.push_back(&c);
        shapes_of.push_back(shapes);
      }
      for (size_t i = 0; i < steps.size(); ++i) {
        if (i > 0 && steps[i]->ts < steps[i - 1]->ts) {
          shapes_of.assign(steps.size(), nullptr);  // not in call order: what each call carried over is unknown
          break;
        }
      }
      std::stable_sort(steps.begin(), steps.end(), [](const Call* a, const Call* b) { return a->ts < b->ts; });
      const std::vector<int64_t> peaks = step_peaks(steps);
      for (size_t i = 0; i < steps.size(); ++i) {
        if (shapes_of[i])
          for (const auto& [name, dims] : *shapes_of[i]) TC_RETURN_IF_ERROR(write_step_input(u, static_cast<int64_t>(i), name, dims));
        const int64_t from = steps[i]->ts;
        const int64_t to = i + 1 < steps.size() ? steps[i + 1]->ts : std::max(steps[i]->end, p.last_ts);
        if (!room(store::schema::steps)) continue;
        TC_RETURN_IF_ERROR(t_.writer->row(store::schema::steps).null().i64(u).i64(from).i64(to - from).i64(static_cast<int64_t>(i)).i64(0).text("jax").insert());
        if (peaks[i] > 0) TC_RETURN_IF_ERROR(write_counter(u, from, "memory.live_bytes", "jax", static_cast<double>(peaks[i])));
        ends.push_back(to);
        ++s_.steps;
      }
      if (auto f = p.funs.find(step_fun); f != p.funs.end()) s_.step_function = f->second.name;
    }
    // Before the first step, 0; during step k, k.
    auto step_at = [&](int64_t ts) {
      return static_cast<int64_t>(std::lower_bound(ends.begin(), ends.end(), ts + 1) - ends.begin());
    };
    std::map<std::string, std::string> def_of;  // fun name -> "file:line" of its definition
    for (const auto& [i, f] : p.funs) def_of.try_emplace(f.name, f.file + ":" + std::to_string(f.line));
    int64_t next_graph = std::max<int64_t>(t_.first_graph_id, s_.last_graph_id + 1);
    std::vector<std::tuple<std::string, int64_t, int64_t>> compiled;  // (function, end, graph id) of each row
    for (const Compilation& c : p.compilations) {
      if (!room(store::schema::compilations)) continue;
      const int64_t graph = next_graph++;
      s_.last_graph_id = graph;
      compiled.emplace_back(c.fun, c.ts + c.dur, graph);
      const bool user = c.miss.has_value();
      const char* reason = !user || c.miss->first ? "first" : c.miss->diff.empty() ? "shape_change" : "structure_change";
      auto loc = user ? location(c.fun, c.miss->call_file, c.miss->call_fn, c.miss->call_line) : location(c.fun, "", c.fun, 0);
      if (!loc.ok()) return loc.status();
      auto def = def_of.find(c.fun);
      // One structure per jitted function (JAX's own functions: per name and compilation, each its first).
      const std::string structure = "jax " + (def != def_of.end() ? def->second + ":" : std::string()) + c.fun + (user ? "" : "#" + std::to_string(c.index));
      auto row = t_.writer->row(store::schema::compilations);
      row.null().i64(u).i64(c.ts).i64(c.dur).i64(graph).i64(step_at(c.ts));
      row.text(structure + " #" + std::to_string(c.index)).text(structure).text(reason).text(user ? "jit_call" : "eager_op").i64(*loc);
      row.i64(0).i64(0).i64(0).i64(0).i64(c.lower_ns).i64(c.backend_ns).text("built");
      if (std::string_view(reason) == "structure_change") row.text(c.miss->diff); else row.null();
      row.null();  // source_path
      row.text("jax").text("jit(" + c.fun + ")").null();
      TC_RETURN_IF_ERROR(row.insert());
      ++s_.compilations;
      if (std::string_view(reason) != "shape_change") continue;
      for (const DimChange& d : c.miss->dims) {
        TC_RETURN_IF_ERROR(write_input(u, graph, d.input, d.dim, d.old_value, d.new_value));
      }
    }
    TC_RETURN_IF_ERROR(write_memory(p, u, compiled));
    // Each RESOURCE_EXHAUSTED an out_of_memory row; what was live is the failing function's last executable the
    // hook analysed after a call (the failing call's own when its call returned before the error surfaced: what the
    // step needed), its arguments the inputs, its temporaries the activations.
    for (const Oom& o : p.ooms) {
      if (!room(store::schema::out_of_memory)) break;
      const Mem* last = nullptr;
      for (const Mem& m : p.mems)
        if (m.f == o.f && m.ran && !m.model && m.ts <= o.ts) last = &m;
      const Mem m = last ? *last : Mem{};
      auto row = t_.writer->row(store::schema::out_of_memory);
      row.null().i64(u).i64(o.ts).i64(step_at(o.ts)).i64(o.requested).i64(m.peak()).i64(p.capacity).i64(0).i64(0).i64(0).i64(m.temp).i64(m.arg).i64(0);
      if (o.batch > 0) row.i64(o.batch); else row.null();
      TC_RETURN_IF_ERROR(row.insert());
    }
    for (const Eval& e : p.evals) {
      auto loc = location(e.what, e.file, e.fn, e.line);
      if (!loc.ok()) return loc.status();
      TC_RETURN_IF_ERROR(write_evaluation({.utid = u, .ts = e.ts, .dur = e.dur, .step = step_at(e.ts), .kind = e.kind, .location = *loc, .what = e.what}));
    }
    return Status::Ok();
  }

  // Each step's peak: its executable's (the analysis the hook logged after the
  // first call with its shapes; a call with shapes seen before, that one's; a
  // call with the shapes of the call before, that one's); 0 when not known.
  static std::vector<int64_t> step_peaks(const std::vector<const Call*>& steps) {
    std::map<import_common::InputShapes, int64_t> of_shapes;
    std::vector<int64_t> out;
    int64_t current = 0;
    for (const Call* c : steps) {
      if (c->in) {
        auto it = of_shapes.find(*c->in);
        current = c->peak > 0 ? (of_shapes[*c->in] = c->peak) : it != of_shapes.end() ? it->second : 0;
      } else if (c->peak > 0) {
        current = c->peak;
      }
      out.push_back(current);
    }
    return out;
  }

  // Each executable's analysis a memory_plans row of the compilation it
  // follows (of its function, the last to end before it; one row per graph);
  // the batch model's points framework_memory rows.
  Status write_memory(const Process& p, int64_t u, const std::vector<std::tuple<std::string, int64_t, int64_t>>& compiled) {
    std::set<int64_t> planned;
    for (const Mem& m : p.mems) {
      auto fun = p.funs.find(m.f);
      const std::string name = fun != p.funs.end() ? fun->second.name : "?";
      if (m.model) {
        if (!room(store::schema::framework_memory)) continue;
        auto row = t_.writer->row(store::schema::framework_memory);
        row.null().i64(u).i64(m.ts).text("jax").text("jit(" + name + ")").i64(m.batch).i64(m.ran ? 1 : 0);
        TC_RETURN_IF_ERROR(row.i64(m.peak()).i64(m.arg).i64(m.out).i64(m.temp).i64(m.alias).insert());
        continue;
      }
      if (!m.ran) continue;
      int64_t graph = 0, end = -1;
      for (const auto& [fn, e, g] : compiled) {
        if (fn == name && e <= m.ts && e > end) graph = g, end = e;
      }
      if (graph != 0 && !planned.insert(graph).second) continue;
      if (!room(store::schema::memory_plans)) continue;
      // XLA does not split its buffers by role: the arguments are the inputs (parameters, state and batch), the temporaries the activations.
      auto row = t_.writer->row(store::schema::memory_plans);
      row.null().i64(u).i64(graph).i64(m.peak()).i64(0).i64(0).i64(0).i64(m.temp).i64(m.arg).i64(0).i64(0);
      if (m.batch > 0) row.i64(m.batch); else row.null();
      TC_RETURN_IF_ERROR(row.i64(p.capacity).insert());
    }
    return Status::Ok();
  }

  std::vector<Process> processes_;
  size_t kept_mems_ = 0;
  size_t kept_calls_ = 0, kept_evals_ = 0, kept_compilations_ = 0, kept_inputs_ = 0;  // held for write_rows(), all files
};

}  // namespace

StatusOr<ImportSummary> import_jax_log(const std::string& dir, ImportTarget& target, const ImportLimits& limits) {
  JaxImporter im(target, limits);
  return import_common::import_dir(im, "import_jax_log", dir, "jax-", "JAX logs");
}

}  // namespace tc::import
