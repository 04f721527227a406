// The analysis library on stores written here, row by row, so every number
// a finding reports follows from rows the test chose.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "../../profiler/analysis/src/shape_plan.h"
#include "support/downgrade.h"
#include "support/json.h"
#include "support/process.h"
#include "tc/analysis/diff.h"
#include "tc/analysis/export.h"
#include "tc/analysis/fail_on.h"
#include "tc/analysis/format.h"
#include "tc/analysis/kernels.h"
#include "tc/analysis/report.h"
#include "tc/store/json_text.h"
#include "tc/store/writer.h"

namespace ta = tc::analysis;
namespace schema = tc::store::schema;
using tc::test::TempDir;

namespace {

constexpr int64_t kMs = 1'000'000;  // ns

// Writes a run the way the collector would, with helpers for each table.
class StoreBuilder {
 public:
  explicit StoreBuilder(const std::string& path) : path_(path) {
    auto w = tc::store::Writer::create(path, {.overwrite = true});
    EXPECT_TRUE(w.ok()) << w.status().message();
    w_ = std::move(*w);
  }
  void run(int64_t end_ts, bool complete = true, std::optional<int> code = 0, std::optional<int> sig = std::nullopt,
           const std::string& command_json = "[\"./train\",\"--batch\",\"32\"]", int64_t dropped = 0,
           std::optional<std::string> step_range = std::nullopt) {
    auto r = w_->row(schema::run);
    r.i64(1).text("0.1.0").text(command_json).text("/work").text("host").text("tc-profile").text("monotonic");
    r.i64(0).i64(end_ts).i64(0);
    if (code) r.i64(*code); else r.null();
    if (sig) r.i64(*sig); else r.null();
    r.i64(complete).i64(0).i64(dropped).text("none");
    if (step_range) r.text(*step_range); else r.null();
    r.text("tc");
    r.null();
    ok(r.insert());
  }
  void location(int64_t id, const std::string& name, const std::string& file, int64_t line) {
    ok(w_->row(schema::locations).i64(id).text(name).text(file).text("main").i64(line).insert());
  }
  void step(int64_t step, int64_t ts, int64_t dur) { ok(w_->row(schema::steps).null().i64(1).i64(ts).i64(dur).i64(step).i64(1).insert()); }
  void compilation(int64_t graph, int64_t step, int64_t ts, int64_t dur, const std::string& reason, int64_t utid = 1,
                   const std::string& trigger = "mark_step") {
    auto r = w_->row(schema::compilations);
    r.null().i64(utid).i64(ts).i64(dur).i64(graph).i64(step).text("sig" + std::to_string(graph)).text("erased").text(reason).text(trigger).i64(1);
    r.i64(100).i64(60).i64(8).i64(dur / 10).i64(dur / 10).i64(dur / 2).text("built").null().text("/tmp/g.cpp");
    ok(r.insert());
  }
  void shape_input(int64_t graph, const std::string& input, int64_t dim, int64_t old_value, int64_t new_value, int64_t utid = 1) {
    ok(w_->row(schema::compilation_inputs).null().i64(utid).i64(graph).text(input).i64(dim).i64(old_value).i64(new_value).insert());
  }
  void execution(int64_t graph, int64_t step, int64_t ts, int64_t dur, int64_t utid = 1, int64_t dynamic_size = 0) {
    auto r = w_->row(schema::executions);
    r.null().i64(utid).i64(ts).i64(dur).i64(graph).i64(step).text("mark_step").i64(60).i64(++executions_);
    if (dynamic_size) r.i64(dynamic_size); else r.null();
    ok(r.insert());
  }
  // A compilation_inputs row whose dim the compilation made symbolic (TC_DYNAMIC).
  void dynamic_input(int64_t graph, const std::string& input, int64_t dim, int64_t old_value, int64_t new_value) {
    ok(w_->row(schema::compilation_inputs).null().i64(1).i64(graph).text(input).i64(dim).i64(old_value).i64(new_value).i64(1).insert());
  }
  void explicit_eval(int64_t step, int64_t ts, int64_t dur, const std::string& kind, int64_t loc) {
    ok(w_->row(schema::explicit_evaluations).null().i64(1).i64(ts).i64(dur).i64(step).text(kind).i64(loc).i64(12).i64(0).insert());
  }
  // A JAX or PyTorch/XLA read-back (`framework`), as their importers write it.
  void framework_eval(int64_t step, int64_t ts, int64_t dur, int64_t loc, const std::string& framework, const std::string& what) {
    ok(w_->row(schema::explicit_evaluations).null().i64(1).i64(ts).i64(dur).i64(step).text("item").i64(loc).i64(0).i64(0).text(framework).text(what).insert());
  }
  void memory_plan(int64_t graph, int64_t peak, int64_t batch_bytes, int64_t batch, int64_t capacity) {
    auto r = w_->row(schema::memory_plans);
    r.null().i64(1).i64(graph).i64(peak).i64(peak - batch_bytes).i64(0).i64(0).i64(batch_bytes).i64(0).i64(0).i64(batch_bytes).i64(batch).i64(capacity);
    ok(r.insert());
  }
  void oom(int64_t ts, int64_t requested, int64_t live, int64_t capacity, int64_t batch) {
    auto r = w_->row(schema::out_of_memory);
    r.null().i64(1).i64(ts).i64(3).i64(requested).i64(live).i64(capacity).i64(live / 2).i64(0).i64(0).i64(live - live / 2).i64(0).i64(0).i64(batch);
    ok(r.insert());
  }
  void process(int64_t upid, int64_t pid) { ok(w_->row(schema::processes).i64(upid).i64(pid).text("train").i64(0).null().insert()); }
  void thread(int64_t utid, int64_t upid) { ok(w_->row(schema::threads).i64(utid).i64(upid).i64(utid * 10).null().insert()); }
  void named_thread(int64_t utid, int64_t upid, const std::string& name) {
    ok(w_->row(schema::threads).i64(utid).i64(upid).i64(utid * 10).text(name).insert());
  }
  void range(int64_t utid, int64_t ts, int64_t dur, int64_t loc) {
    ok(w_->row(schema::ranges).null().i64(utid).i64(ts).i64(dur).i64(0).i64(loc).i64(0).insert());
  }
  // An NVTX site: its location (file 'nvtx', function = the domain) and its nvtx_sites row.
  void nvtx_location(int64_t id, const std::string& message, const std::string& domain = "") {
    ok(w_->row(schema::locations).i64(id).text(message).text("nvtx").text(domain).i64(0).insert());
    auto r = w_->row(schema::nvtx_sites);
    r.null().i64(1).i64(id);
    if (domain.empty()) r.null(); else r.text(domain);
    ok(r.null().null().text("ascii").insert());
  }
  void nested_range(int64_t utid, int64_t ts, int64_t dur, int64_t depth, int64_t loc) {
    ok(w_->row(schema::ranges).null().i64(utid).i64(ts).i64(dur).i64(depth).i64(loc).i64(0).insert());
  }
  void instant(int64_t utid, int64_t ts, int64_t loc) { ok(w_->row(schema::instants).null().i64(utid).i64(ts).i64(loc).i64(0).insert()); }
  void range_start(int64_t utid, int64_t ts, int64_t range_id, int64_t loc) {
    ok(w_->row(schema::nvtx_range_starts).null().i64(utid).i64(ts).i64(range_id).i64(loc).i64(0).insert());
  }
  void range_end(int64_t utid, int64_t ts, int64_t range_id) { ok(w_->row(schema::nvtx_range_ends).null().i64(utid).i64(ts).i64(range_id).insert()); }
  void nvtx_thread_name(int64_t utid, int64_t tid, const std::string& name) {
    ok(w_->row(schema::nvtx_thread_names).null().i64(utid).i64(tid).text(name).insert());
  }
  void kernel(int64_t graph, int64_t k, const std::string& kind, const std::string& ops, int64_t bytes, int64_t flops, const std::string& sites) {
    ok(w_->row(schema::kernels).null().i64(1).i64(graph).i64(k).text(kind).text(ops).text("8x8").i64(bytes / 2).i64(bytes - bytes / 2)
           .i64(flops).text(sites).insert());
  }
  void kernel_run(int64_t execution, int64_t graph, int64_t k, int64_t ts, int64_t dur) {
    ok(w_->row(schema::kernel_executions).null().i64(1).i64(execution).i64(graph).i64(k).i64(ts).i64(dur).insert());
  }
  void ceilings(double gflops, double gbps) {
    ok(w_->row(schema::ceilings).null().i64(1).text("cpu").f64(gflops).f64(gbps).text("measured").text("avx2+fma").text("avx2").i64(2).insert());
  }
  void finish_without_analysis() { ok(w_->finalize()); }
  // Finalizes, then (version < kSchemaVersion) turns the store into one of that older schema version.
  ta::Report finish(int version = tc::store::kSchemaVersion, const ta::Options& options = {}) {
    ok(w_->finalize());
    if (version < tc::store::kSchemaVersion) {
      EXPECT_EQ(tc::test::downgrade_store(path_, version), "");
    }
    auto r = tc::store::Reader::open(path_);
    EXPECT_TRUE(r.ok()) << r.status().message();
    auto rep = ta::analyze(*r, options);
    EXPECT_TRUE(rep.ok()) << rep.status().message();
    return rep.ok() ? *rep : ta::Report{};
  }

 private:
  static void ok(const tc::Status& s) { ASSERT_TRUE(s.ok()) << s.message(); }
  std::string path_;
  std::unique_ptr<tc::store::Writer> w_;
  int64_t executions_ = 0;
};

const ta::Finding* find(const ta::Report& r, const std::string& kind) {
  for (const auto& f : r.findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

// A run whose input_ids dim 1 takes the lengths in `lengths`, one per step;
// each new length compiles for `compile_ms`, a step executes in 1 ms + 0.02 ms per token.
void dynamic_padding_run(StoreBuilder& b, const std::vector<int64_t>& lengths, int64_t compile_ms) {
  std::map<int64_t, int64_t> graph_of;
  int64_t ts = 0, prev = -1;
  for (size_t s = 0; s < lengths.size(); ++s) {
    int64_t len = lengths[s];
    auto it = graph_of.find(len);
    int64_t g;
    if (it == graph_of.end()) {
      g = static_cast<int64_t>(graph_of.size()) + 1;
      graph_of[len] = g;
      b.compilation(g, static_cast<int64_t>(s), ts, compile_ms * kMs, g == 1 ? "first" : "shape_change");
      if (g > 1) b.shape_input(g, "input_ids", 1, prev, len);
      ts += compile_ms * kMs;
    } else {
      g = it->second;
    }
    int64_t exec = kMs + len * kMs / 50;
    b.execution(g, static_cast<int64_t>(s), ts, exec);
    b.step(static_cast<int64_t>(s), ts, exec);
    ts += exec;
    prev = len;
  }
  b.run(ts);
}

TEST(ShapePlan, PadsToTheLargestAndBucketsWhenCompilesAreCheap) {
  // 8 lengths 16..128, 50 steps each; compiling costs 0.5 s, a token 20 us.
  std::vector<ta::DimValue> v;
  for (int64_t len = 16; len <= 128; len += 16) {
    v.push_back({len, 50, 1, 0.5, 50 * (0.001 + static_cast<double>(len) * 2e-5), 0});
  }
  ta::ShapePlan p = ta::plan_for(v);
  EXPECT_EQ(p.pad_to, 128);
  EXPECT_NEAR(p.exec_b, 2e-5, 1e-9) << "the fitted per-token time";
  EXPECT_NEAR(p.exec_a, 0.001, 1e-9);
  EXPECT_NEAR(p.compile_per_graph_s, 0.5, 1e-12);
  // Padding everything to 128 saves 7 compilations (3.5 s) and costs padded execution.
  double padded_exec = 400 * (0.001 + 128 * 2e-5);
  EXPECT_NEAR(p.pad_total_s, 0.5 + padded_exec, 1e-9);
  EXPECT_NEAR(p.pad_saving_s, p.observed_total_s - p.pad_total_s, 1e-12);
  EXPECT_GT(p.pad_saving_s, 3.0);
  // The buckets are at least as good as padding (padding is one of the choices), end at 128, and are increasing multiples of 8.
  EXPECT_LE(p.bucket_total_s, p.pad_total_s + 1e-12);
  ASSERT_FALSE(p.buckets.empty());
  EXPECT_EQ(p.buckets.back(), 128);
  for (size_t i = 0; i < p.buckets.size(); ++i) {
    EXPECT_EQ(p.buckets[i] % 8, 0);
    if (i) {
      EXPECT_GT(p.buckets[i], p.buckets[i - 1]);
    }
  }
  EXPECT_FALSE(p.short_batch);
}

TEST(ShapePlan, ExpensiveExecutionMakesMoreBuckets) {
  std::vector<ta::DimValue> v;
  for (int64_t len = 32; len <= 512; len += 32) v.push_back({len, 100, 1, 0.01, 100 * (static_cast<double>(len) * 1e-3), 0});
  ta::ShapePlan p = ta::plan_for(v);
  // Compiling is nearly free and padding costs 1 ms per token: one bucket per length.
  EXPECT_EQ(p.buckets.size(), v.size());
  EXPECT_NEAR(p.bucket_waste, 0.0, 1e-12);
  EXPECT_GT(p.bucket_saving_s, p.pad_saving_s);
}

TEST(ShapePlan, ASmallRareLastBatchIsAShortBatch) {
  std::vector<ta::DimValue> v = {{20, 3, 1, 0.8, 0.003, 0}, {32, 97, 1, 0.8, 0.097, 0}};
  ta::ShapePlan p = ta::plan_for(v);
  EXPECT_TRUE(p.short_batch);
  EXPECT_EQ(p.common_value, 32);
  EXPECT_EQ(p.short_value, 20);
  EXPECT_NEAR(p.short_saving_s, 0.8, 1e-12);
}

// The bucket search (a lower hull since #27) finds the cost of the search
// over every split: random runs, with repeated sizes after rounding to 8 and
// values that never executed, against the quadratic dynamic program.
TEST(ShapePlan, BucketsCostWhatTheSearchOverEverySplitFinds) {
  uint64_t seed = 12345;
  auto next = [&](int64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((seed >> 33) % static_cast<uint64_t>(n));
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<ta::DimValue> v;
    int64_t value = 1 + next(8);
    const int64_t n = 2 + next(60);
    for (int64_t k = 0; k < n; ++k) {
      value += 1 + next(round % 2 ? 4 : 40);
      const int64_t steps = next(5) == 0 ? 0 : 1 + next(200);
      v.push_back({value, steps, 1, 0.05 + 0.01 * static_cast<double>(next(100)),
                   static_cast<double>(steps) * (1e-3 + static_cast<double>(value) * 1e-5 * static_cast<double>(1 + next(3))), 0});
    }
    ta::ShapePlan p = ta::plan_for(v);
    auto t = [&](int64_t cap) { return p.exec_a + p.exec_b * static_cast<double>(cap); };
    std::vector<double> best(v.size() + 1, 1e300);
    best[0] = 0;
    for (size_t j = 1; j <= v.size(); ++j) {
      const int64_t cap = (v[j - 1].value + 7) / 8 * 8;
      double exec = 0;
      for (size_t i = j; i-- > 0;) {
        exec += static_cast<double>(v[i].steps) * t(cap);
        best[j] = std::min(best[j], best[i] + p.compile_per_graph_s + exec);
      }
    }
    ASSERT_NEAR(p.bucket_total_s, best[v.size()], 1e-9 * (1 + best[v.size()])) << "round " << round;
    // The buckets it names cost what it says: each value at the first bucket at or above it.
    ASSERT_FALSE(p.buckets.empty());
    EXPECT_EQ(p.buckets.back(), (v.back().value + 7) / 8 * 8);
    double cost = p.compile_per_graph_s * static_cast<double>(p.buckets.size());
    for (const ta::DimValue& d : v) {
      auto b = std::lower_bound(p.buckets.begin(), p.buckets.end(), d.value);
      ASSERT_NE(b, p.buckets.end());
      cost += static_cast<double>(d.steps) * t(*b);
    }
    EXPECT_LE(cost, p.bucket_total_s + 1e-9 * (1 + cost)) << "round " << round;
  }
}

TEST(Analysis, DynamicPaddingGivesAComputedShapeChangeFinding) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  std::vector<int64_t> lengths;
  for (int i = 0; i < 60; ++i) lengths.push_back(12 + (i * 37) % 176);  // many lengths in 12..187
  dynamic_padding_run(b, lengths, 1000);
  ta::Report r = b.finish();
  EXPECT_EQ(r.summary.steps, 60);
  int64_t distinct = static_cast<int64_t>(std::set<int64_t>(lengths.begin(), lengths.end()).size());
  EXPECT_EQ(r.summary.compilations, distinct);
  EXPECT_EQ(r.summary.recompilations, distinct - 1);
  const ta::Finding* f = find(r, "recompilation.shape_change");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("input_ids dim 1 took " + std::to_string(distinct) + " values"), std::string::npos) << f->title;
  int64_t hi = *std::max_element(lengths.begin(), lengths.end());
  EXPECT_NE(f->suggestion.find("Pad input_ids dim 1 to " + std::to_string((hi + 7) / 8 * 8)), std::string::npos) << f->suggestion;
  // A compilation (1 s) costs more than padding any step (< 4 ms): one size is best, so no buckets are offered.
  EXPECT_EQ(f->suggestion.find("bucket as {"), std::string::npos) << f->suggestion;
  EXPECT_GT(f->estimated_saving_s, 0.5 * static_cast<double>(distinct - 1)) << "most of the compile time is saved";
  tc::test::JsonValue e = tc::test::parse_json(f->evidence_json);
  EXPECT_EQ(e["input"].s, "input_ids");
  EXPECT_EQ(e["dim"].n, 1);
  double steps = 0;
  for (const auto& v : e["values"].a) steps += v["steps"].n;
  EXPECT_EQ(steps, 60) << "every step is counted under its length";
}

// tc's automatic dynamic: the dim became symbolic at the third compilation,
// and later lengths ran on that build without compiling (the executions'
// dynamic_size). Every length the steps ran is a value of the finding, each
// step under its own, and the pad plan covers the largest; before v8 the
// finding saw only the three lengths that compiled.
TEST(Analysis, TcsDynamicGraphCountsEachStepUnderTheSizeItRan) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  const std::vector<int64_t> lengths = {16, 24, 32, 40, 48, 40, 56, 16, 64};
  int64_t ts = 0;
  for (size_t s = 0; s < lengths.size(); ++s) {
    const int64_t len = lengths[s], step = static_cast<int64_t>(s);
    int64_t graph = len == 16 ? 1 : len == 24 ? 2 : 3;
    if (s < 3) {
      b.compilation(graph, step, ts, 500 * kMs, s == 0 ? "first" : "shape_change");
      if (s == 1) b.shape_input(2, "input_ids", 1, 16, 24);
      if (s == 2) b.dynamic_input(3, "input_ids", 1, 24, 32);
      ts += 500 * kMs;
    }
    const int64_t exec = kMs + len * kMs / 50;
    b.execution(graph, step, ts, exec, 1, graph == 3 ? len : 0);
    b.step(step, ts, exec);
    ts += exec;
  }
  b.run(ts);
  ta::Report r = b.finish();
  const ta::Finding* f = find(r, "recompilation.shape_change");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("input_ids dim 1 took 7 values (16..64)"), std::string::npos) << f->title;
  EXPECT_NE(f->suggestion.find("to 64"), std::string::npos) << f->suggestion;
  tc::test::JsonValue e = tc::test::parse_json(f->evidence_json);
  std::map<int64_t, int64_t> steps;
  for (const auto& v : e["values"].a) steps[static_cast<int64_t>(v["value"].n)] = static_cast<int64_t>(v["steps"].n);
  EXPECT_EQ(steps, (std::map<int64_t, int64_t>{{16, 2}, {24, 1}, {32, 1}, {40, 2}, {48, 1}, {56, 1}, {64, 1}}));
  EXPECT_EQ(e["steps_unrecorded"].n, 0);
  // No length ran both static and dynamic: the dynamic graph's time is fitted over its 5 lengths (1 ms + 20 us a
  // token, as the static graphs') and read at theirs.
  EXPECT_NE(f->suggestion.find("the dynamic graph's step 1.00x the static graphs' (built code; its time fitted over the 5 sizes it ran, "
                               "read at the static graphs' sizes 16, 24)"),
            std::string::npos)
      << f->suggestion;
  EXPECT_EQ(e["dynamic"]["fitted_over"].n, 5);
}

TEST(Analysis, CheapCompilesAndLongRunsGetBuckets) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  // Two clusters of lengths (20..60 and 480..512, every length seen), 300 ms
  // compilations, 2000 steps: padding the short ones to 512 wastes ~14 s of
  // execution, two buckets cost two compilations and little padding.
  std::vector<int64_t> lengths;
  for (int i = 0; i < 2000; ++i) lengths.push_back(i % 4 == 0 ? 480 + (i % 33) : 20 + (i % 41));
  dynamic_padding_run(b, lengths, 300);
  ta::Report r = b.finish();
  const ta::Finding* f = find(r, "recompilation.shape_change");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->suggestion.find(" as {"), std::string::npos) << f->suggestion;
  tc::test::JsonValue e = tc::test::parse_json(f->evidence_json);
  EXPECT_GE(e["buckets"]["sizes"].a.size(), 2u);
  if (e["pad"]["estimated_saving_s"].n <= 0) {
    EXPECT_EQ(f->suggestion.find("Pad "), std::string::npos) << "padding would not pay, so it is not offered: " << f->suggestion;
  }
  EXPECT_GT(e["buckets"]["estimated_saving_s"].n, e["pad"]["estimated_saving_s"].n);
  EXPECT_GT(e["pad"]["estimated_saving_s"].n, 0);
  EXPECT_NE(f->suggestion.find("Pad input_ids dim 1 to 512"), std::string::npos) << f->suggestion;
  EXPECT_NEAR(f->estimated_saving_s, e["buckets"]["estimated_saving_s"].n, 1e-9);
}

TEST(Analysis, CompilesFromACacheLeaveNothingToGain) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  // Every length "compiles" in 0 ms (loaded from the disk cache): padding only adds execution.
  std::vector<int64_t> lengths;
  for (int i = 0; i < 40; ++i) lengths.push_back(13 + (i * 29) % 100);
  dynamic_padding_run(b, lengths, 0);
  ta::Report r = b.finish();
  const ta::Finding* f = find(r, "recompilation.shape_change");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, ta::Severity::kInfo);
  EXPECT_EQ(f->estimated_saving_s, 0);
  EXPECT_NE(f->suggestion.find("Nothing to gain in this run"), std::string::npos) << f->suggestion;
  EXPECT_EQ(f->suggestion.find("-"), std::string::npos) << "no negative saving is offered: " << f->suggestion;
  tc::test::JsonValue e = tc::test::parse_json(f->evidence_json);
  EXPECT_LT(e["pad"]["estimated_saving_s"].n, 0) << "the evidence keeps the signed estimate";
}

TEST(Format, TimesAndSizes) {
  EXPECT_EQ(ta::format_seconds(41.2), "41.2 s");
  EXPECT_EQ(ta::format_seconds(0.0125), "12.5 ms");
  EXPECT_EQ(ta::format_seconds(-1.26), "-1.3 s");
  EXPECT_EQ(ta::format_seconds(80e-6), "80 us");
  EXPECT_EQ(ta::format_seconds(651e-9), "651 ns");
  EXPECT_EQ(ta::format_seconds(0), "0 us");
  EXPECT_EQ(ta::format_bytes(4.1 * 1024 * 1024 * 1024), "4.1 GiB");
  EXPECT_EQ(ta::format_bytes(512), "512 B");
}

TEST(Analysis, ShortLastBatchSuggestsDropLast) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  std::vector<int64_t> batches;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int i = 0; i < 30; ++i) batches.push_back(32);
    batches.push_back(20);
  }
  // Reuse the padding helper on dim 0: rename through a dedicated run.
  std::map<int64_t, int64_t> graph_of;
  int64_t ts = 0, prev = -1, s = 0;
  for (int64_t bs : batches) {
    int64_t g;
    if (!graph_of.count(bs)) {
      g = static_cast<int64_t>(graph_of.size()) + 1;
      graph_of[bs] = g;
      b.compilation(g, s, ts, 800 * kMs, g == 1 ? "first" : "shape_change");
      if (g > 1) b.shape_input(g, "features", 0, prev, bs);
      ts += 800 * kMs;
    }
    g = graph_of[bs];
    b.execution(g, s, ts, kMs);
    b.step(s++, ts, kMs);
    ts += kMs;
    prev = bs;
  }
  b.run(ts);
  ta::Report r = b.finish();
  const ta::Finding* f = find(r, "recompilation.shape_change");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->suggestion.find("drop the last partial batch"), std::string::npos) << f->suggestion;
  EXPECT_NE(f->suggestion.find("20 instead of 32"), std::string::npos) << f->suggestion;
  EXPECT_NEAR(f->estimated_saving_s, 0.8, 1e-9);
}

// Explicit evaluations per call site (item() every step, to_host() every 10th),
// memory.headroom at batch 32 of 16 GiB and memory.oom at batch 512: the golden
// cases explicit_evaluation, memory_headroom and memory_oom (tests/golden).

TEST(Analysis, RecompilationsToTheEndNeverAmortize) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  std::vector<int64_t> lengths;
  for (int i = 0; i < 40; ++i) lengths.push_back(8 + i);  // a new length every step
  dynamic_padding_run(b, lengths, 200);
  ta::Report r = b.finish();
  const ta::Finding* f = find(r, "compile.amortization");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("never amortizes"), std::string::npos) << f->title;
  EXPECT_GT(*ta::metric_value(r, "compile_share"), 0.9);
}

TEST(FailOn, ParsesAndCrosses) {
  ta::Report r;
  r.summary.recompilations = 3;
  r.summary.compile_s = 5;
  r.run.wall_s = 10;
  auto rule = ta::parse_fail_on("recompilations>2");
  ASSERT_TRUE(rule.ok()) << rule.status().message();
  auto why = ta::crossed(*rule, r);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "recompilations is 3, which crosses the threshold recompilations>2");
  EXPECT_FALSE(ta::crossed(*ta::parse_fail_on("recompilations >= 4"), r).has_value());
  EXPECT_TRUE(ta::crossed(*ta::parse_fail_on("explicit_evaluations>0, compile_share>=0.5"), r).has_value());
  EXPECT_FALSE(ta::crossed(*ta::parse_fail_on("compile_share>0.5,steps!=0"), r).has_value());
  EXPECT_TRUE(ta::crossed(*ta::parse_fail_on("steps==0"), r).has_value());
}

TEST(FailOn, RejectsWhatItCannotRead) {
  for (const char* bad : {"", "recompilations", "recompilations>", "recompiles>2", "recompilations=>2", "recompilations>2,", "steps>1e999",
                          "steps>2x", ",steps>1", "steps>>1"}) {
    auto r = ta::parse_fail_on(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' was accepted";
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), tc::StatusCode::kInvalidArgument);
      EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    }
  }
}

TEST(Report, JsonHasTheDocumentedShape) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  dynamic_padding_run(b, {16, 32, 16, 48}, 100);
  ta::Report r = b.finish();
  tc::test::JsonValue j = tc::test::parse_json(ta::to_json(r));
  EXPECT_EQ(j["schema"].s, "tc-analyze/1");
  EXPECT_EQ(j["run"]["command"].a.size(), 3u);
  EXPECT_EQ(j["run"]["complete"].type, tc::test::JsonValue::kBool);
  EXPECT_EQ(j["run"]["exit_status"].n, 0);
  EXPECT_GT(j["run"]["wall_s"].n, 0);
  for (const char* k : {"steps", "compilations", "recompilations", "explicit_evaluations", "compile_s", "execute_s", "peak_bytes", "capacity_bytes"}) {
    EXPECT_EQ(j["summary"][k].type, tc::test::JsonValue::kNumber) << k;
  }
  EXPECT_EQ(j["summary"]["steps"].n, 4);
  EXPECT_EQ(j["summary"]["recompilations"].n, 2);
  ASSERT_FALSE(j["findings"].a.empty());
  for (const auto& f : j["findings"].a) {
    for (const char* k : {"kind", "severity", "title", "suggestion"}) EXPECT_EQ(f[k].type, tc::test::JsonValue::kString) << k;
    EXPECT_EQ(f["evidence"].type, tc::test::JsonValue::kObject);
    EXPECT_EQ(f["estimated_saving_s"].type, tc::test::JsonValue::kNumber);
    EXPECT_TRUE(f["severity"].s == "info" || f["severity"].s == "warning" || f["severity"].s == "error");
  }
}

TEST(Diff, ShowsTheFixWorked) {
  TempDir dir;
  StoreBuilder before(dir.file("a.tcdb"));
  dynamic_padding_run(before, {16, 32, 48, 64, 16, 80}, 500);
  ta::Report a = before.finish();
  StoreBuilder after(dir.file("b.tcdb"));
  dynamic_padding_run(after, {80, 80, 80, 80, 80, 80}, 500);
  ta::Report b = after.finish();
  std::string text = ta::diff_text(a, "a.tcdb", b, "b.tcdb");
  EXPECT_NE(text.find("recompilations"), std::string::npos);
  EXPECT_NE(text.find("recompilation.shape_change"), std::string::npos) << text;
  EXPECT_NE(text.find("fixed"), std::string::npos) << text;
  tc::test::JsonValue j = tc::test::parse_json(ta::diff_json(a, b));
  EXPECT_EQ(j["a"]["compilations"].n, 5);
  EXPECT_EQ(j["b"]["compilations"].n, 1);
}

// Two processes recorded into one store, each with an input named input_ids
// whose dim 1 changed: two findings, each with its own process's values.
TEST(Analysis, ShapeChangesOfTwoProcessesStayApart) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  b.process(1, 1111);
  b.process(2, 2222);
  b.thread(1, 1);
  b.thread(2, 2);
  // Graph ids are unique in the run: 1, 2 in the first process, 3, 4 in the second.
  int64_t ts = 0;
  for (auto [utid, first, lengths] : {std::tuple{int64_t{1}, int64_t{1}, std::vector<int64_t>{8, 12, 12}},
                                      std::tuple{int64_t{2}, int64_t{3}, std::vector<int64_t>{20, 24, 24}}}) {
    b.compilation(first, 0, ts, 100 * kMs, "first", utid);
    b.execution(first, 0, ts += 100 * kMs, kMs, utid);
    b.compilation(first + 1, 1, ts += kMs, 100 * kMs, "shape_change", utid);
    b.shape_input(first + 1, "input_ids", 1, lengths[0], lengths[1], utid);
    for (int s = 1; s < 3; ++s) b.execution(first + 1, s, ts += 100 * kMs, kMs, utid);
    ts += kMs;
  }
  b.run(ts);
  ta::Report r = b.finish();
  std::map<std::string, std::set<int64_t>> values_of;  // pid -> values
  for (const ta::Finding& f : r.findings) {
    if (f.kind != "recompilation.shape_change") continue;
    tc::test::JsonValue e = tc::test::parse_json(f.evidence_json);
    EXPECT_EQ(e["input"].s, "input_ids");
    std::string pid = std::to_string(static_cast<int64_t>(e["pid"].n));
    EXPECT_NE(f.title.find("input_ids dim 1 (pid " + pid + ") took 2 values"), std::string::npos) << f.title;
    for (const auto& v : e["values"].a) values_of[pid].insert(static_cast<int64_t>(v["value"].n));
    double steps = 0;
    for (const auto& v : e["values"].a) steps += v["steps"].n;
    EXPECT_EQ(steps, 3) << "only its own process's executions";
  }
  EXPECT_EQ(values_of, (std::map<std::string, std::set<int64_t>>{{"1111", {8, 12}}, {"2222", {20, 24}}}));
}

// A store of schema v1 (no executions.execution_id) gives the same report,
// and exports.
TEST(Analysis, AStoreOfSchemaV1Analyses) {
  TempDir dir;
  std::vector<int64_t> lengths = {16, 32, 48, 16, 32};
  StoreBuilder now(dir.file("v2.tcdb"));
  dynamic_padding_run(now, lengths, 500);
  ta::Report current = now.finish();
  StoreBuilder old(dir.file("v1.tcdb"));
  dynamic_padding_run(old, lengths, 500);
  ta::Report v1 = old.finish(1);
  auto r = tc::store::Reader::open(dir.file("v1.tcdb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->schema_version(), 1);
  EXPECT_EQ(v1.summary.steps, 5);
  ASSERT_EQ(v1.findings.size(), current.findings.size());
  for (size_t i = 0; i < v1.findings.size(); ++i) {
    EXPECT_EQ(v1.findings[i].kind, current.findings[i].kind);
    EXPECT_EQ(v1.findings[i].title, current.findings[i].title);
  }
  ASSERT_NE(find(v1, "recompilation.shape_change"), nullptr);
  tc::Status exported = ta::export_chrome(*r, dir.file("trace.json"));
  EXPECT_TRUE(exported.ok()) << exported.message();
  std::ifstream in(dir.file("trace.json"));
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NO_THROW(tc::test::parse_json(json));
  EXPECT_NE(json.find("execute graph"), std::string::npos);
}

// ---------------------------------------------------------------- hardening (#12)

const std::string kBad = "\xff\xfe";         // never UTF-8
const std::string kCut = "\xe2\x82";         // a truncated euro sign
const std::string kEsc = "\x1b[31m";         // a terminal escape
const std::string kFffd = "\xef\xbf\xbd";    // U+FFFD

TEST(JsonText, InvalidUtf8BecomesTheReplacementCharacter) {
  size_t n = 0;
  EXPECT_EQ(tc::store::valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", &n), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(tc::store::valid_utf8("a" + kBad + "b", &n), "a" + kFffd + kFffd + "b");
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(tc::store::valid_utf8("x" + kCut), "x" + kFffd) << "one U+FFFD for a truncated sequence";
  EXPECT_EQ(tc::store::valid_utf8("\xc0\xaf"), kFffd + kFffd) << "overlong";
  EXPECT_EQ(tc::store::valid_utf8("\xed\xa0\x80"), kFffd + kFffd + kFffd) << "a surrogate";
  EXPECT_EQ(tc::store::valid_utf8("\xf4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd) << "above U+10FFFF";
  std::string json;
  EXPECT_EQ(tc::store::append_json_escaped(json, "n" + kBad + kEsc), 2u);
  EXPECT_EQ(json, "n" + kFffd + kFffd + "\\u001b[31m");
  EXPECT_NO_THROW(tc::test::parse_json("[\"" + json + "\"]"));
  EXPECT_THROW(tc::test::parse_json("[\"" + kBad + "\"]"), std::runtime_error) << "the test parser must be strict about UTF-8";
}

TEST(Format, PrintableEscapesControlCharacters) {
  EXPECT_EQ(ta::printable("plain train.cpp:12 caf\xc3\xa9"), "plain train.cpp:12 caf\xc3\xa9");
  EXPECT_EQ(ta::printable(kEsc + "red"), "\\x1b[31mred");
  EXPECT_EQ(ta::printable("a\nb\tc\rd\x7f"), "a\\nb\\tc\\rd\\x7f");
  EXPECT_EQ(ta::printable("\xc2\x9b" "2J"), "\\u009b2J") << "C1 CSI";
  EXPECT_EQ(ta::printable("x" + kBad), "x" + kFffd + kFffd);
  EXPECT_EQ(ta::format_number(14031700), "14031700");
  EXPECT_EQ(ta::format_number(0.25), "0.25");
  EXPECT_EQ(ta::format_number(-3), "-3");
}

// A store whose names hold invalid UTF-8 and terminal escapes: the JSON report
// and the Chrome export stay valid JSON (strictly parsed), say how many names
// were replaced, and the text forms carry no raw control character.
TEST(Report, InvalidUtf8InNamesGivesValidJsonAndANote) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  const std::string file = "/src/tr" + kBad + "in" + kEsc + ".cpp";
  b.location(1, "item", file, 12);
  b.location(2, "range" + kCut, "/src/r.cpp", 1);
  b.process(1, 4242);
  b.named_thread(1, 1, "worker" + kBad);
  int64_t ts = 0;
  b.compilation(1, 0, ts, 100 * kMs, "first");
  b.compilation(2, 1, ts += 100 * kMs, 100 * kMs, "shape_change");
  b.shape_input(2, "ids" + kCut, 1, 8, 16);
  b.compilation(3, 2, ts += 100 * kMs, 100 * kMs, "shape_change");
  b.shape_input(3, "ids" + kCut, 1, 16, 24);
  for (int s = 0; s < 3; ++s) {
    b.execution(s + 1, s, ts += kMs, kMs);
    b.explicit_eval(s, ts += kMs, kMs, "item", 1);
    b.range(1, ts, kMs, 2);
    b.step(s, ts, 2 * kMs);
    ts += 2 * kMs;
  }
  b.run(ts, true, 0, std::nullopt, "[\"./tr" + kBad + "\",\"" + kEsc + "\"]");
  ta::Report r = b.finish();
  EXPECT_GE(r.invalid_utf8_names, 3) << "the file, the input and the command";
  std::string json = ta::to_json(r);
  tc::test::JsonValue j;
  ASSERT_NO_THROW(j = tc::test::parse_json(json)) << json;
  ASSERT_EQ(j["notes"].type, tc::test::JsonValue::kArray);
  ASSERT_EQ(j["notes"].a.size(), 1u);
  EXPECT_NE(j["notes"].a[0].s.find("invalid UTF-8, replaced with U+FFFD"), std::string::npos) << j["notes"].a[0].s;
  EXPECT_EQ(j["run"]["command"].a[0].s, "./tr" + kFffd + kFffd);
  EXPECT_EQ(j["run"]["command"].a[1].s, kEsc) << "JSON carries the escape, escaped";
  bool named_input = false;
  for (const auto& f : j["findings"].a) {
    if (f["kind"].s == "recompilation.shape_change") named_input = f["evidence"]["input"].s == "ids" + kFffd;
  }
  EXPECT_TRUE(named_input) << json;
  // Text: no raw control character reaches a terminal.
  for (const ta::Finding& f : r.findings) {
    for (const std::string& text : {ta::printable(f.title), ta::printable(f.suggestion)}) {
      for (char c : text) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << text;
    }
  }
  std::string diff = ta::diff_text(r, "a", r, "b");
  EXPECT_EQ(diff.find('\x1b'), std::string::npos) << diff;
  EXPECT_NE(diff.find("\\x1b"), std::string::npos) << diff;

  auto store = tc::store::Reader::open(dir.file("run.tcdb"));
  ASSERT_TRUE(store.ok());
  ta::ExportStats stats;
  tc::Status s = ta::export_chrome(*store, dir.file("trace.json"), &stats);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GE(stats.invalid_utf8_names, 3) << "the file, the range's name and the thread's name";
  std::string trace = tc::test::read_file(dir.file("trace.json"));
  EXPECT_NO_THROW(tc::test::parse_json(trace)) << trace;
  EXPECT_NE(trace.find("worker" + kFffd + kFffd), std::string::npos);
}

TEST(Report, JsonHasTheDroppedEventCountAndFailOnPrintsItAsAnInteger) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  b.step(0, 0, kMs);
  b.run(10 * kMs, false, 0, std::nullopt, "[\"./train\"]", 14031700);
  ta::Report r = b.finish();
  tc::test::JsonValue j = tc::test::parse_json(ta::to_json(r));
  EXPECT_EQ(j["summary"]["dropped_events"].n, 14031700);
  EXPECT_TRUE(j["notes"].a.empty());
  auto why = ta::crossed(*ta::parse_fail_on("dropped_events>0"), r);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "dropped_events is 14031700, which crosses the threshold dropped_events>0");
  EXPECT_EQ(*ta::crossed(*ta::parse_fail_on("compile_s<0.5"), r), "compile_s is 0, which crosses the threshold compile_s<0.5");
  tc::test::JsonValue d = tc::test::parse_json(ta::diff_json(r, r));
  EXPECT_EQ(d["b"]["dropped_events"].n, 14031700);
}

// export refuses to write over the store it reads, by any name, and leaves
// nothing behind when it fails.
TEST(Export, RefusesItsOwnInputAndLeavesNoPartialFile) {
  TempDir dir;
  std::string path = dir.file("run.tcdb");
  StoreBuilder b(path);
  dynamic_padding_run(b, {16, 32}, 100);
  b.finish();
  std::string before = tc::test::read_file(path);
  std::filesystem::create_symlink(path, dir.file("link.tcdb"));
  std::filesystem::create_hard_link(path, dir.file("hard.tcdb"));
  auto r = tc::store::Reader::open(path);
  ASSERT_TRUE(r.ok());
  for (const std::string& out : {path, dir.file("link.tcdb"), dir.file("hard.tcdb"), dir.path().string() + "/./run.tcdb"}) {
    tc::Status s = ta::export_chrome(*r, out);
    EXPECT_EQ(s.code(), tc::StatusCode::kInvalidArgument) << out << ": " << s.message();
    EXPECT_NE(s.message().find("the store being read"), std::string::npos) << s.message();
  }
  EXPECT_EQ(tc::test::read_file(path), before) << "the store was changed";
  EXPECT_EQ(ta::export_chrome(*r, "").code(), tc::StatusCode::kInvalidArgument);

  std::string out = dir.file("trace.json");
  { std::ofstream(out) << "old"; }
  ASSERT_TRUE(ta::export_chrome(*r, out).ok());
  EXPECT_NO_THROW(tc::test::parse_json(tc::test::read_file(out)));
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".tc-tmp-"), std::string::npos) << e.path();
  }
}

TEST(Export, AStoreWithoutItsRunRowIsDamaged) {
  TempDir dir;
  std::string path = dir.file("run.tcdb");
  StoreBuilder b(path);
  b.step(0, 0, kMs);  // no run row
  b.finish_without_analysis();
  auto r = tc::store::Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string out = dir.file("trace.json");
  { std::ofstream(out) << "old"; }
  tc::Status s = ta::export_chrome(*r, out);
  EXPECT_EQ(s.code(), tc::StatusCode::kCorrupt) << s.message();
  EXPECT_NE(s.message().find("run row"), std::string::npos) << s.message();
  EXPECT_EQ(tc::test::read_file(out), "old") << "a failed export replaced the file";
  EXPECT_EQ(ta::analyze(*r).status().code(), tc::StatusCode::kCorrupt);
}

// A kernel of known FLOPs and bytes over known time: its GFLOP/s and GB/s,
// its share of execute time, compute- or memory-bound against the ceilings,
// and the per-line view and hotspot finding that follow.
StoreBuilder& kernel_run_store(StoreBuilder& b) {
  b.run(10'000'000'000);
  b.step(0, 0, 5'000'000'000);
  b.execution(1, 0, 0, 4'000'000'000);  // execution 1: 4 s
  // 2e9 FLOPs per call over 1 MB: compute-bound (ridge 100 GFLOP/s / 10 GB/s = 10 FLOP/byte).
  b.kernel(1, 0, "matmul", "matmul", 1'000'000, 2'000'000'000, "/src/train.cpp:88;/src/train.cpp:90");
  b.kernel(1, 1, "elementwise", "add,relu", 400'000'000, 100'000'000, "/src/train.cpp:91");
  b.kernel_run(1, 1, 0, 0, 1'000'000'000);              // 1 s
  b.kernel_run(1, 1, 0, 1'000'000'000, 1'000'000'000);  // 1 s
  b.kernel_run(1, 1, 1, 2'000'000'000, 1'000'000'000);  // 1 s
  b.ceilings(100, 10);
  return b;
}

TEST(Kernels, RatesComeFromTheKernelIrCountsAndTheirTime) {
  TempDir dir;
  StoreBuilder b(dir.file("k.tcdb"));
  kernel_run_store(b).finish_without_analysis();
  auto r = tc::store::Reader::open(dir.file("k.tcdb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto t = ta::kernel_table(*r);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_DOUBLE_EQ(t->execute_s, 4.0);
  EXPECT_DOUBLE_EQ(t->kernel_s, 3.0);
  ASSERT_EQ(t->rows.size(), 2u);
  const ta::KernelRow& mm = t->rows[0];
  EXPECT_EQ(mm.calls, 2);
  EXPECT_DOUBLE_EQ(mm.total_s, 2.0);
  EXPECT_DOUBLE_EQ(mm.share, 0.5);
  EXPECT_DOUBLE_EQ(mm.gflops, 2.0) << "2e9 FLOPs a call, two calls in 2 s";
  EXPECT_DOUBLE_EQ(mm.gbps, 0.001);
  EXPECT_EQ(mm.bound, "compute");
  EXPECT_DOUBLE_EQ(mm.of_ceiling, 0.02);
  EXPECT_EQ(mm.sites, (std::vector<std::string>{"train.cpp:88", "train.cpp:90"}));
  const ta::KernelRow& ew = t->rows[1];
  EXPECT_EQ(ew.bound, "memory");
  EXPECT_DOUBLE_EQ(ew.gbps, 0.4);
  auto j = tc::test::parse_json(ta::kernels_json(*t));
  EXPECT_EQ(j["schema"].s, "tc-analyze-kernels/1");
  EXPECT_DOUBLE_EQ(j["kernels"].a.at(0)["gflops"].n, 2.0);
  EXPECT_EQ(j["kernels"].a.at(0)["graph_id"].n, 1);
  EXPECT_EQ(j["kernels"].a.at(0)["sites"].a.at(0).s, "train.cpp:88");
  auto by_site = ta::kernel_table(*r, ta::KernelsBy::kSite);
  ASSERT_TRUE(by_site.ok());
  ASSERT_EQ(by_site->rows.size(), 2u);
  EXPECT_EQ(by_site->rows[0].name, "train.cpp:88") << "a kernel counts for its first line";
}

// A kernel faster than the probe's ceiling means the probe measured low (a
// busy machine, one thread): the ceiling in use is raised to the fastest
// kernel's rate, a note names it, and no kernel is put above 100% of it, in
// either grouping, in JSON, or in kernel.hotspot. A kernel with under 1% of
// the kernel time does not raise it (its rate is timer noise) but is clamped.
// Tiered builds: a graph's first steps ran the eager executor's kernels (graph 0), slower than the built
// code's and gone once it took over. kernel.hotspot names the built kernel of the line, and says what it
// passed over; a run that never tiered (TC_EAGER=1, say) keeps its eager kernel.
TEST(Kernels, TheHotspotNamesTheBuiltKernelNotTheEagerTiers) {
  for (const bool tiered : {true, false}) {
    TempDir dir;
    StoreBuilder b(dir.file("run.tcdb"));
    b.run(10'000'000'000);
    b.step(0, 0, 5'000'000'000);
    b.execution(1, 0, 0, 4'000'000'000);
    b.compilation(1, 0, 0, 1'000'000, "first");
    if (tiered) b.compilation(2, 0, 0, 500'000'000, "tier_up", 2, "tier_up");
    b.kernel(0, 7, "matmul", "matmul", 1'000'000, 2'000'000'000, "/src/train.cpp:88");  // the eager executor's
    b.kernel(2, 0, "matmul", "matmul", 1'000'000, 2'000'000'000, "/src/train.cpp:88");  // the built code's
    for (int i = 0; i < 3; ++i) b.kernel_run(1, 0, 7, i * 1'000'000'000, 1'000'000'000);  // 3 s eager
    b.kernel_run(1, 2, 0, 3'000'000'000, 100'000'000);                                     // 0.1 s built
    b.ceilings(100, 10);
    ta::Report report = b.finish();
    const ta::Finding* f = find(report, "kernel.hotspot");
    ASSERT_NE(f, nullptr);
    if (tiered) {
      EXPECT_NE(f->suggestion.find("Its heaviest kernel (matmul (g2 k0), 1 calls"), std::string::npos) << f->suggestion;
      EXPECT_NE(f->suggestion.find("this line's kernels on the eager executor, 3.0 s"), std::string::npos) << f->suggestion;
    } else {
      EXPECT_NE(f->suggestion.find("Its heaviest kernel (matmul (g0 k7), 3 calls"), std::string::npos) << f->suggestion;
    }
  }
}

TEST(Kernels, AKernelAboveTheCeilingMeansTheProbeMeasuredLow) {
  TempDir dir;
  StoreBuilder b(dir.file("low.tcdb"));
  b.run(10'000'000'000);
  b.step(0, 0, 1'000'000'000);
  b.execution(1, 0, 0, 400'000'000);
  b.kernel(1, 0, "matmul", "matmul", 1'000'000, 1'570'000'000, "/src/train.cpp:88");         // 157 GFLOP/s
  b.kernel(1, 1, "matmul", "matmul,sub,mul", 1'000'000, 1'000'000'000, "/src/train.cpp:89");  // 100 GFLOP/s
  b.kernel(1, 2, "elementwise", "add,relu", 300'000'000, 1'000'000, "/src/train.cpp:90");     // 30 GB/s
  b.kernel(1, 3, "matmul", "matmul", 1'000'000, 1'000'000'000, "/src/train.cpp:91");          // 1 us: 1000 GFLOP/s, noise
  for (int i = 0; i < 10; ++i) {
    b.kernel_run(1, 1, 0, i * 30'000'000, 10'000'000);
    b.kernel_run(1, 1, 1, i * 30'000'000 + 10'000'000, 10'000'000);
    b.kernel_run(1, 1, 2, i * 30'000'000 + 20'000'000, 10'000'000);
  }
  b.kernel_run(1, 1, 3, 350'000'000, 1'000);
  b.ceilings(83, 15);
  ta::Report report = b.finish();
  auto r = tc::store::Reader::open(dir.file("low.tcdb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto t = ta::kernel_table(*r), by_site = ta::kernel_table(*r, ta::KernelsBy::kSite);
  ASSERT_TRUE(t.ok() && by_site.ok());
  EXPECT_DOUBLE_EQ(t->probe_gflops, 83);
  EXPECT_DOUBLE_EQ(t->probe_gbps, 15);
  EXPECT_NEAR(t->peak_gflops, 157, 1e-6);
  EXPECT_NEAR(t->peak_gbps, 30, 1e-6);
  EXPECT_EQ(t->isa, "avx2+fma");
  EXPECT_EQ(t->gemm_kernel, "avx2");
  EXPECT_EQ(t->threads, 2);
  ASSERT_EQ(t->notes.size(), 2u);
  EXPECT_EQ(t->notes[0], "ceiling measured low: kernel matmul (g1 k0) reached 157 GFLOP/s over the probe's 83");
  EXPECT_EQ(t->notes[1], "ceiling measured low: kernel add,relu (g1 k2) reached 30 GB/s over the probe's 15");
  ASSERT_EQ(t->rows.size(), 4u);
  for (const ta::KernelRow& k : t->rows) {
    EXPECT_LE(k.of_ceiling, 1.0) << k.name;
    if (k.name == "matmul,sub,mul (g1 k1)") {
      EXPECT_NEAR(k.of_ceiling, 100.0 / 157, 1e-9);
    }
    if (k.name == "matmul (g1 k3)") {
      EXPECT_DOUBLE_EQ(k.of_ceiling, 1.0) << "clamped, not a raise";
    }
  }
  EXPECT_NEAR(by_site->peak_gflops, 157, 1e-6) << "the ceiling comes from kernels whichever the grouping";
  for (const ta::KernelRow& k : by_site->rows) EXPECT_LE(k.of_ceiling, 1.0) << k.name;
  auto j = tc::test::parse_json(ta::kernels_json(*t));
  EXPECT_NEAR(j["ceilings"]["gflops"].n, 157, 1e-6);
  EXPECT_DOUBLE_EQ(j["ceilings"]["probe_gflops"].n, 83);
  EXPECT_EQ(j["ceilings"]["gemm_kernel"].s, "avx2");
  EXPECT_EQ(j["ceilings"]["notes"].a.size(), 2u);
  for (const auto& k : j["kernels"].a) EXPECT_LE(k["of_ceiling"].n, 1.0) << k["name"].s;
  const ta::Finding* f = find(report, "kernel.hotspot");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->suggestion.find("100% of this machine's 157 GFLOP/s (ceiling measured low: kernel matmul (g1 k0) reached 157 GFLOP/s "
                               "over the probe's 83)"),
            std::string::npos)
      << f->suggestion;
  // A store of schema v5 has no isa, kernel or threads, and reads the same otherwise.
  StoreBuilder old(dir.file("v5.tcdb"));
  kernel_run_store(old).finish(5);
  auto r5 = tc::store::Reader::open(dir.file("v5.tcdb"));
  ASSERT_TRUE(r5.ok()) << r5.status().message();
  auto t5 = ta::kernel_table(*r5);
  ASSERT_TRUE(t5.ok()) << t5.status().message();
  EXPECT_EQ(t5->gemm_kernel, "");
  EXPECT_EQ(t5->threads, 0);
  EXPECT_DOUBLE_EQ(t5->peak_gflops, 100);
  EXPECT_TRUE(t5->notes.empty());
}

// The hotspot finding of kernel_run_store's run (its line, share and bound)
// is the golden case tests/golden/kernel_hotspot. The same run, faster: diff
// says which kernel got faster.
TEST(Kernels, DiffSaysWhichKernelGotFaster) {
  TempDir dir;
  StoreBuilder b(dir.file("h.tcdb"));
  ta::Report r = kernel_run_store(b).finish();
  StoreBuilder c(dir.file("h2.tcdb"));
  c.run(10'000'000'000);
  c.step(0, 0, 5'000'000'000);
  c.execution(1, 0, 0, 2'000'000'000);
  c.kernel(1, 0, "matmul", "matmul", 1'000'000, 2'000'000'000, "/src/train.cpp:88");
  c.kernel_run(1, 1, 0, 0, 500'000'000);
  ta::Report faster = c.finish();
  std::string text = ta::diff_text(r, "a", faster, "b");
  EXPECT_NE(text.find("matmul @ train.cpp:88"), std::string::npos) << text;
  EXPECT_NE(text.find("faster"), std::string::npos) << text;
  auto d = tc::test::parse_json(ta::diff_json(r, faster));
  EXPECT_EQ(d["kernels"].a.at(0)["name"].s, "matmul @ train.cpp:88");
  EXPECT_EQ(d["kernels"].a.at(0)["change"].s, "faster");
}

// ---------------------------------------------------------------- ranges (#13)

// A program that does not link tc: NVTX ranges on two threads of process 1,
// a start/end range ended on the other thread, and one whose only end is in
// another process (so it is cut). Every number below follows from these rows.
void nvtx_run(StoreBuilder& b, std::optional<std::string> step_range = std::nullopt) {
  b.process(1, 4242);
  b.process(2, 5151);
  b.named_thread(1, 1, "main");
  b.thread(2, 1);  // tid 20, named only through nvtxNameOsThread below
  b.thread(3, 2);
  b.nvtx_location(1, "step");
  b.nvtx_location(2, "forward");
  b.nvtx_location(3, "backward");
  b.nvtx_location(4, "load", "data");
  b.nvtx_location(5, "step", "data");
  b.nvtx_location(6, "epoch");
  b.nvtx_location(7, "checkpoint");
  b.location(8, "tc.range", "/src/train.cpp", 12);
  b.nvtx_location(9, "async");
  b.location(10, "tc.instant", "/src/train.cpp", 13);
  // Thread 1: epoch [0,100) holds three steps, each a forward and a backward; then a step the program died in.
  b.nested_range(1, 0, 100 * kMs, 0, 6);
  b.nested_range(1, 0, 30 * kMs, 1, 1);
  b.nested_range(1, 0, 10 * kMs, 2, 2);
  b.nested_range(1, 10 * kMs, 15 * kMs, 2, 3);
  b.nested_range(1, 30 * kMs, 20 * kMs, 1, 1);
  b.nested_range(1, 30 * kMs, 8 * kMs, 2, 2);
  b.nested_range(1, 38 * kMs, 10 * kMs, 2, 3);
  b.nested_range(1, 50 * kMs, 40 * kMs, 1, 1);
  b.nested_range(1, 50 * kMs, 10 * kMs, 2, 2);
  b.nested_range(1, 60 * kMs, 25 * kMs, 2, 3);
  b.nested_range(1, 100 * kMs, -1, 0, 1);
  b.nested_range(1, 100 * kMs, 4 * kMs, 1, 2);
  b.instant(1, 29 * kMs, 7);
  b.instant(1, 89 * kMs, 7);
  // Thread 2: two loads; the second one's child runs past its end (it covers the load only up to the load's end).
  b.nested_range(2, 5 * kMs, 10 * kMs, 0, 4);
  b.nested_range(2, 5 * kMs, 3 * kMs, 1, 5);
  b.nested_range(2, 40 * kMs, 20 * kMs, 0, 4);
  b.nested_range(2, 55 * kMs, 10 * kMs, 1, 5);
  b.nested_range(2, 70 * kMs, 5 * kMs, 0, 8);
  b.instant(2, 71 * kMs, 7);
  b.instant(2, 72 * kMs, 10);
  b.nvtx_thread_name(1, 20, "loader");
  // Start/end: id 7 starts on thread 1 and ends on thread 2; id 8's only end is in process 2.
  b.range_start(1, 20 * kMs, 7, 9);
  b.range_end(2, 45 * kMs, 7);
  b.range_start(1, 80 * kMs, 8, 9);
  b.range_end(3, 90 * kMs, 8);
  b.run(110 * kMs, false, std::nullopt, 9, "[\"python\",\"train.py\"]", 0, step_range);
}

const ta::RangeStats* row(const ta::RangeTable& t, const std::string& name, const std::string& domain = "") {
  for (const auto& r : t.ranges) {
    if (r.name == name && r.domain == domain) return &r;
  }
  return nullptr;
}

ta::RangeTable table_of(const std::string& path, const ta::RangeFilter& filter = {}) {
  auto r = tc::store::Reader::open(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  auto t = ta::range_table(*r, filter);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : ta::RangeTable{};
}

std::vector<std::string> names(const ta::RangeTable& t) {
  std::vector<std::string> out;
  for (const auto& r : t.ranges) out.push_back(r.name + (r.domain.empty() ? "" : "@" + r.domain));
  return out;
}

TEST(Ranges, PerNameStatisticsSelfTimeAndCutRanges) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  nvtx_run(b);
  b.finish_without_analysis();
  ta::RangeTable t = table_of(dir.file("run.tcdb"));
  EXPECT_EQ(names(t), (std::vector<std::string>{"epoch", "step", "backward", "forward", "load@data", "async", "step@data", "tc.range"}))
      << "largest total first";
  const ta::RangeStats* step = row(t, "step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->kind, "nvtx");
  EXPECT_EQ(step->count, 4);
  EXPECT_EQ(step->cut, 1);
  EXPECT_EQ(step->total_ns, 90 * kMs);
  EXPECT_EQ(step->mean_ns, 30 * kMs);
  EXPECT_EQ(step->p50_ns, 30 * kMs) << "{20, 30, 40}: index 1";
  EXPECT_EQ(step->p99_ns, 40 * kMs);
  EXPECT_EQ(step->min_ns, 20 * kMs);
  EXPECT_EQ(step->max_ns, 40 * kMs);
  EXPECT_EQ(step->self_ns, (30 - 25 + 20 - 18 + 40 - 35) * kMs) << "each step less its forward and backward";
  EXPECT_EQ(step->threads, 1);
  const ta::RangeStats* epoch = row(t, "epoch");
  ASSERT_NE(epoch, nullptr);
  EXPECT_EQ(epoch->self_ns, 10 * kMs) << "the steps are its children, not the forwards and backwards inside them";
  const ta::RangeStats* forward = row(t, "forward");
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->count, 4);
  EXPECT_EQ(forward->total_ns, 32 * kMs);
  EXPECT_EQ(forward->mean_ns, 8 * kMs);
  EXPECT_EQ(forward->p50_ns, 10 * kMs) << "{4, 8, 10, 10}: index 2, the upper median";
  EXPECT_EQ(forward->self_ns, 32 * kMs);
  const ta::RangeStats* load = row(t, "load", "data");
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->total_ns, 30 * kMs);
  EXPECT_EQ(load->self_ns, (10 - 3 + 20 - 5) * kMs) << "a child past its parent's end covers it up to that end";
  const ta::RangeStats* data_step = row(t, "step", "data");
  ASSERT_NE(data_step, nullptr);
  EXPECT_EQ(data_step->count, 2) << "the same message in another domain is another row";
  const ta::RangeStats* async = row(t, "async");
  ASSERT_NE(async, nullptr);
  EXPECT_EQ(async->count, 2);
  EXPECT_EQ(async->cut, 1) << "an end in another process does not end it";
  EXPECT_EQ(async->total_ns, 25 * kMs) << "started on thread 1, ended on thread 2";
  EXPECT_EQ(async->self_ns, 25 * kMs);
  EXPECT_EQ(async->threads, 1);
  const ta::RangeStats* tc_range = row(t, "tc.range");
  ASSERT_NE(tc_range, nullptr);
  EXPECT_EQ(tc_range->kind, "tc");
  EXPECT_EQ(t.range_count, 1 + 4 + 4 + 3 + 2 + 2 + 2 + 1);
  EXPECT_EQ(t.cut_count, 2);
  ASSERT_EQ(t.marks.size(), 2u);
  EXPECT_EQ(t.marks[0].name, "checkpoint");
  EXPECT_EQ(t.marks[0].kind, "nvtx");
  EXPECT_EQ(t.marks[0].count, 3);
  EXPECT_EQ(t.marks[1].name, "tc.instant");
  EXPECT_EQ(t.marks[1].kind, "tc");
  ASSERT_EQ(t.threads.size(), 2u) << "thread 3 only ended a range";
  EXPECT_EQ(t.threads[0].name, "main");
  EXPECT_EQ(t.threads[0].pid, 4242);
  EXPECT_EQ(t.threads[0].ranges, 14);
  EXPECT_EQ(t.threads[0].marks, 2);
  EXPECT_EQ(t.threads[1].name, "loader") << "named by another thread through nvtxNameOsThread";
  EXPECT_EQ(t.threads[1].tid, 20);
  EXPECT_EQ(t.threads[1].ranges, 5);
  EXPECT_EQ(t.threads[1].marks, 2);
}

TEST(Ranges, FiltersKeepTheSelfTimeOfWhatTheyLeaveOut) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  nvtx_run(b);
  b.finish_without_analysis();
  ta::RangeTable steps = table_of(dir.file("run.tcdb"), {.name_contains = "step"});
  EXPECT_EQ(names(steps), (std::vector<std::string>{"step", "step@data"}));
  EXPECT_EQ(row(steps, "step")->self_ns, 12 * kMs) << "the forwards and backwards left out still cover the steps";
  EXPECT_TRUE(steps.marks.empty());
  ta::RangeTable data = table_of(dir.file("run.tcdb"), {.domain = "data"});
  EXPECT_EQ(names(data), (std::vector<std::string>{"load@data", "step@data"}));
  ASSERT_EQ(data.threads.size(), 1u);
  EXPECT_EQ(data.threads[0].ranges, 4);
  ta::RangeTable own = table_of(dir.file("run.tcdb"), {.kind = "tc"});
  EXPECT_EQ(names(own), (std::vector<std::string>{"tc.range"}));
  ASSERT_EQ(own.marks.size(), 1u);
  EXPECT_EQ(own.marks[0].name, "tc.instant");
  ta::RangeTable default_domain = table_of(dir.file("run.tcdb"), {.domain = "", .kind = "nvtx"});
  EXPECT_EQ(names(default_domain), (std::vector<std::string>{"epoch", "step", "backward", "forward", "async"}));
}

// The marks of tc's Python hook (its steps) are tc's instrumentation: no table shows them.
TEST(Ranges, ThePythonHooksMarksAreLeftOut) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  b.process(1, 100);
  b.thread(1, 1);
  b.nvtx_location(1, "tc.optimizer_step");
  b.nvtx_location(2, "tc.optimizer_steps_start");
  b.nvtx_location(3, "checkpoint");
  b.instant(1, 1 * kMs, 2);
  for (int k = 0; k < 3; ++k) b.instant(1, (2 + k) * kMs, 1);
  b.instant(1, 9 * kMs, 3);
  b.finish_without_analysis();
  ta::RangeTable t = table_of(dir.file("run.tcdb"));
  ASSERT_EQ(t.marks.size(), 1u);
  EXPECT_EQ(t.marks[0].name, "checkpoint");
  EXPECT_EQ(t.mark_count, 1);
}

TEST(Ranges, JsonHasTheDocumentedShape) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  nvtx_run(b);
  b.finish_without_analysis();
  ta::RangeTable t = table_of(dir.file("run.tcdb"));
  tc::test::JsonValue j = tc::test::parse_json(ta::ranges_json(t));
  EXPECT_EQ(j["schema"].s, "tc-analyze-ranges/1");
  ASSERT_EQ(j["ranges"].a.size(), 8u);
  const auto& step = j["ranges"].a[1];
  std::set<std::string> keys;
  for (const auto& [k, v] : step.o) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"name", "domain", "kind", "count", "cut", "total_ns", "mean_ns", "p50_ns", "p99_ns", "min_ns", "max_ns",
                                          "self_ns", "threads"}));
  EXPECT_EQ(step["name"].s, "step");
  EXPECT_EQ(step["domain"].s, "");
  EXPECT_EQ(step["self_ns"].n, 12 * kMs);
  EXPECT_EQ(step["cut"].n, 1);
  EXPECT_EQ(j["marks"].a.at(0)["name"].s, "checkpoint");
  EXPECT_EQ(j["marks"].a.at(0)["count"].n, 3);
  EXPECT_EQ(j["threads"].a.at(1)["name"].s, "loader");
  EXPECT_EQ(j["threads"].a.at(1)["pid"].n, 4242);
  EXPECT_EQ(tc::test::parse_json(ta::ranges_json(t, 3))["ranges"].a.size(), 3u);
}

// Before schema v3 there are no NVTX tables: the same table without the start/end ranges.
TEST(Ranges, AStoreOfSchemaV2HasNoStartEndRanges) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  nvtx_run(b);
  b.finish(2);
  ta::RangeTable t = table_of(dir.file("run.tcdb"));
  EXPECT_EQ(names(t), (std::vector<std::string>{"epoch", "step", "backward", "forward", "load@data", "step@data", "tc.range"}));
  EXPECT_EQ(row(t, "step")->self_ns, 12 * kMs);
  EXPECT_EQ(t.threads[1].name, "") << "nvtx_thread_names is v3";
}

TEST(Report, ARunWithoutTcIsReportedWithItsRanges) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  nvtx_run(b);
  ta::Report r = b.finish();
  EXPECT_FALSE(ta::recorded_nothing(r));
  EXPECT_EQ(r.summary.steps, 0);
  EXPECT_EQ(r.summary.step_source, "");
  EXPECT_EQ(r.ranges.ranges.size(), 8u);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_EQ(r.notes[0].rfind("no training steps: the program does not link tc and no --step-range was given", 0), 0u) << r.notes[0];
  EXPECT_NE(r.notes[0].find("the ranges with the most time here: 'epoch' (1), 'step' (4), 'backward' (3)"), std::string::npos) << r.notes[0];
  EXPECT_EQ(r.notes[1].rfind("no tc compilations", 0), 0u) << r.notes[1];
  tc::test::JsonValue j = tc::test::parse_json(ta::to_json(r));
  EXPECT_EQ(j["summary"]["step_source"].s, "none");
  EXPECT_EQ(j["summary"]["ranges"].n, 19);
  EXPECT_EQ(j["summary"]["marks"].n, 4);
  EXPECT_EQ(j["ranges"].a.size(), 8u);
  EXPECT_EQ(j["ranges"].a.at(0)["name"].s, "epoch");
  EXPECT_EQ(j["threads"].a.size(), 2u);
  EXPECT_EQ(j["notes"].a.size(), 2u);
  EXPECT_EQ(j["run"]["step_range"].type, tc::test::JsonValue::kNull);
  EXPECT_EQ(j["run"]["nvtx"].s, "tc");
}

TEST(Report, AStoreWithNothingInItRecordedNothing) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  b.run(10 * kMs);
  ta::Report r = b.finish();
  EXPECT_TRUE(ta::recorded_nothing(r));
  StoreBuilder one(dir.file("one.tcdb"));
  one.location(1, "tc.instant", "/src/a.cpp", 1);
  one.instant(1, kMs, 1);
  one.run(10 * kMs);
  EXPECT_FALSE(ta::recorded_nothing(one.finish())) << "one mark is something";
}

// train_step on two threads, one nested inside another of its thread, one cut.
void step_range_run(StoreBuilder& b, std::optional<std::string> recorded) {
  b.named_thread(1, 1, "main");
  b.named_thread(2, 1, "replica");
  b.nvtx_location(1, "train_step");
  b.nested_range(1, 0, 10 * kMs, 0, 1);
  b.nested_range(1, 2 * kMs, 3 * kMs, 1, 1);
  b.nested_range(2, 3 * kMs, 6 * kMs, 0, 1);
  b.nested_range(1, 10 * kMs, 12 * kMs, 0, 1);
  b.nested_range(1, 22 * kMs, 8 * kMs, 0, 1);
  b.nested_range(1, 40 * kMs, -1, 0, 1);
  b.run(50 * kMs, true, 0, std::nullopt, "[\"python\",\"train.py\"]", 0, recorded);
}

TEST(Report, StepsComeFromTheRecordedStepRange) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  step_range_run(b, "train_step");
  ta::Report r = b.finish();
  ASSERT_EQ(r.summary.steps, 4) << "outermost per thread, cut ones left out";
  EXPECT_EQ(r.summary.step_source, "range");
  EXPECT_EQ(r.summary.step_range, "train_step");
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> steps;
  for (const ta::Step& s : r.steps) steps.emplace_back(s.index, s.utid, s.ts, s.dur);
  EXPECT_EQ(steps, (std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
                       {0, 1, 0, 10 * kMs}, {1, 2, 3 * kMs, 6 * kMs}, {2, 1, 10 * kMs, 12 * kMs}, {3, 1, 22 * kMs, 8 * kMs}}));
  EXPECT_DOUBLE_EQ(r.summary.step_p50_s, 0.010) << "{6, 8, 10, 12} ms: index 2";
  EXPECT_DOUBLE_EQ(r.summary.step_p99_s, 0.012);
  ASSERT_GE(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "1 occurrence of range 'train_step' never ended (the program ended inside it) and is not a step");
  tc::test::JsonValue j = tc::test::parse_json(ta::to_json(r));
  EXPECT_EQ(j["summary"]["steps"].n, 4);
  EXPECT_EQ(j["summary"]["step_source"].s, "range");
  EXPECT_EQ(j["summary"]["step_range"].s, "train_step");
  EXPECT_EQ(j["run"]["step_range"].s, "train_step");
  EXPECT_EQ(*ta::metric_value(r, "steps"), 4) << "--fail-on sees them";
}

TEST(Report, StepRangeOptionOverridesAndSaysWhenNothingMatches) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  step_range_run(b, "train_step");
  ta::Report r = b.finish(tc::store::kSchemaVersion, {.step_range = "missing"});
  EXPECT_EQ(r.summary.steps, 0);
  EXPECT_EQ(r.summary.step_source, "");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_EQ(r.notes[0], "no training steps: no range is named 'missing' (tc-analyze --step-range); the ranges with the most time here: 'train_step' (6)");
  EXPECT_FALSE(ta::recorded_nothing(r));

  StoreBuilder given(dir.file("given.tcdb"));
  step_range_run(given, std::nullopt);
  EXPECT_EQ(given.finish(tc::store::kSchemaVersion, {.step_range = "train_step"}).summary.steps, 4);
}

TEST(Report, MarkStepStepsWinOverAStepRange) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  dynamic_padding_run(b, {16, 16, 16}, 10);
  b.nvtx_location(1, "train_step");
  b.nested_range(1, 0, kMs, 0, 1);
  ta::Report r = b.finish(tc::store::kSchemaVersion, {.step_range = "train_step"});
  EXPECT_EQ(r.summary.steps, 3);
  EXPECT_EQ(r.summary.step_source, "mark_step");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "tc-analyze --step-range 'train_step' is not used: the run recorded 3 tc::mark_step() steps, and those are its steps");
}

// JAX and PyTorch/XLA dispatch asynchronously: a read-back's wait is the
// step's own computation. It is credited with the host work it kept from
// overlapping that computation (from its end to the next dispatch), at most
// the wait: here 10 steps of 100 ms, each read at 1 ms waiting 90 ms (9 ms of
// host work after it: 90 ms in all), and a second read of 5 ms with 94 ms
// after it (all of its 50 ms).
TEST(Findings, AsyncReadBackIsCreditedWithTheOverlapOnly) {
  for (const std::string framework : {"jax", "torch_xla"}) {
    TempDir dir;
    StoreBuilder b(dir.file("run.tcdb"));
    b.location(1, "float()", "/src/train.py", 40);
    b.location(2, "float()", "/src/train.py", 50);
    for (int k = 0; k < 10; ++k) {
      b.step(k, k * 100 * kMs, 100 * kMs);
      b.framework_eval(k, k * 100 * kMs + kMs, 90 * kMs, 1, framework, "float()");
      b.framework_eval(k + 10, (k + 10) * 100 * kMs + kMs, 5 * kMs, 2, framework, "float()");
      b.step(k + 10, (k + 10) * 100 * kMs, 100 * kMs);
    }
    b.run(2000 * kMs);
    ta::Report r = b.finish();
    std::map<std::string, const ta::Finding*> by;
    for (const ta::Finding& f : r.findings)
      if (f.kind == "explicit_evaluation") by[f.identity] = &f;
    ASSERT_EQ(by.size(), 2u) << framework;
    const ta::Finding& wait = *by.at("item at /src/train.py:40");
    EXPECT_NEAR(wait.estimated_saving_s, 0.090, 1e-9) << framework << ": " << wait.suggestion;
    EXPECT_NE(wait.evidence_json.find("\"total_s\":0.9,"), std::string::npos) << wait.evidence_json;
    EXPECT_NE(wait.evidence_json.find("\"overlap_s\":0.09"), std::string::npos) << wait.evidence_json;
    EXPECT_NE(wait.suggestion.find("est. 90.0 ms saved: "), std::string::npos) << wait.suggestion;
    EXPECT_NE(wait.suggestion.find("runs the step asynchronously"), std::string::npos) << wait.suggestion;
    EXPECT_NEAR(by.at("item at /src/train.py:50")->estimated_saving_s, 0.050, 1e-9) << framework;
  }
}

// No saving exceeds the run: 5 item() calls of 100 ms recorded in a run whose
// wall time is 100 ms (its end came early) are credited 100 ms, and say so.
TEST(Findings, NoSavingExceedsTheRun) {
  TempDir dir;
  StoreBuilder b(dir.file("run.tcdb"));
  b.location(1, "item", "/src/train.cpp", 12);
  for (int k = 0; k < 5; ++k) {
    b.step(k, k * 100 * kMs, 100 * kMs);
    b.explicit_eval(k, k * 100 * kMs, 100 * kMs, "item", 1);
  }
  b.run(100 * kMs);
  ta::Report r = b.finish();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_DOUBLE_EQ(r.findings[0].estimated_saving_s, 0.1);
  EXPECT_NE(r.findings[0].evidence_json.find("\"saving_capped_at_wall_s\":true}"), std::string::npos) << r.findings[0].evidence_json;
  EXPECT_NE(r.findings[0].suggestion.find("(The estimate, 500.0 ms, exceeds the run's 100.0 ms: counted as 100.0 ms.)"), std::string::npos)
      << r.findings[0].suggestion;
  EXPECT_DOUBLE_EQ(r.total_saving_s, 0.1);
}

}  // namespace
