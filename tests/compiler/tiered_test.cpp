// Tiered builds (TC_TIERED, compiler.cpp): a new step graph runs on the eager
// executor while its optimized build runs on the builder thread, and the
// built code takes over at a step boundary. Each case runs tc-test-compile
// in its own process with a fresh TC_CACHE_DIR and reads its store back; no
// case times anything: the tiers are told apart by the store's records.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/json.h"
#include "support/process.h"
#include "train_output.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::TempDir;
using tc::test::losses;
namespace fs = std::filesystem;

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

Env env_for(const std::string& cache, const std::string& store, const std::string& tiered, Env more = {}) {
  Env env{{"TC_CACHE_DIR", cache}, {"TC_PROFILE", store}, {"TC_TIERED", tiered}, {"TC_EAGER", ""}, {"TC_CXX", ""}, {"TC_DEBUG", ""}};
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

const std::string kBatches = "8,8,8,8,8,8";

std::vector<std::string> argv_for(std::vector<std::string> more = {}) {
  std::vector<std::string> argv{bin("tc-test-compile"), "--batches", kBatches};
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

// The compiled path's tolerance against eager (the op table's and the
// training tests'): the eager tier may have run any prefix of the steps.
void expect_close(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4 * std::max(1.0, std::fabs(b[i]))) << "step " << i;
}

struct Row {
  int64_t graph_id, ts, dur, build_ns;
  std::string reason, trigger, cache;
};

std::vector<Row> compilations(const tc::store::Reader& r) {
  std::vector<Row> out;
  auto q = r.query("SELECT graph_id, ts, dur, build_ns, reason, trigger, cache FROM compilations ORDER BY ts");
  while (q.next())
    out.push_back({q.i64(0), q.i64(1), q.i64(2), q.i64(3), std::string(q.text(4)), std::string(q.text(5)), std::string(q.text(6))});
  EXPECT_TRUE(q.status().ok()) << q.status().message();
  return out;
}

struct Exec {
  int64_t step, graph_id, ts;
};

std::vector<Exec> step_executions(const tc::store::Reader& r) {
  std::vector<Exec> out;
  auto q = r.query("SELECT step, graph_id, ts FROM executions WHERE trigger = 'mark_step' ORDER BY ts");
  while (q.next()) out.push_back({q.i64(0), q.i64(1), q.i64(2)});
  EXPECT_TRUE(q.status().ok()) << q.status().message();
  return out;
}

// Checks the two tiers of the run's one graph and returns them (eager, optimized).
std::pair<Row, Row> two_tiers(const tc::store::Reader& r, const std::string& optimized_cache) {
  auto cs = compilations(r);
  EXPECT_EQ(cs.size(), 2u) << "the eager tier and its optimized build";
  if (cs.size() != 2) return {};
  EXPECT_EQ(cs[0].cache, "eager");
  EXPECT_EQ(cs[0].reason, "first");
  EXPECT_EQ(cs[0].trigger, "mark_step");
  EXPECT_EQ(cs[0].build_ns, 0) << "the eager tier builds nothing";
  EXPECT_EQ(cs[1].reason, "tier_up");
  EXPECT_EQ(cs[1].trigger, "tier_up");
  EXPECT_EQ(cs[1].cache, optimized_cache);
  EXPECT_GT(cs[1].build_ns, 0);
  EXPECT_NE(cs[0].graph_id, cs[1].graph_id);
  // The builder thread built it, not the training thread.
  auto threads = r.scalar_i64("SELECT count(DISTINCT utid) FROM compilations");
  EXPECT_TRUE(threads.ok() && *threads == 2);
  return {cs[0], cs[1]};
}

// Step 0 runs on the eager tier; the optimized build, done after step 1
// (--wait-builds-after 1), takes over at a step boundary: every step before
// it ran the eager tier's graph, every step from it on the built one, and
// that is step 3 at the latest (step 2's graph still ran on the tier it
// started with). The analysis counts one compilation, and only the eager
// tier's time (the build did not block the training).
TEST(Tiered, FirstStepsRunEagerAndTheBuildSwapsInAtAStepBoundary) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string store = dir.file("run.tcdb");
  auto e = tc::test::run(argv_for({"--wait-builds-after", "1"}), env_for(dir.file("cache"), store, "1"));
  ASSERT_EQ(e.code, 0) << e.err;
  auto reader = tc::store::Reader::open(store);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto [eager, built] = two_tiers(*reader, "built");
  auto ex = step_executions(*reader);
  ASSERT_EQ(ex.size(), 6u);
  EXPECT_EQ(ex[0].graph_id, eager.graph_id) << "the first step runs on the eager tier";
  std::size_t swap = 0;
  while (swap < ex.size() && ex[swap].graph_id == eager.graph_id) ++swap;
  EXPECT_GE(swap, 1u);
  EXPECT_LE(swap, 3u) << "the build finished after step 1: it runs from step 3 at the latest";
  for (std::size_t i = swap; i < ex.size(); ++i) EXPECT_EQ(ex[i].graph_id, built.graph_id) << "step " << i << " went back";
  if (swap < ex.size()) EXPECT_LE(built.ts + built.dur, ex[swap].ts) << "it ran before it was built";

  auto j = tc::test::run({bin("tc-analyze"), store, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  auto doc = tc::test::parse_json(j.out);
  const auto& summary = doc["summary"];
  EXPECT_EQ(summary["compilations"].n, 1) << "the optimized build is no compilation more";
  EXPECT_EQ(summary["recompilations"].n, 0);
  EXPECT_NEAR(summary["compile_s"].n, static_cast<double>(eager.dur) / 1e9, 1e-6)
      << "compile time is the eager tier's (what blocked training), not the build's";
}

// Tiered or not, the training gives the same losses (within the compiled
// path's tolerance against eager); a second process finds the optimized
// build on disk and runs it from its first step: nothing tiers.
TEST(Tiered, SameLossesAsUntieredAndAWarmCacheRunsTheBuildAtOnce) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  auto off = tc::test::run(argv_for(), env_for(dir.file("cache-off"), dir.file("off.tcdb"), "0"));
  ASSERT_EQ(off.code, 0) << off.err;
  auto on = tc::test::run(argv_for({"--wait-builds-after", "2"}), env_for(dir.file("cache"), dir.file("on.tcdb"), "1"));
  ASSERT_EQ(on.code, 0) << on.err;
  expect_close(losses(on.out), losses(off.out));
  auto warm = tc::test::run(argv_for(), env_for(dir.file("cache"), dir.file("warm.tcdb"), "1"));
  ASSERT_EQ(warm.code, 0) << warm.err;
  EXPECT_EQ(warm.out, off.out) << "the built code from the first step: the untiered run's losses bit for bit";
  auto reader = tc::store::Reader::open(dir.file("warm.tcdb"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto cs = compilations(*reader);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].cache, "disk_hit");
  EXPECT_EQ(cs[0].reason, "first");
}

// A graph cut by loss.item() before mark_step() tiers as a step's graph does
// (before #31's last change it was built at once: the first step waited for
// g++): its first runs are the eager tier's, its optimized build (a tier_up of
// the same signature) takes over at a step boundary, and the losses are the
// untiered run's within the compiled path's tolerance.
TEST(Tiered, AGraphCutByAnExplicitEvaluationTiersToo) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  auto off = tc::test::run(argv_for({"--item-first", "1"}), env_for(dir.file("cache-off"), dir.file("off.tcdb"), "0"));
  ASSERT_EQ(off.code, 0) << off.err;
  auto on = tc::test::run(argv_for({"--item-first", "1", "--wait-builds-after", "1"}), env_for(dir.file("cache"), dir.file("on.tcdb"), "1"));
  ASSERT_EQ(on.code, 0) << on.err;
  expect_close(losses(on.out), losses(off.out));
  auto reader = tc::store::Reader::open(dir.file("on.tcdb"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  int64_t eager = 0, built = 0;
  for (auto q = reader->query("SELECT e.graph_id, e.cache, t.graph_id FROM compilations e JOIN compilations t ON t.signature = e.signature "
                              "WHERE e.trigger = 'explicit_evaluation' AND t.trigger = 'tier_up'");
       q.next();) {
    EXPECT_EQ(q.text(1), "eager") << "its first runs are the eager tier's";
    eager = q.i64(0), built = q.i64(2);
  }
  ASSERT_NE(eager, 0) << "the explicit evaluation's graph has a tier-up";
  std::vector<int64_t> runs;  // the graphs the explicit evaluations ran, in order
  for (auto q = reader->query("SELECT graph_id FROM executions WHERE trigger = 'explicit_evaluation' ORDER BY ts"); q.next();) runs.push_back(q.i64(0));
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs.front(), eager);
  EXPECT_EQ(runs.back(), built) << "the build finished after step 1: it runs from step 3 at the latest";
}

// A compiler that writes half an object where it was asked to, says it
// started in `marker`, and never finishes (until killed).
std::string hanging_compiler(const TempDir& dir, const std::string& marker) {
  const std::string path = dir.file("hanging-g++");
  std::ofstream(path) << "#!/bin/sh\n"
                         "[ \"$1\" = -dumpfullversion ] && exec g++ \"$@\"\n"
                         "out=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                         "printf 'half an object' > \"$out\"\n"
                         ": > " << marker << "\n"
                         "exec sleep 300\n";
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

// The process is killed while its background build is under way (the
// compiler has written half an object), after its steps ran on the eager
// tier: the training never waited for the build. The next run in that cache
// loads nothing of it: it tiers again, builds the graph whole, trains to the
// same losses, and the dead build's directory is gone.
TEST(Tiered, KilledMidBuildTheNextRunRebuildsAndLoadsNothingHalfWritten) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string cache = dir.file("cache"), marker = dir.file("building");
  auto ref = tc::test::run(argv_for(), env_for(dir.file("cache-off"), dir.file("off.tcdb"), "0"));
  ASSERT_EQ(ref.code, 0) << ref.err;
  {
    tc::test::Child child(argv_for(), env_for(cache, dir.file("killed.tcdb"), "1", {{"TC_CXX", hanging_compiler(dir, marker)}}));
    // Every step is printed while the build hangs (then the exit waits for it).
    int steps = 0;
    while (steps < 6) {
      std::string line = child.read_line();
      ASSERT_FALSE(line.empty()) << "the program ended before its steps: " << child.wait().err;
      steps += line.rfind("step ", 0) == 0;
    }
    // A bound, not a timing: the build started at step 0.
    for (int i = 0; i < 600 && !fs::exists(marker); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(fs::exists(marker)) << "the build never started";
    ::kill(-child.pid(), SIGKILL);
    ::kill(child.pid(), SIGKILL);
    auto killed = child.wait(std::chrono::seconds(60));
    ASSERT_EQ(killed.signal, SIGKILL) << killed.err;
  }
  bool left = false;
  for (const auto& entry : fs::directory_iterator(cache)) left = left || entry.path().filename().string().rfind("tc-build-", 0) == 0;
  ASSERT_TRUE(left) << "the killed build left no directory: the case tests nothing";

  const std::string store = dir.file("next.tcdb");
  auto next = tc::test::run(argv_for(), env_for(cache, store, "1"));
  ASSERT_EQ(next.code, 0) << next.err;
  EXPECT_EQ(next.err.find("code cache"), std::string::npos) << next.err;
  expect_close(losses(next.out), losses(ref.out));
  auto reader = tc::store::Reader::open(store);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  two_tiers(*reader, "built");  // eager first: nothing of the killed build was found
  int objects = 0;
  for (const auto& entry : fs::directory_iterator(cache)) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(name.rfind("tc-build-", 0), std::string::npos) << name << ": the killed build's directory is still there";
    objects += entry.path().extension() == ".so";
  }
  EXPECT_EQ(objects, 1);
}

}  // namespace
