#include "tc/analysis/fail_on.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "metrics.h"
#include "tc/analysis/format.h"

namespace tc::analysis {

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = {"steps",         "compilations", "recompilations", "explicit_evaluations",
                                                 "compile_s",     "execute_s",    "wall_s",         "compile_share",
                                                 "peak_bytes",    "capacity_bytes", "memory_share", "findings",
                                                 "warnings",      "errors",       "dropped_events", "collective_wait_s",
                                                 "straggler_wait_s", "stragglers"};
  return names;
}

std::optional<double> metric_value(const Report& r, std::string_view m) {
  const Summary& s = r.summary;
  auto count = [&](Severity sev) {
    double n = 0;
    for (const auto& f : r.findings) n += f.severity == sev;
    return n;
  };
  if (auto v = summary_metric(s, m)) return v;
  if (m == "wall_s") return r.run.wall_s;
  if (m == "compile_share") return r.run.wall_s > 0 ? s.compile_s / r.run.wall_s : 0;
  if (m == "peak_bytes") return static_cast<double>(s.peak_bytes);
  if (m == "capacity_bytes") return static_cast<double>(s.capacity_bytes);
  if (m == "memory_share") return s.capacity_bytes > 0 ? static_cast<double>(s.peak_bytes) / static_cast<double>(s.capacity_bytes) : 0;
  if (m == "findings") return static_cast<double>(r.findings.size());
  if (m == "warnings") return count(Severity::kWarning);
  if (m == "errors") return count(Severity::kError);
  if (m == "dropped_events") return static_cast<double>(r.run.dropped_count);
  if (m == "collective_wait_s" || m == "straggler_wait_s" || m == "stragglers") return 0.0;  // need the job's other stores
  return std::nullopt;
}

std::optional<double> metric_value(const JobReport& job, std::string_view m) {
  auto count = [&](auto pred) {
    double n = 0;
    for (const auto& f : job.findings) n += pred(f.finding);
    return n;
  };
  if (m == "findings") return static_cast<double>(job.findings.size());
  if (m == "warnings") return count([](const Finding& f) { return f.severity == Severity::kWarning; });
  if (m == "errors") return count([](const Finding& f) { return f.severity == Severity::kError; });
  if (m == "collective_wait_s") return job.collective_wait_s;
  if (m == "straggler_wait_s") return job.straggler_wait_s;
  if (m == "stragglers") return count([](const Finding& f) { return f.kind == "distributed.straggler"; });
  if (!metric_value(Report{}, m)) return std::nullopt;
  // The worst rank: per rank where the job knows it per rank, else per store.
  std::optional<double> worst;
  auto take = [&](double v) { worst = worst ? std::max(*worst, v) : v; };
  if (m == "steps" || m == "compilations" || m == "recompilations" || m == "explicit_evaluations" || m == "compile_s" || m == "execute_s" ||
      m == "compile_share") {
    for (const RankSummary& s : job.ranks) take(m == "compile_share" ? (s.wall_s > 0 ? s.compile_s / s.wall_s : 0) : *summary_metric(s, m));
  } else {
    for (const Report& r : job.reports) take(*metric_value(r, m));
  }
  return worst.value_or(0);
}

StatusOr<FailOn> parse_fail_on(std::string_view expr) {
  FailOn rule;
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, "--fail-on '" + std::string(expr) + "': " + why +
                                                    "; write METRIC OP NUMBER, e.g. 'recompilations>2' or 'compile_share>=0.2,explicit_evaluations>0'");
  };
  size_t i = 0;
  auto skip_space = [&] {
    while (i < expr.size() && std::isspace(static_cast<unsigned char>(expr[i]))) ++i;
  };
  if (expr.find_first_not_of(" \t,") == std::string_view::npos) return bad("empty expression");
  while (i < expr.size()) {
    skip_space();
    size_t start = i;
    while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '_')) ++i;
    std::string metric(expr.substr(start, i - start));
    if (metric.empty()) return bad("expected a metric name at position " + std::to_string(start + 1));
    if (!metric_value(Report{}, metric)) {
      std::string known;
      for (const auto& n : metric_names()) known += (known.empty() ? "" : ", ") + n;
      return bad("unknown metric '" + metric + "' (known: " + known + ")");
    }
    skip_space();
    std::string op;
    if (i < expr.size() && (expr[i] == '>' || expr[i] == '<' || expr[i] == '=' || expr[i] == '!')) {
      op += expr[i++];
      if (i < expr.size() && expr[i] == '=') op += expr[i++];
    }
    if (op != ">" && op != ">=" && op != "<" && op != "<=" && op != "==" && op != "!=") {
      return bad("expected one of > >= < <= == != after '" + metric + "'");
    }
    skip_space();
    start = i;
    while (i < expr.size() && expr[i] != ',' && !std::isspace(static_cast<unsigned char>(expr[i]))) ++i;
    std::string number(expr.substr(start, i - start));
    double v = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() || !std::isfinite(v)) {
      return bad("'" + number + "' is not a number");
    }
    rule.push_back({metric, op, v});
    skip_space();
    if (i < expr.size()) {
      if (expr[i] != ',') return bad("expected ',' between thresholds at position " + std::to_string(i + 1));
      ++i;
      skip_space();
      if (i >= expr.size()) return bad("nothing after the last ','");
    }
  }
  return rule;
}

namespace {
std::optional<std::string> crossing(const Threshold& t, double v) {
  bool hit = (t.op == ">" && v > t.value) || (t.op == ">=" && v >= t.value) || (t.op == "<" && v < t.value) || (t.op == "<=" && v <= t.value) ||
             (t.op == "==" && v == t.value) || (t.op == "!=" && v != t.value);
  if (!hit) return std::nullopt;
  return t.metric + " is " + format_number(v) + ", which crosses the threshold " + t.metric + t.op + format_number(t.value);
}
}  // namespace

std::optional<std::string> crossed(const FailOn& rule, const Report& report) {
  for (const Threshold& t : rule) {
    double v = *metric_value(report, t.metric);
    if (auto why = crossing(t, v)) return why;
  }
  return std::nullopt;
}

std::optional<std::string> crossed(const FailOn& rule, const JobReport& job) {
  for (const Threshold& t : rule) {
    double v = *metric_value(job, t.metric);
    if (auto why = crossing(t, v)) return why;
  }
  return std::nullopt;
}

}  // namespace tc::analysis
