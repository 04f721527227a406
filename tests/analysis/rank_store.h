// Test support: the stores of a synthetic data-parallel job, written row by
// row with tc::store::Writer, so that every wait a test asserts follows from
// the plan below.
//
// Each step s of every rank, on the aligned clock (rank 0's):
//   phase A: [its events of phase A] execute 10 ms (trigger collective) -> all_reduce_mean seq 2s+1 (step s)
//   the collective ends 1 ms after the last arrival, for everyone
//   phase B: mark_step (step s): [its compile events of phase B] execute 2 ms -> all_reduce_mean seq 2s+2 (step s+1)
//   that one ends 0.5 ms after the last arrival; the next step starts there.
// Step 0 compiles the two first graphs (20 ms each, on every rank alike).
// A store's ts are the aligned ts minus its clock offset.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tc/store/writer.h"

namespace tc::test {

constexpr int64_t kRankMs = 1'000'000;

struct RankPlan {
  int64_t rank = 0;
  int64_t world_size = 2;
  std::string job = "job-7";
  int64_t clock_offset_ns = 0;
  bool dist = true;      // a ranks row (tc::dist::init); else only the launcher's run_env
  bool launcher = true;  // the launcher's variables in run_env
};

struct RankEvent {
  enum What { kCompile, kEvaluate, kSlowExecute, kHost } what = kHost;
  int64_t rank = 0, step = 0;
  int64_t ns = 0;
  bool phase_b = false;        // kCompile: in mark_step (trigger mark_step) instead of before the first collective
  std::string signature;       // kCompile
  std::string input = "tokens";
  int64_t dim = 1, old_value = 12, new_value = 20;
  int64_t line = 95;           // kEvaluate: item() at /src/train.cpp:line
};

// Runs SQL on a store written here, e.g. to damage its ranks row.
inline void edit_store(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// Writes one store per plan at dir/run.rankR.tcdb and returns their paths (in plan order).
inline std::vector<std::string> write_job(const std::string& dir, const std::vector<RankPlan>& plans, int64_t steps,
                                          const std::vector<RankEvent>& events, bool every_step_item = false) {
  namespace schema = tc::store::schema;
  const int64_t ms = kRankMs;
  struct Out {
    std::unique_ptr<tc::store::Writer> w;
    int64_t graph = 0, execution = 0;
  };
  std::vector<Out> out(plans.size());
  std::vector<std::string> paths;
  auto ok = [](const tc::Status& s) { EXPECT_TRUE(s.ok()) << s.message(); };
  for (size_t i = 0; i < plans.size(); ++i) {
    paths.push_back(dir + "/run.rank" + std::to_string(plans[i].rank) + ".tcdb");
    auto w = tc::store::Writer::create(paths.back(), {.overwrite = true});
    EXPECT_TRUE(w.ok()) << w.status().message();
    out[i].w = std::move(*w);
    auto& s = *out[i].w;
    ok(s.row(schema::locations).i64(1).text("mark_step").text("/src/train.cpp").text("main").i64(80).insert());
    ok(s.row(schema::locations).i64(2).text("item").text("/src/train.cpp").text("main").i64(88).insert());
    ok(s.row(schema::locations).i64(3).text("all_reduce_mean").text("/src/train.cpp").text("main").i64(70).insert());
    ok(s.row(schema::locations).i64(4).text("item").text("/src/train.cpp").text("main").i64(95).insert());
    ok(s.row(schema::processes).i64(1).i64(1000 + plans[i].rank).text("train").i64(-plans[i].clock_offset_ns).null().insert());
    ok(s.row(schema::threads).i64(1).i64(1).i64(1000 + plans[i].rank).null().insert());
    if (plans[i].dist) {
      ok(s.row(schema::ranks).null().i64(1).i64(plans[i].rank).i64(plans[i].world_size).text("host" + std::to_string(plans[i].rank))
             .text(plans[i].job).i64(plans[i].clock_offset_ns).i64(2000).insert());
    }
    if (plans[i].launcher) {
      ok(s.row(schema::run_env).null().text("OMPI_COMM_WORLD_RANK").text(std::to_string(plans[i].rank)).insert());
      ok(s.row(schema::run_env).null().text("OMPI_COMM_WORLD_SIZE").text(std::to_string(plans[i].world_size)).insert());
      ok(s.row(schema::run_env).null().text("PMIX_NAMESPACE").text(plans[i].job).insert());
    }
  }
  auto local = [&](size_t i, int64_t aligned) { return aligned - plans[i].clock_offset_ns; };
  auto compile = [&](size_t i, int64_t ts, int64_t dur, int64_t step, const std::string& sig, const std::string& reason, const char* trigger) {
    int64_t g = ++out[i].graph;
    auto r = out[i].w->row(schema::compilations);
    r.null().i64(1).i64(local(i, ts)).i64(dur).i64(g).i64(step).text(sig).text("erased").text(reason).text(trigger).i64(3);
    ok(r.i64(100).i64(60).i64(8).i64(dur / 10).i64(dur / 10).i64(dur / 2).text("built").null().text("/tmp/g.cpp").insert());
    return g;
  };
  auto execute = [&](size_t i, int64_t ts, int64_t dur, int64_t graph, int64_t step, const char* trigger) {
    ok(out[i].w->row(schema::executions).null().i64(1).i64(local(i, ts)).i64(dur).i64(graph).i64(step).text(trigger).i64(60).i64(++out[i].execution).null().insert());
  };
  int64_t start = 10 * ms;
  int64_t seq = 0;
  std::vector<int64_t> at(plans.size());
  for (int64_t step = 0; step < steps; ++step) {
    // Phase A.
    for (size_t i = 0; i < plans.size(); ++i) {
      int64_t t = start;
      int64_t exec = 10 * ms;
      if (every_step_item) {
        ok(out[i].w->row(schema::explicit_evaluations).null().i64(1).i64(local(i, t)).i64(ms).i64(step).text("item").i64(2).i64(5).i64(0).insert());
        t += ms;
      }
      if (step == 0) {
        compile(i, t, 20 * ms, 0, "sigA", "first", "collective");
        t += 20 * ms;
      }
      for (const RankEvent& e : events) {
        if (e.rank != plans[i].rank || e.step != step || e.phase_b) continue;
        if (e.what == RankEvent::kCompile) {
          int64_t g = compile(i, t, e.ns, step, e.signature, "shape_change", "collective");
          ok(out[i].w->row(schema::compilation_inputs).null().i64(1).i64(g).text(e.input).i64(e.dim).i64(e.old_value).i64(e.new_value).insert());
          t += e.ns;
        } else if (e.what == RankEvent::kEvaluate) {
          ok(out[i].w->row(schema::explicit_evaluations).null().i64(1).i64(local(i, t)).i64(e.ns).i64(step).text("item").i64(e.line == 88 ? 2 : 4)
                 .i64(5).i64(0).insert());
          execute(i, t + e.ns / 4, e.ns / 2, 1, step, "explicit_evaluation");
          t += e.ns;
        } else if (e.what == RankEvent::kSlowExecute) {
          exec += e.ns;
        } else {
          t += e.ns;
        }
      }
      execute(i, t, exec, 1, step, "collective");
      at[i] = t + exec;
    }
    int64_t last = *std::max_element(at.begin(), at.end());
    for (size_t i = 0; i < plans.size(); ++i) {
      ok(out[i].w->row(schema::collectives).null().i64(1).i64(local(i, at[i])).i64(last + ms - at[i]).i64(step).i64(seq + 1).text("all_reduce_mean")
             .i64(848).i64(4).i64(3).insert());
    }
    ++seq;
    start = last + ms;
    // Phase B: mark_step.
    for (size_t i = 0; i < plans.size(); ++i) {
      int64_t t = start;
      if (step == 0) {
        compile(i, t, 20 * ms, 0, "sigB", "first", "mark_step");
        t += 20 * ms;
      }
      for (const RankEvent& e : events) {
        if (e.rank != plans[i].rank || e.step != step || !e.phase_b || e.what != RankEvent::kCompile) continue;
        int64_t g = compile(i, t, e.ns, step, e.signature, "shape_change", "mark_step");
        ok(out[i].w->row(schema::compilation_inputs).null().i64(1).i64(g).text(e.input).i64(e.dim).i64(e.old_value).i64(e.new_value).insert());
        t += e.ns;
      }
      execute(i, t, 2 * ms, 2, step, "mark_step");
      t += 2 * ms;
      ok(out[i].w->row(schema::steps).null().i64(1).i64(local(i, start)).i64(t - start).i64(step).i64(1).insert());
      at[i] = t;
    }
    last = *std::max_element(at.begin(), at.end());
    for (size_t i = 0; i < plans.size(); ++i) {
      ok(out[i].w->row(schema::collectives).null().i64(1).i64(local(i, at[i])).i64(last + ms / 2 - at[i]).i64(step + 1).i64(seq + 1)
             .text("all_reduce_mean").i64(4).i64(1).i64(3).insert());
    }
    ++seq;
    start = last + ms / 2;
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    auto r = out[i].w->row(schema::run);
    r.i64(1).text("0.1.0").text("[\"./train\"]").text("/work").text("host" + std::to_string(plans[i].rank)).text("tc-profile").text("monotonic");
    ok(r.i64(local(i, 0)).i64(local(i, start + ms)).i64(0).i64(0).null().i64(1).i64(0).i64(0).text("none").null().text("tc").null().insert());
    ok(out[i].w->finalize());
  }
  return paths;
}

}  // namespace tc::test
