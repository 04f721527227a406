#include "tc/analysis/job.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "distributed.h"
#include "findings.h"
#include "json.h"
#include "tc/analysis/format.h"
#include "tc/store/json_text.h"
#include "tc/store/schema.h"
#include "tc/trace/launcher.h"

namespace tc::analysis {

namespace {

std::string basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// One store, read and analysed.
struct Loaded {
  Report report;
  std::vector<RankIdentity> ranks;
  std::vector<RankData> data;  // one per rank (one with rank -1 for a store that names none)
  std::vector<int64_t> pids;   // per rank: its process id (0 unknown)
};

Status load_data(const store::Reader& r, Loaded& out, size_t store_index) {
  StoreText text;
  std::map<int64_t, int64_t> upid_of;  // utid -> upid
  for (auto q = r.query("SELECT utid, upid FROM threads"); q.next();) upid_of[q.i64(0)] = q.i64(1);
  std::map<int64_t, std::pair<int64_t, int64_t>> process;  // upid -> (pid, start_ts)
  for (auto q = r.query("SELECT upid, pid, start_ts FROM processes"); q.next();) process[q.i64(0)] = {q.i64(1), q.i64(2)};
  std::vector<RankIdentity> ids = out.ranks;
  if (ids.empty()) ids.push_back(RankIdentity{});
  std::map<int64_t, size_t> slot;  // upid -> index into ids (a store of one rank: every row is that rank's)
  for (size_t i = 0; i < ids.size(); ++i) slot[ids[i].upid] = i;
  out.data.assign(ids.size(), RankData{});
  out.pids.assign(ids.size(), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    RankData& d = out.data[i];
    d.id = ids[i];
    d.store = store_index;
    // A store of one rank is all that rank's, with processes of no rank beside it (torchrun's agent,
    // split_by_rank): the rank's own process is the one its ranks row names.
    auto p = ids[i].upid ? process.find(ids[i].upid) : ids[i].process ? process.find(ids[i].process) : process.begin();
    if (p == process.end()) p = process.begin();
    d.start_ts = (p != process.end() ? p->second.second : out.report.run.start_ts) + ids[i].clock_offset_ns;
    if (p != process.end()) out.pids[i] = p->second.first;
  }
  auto rank_of = [&](int64_t utid) -> RankData* {
    if (out.data.size() == 1) return &out.data[0];
    auto u = upid_of.find(utid);
    if (u == upid_of.end()) return nullptr;
    auto s = slot.find(u->second);
    return s == slot.end() ? nullptr : &out.data[s->second];
  };
  if (r.has(store::schema::collectives, "seq")) {
    auto q = r.query("SELECT utid, seq, ts, dur, step, op FROM collectives ORDER BY seq, ts");
    while (q.next()) {
      if (RankData* d = rank_of(q.i64(0))) d->collectives.push_back({q.i64(1), q.i64(2) + d->id.clock_offset_ns, q.i64(3), q.i64(4), text(q.text(5))});
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    const bool framework = r.has(store::schema::compilations, "framework");
    auto q = r.query(std::string("SELECT utid, ts, dur, graph_id, step, signature, reason, trigger, ") + (framework ? "framework" : "'tc'") +
                     " FROM compilations WHERE " + kBlocking + " ORDER BY ts, id");
    while (q.next()) {
      if (RankData* d = rank_of(q.i64(0))) {
        d->compilations.push_back(
            {q.i64(1) + d->id.clock_offset_ns, q.i64(2), q.i64(3), q.i64(4), text(q.text(5)), text(q.text(6)), text(q.text(7)), text(q.text(8))});
        d->max_compile_dur = std::max(d->max_compile_dur, q.i64(2));
      }
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    const bool dynamic = r.has(store::schema::compilation_inputs, "dynamic");
    auto q = r.query(std::string("SELECT utid, graph_id, input, dim, old_value, new_value, ") + (dynamic ? "dynamic" : "0") +
                     " FROM compilation_inputs ORDER BY id");
    while (q.next()) {
      if (RankData* d = rank_of(q.i64(0))) {
        d->inputs[q.i64(1)].push_back({q.is_null(2) ? std::string("(unnamed input)") : text(q.text(2)), q.i64(3), q.i64(4), q.i64(5), q.i64(6) != 0});
      }
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = r.query("SELECT e.utid, e.ts, e.dur, e.step, e.kind, l.file, l.line FROM explicit_evaluations e LEFT JOIN locations l ON l.id = e.loc_id "
                     "ORDER BY e.ts, e.id");
    while (q.next()) {
      if (RankData* d = rank_of(q.i64(0))) {
        std::string site = q.is_null(5) ? std::string("an unknown call site") : basename(text(q.text(5))) + ":" + std::to_string(q.i64(6));
        d->evaluations.push_back({q.i64(1) + d->id.clock_offset_ns, q.i64(2), q.i64(3), text(q.text(4)), site});
        d->max_eval_dur = std::max(d->max_eval_dur, q.i64(2));
      }
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = r.query("SELECT utid, ts, dur, step, trigger = 'explicit_evaluation' FROM executions ORDER BY ts, id");
    while (q.next()) {
      if (RankData* d = rank_of(q.i64(0))) {
        d->executions.push_back({q.i64(1) + d->id.clock_offset_ns, q.i64(2), q.i64(3), q.i64(4) != 0});
        d->max_exec_dur = std::max(d->max_exec_dur, q.i64(2));
      }
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  {
    auto q = r.query("SELECT utid, ts, dur, step FROM steps ORDER BY ts, id");
    while (q.next()) {
      if (RankData* d = rank_of(q.i64(0))) d->steps.push_back({q.i64(1) + d->id.clock_offset_ns, q.i64(2), q.i64(3), false});
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  return Status::Ok();
}

StatusOr<Loaded> load(const std::string& path, const Options& options, size_t index) {
  auto reader = store::Reader::open(path);
  if (!reader.ok()) return reader.status();
  auto report = analyze(*reader, options);
  if (!report.ok()) return report.status();
  Loaded out;
  out.report = std::move(*report);
  auto ranks = store_ranks(*reader);
  if (!ranks.ok()) return ranks.status();
  out.ranks = std::move(*ranks);
  for (auto& id : out.ranks)
    if (id.host.empty()) id.host = out.report.run.host;
  TC_RETURN_IF_ERROR(load_data(*reader, out, index));
  return out;
}

std::string of_job(const RankIdentity& id) { return id.job.empty() ? std::string() : " of job " + id.job; }

// Whether the store could have recorded id (store_ranks' contract in job.h).
Status check_rank(const std::string& path, const RankIdentity& id) {
  const std::string where = path + ": damaged store: " + (id.from_dist ? "its ranks row" : "its launcher's variables (run_env)");
  const std::string fix = "; record the run again";
  const bool world_ok = id.from_dist ? id.world_size >= 1 && id.world_size <= kMaxWorldSize : id.world_size >= 0 && id.world_size <= kMaxWorldSize;
  if (id.rank < 0 || id.rank >= kMaxWorldSize || !world_ok || (id.world_size > 0 && id.rank >= id.world_size)) {
    return Status(StatusCode::kCorrupt, where + " says rank " + std::to_string(id.rank) + " of a world of " + std::to_string(id.world_size) +
                                            " (tc accepts 0 <= rank < world size <= " + std::to_string(kMaxWorldSize) + ")" + fix);
  }
  auto out_of_range = [](int64_t v, int64_t low) { return v < low || v > kMaxClockOffsetNs; };
  if (out_of_range(id.clock_offset_ns, -kMaxClockOffsetNs) || out_of_range(id.clock_error_ns, 0)) {
    return Status(StatusCode::kCorrupt, where + " says rank " + std::to_string(id.rank) + "'s clock is " + std::to_string(id.clock_offset_ns) +
                                            " ns from rank 0's, +-" + std::to_string(id.clock_error_ns) + " (tc accepts at most " +
                                            std::to_string(kMaxClockOffsetNs) + " ns, 10 years, either way)" + fix);
  }
  return Status::Ok();
}

// Each rank's own findings and notes, the same ones merged into one that
// names its ranks.
void merge_rank_findings(JobReport& job) {
  // Each rank's own findings, the same ones merged.
  struct Group {
    const Finding* rep = nullptr;
    int64_t rep_rank = 0;
    std::set<int64_t> ranks;
  };
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Group> groups;
  std::vector<size_t> by_rank(job.stores.size());
  for (size_t i = 0; i < job.stores.size(); ++i) by_rank[i] = i;
  std::sort(by_rank.begin(), by_rank.end(), [&](size_t a, size_t b) { return job.store_ranks[a].front() < job.store_ranks[b].front(); });
  for (size_t i : by_rank) {
    for (const Finding& f : job.reports[i].findings) {
      auto key = std::make_pair(f.kind, f.identity.empty() ? f.title : f.identity);
      auto [it, fresh] = groups.try_emplace(key);
      if (fresh) order.push_back(key);
      Group& g = it->second;
      g.ranks.insert(job.store_ranks[i].begin(), job.store_ranks[i].end());
      if (!g.rep || f.estimated_saving_s > g.rep->estimated_saving_s ||
          (f.estimated_saving_s == g.rep->estimated_saving_s && static_cast<int>(f.severity) > static_cast<int>(g.rep->severity))) {
        g.rep = &f;
        g.rep_rank = job.store_ranks[i].front();
      }
    }
  }
  for (const auto& key : order) {
    const Group& g = groups[key];
    JobFinding jf;
    jf.finding = *g.rep;
    jf.ranks.assign(g.ranks.begin(), g.ranks.end());
    jf.finding.title = rank_set(jf.ranks, job.ranks.size()) + ": " + g.rep->title;
    jf.evidence_rank = g.rep_rank;
    for (const RankSummary& s : job.ranks)
      if (s.rank == g.rep_rank)
        for (int64_t ts : jf.finding.anchors_ts) jf.aligned_anchors_ts.push_back(ts + s.clock_offset_ns);
    job.findings.push_back(std::move(jf));
  }
  // The ranks' notes, the same sentence once with its ranks.
  {
    std::vector<std::string> texts;
    std::map<std::string, std::set<int64_t>> on;
    for (size_t i : by_rank) {
      for (const std::string& n : job.reports[i].notes) {
        if (on.find(n) == on.end()) texts.push_back(n);
        on[n].insert(job.store_ranks[i].begin(), job.store_ranks[i].end());
      }
    }
    for (const std::string& n : texts) job.notes.push_back(rank_set({on[n].begin(), on[n].end()}, job.ranks.size()) + ": " + n);
  }
}

}  // namespace

StatusOr<std::vector<RankIdentity>> store_ranks(const store::Reader& r) {
  std::map<std::string, std::string, std::less<>> env;
  {
    auto q = r.query("SELECT name, value FROM run_env");
    while (q.next()) {
      if (trace::launcher::is_variable(q.text(0))) env[std::string(q.text(0))] = std::string(q.text(1));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  const trace::launcher::Place place = trace::launcher::any_place([&](std::string_view name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  const std::string& env_job = place.job;
  std::vector<RankIdentity> out;
  if (r.has(store::schema::ranks, "rank")) {
    auto q = r.query("SELECT k.rank, k.world_size, k.host, k.job, k.clock_offset_ns, k.clock_error_ns, coalesce(t.upid, 0) FROM ranks k "
                     "LEFT JOIN threads t ON t.utid = k.utid ORDER BY k.rank, k.id");
    while (q.next()) {
      RankIdentity id;
      id.rank = q.i64(0);
      id.world_size = q.i64(1);
      id.host = store::valid_utf8(q.text(2));
      id.job = q.is_null(3) || q.text(3).empty() ? env_job : store::valid_utf8(q.text(3));
      id.clock_offset_ns = q.i64(4);
      id.clock_error_ns = q.i64(5);
      id.upid = q.i64(6);
      id.process = id.upid;
      id.from_dist = true;
      out.push_back(std::move(id));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  if (out.size() == 1) out[0].upid = 0;  // one rank: the whole store is its
  if (out.empty() && place.rank >= 0) {
    RankIdentity id;
    id.rank = place.rank;
    id.world_size = place.size;
    id.job = env_job;
    out.push_back(std::move(id));
  }
  for (const RankIdentity& id : out) TC_RETURN_IF_ERROR(check_rank(r.path(), id));
  return out;
}

Status check_job_ranks(const std::vector<std::string>& paths, const std::vector<std::vector<RankIdentity>>& ranks,
                       const std::string& alone) {
  struct Who {
    const RankIdentity* id;
    size_t store;
  };
  std::vector<Who> who;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (ranks[i].empty() && paths.size() > 1) {
      return Status(StatusCode::kInvalidArgument,
                    paths[i] + " names no rank: it was not recorded under an MPI launcher (no ranks row, no OMPI_COMM_WORLD_RANK or PMI_RANK in "
                               "run_env); " + alone);
    }
    for (const RankIdentity& id : ranks[i]) who.push_back({&id, i});
  }
  for (size_t ai = 0; ai < who.size(); ++ai) {
    for (size_t bi = 0; bi < ai; ++bi) {
      const RankIdentity &a = *who[ai].id, &b = *who[bi].id;
      const std::string &pa = paths[who[ai].store], &pb = paths[who[bi].store];
      if (!a.job.empty() && !b.job.empty() && a.job != b.job) {
        return Status(StatusCode::kInvalidArgument, pb + " is rank " + std::to_string(b.rank) + " of job " + b.job + " but " + pa + " is rank " +
                                                        std::to_string(a.rank) + " of job " + a.job +
                                                        ": the stores come from different jobs; give the stores of one run (run.rank*.tcdb)");
      }
      if (a.world_size > 0 && b.world_size > 0 && a.world_size != b.world_size) {
        return Status(StatusCode::kInvalidArgument, pb + " says its job has " + std::to_string(b.world_size) + " ranks but " + pa + " says " +
                                                        std::to_string(a.world_size) +
                                                        ": the stores come from different jobs; give the stores of one run (run.rank*.tcdb)");
      }
      if (a.rank == b.rank) {
        return Status(StatusCode::kInvalidArgument, (who[ai].store == who[bi].store ? pa + " holds rank " + std::to_string(a.rank) + " twice"
                                                                                  : pb + " and " + pa + " are both rank " + std::to_string(a.rank) + of_job(a)) +
                                                        ": give each rank's store once");
      }
    }
  }
  return Status::Ok();
}

std::string rank_set(const std::vector<int64_t>& ranks, size_t of) {
  if (ranks.size() == of && of > 1) return "all " + std::to_string(of) + " ranks";
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return "ranks " + s;
}

StatusOr<JobReport> analyze_job(const std::vector<std::string>& paths, const Options& options) {
  if (paths.empty()) return Status(StatusCode::kInvalidArgument, "no stores given");
  std::vector<std::optional<StatusOr<Loaded>>> loaded(paths.size());
  {
    // SQLite reads and the per-store report are independent: one connection per thread.
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < paths.size();) loaded[i].emplace(load(paths[i], options, i));
    };
    size_t n = std::min<size_t>(paths.size(), std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
    std::vector<std::thread> pool;
    for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  for (auto& l : loaded)
    if (!l->ok()) return l->status();

  JobReport job;
  job.stores = paths;
  // Which rank is which, and whether they belong together.
  {
    std::vector<std::vector<RankIdentity>> ranks;
    for (auto& l : loaded) ranks.push_back((*l)->ranks);
    TC_RETURN_IF_ERROR(check_job_ranks(paths, ranks, "analyse it on its own"));
  }
  struct Who {
    RankIdentity id;
    size_t store;
    size_t slot;
  };
  std::vector<Who> who;
  for (size_t i = 0; i < paths.size(); ++i) {
    Loaded& l = **loaded[i];
    if (l.ranks.empty()) {  // one store that names no rank: rank 0 of a world of 1
      l.data[0].id.rank = 0;
      l.data[0].id.world_size = 1;
      l.data[0].id.host = l.report.run.host;
      who.push_back({l.data[0].id, i, 0});
      continue;
    }
    for (size_t k = 0; k < l.data.size(); ++k) who.push_back({l.data[k].id, i, k});
  }
  std::sort(who.begin(), who.end(), [](const Who& a, const Who& b) { return a.id.rank < b.id.rank; });
  std::vector<RankData> data;
  job.store_ranks.assign(paths.size(), {});
  for (const Who& w : who) {
    Loaded& l = **loaded[w.store];
    RankData d = std::move(l.data[w.slot]);
    d.id = w.id;
    RankSummary s;
    s.rank = w.id.rank;
    s.store = paths[w.store];
    s.host = w.id.host.empty() ? l.report.run.host : w.id.host;
    s.pid = l.pids[w.slot];
    s.complete = l.report.run.complete;
    s.wall_s = l.report.run.wall_s;
    s.steps = static_cast<int64_t>(d.steps.size());
    if (s.steps == 0 && l.data.size() == 1) s.steps = l.report.summary.steps;  // steps from a step range
    for (const auto& c : d.compilations) {
      // torch.compile's backward is part of its frame's compilation: its time, not one more of them.
      const bool counted = c.trigger != "backward";
      s.compilations += counted;
      s.recompilations += counted && c.reason != "first";
      s.compile_s += static_cast<double>(c.dur) / 1e9;
    }
    s.explicit_evaluations = static_cast<int64_t>(d.evaluations.size());
    for (const auto& e : d.executions) s.execute_s += static_cast<double>(e.dur) / 1e9;
    if (d.executions.empty() && l.data.size() == 1) {  // a framework's rank: as its store's report measured it, or not at all
      const auto& sum = l.report.summary;
      s.execute_source = sum.execute_source.empty() ? "not measured: " + sum.execute_unmeasured : sum.execute_source;
      s.execute_s = sum.execute_s;
    } else if (d.executions.empty() && l.report.summary.execute_source != "executions") {
      s.execute_source = "not measured: one store of several framework ranks";  // its report's steps are every rank's
    }
    s.collectives = static_cast<int64_t>(d.collectives.size());
    s.clock_offset_ns = w.id.clock_offset_ns;
    s.clock_error_ns = w.id.clock_error_ns;
    job.ranks.push_back(s);
    job.store_ranks[w.store].push_back(w.id.rank);
    if (job.job.empty()) job.job = w.id.job;
    job.world_size = std::max(job.world_size, w.id.world_size);
    data.push_back(std::move(d));
  }
  for (auto& l : loaded) job.reports.push_back(std::move((*l)->report));
  job.world_size = std::max<int64_t>(job.world_size, static_cast<int64_t>(job.ranks.size()));

  if (static_cast<int64_t>(job.ranks.size()) < job.world_size) {
    std::vector<int64_t> missing;
    size_t k = 0;
    for (int64_t r = 0; r < job.world_size; ++r) {
      while (k < job.ranks.size() && job.ranks[k].rank < r) ++k;
      if (k == job.ranks.size() || job.ranks[k].rank != r) missing.push_back(r);
    }
    job.notes.push_back(rank_set(missing, 0) + " of the job's " + std::to_string(job.world_size) + " " +
                        (missing.size() == 1 ? "is" : "are") + " missing: the waits and stragglers are over the " +
                        std::to_string(job.ranks.size()) + " ranks given");
  }
  for (const RankSummary& s : job.ranks) {
    if (s.clock_error_ns > 1'000'000) {
      job.notes.push_back("rank " + std::to_string(s.rank) + "'s clock offset to rank 0 is known to +-" + format_seconds(static_cast<double>(s.clock_error_ns) / 1e9) +
                          ": waits shorter than that are uncertain");
    }
  }

  merge_rank_findings(job);
  add_distributed_findings(data, job);
  std::stable_sort(job.findings.begin(), job.findings.end(), [](const JobFinding& a, const JobFinding& b) {
    if (a.finding.estimated_saving_s != b.finding.estimated_saving_s) return a.finding.estimated_saving_s > b.finding.estimated_saving_s;
    return static_cast<int>(a.finding.severity) > static_cast<int>(b.finding.severity);
  });
  return job;
}

bool recorded_nothing(const JobReport& job) {
  for (const Report& r : job.reports)
    if (!recorded_nothing(r)) return false;
  return true;
}

std::string job_json(const JobReport& job) {
  Json j;
  j.begin_object().field("schema", "tc-analyze-job/1");
  j.key("job");
  if (job.job.empty()) j.null();
  else j.value(job.job);
  j.field("world_size", job.world_size);
  j.key("ranks").begin_array();
  for (const RankSummary& s : job.ranks) {
    j.begin_object().field("rank", s.rank).field("store", s.store).field("host", s.host).field("pid", s.pid).field("complete", s.complete);
    j.field("wall_s", s.wall_s).field("steps", s.steps).field("compilations", s.compilations).field("recompilations", s.recompilations);
    j.field("explicit_evaluations", s.explicit_evaluations).field("collectives", s.collectives).field("collective_wait_s", s.collective_wait_s);
    j.field("compile_s", s.compile_s).field("execute_s", s.execute_s).field("execute_source", s.execute_source).field("clock_offset_ns", s.clock_offset_ns);
    j.field("clock_error_ns", s.clock_error_ns).end_object();
  }
  j.end_array();
  int64_t stragglers = 0;
  for (const auto& f : job.findings) stragglers += f.finding.kind == "distributed.straggler";
  j.key("summary").begin_object().field("ranks", static_cast<int64_t>(job.ranks.size())).field("collectives", job.collectives);
  j.field("collective_wait_s", job.collective_wait_s).field("straggler_wait_s", job.straggler_wait_s).field("stragglers", stragglers);
  j.field("findings", static_cast<int64_t>(job.findings.size())).end_object();
  j.key("findings").begin_array();
  for (const JobFinding& jf : job.findings) {
    const Finding& f = jf.finding;
    j.begin_object().field("kind", f.kind).field("severity", severity_name(f.severity)).field("title", f.title);
    j.key("ranks").begin_array();
    for (int64_t r : jf.ranks) j.value(r);
    j.end_array().key("evidence_rank");
    if (jf.evidence_rank) j.value(*jf.evidence_rank);
    else j.null();
    j.key("evidence").raw(f.evidence_json);
    j.field("suggestion", f.suggestion).field("estimated_saving_s", f.estimated_saving_s).end_object();
  }
  j.end_array();
  j.key("notes").begin_array();
  for (size_t i = 0; i < job.reports.size(); ++i) {
    if (job.reports[i].invalid_utf8_names > 0) j.value(job.stores[i] + ": " + invalid_utf8_note(job.reports[i].invalid_utf8_names));
  }
  for (const auto& n : job.notes) j.value(n);
  j.end_array().end_object();
  return j.str();
}

}  // namespace tc::analysis
