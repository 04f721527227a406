#include "findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

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

// The median of durations in ns, in seconds (0 for none).
double median_s(std::vector<int64_t> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return static_cast<double>(v[v.size() / 2]) / 1e9;
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
// (from tc's Python hook), less the compilation inside its first step.
void executions_from_steps(const std::map<int64_t, GraphInfo>& graphs, const Report& report, std::map<int64_t, std::vector<double>>& exec) {
  if (report.steps.empty()) return;
  std::map<std::pair<int64_t, std::string>, std::vector<const GraphInfo*>> by_structure;  // in ts order
  for (const auto& [gid, g] : graphs) by_structure[{g.upid, g.shape_erased}].push_back(&g);
  std::map<int64_t, double> step_s;  // index -> seconds
  int64_t last = 0;
  for (const Step& st : report.steps) {
    step_s[st.index] += static_cast<double>(st.dur) / 1e9;
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
        e.push_back(std::max(0.0, it->second - (k == from ? list[i]->compile_s : 0.0)));
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
  std::map<InputKey, std::map<int64_t, int64_t>> values;  // (process, input, dim) -> graph -> value
  std::map<InputKey, int64_t> first_old;  // value before the first change
  std::map<InputKey, int64_t> dynamic_at;  // torch.compile made the dim dynamic at this size
};

void read_shape_run(const store::Reader& r, const Report& report, StoreText& text, ShapeRun& run) {
  const std::string upid_of = "coalesce((SELECT t.upid FROM threads t WHERE t.utid = e.utid), 0)";
  // A failed compilation (torch.compile's recompile limit) compiled no graph.
  const std::string compiled = r.has(store::schema::compilations, "failure") ? " WHERE failure IS NULL" : "";
  const std::string framework = compiled.empty() ? "'tc'" : "framework";
  for (auto q = r.query("SELECT graph_id, ts, dur, reason, " + upid_of + ", step, shape_erased, " + framework + " FROM compilations e" + compiled +
                        " ORDER BY ts");
       q.next();) {
    run.graphs[q.i64(0)] = {q.i64(0), q.i64(4), q.i64(1), static_cast<double>(q.i64(2)) / 1e9, text(q.text(3)), q.i64(5), text(q.text(6)),
                            text(q.text(7)) == "torch.compile" || text(q.text(7)) == "jax" || text(q.text(7)) == "torch_xla"};
    run.compiling.insert(q.i64(4));
  }
  if (run.graphs.empty()) return;
  for (auto q = r.query("SELECT upid, pid FROM processes"); q.next();) run.pid_of[q.i64(0)] = q.i64(1);
  for (auto q = r.query("SELECT graph_id, dur FROM executions WHERE graph_id <> 0"); q.next();) {
    run.exec[q.i64(0)].push_back(static_cast<double>(q.i64(1)) / 1e9);
  }
  if (run.exec.empty()) executions_from_steps(run.graphs, report, run.exec);
  const std::string dynamic = r.has(store::schema::compilation_inputs, "dynamic") ? "dynamic" : "0";
  for (auto q = r.query("SELECT graph_id, input, dim, old_value, new_value, " + upid_of + ", " + dynamic + " FROM compilation_inputs e ORDER BY id");
       q.next();) {
    InputKey key{q.i64(5), q.is_null(1) ? std::string("(unnamed input)") : text(q.text(1)), q.i64(2)};
    run.values[key][q.i64(0)] = q.i64(4);
    run.first_old.try_emplace(key, q.i64(3));
    if (q.i64(6) == 1) run.dynamic_at.try_emplace(key, q.i64(4));
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
  std::vector<DimValue> observed;
  for (auto& [v, d] : by_value) observed.push_back(d);
  return observed;
}

std::string pad_text(const std::string& what, const ShapePlan& plan) {
  return what + " to " + std::to_string(plan.pad_to) + " (1 compilation, " + format_double("%.0f", plan.pad_waste * 100) + "% padding, est. " +
         format_seconds(plan.pad_saving_s) + " saved)";
}

std::string bucket_text(const std::string& what, const ShapePlan& plan) {
  return what + " as {" + join(plan.buckets) + "} (" + std::to_string(plan.buckets.size()) + " compilations, " +
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
    f.suggestion = "Nothing to gain in this run: its " + std::to_string(changes) + " compilations took only " + format_seconds(compile_s) +
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

std::string shape_evidence(const InputKey& key, std::optional<int64_t> pid, std::optional<int64_t> dynamic_from, const std::vector<DimValue>& observed,
                           int64_t changes, double compile_s, const ShapePlan& plan, bool short_last_batch) {
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
  j.end_object();
  return j.str();
}

Status shape_change(const store::Reader& r, Report& report, StoreText& text) {
  ShapeRun run;
  read_shape_run(r, report, text, run);
  for (auto& [key, by_graph] : run.values) {
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
    const std::string dim_name = input + " dim " + std::to_string(dim);
    Finding f;
    f.kind = "recompilation.shape_change";
    f.identity = dim_name + ":";
    for (const auto& d : observed) f.identity += " " + std::to_string(d.value);
    f.severity = changes > 2 ? Severity::kWarning : Severity::kInfo;
    f.title = dim_name + whose + " took " + std::to_string(observed.size()) + " values (" + std::to_string(lo) + ".." + std::to_string(hi) +
              "): " + std::to_string(changes) + " compilations, " + format_seconds(compile_s) + " compiling";
    const bool short_last_batch = dim == 0 && plan.short_batch;
    shape_suggestion(f, dim_name, short_last_batch, plan, changes, compile_s);
    auto dyn = run.dynamic_at.find(key);
    if (dyn != run.dynamic_at.end() && !short_last_batch) {
      f.suggestion += " (torch.compile made this dim dynamic at " + std::to_string(dyn->second) +
                      ": the sizes of the steps after that are not in its log, so pad to the largest size your data can have, e.g. the "
                      "tokenizer's max_length.)";
    }
    for (const auto& d : observed)
      if (d.first_ts) f.anchors_ts.push_back(d.first_ts);
    f.evidence_json = shape_evidence(key, pid != run.pid_of.end() ? std::optional(pid->second) : std::nullopt,
                                     dyn != run.dynamic_at.end() ? std::optional(dyn->second) : std::nullopt, observed, changes, compile_s, plan,
                                     short_last_batch);
    report.findings.push_back(std::move(f));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- recompilation.structure_change

Status structure_change(const store::Reader& r, Report& report, StoreText& text) {
  auto q = r.query(
      "SELECT c.loc_id, l.file, l.line, l.function, count(*), sum(c.dur), group_concat(coalesce(c.diff, ''), char(10)), min(c.ts) "
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

// A torch.compile graph break: logged once per compilation of its frame, not
// per step (the trace has no run times), so its cost is the graphs it split
// the frame into and their compile time.
void graph_break(const store::Reader& r, Report& report, StoreText& text, const store::Query& q) {
  std::string where = q.is_null(1) ? std::string("an unknown call site") : text(q.text(1)) + ":" + std::to_string(q.i64(2));
  std::string short_where = where.substr(where.rfind('/') == std::string::npos ? 0 : where.rfind('/') + 1);
  std::string function = q.is_null(3) ? std::string() : text(q.text(3));
  std::string kinds = text(q.text(4));
  std::string reason = q.is_null(10) ? std::string() : text(q.text(10));
  int64_t compilations = q.i64(5);
  // The frames torch.compile resumes in after the break ("torch_dynamo_resume_in_loss_of_at_122"): their compilations.
  auto resume = r.query("SELECT count(*), coalesce(sum(dur), 0) FROM compilations WHERE framework = 'torch.compile' AND trigger = 'graph_break' "
                        "AND loc_id IN (SELECT id FROM locations WHERE line = " + std::to_string(q.i64(2)) + ")");
  int64_t resumed = 0;
  double resume_s = 0;
  if (resume.next()) {
    resumed = resume.i64(0);
    resume_s = static_cast<double>(resume.i64(1)) / 1e9;
  }
  Finding f;
  f.kind = "explicit_evaluation";
  f.identity = kinds + " at " + where;
  f.severity = Severity::kWarning;
  f.title = "Graph break at " + short_where + (reason.empty() ? "" : " (" + reason + ")") + ": torch.compile splits " +
            (function.empty() ? std::string("the frame") : function) + " there, in each of its " + std::to_string(compilations) +
            (compilations == 1 ? " compilation" : " compilations") + "; the part after it runs as another graph";
  std::string fix = kinds == "item" ? "Return the tensor from the compiled function and call .item() after it returns (or every N steps), or let "
                                      "torch.compile capture it (torch._dynamo.config.capture_scalar_outputs = True)"
                                    : "Move the " + kinds + " at " + where + " out of the compiled function, or run it every N steps";
  f.suggestion = fix + ": one graph per step instead of two, and no resume frame to compile (" + std::to_string(resumed) + " compiled, " +
                 format_seconds(resume_s) + ").";
  f.estimated_saving_s = resume_s;
  Json j;
  j.begin_object().field("call_site", where).field("function", function).field("kind", kinds).field("framework", "torch.compile");
  j.field("reason", reason).field("compilations", compilations).field("steps", report.summary.steps);
  j.field("resume_compilations", resumed).field("resume_compile_s", resume_s).end_object();
  add(report, std::move(f), j, q.i64(7));
}

Status explicit_evaluation(const store::Reader& r, Report& report, StoreText& text) {
  int64_t steps = std::max<int64_t>(report.summary.steps, 1);
  int64_t step_ns = 0;
  for (const Step& s : report.steps) step_ns += s.dur;
  double step_s = report.steps.empty() ? 0 : static_cast<double>(step_ns / static_cast<int64_t>(report.steps.size())) / 1e9;
  const bool v4 = r.has(store::schema::explicit_evaluations, "framework");
  auto q = r.query(
      "SELECT e.loc_id, l.file, l.line, l.function, group_concat(DISTINCT e.kind), count(*), sum(e.dur), min(e.ts), count(DISTINCT e.step), " +
      std::string(v4 ? "max(e.framework), max(e.reason)" : "'tc', NULL") +
      " FROM explicit_evaluations e LEFT JOIN locations l ON l.id = e.loc_id GROUP BY e.loc_id ORDER BY sum(e.dur) DESC");
  while (q.next()) {
    if (text(q.text(9)) == "torch.compile") {
      graph_break(r, report, text, q);
      continue;
    }
    std::string where = q.is_null(1) ? std::string("an unknown call site") : text(q.text(1)) + ":" + std::to_string(q.i64(2));
    std::string kinds = text(q.text(4));
    int64_t count = q.i64(5);
    // JAX: a value read once (the last loss after the loop) waits for the work queued before it, which is no cost of the read.
    // PyTorch/XLA: one read after the loop is how the fix reads the losses.
    if ((text(q.text(9)) == "jax" || text(q.text(9)) == "torch_xla") && count == 1) continue;
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
    if (text(q.text(9)) == "torch_xla") {
      std::string what = q.is_null(10) ? kinds + "()" : text(q.text(10));
      f.title = what + " at " + short_where + " forced an evaluation before torch_xla.sync() " + std::to_string(count) + " times in " +
                std::to_string(steps_hit) + (steps_hit == 1 ? " step" : " steps") + ": " + format_seconds(per_step) + "/step, " +
                format_seconds(total_s) + " in all";
      f.suggestion = "Keep the value on the device and read it after the loop (or after torch_xla.sync()), instead of the " + what + " at " + where +
                     " (est. " + format_seconds(total_s) + " saved), or read it every " + std::to_string(every) + " steps (est. " +
                     format_seconds(log_every_saving) + " saved).";
    }
    if (text(q.text(9)) == "jax") {
      // JAX dispatches asynchronously: reading a value waits for the computation; nothing is cut.
      std::string what = q.is_null(10) ? kinds + "()" : text(q.text(10));
      f.title = what + " at " + short_where + " waited for the device " + std::to_string(count) + (count == 1 ? " time" : " times") + " in " +
                std::to_string(steps_hit) + (steps_hit == 1 ? " step" : " steps") + ": " + format_seconds(per_step) + "/step, " +
                format_seconds(total_s) + " in all";
      f.suggestion = "Keep the value on the device and read it after the loop, instead of the " + what + " at " + where + " (est. " +
                     format_seconds(total_s) + " saved), or read it every " + std::to_string(every) + " steps (est. " +
                     format_seconds(log_every_saving) + " saved).";
    }
    f.estimated_saving_s = total_s;
    Json j;
    j.begin_object().field("call_site", where).field("function", q.is_null(3) ? std::string() : text(q.text(3)));
    j.field("kind", kinds).field("count", count).field("steps", steps_hit).field("graph_cuts", count);
    j.field("total_s", total_s).field("per_step_s", per_step).field("log_every", every).field("log_every_saving_s", log_every_saving);
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
      "SELECT c.step, c.ts, c.failure, c.frame, l.function, l.file, l.line, c.shape_erased, "
      "(SELECT count(*) FROM compilations o WHERE o.shape_erased = c.shape_erased AND o.failure IS NULL), "
      "(SELECT coalesce(sum(o.dur), 0) FROM compilations o WHERE o.shape_erased = c.shape_erased AND o.failure IS NULL) "
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
    int64_t after = 0, before = 0;
    std::vector<int64_t> after_ns, before_ns;
    for (const Step& st : report.steps) {
      if (st.index >= step) {
        ++after;
        after_ns.push_back(st.dur);
      } else {
        ++before;
        before_ns.push_back(st.dur);
      }
    }
    const double eager_s = median_s(after_ns), compiled_step_s = median_s(before_ns);
    Finding f;
    f.kind = "recompilation.limit_reached";
    f.identity = function + (where.empty() ? "" : " at " + where);
    f.severity = Severity::kWarning;
    f.title = "torch.compile hit its recompile limit for " + function + " at step " + std::to_string(step) + " after " +
              std::to_string(compiled) + " compilations (" + format_seconds(compile_s) + "): " +
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

// torch.compile's automatic_dynamic: after a size changed it recompiled the
// frame with that dim symbolic. The static compilations before it were the price.
Status dynamic_marked(const store::Reader& r, Report& report, StoreText& text) {
  if (!r.has(store::schema::compilation_inputs, "dynamic")) return Status::Ok();
  auto q = r.query(
      "SELECT i.input, i.dim, i.old_value, i.new_value, c.graph_id, c.ts, c.dur, c.step, c.shape_erased, l.function, "
      "(SELECT count(*) FROM compilations o WHERE o.shape_erased = c.shape_erased AND o.ts < c.ts AND o.failure IS NULL), "
      "(SELECT coalesce(sum(o.dur), 0) FROM compilations o WHERE o.shape_erased = c.shape_erased AND o.ts < c.ts AND o.failure IS NULL) "
      "FROM compilation_inputs i JOIN compilations c ON c.graph_id = i.graph_id LEFT JOIN locations l ON l.id = c.loc_id "
      "WHERE i.dynamic = 1 ORDER BY c.ts, i.id");
  while (q.next()) {
    std::string input = text(q.text(0));
    const int64_t dim = q.i64(1), before = q.i64(10);
    const double dynamic_s = static_cast<double>(q.i64(6)) / 1e9, static_s = static_cast<double>(q.i64(11)) / 1e9;
    std::string function = q.is_null(9) ? std::string("the frame") : text(q.text(9));
    // Step times of the static graphs (steps before this compile) and of the dynamic one (after it), when both ran.
    std::vector<int64_t> st, dy;
    for (const Step& s : report.steps) (s.index < q.i64(7) ? st : dy).push_back(s.dur);
    Finding f;
    f.kind = "recompilation.dynamic_marked";
    f.identity = input + " dim " + std::to_string(dim);
    f.severity = Severity::kInfo;
    f.title = "torch.compile made " + input + " dim " + std::to_string(dim) + " dynamic after " + std::to_string(before) +
              (before == 1 ? " compilation" : " compilations") + " of " + function + " (" + format_seconds(static_s) + "), when it went " +
              std::to_string(q.i64(2)) + " -> " + std::to_string(q.i64(3)) + "; the dynamic graph took " + format_seconds(dynamic_s) + " to compile";
    if (!st.empty() && !dy.empty()) {
      f.title += "; median step " + format_seconds(median_s(st)) + " static, " + format_seconds(median_s(dy)) + " dynamic";
    }
    f.suggestion = "If " + input + " dim " + std::to_string(dim) + " is meant to vary, mark it dynamic from the start "
                   "(torch._dynamo.mark_dynamic(" + input + ", " + std::to_string(dim) + ")) and save the static compilation" +
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
};

// From the memory plan of the biggest compiled graph with a batch dimension.
BatchModel batch_model(const store::Reader& r) {
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
  }
  return m;
}

int64_t largest_batch(const BatchModel& m, int64_t capacity, double margin) {
  double usable = static_cast<double>(capacity) * (1.0 - margin) - static_cast<double>(m.fixed);
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
  return "scale the learning rate by " + format_double("%.2f", k) + " (linear) or " + format_double("%.2f", std::sqrt(k)) + " (sqrt)";
}

Status memory(const store::Reader& r, Report& report, const Options& options) {
  const Summary& s = report.summary;
  BatchModel m = batch_model(r);
  // memory.oom
  auto q = r.query(
      "SELECT ts, requested_bytes, live_bytes, capacity_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes, activation_bytes, "
      "input_bytes, other_bytes, batch_size, step FROM out_of_memory ORDER BY ts");
  bool had_oom = false;
  while (q.next()) {
    had_oom = true;
    int64_t capacity = q.i64(3);
    int64_t failing_batch = q.is_null(10) ? 0 : q.i64(10);
    int64_t fits = largest_batch(m, capacity, options.memory_safety_margin);
    Finding f;
    f.kind = "memory.oom";
    f.identity = "batch " + std::to_string(failing_batch) + " fits " + std::to_string(fits);
    f.severity = Severity::kError;
    f.title = "Out of memory at step " + std::to_string(q.i64(11)) + ": " + format_bytes(static_cast<double>(q.i64(1))) + " requested with " +
              format_bytes(static_cast<double>(q.i64(2))) + " of " + format_bytes(static_cast<double>(capacity)) + " live";
    if (fits > 0) {
      f.suggestion = "Use batch " + std::to_string(fits) + " (the largest that fits with " + format_double("%.0f", options.memory_safety_margin * 100) +
                     "% headroom, from the memory plan at batch " + std::to_string(m.batch_size) + ")" +
                     (failing_batch > 0 ? " instead of " + std::to_string(failing_batch) : std::string()) + "; " +
                     lr_advice(r, failing_batch > 0 ? failing_batch : m.batch_size, fits) + ".";
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
    j.field("largest_batch_that_fits", fits).field("safety_margin", options.memory_safety_margin).end_object();
    add(report, std::move(f), j, q.i64(0));
  }
  TC_RETURN_IF_ERROR(q.status());
  // memory.headroom
  if (had_oom || s.capacity_bytes <= 0 || s.peak_bytes <= 0) return Status::Ok();
  int64_t fits = largest_batch(m, s.capacity_bytes, options.memory_safety_margin);
  double used = static_cast<double>(s.peak_bytes) / static_cast<double>(s.capacity_bytes);
  Finding f;
  f.kind = "memory.headroom";
  f.identity = m.known ? "batch " + std::to_string(m.batch_size) + " to " + std::to_string(std::min(fits, m.batch_size * 8)) : "no batch";
  f.severity = Severity::kInfo;
  f.title = "Peak " + format_bytes(static_cast<double>(s.peak_bytes)) + " of " + format_bytes(static_cast<double>(s.capacity_bytes)) + " (" +
            format_double("%.0f", used * 100) + "%)";
  if (m.known && fits > m.batch_size) {
    f.title += "; batch " + std::to_string(fits) + " fits";
    // Past 8x the step changes character (and the learning rate with it): suggest at most that, and say how far memory goes.
    int64_t suggest = std::min(fits, m.batch_size * 8);
    f.suggestion = "Raise the batch from " + std::to_string(m.batch_size) + " to " + std::to_string(suggest) + " (" +
                   (suggest < fits ? "8x; up to " + std::to_string(fits) + " fit" : std::string("the most that fits")) + " with " +
                   format_double("%.0f", options.memory_safety_margin * 100) + "% headroom: " + format_bytes(static_cast<double>(m.fixed)) + " fixed + " +
                   format_bytes(m.per_sample) + " per sample) and " + lr_advice(r, m.batch_size, suggest) + ".";
  } else if (m.known) {
    f.suggestion = "The batch of " + std::to_string(m.batch_size) + " already uses what fits with " +
                   format_double("%.0f", options.memory_safety_margin * 100) + "% headroom.";
  } else {
    f.suggestion = "No compiled memory plan with a batch dimension was recorded, so no batch size is suggested; name the batch input "
                   "(tc::from_host(..., \"name\")) and run compiled.";
  }
  Json j;
  j.begin_object().field("peak_bytes", s.peak_bytes).field("capacity_bytes", s.capacity_bytes).field("used", used);
  if (m.known) {
    j.field("batch_size", m.batch_size).field("planned_peak_bytes", m.peak).field("fixed_bytes", m.fixed);
    j.field("batch_bytes", m.batch_bytes).field("bytes_per_sample", m.per_sample).field("largest_batch_that_fits", fits);
    int64_t suggest = std::min(fits, m.batch_size * 8);
    double k = suggest > 0 ? static_cast<double>(suggest) / static_cast<double>(m.batch_size) : 0;
    j.field("suggested_batch", suggest).field("lr_scale_linear", k).field("lr_scale_sqrt", std::sqrt(k));
  }
  j.field("safety_margin", options.memory_safety_margin).end_object();
  add(report, std::move(f), j);
  return Status::Ok();
}

// ---------------------------------------------------------------- compile.amortization

Status amortization(const store::Reader& r, Report& report) {
  const Summary& s = report.summary;
  if (s.compilations == 0 || report.run.wall_s <= 0) return Status::Ok();
  double share = s.compile_s / report.run.wall_s;
  double exec_per_step = s.steps > 0 ? s.execute_s / static_cast<double>(s.steps) : 0;
  // Recompilations late in the run mean compiling never stops.
  int64_t last_step = 0;
  for (const Step& step : report.steps) last_step = std::max(last_step, step.index);
  auto late = r.scalar_i64("SELECT count(*) FROM compilations WHERE reason <> 'first' AND step >= " + std::to_string(last_step * 3 / 4));
  int64_t late_recompiles = late.ok() ? *late : 0;
  int64_t break_even = exec_per_step > 0 ? static_cast<int64_t>(std::ceil(s.compile_s / exec_per_step)) : 0;
  bool never = late_recompiles > 0 && s.steps >= 4;
  Finding f;
  f.kind = "compile.amortization";
  f.identity = never ? "never amortizes" : break_even > s.steps ? "pays off on longer runs" : "paid off";
  f.severity = never || share > 0.5 ? Severity::kWarning : Severity::kInfo;
  f.title = "Compiling took " + format_seconds(s.compile_s) + ", " + format_double("%.0f", share * 100) + "% of the run's " +
            format_seconds(report.run.wall_s);
  if (never) {
    f.title += "; recompilations continue to the end, so it never amortizes";
    f.suggestion = std::to_string(late_recompiles) + " recompilations happened in the last quarter of the steps: fix the recompilation "
                   "findings first; until then every new shape costs another compilation.";
  } else if (break_even > s.steps) {
    f.suggestion = "Compilation costs as much as " + std::to_string(break_even) + " steps of execution (" + format_seconds(exec_per_step) +
                   "/step) and this run had " + std::to_string(s.steps) + ": it pays off on longer runs; the built code is cached in "
                   "TC_CACHE_DIR, so the next run of the same program compiles nothing.";
  } else {
    f.suggestion = "Compilation is paid off after about " + std::to_string(std::max<int64_t>(break_even, 1)) + " of " +
                   std::to_string(s.steps) + " steps; nothing to change.";
  }
  Json j;
  j.begin_object().field("compile_s", s.compile_s).field("wall_s", report.run.wall_s).field("compile_share", share);
  j.field("execute_s_per_step", exec_per_step).field("break_even_steps", break_even).field("steps", s.steps);
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
  const KernelRow* heaviest = nullptr;
  for (const KernelRow& k : kernels->rows)
    if (k.kind != "collective" && !k.sites.empty() && k.sites.front() == top.name) { heaviest = &k; break; }
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

}  // namespace

Status add_findings(const store::Reader& store, Report& report, const Options& options, StoreText& text) {
  TC_RETURN_IF_ERROR(shape_change(store, report, text));
  TC_RETURN_IF_ERROR(structure_change(store, report, text));
  TC_RETURN_IF_ERROR(limit_reached(store, report, text));
  TC_RETURN_IF_ERROR(dynamic_marked(store, report, text));
  TC_RETURN_IF_ERROR(explicit_evaluation(store, report, text));
  TC_RETURN_IF_ERROR(memory(store, report, options));
  TC_RETURN_IF_ERROR(amortization(store, report));
  TC_RETURN_IF_ERROR(kernel_hotspot(store, report));
  return Status::Ok();
}

}  // namespace tc::analysis
