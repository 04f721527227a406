#include "distributed.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "json.h"
#include "tc/analysis/format.h"

namespace tc::analysis {

namespace {

// A straggler is reported when it was at least this late (summed over the
// collectives of one finding), or at least kMaterialShare of its step and at
// least kMaterialFloorS (docs/findings.md).
constexpr double kMaterialS = 0.050;
constexpr double kMaterialShare = 0.10;
constexpr double kMaterialFloorS = 0.001;

double seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

// Nearest rank, as the report's p50 (index floor(n/2) of the sorted values).
int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The part of [lo, hi) that rows (ascending ts, none longer than max_dur)
// cover, each row that overlaps it passed to `hit`.
template <typename Row, typename Hit>
int64_t covered(const std::vector<Row>& rows, int64_t max_dur, int64_t lo, int64_t hi, Hit hit) {
  int64_t sum = 0;
  const int64_t from = lo == std::numeric_limits<int64_t>::min() ? lo : lo - max_dur;
  auto it = std::lower_bound(rows.begin(), rows.end(), from, [](const Row& r, int64_t ts) { return r.ts < ts; });
  for (; it != rows.end() && it->ts < hi; ++it) {
    int64_t a = std::max(lo, it->ts), b = std::min(hi, it->ts + std::max<int64_t>(it->dur, 0));
    if (b <= a) continue;
    if (hit(*it, b - a)) sum += b - a;
  }
  return sum;
}

enum Cause { kCompile, kEvaluation, kExecute, kOther };
const char* cause_name(Cause c) {
  switch (c) {
    case kCompile: return "compile";
    case kEvaluation: return "explicit_evaluation";
    case kExecute: return "execute";
    case kOther: return "other";
  }
  return "other";
}

// What a rank did between leaving its previous collective and arriving at this one.
struct Window {
  int64_t compile = 0, evaluation = 0, execute = 0;
  std::vector<const RankData::Compilation*> compilations;
  std::vector<const RankData::Evaluation*> evaluations;
};

Window window_of(const RankData& r, size_t at) {
  Window w;
  const int64_t lo = at == 0 ? std::numeric_limits<int64_t>::min() : r.collectives[at - 1].ts + r.collectives[at - 1].dur;
  const int64_t hi = r.collectives[at].ts;
  if (hi <= lo) return w;
  int64_t eval_compile = 0;
  w.compile = covered(r.compilations, r.max_compile_dur, lo, hi, [&](const RankData::Compilation& c, int64_t ns) {
    w.compilations.push_back(&c);
    if (c.trigger == "explicit_evaluation") eval_compile += ns;
    return true;
  });
  // An explicit evaluation's time includes its compilation (counted as compiling) and its execution (counted as the evaluation).
  w.evaluation = std::max<int64_t>(0, covered(r.evaluations, r.max_eval_dur, lo, hi, [&](const RankData::Evaluation& e, int64_t) {
                                        w.evaluations.push_back(&e);
                                        return true;
                                      }) - eval_compile);
  w.execute = covered(r.executions, r.max_exec_dur, lo, hi, [](const RankData::Span& s, int64_t) { return !s.nested; });
  return w;
}

struct StragglerGroup {
  size_t rank = 0;  // index into ranks
  int64_t step = 0;
  Cause cause = kOther;
  std::vector<int64_t> seqs;
  std::vector<std::string> ops;
  std::vector<int64_t> coll_steps;   // per collective: the step it ran in (collectives.step)
  std::vector<int64_t> delays;       // per collective: its arrival minus the median of the others'
  std::map<size_t, int64_t> waited;  // other rank index -> ns
  int64_t excess[4] = {0, 0, 0, 0};  // over the median of the others, per cause
  std::vector<const RankData::Compilation*> compilations;
  std::vector<const RankData::Evaluation*> evaluations;
  std::vector<int64_t> arrivals;  // the straggler's own clock
  int64_t delay() const {
    int64_t d = 0;
    for (int64_t v : delays) d += v;
    return d;
  }
};

// Its step's length on that rank: from the end of the previous mark_step() (or the process start) to the end of this one; 0 unknown.
int64_t step_length(const RankData& r, int64_t step) {
  for (size_t i = 0; i < r.steps.size(); ++i) {
    if (r.steps[i].step != step) continue;
    int64_t from = r.start_ts;
    for (size_t j = 0; j < r.steps.size(); ++j)
      if (r.steps[j].step == step - 1) from = r.steps[j].ts + r.steps[j].dur;
    return r.steps[i].ts + r.steps[i].dur - from;
  }
  return 0;
}

std::string plural(int64_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

using DimKey = std::pair<std::string, int64_t>;  // (input, dim)

// Whether `in` is a positional argument of a library frame ("args[0]": DDP's
// forward(*inputs) compiled as a frame of its own) that another input of
// these compilations, named by the program, changed alike: the same tensor.
bool positional_twin(const RankData::Input& in, const std::vector<const RankData::Compilation*>& compilations, const RankData& r) {
  if (in.input.rfind("args[", 0) != 0) return false;
  for (const auto* c : compilations)
    if (auto it = r.inputs.find(c->graph_id); it != r.inputs.end())
      for (const auto& o : it->second)
        if (o.input.rfind("args[", 0) != 0 && o.dim == in.dim && o.old_value == in.old_value && o.new_value == in.new_value) return true;
  return false;
}

// "tokens dim 1 12->20" for each distinct change, in order.
std::vector<std::string> changes_of(const std::vector<const RankData::Compilation*>& compilations, const RankData& r,
                                    std::vector<DimKey>* dims = nullptr) {
  std::vector<std::string> out;
  for (const auto* c : compilations) {
    auto it = r.inputs.find(c->graph_id);
    if (it == r.inputs.end()) continue;
    for (const auto& in : it->second) {
      if (positional_twin(in, compilations, r)) continue;
      std::string s = in.input + " dim " + std::to_string(in.dim) + " " + std::to_string(in.old_value) + "->" + std::to_string(in.new_value);
      if (std::find(out.begin(), out.end(), s) != out.end()) continue;
      out.push_back(s);
      if (dims && std::find(dims->begin(), dims->end(), DimKey{in.input, in.dim}) == dims->end()) dims->push_back({in.input, in.dim});
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// "Pad tokens dim 1 to 20 and labels dim 0 to 8 on every rank": the largest size each took on any rank.
std::string pad_advice(const std::vector<DimKey>& dims, const std::map<DimKey, int64_t>& largest) {
  std::vector<std::string> parts;
  for (const auto& d : dims) {
    auto it = largest.find(d);
    if (it != largest.end()) parts.push_back(d.first + " dim " + std::to_string(d.second) + " to " + std::to_string(it->second));
  }
  return parts.empty() ? std::string() : "Pad " + joined(parts, " and ") + " on every rank so that all ranks see the same shapes";
}

void compilation_json(Json& j, const RankData::Compilation& c, const RankData& r) {
  j.begin_object().field("graph_id", c.graph_id).field("signature", c.signature).field("step", c.step).field("reason", c.reason);
  j.field("trigger", c.trigger).field("compile_s", seconds(c.dur));
  j.key("inputs").begin_array();
  if (auto it = r.inputs.find(c.graph_id); it != r.inputs.end()) {
    for (const auto& in : it->second) {
      j.begin_object().field("input", in.input).field("dim", in.dim).field("old_value", in.old_value).field("new_value", in.new_value).end_object();
    }
  }
  j.end_array().end_object();
}

// torch.compile's own ways out of a straggler that recompiled for a shape
// change, each with what it would cost here (docs/findings.md): one entry per
// option, empty unless a compilation is torch.compile's with a changed dim.
struct TorchOption {
  std::string option, effect;
  double waiting_saved_s = 0, compile_added_s = 0;
};
std::vector<TorchOption> torch_options(const std::vector<const RankData::Compilation*>& compilations, const RankData& r,
                                       const std::vector<DimKey>& dims, size_t world, int64_t compile_ns, int64_t waited_ns) {
  bool torch = false;
  for (const auto* c : compilations) torch = torch || c->framework == "torch.compile";
  if (!torch || dims.empty()) return {};
  std::string dynamic;  // the dims this rank's automatic dynamic made dynamic
  for (const auto* c : compilations)
    if (auto it = r.inputs.find(c->graph_id); it != r.inputs.end())
      for (const auto& in : it->second) {
        std::string d = in.input + " dim " + std::to_string(in.dim);
        if (in.dynamic && !positional_twin(in, compilations, r) && dynamic.find(d) == std::string::npos) dynamic += (dynamic.empty() ? "" : ", ") + d;
      }
  const std::string who = "rank " + std::to_string(r.id.rank);
  std::string marks;
  for (const auto& d : dims) marks += (marks.empty() ? "" : "; ") + ("torch._dynamo.mark_dynamic(" + d.first + ", " + std::to_string(d.second) + ")");
  const double waited = seconds(waited_ns), compile = seconds(compile_ns);
  return {
      {marks + " on every rank before the first step",
       "one dynamic graph from the start, so no rank recompiles for it alone" +
           (dynamic.empty() ? std::string() : "; automatic dynamic decides per rank: here " + who + " alone made " + dynamic + " dynamic"),
       waited, 0},
      {"torch._dynamo.config.enable_compiler_collective = True",
       "the ranks agree on what to make dynamic and recompile together: the others compile instead of waiting",
       waited, compile * static_cast<double>(world > 0 ? world - 1 : 0)},
      {"torch's profile-guided dynamic shapes (the same TORCH_COMPILE_JOB_ID, its cache kept)",
       "the next run of this job starts with the dims dynamic that this run made dynamic: no saving in this run", 0, 0},
  };
}

std::string torch_options_text(const std::vector<TorchOption>& options) {
  if (options.empty()) return {};
  return " torch.compile's own ways, instead: " + options[0].option + " (" + options[0].effect + "; saves the " +
         format_seconds(options[0].waiting_saved_s) + " of waiting); " + options[1].option + " (" + options[1].effect + ": saves the " +
         format_seconds(options[1].waiting_saved_s) + " of waiting, costs about " + format_seconds(options[1].compile_added_s) +
         " of compiling on the other ranks); " + options[2].option + " (" + options[2].effect + ").";
}

std::vector<int64_t> rank_numbers(const std::vector<RankData>& ranks, const std::vector<size_t>& idx) {
  std::vector<int64_t> out;
  for (size_t i : idx) out.push_back(ranks[i].id.rank);
  std::sort(out.begin(), out.end());
  return out;
}

JobFinding straggler_finding(const StragglerGroup& g, const std::vector<RankData>& ranks, const std::map<DimKey, int64_t>& largest,
                             int64_t step_ns) {
  const RankData& r = ranks[g.rank];
  const std::string who = "rank " + std::to_string(r.id.rank);
  int64_t total = 0;
  for (auto& [i, ns] : g.waited) total += ns;
  std::vector<int64_t> waiting;
  for (auto& [i, ns] : g.waited)
    if (ns > 0) waiting.push_back(ranks[i].id.rank);
  const std::string at = "at " + plural(static_cast<int64_t>(g.seqs.size()), "collective", "collectives") + " of step " + std::to_string(g.step);
  const std::string waited = waiting.size() == 1 ? "rank " + std::to_string(waiting[0]) + " waited " + format_seconds(seconds(total))
                                                 : std::to_string(waiting.size()) + " ranks waited " + format_seconds(seconds(total)) + " in all";
  const std::string saving = "est. " + format_seconds(seconds(total)) + " of waiting saved";
  JobFinding out;
  Finding& f = out.finding;
  f.kind = "distributed.straggler";
  f.severity = Severity::kWarning;
  f.estimated_saving_s = seconds(total);
  out.ranks = {r.id.rank};
  std::string because;
  std::vector<TorchOption> options;
  switch (g.cause) {
    case kCompile: {
      int64_t compile_ns = 0;
      std::set<std::string> reasons;
      for (const auto* c : g.compilations) {
        compile_ns += c->dur;
        reasons.insert(c->reason);
      }
      std::vector<DimKey> dims;
      std::vector<std::string> changes = changes_of(g.compilations, r, &dims);
      std::vector<std::string> why(reasons.begin(), reasons.end());
      because = "it compiled " + plural(static_cast<int64_t>(g.compilations.size()), "graph", "graphs") + " (" + joined(why) +
                (changes.empty() ? "" : ": " + joined(changes)) + ", " + format_seconds(seconds(compile_ns)) + ")";
      std::string pad = pad_advice(dims, largest);
      options = torch_options(g.compilations, r, dims, ranks.size(), compile_ns, total);
      if (!pad.empty()) {
        f.suggestion = pad + " (then no rank compiles alone while the others wait); " + saving + "." + torch_options_text(options);
      } else {
        f.suggestion = "Make every rank compile the same graphs at the same steps (the same shapes and the same branches on every rank; "
                       "see distributed.desync), or share TC_CACHE_DIR so that the ranks load what one of them built; " + saving + ".";
      }
      break;
    }
    case kEvaluation: {
      std::map<std::string, std::pair<int64_t, int64_t>> sites;  // "item() at train.cpp:88" -> (count, ns)
      for (const auto* e : g.evaluations) {
        auto& s = sites[e->kind + "() at " + e->site];
        s.first += 1;
        s.second += e->dur;
      }
      std::vector<std::string> parts, where;
      for (auto& [site, cn] : sites) {
        parts.push_back(site + ", " + plural(cn.first, "time", "times") + ", " + format_seconds(seconds(cn.second)));
        where.push_back(site);
      }
      because = "it evaluated a tensor early (" + joined(parts, "; ") + ")";
      f.suggestion = "Move the " + joined(where, " and the ") + " after tc::mark_step() (free there), or do it on every rank alike, so that " + who +
                     " reaches the collective with the others; " + saving + ".";
      break;
    }
    case kExecute:
      because = "it executed slower (" + format_seconds(seconds(g.excess[kExecute])) + " more than the median rank)";
      f.suggestion = who + "'s graphs ran " + format_seconds(seconds(g.excess[kExecute])) + " longer than the median rank's: check what else runs on its " +
                     "device and host (" + (r.id.host.empty() ? std::string("unknown host") : r.id.host) + "), or give it a smaller shard; " + saving + ".";
      break;
    case kOther:
      if (r.executions.empty()) {  // a framework's rank: its execution is not measured between collectives, so it is in here
        because = "it spent longer outside compiling (" + format_seconds(seconds(g.excess[kOther])) +
                  " more than the median rank: executing, input pipeline, host work; the framework's execution is not measured apart)";
        f.suggestion = "Look at what " + who + " does between collectives besides compiling (its forward and backward, data loading, "
                       "preprocessing, logging, a busy host): it took " + format_seconds(seconds(g.excess[kOther])) + " longer than the median rank; " +
                       saving + ".";
        break;
      }
      because = "it spent longer outside compiling and executing (" + format_seconds(seconds(g.excess[kOther])) +
                " more than the median rank: input pipeline, host work)";
      f.suggestion = "Look at what " + who + " does between collectives besides tc's compiling and executing (data loading, preprocessing, "
                     "logging, a busy host): it took " + format_seconds(seconds(g.excess[kOther])) + " longer than the median rank; " + saving + ".";
      break;
  }
  f.title = who + " arrived last " + at + " because " + because + ": " + waited;
  f.identity = who + " step " + std::to_string(g.step) + " " + cause_name(g.cause);
  for (int64_t ts : g.arrivals) f.anchors_ts.push_back(ts), out.aligned_anchors_ts.push_back(ts + r.id.clock_offset_ns);
  Json j;
  j.begin_object().field("rank", r.id.rank).field("step", g.step).field("cause", cause_name(g.cause));
  j.key("waited_s").begin_object();
  std::vector<std::pair<int64_t, int64_t>> by_rank;
  for (auto& [i, ns] : g.waited) by_rank.push_back({ranks[i].id.rank, ns});
  std::sort(by_rank.begin(), by_rank.end());
  for (auto& [rank, ns] : by_rank) j.field(std::to_string(rank), seconds(ns));
  j.end_object().field("total_waited_s", seconds(total)).field("delay_s", seconds(g.delay())).field("step_s", seconds(step_ns));
  j.key("collectives").begin_array();
  for (size_t i = 0; i < g.seqs.size(); ++i) j.begin_object().field("seq", g.seqs[i]).field("op", g.ops[i]).field("step", g.coll_steps[i]).field("delay_s", seconds(g.delays[i])).end_object();
  j.end_array();
  j.key("excess_s").begin_object();
  for (Cause c : {kCompile, kEvaluation, kExecute, kOther}) j.field(cause_name(c), seconds(g.excess[c]));
  j.end_object();
  j.key("compilations").begin_array();
  for (const auto* c : g.compilations) compilation_json(j, *c, r);
  j.end_array();
  j.key("explicit_evaluations").begin_array();
  for (const auto* e : g.evaluations) {
    j.begin_object().field("kind", e->kind).field("call_site", e->site).field("step", e->step).field("total_s", seconds(e->dur)).end_object();
  }
  j.end_array();
  if (!options.empty()) {
    j.key("torch_options").begin_array();
    for (const TorchOption& o : options)
      j.begin_object().field("option", o.option).field("effect", o.effect).field("waiting_saved_s", o.waiting_saved_s).field("compile_added_s", o.compile_added_s).end_object();
    j.end_array();
  }
  j.end_object();
  f.evidence_json = j.str();
  return out;
}

void stragglers(const std::vector<RankData>& ranks, const std::map<DimKey, int64_t>& largest, JobReport& job) {
  // seq -> (rank index, position in its collectives)
  std::map<int64_t, std::vector<std::pair<size_t, size_t>>> by_seq;
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t k = 0; k < ranks[i].collectives.size(); ++k) by_seq[ranks[i].collectives[k].seq].push_back({i, k});
  std::vector<int64_t> wait(ranks.size(), 0);
  std::map<std::tuple<size_t, int64_t, int>, StragglerGroup> groups;
  std::vector<std::tuple<size_t, int64_t, int>> order;
  for (const auto& [seq, at] : by_seq) {
    if (at.size() < 2) continue;
    ++job.collectives;
    size_t last = 0;
    for (size_t k = 1; k < at.size(); ++k)
      if (ranks[at[k].first].collectives[at[k].second].ts > ranks[at[last].first].collectives[at[last].second].ts) last = k;
    const RankData& L = ranks[at[last].first];
    const RankData::Collective& lc = L.collectives[at[last].second];
    std::vector<int64_t> others;
    for (size_t k = 0; k < at.size(); ++k) {
      int64_t ts = ranks[at[k].first].collectives[at[k].second].ts;
      wait[at[k].first] += lc.ts - ts;
      if (k != last) others.push_back(ts);
    }
    int64_t delay = lc.ts - median(others);
    if (delay <= 0) continue;
    // Why it was late: each kind of work against the median of the other ranks.
    Window mine = window_of(L, at[last].second);
    std::vector<int64_t> oc, oe, ox;
    for (size_t k = 0; k < at.size(); ++k) {
      if (k == last) continue;
      Window w = window_of(ranks[at[k].first], at[k].second);
      oc.push_back(w.compile);
      oe.push_back(w.evaluation);
      ox.push_back(w.execute);
    }
    int64_t excess[4] = {std::max<int64_t>(0, mine.compile - median(oc)), std::max<int64_t>(0, mine.evaluation - median(oe)),
                         std::max<int64_t>(0, mine.execute - median(ox)), 0};
    excess[kOther] = std::max<int64_t>(0, delay - excess[kCompile] - excess[kEvaluation] - excess[kExecute]);
    Cause cause = kCompile;
    for (Cause c : {kEvaluation, kExecute, kOther})
      if (excess[c] > excess[cause]) cause = c;
    int64_t step = lc.step;
    if (cause == kCompile && !mine.compilations.empty()) {
      step = (*std::max_element(mine.compilations.begin(), mine.compilations.end(), [](auto* a, auto* b) { return a->dur < b->dur; }))->step;
    } else if (cause == kEvaluation && !mine.evaluations.empty()) {
      step = (*std::max_element(mine.evaluations.begin(), mine.evaluations.end(), [](auto* a, auto* b) { return a->dur < b->dur; }))->step;
    }
    auto key = std::make_tuple(at[last].first, step, static_cast<int>(cause));
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    StragglerGroup& g = it->second;
    g.rank = at[last].first;
    g.step = step;
    g.cause = cause;
    g.seqs.push_back(seq);
    g.ops.push_back(lc.op);
    g.coll_steps.push_back(lc.step);
    g.delays.push_back(delay);
    g.arrivals.push_back(lc.ts - L.id.clock_offset_ns);
    for (int c = 0; c < 4; ++c) g.excess[c] += excess[c];
    for (size_t k = 0; k < at.size(); ++k)
      if (k != last) g.waited[at[k].first] += lc.ts - ranks[at[k].first].collectives[at[k].second].ts;
    if (cause == kCompile) {
      for (const auto* c : mine.compilations)
        if (std::find(g.compilations.begin(), g.compilations.end(), c) == g.compilations.end()) g.compilations.push_back(c);
    }
    if (cause == kEvaluation) {
      for (const auto* e : mine.evaluations)
        if (std::find(g.evaluations.begin(), g.evaluations.end(), e) == g.evaluations.end()) g.evaluations.push_back(e);
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    job.ranks[i].collective_wait_s = seconds(wait[i]);
    job.collective_wait_s += seconds(wait[i]);
  }
  for (const auto& key : order) {
    const StragglerGroup& g = groups[key];
    const double delay = seconds(g.delay());
    const int64_t step_ns = step_length(ranks[g.rank], g.step);
    // A framework's rank (no executions measured): its `other` holds its forward and backward, whose
    // jitter between ranks of one host is milliseconds; only kMaterialS makes that a finding.
    const bool unmeasured = g.cause == kOther && ranks[g.rank].executions.empty();
    bool material = delay >= kMaterialS || (!unmeasured && delay >= kMaterialFloorS && step_ns > 0 && delay >= kMaterialShare * seconds(step_ns));
    if (!material) continue;
    JobFinding f = straggler_finding(g, ranks, largest, step_ns);
    job.straggler_wait_s += f.finding.estimated_saving_s;
    job.findings.push_back(std::move(f));
  }
}

void desync(const std::vector<RankData>& ranks, const std::map<DimKey, int64_t>& largest, JobReport& job) {
  if (ranks.size() < 2) return;
  // signature -> ranks (indices) that compiled it
  std::map<std::string, std::set<size_t>> who;
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const auto& c : ranks[i].compilations) who[c.signature].insert(i);
  std::vector<size_t> odd;  // ranks with a graph not every rank compiled
  std::vector<std::vector<const RankData::Compilation*>> extra(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::set<std::string> seen;
    for (const auto& c : ranks[i].compilations) {
      if (who[c.signature].size() == ranks.size() || !seen.insert(c.signature).second) continue;
      extra[i].push_back(&c);
    }
    if (!extra[i].empty()) odd.push_back(i);
  }
  if (odd.empty()) return;
  std::vector<DimKey> dims;
  std::vector<std::string> changes;
  int64_t worst_ns = 0, graphs = 0;
  std::set<int64_t> steps;
  for (size_t i : odd) {
    for (const auto& s : changes_of(extra[i], ranks[i], &dims))
      if (std::find(changes.begin(), changes.end(), s) == changes.end()) changes.push_back(s);
    int64_t ns = 0;
    for (const auto* c : extra[i]) {
      ns += c->dur;
      steps.insert(c->step);
    }
    worst_ns = std::max(worst_ns, ns);
    graphs += static_cast<int64_t>(extra[i].size());
  }
  std::vector<int64_t> odd_ranks = rank_numbers(ranks, odd);
  JobFinding out;
  for (size_t i : odd)
    for (const auto* c : extra[i]) out.aligned_anchors_ts.push_back(c->ts);  // RankData's times are aligned
  out.ranks = odd_ranks;
  Finding& f = out.finding;
  f.kind = "distributed.desync";
  f.severity = Severity::kWarning;
  std::string whose = rank_set(odd_ranks, ranks.size());
  std::string step_list;
  for (int64_t s : steps) step_list += (step_list.empty() ? "" : ",") + std::to_string(s);
  f.title = "The ranks compiled different graphs: " + whose + " compiled " + plural(graphs, "graph", "graphs") + " that not every rank did (" +
            (changes.empty() ? std::string() : joined(changes) + ", ") + (steps.size() == 1 ? "step " : "steps ") + step_list + ")";
  std::string pad = pad_advice(dims, largest);
  f.suggestion = (pad.empty() ? "Make every rank build the same graphs (the same shapes: pad the last shard or drop it; the same branches), so "
                                "that none compiles while the others wait"
                              : pad + " and compile the same graphs") +
                 "; est. " + format_seconds(seconds(worst_ns)) + " of compiling saved on the rank that compiled most.";
  f.estimated_saving_s = seconds(worst_ns);
  f.identity = "desync";
  Json j;
  j.begin_object().key("graphs").begin_object();
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::set<std::string> mine;
    for (const auto& c : ranks[i].compilations) mine.insert(c.signature);
    j.field(std::to_string(ranks[i].id.rank), static_cast<int64_t>(mine.size()));
  }
  int64_t common = 0;
  for (auto& [sig, set] : who) common += set.size() == ranks.size();
  j.end_object().field("common", common).key("extra").begin_array();
  for (size_t i : odd) {
    j.begin_object().field("rank", ranks[i].id.rank).key("compilations").begin_array();
    for (const auto* c : extra[i]) compilation_json(j, *c, ranks[i]);
    j.end_array().end_object();
  }
  j.end_array().end_object();
  f.evidence_json = j.str();
  job.findings.push_back(std::move(out));
}

}  // namespace

void add_distributed_findings(const std::vector<RankData>& ranks, JobReport& job) {
  // The largest size each (input, dim) took on any rank: what padding on every rank needs.
  std::map<DimKey, int64_t> largest;
  for (const auto& r : ranks)
    for (const auto& [g, inputs] : r.inputs)
      for (const auto& in : inputs) {
        int64_t& v = largest.try_emplace({in.input, in.dim}, 0).first->second;
        v = std::max({v, in.old_value, in.new_value});
      }
  stragglers(ranks, largest, job);
  desync(ranks, largest, job);
}

}  // namespace tc::analysis
