#include "tc/analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "json.h"
#include "tc/analysis/fail_on.h"
#include "metrics.h"
#include "tc/analysis/format.h"

namespace tc::analysis {

namespace {

const char* kMetrics[] = {"wall_s", "steps", "compilations", "recompilations", "explicit_evaluations", "compile_s", "execute_s", "compile_share",
                          "peak_bytes", "dropped_events"};

struct KindTotals {
  int count = 0;
  double saving_s = 0;
};

using Findings = std::vector<const Finding*>;

Findings findings_of(const Report& r) {
  Findings out;
  for (const Finding& f : r.findings) out.push_back(&f);
  return out;
}

Findings findings_of(const JobReport& j) {
  Findings out;
  for (const JobFinding& f : j.findings) out.push_back(&f.finding);
  return out;
}

std::map<std::string, KindTotals> by_kind(const Findings& findings) {
  std::map<std::string, KindTotals> m;
  for (const Finding* f : findings) {
    m[f->kind].count++;
    m[f->kind].saving_s += f->estimated_saving_s;
  }
  return m;
}

// The findings section of a diff: per kind, the count and estimated saving in A and in B, and the titles of each.
void findings_text(std::string& out, const Findings& a, const Findings& b) {
  char line[512];
  out += "\nfindings\n";
  auto ka = by_kind(a), kb = by_kind(b);
  std::set<std::string> kinds;
  for (auto& [k, v] : ka) kinds.insert(k);
  for (auto& [k, v] : kb) kinds.insert(k);
  for (const auto& k : kinds) {
    KindTotals ta = ka[k], tb = kb[k];
    std::snprintf(line, sizeof line, "%-32s %3d (est. %.3g s)  ->  %3d (est. %.3g s)%s\n", k.c_str(), ta.count, ta.saving_s, tb.count, tb.saving_s,
                  tb.count == 0 ? "   fixed" : tb.count > ta.count ? "   new" : "");
    out += line;
    for (const Finding* f : a)
      if (f->kind == k) out += "    A: " + printable(f->title) + "\n";
    for (const Finding* f : b)
      if (f->kind == k) out += "    B: " + printable(f->title) + "\n";
  }
  if (kinds.empty()) out += "  none in either run\n";
}

// "a": {metric: value, ...}, "b": {...}: the two runs' `names`, each valued by value(run, name).
template <class Run, class Names, class Value>
void sides_json(Json& j, const Run& a, const Run& b, const Names& names, Value value) {
  for (const auto& [side, r] : {std::pair<const char*, const Run*>{"a", &a}, {"b", &b}}) {
    j.key(side).begin_object();
    for (const char* m : names) j.field(m, value(*r, m));
    j.end_object();
  }
}

void findings_json(Json& j, const Findings& a, const Findings& b) {
  auto ka = by_kind(a), kb = by_kind(b);
  std::set<std::string> kinds;
  for (auto& [k, v] : ka) kinds.insert(k);
  for (auto& [k, v] : kb) kinds.insert(k);
  j.key("findings").begin_array();
  for (const auto& k : kinds) {
    j.begin_object().field("kind", k).field("a_count", ka[k].count).field("b_count", kb[k].count);
    j.field("a_estimated_saving_s", ka[k].saving_s).field("b_estimated_saving_s", kb[k].saving_s).end_object();
  }
  j.end_array();
}

std::string change(double a, double b) {
  char buf[64];
  if (a == b) return "=";
  if (a != 0) {
    std::snprintf(buf, sizeof buf, "%+.4g (%+.0f%%)", b - a, (b - a) / a * 100);
  } else {
    std::snprintf(buf, sizeof buf, "%+.4g", b - a);
  }
  return buf;
}

// Kernels in either run, matched by what they compute and where from; the
// ones whose total changed most first.
struct KernelChange {
  std::string name;
  double a_s = 0, b_s = 0;
  int64_t a_calls = 0, b_calls = 0;
};
std::vector<KernelChange> kernel_changes(const Report& a, const Report& b) {
  std::map<std::string, KernelChange> m;
  for (const auto& k : a.kernels) m[k.name].name = k.name, m[k.name].a_s = k.total_s, m[k.name].a_calls = k.calls;
  for (const auto& k : b.kernels) m[k.name].name = k.name, m[k.name].b_s = k.total_s, m[k.name].b_calls = k.calls;
  std::vector<KernelChange> out;
  for (auto& [n, c] : m) out.push_back(c);
  std::stable_sort(out.begin(), out.end(), [](const KernelChange& x, const KernelChange& y) {
    return std::fabs(x.b_s - x.a_s) > std::fabs(y.b_s - y.a_s);
  });
  return out;
}

}  // namespace

std::string diff_text(const Report& a, const std::string& a_name, const Report& b, const std::string& b_name) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %16s %16s  %s\n", "", "A", "B", "change");
  out += line;
  const std::string a_shown = printable(a_name), b_shown = printable(b_name);
  std::snprintf(line, sizeof line, "%-24s %16s %16s\n", "store", a_shown.substr(a_shown.size() > 16 ? a_shown.size() - 16 : 0).c_str(),
                b_shown.substr(b_shown.size() > 16 ? b_shown.size() - 16 : 0).c_str());
  out += line;
  for (const char* m : kMetrics) {
    double va = *metric_value(a, m), vb = *metric_value(b, m);
    std::snprintf(line, sizeof line, "%-24s %16s %16s  %s\n", m, format_number(va).c_str(), format_number(vb).c_str(), change(va, vb).c_str());
    out += line;
  }
  findings_text(out, findings_of(a), findings_of(b));
  auto kc = kernel_changes(a, b);
  if (!kc.empty()) {
    out += "\nkernels (total time; largest changes first)\n";
    int shown = 0;
    for (const auto& c : kc) {
      if (shown++ == 10) {
        std::snprintf(line, sizeof line, "  ... %zu more (tc-analyze kernels on each store)\n", kc.size() - 10);
        out += line;
        break;
      }
      const char* verdict = c.a_calls == 0 ? "new" : c.b_calls == 0 ? "gone" : c.b_s < c.a_s ? "faster" : c.b_s > c.a_s ? "slower" : "same";
      std::string name = printable(c.name);
      if (name.size() > 48) name = name.substr(0, 45) + "...";
      std::snprintf(line, sizeof line, "  %-48s %12s %12s  %-7s %s\n", name.c_str(), format_seconds(c.a_s).c_str(), format_seconds(c.b_s).c_str(),
                    verdict, change(c.a_s, c.b_s).c_str());
      out += line;
    }
  }
  return out;
}

std::string diff_json(const Report& a, const Report& b) {
  Json j;
  j.begin_object().field("schema", "tc-analyze-diff/1");
  sides_json(j, a, b, kMetrics, [](const Report& r, const char* m) { return *metric_value(r, m); });
  findings_json(j, findings_of(a), findings_of(b));
  j.key("kernels").begin_array();
  for (const auto& c : kernel_changes(a, b)) {
    const char* verdict = c.a_calls == 0 ? "new" : c.b_calls == 0 ? "gone" : c.b_s < c.a_s ? "faster" : c.b_s > c.a_s ? "slower" : "same";
    j.begin_object().field("name", c.name).field("a_total_s", c.a_s).field("b_total_s", c.b_s).field("a_calls", c.a_calls);
    j.field("b_calls", c.b_calls).field("change", verdict).end_object();
  }
  j.end_array().end_object();
  return j.str();
}


namespace {

const char* kRankMetrics[] = {"steps", "compilations", "recompilations", "explicit_evaluations", "collective_wait_s", "compile_s", "execute_s", "wall_s"};

double rank_metric(const RankSummary& s, std::string_view m) {
  if (auto v = summary_metric(s, m)) return *v;
  return m == "collective_wait_s" ? s.collective_wait_s : s.wall_s;
}

const char* kTotals[] = {"ranks", "steps", "compilations", "recompilations", "explicit_evaluations", "collective_wait_s", "compile_s", "execute_s",
                         "wall_s", "straggler_wait_s", "stragglers", "findings"};

double total(const JobReport& j, std::string_view m) {
  if (m == "ranks") return static_cast<double>(j.ranks.size());
  if (m == "straggler_wait_s" || m == "stragglers" || m == "findings") return *metric_value(j, m);
  double v = 0;
  for (const RankSummary& s : j.ranks) v = (m == "steps" || m == "wall_s") ? std::max(v, rank_metric(s, m)) : v + rank_metric(s, m);
  return v;
}

const RankSummary* rank_in(const JobReport& j, int64_t rank) {
  for (const RankSummary& s : j.ranks)
    if (s.rank == rank) return &s;
  return nullptr;
}

std::vector<int64_t> all_ranks(const JobReport& a, const JobReport& b) {
  std::set<int64_t> r;
  for (const auto& s : a.ranks) r.insert(s.rank);
  for (const auto& s : b.ranks) r.insert(s.rank);
  return {r.begin(), r.end()};
}

}  // namespace

std::string job_diff_text(const JobReport& a, const JobReport& b) {
  std::string out;
  char line[512];
  auto row = [&](const std::string& name, std::optional<double> va, std::optional<double> vb) {
    std::snprintf(line, sizeof line, "  %-22s %16s %16s  %s\n", name.c_str(), va ? format_number(*va).c_str() : "-", vb ? format_number(*vb).c_str() : "-",
                  va && vb ? change(*va, *vb).c_str() : !va ? "new rank" : "rank gone");
    out += line;
  };
  std::snprintf(line, sizeof line, "%-24s %16s %16s  %s\n", "", "A", "B", "change");
  out += line;
  auto stores = [](const JobReport& j) { return std::to_string(j.stores.size()) + (j.stores.size() == 1 ? " store" : " stores"); };
  std::snprintf(line, sizeof line, "%-24s %16s %16s\n", "stores", stores(a).c_str(), stores(b).c_str());
  out += line;
  for (int64_t rank : all_ranks(a, b)) {
    out += "rank " + std::to_string(rank) + "\n";
    const RankSummary* ra = rank_in(a, rank);
    const RankSummary* rb = rank_in(b, rank);
    for (const char* m : kRankMetrics) {
      row(m, ra ? std::optional<double>(rank_metric(*ra, m)) : std::nullopt, rb ? std::optional<double>(rank_metric(*rb, m)) : std::nullopt);
    }
  }
  out += "total (summed over the ranks; steps and wall_s: the largest)\n";
  for (const char* m : kTotals) row(m, total(a, m), total(b, m));
  findings_text(out, findings_of(a), findings_of(b));
  return out;
}

std::string job_diff_json(const JobReport& a, const JobReport& b) {
  Json j;
  j.begin_object().field("schema", "tc-analyze-job-diff/1");
  sides_json(j, a, b, kTotals, total);
  j.key("ranks").begin_array();
  for (int64_t rank : all_ranks(a, b)) {
    j.begin_object().field("rank", rank);
    for (const auto& [name, r] : {std::pair<const char*, const JobReport*>{"a", &a}, {"b", &b}}) {
      j.key(name);
      const RankSummary* s = rank_in(*r, rank);
      if (!s) {
        j.null();
        continue;
      }
      j.begin_object();
      for (const char* m : kRankMetrics) j.field(m, rank_metric(*s, m));
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
  findings_json(j, findings_of(a), findings_of(b));
  j.end_object();
  return j.str();
}

}  // namespace tc::analysis
