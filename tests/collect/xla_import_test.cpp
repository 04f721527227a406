// The PyTorch/XLA importer (tc/import/import.h, import_xla_log) as diff
// tests: each torch_xla-* fixture of tests/fixtures/frameworks (the log tc's
// Python hook and PyTorch/XLA's debug output wrote on a real run of
// samples/python/xla_classifier.py, see make_xla_fixtures.py) is imported into a fresh store, its tables are
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
  Scratch() : tc::import::import_testing::Scratch("tc_xla_import_test") {}
};

// Imports `dir` (a directory of xla-PID.log and pt_xla_debug.txt) into a new store named `name`; returns its path.
std::string import(const Scratch& s, const std::string& dir, const std::string& name, tc::import::ImportSummary* summary = nullptr) {
  return tc::import::import_testing::import_with_run(tc::import::import_xla_log, dir, (s.dir / (name + ".tcdb")).string(), summary);
}

// The imported tables as text: times in ms from the first compilation.
std::string tables(const std::string& path) {
  tc::import::import_testing::Tables tables(path);
  if (!tables.ok()) return "";
  auto dump = [&](const std::string& title, const std::string& sql) { tables.dump(title, sql); };
  const std::string t0 = "(SELECT min(ts) FROM compilations)";
  dump("compilations: frame (cause), graph_id, step, ms after the first, ms, reason, trigger, name at call site in function, structure, diff",
       "SELECT c.frame, c.graph_id, c.step, printf('%.3f', (c.ts - " + t0 + ") / 1e6), printf('%.3f', c.dur / 1e6), "
       "c.reason, c.trigger, l.name || ' at ' || l.file || ':' || l.line || ' in ' || l.function, c.shape_erased, c.diff "
       "FROM compilations c JOIN locations l ON l.id = c.loc_id WHERE c.framework = 'torch_xla' ORDER BY c.ts, c.id");
  dump("compilation_inputs: graph_id, input, dim, old (the step before's), new, dynamic",
       "SELECT graph_id, input, dim, old_value, new_value, dynamic FROM compilation_inputs ORDER BY graph_id, id");
  dump("explicit_evaluations: step, ms after the first compilation, ms, kind, file:line in function, reason",
       "SELECT e.step, printf('%.3f', (e.ts - " + t0 + ") / 1e6), printf('%.3f', e.dur / 1e6), e.kind, l.file || ':' || l.line || ' in ' || l.function, e.reason "
       "FROM explicit_evaluations e JOIN locations l ON l.id = e.loc_id WHERE e.framework = 'torch_xla' ORDER BY e.ts, e.id");
  dump("steps: step, ms after the first compilation, ms",
       "SELECT step, printf('%.3f', (ts - " + t0 + ") / 1e6), printf('%.3f', dur / 1e6) FROM steps WHERE framework = 'torch_xla' ORDER BY ts");
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

TEST(XlaLogImport, DynamicPadding) { diff_test("torch_xla-2.9.0-dynamic-padding"); }
TEST(XlaLogImport, TruncatedImportsWhatIsComplete) { diff_test("torch_xla-2.9.0-truncated"); }
TEST(XlaLogImport, UnknownKindIsCountedNotFatal) {
  diff_test("torch_xla-2.9.0-unknown-kind");
  Scratch s;
  tc::import::ImportSummary sum;
  import(s, kFixtures + "torch_xla-2.9.0-unknown-kind", "u", &sum);
  EXPECT_EQ(sum.unknown_kinds, 1);
  EXPECT_EQ(sum.malformed, 1);
  EXPECT_EQ(tc::import::describe_skipped(sum), "torch_xla log: 1 record of an unknown kind and 1 malformed line skipped");
}

// The findings on the imported run: the input, its dim and every length that
// compiled, the pad plan with its saving, the short last batch, the forced
// evaluation's line, the steps by torch_xla.sync().
TEST(XlaLogImport, FindingsOnTheImportedRun) {
  Scratch s;
  auto r = tc::store::Reader::open(import(s, kFixtures + "torch_xla-2.9.0-dynamic-padding", "f"));
  ASSERT_TRUE(r.ok());
  auto rep = tc::analysis::analyze(*r);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->summary.steps, 11);
  EXPECT_EQ(rep->summary.step_source, "mark_step");
  int shape = 0, short_batch = 0, eval = 0;
  for (const auto& f : rep->findings) {
    if (f.kind == "recompilation.shape_change" && f.identity.starts_with("token_ids dim 1:")) {
      ++shape;
      EXPECT_EQ(f.identity, "token_ids dim 1: 16 19 20 21 24 39 40 50 93 98") << "each length that compiled (40 twice: compiled once)";
      EXPECT_GT(f.estimated_saving_s, 0) << f.suggestion;
      EXPECT_TRUE(f.suggestion.starts_with("Pad token_ids dim 1 to") || f.suggestion.starts_with("Bucket token_ids dim 1 as")) << f.suggestion;
    }
    if (f.kind == "recompilation.shape_change" && f.identity == "token_ids dim 0: 4 8") {
      ++short_batch;
      EXPECT_NE(f.suggestion.find("short last batch (4 instead of 8)"), std::string::npos) << f.suggestion;
    }
    if (f.kind == "explicit_evaluation") {
      ++eval;
      EXPECT_EQ(f.identity, "item at /src/samples/python/xla_classifier.py:101");
      EXPECT_NE(f.title.find("item() at xla_classifier.py:101"), std::string::npos) << f.title;
      EXPECT_NE(f.title.find("11 times in 11 steps"), std::string::npos) << f.title;
    }
  }
  EXPECT_EQ(shape, 1);
  EXPECT_EQ(short_batch, 1);
  EXPECT_EQ(eval, 1);
}

// MpDeviceLoader (its sync at each batch, one before the first and one after
// the last that run no graph) and token_ids padded to 32, 64 or 128 with
// repeats: the steps, the shape change and its plan against the script's own
// truth (truth.json beside the log: 11 steps; 32 -> 4 steps, 64 -> 5,
// 128 -> 2; padding to 128 is 50% padding; a short last batch of 4 rows).
TEST(XlaLogImport, LoaderBuckets) { diff_test("torch_xla-2.9.0-loader-buckets"); }

TEST(XlaLogImport, LoaderBucketsFindingsMatchTheTruth) {
  Scratch s;
  auto r = tc::store::Reader::open(import(s, kFixtures + "torch_xla-2.9.0-loader-buckets", "lb"));
  ASSERT_TRUE(r.ok());
  auto rep = tc::analysis::analyze(*r);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  for (const auto& f : rep->findings) EXPECT_NE(f.kind, "recompilation.structure_change") << f.title << ": only the shapes changed";
  tc::import::import_testing::expect_bucket_truth(*rep);  // 11 steps, not the loader's 13 syncs
}

// The device's memory after each sync (the hook's xm.get_memory_info() fields, an accelerator's): a
// memory.live_bytes sample at the sync's end (the peak where given, else the bytes in use), the largest limit a
// memory.capacity_bytes sample, and the summary says where its peak came from. A count out of range, or the bytes
// in use without the limit, is a malformed record.
TEST(XlaLogImport, MemoryAfterEachSync) {
  Scratch s;
  fs::create_directories(s.dir / "mem");
  std::ofstream(s.dir / "mem" / "xla-7.log")
      << "{\"k\":\"start\",\"ts\":1000,\"pid\":7}\n"
      << "{\"k\":\"sync\",\"ts\":2000,\"end\":2500,\"file\":\"x.py\",\"line\":9,\"compiles\":1,\"compile_ns\":100,\"mem_used\":4096,\"mem_limit\":65536}\n"
      << "{\"k\":\"sync\",\"ts\":3000,\"end\":3500,\"file\":\"x.py\",\"line\":9,\"compiles\":0,\"compile_ns\":0,\"mem_used\":4096,\"mem_limit\":65536,\"mem_peak\":9000}\n"
      << "{\"k\":\"sync\",\"ts\":4000,\"end\":4500,\"file\":\"x.py\",\"line\":9,\"compiles\":0,\"compile_ns\":0,\"mem_used\":4096}\n"  // no limit: malformed
      << "{\"k\":\"sync\",\"ts\":5000,\"end\":5500,\"file\":\"x.py\",\"line\":9,\"compiles\":0,\"compile_ns\":0,\"mem_used\":-1,\"mem_limit\":65536}\n"  // malformed
      << "{\"k\":\"sync\",\"ts\":6000,\"end\":6500,\"file\":\"x.py\",\"line\":9,\"compiles\":0,\"compile_ns\":0}\n";
  tc::import::ImportSummary sum;
  const std::string path = import(s, (s.dir / "mem").string(), "mem", &sum);
  EXPECT_EQ(sum.malformed, 2);
  EXPECT_EQ(sum.steps, 3);
  tc::import::import_testing::Tables tables(path);
  tables.dump("counters: name, whose, ts, value", "SELECT l.name, l.function, c.ts, c.value FROM counters c JOIN locations l ON l.id = c.loc_id "
              "ORDER BY l.name, c.ts");
  EXPECT_EQ(tables.text(), "== counters: name, whose, ts, value\nmemory.capacity_bytes | torch_xla | 2500 | 65536.0\n"
                           "memory.live_bytes | torch_xla | 2500 | 4096.0\nmemory.live_bytes | torch_xla | 3500 | 9000.0\n");
  auto reader = tc::store::Reader::open(path);
  ASSERT_TRUE(reader.ok());
  auto rep = tc::analysis::analyze(*reader);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->summary.memory_source, "xla_memory_info");
  EXPECT_EQ(rep->summary.peak_bytes, 9000);
  EXPECT_EQ(rep->summary.capacity_bytes, 65536);
}

// A missing directory writes nothing; garbage of every sort is counted, never fatal.
TEST(XlaLogImport, BadInputIsCountedNeverFatal) {
  Scratch s;
  {
    auto w = tc::store::Writer::create((s.dir / "none.tcdb").string());
    ASSERT_TRUE(w.ok());
    tc::import::ImportTarget t;
    t.writer = w->get();
    auto r = tc::import::import_xla_log((s.dir / "no-such-dir").string(), t);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->files, 0);
  }
  fs::create_directories(s.dir / "bad");
  std::ofstream(s.dir / "bad" / "xla-7.log")
      << "{\"k\":\"start\",\"ts\":5,\"pid\":-1}\n"                                           // a pid that is none
      << "{\"k\":\"sync\",\"ts\":9,\"end\":3,\"file\":\"x.py\",\"line\":1,\"compiles\":1,\"compile_ns\":1}\n"  // ends before it starts
      << "{\"k\":\"sync\",\"ts\":9,\"end\":10,\"file\":\"x.py\",\"line\":1,\"compiles\":-1,\"compile_ns\":1}\n"
      << "{\"k\":\"input\",\"ts\":9,\"name\":\"x\",\"file\":\"x.py\",\"line\":1,\"shape\":[8,\"a\"]}\n"
      << "{\"k\":\"eval\",\"ts\":9,\"dur\":1,\"kind\":\"rm -rf\",\"file\":\"x.py\",\"line\":1,\"compiles\":0,\"compile_ns\":0}\n"
      << "[1, 2]\n"
      << std::string(3, '\0') << "\n"
      << "{\"k\":\"sync\",\"ts\":1";                                                          // cut
  std::ofstream(s.dir / "bad" / "pt_xla_debug.txt") << "Compilation Analysis:   Compilation Cause\nCompilation Analysis:   user torch_xla.sync\n"
                                                    << "Compilation Analysis: Python Frame Triggered Execution: \nCompilation Analysis:   main (x.py:nope)\n";
  auto w = tc::store::Writer::create((s.dir / "bad.tcdb").string());
  ASSERT_TRUE(w.ok());
  tc::import::ImportTarget t;
  t.writer = w->get();
  auto r = tc::import::import_xla_log((s.dir / "bad").string(), t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->compilations, 0);
  EXPECT_EQ(r->steps, 0);
  EXPECT_EQ(r->malformed, 8);
  EXPECT_TRUE(r->truncated);
  ASSERT_TRUE((*w)->finalize().ok());
}

}  // namespace
