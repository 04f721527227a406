// The compiled path's driver. compile() runs named stages in order:
//   diagnose   why the cache missed: first, shape_change (which input dims), structure_change (a diff)
//   optimize   the graph passes (passes.cpp), timed
//   schedule   kernels (schedule.cpp) and the kernel passes, timed
//   plan       arena offsets and the batch-scaled bound (plan.cpp)
//   build      the backend renders, builds or loads the code (backend/)
//   record     compilations, compilation_inputs, compile_passes, memory_plans
// execute() binds buffers and runs the backend's code.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "backend/backend.h"
#include "clock.h"
#include "collective.h"
#include "compile.h"
#include "dynamic.h"
#include "events.h"
#include "hash.h"
#include "tc/memory.h"

namespace tc::detail {
namespace {

std::string site_of(const std::source_location& w) {
  return std::string(w.file_name()) + ":" + std::to_string(w.line());
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
  int64_t collectives = 0;
  for (const Node* n : graph.nodes) {
    CNode c;
    c.op = n->op;
    c.dtype = n->dtype;
    c.shape = n->shape;
    c.attrs = n->attrs;
    // A collective's ordinal: hashed (the signature counts the collectives),
    // keeps two of them apart in cse, and names its call site at execution.
    if (n->op == Op::AllReduce) c.attrs.ints = {collectives++};
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

// ---- the caches -------------------------------------------------------------

struct CompiledGraph {
  int64_t graph_id = 0;
  Program program;
  std::size_t kernels = 0;
  std::unique_ptr<Executable> code;  // nullptr: the eager tier (runs on the eager executor)
  int64_t batch_size = 0;  // the plan's batch dimension (0: none), for out-of-memory records
  bool collectives = false;  // has Op::AllReduce nodes (Kernel::Collective)
  // A dynamic program's family (dynamic.h) and its arena, planned for the
  // largest size run so far and grown (re-planned, recorded) past it.
  std::shared_ptr<const Family> family;
  events::MemoryPlanRecord plan;
};

struct Seen {
  std::vector<Shape> input_shapes;
  std::shared_ptr<const CGraph> graph;  // as lowered: what a family is fitted from
};

using CacheKey = std::pair<const Backend*, uint64_t>;

// A graph's optimized build, running on the builder's thread while its eager
// tier runs the steps. The foreground reads `exe` and `error` only once `done`.
struct TierUp {
  CacheKey key;
  std::unique_ptr<DeferredBuild> build;
  std::shared_ptr<CompiledGraph> exe;  // program, kernels, batch size; code set by the build
  events::CompilationRecord rec;
  int64_t eager_graph_id = 0;
  std::exception_ptr error;
  std::atomic<bool> done{false};
};

// One thread builds the tier-ups, one at a time, in order (g++ already uses
// every core for a large graph). The exit waits for every build submitted: no
// record is left half-made, the next run finds the code on disk, and the
// process never waits longer than it would have without tiers.
class Builder {
 public:
  void submit(std::shared_ptr<TierUp> t) {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) {
      owner_ = ::getpid();
      thread_ = std::thread([this] { work(); });
      // Registered after everything the builds use was constructed, so it
      // runs before their destructors.
      std::atexit([] { builder().stop(); });
    }
    queue_.push_back(std::move(t));
    cv_.notify_all();
  }
  void wait_idle() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  }
  static Builder& builder() {
    static Builder* b = new Builder;  // never destroyed: stop() joins the thread at exit
    return *b;
  }

 private:
  void stop() {
    if (::getpid() != owner_) return;  // a forked child: the thread is its parent's
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }
  void work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<TierUp>> queue_;
  std::thread thread_;
  bool busy_ = false, stopping_ = false;
  pid_t owner_ = 0;
};

struct Compiler {
  // Keyed by the backend too: code built for one device never runs on another
  // (tests switch backends in one process with ScopedBackend).
  std::map<std::pair<const Backend*, uint64_t>, std::shared_ptr<CompiledGraph>> by_signature;
  std::unordered_map<uint64_t, std::vector<Seen>> by_erased;
  std::map<std::string, std::vector<std::pair<Op, std::source_location>>> by_site;
  // Dynamic programs by (backend, shape-erased signature); families that
  // failed to fit or unify, not tried again (erased signature, input slot, dim).
  std::map<std::pair<const Backend*, uint64_t>, std::vector<std::shared_ptr<CompiledGraph>>> dynamic;
  std::set<std::tuple<uint64_t, int, int>> not_dynamic;
  std::vector<std::shared_ptr<TierUp>> tier_ups;  // submitted, not yet adopted
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

const char* trigger_name(Trigger t) {
  return t == Trigger::mark_step ? "mark_step" : t == Trigger::collective ? "collective" : "explicit_evaluation";
}

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

// ---- stages -------------------------------------------------------------------

struct ChangedDim {
  std::string input;
  int64_t dim, old_value, new_value;
  bool dynamic = false;  // this compilation made it symbolic
  int slot = -1;         // the input
};

// Why the cache missed. A known shape-erased structure means only shapes
// changed: name every input dimension that differs from the closest earlier
// graph of that structure, the one whose input shapes differ in the fewest
// dimensions, the most recently compiled of those on a tie (lengths 88, 128,
// 86, 39 read 88->128, 128->86, 86->39). Else a graph cut at the same site
// before is a structure change. Remembers this graph for the next miss.
std::vector<ChangedDim> diagnose(const Graph& graph, const Lowered& l, uint64_t erased, const std::source_location& site,
                                 events::CompilationRecord& rec) {
  Compiler& c = compiler();
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  for (const Node* in : graph.inputs) {
    shapes.push_back(in->shape);
    names.push_back(in->name);
  }
  std::vector<ChangedDim> changed;
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
      if (diffs <= best_diffs) best = &s, best_diffs = diffs;  // in compile order: a tie goes to the later graph
    }
    for (std::size_t i = 0; best && i < shapes.size() && i < best->input_shapes.size(); ++i)
      for (std::size_t d = 0; d < shapes[i].size() && d < best->input_shapes[i].size(); ++d)
        if (shapes[i][d] != best->input_shapes[i][d])
          changed.push_back({names[i].empty() ? site_of(graph.inputs[i]->where) : names[i], static_cast<int64_t>(d),
                             best->input_shapes[i][d], shapes[i][d], false, static_cast<int>(i)});
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
  std::vector<Seen>& seen = c.by_erased[erased];
  seen.push_back({shapes, std::make_shared<const CGraph>(l.g)});
  // Families are fitted from the latest graphs: the older ones' graphs go.
  if (seen.size() > 8) seen[seen.size() - 9].graph.reset();
  c.by_site[site_key] = l.ops;
  return changed;
}

// Records timed passes, laid end to end in recording ticks from `start`.
void record_passes(int64_t graph_id, uint64_t start, int64_t total_ns, const std::vector<PassInfo>& passes) {
  uint64_t t = start;
  uint64_t span = events::ticks() - start;
  int64_t total = std::max<int64_t>(1, total_ns);
  for (const PassInfo& p : passes) {
    uint64_t d = static_cast<uint64_t>(static_cast<double>(span) * static_cast<double>(p.ns) / static_cast<double>(total));
    events::on_compile_pass(graph_id, t, t + d, p.name, p.nodes_after);
    t += d;
    events::log_debug("graph " + std::to_string(graph_id) + " pass " + p.name + ": " + ms(p.ns) + ", " +
                      std::to_string(p.nodes_after) + " nodes");
  }
}

// The graph passes.
void optimize(Lowered& l, events::CompilationRecord& rec) {
  uint64_t start = events::ticks();
  int64_t t0 = now_ns();
  auto passes = run_passes(l.g, verify_enabled());
  rec.passes_ns = now_ns() - t0;
  record_passes(rec.graph_id, start, rec.passes_ns, passes);
  rec.nodes_after = l.g.live_nodes();
}

// Kernels, then the kernel passes (their time counts as pass time).
Program schedule_kernels(const CGraph& g, events::CompilationRecord& rec, CGraph& scheduled) {
  int64_t s0 = now_ns();
  Program p = schedule(g, &scheduled);
  rec.codegen_ns += now_ns() - s0;
  uint64_t start = events::ticks();
  int64_t t0 = now_ns();
  auto passes = run_kernel_passes(scheduled, p, verify_enabled());
  int64_t ns = now_ns() - t0;
  rec.passes_ns += ns;
  record_passes(rec.graph_id, start, ns, passes);
  rec.kernels = static_cast<int64_t>(p.kernels.size());
  return p;
}

// Arena offsets and the memory plan's record.
events::MemoryPlanRecord plan(const Graph& graph, const CGraph& g, Program& p, int64_t graph_id) {
  std::vector<std::string> names;
  for (const Node* in : graph.inputs) names.push_back(in->name);
  std::vector<Category> out_categories;
  for (const Node* o : graph.outputs) out_categories.push_back(o->category);
  MemoryPlan mp = plan_memory(g, names, out_categories, p);
  if (verify_enabled()) verify_program(p);
  events::MemoryPlanRecord m;
  m.graph_id = graph_id;
  m.peak = mp.peak;
  m.batch_bytes = mp.batch_bytes;
  m.batch_size = mp.batch_size;
  m.capacity = mp.capacity;
  m.by_category = mp.by_category;
  return m;
}

// ---- tiered builds (TC_TIERED) -----------------------------------------------

// TC_TIERED=0 turns tiered builds off; read at every miss (tests switch it).
bool tiered_enabled() {
  const char* e = std::getenv("TC_TIERED");
  return !(e && std::string_view(e) == "0");
}

// A graph that may start on the eager tier: a step's graph, or one cut by an
// explicit evaluation (loss.item() before mark_step(): its next runs are the
// next steps'); the build swaps in at a step boundary. Not one cut by a
// collective, nor one with collectives (every rank must run the same code), on a
// backend whose memory the eager executor can read, whose plan leaves room
// for the eager executor's memory (it holds what the plan reuses: the
// Transformer's eager step peaks at 5.7x its plan; 8x is asked for). Not a
// dynamic program (TC_DYNAMIC): later sizes look it up and run its code.
bool may_tier(Trigger trigger, const CompiledGraph& exe, const Backend& be, const events::MemoryPlanRecord& m) {
  constexpr int64_t kEagerOverPlan = 8;
  return (trigger == Trigger::mark_step || trigger == Trigger::explicit_eval) && !exe.collectives && !exe.family && be.host_memory() &&
         m.peak <= m.capacity / kEagerOverPlan && tiered_enabled();
}

void Builder::work() {
  events::on_thread_name("tc builder");
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    std::shared_ptr<TierUp> t = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    t->rec.start = events::ticks();
    int64_t t0 = now_ns();
    try {
      CompiledCode code = t->build->build();
      t->exe->code = std::move(code.code);
      t->rec.build_ns = code.disk_hit ? 0 : code.build_ns;
      t->rec.cache = code.disk_hit ? "disk_hit" : "built";
      t->rec.source_path = code.source_path;
      events::log_debug("graph " + std::to_string(t->rec.graph_id) + ": the optimized tier of graph " +
                        std::to_string(t->eager_graph_id) + ", build " + ms(t->rec.build_ns) + " (" + t->rec.cache +
                        ") on the builder thread, total " + ms(now_ns() - t0));
      events::on_compilation(t->rec);
    } catch (...) {
      t->error = std::current_exception();
    }
    t->build.reset();
    t->done.store(true, std::memory_order_release);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

// Starts the optimized build of `exe` (the eager tier, recorded as `rec`)
// on the builder thread: a CompiledGraph of its own, recorded with
// reason and trigger 'tier_up' when built.
void tier_up(std::unique_ptr<DeferredBuild> build, CompiledGraph& exe, const events::CompilationRecord& rec,
             events::MemoryPlanRecord m, const CGraph& scheduled, const CacheKey& key) {
  auto t = std::make_shared<TierUp>();
  t->key = key;
  t->build = std::move(build);
  t->exe = std::make_shared<CompiledGraph>();
  CompiledGraph& up = *t->exe;
  up.graph_id = events::new_graph_id();
  up.program = std::move(exe.program);
  up.kernels = exe.kernels;
  up.batch_size = exe.batch_size;
  t->rec = rec;
  m.graph_id = up.graph_id;
  up.plan = m;
  t->rec.graph_id = up.graph_id;
  t->rec.reason = t->rec.trigger = "tier_up";
  t->rec.passes_ns = t->rec.codegen_ns = 0;  // counted in the eager tier's record
  t->eager_graph_id = exe.graph_id;
  events::on_memory_plan(m);
  if (events::timing_kernels()) events::on_kernels(up.graph_id, describe_kernels(scheduled, up.program));
  compiler().tier_ups.push_back(t);
  Builder::builder().submit(std::move(t));
}

// At a step boundary (a mark_step's graph ran): finished builds replace their
// eager tier. A build that failed throws its error here.
void adopt_tier_ups() {
  Compiler& c = compiler();
  for (auto it = c.tier_ups.begin(); it != c.tier_ups.end();) {
    if (!(*it)->done.load(std::memory_order_acquire)) {
      ++it;
      continue;
    }
    std::shared_ptr<TierUp> t = std::move(*it);
    it = c.tier_ups.erase(it);
    if (t->error) std::rethrow_exception(t->error);
    c.by_signature[t->key] = t->exe;
    events::log_debug("graph " + std::to_string(t->exe->graph_id) + " replaces its eager tier from step " +
                      std::to_string(current_step()));
  }
}

// ---- dynamic programs (dynamic.h) ----------------------------------------------

// TC_DYNAMIC: "auto" (unset) or "off"; read at each cache miss.
bool dynamic_on() {
  const char* e = std::getenv("TC_DYNAMIC");
  if (!e || !*e || std::string_view(e) == "auto") return true;
  if (std::string_view(e) == "off") return false;
  throw Error("tc: TC_DYNAMIC=" + std::string(e) + " is neither 'auto' nor 'off'; unset it for automatic dynamic dims");
}

struct DynamicChoice {
  std::shared_ptr<Family> family;
  std::vector<int64_t> sizes;  // where the program is scheduled; sizes[0], the largest seen, is planned
};

// Input dims that become symbolic now: each took two distinct sizes (>= 2)
// in earlier graphs of this shape-erased signature, or one other size when
// marked dynamic; with the first such dim go those of its size now (one
// symbol per graph). Fitted from the earlier graphs that differ only there.
DynamicChoice choose_dynamic(const Graph& graph, const Lowered& l, uint64_t erased) {
  Compiler& c = compiler();
  auto it = c.by_erased.find(erased);
  if (!dynamic_on() || !backend().symbolic_sizes() || it == c.by_erased.end() || it->second.size() < 2) return {};
  const std::vector<Seen> seen(it->second.begin(), it->second.end() - 1);  // the last one is this graph
  std::vector<std::pair<int, int>> group, varying;
  int64_t v = 0;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
    const Node* in = graph.inputs[i];
    for (std::size_t d = 0; d < in->shape.size(); ++d) {
      const int mark = d < in->dim_marks.size() ? in->dim_marks[d] : 0;
      const int64_t now = in->shape[d];
      if (mark < 0 || now < 2 || c.not_dynamic.count({erased, static_cast<int>(i), static_cast<int>(d)})) continue;
      std::set<int64_t> sizes;
      for (const Seen& s : seen)
        if (i < s.input_shapes.size() && d < s.input_shapes[i].size() && s.input_shapes[i][d] >= 2) sizes.insert(s.input_shapes[i][d]);
      if (sizes.size() < 2 && !(mark > 0 && sizes.size() > sizes.count(now))) continue;
      // Dims of other sizes (t - 1 beside t) vary too: the family fits them as forms of s.
      varying.push_back({static_cast<int>(i), static_cast<int>(d)});
      if (!v || now == v) v = now, group.push_back(varying.back());
    }
  }
  if (group.empty()) return {};
  std::vector<const CGraph*> graphs{&l.g};
  std::vector<int64_t> sizes{v};
  for (auto s = seen.rbegin(); s != seen.rend(); ++s) {
    if (!s->graph || s->input_shapes.size() != graph.inputs.size()) continue;
    const int64_t sv = s->input_shapes[static_cast<std::size_t>(group[0].first)][static_cast<std::size_t>(group[0].second)];
    bool ok = sv >= 2 && std::find(sizes.begin(), sizes.end(), sv) == sizes.end();
    for (std::size_t i = 0; ok && i < graph.inputs.size(); ++i) {
      const Shape& now = graph.inputs[i]->shape;
      ok = s->input_shapes[i].size() == now.size();
      for (std::size_t d = 0; ok && d < now.size(); ++d) {
        const std::pair<int, int> at{static_cast<int>(i), static_cast<int>(d)};
        if (std::find(group.begin(), group.end(), at) != group.end()) ok = s->input_shapes[i][d] == sv;
        else ok = s->input_shapes[i][d] == now[d] || std::find(varying.begin(), varying.end(), at) != varying.end();
      }
    }
    if (ok) graphs.push_back(s->graph.get()), sizes.push_back(sv);
  }
  if (graphs.size() < 2) return {};
  DynamicChoice ch;
  ch.family = std::make_shared<Family>();
  std::string why;
  if (!fit_family(graphs, sizes, group, ch.family.get(), &why) || ch.family->collectives) {
    events::log_debug("dims stay static: " + (why.empty() ? std::string("a collective") : why));
    for (auto [i, d] : group) c.not_dynamic.insert({erased, i, d});
    return {};
  }
  const int64_t top = *std::max_element(sizes.begin(), sizes.end());
  // Three more sizes far from any static dim: a value that is a polynomial
  // of degree <= 2 at all four is one at every size.
  ch.sizes = {top, top + 1009, top + 2029, top + 3061};
  return ch;
}

// The family's program: passes, schedule and kernel passes at every size of
// the choice, unified; *g and *scheduled are the planned size's graphs.
bool build_dynamic(const DynamicChoice& ch, events::CompilationRecord& rec, CGraph* g, CGraph* scheduled, Program* out,
                   std::string* why) {
  std::vector<Program> ps;
  try {
    for (std::size_t k = 0; k < ch.sizes.size(); ++k) {
      CGraph at = instantiate(*ch.family, ch.sizes[k]), sched;
      verify(at, "instantiate");
      uint64_t start = events::ticks();
      int64_t t0 = now_ns();
      auto passes = run_passes(at, verify_enabled());
      int64_t t1 = now_ns();
      Program p = schedule(at, &sched);
      auto more = run_kernel_passes(sched, p, verify_enabled());
      rec.passes_ns += t1 - t0;
      rec.codegen_ns += now_ns() - t1;
      if (k == 0) {
        passes.insert(passes.end(), more.begin(), more.end());
        record_passes(rec.graph_id, start, now_ns() - t0, passes);
        *g = std::move(at);
        *scheduled = std::move(sched);
      }
      ps.push_back(std::move(p));
    }
  } catch (const Error& e) {
    *why = e.what();
    return false;
  }
  if (!unify(ps, ch.sizes, why)) return false;
  if (*why = backend().symbolic_unsupported(ps[0]); !why->empty()) return false;
  *out = std::move(ps[0]);
  rec.nodes_after = g->live_nodes();
  rec.kernels = static_cast<int64_t>(out->kernels.size());
  return true;
}

std::shared_ptr<CompiledGraph> compile(const Graph& graph, Lowered& l, uint64_t sig, uint64_t erased, Trigger trigger,
                                       const std::source_location& site, const CacheKey& key) {
  events::CompilationRecord rec;
  rec.start = events::ticks();
  int64_t t_start = now_ns();
  rec.graph_id = events::new_graph_id();
  events::NvtxScope nvtx(events::NvtxScope::kCompile, rec.graph_id);
  rec.step = current_step();
  rec.signature = hex(sig);
  rec.shape_erased = hex(erased);
  rec.trigger = trigger_name(trigger);
  rec.site_name = trigger_name(trigger);
  rec.site = site;
  rec.nodes_before = static_cast<int64_t>(graph.nodes.size());

  std::vector<ChangedDim> changed = diagnose(graph, l, erased, site, rec);
  DynamicChoice dyn = rec.reason == "shape_change" ? choose_dynamic(graph, l, erased) : DynamicChoice{};
  auto exe = std::make_shared<CompiledGraph>();
  exe->graph_id = rec.graph_id;
  CGraph scheduled, planned;
  std::string why;
  if (dyn.family && build_dynamic(dyn, rec, &planned, &scheduled, &exe->program, &why)) {
    exe->family = dyn.family;
    l.g = std::move(planned);
    for (ChangedDim& d : changed) d.dynamic = dyn.family->symbolic_input(d.slot, d.dim);
  } else {
    if (dyn.family) {
      events::log_debug("graph " + std::to_string(rec.graph_id) + " stays static: " + why);
      for (auto [i, d] : dyn.family->dims) compiler().not_dynamic.insert({erased, i, d});
    }
    optimize(l, rec);
    exe->program = schedule_kernels(l.g, rec, scheduled);
  }
  exe->kernels = exe->program.kernels.size();
  for (const Kernel& k : exe->program.kernels) exe->collectives = exe->collectives || k.kind == Kernel::Collective;
  int64_t p0 = now_ns();
  events::MemoryPlanRecord m = plan(graph, l.g, exe->program, rec.graph_id);
  rec.codegen_ns += now_ns() - p0;  // codegen: kernels, plan and source
  exe->batch_size = m.batch_size;
  exe->plan = m;
  std::string name = "graph " + std::to_string(rec.graph_id);
  events::on_memory_plan(m);
  events::log_debug(name + " memory plan: peak " + std::to_string(m.peak) + " bytes, arena " +
                    std::to_string(exe->program.arena_bytes) + " bytes, batch-scaled " + std::to_string(m.batch_bytes) +
                    " bytes");

  Backend& be = backend();
  events::on_setting("TC_DEVICE", be.name());  // run_env: the backend the run's graphs ran on
  CompiledCode code;
  std::unique_ptr<DeferredBuild> later;
  if (may_tier(trigger, *exe, be, m)) later = be.prepare(exe->program, rec.graph_id, &code);
  if (!later && !code.code) code = be.compile(exe->program, rec.graph_id);
  exe->code = std::move(code.code);
  rec.codegen_ns += code.codegen_ns;
  rec.build_ns = code.disk_hit ? 0 : code.build_ns;
  rec.cache = later ? "eager" : code.disk_hit ? "disk_hit" : "built";
  rec.source_path = code.source_path;
  events::log_debug(name + ": " + std::to_string(rec.kernels) + " kernels, " + std::to_string(rec.nodes_before) + " -> " +
                    std::to_string(rec.nodes_after) + " nodes, reason " + rec.reason + ", backend " + be.name() +
                    ", codegen " + ms(rec.codegen_ns) + ", build " + ms(rec.build_ns) + " (" + rec.cache + "), total " +
                    ms(now_ns() - t_start) + ", source " + rec.source_path);
  events::on_compilation(rec);
  if (events::timing_kernels() && !later) events::on_kernels(rec.graph_id, describe_kernels(scheduled, exe->program));
  for (const ChangedDim& d : changed) events::on_compilation_input(rec.graph_id, d.input, d.dim, d.old_value, d.new_value, d.dynamic);
  if (later) tier_up(std::move(later), *exe, rec, m, scheduled, key);
  return exe;
}

// A dynamic program's arena at size s: every buffer keeps its planned slot
// unless it needs more, and then the arena is planned again for the larger
// sizes (no rebuild: the code reads the offsets), recorded as a new plan.
void grow_arena(CompiledGraph& exe, int64_t s) {
  Program& p = exe.program;
  bool grow = false;
  for (std::size_t b = 0; b < p.bufs.size(); ++b)
    if (p.bufs[b].kind == BufKind::arena && p.bufs[b].bytes > 0) grow = grow || bytes_at(p, static_cast<int>(b), s) > p.bufs[b].bytes;
  if (!grow) return;
  for (std::size_t b = 0; b < p.bufs.size(); ++b)
    if (p.bufs[b].kind == BufKind::arena && p.bufs[b].bytes > 0) p.bufs[b].bytes = std::max(p.bufs[b].bytes, bytes_at(p, static_cast<int>(b), s));
  const int64_t before = p.arena_bytes;
  plan_arena(p, {});
  exe.plan.peak += p.arena_bytes - before;
  exe.plan.by_category[static_cast<std::size_t>(Category::activation)] += p.arena_bytes - before;
  events::on_memory_plan(exe.plan);
  events::log_debug("graph " + std::to_string(exe.graph_id) + " arena grown for size " + std::to_string(s) + ": " +
                    std::to_string(before) + " -> " + std::to_string(p.arena_bytes) + " bytes");
}

// Binds the graph's buffers (inputs, outputs, arena; a dynamic program's
// size s and arena offsets) and runs the code.
void execute(const CompiledGraph& exe, const Graph& g, int64_t execution_id, int64_t s) {
  const Program& p = exe.program;
  std::vector<void*> ptrs(static_cast<std::size_t>(p.num_inputs + p.num_outputs + 1 + (p.sym ? 1 : 0)), nullptr);
  thread_local std::vector<int64_t> table;
  if (p.sym) {
    table.assign(p.bufs.size() + 1, 0);
    table[0] = s;
    for (std::size_t b = 0; b < p.bufs.size(); ++b) table[b + 1] = p.bufs[b].offset;
    ptrs.back() = table.data();
  }
  for (std::size_t i = 0; i < g.inputs.size(); ++i) ptrs[i] = g.inputs[i]->data->raw();
  int64_t batch_size = exe.batch_size;
  if (exe.family)  // this size's batch, found as plan_memory finds it: dim 0 of the first named host input
    for (const Node* in : g.inputs)
      if (!in->name.empty() && !in->shape.empty() && in->category == Category::input) {
        batch_size = in->shape[0];
        break;
      }
  ScopedBatchSize batch(batch_size);  // an out-of-memory record names the plan's batch
  std::vector<std::shared_ptr<Buffer>> outs(g.outputs.size());
  std::map<int, std::shared_ptr<Buffer>> by_buf;
  for (std::size_t o = 0; o < g.outputs.size(); ++o) {
    int in = p.inplace_input[o];
    int b = p.output_buf[o];
    if (in >= 0) {
      outs[o] = g.inputs[static_cast<std::size_t>(in)]->data;
    } else if (auto it = by_buf.find(b); it != by_buf.end()) {
      outs[o] = it->second;
    } else {
      outs[o] = allocate(bytes_at(p, b, s), g.outputs[o]->category);
      by_buf[b] = outs[o];
    }
    ptrs[static_cast<std::size_t>(p.num_inputs) + o] = outs[o]->raw();
  }
  std::shared_ptr<Buffer> arena;
  if (p.arena_bytes > 0) {
    arena = allocate(p.arena_bytes, Category::activation);
    ptrs[static_cast<std::size_t>(p.num_inputs + p.num_outputs)] = arena->raw();
  }
  // While recording, each kernel is timed (ticks[2k], ticks[2k+1]) and
  // reported after the run; otherwise the code takes its untimed path.
  thread_local std::vector<uint64_t> ticks;
  KernelClock clock{nullptr, &events::clock_now};
  if (events::timing_kernels()) {
    ticks.assign(2 * exe.kernels, 0);
    clock.ticks = ticks.data();
  }
  // The collectives' call sites, by ordinal: the k-th AllReduce of this cut
  // (the cache hit guarantees the same op sequence as the compiled one).
  thread_local std::vector<CollectiveSite> sites;
  sites.clear();
  if (exe.collectives)
    for (const Node* n : g.nodes)
      if (n->op == Op::AllReduce) sites.push_back({n->where, static_cast<int64_t>(n->inputs.size())});
  CollectiveScope collective(exe.collectives ? &sites : nullptr);
  int rc = exe.code->run(ptrs.data(), RunIds{exe.graph_id, execution_id}, clock.ticks ? &clock : nullptr);
  collective.rethrow_collective_failure();
  if (rc != 0)
    throw Error("tc: an index of a gather/embedding is out of range in graph " + std::to_string(exe.graph_id) +
                " (checked at execution)");
  if (clock.ticks) {
    backend().synchronize();
    events::on_kernel_times(execution_id, exe.graph_id, ticks.data(), exe.kernels);
  }
  arena.reset();
  for (std::size_t o = 0; o < g.outputs.size(); ++o) {
    g.outputs[o]->data = outs[o];
    if (p.inplace_input[o] >= 0) outs[o]->set_category(g.outputs[o]->category);
  }
}

// ---- collectives inside compiled code (collective.h) ----------------------------

thread_local CollectiveScope* t_collectives = nullptr;

int host_all_reduce_mean(int64_t ordinal, float* data, int64_t n) {
  CollectiveScope* c = CollectiveScope::current();
  if (c == nullptr) return 1;  // not run by execute(): nothing to report to
  if (c->sites == nullptr || ordinal < 0 || static_cast<std::size_t>(ordinal) >= c->sites->size()) {
    c->failure = std::make_exception_ptr(Error("tc: internal: a compiled graph ran collective " + std::to_string(ordinal) +
                                               " that its graph does not have"));
    return 1;
  }
  try {
    const CollectiveSite& s = (*c->sites)[static_cast<std::size_t>(ordinal)];
    all_reduce_mean_inplace(data, n, s.tensors, s.where);
    return 0;
  } catch (...) {
    c->failure = std::current_exception();
    return 1;
  }
}

constexpr tc_host_api kHostApi{kHostApiVersion, 0, &host_all_reduce_mean};

}  // namespace

const tc_host_api* host_api() { return &kHostApi; }

void wait_for_tier_ups() { Builder::builder().wait_idle(); }

CollectiveScope::CollectiveScope(const std::vector<CollectiveSite>* s) : sites(s), saved_(t_collectives) { t_collectives = this; }
CollectiveScope::~CollectiveScope() { t_collectives = saved_; }
CollectiveScope* CollectiveScope::current() { return t_collectives; }
void CollectiveScope::rethrow_collective_failure() {
  if (!failure) return;
  std::exception_ptr e = failure;
  failure = nullptr;
  std::rethrow_exception(e);
}

namespace {
bool g_prefer_dynamic = false;
}  // namespace
void prefer_dynamic_for_bench(bool on) { g_prefer_dynamic = on; }

int64_t run_compiled(const Graph& g, Trigger trigger, const std::source_location& site) {
  Lowered l = lower(g, trigger);
  uint64_t sig = structure_hash(l.g, true);
  Compiler& c = compiler();
  std::shared_ptr<CompiledGraph> exe;
  int64_t size = 0;  // a dynamic program's size for this graph
  const CacheKey key{&backend(), sig};
  auto hit = c.by_signature.find(key);
  if (hit != c.by_signature.end() && !g_prefer_dynamic) {
    exe = hit->second;
  } else {
    uint64_t erased = structure_hash(l.g, false);
    if (auto d = c.dynamic.find({key.first, erased}); d != c.dynamic.end() && dynamic_on())
      for (const auto& e : d->second)
        if ((size = family_size(*e->family, l.g)) != 0) {
          exe = e;
          break;
        }
    if (!exe && hit != c.by_signature.end()) exe = hit->second;
    if (!exe) {
      if (events::timing_kernels() && !events::ceilings_recorded()) {
        // The roofline kernels are put against: cached per machine, measured once (~0.2 s).
        Backend::Ceilings ce = backend().ceilings();
        events::on_ceilings(backend().name(), {ce.gflops, ce.gbps, ce.cached ? "cached" : "measured", ce.isa, ce.kernel, ce.threads});
      }
      exe = compile(g, l, sig, erased, trigger, site, key);
      if (exe->family) {
        const auto [slot, dim] = exe->family->dims[0];
        size = g.inputs[static_cast<std::size_t>(slot)]->shape[static_cast<std::size_t>(dim)];
        c.dynamic[{key.first, erased}].push_back(exe);
      } else {
        c.by_signature[key] = exe;
      }
    }
    if (exe->family) grow_arena(*exe, size);
  }
  int64_t t0 = now_ns();
  uint64_t start = events::ticks();
  int64_t execution_id = events::new_execution_id();
  {
    events::NvtxScope nvtx(events::NvtxScope::kExecute, exe->graph_id);
    if (exe->code) execute(*exe, g, execution_id, size);
    else execute_eager(g, execution_id);  // the eager tier
    events::on_graph_executed(static_cast<events::ExecTrigger>(trigger), static_cast<int64_t>(g.nodes.size()),
                              now_ns() - t0, start, exe->graph_id, execution_id, exe->family ? size : 0);
  }
  if (trigger == Trigger::mark_step && !c.tier_ups.empty()) adopt_tier_ups();
  return exe->graph_id;
}

}  // namespace tc::detail
