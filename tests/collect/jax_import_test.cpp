// The JAX importer (tc/import/import.h, import_jax_log) as diff tests: each
// jax-* fixture of tests/fixtures/frameworks (the log tc's Python hook wrote
// on a real run of samples/python/jax_classifier.py, see
// make_jax_fixtures.py) is imported into a fresh store, its tables are
// printed as text, and the text must equal the fixture's expected.txt. Set
// TC_UPDATE_EXPECTED=1 to rewrite expected.txt from what the import gives
// (then read the diff: every number must be the fixture's own).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "import_test_util.h"
#include "tc/analysis/report.h"
#include "tc/import/import.h"
#include "tc/store/reader.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"

namespace fs = std::filesystem;

namespace {

using tc::import::import_testing::kFixtures;
using tc::import::import_testing::read;

struct Scratch : tc::import::import_testing::Scratch {
  Scratch() : tc::import::import_testing::Scratch("tc_jax_import_test") {}
};

// Imports `dir` (a directory of jax-PID.log) into a new store named `name`; returns its path.
std::string import(const Scratch& s, const std::string& dir, const std::string& name, tc::import::ImportSummary* summary = nullptr) {
  return tc::import::import_testing::import_with_run(tc::import::import_jax_log, dir, (s.dir / (name + ".tcdb")).string(), summary);
}

// The imported tables as text: times in ms from the first compilation.
std::string tables(const std::string& path) {
  tc::import::import_testing::Tables tables(path);
  if (!tables.ok()) return "";
  auto dump = [&](const std::string& title, const std::string& sql) { tables.dump(title, sql); };
  const std::string t0 = "(SELECT min(ts) FROM compilations)";
  dump("compilations: frame, graph_id, step, ms after the first, ms, lowering ms, backend ms, reason, trigger, name at call site in function, "
       "structure, diff",
       "SELECT c.frame, c.graph_id, c.step, printf('%.3f', (c.ts - " + t0 + ") / 1e6), printf('%.3f', c.dur / 1e6), printf('%.3f', c.codegen_ns / 1e6), "
       "printf('%.3f', c.build_ns / 1e6), c.reason, c.trigger, l.name || ' at ' || l.file || ':' || l.line || ' in ' || l.function, c.shape_erased, c.diff "
       "FROM compilations c JOIN locations l ON l.id = c.loc_id WHERE c.framework = 'jax' ORDER BY c.ts, c.id");
  dump("compilation_inputs: graph_id, input, dim, old (JAX's before), new, dynamic",
       "SELECT graph_id, input, dim, old_value, new_value, dynamic FROM compilation_inputs ORDER BY graph_id, id");
  dump("explicit_evaluations: step, ms after the first compilation, ms, kind, file:line in function, reason",
       "SELECT e.step, printf('%.3f', (e.ts - " + t0 + ") / 1e6), printf('%.3f', e.dur / 1e6), e.kind, l.file || ':' || l.line || ' in ' || l.function, e.reason "
       "FROM explicit_evaluations e JOIN locations l ON l.id = e.loc_id WHERE e.framework = 'jax' ORDER BY e.ts, e.id");
  dump("steps: step, ms after the first compilation, ms",
       "SELECT step, printf('%.3f', (ts - " + t0 + ") / 1e6), printf('%.3f', dur / 1e6) FROM steps WHERE framework = 'jax' ORDER BY ts");
  dump("step_inputs: step, input, shape",
       "SELECT step, input, group_concat(value, 'x') FROM (SELECT * FROM step_inputs ORDER BY utid, step, input, dim) GROUP BY utid, step, input "
       "ORDER BY utid, step, input");
  dump("framework_imports: framework, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note",
       "SELECT framework, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note FROM framework_imports");
  return tables.text();
}

void diff_test(const std::string& fixture) {
  Scratch s;
  const std::string got = tables(import(s, kFixtures + fixture, fixture));
  tc::import::import_testing::expect_expected(fixture, got);
}

TEST(JaxLogImport, DynamicPadding) { diff_test("jax-0.10.2-dynamic-padding"); }
TEST(JaxLogImport, TruncatedImportsWhatIsComplete) { diff_test("jax-0.10.2-truncated"); }
TEST(JaxLogImport, UnknownKindIsCountedNotFatal) {
  diff_test("jax-0.10.2-unknown-kind");
  Scratch s;
  tc::import::ImportSummary sum;
  import(s, kFixtures + "jax-0.10.2-unknown-kind", "u", &sum);
  EXPECT_EQ(sum.unknown_kinds, 1);
  EXPECT_EQ(sum.malformed, 1);
  EXPECT_EQ(tc::import::describe_skipped(sum), "jax log: 1 record of an unknown kind and 1 malformed line skipped");
}

// A jitted function called with a new dtype, then a new shape; another with a
// new value of a static argument, then again with the same: the new dtype and
// the static argument are structure changes with JAX's own words as the diff,
// the new shape a shape change with the inputs, dims and old->new, and the
// cached call no compilation.
TEST(JaxLogImport, StructureChange) {
  diff_test("jax-0.10.2-structure-change");
  Scratch s;
  auto r = tc::store::Reader::open(import(s, kFixtures + "jax-0.10.2-structure-change", "s"));
  ASSERT_TRUE(r.ok());
  std::vector<std::string> got;
  auto q = r->query("SELECT c.reason, coalesce(c.diff, ''), l.line FROM compilations c JOIN locations l ON l.id = c.loc_id "
                    "WHERE c.framework = 'jax' AND c.trigger = 'jit_call' ORDER BY c.ts");
  while (q.next()) {
    const std::string diff(q.text(1));
    got.push_back(std::string(q.text(0)) + " " + std::to_string(q.i64(2)) + (diff.empty() ? "" : ": " + diff));
  }
  ASSERT_TRUE(q.status().ok()) << q.status().message();
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], "first 18");
  EXPECT_EQ(got[1], "structure_change 19: * at x, now i32[8,4] and before f32[8,4]; * at y, now i32[8,4] and before f32[8,4]");
  EXPECT_EQ(got[2], "shape_change 20");
  EXPECT_EQ(got[3], "first 21");
  EXPECT_TRUE(got[4].starts_with("structure_change 22: different input pytree; * at input path [1]['mode'], now")) << got[4];
  EXPECT_NE(got[4].find("Static(val='l2')"), std::string::npos) << got[4];
}

// The findings on the imported run: the input, its dim and every length that
// compiled, the pad plan with its saving, the short last batch, the forced
// evaluation's line, the steps.
TEST(JaxLogImport, FindingsOnTheImportedRun) {
  Scratch s;
  auto r = tc::store::Reader::open(import(s, kFixtures + "jax-0.10.2-dynamic-padding", "f"));
  ASSERT_TRUE(r.ok());
  auto rep = tc::analysis::analyze(*r);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->summary.steps, 11);
  EXPECT_EQ(rep->summary.step_source, "jit_call");
  int shape = 0, short_batch = 0, eval = 0;
  for (const auto& f : rep->findings) {
    if (f.kind == "recompilation.shape_change" && f.identity.starts_with("token_ids dim 1:")) {
      ++shape;
      EXPECT_EQ(f.identity, "token_ids dim 1: 16 19 20 21 24 39 40 50 93 98") << "each length that compiled (40 twice: compiled once)";
      EXPECT_GT(f.estimated_saving_s, 0) << f.suggestion;
      EXPECT_NE(f.suggestion.find("Pad token_ids dim 1 to"), std::string::npos) << f.suggestion;
    }
    if (f.kind == "recompilation.shape_change" && f.identity == "token_ids dim 0: 4 8") {
      ++short_batch;
      EXPECT_NE(f.suggestion.find("short last batch (4 instead of 8)"), std::string::npos) << f.suggestion;
    }
    if (f.kind == "explicit_evaluation") {
      ++eval;
      EXPECT_EQ(f.identity, "item at /src/samples/python/jax_classifier.py:139");
      EXPECT_NE(f.title.find("float() at jax_classifier.py:139"), std::string::npos) << f.title;
      EXPECT_NE(f.title.find("11 times in 11 steps"), std::string::npos) << f.title;
      // The waits (64.3 ms in all) are the steps' own computation: credited is only the host work after each read
      // up to the next dispatch, at most the wait (1.39 ms, from the log's own times).
      EXPECT_NE(f.evidence_json.find("\"total_s\":0.064264921,"), std::string::npos) << f.evidence_json;
      EXPECT_NEAR(f.estimated_saving_s, 0.00139, 0.00001) << f.suggestion;
      EXPECT_NE(f.suggestion.find("JAX runs the step asynchronously"), std::string::npos) << f.suggestion;
    }
  }
  EXPECT_EQ(shape, 1);
  EXPECT_EQ(short_batch, 1);
  EXPECT_EQ(eval, 1);
}

// jax.jit with token_ids padded to 32, 64 or 128 with repeats: each step under
// the size it ran against the script's own truth (truth.json beside the log:
// 11 steps; 32 -> 4 steps, 64 -> 5, 128 -> 2; padding to 128 is 50% padding;
// a short last batch of 4 rows). A repeat is a cache hit, not a compilation.
TEST(JaxLogImport, Buckets) { diff_test("jax-0.10.2-buckets"); }

TEST(JaxLogImport, BucketsFindingsMatchTheTruth) {
  Scratch s;
  auto r = tc::store::Reader::open(import(s, kFixtures + "jax-0.10.2-buckets", "b"));
  ASSERT_TRUE(r.ok());
  auto rep = tc::analysis::analyze(*r);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  tc::import::import_testing::expect_bucket_truth(*rep);
}

// XLA's memory_analysis() of each executable the hook saw (tests/python/jax_memory.py: batch 16, a short last
// batch of 4): a memory_plans row per compiled graph, peak = argument + output + temp - alias; the step compiled
// ahead of time at 32 and 128 at the end of the run: framework_memory rows, the batch model's points; each step's
// executable's peak a memory.live_bytes sample at its start (the memory lane).
TEST(JaxLogImport, Memory) {
  Scratch s;
  const std::string path = import(s, kFixtures + "jax-0.10.2-memory", "m");
  std::string got = tables(path);
  tc::import::import_testing::Tables t(path);
  ASSERT_TRUE(t.ok());
  t.dump("memory_plans: graph_id (its frame), peak, activation (temp), input (arguments), batch_size, capacity",
         "SELECT m.graph_id || ' (' || c.frame || ')', m.peak_bytes, m.activation_bytes, m.input_bytes, m.batch_size, m.capacity_bytes "
         "FROM memory_plans m JOIN compilations c ON c.graph_id = m.graph_id ORDER BY m.graph_id");
  t.dump("framework_memory: framework, function, batch_size, ran, peak, argument, output, temp, alias",
         "SELECT framework, function, batch_size, ran, peak_bytes, argument_bytes, output_bytes, temp_bytes, alias_bytes FROM framework_memory ORDER BY ts");
  t.dump("memory.live_bytes at each step's start: step, bytes (its executable's peak)",
         "SELECT s.step, c.value FROM counters c JOIN locations l ON l.id = c.loc_id JOIN steps s ON s.ts = c.ts AND s.utid = c.utid "
         "WHERE l.name = 'memory.live_bytes' ORDER BY c.ts");
  tc::import::import_testing::expect_expected("jax-0.10.2-memory", got + t.text());
}

// memory.headroom for the JAX run: the peak is XLA's own analysis of the step that ran (truth.txt: the script's
// memory_analysis(), 1175652 bytes); at a capacity where the suggested batch falls between two of the model's
// batches, its numbers are those of that segment (fixed + per sample = the interpolated peak), with every key of
// tc's own headroom finding and the method.
TEST(JaxLogImport, MemoryHeadroomAtTheSuggestedBatch) {
  Scratch s;
  auto r = tc::store::Reader::open(import(s, kFixtures + "jax-0.10.2-memory", "h"));
  ASSERT_TRUE(r.ok());
  tc::analysis::Options o;
  o.capacity_bytes = 1673782;  // (peak at 32 + peak at 128) / 2 / 0.9: the batch that fits is between them
  auto rep = tc::analysis::analyze(*r, o);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->summary.peak_bytes, 1175652);
  EXPECT_EQ(rep->summary.memory_source, "xla_memory_analysis");
  EXPECT_EQ(rep->summary.capacity_bytes, 1673782);
  const tc::analysis::Finding* f = nullptr;
  for (const auto& x : rep->findings) if (x.kind == "memory.headroom") f = &x;
  ASSERT_NE(f, nullptr) << "no memory.headroom for the JAX run";
  const auto ev = nlohmann::json::parse(f->evidence_json);
  for (const char* key : {"peak_bytes", "capacity_bytes", "batch_size", "fixed_bytes", "bytes_per_sample", "largest_batch_that_fits",
                          "suggested_batch", "lr_scale_linear", "lr_scale_sqrt", "method"})
    EXPECT_TRUE(ev.contains(key)) << key << " in " << f->evidence_json;
  EXPECT_EQ(ev["batch_size"], 16);
  // Points (16, 1175652), (32, 1257636), (128, 1755172); usable 0.9 * 1673782 = 1506404 bytes, on the segment 32..128:
  // 5182.67 bytes per sample, (1506404 - 1091791) / 5182.67 = 80.0 -> 80 fits (a multiple of 8).
  const double per_sample = (1755172.0 - 1257636.0) / 96.0;
  EXPECT_NEAR(ev["bytes_per_sample"].get<double>(), per_sample, 0.01);
  EXPECT_EQ(ev["fixed_bytes"], std::llround(1257636.0 - per_sample * 32));
  const int64_t suggested = ev["suggested_batch"];
  EXPECT_EQ(suggested, ev["largest_batch_that_fits"].get<int64_t>());
  EXPECT_GT(suggested, 32);
  EXPECT_LT(suggested, 128);
  EXPECT_NEAR(ev["predicted_peak_bytes"].get<double>(), 1257636.0 + per_sample * static_cast<double>(suggested - 32), 1.0);
  EXPECT_LE(ev["predicted_peak_bytes"].get<double>(), 0.9 * 1673782);
  EXPECT_DOUBLE_EQ(ev["lr_scale_linear"].get<double>(), static_cast<double>(suggested) / 16);
  EXPECT_NE(ev["method"].get<std::string>().find("memory_analysis() of jit(train_step) at batch 16 (ran) and 32, 128"), std::string::npos)
      << ev["method"];
}

// A missing directory writes nothing; garbage of every sort is counted, never fatal.
TEST(JaxLogImport, BadInputIsCountedNeverFatal) {
  Scratch s;
  {
    auto w = tc::store::Writer::create((s.dir / "none.tcdb").string());
    ASSERT_TRUE(w.ok());
    tc::import::ImportTarget t;
    t.writer = w->get();
    auto r = tc::import::import_jax_log((s.dir / "no-such-dir").string(), t);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->files, 0);
  }
  fs::create_directories(s.dir / "bad");
  std::ofstream(s.dir / "bad" / "jax-7.log")
      << "{\"k\":\"start\",\"ts\":5,\"pid\":-1}\n"                                        // a pid that is none
      << "{\"k\":\"call\",\"f\":0,\"ts\":9,\"end\":3}\n"                                   // ends before it starts
      << "{\"k\":\"dur\",\"ts\":9,\"event\":\"/jax/core/compile/backend_compile_duration\",\"s\":-1,\"fun\":\"f\"}\n"
      << "{\"k\":\"miss\",\"ts\":9,\"msg\":\"TRACING CACHE MISS at nowhere\"}\n"            // no call site
      << "{\"k\":\"eval\",\"ts\":9,\"dur\":1,\"kind\":\"rm -rf\",\"file\":\"x.py\",\"line\":1}\n"  // a kind the hook never writes
      << "{\"k\":\"oom\",\"f\":0,\"ts\":9,\"requested\":-1,\"batch\":8}\n"                 // a negative request
      << "[1, 2]\n"
      << std::string(3, '\0') << "\n"
      << "{\"k\":\"call\",\"f\":0,\"ts\":1";                                              // cut
  auto w = tc::store::Writer::create((s.dir / "bad.tcdb").string());
  ASSERT_TRUE(w.ok());
  tc::import::ImportTarget t;
  t.writer = w->get();
  auto r = tc::import::import_jax_log((s.dir / "bad").string(), t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->compilations, 0);
  EXPECT_EQ(r->steps, 0);
  EXPECT_EQ(r->malformed, 8);
  EXPECT_TRUE(r->truncated);
  ASSERT_TRUE((*w)->finalize().ok());
}

}  // namespace
