// End to end: tc-test-compile recorded with TC_PROFILE, then the store's
// compilations, compilation_inputs, compile_passes, executions, memory_plans
// and logs are read back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "support/json.h"
#include "support/process.h"
#include "train_output.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::TempDir;
using tc::test::losses;

namespace {

struct Compilation {
  int64_t graph_id, step, build_ns;
  std::string reason, cache, diff, source;
};

std::vector<Compilation> compilations(const tc::store::Reader& r) {
  std::vector<Compilation> out;
  auto q = r.query(
      "SELECT graph_id, step, build_ns, reason, cache, COALESCE(diff, ''), COALESCE(source_path, '') "
      "FROM compilations ORDER BY graph_id");
  while (q.next())
    out.push_back({q.i64(0), q.i64(1), q.i64(2), std::string(q.text(3)), std::string(q.text(4)),
                   std::string(q.text(5)), std::string(q.text(6))});
  EXPECT_TRUE(q.status().ok()) << q.status().message();
  return out;
}

tc::test::Exit run_program(const TempDir& dir, const std::string& store, const std::vector<std::string>& args,
                           const std::string& debug = "",
                           const std::vector<std::pair<std::string, std::string>>& more_env = {}) {
  std::vector<std::string> argv{bin("tc-test-compile")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::pair<std::string, std::string>> env{
      {"TC_PROFILE", store}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_DEBUG", debug}, {"TC_EAGER", ""}};
  env.insert(env.end(), more_env.begin(), more_env.end());
  auto e = tc::test::run(argv, env);
  EXPECT_EQ(e.code, 0) << e.err;
  return e;
}

TEST(CompiledStore, BatchChangeIsOneShapeChangeAndAWarmCacheBuildsNothing) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string batches = "16,16,16,24,24,16,16";
  run_program(dir, dir.file("a.tcdb"), {"--batches", batches}, "1");
  {
    auto reader = tc::store::Reader::open(dir.file("a.tcdb"));
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    const auto& r = *reader;
    auto cs = compilations(r);
    ASSERT_EQ(cs.size(), 2u) << "first compilation, one recompilation, nothing when the batch returns to 16";
    EXPECT_EQ(cs[0].reason, "first");
    EXPECT_EQ(cs[0].step, 0);
    EXPECT_EQ(cs[1].reason, "shape_change");
    EXPECT_EQ(cs[1].step, 3);
    EXPECT_FALSE(cs[0].source.empty());
    // The changed input, by its user-given name, dimension 0, both sizes.
    std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> changed;
    auto q = r.query("SELECT input, dim, old_value, new_value FROM compilation_inputs WHERE graph_id = " +
                     std::to_string(cs[1].graph_id));
    while (q.next()) changed[std::string(q.text(0))] = {q.i64(1), q.i64(2), q.i64(3)};
    ASSERT_TRUE(changed.count("x")) << "the input x is named";
    EXPECT_EQ(changed["x"], std::make_tuple(int64_t{0}, int64_t{16}, int64_t{24}));
    EXPECT_EQ(changed["y"], std::make_tuple(int64_t{0}, int64_t{16}, int64_t{24}));
    // Every step executed a compiled graph, the one of its batch size.
    auto e = r.query("SELECT step, graph_id FROM executions WHERE trigger = 'mark_step' ORDER BY ts");
    std::vector<int64_t> ids;
    while (e.next()) ids.push_back(e.i64(1));
    ASSERT_EQ(ids.size(), 7u);
    for (int s : {0, 1, 2, 5, 6}) EXPECT_EQ(ids[static_cast<std::size_t>(s)], cs[0].graph_id);
    for (int s : {3, 4}) EXPECT_EQ(ids[static_cast<std::size_t>(s)], cs[1].graph_id);
    // Passes, memory plans (batch sizes 16 then 24), debug logs.
    EXPECT_GE(*r.scalar_i64("SELECT count(*) FROM compile_passes WHERE graph_id = " + std::to_string(cs[0].graph_id)), 5);
    auto m = r.query("SELECT batch_size, batch_bytes, peak_bytes FROM memory_plans ORDER BY graph_id");
    std::vector<int64_t> sizes;
    while (m.next()) {
      sizes.push_back(m.i64(0));
      EXPECT_GT(m.i64(1), 0);
      EXPECT_GT(m.i64(2), m.i64(1));
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{16, 24}));
    EXPECT_GE(*r.scalar_i64("SELECT count(*) FROM logs WHERE message LIKE '%pass cse%'"), 2);
  }
  // A second process with the same cache directory builds nothing.
  run_program(dir, dir.file("b.tcdb"), {"--batches", batches});
  auto reader = tc::store::Reader::open(dir.file("b.tcdb"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto cs = compilations(*reader);
  ASSERT_EQ(cs.size(), 2u);
  for (const auto& c : cs) {
    EXPECT_EQ(c.cache, "disk_hit");
    EXPECT_EQ(c.build_ns, 0);
  }
}

TEST(CompiledStore, StructureChangeAtTheSameCallSiteSaysWhatDiffers) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  run_program(dir, dir.file("s.tcdb"), {"--batches", "8,8,8", "--tanh-at", "1"});
  auto reader = tc::store::Reader::open(dir.file("s.tcdb"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto cs = compilations(*reader);
  ASSERT_EQ(cs.size(), 2u);  // relu graph, tanh graph; step 2 reuses the relu graph
  EXPECT_EQ(cs[1].reason, "structure_change");
  EXPECT_NE(cs[1].diff.find("relu"), std::string::npos) << cs[1].diff;
  EXPECT_NE(cs[1].diff.find("tanh"), std::string::npos) << cs[1].diff;
  EXPECT_NE(cs[1].diff.find("compile_program.cpp"), std::string::npos) << cs[1].diff;
}

// The kernel pass fuse_gemm_updates is a named pass like the graph passes:
// timed into compile_passes, verified under TC_VERIFY=1, skipped by
// TC_SKIP_PASSES, and the training it speeds up computes the same losses.
TEST(CompiledStore, KernelPassIsRecordedVerifiedAndSkippable) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::vector<std::string> args{"--batches", "8,8,8", "--momentum", "0"};
  auto fused = run_program(dir, dir.file("f.tcdb"), args, "", {{"TC_VERIFY", "1"}, {"TC_DEVICE", ""}});
  auto plain = run_program(dir, dir.file("p.tcdb"), args, "", {{"TC_VERIFY", "1"}, {"TC_SKIP_PASSES", "fuse_gemm_updates"}});
  auto count = [](const std::string& store, const std::string& sql) {
    auto reader = tc::store::Reader::open(store);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    auto v = reader.ok() ? reader->scalar_i64(sql) : tc::StatusOr<int64_t>(int64_t{-1});
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? *v : -1;
  };
  const std::string pass = "SELECT count(*) FROM compile_passes WHERE pass = 'fuse_gemm_updates'";
  EXPECT_EQ(count(dir.file("f.tcdb"), pass), 1) << "one compilation, one fuse_gemm_updates pass";
  EXPECT_EQ(count(dir.file("p.tcdb"), pass), 0) << "TC_SKIP_PASSES skips it";
  // The pass runs after the graph passes: last in the compilation's list.
  EXPECT_EQ(count(dir.file("f.tcdb"), "SELECT count(*) FROM compile_passes WHERE ts > (SELECT ts FROM compile_passes "
                                       "WHERE pass = 'fuse_gemm_updates')"),
            0);
  // The backend the graphs ran on is in run_env, once, although TC_DEVICE was unset.
  EXPECT_EQ(count(dir.file("f.tcdb"), "SELECT count(*) FROM run_env WHERE name = 'TC_DEVICE' AND value = 'cpu'"), 1);
  // Plain SGD on two weight matrices: two products fused into their updates.
  const std::string kernels = "SELECT kernels FROM compilations";
  EXPECT_EQ(count(dir.file("p.tcdb"), kernels) - count(dir.file("f.tcdb"), kernels), 2);
  auto a = losses(fused.out), b = losses(plain.out);
  ASSERT_EQ(a.size(), 3u) << fused.out;
  ASSERT_EQ(b.size(), 3u) << plain.out;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i]))) << "step " << i;
}

// TC_DEVICE names the backend; a name with no backend stops the program with
// one line that names the backends there are.
TEST(CompiledStore, UnknownDeviceIsRefusedInOneLine) {
  TempDir dir;
  auto e = tc::test::run({bin("tc-test-compile"), "--batches", "4"},
                         {{"TC_DEVICE", "tpu"}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}});
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.err.find("tc: TC_DEVICE=tpu: no such backend (backends: cpu, cuda, cuda-emulated)"), std::string::npos) << e.err;
  auto c = tc::test::run({bin("tc-test-compile"), "--batches", "4"},
                         {{"TC_DEVICE", "cuda"}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}});
  EXPECT_NE(c.code, 0);
  EXPECT_NE(c.err.find("tc: TC_DEVICE=cuda: "), std::string::npos) << c.err;
  auto ok = tc::test::run({bin("tc-test-compile"), "--batches", "4"},
                          {{"TC_DEVICE", "cpu"}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// TC_GEMM picks the kernel of the compiled products: an unknown word stops
// the program at its first compiled step with one line, and BLAS's products
// and tc's own train to the same losses (the op table checks each product
// against eager; this is the whole step, updates fused into products included).
TEST(CompiledStore, TheProductKernelIsChosenByTcGemm) {
  TempDir dir;
  const std::vector<std::string> argv{bin("tc-test-compile"), "--batches", "8,8,8", "--momentum", "0"};
  auto bad = tc::test::run(argv, {{"TC_GEMM", "sse9"}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("tc: TC_GEMM=sse9: unknown matrix-product kernel; use avx512, avx2 or blas, or unset it\n"),
            std::string::npos)
      << bad.err;
  auto blas = tc::test::run(argv, {{"TC_GEMM", "blas"}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}});
  auto own = tc::test::run(argv, {{"TC_GEMM", ""}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}});
  ASSERT_EQ(blas.code, 0) << blas.err;
  ASSERT_EQ(own.code, 0) << own.err;
  auto a = losses(own.out), b = losses(blas.out);
  ASSERT_EQ(a.size(), 3u) << own.out;
  ASSERT_EQ(b.size(), 3u) << blas.out;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i]))) << "step " << i;
}

// TC_GEMM=avx2 stands for an AVX2-only CPU in the whole compiled step, not
// only in its products: on an AVX-512 machine the generated code is built
// without AVX-512 (no zmm or mask registers and no ymm16-31 in the built
// object's disassembly), and the program still trains.
TEST(CompiledStore, TcGemmAvx2BuildsTheGeneratedCodeWithoutAvx512) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "this CPU has no AVX-512: nothing to leave out";
  const std::regex avx512(R"(%(zmm[0-9]+|k[0-7]\b|[xy]mm(1[6-9]|2[0-9]|3[01])\b))");
  auto scan = [&](const std::string& gemm) {
    TempDir dir;
    auto r = tc::test::run({bin("tc-test-compile"), "--batches", "8,8"},
                           {{"TC_GEMM", gemm}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}, {"TC_TIERED", "0"}});
    EXPECT_EQ(r.code, 0) << r.err;
    int objects = 0, with_avx512 = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.file("cache"))) {
      if (e.path().extension() != ".so") continue;
      ++objects;
      auto d = tc::test::run({"objdump", "-d", "--no-show-raw-insn", e.path().string()});
      EXPECT_EQ(d.code, 0) << d.err;
      with_avx512 += std::regex_search(d.out, avx512);
    }
    EXPECT_GT(objects, 0) << "TC_GEMM=" << gemm << ": nothing was built";
    return with_avx512;
  };
  EXPECT_EQ(scan("avx2"), 0);
  // The default build of the same program, where the compiler chose any AVX-512 register, shows the scan finds them.
  const int by_default = scan("");
  std::printf("objects using AVX-512 registers when TC_GEMM is unset: %d\n", by_default);
}

// While recording, every kernel of every compiled graph is described once
// (kernels) and timed on every execution (kernel_executions), inside its
// execution; the machine's ceilings are recorded once.
TEST(CompiledStore, KernelsAreDescribedAndTimedOnEveryExecution) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  run_program(dir, dir.file("k.tcdb"), {"--batches", "16,16,24"});
  auto reader = tc::store::Reader::open(dir.file("k.tcdb"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const auto& r = *reader;
  auto one = [&](const std::string& sql) {
    auto v = r.scalar_i64(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
    return v.ok() ? *v : -1;
  };
  // One kernels row per kernel the compilation reports.
  EXPECT_EQ(one("SELECT count(*) FROM compilations c WHERE c.kernels <> (SELECT count(*) FROM kernels k WHERE k.graph_id = c.graph_id)"), 0);
  EXPECT_GT(one("SELECT count(*) FROM kernels"), 0);
  // Every compiled execution timed each of its graph's kernels once, inside the execution.
  EXPECT_EQ(one("SELECT count(*) FROM executions e WHERE e.graph_id <> 0 AND (SELECT count(*) FROM kernel_executions x "
                "WHERE x.execution_id = e.execution_id) <> (SELECT kernels FROM compilations c WHERE c.graph_id = e.graph_id)"),
            0);
  EXPECT_EQ(one("SELECT count(*) FROM kernel_executions x JOIN executions e USING (execution_id) "
                "WHERE x.dur < 0 OR x.ts < e.ts OR x.ts + x.dur > e.ts + e.dur OR x.graph_id <> e.graph_id"),
            0);
  EXPECT_EQ(one("SELECT count(DISTINCT execution_id) FROM kernel_executions"), 3);
  // Kernels run one after another.
  EXPECT_EQ(one("SELECT count(*) FROM kernel_executions a JOIN kernel_executions b ON a.execution_id = b.execution_id "
                "AND b.kernel = a.kernel + 1 WHERE b.ts < a.ts + a.dur"),
            0);
  // A matrix product's FLOPs are 2 M N K of its loop shape; its sites are the program's lines.
  int products = 0;
  for (auto q = r.query("SELECT loop, flops, sites, ops FROM kernels WHERE kind = 'matmul'"); q.next();) {
    ++products;
    std::string loop(q.text(0));
    std::vector<int64_t> d;
    std::stringstream ss(loop);
    for (std::string x; std::getline(ss, x, 'x');) d.push_back(std::stoll(x));
    ASSERT_GE(d.size(), 3u) << loop;
    int64_t flops = 2 * d[d.size() - 3] * d[d.size() - 2] * d[d.size() - 1];
    for (std::size_t i = 0; i + 3 < d.size(); ++i) flops *= d[i];
    EXPECT_EQ(q.i64(1), flops) << loop;
    EXPECT_NE(std::string(q.text(2)).find("compile_program.cpp:"), std::string::npos) << q.text(2);
    EXPECT_NE(std::string(q.text(3)).find("matmul"), std::string::npos) << q.text(3);
  }
  EXPECT_GE(products, 3) << "two forward products and the weight gradients";
  EXPECT_EQ(one("SELECT count(*) FROM kernels WHERE sites NOT LIKE '%compile_program.cpp:%'"), 0)
      << "every kernel is attributed to a line of the program (backward to the forward op's, updates to step()'s)";
  EXPECT_EQ(one("SELECT count(*) FROM ceilings WHERE backend = 'cpu' AND gflops > 0 AND gbps > 0"), 1);
}

// The ceilings say what they were measured on: the CPU's ISA, the product
// kernel TC_GEMM chose and the pool's threads. A probe cached by a one-thread
// run is not the ceiling of a later run on two (it was: one cache file per
// kernel, so 83 GFLOP/s of one core stood for a machine whose products
// reached 157 on two).
TEST(CompiledStore, CeilingsSayWhatTheyWereMeasuredOn) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::pair<const char*, const char*> runs[] = {{"a.tcdb", "1"}, {"b.tcdb", "2"}, {"c.tcdb", "2"}};
  for (const auto& [store, threads] : runs) run_program(dir, dir.file(store), {"--batches", "8"}, "", {{"TC_NUM_THREADS", threads}});
  auto row = [&](const char* store) {
    auto r = tc::store::Reader::open(dir.file(store));
    EXPECT_TRUE(r.ok()) << r.status().message();
    std::string out;
    if (!r.ok()) return out;
    for (auto q = r->query("SELECT isa, kernel, threads, source FROM ceilings"); q.next();)
      out += std::string(q.text(0)) + " " + std::string(q.text(1)) + " " + std::to_string(q.i64(2)) + " " + std::string(q.text(3)) + ";";
    return out;
  };
  const std::string one = row("a.tcdb");
  ASSERT_FALSE(one.empty());
  EXPECT_NE(one.find(" 1 measured;"), std::string::npos) << one;
  EXPECT_TRUE(one.starts_with("avx512f ") || one.starts_with("avx2+fma ") || one.starts_with("baseline ")) << one;
  std::string kernel = one.substr(one.find(' ') + 1);
  kernel = kernel.substr(0, kernel.find(' '));
  EXPECT_TRUE(kernel == "avx512" || kernel == "avx2" || kernel == "blas") << one;
  // The second run probes again (two threads); the third reuses the second's.
  EXPECT_NE(row("b.tcdb").find(" " + kernel + " 2 measured;"), std::string::npos) << row("b.tcdb");
  EXPECT_NE(row("c.tcdb").find(" " + kernel + " 2 cached;"), std::string::npos) << row("c.tcdb");
}

// The eager executor times each op the same way: kernels of graph 0.
TEST(CompiledStore, EagerOpsAreTimedAsKernels) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  std::vector<std::string> argv{bin("tc-test-compile"), "--batches", "8,8"};
  auto e = tc::test::run(argv, {{"TC_PROFILE", dir.file("e.tcdb")}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", "1"}});
  ASSERT_EQ(e.code, 0) << e.err;
  auto reader = tc::store::Reader::open(dir.file("e.tcdb"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const auto& r = *reader;
  auto one = [&](const std::string& sql) { return *r.scalar_i64(sql); };
  int64_t ops = one("SELECT count(*) FROM executions WHERE trigger = 'eager'");
  EXPECT_GT(ops, 50);
  EXPECT_EQ(one("SELECT count(*) FROM kernel_executions WHERE graph_id = 0"), ops) << "one timed kernel per eager op";
  EXPECT_EQ(one("SELECT count(*) FROM kernel_executions x WHERE NOT EXISTS (SELECT 1 FROM kernels k WHERE k.graph_id = 0 AND k.kernel = x.kernel)"), 0);
  // Step two repeats step one's ops: each distinct op is described once.
  EXPECT_LT(one("SELECT count(*) FROM kernels WHERE graph_id = 0"), ops);
  EXPECT_EQ(one("SELECT count(*) FROM compilations"), 0);
}

// #14: old->new of a shape change names the closest earlier graph of the same
// structure (fewest differing dims, the most recent on a tie), not the first:
// lengths 88, 128, 86, 39 read 88->128, 128->86, 86->39; a length seen before
// compiles nothing. The shape-change finding still takes every value and
// computes its plans.
TEST(CompiledStore, AShapeChangeNamesTheClosestEarlierGraph) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  const std::string store = dir.file("shapes.tcdb");
  // TC_DYNAMIC=off: every length its own graph (by default 86 would make tokens dim 1 dynamic).
  auto e = tc::test::run({bin("tc-test-shapes"), "--lengths", "88,128,86,39,128"},
                         {{"TC_PROFILE", store}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_EAGER", ""}, {"TC_DYNAMIC", "off"}});
  ASSERT_EQ(e.code, 0) << e.err;
  auto reader = tc::store::Reader::open(store);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<std::pair<int64_t, int64_t>> changes;
  auto q = reader->query("SELECT i.old_value, i.new_value FROM compilation_inputs i JOIN compilations c USING (graph_id) "
                         "WHERE i.input = 'tokens' AND i.dim = 1 AND c.reason = 'shape_change' ORDER BY c.ts");
  while (q.next()) changes.push_back({q.i64(0), q.i64(1)});
  ASSERT_TRUE(q.status().ok()) << q.status().message();
  EXPECT_EQ(changes, (std::vector<std::pair<int64_t, int64_t>>{{88, 128}, {128, 86}, {86, 39}}));
  EXPECT_EQ(*reader->scalar_i64("SELECT count(*) FROM compilation_inputs WHERE input <> 'tokens' OR dim <> 1"), 0);

  auto a = tc::test::run({bin("tc-analyze"), store, "--json"}, {});
  ASSERT_EQ(a.code, 0) << a.err;
  tc::test::JsonValue v = tc::test::parse_json(a.out);
  const tc::test::JsonValue* f = nullptr;
  for (const auto& x : v["findings"].a)
    if (x["kind"].s == "recompilation.shape_change" && x["evidence"]["input"].s == "tokens") f = &x;
  ASSERT_NE(f, nullptr) << a.out;
  const auto& ev = (*f)["evidence"];
  std::vector<int64_t> values;
  for (const auto& d : ev["values"].a) values.push_back(static_cast<int64_t>(d["value"].n));
  EXPECT_EQ(values, (std::vector<int64_t>{39, 86, 88, 128}));
  EXPECT_EQ(ev["compilations"].n, 4);
  EXPECT_EQ(ev["pad"]["to"].n, 128);
  EXPECT_FALSE(ev["buckets"]["sizes"].a.empty());
  EXPECT_FALSE((*f)["suggestion"].s.empty());
}

// Issue 31's probe: an outside-style program whose input takes 24 lengths in
// 48 steps compiles at most 4 times by default (two static graphs, then the
// dynamic one serves every later length; counted, not timed) and once per
// length with TC_DYNAMIC=off. The dynamic compilation is a shape_change whose
// compilation_inputs row says dynamic = 1, and tc-analyze says tc made the
// dim dynamic. Built code goes to the suite's shared cache (the TC_CACHE_DIR
// ctest sets): the 24 static builds are paid once per checkout.
TEST(CompiledStore, TwentyFourLengthsCompileAtMostFourTimesByDefault) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  std::string lengths;
  for (int step = 0; step < 48; ++step) lengths += (step ? "," : "") + std::to_string(8 + 5 * ((step * 7) % 24));
  for (const char* mode : {"auto", "off"}) {
    const std::string store = dir.file(std::string(mode) + ".tcdb");
    auto e = tc::test::run({bin("tc-test-shapes"), "--lengths", lengths},
                           {{"TC_PROFILE", store}, {"TC_EAGER", ""}, {"TC_DYNAMIC", mode}});
    ASSERT_EQ(e.code, 0) << e.err;
    auto reader = tc::store::Reader::open(store);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    const int64_t compilations = *reader->scalar_i64("SELECT count(*) FROM compilations");
    EXPECT_EQ(*reader->scalar_i64("SELECT count(*) FROM executions WHERE graph_id <> 0"), 48) << mode;
    if (std::string(mode) == "off") {
      EXPECT_EQ(compilations, 24) << "one graph per length";
      EXPECT_EQ(*reader->scalar_i64("SELECT count(*) FROM compilation_inputs WHERE dynamic = 1"), 0);
      continue;
    }
    EXPECT_LE(compilations, 4);
    EXPECT_EQ(*reader->scalar_i64("SELECT count(*) FROM compilation_inputs i JOIN compilations c USING (graph_id) "
                                  "WHERE i.dynamic = 1 AND i.input = 'tokens' AND i.dim = 1 AND c.reason = 'shape_change'"),
              1);
    auto a = tc::test::run({bin("tc-analyze"), store, "--json"}, {});
    ASSERT_EQ(a.code, 0) << a.err;
    tc::test::JsonValue v = tc::test::parse_json(a.out);
    const tc::test::JsonValue* f = nullptr;
    for (const auto& x : v["findings"].a)
      if (x["kind"].s == "recompilation.dynamic_marked") f = &x;
    ASSERT_NE(f, nullptr) << a.out;
    EXPECT_EQ((*f)["title"].s.rfind("tc made tokens dim 1 dynamic after 2 compilations", 0), 0u) << (*f)["title"].s;
    EXPECT_NE((*f)["suggestion"].s.find("tc::mark_dynamic(tokens, 1)"), std::string::npos) << (*f)["suggestion"].s;
    // recompilation.shape_change weighs the third plan with this run's numbers.
    const tc::test::JsonValue* s = nullptr;
    for (const auto& x : v["findings"].a)
      if (x["kind"].s == "recompilation.shape_change" && x["evidence"]["input"].s == "tokens") s = &x;
    ASSERT_NE(s, nullptr) << a.out;
    EXPECT_TRUE((*s)["evidence"]["dynamic"]["measured"].b) << a.out;
    EXPECT_EQ((*s)["evidence"]["dynamic"]["compilations"].n, 3);
    EXPECT_NE((*s)["suggestion"].s.find("Dynamic, as this run made tokens dim 1"), std::string::npos) << (*s)["suggestion"].s;
  }
}

}  // namespace
