#include "tc/analysis/report.h"

#include <map>

#include "tc/analysis/kernels.h"

#include <algorithm>

#include "findings.h"
#include "json.h"
#include "tc/analysis/format.h"
#include "tc/store/json_text.h"

namespace tc::analysis {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "info";
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
      "SELECT (SELECT count(*) FROM steps), (SELECT count(*) FROM compilations), "
      "(SELECT count(*) FROM compilations WHERE reason <> 'first'), (SELECT count(*) FROM explicit_evaluations), "
      "(SELECT coalesce(sum(dur), 0) FROM compilations), (SELECT coalesce(sum(dur), 0) FROM executions), "
      // counter_series is derived at finalize; a store whose writer was killed has none, so scan counters then.
      "coalesce((SELECT max(max_value) FROM counter_series JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.live_bytes'), "
      "(SELECT max(value) FROM counters JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.live_bytes'), 0), "
      "(SELECT coalesce(max(peak_bytes), 0) FROM memory_plans), "
      "coalesce((SELECT max(max_value) FROM counter_series JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.capacity_bytes'), "
      "(SELECT max(value) FROM counters JOIN locations l ON l.id = loc_id WHERE l.name = 'memory.capacity_bytes')), "
      "(SELECT max(capacity_bytes) FROM memory_plans), (SELECT max(capacity_bytes) FROM out_of_memory)");
  if (!q.next()) return q.status().ok() ? Status(StatusCode::kCorrupt, r.path() + ": cannot summarize the store") : q.status();
  s.steps = q.i64(0);
  s.compilations = q.i64(1);
  s.recompilations = q.i64(2);
  s.explicit_evaluations = q.i64(3);
  s.compile_s = static_cast<double>(q.i64(4)) / 1e9;
  s.execute_s = static_cast<double>(q.i64(5)) / 1e9;
  s.peak_bytes = std::max(q.i64(6), q.i64(7));
  for (int c : {8, 9, 10}) {
    if (!q.is_null(c)) s.capacity_bytes = std::max(s.capacity_bytes, q.i64(c));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Report> analyze(const store::Reader& store, const Options& options) {
  Report report;
  StoreText text;
  TC_RETURN_IF_ERROR(read_run(store, report.run, text));
  TC_RETURN_IF_ERROR(read_summary(store, report.summary));
  TC_RETURN_IF_ERROR(add_findings(store, report, options, text));
  {
    auto table = kernel_table(store, KernelsBy::kKernel);
    if (!table.ok()) return table.status();
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
  j.end_object();
  const Summary& s = report.summary;
  j.key("summary").begin_object();
  j.field("steps", s.steps).field("compilations", s.compilations).field("recompilations", s.recompilations);
  j.field("explicit_evaluations", s.explicit_evaluations).field("compile_s", s.compile_s).field("execute_s", s.execute_s);
  j.field("peak_bytes", s.peak_bytes).field("capacity_bytes", s.capacity_bytes);
  j.field("dropped_events", report.run.dropped_count);
  j.field("top_site", s.top_site).field("top_site_share", s.top_site_share);
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
  j.key("notes").begin_array();
  if (report.invalid_utf8_names > 0) j.value(invalid_utf8_note(report.invalid_utf8_names));
  j.end_array();
  j.end_object();
  return j.str();
}

}  // namespace tc::analysis
