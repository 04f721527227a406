// Framework importers (tc/import/import.h) as diff tests: each fixture of
// tests/fixtures/frameworks (real TORCH_TRACE logs, see
// make_torch_fixtures.py) is imported into a fresh store, its tables are
// printed as text, and the text must equal the fixture's expected.txt. Set
// TC_UPDATE_EXPECTED=1 to rewrite expected.txt from what the import gives
// (then read the diff: every number must be the fixture's own).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "../../profiler/import/src/json.h"
#include "import_test_util.h"
#include "tc/analysis/report.h"
#include "tc/analysis/timeline/timeline.h"
#include "tc/import/import.h"
#include "tc/store/reader.h"
#include "tc/store/writer.h"

namespace fs = std::filesystem;

namespace {

using tc::import::import_testing::kFixtures;
using tc::import::import_testing::read;

struct Scratch : tc::import::import_testing::Scratch {
  Scratch() : tc::import::import_testing::Scratch("tc_import_test") {}
};

// A fixture's clock.txt: the wall clock and CLOCK_MONOTONIC read together before its run ({0, 0} without one).
std::pair<uint64_t, uint64_t> clock_of(const std::string& fixture) {
  std::istringstream in(read(kFixtures + fixture + "/clock.txt"));
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l.starts_with("#")) continue;
    std::istringstream pair(l);
    uint64_t unix_ns = 0, monotonic_ns = 0;
    pair >> unix_ns >> monotonic_ns;
    return {unix_ns, monotonic_ns};
  }
  return {0, 0};
}

// Imports `fixture` into a new store; returns the store's path.
std::string import(const Scratch& s, const std::string& fixture, tc::import::ImportSummary* summary = nullptr) {
  const std::string path = (s.dir / (fixture + ".tcdb")).string();
  auto w = tc::store::Writer::create(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return path;
  // The run's clock pair: its wall clock 1796149600 s after the epoch is store time 1 s.
  tc::import::ImportTarget t;
  t.writer = w->get();
  t.start_ts = 1'000'000'000;
  t.start_unix_ns = 1'796'149'600'000'000'000;
  // A run with the Python hook's log: its own pair of clocks (the hook's times are CLOCK_MONOTONIC's).
  if (auto [unix_ns, monotonic_ns] = clock_of(fixture); unix_ns != 0) {
    t.start_ts = monotonic_ns;
    t.start_unix_ns = unix_ns;
  }
  t.first_graph_id = 100;
  t.first_location_id = 50;
  auto r = tc::import::import_torch_trace(kFixtures + fixture, t);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok() && summary) *summary = *r;
  EXPECT_TRUE((*w)->finalize().ok());
  return path;
}

// The imported tables as text: times in ms from the first compilation.
std::string tables(const std::string& path) {
  tc::import::import_testing::Tables tables(path);
  if (!tables.ok()) return "";
  auto dump = [&](const std::string& title, const std::string& sql) { tables.dump(title, sql); };
  const std::string t0 = "(SELECT min(ts) FROM compilations)";
  dump("compilations: frame, graph_id, step, ms after the first, ms, reason, trigger, function file:line, ops, cache, failure, diff",
       "SELECT c.frame, c.graph_id, c.step, printf('%.3f', (c.ts - " + t0 + ") / 1e6), printf('%.3f', c.dur / 1e6), c.reason, c.trigger, "
       "l.function || ' ' || l.file || ':' || l.line, c.nodes_before, c.cache, c.failure, c.diff "
       "FROM compilations c JOIN locations l ON l.id = c.loc_id WHERE c.framework = 'torch.compile' ORDER BY c.ts, c.id");
  dump("compilation_inputs: graph_id, input, dim, old, new, dynamic",
       "SELECT graph_id, input, dim, old_value, new_value, dynamic FROM compilation_inputs ORDER BY graph_id, id");
  dump("explicit_evaluations: graph_id, step, ms after the first compilation, kind, file:line in function, nodes, reason",
       "SELECT e.graph_id, e.step, printf('%.3f', (e.ts - " + t0 + ") / 1e6), e.kind, l.file || ':' || l.line || ' in ' || l.function, e.nodes, e.reason "
       "FROM explicit_evaluations e JOIN locations l ON l.id = e.loc_id WHERE e.framework = 'torch.compile' ORDER BY e.ts, e.id");
  dump("framework_imports: framework, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note",
       "SELECT framework, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note FROM framework_imports");
  return tables.text();
}

void diff_test(const std::string& fixture) {
  Scratch s;
  const std::string got = tables(import(s, fixture));
  tc::import::import_testing::expect_expected(fixture, got);
}

TEST(TorchTraceImport, DynamicPadding) { diff_test("torch-2.15.0-dynamic-padding"); }
// Each break's registry code, and a break inside library code (torch's DDP,
// Python's contextlib) at the user's line that led into it, the library frame kept.
TEST(TorchTraceImport, GraphBreaksKeepTheirCodeAndTheUsersLine) {
  Scratch s;
  const std::string path = import(s, "torch-2.15.0-graph-breaks");
  tc::import::import_testing::Tables more(path);
  more.dump("graph breaks: code, kind, file:line in function, broke_at",
            "SELECT e.code, e.kind, l.file || ':' || l.line || ' in ' || l.function, e.broke_at "
            "FROM explicit_evaluations e JOIN locations l ON l.id = e.loc_id ORDER BY e.ts, e.id");
  tc::import::import_testing::expect_expected("torch-2.15.0-graph-breaks", tables(path) + more.text());
}
TEST(TorchTraceImport, RecompileLimit) { diff_test("torch-2.15.0-recompile-limit"); }
TEST(TorchTraceImport, TruncatedImportsWhatIsComplete) { diff_test("torch-2.15.0-truncated"); }
TEST(TorchTraceImport, UnknownKindIsCountedNotFatal) {
  diff_test("torch-2.15.0-unknown-kind");
  Scratch s;
  tc::import::ImportSummary sum;
  import(s, "torch-2.15.0-unknown-kind", &sum);
  EXPECT_EQ(sum.unknown_kinds, 1);
  EXPECT_EQ(sum.malformed, 1);
  EXPECT_EQ(tc::import::describe_skipped(sum), "torch.compile trace: 1 record of an unknown kind and 1 malformed line skipped");
}

// The backward of each compiled frame (bwd_compilation_metrics) is a compilation row of its own,
// trigger 'backward', joined to its forward by compile id; every compile record torch logged is counted.
TEST(TorchTraceImport, BackwardIsACompilation) { diff_test("torch-2.15.0-backward"); }

// compile_s within 10% of torch's own records, forward plus backward (the fixture's truth.txt).
TEST(TorchTraceImport, BackwardCompileTimeIsInCompileS) {
  Scratch s;
  std::istringstream truth(read(kFixtures + "torch-2.15.0-backward/truth.txt"));
  double torch_s = 0;
  for (std::string l; std::getline(truth, l);)
    if (l.starts_with("compile_s ")) torch_s = std::stod(l.substr(10));
  ASSERT_GT(torch_s, 0);
  const std::string path = tc::import::import_testing::import_with_run(tc::import::import_torch_trace, kFixtures + "torch-2.15.0-backward",
                                                                       (s.dir / "backward.tcdb").string());
  auto r = tc::store::Reader::open(path);
  ASSERT_TRUE(r.ok());
  auto rep = tc::analysis::analyze(*r);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_NEAR(rep->summary.compile_s, torch_s, 0.1 * torch_s);
  // Every record counted once: the sum itself, not just near it (without the backward it was 6.5% short here).
  EXPECT_NEAR(rep->summary.compile_s, torch_s, 1e-3);
  // A backward is no more compilations of its frame and no recompilation.
  auto fwd = r->scalar_i64("SELECT count(*) FROM compilations WHERE trigger <> 'backward'");
  auto re = r->scalar_i64("SELECT count(*) FROM compilations WHERE trigger <> 'backward' AND reason <> 'first'");
  ASSERT_TRUE(fwd.ok() && re.ok());
  EXPECT_EQ(rep->summary.compilations, *fwd);
  EXPECT_EQ(rep->summary.recompilations, *re);
}

// torch < 2.6: the backward's times are in aot_autograd_backward_compilation_metrics (seconds, the compile id in
// its envelope), and its bwd_compilation_metrics has none: one row. A backward whose forward is missing is 'first'.
TEST(TorchTraceImport, OlderTorchsBackwardRecordsAreOneRow) {
  Scratch s;
  fs::create_directories(s.dir / "old");
  const std::string h = "V1201 00:00:00.000000 7 x.py:1] ";
  std::ofstream(s.dir / "old" / "a.log")
      << h << R"({"compilation_metrics": {"compile_id": "0/0", "co_name": "f", "start_time": 100.0, "entire_frame_compile_time_s": 2.0}, "frame_id": 0, "frame_compile_id": 0})" "\n"
      << h << R"({"bwd_compilation_metrics": {"compile_id": "0/0", "inductor_compile_time_s": 0.4, "code_gen_time_s": 0.1}, "frame_id": 0, "frame_compile_id": 0})" "\n"
      << h << R"({"aot_autograd_backward_compilation_metrics": {"start_time": 103.0, "elapsed_time": 0.5}, "frame_id": 0, "frame_compile_id": 0})" "\n"
      << h << R"({"bwd_compilation_metrics": {"compile_id": "1/2", "start_time_us": 105000000, "duration_us": 300000}, "frame_id": 1, "frame_compile_id": 2})" "\n";
  auto w = tc::store::Writer::create((s.dir / "old.tcdb").string());
  ASSERT_TRUE(w.ok());
  tc::import::ImportTarget t;
  t.writer = w->get();
  auto r = tc::import::import_torch_trace((s.dir / "old").string(), t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->compilations, 3);
  EXPECT_EQ(r->malformed, 0);
  ASSERT_TRUE((*w)->finalize().ok());
  tc::import::import_testing::Tables tables((s.dir / "old.tcdb").string());
  tables.dump("", "SELECT frame, dur, reason, trigger FROM compilations ORDER BY ts");
  EXPECT_EQ(tables.text(), "== \n0/0 | 2000000000 | first | frame_call\n0/0 | 500000000 | first | backward\n1/2 | 300000000 | first | backward\n");
}

// The viewer's times and tc-analyze recompiles' `at` are both from the run's
// start (a Python program's first event comes seconds after it): one clock.
TEST(TorchTraceImport, ViewerTimesAreFromTheRunStartAsTcAnalyzes) {
  Scratch s;
  const std::string path = tc::import::import_testing::import_with_run(tc::import::import_torch_trace, kFixtures + "torch-2.15.0-backward",
                                                                       (s.dir / "clock.tcdb").string());
  auto r = tc::store::Reader::open(path);
  ASSERT_TRUE(r.ok());
  auto run_start = r->scalar_i64("SELECT start_ts FROM run WHERE id = 1");
  auto first = r->scalar_i64("SELECT min(ts) FROM compilations");
  ASSERT_TRUE(run_start.ok() && first.ok());
  ASSERT_LT(*run_start, *first);
  auto tl = tc::analysis::timeline::load_timeline(*r);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  EXPECT_EQ(tl->start_ts, *first);
  EXPECT_EQ(tl->origin_ts, *run_start) << "the viewer would show times from the first event, tc-analyze from the run's start";
  // The backward's compilation is drawn and named, not an unlabelled gap in step 0.
  std::vector<std::string> labels;
  for (const auto& lane : tl->lanes)
    for (const auto& t : lane.tracks)
      if (t.kind == tc::analysis::timeline::TrackKind::kCompilations)
        for (uint32_t i = 0; i < t.size(); ++i) labels.push_back(tc::analysis::timeline::event_label(*tl, t, i));
  EXPECT_EQ(labels, (std::vector<std::string>{"compile g100 first", "compile g101 first", "compile g102 backward", "compile g103 shape_change",
                                              "compile g104 shape_change"}));
}

// torch.compile with token_ids padded to 32, 64 or 128 with repeats
// (samples/python/torch_buckets.py; truth.json beside the trace: 11 steps,
// 32 -> 4 steps, 64 -> 5, 128 -> 2, a short last batch of 4 rows). Automatic
// dynamic makes the length dynamic at 64, so the steps after that compile
// nothing and the trace has no size for them; tc's Python hook records each
// step's inputs (tc-torch-PID.jsonl), and without the collector's steps its
// records are the steps.
TEST(TorchTraceImport, Buckets) {
  Scratch s;
  const std::string fixture = "torch-2.15.0-buckets";
  const std::string path = import(s, fixture);
  tc::import::import_testing::Tables more(path);
  more.dump("steps: step, ms, framework", "SELECT step, printf('%.3f', dur / 1e6), framework FROM steps ORDER BY ts");
  more.dump("step_inputs: step, input, shape",
            "SELECT step, input, group_concat(value, 'x') FROM (SELECT * FROM step_inputs ORDER BY utid, step, input, dim) GROUP BY utid, step, input "
            "ORDER BY utid, step, input");
  tc::import::import_testing::expect_expected(fixture, tables(path) + more.text());
}

// A fixture with the hook's log imported with the run row and its own clock pair (clock.txt), then analyzed.
tc::analysis::Report analyze_with_its_clock(const Scratch& s, const std::string& fixture) {
  const auto [unix_ns, monotonic_ns] = clock_of(fixture);
  EXPECT_NE(unix_ns, 0u) << fixture << " has no clock.txt";
  const std::string path = tc::import::import_testing::import_with_run(tc::import::import_torch_trace, kFixtures + fixture,
                                                                       (s.dir / (fixture + "-run.tcdb")).string(), nullptr, monotonic_ns, unix_ns);
  auto r = tc::store::Reader::open(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  auto rep = tc::analysis::analyze(*r);
  EXPECT_TRUE(rep.ok()) << rep.status().message();
  return rep.ok() ? *rep : tc::analysis::Report{};
}

TEST(TorchTraceImport, BucketsFindingsMatchTheTruth) {
  Scratch s;
  tc::import::import_testing::expect_bucket_truth(analyze_with_its_clock(s, "torch-2.15.0-buckets"));
}

// A Hugging Face Trainer run (hf_trainer_padding.py: torch_compile=True,
// DataCollatorWithPadding, a tiny BERT from a config; truth.json): the
// collator pads each batch to its longest, torch.compile made input_ids' length
// dynamic at its second size, and later batches reached 94 tokens. From the
// trace alone tc said "pad to 64"; with the hook's records each step counts
// under the length it ran and the pad size is never below the data's longest.
// torch names the inputs by the frame it compiled, transformers' decorator
// around forward (wrapper(self, *args, **kwargs)): kwargs.input_ids, and the hook
// names them so too.
TEST(TorchTraceImport, HfTrainerPadsNoLowerThanTheLongestBatch) {
  Scratch s;
  const std::string fixture = "torch-2.15.0-hf-trainer";
  const tc::analysis::Report rep = analyze_with_its_clock(s, fixture);
  tc::test::JsonValue truth = tc::test::JsonParser(read(kFixtures + fixture + "/truth.json")).parse();
  std::map<int64_t, int64_t> expected;
  for (const auto& [size, steps] : truth["input_ids dim 1 steps per size"].o) expected[std::stoll(size)] = static_cast<int64_t>(steps.n);
  EXPECT_EQ(rep.summary.steps, truth["steps"].n);
  const tc::analysis::Finding* length = nullptr;
  for (const auto& f : rep.findings)
    if (f.kind == "recompilation.shape_change" && (f.identity.starts_with("kwargs.input_ids dim 1:") ||
                                                   f.evidence_json.find("\"kwargs.input_ids dim 1\"") != std::string::npos))
      length = &f;
  std::string all;
  for (const auto& f : rep.findings) all += f.kind + " " + f.identity + ": " + f.title + "\n";
  ASSERT_NE(length, nullptr) << all;
  tc::test::JsonValue ev = tc::test::JsonParser(length->evidence_json).parse();
  std::map<int64_t, int64_t> steps;
  for (const auto& v : ev["values"].a) steps[static_cast<int64_t>(v["value"].n)] = static_cast<int64_t>(v["steps"].n);
  EXPECT_EQ(steps, expected) << length->evidence_json;
  EXPECT_GE(ev["pad"]["to"].n, truth["largest"].n) << length->suggestion;
  EXPECT_NEAR(ev["pad"]["padding_waste"].n, truth["padding share at the largest"].n, 0.05);
  EXPECT_EQ(ev["steps_unrecorded"].n, 0);
  EXPECT_EQ(length->suggestion.find("to 64"), std::string::npos) << length->suggestion;
}

// A missing directory writes nothing; garbage of every sort is counted, never fatal.
TEST(TorchTraceImport, BadInputIsCountedNeverFatal) {
  Scratch s;
  {
    auto w = tc::store::Writer::create((s.dir / "none.tcdb").string());
    ASSERT_TRUE(w.ok());
    tc::import::ImportTarget t;
    t.writer = w->get();
    auto r = tc::import::import_torch_trace((s.dir / "no-such-dir").string(), t);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->files, 0);
  }
  fs::create_directories(s.dir / "bad");
  std::ofstream(s.dir / "bad" / "a.log") << "V1201 00:00:00.000000 7 x.py:1] {\"compilation_metrics\": {\"compile_id\": 5}}\n"
                                         << "V1201 00:00:00.000000 7 x.py:1] {\"compilation_metrics\": {\"compile_id\": \"0/0\", \"start_time_us\": -5}}\n"
                                         << "V1201 00:00:00.000000 7 x.py:1] {not json\n"
                                         << "\torphan payload? no: it belongs to the malformed line before, which has no record\n"
                                         << "V1201 00:00:00.000000 99999999999 x.py:1] {\"str\": [\"a\", 0]}\n"
                                         << "V1201 00:00:00.000000 7 x.py:1] {\"chromium_event\": {}}\n"
                                         << "\t{\"name\": \"automatic_dynamic\", \"args\": {\"name\": 3}}\n"
                                         << std::string(3, '\0') << "\n"
                                         << "V1201 00:00:00.000000 7 x.py:1] {\"compilation_metrics\": {\"compile_id\": \"0/0\", \"start_time_us\": 1";
  auto w = tc::store::Writer::create((s.dir / "bad.tcdb").string());
  ASSERT_TRUE(w.ok());
  tc::import::ImportTarget t;
  t.writer = w->get();
  auto r = tc::import::import_torch_trace((s.dir / "bad").string(), t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->compilations, 0);
  EXPECT_EQ(r->malformed, 7);
  EXPECT_TRUE(r->truncated);
  ASSERT_TRUE((*w)->finalize().ok());
}

// The Python hook's log beside the trace (tc-torch-PID.jsonl): each step's
// first compiled call goes to the collector's step its time falls in, its
// shapes carried over until they change; a malformed record is counted and
// breaks the carrying; hook names become torch's (batch['y'] -> batch.y).
// Without the collector's steps, the hook's records are the steps.
TEST(TorchTraceImport, TheHooksStepRecords) {
  Scratch s;
  fs::create_directories(s.dir / "hook");
  std::ofstream(s.dir / "hook" / "a.log") << "V1201 00:00:00.000000 7 x.py:1] {\"str\": [\"a\", 0]}\n";
  std::ofstream(s.dir / "hook" / "tc-torch-7.jsonl")
      << R"({"k":"start","ts":1000,"pid":7,"torch":"2.15.0"})" "\n"
      << R"({"k":"step","end":2000,"call":1500,"in":{"x":[8,32]}})" "\n"
      << R"({"k":"step","end":3000,"call":2500})" "\n"
      << R"({"k":"step","end":2900,"call":2950})" "\n"               // ends before the step before: malformed
      << R"({"k":"step","end":4000,"call":3500})" "\n"               // what it carries over is unknown
      << R"({"k":"step","end":5000,"in":{"x":[8,64]}})" "\n"         // shapes without a call: malformed
      << R"({"k":"step","end":6000,"call":5500,"in":{"batch['y']":[4,64]}})" "\n"
      << R"({"k":"step","end":7000})" "\n"                           // a step without a compiled call
      << R"({"k":"later","ts":1})" "\n"
      << "not json\n";
  auto dump = [&](bool collector) {
    const std::string path = (s.dir / (collector ? "marked.tcdb" : "own.tcdb")).string();
    auto w = tc::store::Writer::create(path);
    EXPECT_TRUE(w.ok());
    tc::import::ImportTarget t;
    t.writer = w->get();
    if (collector) t.step_ends[7] = {2100, 3100, 4100, 5100, 6100, 7100};
    auto r = tc::import::import_torch_trace((s.dir / "hook").string(), t);
    EXPECT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->malformed, 3);
    EXPECT_EQ(r->unknown_kinds, 1);
    EXPECT_EQ(r->steps, collector ? 0 : 5);
    EXPECT_TRUE((*w)->finalize().ok());
    tc::import::import_testing::Tables tables(path);
    tables.dump("", "SELECT step, ts, dur FROM steps ORDER BY ts");
    tables.dump("", "SELECT step, input, group_concat(value, 'x') FROM (SELECT * FROM step_inputs ORDER BY step, input, dim) GROUP BY step, input");
    return tables.text();
  };
  EXPECT_EQ(dump(true), "== \n== \n0 | x | 8x32\n1 | x | 8x32\n4 | batch.y | 4x64\n");
  EXPECT_EQ(dump(false), "== \n0 | 1000 | 1000\n1 | 2000 | 1000\n2 | 3000 | 1000\n3 | 4000 | 2000\n4 | 6000 | 1000\n"
                         "== \n0 | x | 8x32\n1 | x | 8x32\n3 | batch.y | 4x64\n");
}

// The hook's "mem" of a step (the training's tensors by role, issue #30):
// carried over until it changes, a memory.live_bytes counter sample at each
// step's start (location function 'torch'; 'torch.cuda' for the allocator's
// peak on a GPU), and each batch's largest step a memory_plans row whose
// activations are the bytes that scale with the batch; torch's out-of-memory
// error an out_of_memory row. A count out of range is a malformed record, and
// what it would carry over is unknown.
TEST(TorchTraceImport, TheHooksMemoryRecords) {
  Scratch s;
  fs::create_directories(s.dir / "mem");
  std::ofstream(s.dir / "mem" / "a.log") << "V1201 00:00:00.000000 7 x.py:1] {\"str\": [\"a\", 0]}\n";
  std::ofstream(s.dir / "mem" / "tc-torch-7.jsonl")
      << R"({"k":"start","ts":1000,"pid":7,"torch":"2.15.0"})" "\n"
      << R"({"k":"step","end":2000,"call":1500,"in":{"x":[8,32]},"mem":{"param":100,"grad":100,"opt":200,"act":80,"batch":8,"cap":4096,"cap_src":"ram"}})" "\n"
      << R"({"k":"step","end":3000,"call":2500})" "\n"
      << R"({"k":"step","end":4000,"call":3500,"in":{"x":[16,32]},"mem":{"param":100,"grad":100,"opt":200,"act":160,"batch":16,"cap":4096,"cap_src":"ram"}})" "\n"
      << R"({"k":"step","end":5000,"call":4500,"mem":{"param":-1,"grad":100,"opt":200,"act":160,"batch":16,"cap":4096}})" "\n"  // malformed
      << R"({"k":"step","end":6000,"call":5500})" "\n"  // after a lost record: its memory is unknown
      << R"({"k":"step","end":7000,"call":6500,"mem":{"param":100,"grad":100,"opt":200,"act":0,"batch":0,"cap":4096,"cap_src":"ram","cuda":[900,1000]}})" "\n"
      << R"({"k":"step","end":8000,"mem":{"param":100,"grad":100,"opt":200,"act":0,"batch":0,"cap":4096,"cuda":[900]}})" "\n"  // malformed
      << R"({"k":"oom","ts":7500,"requested":5000,"batch":32,"mem":{"param":100,"grad":100,"opt":200,"act":80,"batch":8,"cap":4096}})" "\n"
      << R"({"k":"oom","ts":7600,"requested":-5,"batch":32})" "\n";  // malformed
  const std::string path = (s.dir / "mem.tcdb").string();
  {
    auto w = tc::store::Writer::create(path);
    ASSERT_TRUE(w.ok());
    tc::import::ImportTarget t;
    t.writer = w->get();
    auto r = tc::import::import_torch_trace((s.dir / "mem").string(), t);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->malformed, 3);
    ASSERT_TRUE((*w)->finalize().ok());
  }
  tc::import::import_testing::Tables tables(path);
  tables.dump("oom: ts, step, requested, live, capacity, param, grad, opt, batch",
              "SELECT ts, step, requested_bytes, live_bytes, capacity_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes, batch_size "
              "FROM out_of_memory");
  tables.dump("counters: ts, value, whose", "SELECT c.ts, c.value, l.function FROM counters c JOIN locations l ON l.id = c.loc_id WHERE "
              "l.name = 'memory.live_bytes' ORDER BY c.ts");
  tables.dump("plans: peak, param, grad, opt, act, batch_bytes, batch, capacity",
              "SELECT peak_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes, activation_bytes, batch_bytes, batch_size, capacity_bytes "
              "FROM memory_plans ORDER BY peak_bytes");
  EXPECT_EQ(tables.text(),
            "== oom: ts, step, requested, live, capacity, param, grad, opt, batch\n7500 | 5 | 5000 | 400 | 4096 | 100 | 100 | 200 | 32\n"
            "== counters: ts, value, whose\n1000 | 480.0 | torch\n2000 | 480.0 | torch\n3000 | 560.0 | torch\n6000 | 900.0 | torch.cuda\n"
            "== plans: peak, param, grad, opt, act, batch_bytes, batch, capacity\n480 | 100 | 100 | 200 | 80 | 80 | 8 | 4096\n"
            "560 | 100 | 100 | 200 | 160 | 160 | 16 | 4096\n900 | 100 | 100 | 200 | 0 | 0 | NULL | 4096\n");
}

// The findings on an imported run, with steps as tc's hook would give them:
// 13 steps of 100 ms from the first compilation, written as steps rows.
tc::analysis::Report analyze_fixture(const Scratch& s, const std::string& fixture) {
  const std::string path = (s.dir / (fixture + "-steps.tcdb")).string();
  {
    auto w = tc::store::Writer::create(path);
    EXPECT_TRUE(w.ok());
    tc::import::ImportTarget t;
    t.writer = w->get();
    t.start_ts = 1'000'000'000;
    t.start_unix_ns = 1'796'149'600'000'000'000;
    // The fixture's first compilation starts about 202 s after that wall clock (18:30:02): steps end every 100 ms from 202.5 s.
    for (int k = 0; k < 13; ++k) t.step_ends[7681].push_back(1'000'000'000 + 202'500'000'000 + int64_t{k} * 100'000'000);
    auto r = tc::import::import_torch_trace(kFixtures + fixture, t);
    EXPECT_TRUE(r.ok());
    int64_t prev = 1'000'000'000 + 202'400'000'000;
    for (int k = 0; k < 13; ++k) {
      int64_t end = t.step_ends[7681][static_cast<size_t>(k)];
      EXPECT_TRUE((*w)->row(tc::store::schema::steps).null().i64(0).i64(prev).i64(end - prev).i64(k).i64(0).text("torch").insert().ok());
      prev = end;
    }
    // The run row, as a collector writes it: started at store time 1 s, ended 10 s later.
    EXPECT_TRUE((*w)->row(tc::store::schema::run).i64(1).text("0").text("[\"python\"]").text("/").text("h").text("tc-profile").text("monotonic")
                    .i64(1'000'000'000).i64(211'000'000'000).i64(1'796'149'600'000'000'000).i64(0).null().i64(1).i64(0).i64(0).text("")
                    .null().text("tc").null().insert().ok());
    EXPECT_TRUE((*w)->finalize().ok());
  }
  auto r = tc::store::Reader::open(path);
  EXPECT_TRUE(r.ok());
  auto report = tc::analysis::analyze(*r);
  EXPECT_TRUE(report.ok()) << report.status().message();
  return report.ok() ? *report : tc::analysis::Report{};
}

TEST(TorchTraceFindings, RecompileLimitIsFoundWithItsStep) {
  Scratch s;
  tc::analysis::Report rep = analyze_fixture(s, "torch-2.15.0-recompile-limit");
  int limit = 0, shape = 0;
  for (const auto& f : rep.findings) {
    if (f.kind == "recompilation.limit_reached") {
      ++limit;
      // 0/3 started 2038.697 ms after 0/0, i.e. after the step ends at 202.5 .. 203.x s: the trace's own times.
      EXPECT_NE(f.title.find("loss_of"), std::string::npos) << f.title;
      EXPECT_NE(f.evidence_json.find("\"compilations_before\":3"), std::string::npos) << f.evidence_json;
      EXPECT_NE(f.evidence_json.find("Dynamo recompile limit exceeded"), std::string::npos) << f.evidence_json;
    }
    if (f.kind == "recompilation.shape_change" && f.identity.starts_with("token_ids dim 1:")) {
      ++shape;
      EXPECT_EQ(f.identity, "token_ids dim 1: 21 39 40") << "the sizes that compiled; 16 hit the limit and compiled nothing";
    }
  }
  EXPECT_EQ(limit, 1);
  EXPECT_EQ(shape, 1);
}

TEST(TorchTraceFindings, DynamicDimsAreFound) {
  Scratch s;
  tc::analysis::Report rep = analyze_fixture(s, "torch-2.15.0-dynamic-padding");
  std::set<std::string> dynamic;
  for (const auto& f : rep.findings)
    if (f.kind == "recompilation.dynamic_marked") dynamic.insert(f.identity);
  EXPECT_EQ(dynamic, (std::set<std::string>{"token_ids dim 1", "token_ids dim 0", "targets dim 0"}));
}

// docs/findings.md's remedies by the break's kind, and a break inside library
// code sends the user to their own line, never to the library's file.
TEST(TorchTraceFindings, GraphBreakRemediesByKind) {
  Scratch s;
  tc::analysis::Report rep = analyze_fixture(s, "torch-2.15.0-graph-breaks");
  std::map<std::string, const tc::analysis::Finding*> at;  // call site's line -> finding
  for (const auto& f : rep.findings) {
    if (f.kind != "explicit_evaluation") continue;
    at[f.identity.substr(f.identity.rfind(':') + 1)] = &f;
    for (const char* library : {"site-packages", "/lib/python", "contextlib.py", "distributed.py", "/venv/"})
      EXPECT_EQ(f.suggestion.find(library), std::string::npos) << library << " in: " << f.suggestion;
  }
  ASSERT_EQ(at.size(), 3u) << "the branch (:12), the print (:19) and DDP's breaks, both at the user's call (:39)";
  const auto& branch = *at.at("12");
  EXPECT_NE(branch.suggestion.find("torch.cond("), std::string::npos) << branch.suggestion;
  EXPECT_NE(branch.suggestion.find("torch.where("), std::string::npos) << branch.suggestion;
  EXPECT_NE(branch.evidence_json.find(R"("codes":["GB0170"],"remedy":"data-dependent branch")"), std::string::npos) << branch.evidence_json;
  const auto& print = *at.at("19");
  EXPECT_NE(print.suggestion.find("Move the print at /src/tests/fixtures/frameworks/torch_graph_breaks.py:19 out of the compiled function"),
            std::string::npos) << print.suggestion;
  EXPECT_NE(print.suggestion.find("reorderable_logging_functions"), std::string::npos) << print.suggestion;
  const auto& ddp = *at.at("39");
  EXPECT_TRUE(ddp.title.starts_with("Graph break inside library code at ")) << ddp.title;
  EXPECT_NE(ddp.title.find("contextlib.py:105"), std::string::npos) << ddp.title;
  EXPECT_NE(ddp.title.find("distributed.py:1779"), std::string::npos) << ddp.title;
  EXPECT_NE(ddp.title.find("reached from torch_graph_breaks.py:39 in main"), std::string::npos) << ddp.title;
  EXPECT_NE(ddp.suggestion.find("your call at /src/tests/fixtures/frameworks/torch_graph_breaks.py:39"), std::string::npos) << ddp.suggestion;
  EXPECT_NE(ddp.suggestion.find("DDP(torch.compile(module))"), std::string::npos) << ddp.suggestion;
  EXPECT_NE(ddp.evidence_json.find("site-packages/torch/nn/parallel/distributed.py:1779"), std::string::npos) << ddp.evidence_json;
  // The item() of the sample keeps its remedy.
  Scratch s2;
  for (const auto& f : analyze_fixture(s2, "torch-2.15.0-dynamic-padding").findings) {
    if (f.kind == "explicit_evaluation") {
      EXPECT_NE(f.suggestion.find("capture_scalar_outputs = True"), std::string::npos) << f.suggestion;
    }
  }
}

// Savings that add up (dynamic padding: token_ids dim 0 and targets dim 0 shrank
// together in 0/2, which also made them and token_ids dim 1 dynamic): one
// shape_change finding for the batch's dim 0, marking a dim dynamic is an
// alternative to padding it, the dynamic_marked findings of one compilation
// share their saving, and the total counts each of those once.
TEST(TorchTraceFindings, SavingsAddUp) {
  Scratch s;
  tc::analysis::Report rep = analyze_fixture(s, "torch-2.15.0-dynamic-padding");
  std::map<std::string, const tc::analysis::Finding*> shape, dynamic;
  double sum = 0;
  for (const auto& f : rep.findings) {
    sum += f.estimated_saving_s;
    EXPECT_LE(f.estimated_saving_s, rep.run.wall_s) << f.kind << " " << f.identity;
    if (f.kind == "recompilation.shape_change") shape[f.identity.substr(0, f.identity.find(':'))] = &f;
    if (f.kind == "recompilation.dynamic_marked") dynamic[f.identity] = &f;
  }
  ASSERT_EQ(shape.size(), 2u) << "token_ids dim 1, and dim 0 of the batch (token_ids and targets) once";
  const auto& batch = *shape.at("token_ids dim 0");
  EXPECT_NE(batch.evidence_json.find(R"("tied":["targets dim 0"])"), std::string::npos) << batch.evidence_json;
  EXPECT_NE(batch.title.find("token_ids dim 0 and targets dim 0 took 2 values"), std::string::npos) << batch.title;
  ASSERT_EQ(dynamic.size(), 3u);
  const auto& d0 = *dynamic.at("token_ids dim 0");
  EXPECT_NE(d0.evidence_json.find(R"("alternative_to":[{"kind":"recompilation.shape_change","identity":"token_ids dim 0: 4 8"}])"), std::string::npos)
      << d0.evidence_json;
  EXPECT_NE(dynamic.at("targets dim 0")->evidence_json.find(R"("identity":"token_ids dim 0: 4 8")"), std::string::npos)
      << "targets dim 0 is padded with token_ids dim 0: " << dynamic.at("targets dim 0")->evidence_json;
  EXPECT_NE(d0.evidence_json.find(R"("same_saving_as":[{"kind":"recompilation.dynamic_marked","identity":"targets dim 0"}])"), std::string::npos)
      << d0.evidence_json;
  EXPECT_NE(batch.evidence_json.find(R"("alternative_to":[)"), std::string::npos) << batch.evidence_json;
  EXPECT_NE(d0.suggestion.find("alternative to the recompilation.shape_change finding (token_ids dim 0: 4 8)"), std::string::npos) << d0.suggestion;
  EXPECT_GT(rep.total_saving_s, 0);
  EXPECT_LT(rep.total_saving_s, sum - 1e-9) << "alternatives and shared seconds counted once";
  EXPECT_LE(rep.total_saving_s, rep.run.wall_s);
}

TEST(ImportJson, StrictAndBounded) {
  using tc::import::json::parse;
  EXPECT_TRUE(parse(R"({"a": [1, 2.5, "x\u00e9", null, true], "b": {"c": -3}})"));
  auto v = parse(R"({"n": 12, "f": 1.5, "s": "t"})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->int64("n"), 12);
  EXPECT_EQ(v->int64("f"), std::nullopt);
  EXPECT_EQ(v->str("n"), std::nullopt);
  EXPECT_EQ(v->str("s"), std::optional<std::string_view>("t"));
  std::string err;
  EXPECT_FALSE(parse(R"({"a": 1,})", &err));
  EXPECT_FALSE(err.empty());
  EXPECT_FALSE(parse(R"({"a": 1, "a": 2})"));
  EXPECT_FALSE(parse("[1] x"));
  EXPECT_FALSE(parse("\"unterminated"));
  EXPECT_FALSE(parse(std::string(100, '[') + std::string(100, ']')));
  EXPECT_TRUE(parse(std::string(60, '[') + std::string(60, ']')));
}

// What Python's json module writes beyond RFC 8259 is read as before simdjson.
TEST(ImportJson, ReadsWhatPythonWrites) {
  using tc::import::json::parse;
  auto v = parse(R"({"nan": NaN, "inf": -Infinity, "s": "NaN", "big": 123456789012345678901234567890, "u": "\udcff\ud83d\ude00"})");
  ASSERT_TRUE(v);
  ASSERT_TRUE(v->number("nan"));
  EXPECT_TRUE(std::isnan(*v->number("nan")));
  EXPECT_TRUE(v->number("inf"));
  EXPECT_EQ(v->str("s"), std::optional<std::string_view>("NaN"));
  EXPECT_EQ(v->int64("big"), std::nullopt);
  EXPECT_DOUBLE_EQ(*v->number("big"), 1.2345678901234568e29);
  EXPECT_EQ(v->str("u"), std::optional<std::string_view>("\xef\xbf\xbd\xf0\x9f\x98\x80"));
  EXPECT_FALSE(parse("{\"a\": \"\xff\"}"));  // not UTF-8
  // The rewrite's stand-in for NaN is a number only in a rewritten line: a program's own string stays one.
  auto own = parse(R"({"s": "\u0000NaN"})");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->str("s"), std::optional<std::string_view>(std::string_view("\0NaN", 4)));
}

}  // namespace
