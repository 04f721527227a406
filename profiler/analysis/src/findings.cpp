#include "findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graph_breaks.h"
#include "json.h"
#include "tc/analysis/kernels.h"
#include "tc/analysis/format.h"
#include "shape_plan.h"
#include "tc/store/schema.h"

namespace tc::analysis {

namespace {


// Appends the finding with its evidence, anchored on the timeline at `ts` when given.
void add(Report& report, Finding f, const Json& evidence, std::optional<int64_t> ts = std::nullopt) {
  f.evidence_json = evidence.str();
  if (ts) f.anchors_ts.push_back(*ts);
  report.findings.push_back(std::move(f));
}

// Adds `"key": raw` (serialized JSON) to the finding's evidence object.
void add_evidence(Finding& f, const std::string& key, const std::string& raw) {
  std::string& e = f.evidence_json;
  if (e.size() < 2 || e.back() != '}') return;
  Json k;
  k.begin_object().key(key);
  std::string field = k.str().substr(1) + raw;  // "\"key\":" and the value
  e.insert(e.size() - 1, (e.size() > 2 ? "," : "") + field);
}

// The median of durations in ns, in seconds (0 for none).
double median_s(std::vector<int64_t> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return static_cast<double>(v[v.size() / 2]) / 1e9;
}

// Two SQL columns over the compilations `c` of a query: how many forward compilations of c's frame (its
// shape_erased) succeeded, and the ns all its successful ones took; `also` narrows them (over `o`, "" for all).
std::string frame_compilations_sql(const std::string& also) {
  const std::string of = "FROM compilations o WHERE o.shape_erased = c.shape_erased " + also + "AND o.failure IS NULL";
  return "(SELECT count(*) " + of + " AND o." + kNotBackward + "), (SELECT coalesce(sum(o.dur), 0) " + of + " AND o." + kBlocking + ") ";
}

// The execute times (ns) of the steps before `step` (first) and of those from it on (second).
std::pair<std::vector<int64_t>, std::vector<int64_t>> execute_ns_split_at(const std::vector<Step>& steps, int64_t step) {
  std::pair<std::vector<int64_t>, std::vector<int64_t>> split;
  for (const Step& s : steps) (s.index < step ? split.first : split.second).push_back(s.execute_ns());
  return split;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// ---------------------------------------------------------------- recompilation.shape_change

struct GraphInfo {
  int64_t graph_id = 0;
  int64_t upid = 0;  // the process that compiled it (0 if its thread is unknown)
  int64_t ts = 0;
  double compile_s = 0;
  std::string reason;
  int64_t step = 0;
  std::string shape_erased;
  // torch.compile and JAX: a recompilation lists only the dims that changed
  // (from the graph before it; JAX: from its closest previous key), so an
  // unlisted dim kept the size it had.
  bool carries = false;
};

// A framework that logs no executions (torch.compile): each graph of a
// structure serves the steps from the one it compiled in up to the next
// compilation of that structure; their execute time is the steps' own
// (from tc's Python hook), less the compiling inside them (Step::compile_ns).
void executions_from_steps(const std::map<int64_t, GraphInfo>& graphs, const Report& report, std::map<int64_t, std::vector<double>>& exec) {
  if (report.steps.empty()) return;
  std::map<std::pair<int64_t, std::string>, std::vector<const GraphInfo*>> by_structure;  // in ts order
  for (const auto& [gid, g] : graphs) by_structure[{g.upid, g.shape_erased}].push_back(&g);
  std::map<int64_t, double> step_s;  // index -> seconds
  int64_t last = 0;
  for (const Step& st : report.steps) {
    step_s[st.index] += static_cast<double>(st.execute_ns()) / 1e9;
    last = std::max(last, st.index);
  }
  for (auto& [key, list] : by_structure) {
    std::sort(list.begin(), list.end(), [](const GraphInfo* a, const GraphInfo* b) { return a->ts < b->ts; });
    for (size_t i = 0; i < list.size(); ++i) {
      int64_t from = list[i]->step, to = i + 1 < list.size() ? list[i + 1]->step : last + 1;
      std::vector<double>& e = exec[list[i]->graph_id];
      for (int64_t k = from; k < to; ++k) {
        auto it = step_s.find(k);
        if (it == step_s.end()) continue;
        e.push_back(it->second);
      }
    }
  }
}

// (process, input, dim): two processes' inputs of one name are two inputs.
using InputKey = std::tuple<int64_t, std::string, int64_t>;

// What the run compiled and executed, and every input dimension that changed.
struct ShapeRun {
  // graph_id is unique in the run, so it alone joins executions and inputs to their compilation.
  std::map<int64_t, GraphInfo> graphs;
  std::set<int64_t> compiling;  // processes that compiled
  std::map<int64_t, int64_t> pid_of;  // upid -> OS pid
  std::map<int64_t, std::vector<double>> exec;  // executions per graph (training steps and explicit evaluations), in seconds
  // tc's tiered builds: a graph's first steps ran on the eager executor, then its built code (a tier_up
  // compilation with a graph id of its own) took over. Its executions count as the graph's in `exec`; `built`
  // holds the executions of built code only (a tier-up's, or a graph's that never tiered), with their size
  // (executions.dynamic_size; 0 for a static graph), for comparing the dynamic graph's steps with the static ones'.
  std::map<int64_t, int64_t> tier_up_of;  // tier-up graph -> the graph it was built for
  std::set<int64_t> tiered;               // graphs whose first steps ran eager
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> built;
  std::map<InputKey, std::map<int64_t, int64_t>> values;  // (process, input, dim) -> graph -> value
  std::map<InputKey, int64_t> first_old;  // value before the first change
  std::map<InputKey, std::map<int64_t, int64_t>> old_values;  // (process, input, dim) -> graph -> the value before its change
  std::map<InputKey, std::vector<int64_t>> tc_dynamic_graphs;  // every graph of tc's that made the dim symbolic (one per signature)
  std::map<InputKey, int64_t> dynamic_at;  // torch.compile (or tc) made the dim dynamic at this size
  std::set<InputKey> dynamic_by_tc;        // of those, tc's own (TC_DYNAMIC)
  std::map<InputKey, int64_t> dynamic_graph;  // the compilation that made it dynamic
  std::map<InputKey, int64_t> first_seen;  // the order of its first compilation_inputs row
  // The hook's record of each step's inputs (step_inputs): (process, input, dim) -> (process, step) -> size.
  std::map<InputKey, std::map<std::pair<int64_t, int64_t>, int64_t>> step_values;
  std::map<std::pair<int64_t, int64_t>, double> step_exec_s;  // (process, step) -> its time less its compiling
  std::map<int64_t, int64_t> steps_of;  // process -> its steps
};

// Each step's inputs as the hook saw them, and each step's time less the compiling inside it.
void read_step_inputs(const store::Reader& r, const Report& report, StoreText& text, ShapeRun& run) {
  std::map<int64_t, int64_t> upid_of;
  for (auto q = r.query("SELECT utid, upid FROM threads"); q.next();) upid_of[q.i64(0)] = q.i64(1);
  auto upid = [&](int64_t utid) {
    auto it = upid_of.find(utid);
    return it == upid_of.end() ? int64_t{0} : it->second;
  };
  if (r.has(store::schema::step_inputs, "value")) {
    for (auto q = r.query("SELECT utid, step, input, dim, value FROM step_inputs ORDER BY id"); q.next();) {
      const int64_t p = upid(q.i64(0));
      run.step_values[{p, text(q.text(2)), q.i64(3)}][{p, q.i64(1)}] = q.i64(4);
    }
  }
  if (run.step_values.empty()) return;
  for (const Step& st : report.steps) {
    const int64_t p = upid(st.utid);
    run.step_exec_s[{p, st.index}] += static_cast<double>(st.dur) / 1e9;
    ++run.steps_of[p];
  }
  for (const auto& [gid, g] : run.graphs) {
    auto it = run.step_exec_s.find({g.upid, g.step});
    if (it != run.step_exec_s.end()) it->second = std::max(0.0, it->second - g.compile_s);
  }
}

// The static graphs of dynamic graph `dyn`'s family (its process, its
// shape-erased signature; an evaluation step's graph of the same input is
// another family), each with the size of `key`'s dim it compiled for: its
// compilation_inputs row's, or for the family's first graph the size before
// the family's first change. A graph where another dim changed is left out
// (this dim's size there is not known).
std::map<int64_t, int64_t> static_sizes(const ShapeRun& run, const InputKey& key, int64_t dyn) {
  const GraphInfo& d = run.graphs.at(dyn);
  const std::map<int64_t, int64_t>&compiled = run.values.at(key), &old = run.old_values.at(key);
  std::map<int64_t, int64_t> out;
  std::vector<int64_t> firsts;
  int64_t before_first = 0, first_change_ts = INT64_MAX;
  for (const auto& [gid, g] : run.graphs) {
    if (g.upid != d.upid || g.shape_erased != d.shape_erased || g.reason == "structure_change") continue;
    if (auto o = old.find(gid); o != old.end() && g.ts < first_change_ts) first_change_ts = g.ts, before_first = o->second;
    if (gid == dyn) continue;
    if (auto v = compiled.find(gid); v != compiled.end()) out[gid] = v->second;
    else if (g.reason == "first") firsts.push_back(gid);
  }
  if (before_first > 0)
    for (int64_t gid : firsts) out[gid] = before_first;
  return out;
}

// tc's own dynamic graphs (executions.dynamic_size): each step's size of a
// dim that a graph made symbolic, so that steps count under the size they
// ran, as the hook's step_inputs do for the frameworks. The static graphs
// of the same family count under the size they compiled for. Only a dim
// that is s itself (its size at the dynamic compilation is that
// execution's s), not a form of it.
void read_dynamic_sizes(const store::Reader& r, ShapeRun& run) {
  if (run.tc_dynamic_graphs.empty() || !r.has(store::schema::executions, "dynamic_size")) return;
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> runs;  // graph -> (step, dynamic size) of each execution
  for (auto q = r.query("SELECT graph_id, step, coalesce(dynamic_size, 0) FROM executions WHERE graph_id <> 0 ORDER BY id"); q.next();) {
    const auto tier = run.tier_up_of.find(q.i64(0));  // a tier-up's steps are its graph's
    runs[tier != run.tier_up_of.end() ? tier->second : q.i64(0)].push_back({q.i64(1), q.i64(2)});
  }
  for (const auto& [key, dynamic] : run.tc_dynamic_graphs) {
    for (const int64_t dyn : dynamic) {
      auto own = runs.find(dyn);
      if (own == runs.end() || own->second.empty() || own->second.front().second != run.values.at(key).at(dyn)) continue;
      const int64_t upid = run.graphs.at(dyn).upid;
      auto& steps = run.step_values[key];
      for (const auto& [step, size] : own->second) steps[{upid, step}] = size;
      for (const auto& [gid, size] : static_sizes(run, key, dyn))
        if (auto e = runs.find(gid); e != runs.end())
          for (const auto& [step, _] : e->second) steps[{upid, step}] = size;
    }
  }
}

void read_shape_run(const store::Reader& r, const Report& report, StoreText& text, ShapeRun& run) {
  const std::string upid_of = "coalesce((SELECT t.upid FROM threads t WHERE t.utid = e.utid), 0)";
  // A failed compilation (torch.compile's recompile limit) compiled no graph.
  const std::string compiled = r.has(store::schema::compilations, "failure") ? " WHERE failure IS NULL" : "";
  const std::string framework = compiled.empty() ? "'tc'" : "framework";
  const std::string frame = compiled.empty() ? "NULL" : "frame";
  std::map<std::pair<int64_t, std::string>, int64_t> forward_of;  // (upid, torch.compile compile id) -> its graph
  std::map<std::pair<int64_t, std::string>, int64_t> by_signature;  // (upid, signature) -> its latest blocking graph
  for (auto q = r.query("SELECT graph_id, ts, dur, reason, " + upid_of + ", step, shape_erased, " + framework + ", trigger, " + frame +
                        ", signature FROM compilations e" + compiled + " ORDER BY ts");
       q.next();) {
    const double compile_s = static_cast<double>(q.i64(2)) / 1e9;
    const std::pair<int64_t, std::string> fwd{q.i64(4), q.is_null(9) ? std::string() : text(q.text(9))};
    const std::pair<int64_t, std::string> sig{q.i64(4), q.is_null(10) ? std::string() : text(q.text(10))};
    if (text(q.text(8)) == "tier_up") {  // built beside the steps (kBlocking): its executions are its graph's
      if (auto o = by_signature.find(sig); o != by_signature.end()) run.tier_up_of[q.i64(0)] = o->second, run.tiered.insert(o->second);
      continue;
    }
    by_signature[sig] = q.i64(0);
    // torch.compile's backward is compiled at the first backward: its time is its forward graph's.
    if (text(q.text(8)) == "backward") {
      if (auto f = forward_of.find(fwd); f != forward_of.end()) run.graphs[f->second].compile_s += compile_s;
      continue;
    }
    run.graphs[q.i64(0)] = {q.i64(0), q.i64(4), q.i64(1), compile_s, text(q.text(3)), q.i64(5), text(q.text(6)),
                            text(q.text(7)) == "torch.compile" || text(q.text(7)) == "jax" || text(q.text(7)) == "torch_xla"};
    if (!fwd.second.empty()) forward_of[fwd] = q.i64(0);
    run.compiling.insert(q.i64(4));
  }
  if (run.graphs.empty()) return;
  for (auto q = r.query("SELECT upid, pid FROM processes"); q.next();) run.pid_of[q.i64(0)] = q.i64(1);
  const std::string size = r.has(store::schema::executions, "dynamic_size") ? "coalesce(dynamic_size, 0)" : "0";
  for (auto q = r.query("SELECT graph_id, dur, " + size + " FROM executions WHERE graph_id <> 0"); q.next();) {
    const double dur_s = static_cast<double>(q.i64(1)) / 1e9;
    const auto tier = run.tier_up_of.find(q.i64(0));
    const int64_t gid = tier != run.tier_up_of.end() ? tier->second : q.i64(0);
    run.exec[gid].push_back(dur_s);
    if (tier != run.tier_up_of.end() || !run.tiered.contains(gid)) run.built[gid].push_back({q.i64(2), dur_s});
  }
  if (run.exec.empty()) executions_from_steps(run.graphs, report, run.exec);
  const std::string dynamic = r.has(store::schema::compilation_inputs, "dynamic") ? "dynamic" : "0";
  for (auto q = r.query("SELECT graph_id, input, dim, old_value, new_value, " + upid_of + ", " + dynamic + " FROM compilation_inputs e ORDER BY id");
       q.next();) {
    InputKey key{q.i64(5), q.is_null(1) ? std::string("(unnamed input)") : text(q.text(1)), q.i64(2)};
    run.values[key][q.i64(0)] = q.i64(4);
    run.first_old.try_emplace(key, q.i64(3));
    run.old_values[key][q.i64(0)] = q.i64(3);
    run.first_seen.try_emplace(key, static_cast<int64_t>(run.first_seen.size()));
    if (auto g = run.graphs.find(q.i64(0)); q.i64(6) == 1 && g != run.graphs.end() && !g->second.carries) run.tc_dynamic_graphs[key].push_back(q.i64(0));
    if (q.i64(6) == 1 && run.dynamic_at.try_emplace(key, q.i64(4)).second) {
      run.dynamic_graph[key] = q.i64(0);
      auto g = run.graphs.find(q.i64(0));
      if (g != run.graphs.end() && !g->second.carries) run.dynamic_by_tc.insert(key);
    }
  }
  read_dynamic_sizes(r, run);
  read_step_inputs(r, report, text, run);
}

// The steps of `by_value` counted again from the hook's record of each step's
// size (a graph's executions count its cache hits under the size it compiled
// for, and a dynamic graph's under one size); sizes only the steps saw are added.
void steps_from_records(const ShapeRun& run, const std::map<std::pair<int64_t, int64_t>, int64_t>& steps, std::map<int64_t, DimValue>& by_value) {
  for (auto& [v, d] : by_value) {
    d.steps = 0;
    d.execute_s = 0;
  }
  for (const auto& [step, v] : steps) {
    DimValue& d = by_value[v];
    d.value = v;
    d.steps += 1;
    auto t = run.step_exec_s.find(step);
    if (t != run.step_exec_s.end()) d.execute_s += t->second;
  }
}

// The values one dimension took, in order, with the compilations and executions of each.
std::vector<DimValue> observed_values(const ShapeRun& run, const InputKey& key, const std::map<int64_t, int64_t>& by_graph) {
  const int64_t upid = std::get<0>(key);
  // Graphs of the same structure that did not change this dim keep the value they were compared with.
  std::map<int64_t, DimValue> by_value;
  const int64_t fallback = run.first_old.at(key);
  int64_t last = fallback;
  std::set<std::string> structures;  // of the graphs that changed this dim
  for (const auto& [gid, v] : by_graph) {
    auto g = run.graphs.find(gid);
    if (g != run.graphs.end()) structures.insert(g->second.shape_erased);
  }
  for (const auto& [gid, g] : run.graphs) {
    if (g.upid != upid || g.reason == "structure_change" || !structures.contains(g.shape_erased)) continue;
    auto it = by_graph.find(gid);
    int64_t v = it != by_graph.end() ? it->second : g.carries ? last : fallback;
    if (it == by_graph.end() && g.reason != "first" && !g.carries) continue;  // another input changed; this dim's value is unknown
    last = v;
    DimValue& d = by_value[v];
    d.value = v;
    d.compilations += 1;
    d.compile_s += g.compile_s;
    auto e = run.exec.find(gid);
    if (e != run.exec.end()) {
      d.steps += static_cast<int64_t>(e->second.size());
      for (double t : e->second) d.execute_s += t;
    }
    if (it != by_graph.end()) d.first_ts = g.ts;
  }
  if (auto rec = run.step_values.find(key); rec != run.step_values.end()) steps_from_records(run, rec->second, by_value);
  std::vector<DimValue> observed;
  for (auto& [v, d] : by_value) observed.push_back(d);
  return observed;
}

std::string pad_text(const std::string& what, const ShapePlan& plan) {
  return what + " to " + std::to_string(plan.pad_to) + " (1 compilation, " + format_double("%.0f", plan.pad_waste * 100) + "% padding, est. " +
         format_seconds(plan.pad_saving_s) + " saved)";
}

std::string bucket_text(const std::string& what, const ShapePlan& plan) {
  return what + " as {" + join(plan.buckets) + "} (" + counted(static_cast<int64_t>(plan.buckets.size()), "compilation", "compilations") + ", " +
         format_double("%.0f", plan.bucket_waste * 100) + "% padding, est. " + format_seconds(plan.bucket_saving_s) + " saved)";
}

// The fix for a dimension that took several values: drop a short last batch, pad, bucket, or nothing in this run.
void shape_suggestion(Finding& f, const std::string& dim_name, bool short_last_batch, const ShapePlan& plan, int64_t changes, double compile_s) {
  if (short_last_batch) {
    f.suggestion = "The batch dimension shrinks for a short last batch (" + std::to_string(plan.short_value) + " instead of " +
                   std::to_string(plan.common_value) + "): drop the last partial batch (drop_last) or pad it to " +
                   std::to_string(plan.common_value) + " rows and mask them; est. " + format_seconds(plan.short_saving_s) + " saved.";
    f.estimated_saving_s = plan.short_saving_s;
  } else if (std::max(plan.pad_saving_s, plan.bucket_saving_s) <= 0) {
    // Compiling was cheap here (typically disk-cache hits): no padding pays for itself in this run.
    f.severity = Severity::kInfo;
    f.suggestion = "Nothing to gain in this run: " + (changes == 1 ? std::string("its compilation") : "its " + std::to_string(changes) + " compilations") + " took only " + format_seconds(compile_s) +
                   " (built code came from the cache), and padding to " + std::to_string(plan.pad_to) + " would add " +
                   format_seconds(-plan.pad_saving_s) + ". On a cold cache (a new machine, a changed model) each length compiles again: then pad to " +
                   std::to_string(plan.pad_to) + " or bucket.";
    f.estimated_saving_s = 0;
  } else {
    f.estimated_saving_s = std::max(plan.pad_saving_s, plan.bucket_saving_s);
    if (plan.bucket_saving_s <= 0 || plan.pad_saving_s <= 0) {
      // Only one of the options pays: do not offer the other with a negative saving.
      bool pad = plan.pad_saving_s >= plan.bucket_saving_s;
      f.suggestion = (pad ? pad_text("Pad " + dim_name, plan) : bucket_text("Bucket " + dim_name, plan)) + ".";
    } else {
      f.suggestion = pad_text("Pad " + dim_name, plan);
      if (plan.buckets.size() > 1) f.suggestion += ", or " + bucket_text("bucket", plan);
      f.suggestion += ".";
    }
  }
}

// The third plan beside pad and buckets: the dim dynamic (tc's TC_DYNAMIC=auto,
// torch.compile's mark_dynamic): at most two static compilations and a
// dynamic one, nothing padded. Where the run made the dim dynamic, its own
// numbers: what it spent, and the dynamic graph's median execution against
// the static graphs' (both ran); else an estimate at the static step time.
struct DynamicPlan {
  int64_t compilations = 0;
  double total_s = 0, saving_s = 0, step_ratio = 1;
  bool measured = false;
  std::vector<int64_t> compared_at;  // tc: the sizes where the dynamic and a static graph's built code both ran
  int64_t fitted_over = 0;           // tc, no size both ran: the dynamic graph's sizes its step time was fitted over (0: not fitted)
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

DynamicPlan dynamic_plan(const ShapeRun& run, const InputKey& key, const std::vector<DimValue>& observed, const ShapePlan& plan) {
  DynamicPlan d;
  double execute_s = 0;
  for (const DimValue& v : observed) execute_s += v.execute_s, d.compilations += v.compilations;
  if (auto g = run.dynamic_graph.find(key); g != run.dynamic_graph.end() && run.dynamic_by_tc.contains(key)) {
    // tc: built code only (not a graph's eager first steps), at the sizes both ran.
    std::map<int64_t, std::vector<double>> dynamic_at, static_at;
    if (auto e = run.built.find(g->second); e != run.built.end())
      for (const auto& [size, t] : e->second) dynamic_at[size].push_back(t);
    for (const auto& [gid, size] : static_sizes(run, key, g->second))
      if (auto e = run.built.find(gid); e != run.built.end())
        for (const auto& [_, t] : e->second) static_at[size].push_back(t);
    std::vector<double> ratios;
    for (const auto& [size, st] : static_at)
      if (auto dy = dynamic_at.find(size); dy != dynamic_at.end() && median_of(st) > 0) {
        ratios.push_back(median_of(dy->second) / median_of(st));
        d.compared_at.push_back(size);
      }
    if (ratios.empty() && dynamic_at.size() >= 3) {
      // No size both ran: the dynamic graph's step time as a line in the size (least squares over the
      // medians of its sizes), read at each static graph's size.
      std::vector<WeightedPoint> points;
      for (const auto& [size, t] : dynamic_at) points.push_back({static_cast<double>(size), median_of(t)});
      if (const std::optional<Line> line = fit_line(points)) {
        for (const auto& [size, st] : static_at) {
          const double fitted = line->at(static_cast<double>(size));
          if (median_of(st) > 0 && fitted > 0) {
            ratios.push_back(fitted / median_of(st));
            d.compared_at.push_back(size);
          }
        }
        d.fitted_over = static_cast<int64_t>(dynamic_at.size());
      }
    }
    d.measured = !ratios.empty();
    if (d.measured) d.step_ratio = median_of(ratios);
    d.total_s = plan.observed_total_s;
  } else if (auto g = run.dynamic_graph.find(key); g != run.dynamic_graph.end()) {
    std::vector<double> dynamic_exec, static_exec;
    if (auto e = run.exec.find(g->second); e != run.exec.end()) dynamic_exec = e->second;
    for (const auto& [gid, v] : run.values.at(key))
      if (auto e = run.exec.find(gid); gid != g->second && e != run.exec.end()) static_exec.insert(static_exec.end(), e->second.begin(), e->second.end());
    d.measured = !dynamic_exec.empty() && !static_exec.empty();
    if (d.measured && median_of(static_exec) > 0) d.step_ratio = median_of(dynamic_exec) / median_of(static_exec);
    d.total_s = plan.observed_total_s;  // what the run spent, dynamic as it was
  } else {
    d.compilations = std::min<int64_t>(3, static_cast<int64_t>(observed.size()));
    d.total_s = static_cast<double>(d.compilations) * plan.compile_per_graph_s + execute_s;
  }
  d.saving_s = plan.observed_total_s - d.total_s;
  return d;
}

std::string dynamic_text(const std::string& dim_name, const DynamicPlan& d, bool tc) {
  std::string how = tc ? "the default TC_DYNAMIC=auto, or tc::mark_dynamic from the start" : "torch._dynamo.mark_dynamic";
  if (d.measured && tc) {
    std::string sizes;
    for (int64_t v : d.compared_at) sizes += (sizes.empty() ? "" : ", ") + std::to_string(v);
    const std::string at = d.compared_at.size() == 1 ? " " : "s ";
    return "Dynamic, as this run made " + dim_name + ": " + counted(d.compilations, "compilation", "compilations") +
           ", the dynamic graph's step " + format_double("%.2f", d.step_ratio) + "x the static graphs' (" +
           (d.fitted_over ? "built code; its time fitted over the " + std::to_string(d.fitted_over) + " sizes it ran, read at the static graphs' size" + at + sizes
                          : "measured, built code at the size" + at + sizes + " both ran") + ").";
  }
  if (d.measured)
    return "Dynamic, as this run made " + dim_name + ": " + counted(d.compilations, "compilation", "compilations") +
           ", the dynamic graph's median step " + format_double("%.2f", d.step_ratio) + "x the static graphs' (measured, at the sizes each ran).";
  return "Dynamic (" + how + "): " + counted(d.compilations, "compilation", "compilations") + ", est. " + format_seconds(d.saving_s) +
         " saved (an estimate: steps as fast as the static ones).";
}

std::string shape_evidence(const InputKey& key, std::optional<int64_t> pid, std::optional<int64_t> dynamic_from, const std::vector<DimValue>& observed,
                           int64_t changes, double compile_s, const ShapePlan& plan, const DynamicPlan& dyn, bool short_last_batch,
                           std::optional<std::pair<int64_t, int64_t>> recorded) {
  const auto& [_, input, dim] = key;
  Json j;
  j.begin_object().field("input", input).field("dim", dim);
  if (pid) j.field("pid", *pid);
  j.key("dynamic_from");
  if (dynamic_from) j.value(*dynamic_from); else j.null();
  j.key("values").begin_array();
  for (const auto& d : observed) {
    j.begin_object().field("value", d.value).field("steps", d.steps).field("compilations", d.compilations);
    j.field("compile_s", d.compile_s).field("execute_s", d.execute_s).end_object();
  }
  j.end_array();
  j.field("compilations", changes).field("compile_s", compile_s);
  j.key("model").begin_object().field("compile_s_per_graph", plan.compile_per_graph_s);
  j.field("execute_s_intercept", plan.exec_a).field("execute_s_per_unit", plan.exec_b).end_object();
  j.key("pad").begin_object().field("to", plan.pad_to).field("compilations", 1).field("padding_waste", plan.pad_waste);
  j.field("estimated_total_s", plan.pad_total_s).field("estimated_saving_s", plan.pad_saving_s).end_object();
  j.key("buckets").begin_object().key("sizes").begin_array();
  for (int64_t b : plan.buckets) j.value(b);
  j.end_array().field("padding_waste", plan.bucket_waste).field("estimated_total_s", plan.bucket_total_s);
  j.field("estimated_saving_s", plan.bucket_saving_s).end_object();
  j.field("observed_total_s", plan.observed_total_s).field("short_last_batch", short_last_batch);
  j.key("dynamic").begin_object().field("compilations", dyn.compilations).field("estimated_total_s", dyn.total_s);
  j.field("estimated_saving_s", dyn.saving_s).field("step_ratio", dyn.step_ratio).field("measured", dyn.measured);
  j.key("compared_at").begin_array();
  for (int64_t v : dyn.compared_at) j.value(v);
  j.end_array().field("fitted_over", dyn.fitted_over).end_object();
  // Steps whose sizes the hook recorded, and the steps of the process it did not.
  if (recorded) j.field("steps_recorded", recorded->first).field("steps_unrecorded", recorded->second);
  j.end_object();
  return j.str();
}

// Dims that changed together (one batch's dim 0 across its inputs, tied
// sequence lengths): the same process, size before and sizes in the same
// compilations. The first one logged speaks for the others.
std::map<InputKey, std::vector<InputKey>> tied_dims(const ShapeRun& run) {
  std::map<std::tuple<int64_t, int64_t, std::map<int64_t, int64_t>>, std::vector<InputKey>> by_change;
  for (const auto& [key, by_graph] : run.values) by_change[{std::get<0>(key), run.first_old.at(key), by_graph}].push_back(key);
  std::map<InputKey, std::vector<InputKey>> tied;
  for (auto& [change, keys] : by_change) {
    std::sort(keys.begin(), keys.end(), [&](const InputKey& a, const InputKey& b) { return run.first_seen.at(a) < run.first_seen.at(b); });
    tied[keys.front()] = std::vector<InputKey>(keys.begin() + 1, keys.end());
  }
  return tied;
}

std::string dim_name_of(const InputKey& key) { return std::get<1>(key) + " dim " + std::to_string(std::get<2>(key)); }

Status shape_change(const store::Reader& r, Report& report, StoreText& text, std::map<std::string, std::string>& shape_of_dim) {
  ShapeRun run;
  read_shape_run(r, report, text, run);
  for (const auto& [key, others] : tied_dims(run)) {
    const std::map<int64_t, int64_t>& by_graph = run.values.at(key);
    std::vector<DimValue> observed = observed_values(run, key, by_graph);
    if (observed.size() < 2) continue;
    ShapePlan plan = plan_for(observed);
    const auto& [upid, input, dim] = key;
    auto pid = run.pid_of.find(upid);
    // Several processes compiled: say whose input this is.
    std::string whose =
        run.compiling.size() > 1 ? " (pid " + (pid != run.pid_of.end() ? std::to_string(pid->second) : std::string("unknown")) + ")" : "";
    int64_t lo = observed.front().value, hi = observed.back().value;
    int64_t changes = 0;
    double compile_s = 0;
    for (const auto& d : observed) {
      changes += d.compilations;
      compile_s += d.compile_s;
    }
    std::string dim_name = dim_name_of(key);
    Finding f;
    f.kind = "recompilation.shape_change";
    f.identity = dim_name + ":";
    for (const auto& d : observed) f.identity += " " + std::to_string(d.value);
    shape_of_dim[dim_name] = f.identity;
    for (size_t i = 0; i < others.size(); ++i) {
      shape_of_dim[dim_name_of(others[i])] = f.identity;
      dim_name += (i + 1 == others.size() ? " and " : ", ") + dim_name_of(others[i]);
    }
    f.severity = changes > 2 ? Severity::kWarning : Severity::kInfo;
    f.title = dim_name + whose + " took " + std::to_string(observed.size()) + " values (" + std::to_string(lo) + ".." + std::to_string(hi) +
              "): " + counted(changes, "compilation", "compilations") + ", " + format_seconds(compile_s) + " compiling";
    const bool short_last_batch = dim == 0 && plan.short_batch;
    shape_suggestion(f, dim_name, short_last_batch, plan, changes, compile_s);
    auto dyn = run.dynamic_at.find(key);
    auto rec = run.step_values.find(key);
    std::optional<std::pair<int64_t, int64_t>> recorded;
    if (rec != run.step_values.end()) {
      const int64_t seen = static_cast<int64_t>(rec->second.size()), total = std::max(run.steps_of[upid], seen);
      recorded = {seen, total - seen};
      if (seen < total)
        f.suggestion += " (" + std::to_string(total - seen) + " of " + std::to_string(total) + (total - seen == 1 ? " steps has" : " steps have") + " no record of " + dim_name +
                        "'s size: the plan covers the " + std::to_string(seen) + (run.dynamic_by_tc.contains(key) ? " that ran it.)" : " the hook saw.)");
    } else if (dyn != run.dynamic_at.end() && !short_last_batch) {
      // The sizes after the dim became dynamic are unknown: no size from this log is the data's largest.
      f.suggestion = "Pad " + dim_name + " to one size at or above the largest your data can have (e.g. the tokenizer's max_length), or bucket: " +
                     std::string(run.dynamic_by_tc.contains(key) ? "tc" : "torch.compile") + " made this dim dynamic at " + std::to_string(dyn->second) +
                     ", and the sizes of the steps after that are not " + (run.dynamic_by_tc.contains(key) ? "recorded" : "in its log") +
                     " (the largest before it was " + std::to_string(hi) + ").";
    }
    const DynamicPlan dyn_plan = dynamic_plan(run, key, observed, plan);
    const bool by_tc = run.graphs.count(by_graph.begin()->first) && !run.graphs.at(by_graph.begin()->first).carries;
    // The third plan is named where the run measured it, or where it beats both others.
    if (!short_last_batch && (dyn_plan.measured || (dyn_plan.saving_s > std::max(plan.pad_saving_s, plan.bucket_saving_s) && dyn_plan.saving_s > 0)))
      f.suggestion += " " + dynamic_text(dim_name, dyn_plan, by_tc);
    for (const auto& d : observed)
      if (d.first_ts) f.anchors_ts.push_back(d.first_ts);
    f.evidence_json = shape_evidence(key, pid != run.pid_of.end() ? std::optional(pid->second) : std::nullopt,
                                     dyn != run.dynamic_at.end() ? std::optional(dyn->second) : std::nullopt, observed, changes, compile_s, plan,
                                     dyn_plan, short_last_batch, recorded);
    if (!others.empty()) {
      Json tied;
      tied.begin_array();
      for (const InputKey& o : others) tied.value(dim_name_of(o));
      tied.end_array();
      add_evidence(f, "tied", tied.str());
    }
    report.findings.push_back(std::move(f));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- recompilation.structure_change

Status structure_change(const store::Reader& r, Report& report, StoreText& text) {
  auto q = r.query(
      "SELECT c.loc_id, l.file, l.line, l.function, sum(c." + std::string(kNotBackward) + "), sum(c.dur), group_concat(coalesce(c.diff, ''), char(10)), min(c.ts) "
      "FROM compilations c LEFT JOIN locations l ON l.id = c.loc_id WHERE c.reason = 'structure_change' GROUP BY c.loc_id ORDER BY sum(c.dur) DESC");
  while (q.next()) {
    std::string where = q.is_null(1) ? std::string("an unknown call site") : text(q.text(1)) + ":" + std::to_string(q.i64(2));
    int64_t n = q.i64(4);
    double s = static_cast<double>(q.i64(5)) / 1e9;
    std::string diffs = text(q.text(6));
    std::string first_diff = diffs.substr(0, diffs.find('\n'));
    Finding f;
    f.kind = "recompilation.structure_change";
    f.identity = where;
    f.severity = n > 1 ? Severity::kWarning : Severity::kInfo;
    f.title = "The graph cut at " + where + " changed structure " + std::to_string(n) + (n == 1 ? " time" : " times") + ": " + format_seconds(s) +
              " compiling";
    f.suggestion = "Keep the step's graph the same every step: " + (first_diff.empty() ? std::string("see the diff in the store") : first_diff) +
                   ". Values that change (a learning rate, a step counter, a dropout seed) belong in device tensors, not in Python-side "
                   "branches or constants baked into the graph.";
    f.estimated_saving_s = s;
    Json j;
    j.begin_object().field("call_site", where).field("function", q.is_null(3) ? std::string() : text(q.text(3)));
    j.field("compilations", n).field("compile_s", s).field("first_diff", first_diff).end_object();
    add(report, std::move(f), j, q.i64(7));
  }
  return q.status();
}

// ---------------------------------------------------------------- explicit_evaluation

// JAX and PyTorch/XLA dispatch asynchronously: a read-back waits for the
// device to finish what the step queued, and that computation runs with or
// without the read. What the read costs is the host work it kept from
// overlapping the computation: per read, the host's time from the read's end
// to the end of its step (the next step's dispatch), at most the wait. A read
// outside every step is credited nothing.
double async_overlap_s(const store::Reader& r, int64_t loc, const std::vector<Step>& steps) {
  double s = 0;
  for (auto q = r.query("SELECT ts, dur FROM explicit_evaluations WHERE loc_id = " + std::to_string(loc)); q.next();) {
    const int64_t ts = q.i64(0), wait = q.i64(1);
    auto after = std::upper_bound(steps.begin(), steps.end(), ts, [](int64_t t, const Step& st) { return t < st.ts; });
    if (after == steps.begin()) continue;
    const Step& st = *std::prev(after);
    if (ts >= st.ts + st.dur) continue;
    s += static_cast<double>(std::min(wait, std::max<int64_t>(0, st.ts + st.dur - (ts + wait)))) / 1e9;
  }
  return s;
}

// The title and fix of a JAX or PyTorch/XLA read-back, credited with `saving_s` (async_overlap_s).
void async_read_back(Finding& f, const std::string& framework, const std::string& what, const std::string& where, int64_t count, int64_t steps_hit,
                     double per_step, double total_s, double saving_s, int64_t every) {
  const std::string short_where = where.substr(where.rfind('/') == std::string::npos ? 0 : where.rfind('/') + 1);
  const std::string times = counted(count, "time", "times") + " in " + counted(steps_hit, "step", "steps") + ": " + format_seconds(per_step) + "/step, " + format_seconds(total_s) + " in all";
  const std::string how = ": " + framework + " runs the step asynchronously, so the wait is the step's own computation, which runs anyway; " +
                          "removing the read saves only the host work it kept from overlapping that computation (per read, the time from its end " +
                          "to the next step's dispatch, at most the wait)";
  const std::string every_text = ", or read it every " + std::to_string(every) + " steps (est. " +
                                 format_seconds(saving_s * (1.0 - 1.0 / static_cast<double>(every))) + " saved).";
  if (framework == "PyTorch/XLA") {
    f.title = what + " at " + short_where + " forced an evaluation before torch_xla.sync() " + times;
    f.suggestion = "Keep the value on the device and read it after the loop (or after torch_xla.sync()), instead of the " + what + " at " + where +
                   " (est. " + format_seconds(saving_s) + " saved" + how + ")" + every_text;
  } else {
    // Nothing is cut: reading a value waits for the computation.
    f.title = what + " at " + short_where + " waited for the device " + times;
    f.suggestion = "Keep the value on the device and read it after the loop, instead of the " + what + " at " + where + " (est. " +
                   format_seconds(saving_s) + " saved" + how + ")" + every_text;
  }
  f.estimated_saving_s = saving_s;
}

Status explicit_evaluation(const store::Reader& r, Report& report, StoreText& text) {
  int64_t steps = std::max<int64_t>(report.summary.steps, 1);
  int64_t step_ns = 0;
  for (const Step& s : report.steps) step_ns += s.dur;
  double step_s = report.steps.empty() ? 0 : static_cast<double>(step_ns / static_cast<int64_t>(report.steps.size())) / 1e9;
  const bool v4 = r.has(store::schema::explicit_evaluations, "framework");
  const bool v6 = r.has(store::schema::explicit_evaluations, "code");
  auto q = r.query(
      "SELECT e.loc_id, l.file, l.line, l.function, group_concat(DISTINCT e.kind), count(*), sum(e.dur), min(e.ts), count(DISTINCT e.step), " +
      std::string(v4 ? "max(e.framework), max(e.reason)" : "'tc', NULL") + std::string(v6 ? ", group_concat(DISTINCT e.code), group_concat(DISTINCT e.broke_at)" : ", NULL, NULL") +
      " FROM explicit_evaluations e LEFT JOIN locations l ON l.id = e.loc_id GROUP BY e.loc_id ORDER BY sum(e.dur) DESC");
  while (q.next()) {
    if (text(q.text(9)) == "torch.compile") {
      auto opt = [&](int c) { return q.is_null(c) ? std::string() : text(q.text(c)); };
      graph_break_finding(r, report, {.file = opt(1), .function = opt(3), .kinds = opt(4), .reason = opt(10), .codes = opt(11), .broke_at = opt(12),
                                      .line = q.i64(2), .compilations = q.i64(5), .first_ts = q.i64(7)});
      continue;
    }
    std::string where = q.is_null(1) ? std::string("an unknown call site") : text(q.text(1)) + ":" + std::to_string(q.i64(2));
    std::string kinds = text(q.text(4));
    int64_t count = q.i64(5);
    const std::string framework = text(q.text(9));
    const bool async = framework == "jax" || framework == "torch_xla";
    // JAX: a value read once (the last loss after the loop) waits for the work queued before it, which is no cost of the read.
    // PyTorch/XLA: one read after the loop is how the fix reads the losses.
    if (async && count == 1) continue;
    double total_s = static_cast<double>(q.i64(6)) / 1e9;
    int64_t steps_hit = q.i64(8);
    double per_step = total_s / static_cast<double>(steps);
    // Log every N steps: N keeps what is left under 1% of a step, at least 10.
    int64_t every = 10;
    if (step_s > 0) {
      double per_call = total_s / static_cast<double>(count);
      while (every < 1000 && per_call / static_cast<double>(every) > 0.01 * step_s) every *= 10;
    }
    double log_every_saving = total_s * (1.0 - 1.0 / static_cast<double>(every));
    std::string short_where = where.substr(where.rfind('/') == std::string::npos ? 0 : where.rfind('/') + 1);
    Finding f;
    f.kind = "explicit_evaluation";
    f.identity = kinds + " at " + where;
    f.severity = steps_hit > 1 ? Severity::kWarning : Severity::kInfo;
    f.title = kinds + "() at " + short_where + " cut the graph " + std::to_string(count) + (count == 1 ? " time" : " times") + " in " +
              std::to_string(steps_hit) + (steps_hit == 1 ? " step" : " steps") + ": " + format_seconds(per_step) + "/step, " + format_seconds(total_s) + " in all";
    f.suggestion = "Move the " + kinds + "() at " + where + " after tc::mark_step() (free there: est. " + format_seconds(total_s) +
                   " saved), or log every " + std::to_string(every) + " steps (est. " + format_seconds(log_every_saving) + " saved).";
    f.estimated_saving_s = total_s;
    if (async) {
      async_read_back(f, framework == "jax" ? "JAX" : "PyTorch/XLA", q.is_null(10) ? kinds + "()" : text(q.text(10)), where, count, steps_hit,
                      per_step, total_s, q.is_null(0) ? 0.0 : async_overlap_s(r, q.i64(0), report.steps), every);
      log_every_saving = f.estimated_saving_s * (1.0 - 1.0 / static_cast<double>(every));
    }
    Json j;
    j.begin_object().field("call_site", where).field("function", q.is_null(3) ? std::string() : text(q.text(3)));
    j.field("kind", kinds).field("count", count).field("steps", steps_hit).field("graph_cuts", count);
    j.field("total_s", total_s).field("per_step_s", per_step).field("log_every", every).field("log_every_saving_s", log_every_saving);
    if (async) j.field("overlap_s", f.estimated_saving_s);
    j.end_object();
    add(report, std::move(f), j, q.i64(7));
  }
  return q.status();
}

// ---------------------------------------------------------------- recompilation.limit_reached

// torch.compile stopped compiling a frame at its recompile limit: from that
// step on the frame ran uncompiled (eagerly), and nothing more was logged.
Status limit_reached(const store::Reader& r, Report& report, StoreText& text) {
  if (!r.has(store::schema::compilations, "failure")) return Status::Ok();
  auto q = r.query(
      "SELECT c.step, c.ts, c.failure, c.frame, l.function, l.file, l.line, c.shape_erased, " + frame_compilations_sql("") +
      "FROM compilations c LEFT JOIN locations l ON l.id = c.loc_id WHERE c.failure LIKE '%recompile limit%' ORDER BY c.ts");
  std::set<std::string> seen;
  while (q.next()) {
    std::string frame_key = text(q.text(7));
    if (!seen.insert(frame_key).second) continue;
    const int64_t step = q.i64(0);
    std::string function = q.is_null(4) ? std::string("the frame") : text(q.text(4));
    std::string where = q.is_null(5) ? std::string() : text(q.text(5)) + ":" + std::to_string(q.i64(6));
    const int64_t compiled = q.i64(8);
    const double compile_s = static_cast<double>(q.i64(9)) / 1e9;
    // Steps from the limit on: uncompiled. Their time against the compiled steps' before it.
    const auto [before_ns, after_ns] = execute_ns_split_at(report.steps, step);
    const auto before = static_cast<int64_t>(before_ns.size()), after = static_cast<int64_t>(after_ns.size());
    const double eager_s = median_s(after_ns), compiled_step_s = median_s(before_ns);
    Finding f;
    f.kind = "recompilation.limit_reached";
    f.identity = function + (where.empty() ? "" : " at " + where);
    f.severity = Severity::kWarning;
    f.title = "torch.compile hit its recompile limit for " + function + " at step " + std::to_string(step) + " after " +
              counted(compiled, "compilation", "compilations") + " (" + format_seconds(compile_s) + "): " +
              (report.steps.empty() ? std::string("every later call ran uncompiled")
                                    : std::to_string(after) + " of " + std::to_string(after + before) + " steps ran uncompiled");
    if (!report.steps.empty() && after > 0 && before > 0) {
      f.title += " (median step " + format_seconds(eager_s) + " uncompiled, " + format_seconds(compiled_step_s) + " before)";
    }
    f.suggestion = "Keep the shapes of " + function + "'s inputs from changing: pad them to one length (or a few buckets) and drop or pad "
                   "the short last batch, so that the limit (torch._dynamo.config.recompile_limit, 8 by default) is never reached; "
                   "see the recompilation.shape_change findings for the sizes. Raising the limit only buys more compilations.";
    f.estimated_saving_s = after > 0 && eager_s > compiled_step_s ? static_cast<double>(after) * (eager_s - compiled_step_s) : 0;
    Json j;
    j.begin_object().field("function", function).field("call_site", where).field("frame", text(q.text(3)));
    j.field("failure", text(q.text(2))).field("step", step).field("compilations_before", compiled).field("compile_s", compile_s);
    j.field("steps_uncompiled", after).field("steps_total", after + before);
    j.field("median_step_s_uncompiled", eager_s).field("median_step_s_before", compiled_step_s).end_object();
    add(report, std::move(f), j, q.i64(1));
  }
  return q.status();
}

// ---------------------------------------------------------------- recompilation.dynamic_marked

// torch.compile's automatic_dynamic (and tc's own, TC_DYNAMIC): after a size
// changed it recompiled the frame with that dim symbolic. The static
// compilations before it were the price.
Status dynamic_marked(const store::Reader& r, Report& report, StoreText& text) {
  if (!r.has(store::schema::compilation_inputs, "dynamic")) return Status::Ok();
  const std::string framework = r.has(store::schema::compilations, "framework") ? "c.framework" : "'torch.compile'";
  auto q = r.query(
      "SELECT i.input, i.dim, i.old_value, i.new_value, c.graph_id, c.ts, c.dur, c.step, c.shape_erased, l.function, " +
      frame_compilations_sql("AND o.ts < c.ts ") + ", " + framework +
      " FROM compilation_inputs i JOIN compilations c ON c.graph_id = i.graph_id LEFT JOIN locations l ON l.id = c.loc_id "
      "WHERE i.dynamic = 1 ORDER BY c.ts, i.id");
  while (q.next()) {
    std::string input = text(q.text(0));
    const int64_t dim = q.i64(1), before = q.i64(10);
    const double dynamic_s = static_cast<double>(q.i64(6)) / 1e9, static_s = static_cast<double>(q.i64(11)) / 1e9;
    const bool tc = text(q.text(12)) == "tc";
    std::string function = tc ? std::string("its graph") : q.is_null(9) ? std::string("the frame") : text(q.text(9));
    // Step times of the static graphs (steps before this compile) and of the dynamic one (after it), when both ran.
    const auto [st, dy] = execute_ns_split_at(report.steps, q.i64(7));
    Finding f;
    f.kind = "recompilation.dynamic_marked";
    f.identity = input + " dim " + std::to_string(dim);
    f.severity = Severity::kInfo;
    f.title = std::string(tc ? "tc" : "torch.compile") + " made " + input + " dim " + std::to_string(dim) + " dynamic after " + counted(before, "compilation", "compilations") + " of " + function + " (" + format_seconds(static_s) + "), when it went " +
              std::to_string(q.i64(2)) + " -> " + std::to_string(q.i64(3)) + "; the dynamic graph took " + format_seconds(dynamic_s) + " to compile";
    // tc's static steps before it may be its tiered graphs' eager first steps, and other graphs' steps
    // are between: recompilation.shape_change compares built code at the sizes both ran.
    if (!st.empty() && !dy.empty() && !tc) {
      f.title += "; median step " + format_seconds(median_s(st)) + " static, " + format_seconds(median_s(dy)) + " dynamic";
    }
    f.suggestion = "If " + input + " dim " + std::to_string(dim) + " is meant to vary, mark it dynamic from the start "
                   "(" + (tc ? "tc::mark_dynamic(" : "torch._dynamo.mark_dynamic(") + input + ", " + std::to_string(dim) + ")) and save the static compilation" +
                   (before == 1 ? "" : "s") + "; if it is not, pad it to one size (recompilation.shape_change says to which).";
    f.estimated_saving_s = static_s;
    Json j;
    j.begin_object().field("input", input).field("dim", dim).field("old_value", q.i64(2)).field("new_value", q.i64(3));
    j.field("function", function).field("compilations_before", before).field("static_compile_s", static_s).field("dynamic_compile_s", dynamic_s);
    j.field("step", q.i64(7));
    if (!st.empty() && !dy.empty()) j.field("median_step_s_static", median_s(st)).field("median_step_s_dynamic", median_s(dy));
    j.end_object();
    add(report, std::move(f), j, q.i64(5));
  }
  return q.status();
}

// ---------------------------------------------------------------- memory

struct BatchModel {
  bool known = false;
  int64_t batch_size = 0;
  int64_t peak = 0, fixed = 0, batch_bytes = 0;
  double per_sample = 0;
  // A framework run's model (framework_memory): the peak measured at each
  // batch, ascending, linear between them and past the last along its last
  // segment; fixed and per_sample are then those of the segment at the batch
  // asked about (at()). method says where the points came from.
  std::vector<std::pair<int64_t, int64_t>> points;
  std::string method;

  // The segment holding batch b: fixed and per_sample for it.
  void at(double b) {
    if (points.size() < 2) return;
    size_t i = 0;
    while (i + 2 < points.size() && b > static_cast<double>(points[i + 1].first)) ++i;
    const auto& [b0, p0] = points[i];
    const auto& [b1, p1] = points[i + 1];
    per_sample = static_cast<double>(p1 - p0) / static_cast<double>(b1 - b0);
    fixed = static_cast<int64_t>(std::llround(static_cast<double>(p0) - per_sample * static_cast<double>(b0)));
    batch_bytes = peak - fixed;
  }
};

// The step function's points in framework_memory (the process and function
// whose run point has the largest peak); unknown with fewer than two batches,
// or when memory does not grow with the batch.
BatchModel framework_model(const store::Reader& r) {
  BatchModel m;
  if (!r.has(store::schema::framework_memory, "peak_bytes")) return m;
  auto q = r.query(
      "SELECT f.batch_size, max(f.peak_bytes), max(f.ran), f.framework, f.function FROM framework_memory f JOIN (SELECT utid, function FROM "
      "framework_memory WHERE ran = 1 AND batch_size > 0 ORDER BY peak_bytes DESC, id LIMIT 1) s ON s.utid = f.utid AND s.function = f.function "
      "WHERE f.batch_size > 0 AND f.peak_bytes > 0 GROUP BY f.batch_size ORDER BY f.batch_size");
  std::string ahead;
  while (q.next()) {
    m.points.emplace_back(q.i64(0), q.i64(1));
    if (q.i64(2) != 0 && m.batch_size == 0) {
      m.batch_size = q.i64(0), m.peak = q.i64(1);
      m.method = std::string(q.text(3) == "jax" ? "XLA's memory_analysis() of " : "the framework's accounting of ") + std::string(q.text(4)) +
                 " at batch " + std::to_string(q.i64(0)) + " (ran)";
    } else if (q.i64(2) == 0) {
      ahead += (ahead.empty() ? "" : ", ") + std::to_string(q.i64(0));
    }
  }
  if (!q.status().ok() || m.batch_size == 0 || m.points.size() < 2) return BatchModel{};
  m.method += " and " + ahead + " (compiled ahead of time, not run)";
  m.at(static_cast<double>(m.points.back().first));
  if (m.per_sample <= 0) return BatchModel{};
  m.known = true;
  m.at(static_cast<double>(m.batch_size));
  return m;
}

// Whether the summary's memory came from tc's torch hook (its tensors, or torch.cuda's allocator).
bool torch_memory(const Summary& s) { return s.memory_source == "torch_tensors" || s.memory_source == "torch_cuda_allocator"; }

// From the memory plan of the biggest compiled graph with a batch dimension
// (a torch run's: its largest step's tensors, the activations per sample);
// else a framework run's model.
BatchModel batch_model(const store::Reader& r, const Summary& s) {
  BatchModel m;
  auto q = r.query(
      "SELECT batch_size, peak_bytes, batch_bytes FROM memory_plans WHERE batch_size > 0 AND batch_bytes > 0 ORDER BY peak_bytes DESC LIMIT 1");
  if (q.next()) {
    m.known = true;
    m.batch_size = q.i64(0);
    m.peak = q.i64(1);
    m.batch_bytes = q.i64(2);
    m.fixed = m.peak - m.batch_bytes;
    m.per_sample = static_cast<double>(m.batch_bytes) / static_cast<double>(m.batch_size);
    if (torch_memory(s))
      m.method = std::string(s.memory_source == "torch_tensors" ? "torch's tensors" : "torch.cuda's peak allocated bytes") + " at batch " +
                 std::to_string(m.batch_size) + " (ran): parameters, gradients and optimizer state fixed, the activations autograd saved for "
                 "backward per sample";
    return m;
  }
  return framework_model(r);
}

// The largest batch whose peak leaves the margin free; a framework model is
// left at the segment of that batch.
int64_t largest_batch(BatchModel& m, int64_t capacity, double margin) {
  double usable = static_cast<double>(capacity) * (1.0 - margin);
  if (!m.points.empty()) {
    if (!m.known) return 0;
    size_t i = 0;  // the first segment whose end does not fit (or the last)
    while (i + 2 < m.points.size() && static_cast<double>(m.points[i + 1].second) <= usable) ++i;
    m.at(static_cast<double>(m.points[i].first) + 0.5);
  }
  usable -= static_cast<double>(m.fixed);
  if (!m.known || m.per_sample <= 0 || usable <= 0) return 0;
  int64_t b = static_cast<int64_t>(usable / m.per_sample);
  if (b >= 16) b -= b % 8;  // multiples of 8 run best
  return b;
}

std::string lr_advice(const store::Reader& r, int64_t from, int64_t to) {
  double k = static_cast<double>(to) / static_cast<double>(from);
  auto q = r.query("SELECT last_value FROM counter_series c JOIN locations l ON l.id = c.loc_id WHERE l.name = 'optim.lr'");
  if (q.next() && !q.is_null(0)) {
    double lr = q.f64(0);
    return "scale lr " + format_double("%.3g", lr) + " to " + format_double("%.3g", lr * k) + " (linear) or " +
           format_double("%.3g", lr * std::sqrt(k)) + " (sqrt)";
  }
  // Two decimals, or three significant digits for a large cut (0.0447, not 0.00).
  auto factor = [](double x) { return format_double(x >= 0.1 ? "%.2f" : "%.3g", x); };
  return "scale the learning rate by " + factor(k) + " (linear) or " + factor(std::sqrt(k)) + " (sqrt)";
}

Status headroom(const store::Reader& r, Report& report, const Options& options, BatchModel& m);

Status memory(const store::Reader& r, Report& report, const Options& options) {
  BatchModel m = batch_model(r, report.summary);
  const bool torch = torch_memory(report.summary);
  // memory.oom
  auto q = r.query(
      "SELECT ts, requested_bytes, live_bytes, capacity_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes, activation_bytes, "
      "input_bytes, other_bytes, batch_size, step FROM out_of_memory ORDER BY ts");
  bool had_oom = false;
  while (q.next()) {
    had_oom = true;
    // The user's capacity (tc-analyze --capacity) over the recorded one, as for the summary.
    const int64_t capacity = options.capacity_bytes > 0 ? options.capacity_bytes : q.i64(3);
    int64_t failing_batch = q.is_null(10) ? 0 : q.i64(10);
    int64_t fits = largest_batch(m, capacity, options.memory_safety_margin);
    Finding f;
    f.kind = "memory.oom";
    f.identity = "batch " + std::to_string(failing_batch) + " fits " + std::to_string(fits);
    f.severity = Severity::kError;
    f.title = "Out of memory at step " + std::to_string(q.i64(11)) + ": " + format_bytes(static_cast<double>(q.i64(1))) + " requested with " +
              format_bytes(static_cast<double>(q.i64(2))) + " of " + format_bytes(static_cast<double>(capacity)) + " live";
    if (torch) {
      f.title += std::string(" (the last step's parameters, gradients and optimizer state") +
                 (failing_batch > 0 ? "; batch " + std::to_string(failing_batch) + " failed" : std::string()) + ")";
    }
    if (fits > 0) {
      f.suggestion = "Use batch " + std::to_string(fits) + " (the largest that fits with " + format_double("%.0f", options.memory_safety_margin * 100) +
                     "% headroom, from " + (m.method.empty() ? "the memory plan at batch " + std::to_string(m.batch_size) : m.method) + ")" +
                     (failing_batch > 0 ? " instead of " + std::to_string(failing_batch) : std::string()) + "; " +
                     lr_advice(r, failing_batch > 0 ? failing_batch : m.batch_size, fits) + ".";
    } else if (torch) {
      f.suggestion = "Lower the batch size; no step that ran had a batch to size it from (tc's hook takes it from the step's torch.compile'd "
                     "call), or the capacity is not known: tc-analyze --capacity BYTES gives it.";
    } else {
      f.suggestion = "Lower the batch size, or raise TC_DEVICE_MEMORY_LIMIT if the device has more memory; no compiled memory plan with a "
                     "batch dimension was recorded to size it exactly.";
    }
    Json j;
    j.begin_object().field("requested_bytes", q.i64(1)).field("live_bytes", q.i64(2)).field("capacity_bytes", capacity);
    j.key("breakdown").begin_object().field("parameter", q.i64(4)).field("gradient", q.i64(5)).field("optimizer_state", q.i64(6));
    j.field("activation", q.i64(7)).field("input", q.i64(8)).field("other", q.i64(9)).end_object();
    j.key("failing_batch_size");
    if (failing_batch > 0) j.value(failing_batch); else j.null();
    j.field("largest_batch_that_fits", fits).field("safety_margin", options.memory_safety_margin);
    if (!m.method.empty()) j.field("method", m.method);
    j.end_object();
    add(report, std::move(f), j, q.i64(0));
  }
  TC_RETURN_IF_ERROR(q.status());
  if (had_oom) return Status::Ok();
  return headroom(r, report, options, m);
}

// memory.headroom: peak against capacity, and the batch the model says fits.
Status headroom(const store::Reader& r, Report& report, const Options& options, BatchModel& m) {
  const Summary& s = report.summary;
  if (s.capacity_bytes <= 0 || s.peak_bytes <= 0) return Status::Ok();
  int64_t fits = largest_batch(m, s.capacity_bytes, options.memory_safety_margin);
  // Past 8x the step changes character (and the learning rate with it): suggest at most that, and say how far memory goes.
  const int64_t suggest = std::min(fits, m.batch_size * 8);
  if (m.known && suggest > 0) m.at(static_cast<double>(suggest));  // a framework model: the numbers of the suggested batch's segment
  const std::string margin = format_double("%.0f", options.memory_safety_margin * 100);
  double used = static_cast<double>(s.peak_bytes) / static_cast<double>(s.capacity_bytes);
  Finding f;
  f.kind = "memory.headroom";
  f.identity = m.known ? "batch " + std::to_string(m.batch_size) + " to " + std::to_string(suggest) : "no batch";
  f.severity = Severity::kInfo;
  f.title = "Peak " + format_bytes(static_cast<double>(s.peak_bytes)) + " of " + format_bytes(static_cast<double>(s.capacity_bytes)) + " (" +
            format_double("%.0f", used * 100) + "%)";
  if (m.known && fits > m.batch_size) {
    f.title += "; batch " + std::to_string(fits) + " fits";
    f.suggestion = "Raise the batch from " + std::to_string(m.batch_size) + " to " + std::to_string(suggest) + " (" +
                   (suggest < fits ? "8x; up to " + std::to_string(fits) + " fit" : std::string("the most that fits")) + " with " + margin +
                   "% headroom: " + format_bytes(static_cast<double>(m.fixed)) + " fixed + " + format_bytes(m.per_sample) + " per sample" +
                   (m.method.empty() ? "" : ", from " + m.method) + ") and " + lr_advice(r, m.batch_size, suggest) + ".";
  } else if (m.known) {
    f.suggestion = "The batch of " + std::to_string(m.batch_size) + " already uses what fits with " + margin + "% headroom.";
  } else if (torch_memory(s)) {
    f.suggestion = "No batch size is suggested: tc's hook takes a torch step's batch from its first call of what torch.compile returned "
                   "(the dim 0 most of its arguments share), and no step had one (docs/frameworks.md#memory).";
  } else if (s.memory_source == "xla_memory_info") {
    f.suggestion = "No batch size is suggested: PyTorch/XLA's memory info says what the device holds, not what grows with the batch "
                   "(docs/frameworks.md#pytorchxla).";
  } else if (s.memory_source == "xla_memory_analysis") {
    f.suggestion = "No batch size is suggested: the step was not compiled at a second batch size to size it (the hook's probes at the end "
                   "of the run: TC_MEMORY_PROBE_S, and the jax import's note), or no batch argument was found (docs/frameworks.md#memory).";
  } else {
    f.suggestion = "No compiled memory plan with a batch dimension was recorded, so no batch size is suggested; name the batch input "
                   "(tc::from_host(..., \"name\")) and run compiled.";
  }
  Json j;
  j.begin_object().field("peak_bytes", s.peak_bytes).field("capacity_bytes", s.capacity_bytes).field("used", used);
  if (m.known) {
    j.field("batch_size", m.batch_size).field("planned_peak_bytes", m.peak).field("fixed_bytes", m.fixed);
    j.field("batch_bytes", m.batch_bytes).field("bytes_per_sample", m.per_sample).field("largest_batch_that_fits", fits);
    double k = suggest > 0 ? static_cast<double>(suggest) / static_cast<double>(m.batch_size) : 0;
    j.field("suggested_batch", suggest).field("lr_scale_linear", k).field("lr_scale_sqrt", std::sqrt(k));
    if (!m.method.empty()) {
      j.field("method", m.method).field("predicted_peak_bytes", m.fixed + static_cast<int64_t>(std::llround(m.per_sample * static_cast<double>(suggest))));
      if (!m.points.empty()) {  // a model of several batches' peaks (JAX's)
        j.key("points").begin_array();
        for (const auto& [b, p] : m.points) j.begin_object().field("batch_size", b).field("peak_bytes", p).end_object();
        j.end_array();
      }
    }
  }
  j.field("safety_margin", options.memory_safety_margin).end_object();
  add(report, std::move(f), j);
  return Status::Ok();
}

// ---------------------------------------------------------------- compile.amortization

// What keeps the run's built code for its next run, by the compiler that
// compiled most: tc's own cache, or the framework's.
std::string next_run_cache(const store::Reader& r) {
  std::string compiler = "tc";
  if (r.has(store::schema::compilations, "framework")) {
    auto q = r.query("SELECT framework FROM compilations GROUP BY framework ORDER BY count(*) DESC LIMIT 1");
    if (q.next() && !q.is_null(0)) compiler = std::string(q.text(0));
  }
  if (compiler == "torch.compile")
    return "torch.compile traces again in the next run of the same program but loads the compiled code from Inductor's caches (on by default, "
           "TORCHINDUCTOR_CACHE_DIR); torch.compiler.save_cache_artifacts() and load_cache_artifacts() carry them to another machine";
  if (compiler == "jax") return "JAX compiles again in the next run unless its persistent cache is on: jax.config.update(\"jax_compilation_cache_dir\", DIR)";
  if (compiler == "torch_xla") return "PyTorch/XLA compiles again in the next run unless its persistent cache is on: torch_xla.runtime.initialize_cache(DIR)";
  return "the built code is cached in TC_CACHE_DIR, so the next run of the same program compiles nothing";
}

Status amortization(const store::Reader& r, Report& report) {
  const Summary& s = report.summary;
  if (s.compilations == 0 || report.run.wall_s <= 0) return Status::Ok();
  double share = s.compile_s / report.run.wall_s;
  // Break-even needs steps and their execution time; without them it is unknown, never 0.
  const bool measured = s.steps > 0 && !s.execute_source.empty() && s.execute_s > 0;
  double exec_per_step = measured ? s.execute_s / static_cast<double>(s.steps) : 0;
  // Recompilations late in the run mean compiling never stops.
  int64_t last_step = 0;
  for (const Step& step : report.steps) last_step = std::max(last_step, step.index);
  auto late = r.scalar_i64("SELECT count(*) FROM compilations WHERE reason <> 'first' AND " + std::string(kNotBackward) + " AND step >= " +
                           std::to_string(last_step * 3 / 4));
  int64_t late_recompiles = late.ok() ? *late : 0;
  int64_t break_even = measured ? static_cast<int64_t>(std::ceil(s.compile_s / exec_per_step)) : 0;
  bool never = late_recompiles > 0 && s.steps >= 4;
  Finding f;
  f.kind = "compile.amortization";
  f.identity = never ? "never amortizes" : !measured ? "not measured" : break_even > s.steps ? "pays off on longer runs" : "paid off";
  f.severity = never || share > 0.5 ? Severity::kWarning : Severity::kInfo;
  f.title = "Compiling took " + format_seconds(s.compile_s) + ", " + format_double("%.0f", share * 100) + "% of the run's " +
            format_seconds(report.run.wall_s);
  if (never) {
    f.title += "; recompilations continue to the end, so it never amortizes";
    f.suggestion = counted(late_recompiles, "recompilation", "recompilations") + " happened in the last quarter of the steps: fix the "
                   "recompilation findings first; until then every new shape costs another compilation.";
  } else if (!measured) {
    f.suggestion = "When compilation pays off is not known: " +
                   std::string(s.steps == 0 ? "the run had no training steps to time"
                                            : s.execute_source.empty() ? "execution was not measured (" + s.execute_unmeasured + ")"
                                                                       : "nothing but compiling ran in its steps") +
                   ".";
  } else if (break_even > s.steps) {
    f.suggestion = "Compilation costs as much as " + counted(break_even, "step", "steps") + " of execution (" + format_seconds(exec_per_step) +
                   "/step) and this run had " + std::to_string(s.steps) + ": it pays off on longer runs; " + next_run_cache(r) + ".";
  } else {
    f.suggestion = "Compilation is paid off after about " + std::to_string(std::max<int64_t>(break_even, 1)) + " of " +
                   counted(s.steps, "step", "steps") + "; nothing to change.";
  }
  Json j;
  j.begin_object().field("compile_s", s.compile_s).field("wall_s", report.run.wall_s).field("compile_share", share);
  j.key("execute_s_per_step");
  if (measured) j.value(exec_per_step);
  else j.null();
  j.key("break_even_steps");
  if (measured) j.value(break_even);
  else j.null();
  j.field("steps", s.steps);
  j.field("late_recompilations", late_recompiles).field("amortizes", !never).end_object();
  add(report, std::move(f), j);
  return Status::Ok();
}

// ---------------------------------------------------------------- kernel.hotspot

Status kernel_hotspot(const store::Reader& r, Report& report) {
  auto sites = kernel_table(r, KernelsBy::kSite);
  if (!sites.ok()) return sites.status();
  // A collective's kernel time is the wait for the other ranks (distributed.straggler's), not work.
  double kernel_s = sites->kernel_s;
  for (const KernelRow& row : sites->rows)
    if (row.kind == "collective") kernel_s -= row.total_s;
  if (sites->rows.size() == 0 || kernel_s <= 0) return Status::Ok();
  auto kernels = kernel_table(r, KernelsBy::kKernel);
  if (!kernels.ok()) return kernels.status();
  // The lines that hold most of the kernel time: the top one, and the next
  // ones (at most three in all) until they hold half of it.
  std::vector<const KernelRow*> lines;
  double held = 0;
  for (const KernelRow& row : sites->rows) {
    if (row.kind == "collective") continue;
    if (lines.size() == 3 || (held >= kernel_s / 2 && !lines.empty())) break;
    lines.push_back(&row);
    held += row.total_s;
  }
  const KernelRow& top = *lines.front();
  // With tiered builds (TC_TIERED), a new graph's first steps run the eager executor's kernels (graph 0) while
  // its code builds: slow, and gone once the build takes over. The kernel to speed up is the built code's.
  auto tier_ups = r.scalar_i64("SELECT count(*) FROM compilations WHERE trigger = 'tier_up'");
  const bool tiered = tier_ups.ok() && *tier_ups > 0;
  const KernelRow *heaviest = nullptr, *built = nullptr;  // the top line's heaviest kernel, and of built code
  double eager_tier_s = 0;                                // the top line's eager kernels passed over for it
  for (const KernelRow& k : kernels->rows) {
    if (k.kind == "collective" || k.sites.empty() || k.sites.front() != top.name) continue;
    if (!heaviest) heaviest = &k;
    if (tiered && k.graph_id == 0) eager_tier_s += k.total_s;
    else if (!built) built = &k;
  }
  if (built) heaviest = built;
  else eager_tier_s = 0;  // only eager kernels on that line
  // Shares of the execute time outside collectives (all of it without any).
  const double in_collectives = sites->kernel_s - kernel_s;
  const double execute_s = std::max(sites->execute_s - in_collectives, kernel_s);
  auto share_of = [&](const KernelRow& row) { return execute_s > 0 ? row.total_s / execute_s : 0.0; };
  report.summary.top_site = top.name;
  report.summary.top_site_share = share_of(top);
  Finding f;
  f.kind = "kernel.hotspot";
  for (const KernelRow* l : lines) f.identity += (f.identity.empty() ? "" : ", ") + l->name;
  f.severity = Severity::kInfo;
  std::string names;
  for (size_t i = 0; i < lines.size(); ++i) names += (i == 0 ? "" : i + 1 == lines.size() ? " and " : ", ") + lines[i]->name;
  double share = 0;
  for (const KernelRow* l : lines) share += share_of(*l);
  f.title = names + (lines.size() > 1 ? " hold " : " holds ") + format_double("%.0f", share * 100) + "% of the execute time (" +
            format_seconds(held) + " of " + format_seconds(execute_s) +
            (in_collectives > 0 ? ", leaving out " + format_seconds(in_collectives) + " in collectives)" : ")");
  if (heaviest && !heaviest->bound.empty()) {
    bool compute = heaviest->bound == "compute";
    double peak = compute ? sites->peak_gflops : sites->peak_gbps, probe = compute ? sites->probe_gflops : sites->probe_gbps;
    // A ceiling raised over the probe's (kernel_table): the probe measured low, and the sentence says so.
    std::string low;
    for (const std::string& n : sites->notes)
      if (peak > probe && n.find(compute ? " GFLOP/s over" : " GB/s over") != std::string::npos) low = " (" + n + ")";
    f.suggestion = "Its heaviest kernel (" + heaviest->name + ", " + std::to_string(heaviest->calls) + " calls, " + format_seconds(heaviest->total_s) +
                   ") is " + heaviest->bound + "-bound and reaches " + format_double("%.1f", compute ? heaviest->gflops : heaviest->gbps) +
                   (compute ? " GFLOP/s" : " GB/s") + ", " + format_double("%.0f", heaviest->of_ceiling * 100) + "% of this machine's " +
                   (low.empty() ? "measured " : "") + format_double("%.0f", peak) + (compute ? " GFLOP/s" : " GB/s") + low + ".";
    if (eager_tier_s > 0)
      f.suggestion += " (Of the built code: this line's kernels on the eager executor, " + format_seconds(eager_tier_s) +
                      ", ran only while its graphs built, TC_TIERED.)";
    if (heaviest->of_ceiling < 0.10) {
      f.severity = Severity::kWarning;
      f.suggestion += " That is under 10% of its ceiling: at the ceiling it would take " + format_seconds(heaviest->total_s * heaviest->of_ceiling) +
                      " instead of " + format_seconds(heaviest->total_s) + ", so this line is where the step can get faster.";
    } else {
      f.suggestion += " Speeding this line up is what shortens the step; there is no waste to remove in the run's numbers.";
    }
  } else {
    f.suggestion = "No ceilings were recorded for this run, so whether its kernels are compute- or memory-bound is unknown.";
  }
  Json j;
  j.begin_object().field("execute_s", sites->execute_s).field("kernel_s", sites->kernel_s).field("collectives_s", in_collectives);
  j.key("ceilings").begin_object().field("gflops", sites->peak_gflops).field("gbps", sites->peak_gbps);
  j.field("probe_gflops", sites->probe_gflops).field("probe_gbps", sites->probe_gbps).key("notes").begin_array();
  for (const std::string& n : sites->notes) j.value(n);
  j.end_array().end_object();
  j.key("sites").begin_array();
  for (const KernelRow* l : lines)
    j.begin_object().field("site", l->name).field("share", share_of(*l)).field("total_s", l->total_s).field("calls", l->calls).end_object();
  j.end_array();
  if (heaviest) {
    j.key("kernel").begin_object().field("name", heaviest->name).field("kind", heaviest->kind).field("bound", heaviest->bound);
    j.field("gflops", heaviest->gflops).field("gbps", heaviest->gbps).field("of_ceiling", heaviest->of_ceiling).end_object();
  }
  j.end_object();
  add(report, std::move(f), j);
  return Status::Ok();
}

// ---------------------------------------------------------------- savings that add up

// Findings whose savings are the same seconds: a recompilation.dynamic_marked
// and the recompilation.shape_change of its dim are alternatives (mark it
// dynamic, or pad it), and dynamic_marked findings of one compilation claim
// the same static compilations. Each is marked in its evidence
// (`alternative_to`, `same_saving_as`: the others' kind and identity), no
// saving exceeds the run's wall time, and Report::total_saving_s counts each
// group once (its largest saving).
void add_up_savings(Report& report, const std::map<std::string, std::string>& shape_of_dim) {
  std::vector<size_t> group(report.findings.size());
  for (size_t i = 0; i < group.size(); ++i) group[i] = i;
  auto root = [&](size_t i) {
    while (group[i] != i) i = group[i] = group[group[i]];
    return i;
  };
  std::map<size_t, std::vector<size_t>> alternatives, shared;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < report.findings.size(); ++i) index[{report.findings[i].kind, report.findings[i].identity}] = i;
  std::map<int64_t, std::vector<size_t>> dynamic_by_compile;
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const Finding& f = report.findings[i];
    if (f.kind != "recompilation.dynamic_marked") continue;
    if (!f.anchors_ts.empty()) dynamic_by_compile[f.anchors_ts.front()].push_back(i);
    auto shape = shape_of_dim.find(f.identity);
    if (shape == shape_of_dim.end()) continue;
    auto other = index.find({"recompilation.shape_change", shape->second});
    if (other == index.end()) continue;
    alternatives[i].push_back(other->second);
    alternatives[other->second].push_back(i);
    group[root(i)] = root(other->second);
  }
  for (const auto& [ts, list] : dynamic_by_compile) {
    for (size_t a : list)
      for (size_t b : list)
        if (a != b) shared[a].push_back(b);
    for (size_t b : list) group[root(b)] = root(list.front());
  }
  auto name = [&](const std::map<size_t, std::vector<size_t>>& links, size_t i, const std::string& key) {
    auto it = links.find(i);
    if (it == links.end()) return;
    Json j;
    j.begin_array();
    for (size_t o : it->second) j.begin_object().field("kind", report.findings[o].kind).field("identity", report.findings[o].identity).end_object();
    j.end_array();
    add_evidence(report.findings[i], key, j.str());
  };
  const double wall = report.run.wall_s;
  std::map<size_t, double> best;
  for (size_t i = 0; i < report.findings.size(); ++i) {
    Finding& f = report.findings[i];
    name(alternatives, i, "alternative_to");
    name(shared, i, "same_saving_as");
    if (alternatives.contains(i)) {
      const Finding& o = report.findings[alternatives.at(i).front()];
      f.suggestion += " This is an alternative to the " + o.kind + " finding (" + o.identity + "): their savings do not add up.";
    }
    if (wall > 0 && f.estimated_saving_s > wall) {
      f.suggestion += " (The estimate, " + format_seconds(f.estimated_saving_s) + ", exceeds the run's " + format_seconds(wall) + ": counted as " +
                      format_seconds(wall) + ".)";
      f.estimated_saving_s = wall;
      add_evidence(f, "saving_capped_at_wall_s", "true");
    }
    double& b = best[root(i)];
    b = std::max(b, f.estimated_saving_s);
  }
  report.total_saving_s = 0;
  for (const auto& [g, s] : best) report.total_saving_s += s;
  if (wall > 0) report.total_saving_s = std::min(report.total_saving_s, wall);
}

}  // namespace

Status add_findings(const store::Reader& store, Report& report, const Options& options, StoreText& text) {
  std::map<std::string, std::string> shape_of_dim;  // "input dim d" -> its recompilation.shape_change's identity
  TC_RETURN_IF_ERROR(shape_change(store, report, text, shape_of_dim));
  TC_RETURN_IF_ERROR(structure_change(store, report, text));
  TC_RETURN_IF_ERROR(limit_reached(store, report, text));
  TC_RETURN_IF_ERROR(dynamic_marked(store, report, text));
  TC_RETURN_IF_ERROR(explicit_evaluation(store, report, text));
  TC_RETURN_IF_ERROR(memory(store, report, options));
  TC_RETURN_IF_ERROR(amortization(store, report));
  TC_RETURN_IF_ERROR(kernel_hotspot(store, report));
  add_up_savings(report, shape_of_dim);
  return Status::Ok();
}

}  // namespace tc::analysis
