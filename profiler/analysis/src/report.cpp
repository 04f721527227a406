#include "tc/analysis/report.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

#include "findings.h"
#include "json.h"
#include "ranges_json.h"
#include "tc/analysis/format.h"
#include "tc/analysis/kernels.h"
#include "tc/store/json_text.h"
#include "tc/store/schema.h"
#include "tc/trace/python_command.h"

namespace tc::analysis {

const char* severity_name(Severity s) {
  static constexpr const char* kNames[] = {"info", "warning", "error"};  // by Severity
  return static_cast<size_t>(s) < std::size(kNames) ? kNames[static_cast<size_t>(s)] : "info";
}

namespace {

Status read_run(const store::Reader& r, RunInfo& run, StoreText& text) {
  auto q = r.query(
      "SELECT command, cwd, host, collector, tc_version, complete, exit_code, exit_signal, start_ts, end_ts, event_count, "
      "dropped_count FROM run WHERE id = 1");
  if (!q.next()) {
    if (!q.status().ok()) return q.status();
    return {StatusCode::kCorrupt, r.path() + ": the store has no run row; it was not written by a finished tc-profile start; re-record the run"};
  }
  for (const std::string& arg : store::parse_json_string_array(q.text(0))) run.command.push_back(text(arg));
  run.cwd = text(q.text(1));
  run.host = text(q.text(2));
  run.collector = text(q.text(3));
  run.tc_version = text(q.text(4));
  run.complete = q.i64(5) != 0;
  if (!q.is_null(6)) run.exit_code = q.i64(6);
  if (!q.is_null(7)) run.exit_signal = q.i64(7);
  run.start_ts = q.i64(8);
  run.end_ts = q.is_null(9) ? run.start_ts : q.i64(9);
  run.event_count = q.i64(10);
  run.dropped_count = q.i64(11);
  if (r.has(store::schema::run, "step_range")) {
    auto v3 = r.query("SELECT step_range, nvtx FROM run WHERE id = 1");
    if (v3.next()) {
      if (!v3.is_null(0) && !v3.text(0).empty()) run.step_range = text(v3.text(0));
      if (!v3.is_null(1)) run.nvtx = text(v3.text(1));
    }
    TC_RETURN_IF_ERROR(v3.status());
  }
  if (r.has(store::schema::run, "cupti")) {
    auto v5 = r.query("SELECT cupti FROM run WHERE id = 1");
    if (v5.next() && !v5.is_null(0)) run.cupti = text(v5.text(0));
    TC_RETURN_IF_ERROR(v5.status());
  }
  if (run.end_ts == run.start_ts) {
    // A run whose launcher died: end at the last thing recorded.
    auto last = r.scalar_i64("SELECT max(m) FROM (SELECT max(ts + max(dur, 0)) AS m FROM ranges UNION ALL SELECT max(ts) FROM instants "
                             "UNION ALL SELECT max(ts) FROM counters UNION ALL SELECT max(ts + dur) FROM steps)");
    if (last.ok() && *last > run.start_ts) run.end_ts = *last;
  }
  run.wall_s = static_cast<double>(run.end_ts - run.start_ts) / 1e9;
  return Status::Ok();
}

Status read_summary(const store::Reader& r, Summary& s) {
  auto q = r.query(
      std::string("SELECT 0 /* steps: read_steps() */, (SELECT count(*) FROM compilations WHERE ") + kNotBackward + "), "
      "(SELECT count(*) FROM compilations WHERE reason <> 'first' AND " + kNotBackward + "), (SELECT count(*) FROM explicit_evaluations), "
      "(SELECT coalesce(sum(dur), 0) FROM compilations WHERE " + kBlocking + "), (SELECT coalesce(sum(dur), 0) FROM executions), "
      // counter_series is derived at finalize; a store whose writer was killed has none, so scan counters then.
      "coalesce((SELECT max(max_value) FROM counter_series JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.live_bytes'), "
      "(SELECT max(value) FROM counters JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.live_bytes'), 0), "
      "(SELECT coalesce(max(peak_bytes), 0) FROM memory_plans), "
      "coalesce((SELECT max(max_value) FROM counter_series JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.capacity_bytes'), "
      "(SELECT max(value) FROM counters JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.capacity_bytes')), "
      "(SELECT max(capacity_bytes) FROM memory_plans), (SELECT max(capacity_bytes) FROM out_of_memory)");
  if (!q.next()) return q.status().ok() ? Status(StatusCode::kCorrupt, r.path() + ": cannot summarize the store") : q.status();
  s.compilations = q.i64(1);
  s.recompilations = q.i64(2);
  s.explicit_evaluations = q.i64(3);
  s.compile_s = static_cast<double>(q.i64(4)) / 1e9;
  s.execute_s = static_cast<double>(q.i64(5)) / 1e9;
  s.peak_bytes = std::max(q.i64(6), q.i64(7));
  s.memory_source = s.peak_bytes <= 0 ? "" : q.i64(6) >= q.i64(7) ? "counter" : "plan";
  // A JAX run's counter is its steps' executables' peaks: the same numbers, XLA's.
  if (!s.memory_source.empty() && r.has(store::schema::compilations, "framework")) {
    auto jax = r.scalar_i64("SELECT EXISTS (SELECT 1 FROM memory_plans m JOIN compilations c ON c.graph_id = m.graph_id WHERE c.framework = 'jax')");
    if (jax.ok() && *jax) s.memory_source = "xla_memory_analysis";
  }
  // A framework's counter says whose count it is in its location's function (the importers' write_counter; a
  // location is made with its first sample): torch's tensors, torch.cuda's allocator, PyTorch/XLA's memory info.
  if (s.memory_source == "counter") {
    auto q = r.query("SELECT function FROM locations WHERE name = 'memory.live_bytes' AND file = '' AND function IN ('torch', 'torch.cuda', "
                     "'torch_xla') ORDER BY id LIMIT 1");
    if (q.next()) {
      const std::string_view whose = q.text(0);
      s.memory_source = whose == "torch" ? "torch_tensors" : whose == "torch.cuda" ? "torch_cuda_allocator" : "xla_memory_info";
    }
  }
  for (int c : {8, 9, 10}) {
    if (!q.is_null(c)) s.capacity_bytes = std::max(s.capacity_bytes, q.i64(c));
  }
  return Status::Ok();
}

std::string quoted(const std::string& name) { return "'" + name + "'"; }

// "; the ranges with the most time here: 'step' (100), 'forward' (100)", or "" without ranges.
std::string candidates(const RangeTable& t) {
  std::string s;
  for (size_t i = 0; i < t.ranges.size() && i < 3; ++i)
    s += (i ? ", " : "; the ranges with the most time here: ") + quoted(t.ranges[i].name) + " (" + std::to_string(t.ranges[i].count) + ")";
  return s;
}

double nearest_rank_s(std::vector<int64_t> sorted, double p) {
  if (sorted.empty()) return 0;
  return static_cast<double>(sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())))]) / 1e9;
}

// Each step's compile_ns: the compilations of its process that overlap it.
// Per process the compilations are sorted and do not nest, so a step scans
// only those from the first that may reach it.
Status compile_in_steps(const store::Reader& r, Report& report) {
  std::map<int64_t, int64_t> upid_of;  // utid -> upid
  for (auto q = r.query("SELECT utid, upid FROM threads"); q.next();) upid_of[q.i64(0)] = q.i64(1);
  struct Span {
    int64_t ts, end;
  };
  std::map<int64_t, std::vector<Span>> by_process;
  std::map<int64_t, int64_t> longest;
  auto q = r.query(std::string("SELECT utid, ts, dur FROM compilations WHERE dur > 0 AND ") + kBlocking + " ORDER BY ts");
  while (q.next()) {
    auto u = upid_of.find(q.i64(0));
    const int64_t upid = u == upid_of.end() ? 0 : u->second;
    by_process[upid].push_back({q.i64(1), q.i64(1) + q.i64(2)});
    longest[upid] = std::max(longest[upid], q.i64(2));
  }
  TC_RETURN_IF_ERROR(q.status());
  for (Step& st : report.steps) {
    auto u = upid_of.find(st.utid);
    auto it = by_process.find(u == upid_of.end() ? 0 : u->second);
    if (it == by_process.end()) continue;
    const std::vector<Span>& spans = it->second;
    const int64_t end = st.ts + st.dur, from = st.ts - longest[it->first];
    auto c = std::lower_bound(spans.begin(), spans.end(), from, [](const Span& s, int64_t t) { return s.ts < t; });
    for (; c != spans.end() && c->ts < end; ++c) st.compile_ns += std::max<int64_t>(0, std::min(end, c->end) - std::max(st.ts, c->ts));
    st.compile_ns = std::min(st.compile_ns, st.dur);
  }
  return Status::Ok();
}

// execute_s of a run whose compiler logs no executions (torch.compile, JAX,
// PyTorch/XLA): its steps less the compiling inside them, or not measured.
Status execute_from_steps(const store::Reader& r, Report& report) {
  Summary& s = report.summary;
  if (!r.has(store::schema::compilations, "framework")) return Status::Ok();
  // tc's own compiler logs every execution: without one, none ran.
  auto framework = r.scalar_i64("SELECT EXISTS (SELECT 1 FROM compilations WHERE framework <> 'tc') AND NOT EXISTS (SELECT 1 FROM executions)");
  if (!framework.ok()) return framework.status();
  if (*framework == 0) return Status::Ok();
  if (report.steps.empty()) {
    s.execute_source.clear();
    s.execute_unmeasured = "no steps to time it";
    return Status::Ok();
  }
  s.execute_source = "steps";
  int64_t ns = 0;
  for (const Step& st : report.steps) ns += st.execute_ns();
  s.execute_s = static_cast<double>(ns) / 1e9;
  return Status::Ok();
}

// The one place the steps come from (Report::steps): mark_step() calls, else
// the named step range. Adds a note for what is missing.
Status read_steps(const store::Reader& r, const Options& options, Report& report) {
  Summary& s = report.summary;
  auto q = r.query("SELECT utid, ts, dur, step FROM steps ORDER BY ts, id");
  while (q.next()) report.steps.push_back({q.i64(3), q.i64(0), q.i64(1), q.i64(2)});
  TC_RETURN_IF_ERROR(q.status());
  std::optional<std::string> name = options.step_range ? options.step_range : report.run.step_range;
  const std::string given = options.step_range ? "tc-analyze --step-range" : "tc-profile --step-range";
  if (!report.steps.empty()) {
    s.step_source = "mark_step";
    // Steps that tc's Python hook marked (optimizer.step()), not tc::mark_step().
    if (r.has(store::schema::steps, "framework")) {
      auto torch = r.scalar_i64("SELECT count(*) FROM steps WHERE framework = 'torch'");
      if (torch.ok() && *torch == static_cast<int64_t>(report.steps.size())) s.step_source = "optimizer_step";
      auto jax = r.scalar_i64("SELECT count(*) FROM steps WHERE framework = 'jax'");
      if (jax.ok() && *jax > 0 && *jax == static_cast<int64_t>(report.steps.size())) s.step_source = "jit_call";
    }
    if (name) {
      report.notes.push_back(given + " " + quoted(*name) + " is not used: the run recorded " + std::to_string(report.steps.size()) +
                             " tc::mark_step() steps, and those are its steps");
    }
  } else if (name) {
    auto found = range_occurrences(r, *name);
    if (!found.ok()) return found.status();
    // Outermost per thread: an occurrence inside an earlier one of its thread is part of that step.
    std::map<int64_t, int64_t> end_on;  // utid -> end of its last step
    int64_t cut = 0;
    for (const RangeOccurrence& o : *found) {
      if (o.dur < 0) {
        ++cut;
        continue;
      }
      auto [it, first] = end_on.try_emplace(o.utid, o.ts + o.dur);
      if (!first) {
        if (o.ts + o.dur <= it->second) continue;
        it->second = o.ts + o.dur;
      }
      report.steps.push_back({static_cast<int64_t>(report.steps.size()), o.utid, o.ts, o.dur});
    }
    if (found->empty()) {
      report.notes.push_back("no training steps: no range is named " + quoted(*name) + " (" + given + ")" + candidates(report.ranges));
    } else if (report.steps.empty()) {
      report.notes.push_back("no training steps: every occurrence of range " + quoted(*name) + " (" + std::to_string(cut) +
                             ") was cut: the program ended inside it");
    } else {
      s.step_source = "range";
      s.step_range = *name;
      if (cut > 0) {
        report.notes.push_back(std::to_string(cut) + (cut == 1 ? " occurrence" : " occurrences") + " of range " + quoted(*name) +
                               " never ended (the program ended inside it) and " + (cut == 1 ? "is not a step" : "are not steps"));
      }
    }
  } else if (s.compilations > 0 || s.explicit_evaluations > 0 || s.execute_s > 0) {
    report.notes.push_back("no training steps: tc::mark_step() was never called; to take the steps from a range instead, give "
                           "tc-analyze --step-range NAME" + candidates(report.ranges));
  } else if (const char flag = trace::python_flag_without_hook(report.run.command)) {
    report.notes.push_back("no training steps: " + trace::python_without_hook_words(flag) +
                           ", or give tc-analyze --step-range NAME to take the steps from an NVTX range" + candidates(report.ranges));
  } else {
    report.notes.push_back("no training steps: the program does not link tc and no --step-range was given; rerun with tc-profile "
                           "--step-range NAME (or give tc-analyze --step-range NAME) to take the steps from an NVTX range" +
                           candidates(report.ranges));
  }
  s.steps = static_cast<int64_t>(report.steps.size());
  TC_RETURN_IF_ERROR(compile_in_steps(r, report));
  TC_RETURN_IF_ERROR(execute_from_steps(r, report));
  std::vector<int64_t> durs;
  for (const Step& step : report.steps) durs.push_back(step.dur);
  std::sort(durs.begin(), durs.end());
  s.step_p50_s = nearest_rank_s(durs, 0.5);
  s.step_p99_s = nearest_rank_s(durs, 0.99);
  // What a framework importer skipped (tc/import/import.h): one line each.
  if (r.has(store::schema::framework_imports, "framework")) {
    for (auto f = r.query("SELECT framework, unknown_kinds, malformed, truncated, note FROM framework_imports ORDER BY id"); f.next();) {
      std::string what;
      auto add = [&](int64_t n, const char* one, const char* many) {
        if (n > 0) what += (what.empty() ? "" : " and ") + std::to_string(n) + " " + (n == 1 ? one : many);
      };
      add(f.i64(1), "record of an unknown kind", "records of unknown kinds");
      add(f.i64(2), "malformed line", "malformed lines");
      if (!what.empty()) what += " skipped";
      if (f.i64(3)) what += std::string(what.empty() ? "" : "; ") + "the trace was cut inside a record (what was complete was imported)";
      if (!f.is_null(4)) what += std::string(what.empty() ? "" : "; ") + std::string(f.text(4));
      if (!what.empty()) report.notes.push_back(std::string(f.text(0)) + (f.text(0) == "torch.compile" ? " trace: " : " log: ") + what);
    }
  }
  if (s.peak_bytes <= 0 && r.has(store::schema::steps, "framework")) {
    // A framework run without memory numbers says why (docs/frameworks.md#memory).
    auto f = r.query("SELECT framework FROM steps WHERE framework IN ('jax', 'torch', 'torch_xla') GROUP BY framework ORDER BY count(*) DESC LIMIT 1");
    const bool row = f.next();
    if (row && f.text(0) == "jax") {
      s.memory_unmeasured = "the JAX log has no memory records (XLA's memory_analysis() of each compiled step, which tc's hook writes since "
                            "schema v7)";
    } else if (row && f.text(0) == "torch") {
      s.memory_unmeasured = "torch's steps have no memory records (tc's hook counts the tensors of the optimizers that stepped: "
                            "none had tensors, or the log is from an older tc)";
    } else if (row) {
      s.memory_unmeasured = "tc does not measure PyTorch/XLA's memory (on the CPU its runtime keeps no allocator statistics: "
                            "xm.get_memory_info() is UNIMPLEMENTED), only JAX's and torch's";
    }
    TC_RETURN_IF_ERROR(f.status());
  }
  if (s.compilations == 0 && s.explicit_evaluations == 0 && s.execute_s == 0 && s.step_source != "mark_step" && s.step_source != "optimizer_step" &&
      s.step_source != "jit_call") {
    report.notes.push_back("no tc compilations: the recompilation, explicit-evaluation, memory and kernel findings need a program that "
                           "trains with tc's compiler");
  }
  return Status::Ok();
}

// Processes of the tree that could not attach to tc-profile's rings (the
// collector's dropped rows "could not attach to the rings: ..."): one note
// naming the first three, so a tree that lost a process never reads as whole.
Status note_unattached(const store::Reader& r, Report& report) {
  constexpr const char* kPrefix = "could not attach to the rings: ";
  int64_t processes = 0;
  std::string named;
  auto q = r.query("SELECT p.pid, p.name, d.reason FROM dropped d LEFT JOIN processes p ON p.upid = d.upid "
                   "WHERE substr(d.reason, 1, 31) = 'could not attach to the rings: ' ORDER BY d.id");
  while (q.next()) {
    if (q.is_null(0)) {  // the collector's count of processes it could not name
      processes += std::max<int64_t>(1, std::atoll(std::string(q.text(2)).c_str() + std::strlen(kPrefix)));
      continue;
    }
    if (++processes > 3) continue;
    std::string command(q.text(1)), why(q.text(2));
    why = why.substr(std::strlen(kPrefix));
    if (command.size() > 80) command = command.substr(0, 77) + "...";
    if (why.size() > 200) why = why.substr(0, 197) + "...";
    named += std::string(named.empty() ? "" : "; ") + "pid " + std::to_string(q.i64(0)) + " (" + command + "): " + why;
  }
  TC_RETURN_IF_ERROR(q.status());
  if (processes == 0) return Status::Ok();
  std::string more = processes > 3 ? " (and " + std::to_string(processes - 3) + " more)" : "";
  report.notes.push_back(std::to_string(processes) + (processes == 1 ? " process" : " processes") +
                         " of the run recorded nothing, not attached to tc-profile's rings: " + (named.empty() ? "not named" : named) + more);
  return Status::Ok();
}

}  // namespace

bool recorded_nothing(const Report& report) {
  const Summary& s = report.summary;
  return report.steps.empty() && report.ranges.range_count == 0 && report.ranges.mark_count == 0 && s.compilations == 0 &&
         s.explicit_evaluations == 0 && s.execute_s == 0 && s.gpu_kernel_s == 0 && s.gpu_copy_bytes == 0;
}

StatusOr<Report> analyze(const store::Reader& store, const Options& options) {
  Report report;
  StoreText text;
  TC_RETURN_IF_ERROR(read_run(store, report.run, text));
  TC_RETURN_IF_ERROR(read_summary(store, report.summary));
  if (options.capacity_bytes > 0) report.summary.capacity_bytes = options.capacity_bytes;
  // The ranges summary scans every range (4 M rows in a 10 M-event store: 0.2
  // s of report became 1.0 s). A run with tc's own steps and no NVTX leaves
  // tc's ranges to `tc-analyze ranges`; a run without steps, with NVTX, or
  // taking its steps from a range gets it.
  bool want_ranges = options.step_range.has_value() || report.run.step_range.has_value();
  if (!want_ranges) {
    auto steps = store.scalar_i64("SELECT EXISTS (SELECT 1 FROM steps)");
    want_ranges = !steps.ok() || *steps == 0;
  }
  if (!want_ranges && store.schema_version() >= 3) {
    auto nvtx = store.scalar_i64("SELECT EXISTS (SELECT 1 FROM nvtx_sites)");
    want_ranges = nvtx.ok() && *nvtx != 0;
  }
  if (want_ranges) {
    auto ranges = range_table(store, {}, text);
    if (!ranges.ok()) return ranges.status();
    report.ranges = std::move(*ranges);
  }
  TC_RETURN_IF_ERROR(read_steps(store, options, report));
  TC_RETURN_IF_ERROR(note_unattached(store, report));
  TC_RETURN_IF_ERROR(add_findings(store, report, options, text));
  {
    auto table = kernel_table(store, KernelsBy::kKernel);
    if (!table.ok()) return table.status();
    const GpuActivity& g = table->gpu;
    Summary& sm = report.summary;
    sm.gpu_kernel_s = g.kernel_s;
    if (!g.kernels.empty()) sm.gpu_top_kernel = g.kernels.front().name, sm.gpu_top_kernel_share = g.kernels.front().share;
    for (const GpuCopyRow& c : g.copies) sm.gpu_copy_bytes += c.bytes;
    sm.gpu_capture = g.status;
    sm.gpu_capture_detail = g.detail;
    std::map<std::string, KernelTotal> by;
    for (const KernelRow& k : table->rows) {
      std::string name = k.name.substr(0, k.name.rfind(" (g")) + " @ " + (k.sites.empty() ? std::string("?") : k.sites.front());
      KernelTotal& t = by[name];
      t.name = name;
      t.calls += k.calls;
      t.total_s += k.total_s;
    }
    for (auto& [name, t] : by) report.kernels.push_back(t);
    std::stable_sort(report.kernels.begin(), report.kernels.end(), [](const KernelTotal& a, const KernelTotal& b) { return a.total_s > b.total_s; });
  }
  report.invalid_utf8_names = text.replaced();
  std::stable_sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.estimated_saving_s != b.estimated_saving_s) return a.estimated_saving_s > b.estimated_saving_s;
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });
  return report;
}

std::string to_json(const Report& report) {
  Json j;
  j.begin_object();
  j.field("schema", "tc-analyze/1");
  j.key("run").begin_object();
  j.key("command").begin_array();
  for (const auto& a : report.run.command) j.value(a);
  j.end_array();
  j.field("complete", report.run.complete);
  j.key("exit_status");
  if (report.run.exit_signal) j.value(128 + *report.run.exit_signal);
  else if (report.run.exit_code) j.value(*report.run.exit_code);
  else j.null();
  j.key("exit_signal");
  if (report.run.exit_signal) j.value(*report.run.exit_signal);
  else j.null();
  j.field("wall_s", report.run.wall_s);
  j.field("host", report.run.host);
  j.field("tc_version", report.run.tc_version);
  j.key("step_range");
  if (report.run.step_range) j.value(*report.run.step_range);
  else j.null();
  j.key("nvtx");
  if (report.run.nvtx) j.value(*report.run.nvtx);
  else j.null();
  j.key("cupti");
  if (report.run.cupti) j.value(*report.run.cupti);
  else j.null();
  j.end_object();
  const Summary& s = report.summary;
  j.key("summary").begin_object();
  j.field("steps", s.steps).field("step_source", s.step_source.empty() ? "none" : s.step_source);
  j.key("step_range");
  if (s.step_source == "range") j.value(s.step_range);
  else j.null();
  j.field("step_p50_s", s.step_p50_s).field("step_p99_s", s.step_p99_s);
  j.field("ranges", report.ranges.range_count).field("cut_ranges", report.ranges.cut_count).field("marks", report.ranges.mark_count);
  j.field("compilations", s.compilations).field("recompilations", s.recompilations);
  j.field("explicit_evaluations", s.explicit_evaluations).field("compile_s", s.compile_s).key("execute_s");
  if (s.execute_source.empty()) j.null();
  else j.value(s.execute_s);
  j.field("execute_source", s.execute_source.empty() ? "not measured: " + s.execute_unmeasured : s.execute_source);
  j.field("peak_bytes", s.peak_bytes).field("capacity_bytes", s.capacity_bytes).field("memory_source", s.memory_source);
  j.field("dropped_events", report.run.dropped_count);
  j.field("top_site", s.top_site).field("top_site_share", s.top_site_share);
  j.field("gpu_kernel_s", s.gpu_kernel_s).field("gpu_top_kernel", s.gpu_top_kernel).field("gpu_top_kernel_share", s.gpu_top_kernel_share);
  j.field("gpu_copy_bytes", s.gpu_copy_bytes).field("gpu_capture", s.gpu_capture).field("gpu_capture_detail", s.gpu_capture_detail);
  j.end_object();
  j.key("findings").begin_array();
  for (const Finding& f : report.findings) {
    j.begin_object();
    j.field("kind", f.kind).field("severity", severity_name(f.severity)).field("title", f.title);
    j.key("evidence").raw(f.evidence_json);
    j.field("suggestion", f.suggestion).field("estimated_saving_s", f.estimated_saving_s);
    j.end_object();
  }
  j.end_array();
  ranges_json_fields(j, report.ranges, 20);
  j.key("notes").begin_array();
  if (report.invalid_utf8_names > 0) j.value(invalid_utf8_note(report.invalid_utf8_names));
  for (const std::string& note : report.notes) j.value(note);
  j.end_array();
  j.end_object();
  return j.str();
}

}  // namespace tc::analysis
