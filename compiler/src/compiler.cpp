// The compiled path's driver: signature, caches, reasons, build, execution.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "compile.h"
#include "events.h"
#include "random.h"
#include "tc/memory.h"

#ifndef TC_BLAS_LIBRARY_PATH
#define TC_BLAS_LIBRARY_PATH "-lopenblas"
#endif

namespace tc::detail {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string site_of(const std::source_location& w) {
  return std::string(w.file_name()) + ":" + std::to_string(w.line());
}

struct Hasher {
  uint64_t h = 0x6a09e667f3bcc908ULL;
  void add(uint64_t v) { h = mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))); }
  void add_double(double d) {
    uint64_t v;
    std::memcpy(&v, &d, sizeof v);
    add(v);
  }
};

uint64_t hash_text(const std::string& s) {
  Hasher h;
  for (std::size_t i = 0; i < s.size(); i += 8) {
    uint64_t v = 0;
    std::memcpy(&v, s.data() + i, std::min<std::size_t>(8, s.size() - i));
    h.add(v);
  }
  h.add(s.size());
  return h.h;
}

// Structural hash of a lowered graph; `shapes` false gives the shape-erased
// hash (ranks stay; shapes, reshape targets, slice bounds and fill values go,
// since those follow the shapes, e.g. a mean's 1/n).
uint64_t structure_hash(const CGraph& g, bool shapes) {
  Hasher h;
  for (const CNode& n : g.nodes) {
    h.add(static_cast<uint64_t>(n.op) | static_cast<uint64_t>(n.dtype) << 8 | static_cast<uint64_t>(n.category) << 16);
    h.add(static_cast<uint64_t>(n.input_slot + 1));
    h.add(n.shape.size());
    if (shapes)
      for (int64_t d : n.shape) h.add(static_cast<uint64_t>(d));
    h.add(n.in.size());
    for (int k : n.in) h.add(static_cast<uint64_t>(k));
    bool shape_attr = n.op == Op::Slice || n.op == Op::Fill;
    if (shapes || !shape_attr) {
      for (int64_t v : n.attrs.ints) h.add(static_cast<uint64_t>(v));
      h.add_double(n.attrs.scalar);
      h.add_double(n.attrs.scalar2);
    } else if (n.op == Op::Slice) {
      h.add(static_cast<uint64_t>(n.attrs.ints[0]));
    }
    h.add(n.attrs.seed);
    h.add(n.attrs.flag);
  }
  for (int o : g.outputs) h.add(static_cast<uint64_t>(o));
  for (bool b : g.inplace_ok) h.add(b);
  return h.h;
}

struct Lowered {
  CGraph g;
  std::vector<std::pair<Op, std::source_location>> ops;  // non-leaf nodes, for diffs
};

Lowered lower(const Graph& graph, Trigger trigger) {
  Lowered l;
  std::unordered_map<const Node*, int> at;
  for (std::size_t s = 0; s < graph.inputs.size(); ++s) {
    const Node* n = graph.inputs[s];
    CNode c;
    c.op = Op::Data;
    c.dtype = n->dtype;
    c.shape = n->shape;
    c.where = n->where;
    c.category = n->category;
    c.input_slot = static_cast<int>(s);
    at[n] = static_cast<int>(l.g.nodes.size());
    l.g.nodes.push_back(c);
  }
  // How many references the cut's nodes hold to each input node.
  std::unordered_map<const Node*, long> refs;
  std::unordered_map<const Node*, const NodePtr*> one_ref;
  for (const Node* n : graph.nodes) {
    CNode c;
    c.op = n->op;
    c.dtype = n->dtype;
    c.shape = n->shape;
    c.attrs = n->attrs;
    c.where = n->where;
    c.category = n->category;
    for (const NodePtr& in : n->inputs) {
      c.in.push_back(at.at(in.get()));
      if (in->realized()) ++refs[in.get()], one_ref[in.get()] = &in;
    }
    at[n] = static_cast<int>(l.g.nodes.size());
    l.g.nodes.push_back(std::move(c));
    l.ops.push_back({n->op, n->where});
  }
  for (const Node* o : graph.outputs) l.g.outputs.push_back(at.at(o));
  // An input may be overwritten in place when nothing outside this step's
  // graph can see it afterwards: mark_step() drops the whole structure, only
  // the cut's nodes refer to the node, and only that node holds its buffer.
  l.g.inplace_ok.assign(graph.inputs.size(), false);
  // TC_INPLACE=0 turns in-place updates off (a debugging aid).
  static const bool inplace_off = [] {
    const char* e = std::getenv("TC_INPLACE");
    return e && std::string_view(e) == "0";
  }();
  if (trigger == Trigger::mark_step && !inplace_off)
    for (std::size_t s = 0; s < graph.inputs.size(); ++s) {
      const Node* n = graph.inputs[s];
      auto it = one_ref.find(n);
      if (it == one_ref.end()) continue;
      // Only optimizer updates (parameters, optimizer state) are updated in place.
      bool state = n->category == Category::parameter || n->category == Category::optimizer_state;
      l.g.inplace_ok[s] = state && it->second->use_count() == refs[n] && n->data.use_count() == 1;
    }
  return l;
}

// Which nodes' sizes scale with the batch dimension: dim 0 of named host
// inputs (from_host with a name), propagated through shape inference.
std::vector<bool> batch_scaled(const CGraph& g, const std::vector<std::string>& names, int64_t* batch_size) {
  std::vector<std::vector<bool>> f(g.nodes.size());
  *batch_size = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const CNode& n = g.nodes[i];
    auto& fl = f[i];
    fl.assign(n.shape.size(), false);
    auto in = [&](std::size_t k) -> const std::vector<bool>& { return f[static_cast<std::size_t>(n.in[k])]; };
    auto in_shape = [&](std::size_t k) -> const Shape& { return g.nodes[static_cast<std::size_t>(n.in[k])].shape; };
    auto bcast_from = [&](std::size_t k) {
      const auto& x = in(k);
      std::size_t lead = fl.size() - std::min(fl.size(), x.size());
      for (std::size_t d = 0; d < x.size() && lead + d < fl.size(); ++d) fl[lead + d] = fl[lead + d] || x[d];
    };
    if (n.is_leaf()) {
      const std::string& name = names[static_cast<std::size_t>(n.input_slot)];
      if (!name.empty() && !n.shape.empty() && n.category == Category::input) {  // host data, not parameters
        fl[0] = true;
        if (*batch_size == 0) *batch_size = n.shape[0];
      }
      continue;
    }
    switch (n.op) {
      case Op::Sum: case Op::Max: {
        const auto& x = in(0);
        std::size_t o = 0;
        for (std::size_t d = 0; d < x.size(); ++d) {
          bool red = std::find(n.attrs.ints.begin(), n.attrs.ints.end(), static_cast<int64_t>(d)) != n.attrs.ints.end();
          if (!red) fl[o++] = x[d];
          else if (n.attrs.flag) ++o;
        }
        break;
      }
      case Op::Permute:
        for (std::size_t d = 0; d < fl.size(); ++d) fl[d] = in(0)[static_cast<std::size_t>(n.attrs.ints[d])];
        break;
      case Op::Reshape: {
        const Shape& s = in_shape(0);
        for (std::size_t j = 0; j < s.size(); ++j) {
          if (!in(0)[j]) continue;
          int64_t before = 1;
          for (std::size_t d = 0; d < j; ++d) before *= s[d];
          int64_t acc = 1;
          for (std::size_t d = 0; d < n.shape.size(); ++d) {
            if (acc == before || (acc <= before && acc * n.shape[d] > before)) {
              fl[d] = true;
              break;
            }
            acc *= n.shape[d];
          }
        }
        break;
      }
      case Op::MatMul: {
        const auto &a = in(0), &b = in(1);
        std::size_t r = fl.size();
        for (std::size_t d = 0; d + 2 < r; ++d) {
          std::size_t la = r - a.size(), lb = r - b.size();
          fl[d] = (d >= la && a[d - la]) || (d >= lb && b[d - lb]);
        }
        fl[r - 2] = a[a.size() - 2];
        fl[r - 1] = b[b.size() - 1];
        break;
      }
      case Op::Gather: {
        auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
        const auto &x = in(0), &ids = in(1);
        std::size_t o = 0;
        for (std::size_t d = 0; d < ax; ++d) fl[o++] = x[d];
        for (bool v : ids) fl[o++] = v;
        for (std::size_t d = ax + 1; d < x.size(); ++d) fl[o++] = x[d];
        break;
      }
      case Op::ScatterAdd: {
        auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
        const auto& x = in(0);
        std::size_t ri = in_shape(1).size();
        for (std::size_t d = 0; d < ax; ++d) fl[d] = x[d];
        for (std::size_t d = ax + 1; d < fl.size(); ++d) fl[d] = x[d + ri - 1];
        break;
      }
      case Op::OneHot:
        for (std::size_t d = 0; d < in(0).size(); ++d) fl[d] = in(0)[d];
        break;
      case Op::Random:
        break;
      default:
        for (std::size_t k = 0; k < n.in.size(); ++k)
          if (in_shape(k).size() <= fl.size()) bcast_from(k);
        break;
    }
  }
  std::vector<bool> out(g.nodes.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    for (bool b : f[i]) out[i] = out[i] || b;
  return out;
}

// ---- building and loading code ------------------------------------------------

std::string cache_dir() {
  std::string dir;
  if (const char* e = std::getenv("TC_CACHE_DIR"); e && *e) dir = e;
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/tc";
  else dir = "/tmp/tc-cache";
  // mkdir -p
  for (std::size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0755);
  return dir;
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    ::pclose(f);
  }
  return out;
}

// The C++ compiler that builds generated code: TC_CXX (a command; default g++).
std::string cxx() {
  const char* e = std::getenv("TC_CXX");
  return e && *e ? std::string(e) : std::string("g++");
}

// The flags and everything else the built code depends on besides its source.
const std::string& build_flags() {
  static const std::string flags =
      "-std=c++17 -O2 -march=native -ffp-contract=off -fno-math-errno -fPIC -shared -fopenmp";
  return flags;
}

const std::string& toolchain_key() {
  static const std::string key = [] {
    std::string k = build_flags() + "|" + run_capture(cxx() + " -dumpfullversion 2>/dev/null") + "|" TC_BLAS_LIBRARY_PATH;
    // -march=native: the code is only valid on this CPU model.
    std::ifstream cpu("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpu, line))
      if (line.rfind("flags", 0) == 0 || line.rfind("model name", 0) == 0) k += line;
      else if (line.empty()) break;
    return k;
  }();
  return key;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
  }
  std::rename(tmp.c_str(), path.c_str());
}

using RunFn = int (*)(void* const*);

struct Built {
  RunFn fn = nullptr;
  std::string source_path;
  bool disk_hit = false;
  int64_t build_ns = 0;
};

// Parts a graph's source is split into for the build: one per core (at
// most 4) for a graph with many kernels, compiled at once; one otherwise.
int build_parts(std::size_t kernels) {
  if (kernels < 16) return 1;
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::clamp<long>(cores, 1, 4));
}

Built build(const std::string& source, int64_t graph_id, int parts) {
  std::string dir = cache_dir();
  Hasher h;
  h.add(hash_text(source));
  h.add(hash_text(toolchain_key()));
  std::string key = hex(h.h) + hex(hash_text(source));
  Built b;
  b.source_path = dir + "/tc_" + key + ".cpp";
  std::string so = dir + "/tc_" + key + ".so";
  if (!exists(b.source_path)) write_file(b.source_path, source);
  void* handle = nullptr;
  if (exists(so)) {
    handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    b.disk_hit = handle != nullptr;
  }
  if (!handle) {
    int64_t t0 = now_ns();
    std::string tmp = so + ".tmp." + std::to_string(::getpid());
    std::string log = dir + "/tc_" + key + ".log";
    std::string cmd;
    if (parts <= 1) {
      cmd = cxx() + " " + build_flags() + " -o " + quote(tmp) + " " + quote(b.source_path) + " " +
            quote(TC_BLAS_LIBRARY_PATH) + " > " + quote(log) + " 2>&1";
    } else {
      // Each part compiles in the background; the shared object links them
      // once all succeeded. Their output ends up in the one log.
      std::string objs, logs, wait_all = "s=0;";
      for (int i = 0; i < parts; ++i) {
        // Per-process names (tmp has the pid): two processes may build the same graph at once.
        std::string obj = quote(tmp + "." + std::to_string(i) + ".o"), plog = quote(tmp + "." + std::to_string(i) + ".log");
        cmd += cxx() + " " + build_flags() + " -DTC_PART=" + std::to_string(i) + " -c -o " + obj + " " +
               quote(b.source_path) + " > " + plog + " 2>&1 & p" + std::to_string(i) + "=$!; ";
        wait_all += " wait $p" + std::to_string(i) + " || s=1;";
        objs += " " + obj;
        logs += " " + plog;
      }
      cmd += wait_all + " cat" + logs + " > " + quote(log) + " 2>/dev/null; rm -f" + logs + "; if [ $s = 0 ]; then " + cxx() + " " +
             build_flags() + " -o " + quote(tmp) + objs + " " + quote(TC_BLAS_LIBRARY_PATH) + " >> " + quote(log) +
             " 2>&1; s=$?; fi; rm -f" + objs + "; exit $s";
    }
    int rc = std::system(cmd.c_str());
    b.build_ns = now_ns() - t0;
    if (rc != 0) {
      std::ifstream f(log);
      std::string first, line;
      for (int i = 0; i < 20 && std::getline(f, line); ++i) first += line + "\n";
      ::unlink(tmp.c_str());
      int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : rc;
      throw Error("tc: building graph " + std::to_string(graph_id) + " failed (" + cxx() + " exit status " +
                  std::to_string(status) + "); the generated source is kept at " + b.source_path +
                  ", the compiler's output at " + log + ":\n" + first);
    }
    std::rename(tmp.c_str(), so.c_str());
    handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      throw Error("tc: loading graph " + std::to_string(graph_id) + " from " + so + " failed: " + ::dlerror() +
                  " (source kept at " + b.source_path + ")");
  }
  b.fn = reinterpret_cast<RunFn>(::dlsym(handle, "tc_run"));
  if (!b.fn) throw Error("tc: " + so + " has no tc_run (source at " + b.source_path + ")");
  return b;
}

// ---- the caches -------------------------------------------------------------

struct Executable {
  int64_t graph_id = 0;
  Program program;
  RunFn fn = nullptr;
  int64_t kernels = 0, nodes = 0;
};

struct Seen {
  std::vector<Shape> input_shapes;
};

struct Compiler {
  std::unordered_map<uint64_t, std::shared_ptr<Executable>> by_signature;
  std::unordered_map<uint64_t, std::vector<Seen>> by_erased;
  std::map<std::string, std::vector<std::pair<Op, std::source_location>>> by_site;
  int64_t next_graph_id = 1;
};

Compiler& compiler() {
  static Compiler c;
  return c;
}

bool verify_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TC_VERIFY");
    return e && *e && std::string_view(e) != "0";
  }();
  return on;
}

const char* trigger_name(Trigger t) { return t == Trigger::mark_step ? "mark_step" : "explicit_evaluation"; }

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::shared_ptr<Executable> compile(const Graph& graph, Lowered& l, uint64_t sig, uint64_t erased, Trigger trigger,
                                    const std::source_location& site) {
  Compiler& c = compiler();
  events::CompilationRecord rec;
  rec.start = events::ticks();
  int64_t t_start = now_ns();
  rec.graph_id = c.next_graph_id++;
  rec.step = current_step();
  rec.signature = hex(sig);
  rec.shape_erased = hex(erased);
  rec.trigger = trigger_name(trigger);
  rec.site_name = trigger == Trigger::mark_step ? "mark_step" : "explicit_evaluation";
  rec.site = site;
  rec.nodes_before = static_cast<int64_t>(graph.nodes.size());

  // Why: a known shape-erased structure means only shapes changed.
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  for (const Node* in : graph.inputs) {
    shapes.push_back(in->shape);
    names.push_back(in->name);
  }
  std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>> changed;
  std::string site_key = site_of(site) + ":" + site.function_name();
  if (auto it = c.by_erased.find(erased); it != c.by_erased.end()) {
    rec.reason = "shape_change";
    const Seen* best = nullptr;
    std::size_t best_diffs = SIZE_MAX;
    for (const Seen& s : it->second) {
      std::size_t diffs = 0;
      for (std::size_t i = 0; i < shapes.size() && i < s.input_shapes.size(); ++i)
        for (std::size_t d = 0; d < shapes[i].size() && d < s.input_shapes[i].size(); ++d)
          diffs += shapes[i][d] != s.input_shapes[i][d];
      if (diffs < best_diffs) best = &s, best_diffs = diffs;
    }
    for (std::size_t i = 0; best && i < shapes.size() && i < best->input_shapes.size(); ++i)
      for (std::size_t d = 0; d < shapes[i].size() && d < best->input_shapes[i].size(); ++d)
        if (shapes[i][d] != best->input_shapes[i][d])
          changed.emplace_back(names[i].empty() ? site_of(graph.inputs[i]->where) : names[i], static_cast<int64_t>(d),
                               best->input_shapes[i][d], shapes[i][d]);
  } else if (auto st = c.by_site.find(site_key); st != c.by_site.end()) {
    rec.reason = "structure_change";
    const auto& old = st->second;
    std::ostringstream os;
    os << "nodes " << old.size() << " -> " << l.ops.size();
    for (std::size_t i = 0; i < std::max(old.size(), l.ops.size()); ++i) {
      bool o = i < old.size(), n = i < l.ops.size();
      if (o && n && old[i].first == l.ops[i].first) continue;
      os << "; first differing op at #" << i << ": ";
      if (o) os << op_name(old[i].first) << " (" << site_of(old[i].second) << ")";
      else os << "(none)";
      os << " -> ";
      if (n) os << op_name(l.ops[i].first) << " (" << site_of(l.ops[i].second) << ")";
      else os << "(none)";
      break;
    }
    rec.diff = os.str();
  } else {
    rec.reason = "first";
  }
  c.by_erased[erased].push_back({shapes});
  c.by_site[site_key] = l.ops;

  // Passes.
  uint64_t pt = events::ticks();
  int64_t p0 = now_ns();
  auto passes = run_passes(l.g, verify_enabled());
  rec.passes_ns = now_ns() - p0;
  {
    // Pass timestamps in recording ticks, laid end to end from the start.
    uint64_t t = pt;
    uint64_t span = events::ticks() - pt;
    int64_t total = std::max<int64_t>(1, rec.passes_ns);
    for (auto& p : passes) {
      uint64_t d = static_cast<uint64_t>(static_cast<double>(span) * static_cast<double>(p.ns) / static_cast<double>(total));
      events::on_compile_pass(rec.graph_id, t, t + d, p.name, p.nodes_after);
      t += d;
      events::log_debug("graph " + std::to_string(rec.graph_id) + " pass " + p.name + ": " + ms(p.ns) + ", " +
                        std::to_string(p.nodes_after) + " nodes");
    }
  }
  rec.nodes_after = l.g.live_nodes();

  // Kernels, memory plan, source.
  int64_t c0 = now_ns();
  auto exe = std::make_shared<Executable>();
  exe->graph_id = rec.graph_id;
  exe->program = schedule(l.g);
  int64_t batch_size = 0;
  std::vector<bool> scaled = batch_scaled(l.g, names, &batch_size);
  plan_arena(exe->program, scaled);
  if (verify_enabled()) verify_program(exe->program);
  std::string name = "graph " + std::to_string(rec.graph_id);
  int parts = build_parts(exe->program.kernels.size());
  std::string source = make_cpp_emitter()->emit(exe->program, name, parts);
  rec.codegen_ns = now_ns() - c0;
  rec.kernels = static_cast<int64_t>(exe->program.kernels.size());
  exe->kernels = rec.kernels;
  exe->nodes = rec.nodes_before;

  // Memory plan: everything live now, plus outputs and the arena.
  {
    const Program& p = exe->program;
    events::MemoryPlanRecord m;
    m.graph_id = rec.graph_id;
    MemoryStats ms_ = memory_stats();
    m.by_category = ms_.live_by_category;
    m.capacity = ms_.capacity;
    int64_t batch = 0;
    for (std::size_t s = 0; s < graph.inputs.size(); ++s)
      if (scaled[static_cast<std::size_t>(p.bufs[s].node)]) batch += p.bufs[s].bytes;
    std::vector<bool> counted(p.bufs.size(), false);
    for (std::size_t s = 0; s < graph.outputs.size(); ++s) {
      int b = p.output_buf[s];
      if (p.inplace_input[s] >= 0 || counted[static_cast<std::size_t>(b)]) continue;
      counted[static_cast<std::size_t>(b)] = true;
      m.by_category[static_cast<std::size_t>(graph.outputs[s]->category)] += p.bufs[static_cast<std::size_t>(b)].bytes;
      int node = p.bufs[static_cast<std::size_t>(b)].node;
      if (node >= 0 && scaled[static_cast<std::size_t>(node)]) batch += p.bufs[static_cast<std::size_t>(b)].bytes;
    }
    m.by_category[static_cast<std::size_t>(Category::activation)] += p.arena_bytes;
    batch += p.arena_batch_bytes;
    for (int64_t v : m.by_category) m.peak += v;
    m.batch_bytes = batch;
    m.batch_size = batch_size;
    events::on_memory_plan(m);
    events::log_debug(name + " memory plan: peak " + std::to_string(m.peak) + " bytes, arena " +
                      std::to_string(p.arena_bytes) + " bytes, batch-scaled " + std::to_string(batch) + " bytes");
  }

  Built b = build(source, rec.graph_id, parts);
  exe->fn = b.fn;
  rec.build_ns = b.disk_hit ? 0 : b.build_ns;
  rec.cache = b.disk_hit ? "disk_hit" : "built";
  rec.source_path = b.source_path;
  events::log_debug(name + ": " + std::to_string(rec.kernels) + " kernels, " + std::to_string(rec.nodes_before) + " -> " +
                    std::to_string(rec.nodes_after) + " nodes, reason " + rec.reason + ", codegen " + ms(rec.codegen_ns) +
                    ", build " + ms(rec.build_ns) + " (" + rec.cache + "), total " + ms(now_ns() - t_start) +
                    ", source " + rec.source_path);
  events::on_compilation(rec);
  for (auto& [input, dim, o, n] : changed) events::on_compilation_input(rec.graph_id, input, dim, o, n);
  return exe;
}

void execute(const Executable& exe, const Graph& g) {
  const Program& p = exe.program;
  std::vector<void*> ptrs(static_cast<std::size_t>(p.num_inputs + p.num_outputs + 1), nullptr);
  for (std::size_t s = 0; s < g.inputs.size(); ++s) ptrs[s] = g.inputs[s]->data->raw();
  std::vector<std::shared_ptr<Buffer>> outs(g.outputs.size());
  std::map<int, std::shared_ptr<Buffer>> by_buf;
  for (std::size_t s = 0; s < g.outputs.size(); ++s) {
    int in = p.inplace_input[s];
    int b = p.output_buf[s];
    if (in >= 0) {
      outs[s] = g.inputs[static_cast<std::size_t>(in)]->data;
    } else if (auto it = by_buf.find(b); it != by_buf.end()) {
      outs[s] = it->second;
    } else {
      outs[s] = allocate(p.bufs[static_cast<std::size_t>(b)].bytes, g.outputs[s]->category);
      by_buf[b] = outs[s];
    }
    ptrs[static_cast<std::size_t>(p.num_inputs) + s] = outs[s]->raw();
  }
  std::shared_ptr<Buffer> arena;
  if (p.arena_bytes > 0) {
    arena = allocate(p.arena_bytes, Category::activation);
    ptrs.back() = arena->raw();
  }
  // One thread pool: generated code splits matrix products over its OpenMP
  // team, so BLAS runs single-threaded inside them. Two pools (OpenMP's
  // spinning workers and OpenBLAS's) on a 2-core machine took the cores from
  // each other (MLP step 3.9 ms vs 2.6 ms with one pool).
  struct BlasThreads {
    using Set = void (*)(int);
    using Get = int (*)();
    Set set = reinterpret_cast<Set>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    Get get = reinterpret_cast<Get>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  };
  static const BlasThreads blas;
  struct SingleThreadedBlas {
    int saved = 0;
    SingleThreadedBlas() {
      if (blas.set && blas.get && (saved = blas.get()) != 1) blas.set(1);
    }
    ~SingleThreadedBlas() {
      if (saved > 1) blas.set(saved);
    }
  };
  int rc;
  {
    SingleThreadedBlas one;
    rc = exe.fn(ptrs.data());
  }
  if (rc != 0)
    throw Error("tc: an index of a gather/embedding is out of range in graph " + std::to_string(exe.graph_id) +
                " (checked at execution)");
  arena.reset();
  for (std::size_t s = 0; s < g.outputs.size(); ++s) {
    g.outputs[s]->data = outs[s];
    if (p.inplace_input[s] >= 0) outs[s]->set_category(g.outputs[s]->category);
  }
}

}  // namespace

int64_t run_compiled(const Graph& g, Trigger trigger, const std::source_location& site) {
  Lowered l = lower(g, trigger);
  uint64_t sig = structure_hash(l.g, true);
  Compiler& c = compiler();
  std::shared_ptr<Executable> exe;
  if (auto it = c.by_signature.find(sig); it != c.by_signature.end()) {
    exe = it->second;
  } else {
    uint64_t erased = structure_hash(l.g, false);
    exe = compile(g, l, sig, erased, trigger, site);
    c.by_signature[sig] = exe;
  }
  int64_t t0 = now_ns();
  uint64_t start = events::ticks();
  execute(*exe, g);
  events::on_graph_executed(static_cast<events::ExecTrigger>(trigger), static_cast<int64_t>(g.nodes.size()),
                            now_ns() - t0, start, exe->graph_id);
  return exe->graph_id;
}

}  // namespace tc::detail
