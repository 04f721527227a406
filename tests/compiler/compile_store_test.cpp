// End to end: tc-test-compile recorded with TC_PROFILE, then the store's
// compilations, compilation_inputs, compile_passes, executions, memory_plans
// and logs are read back.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::TempDir;

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
                           const std::string& debug = "") {
  std::vector<std::string> argv{bin("tc-test-compile")};
  argv.insert(argv.end(), args.begin(), args.end());
  auto e = tc::test::run(argv, {{"TC_PROFILE", store}, {"TC_CACHE_DIR", dir.file("cache")}, {"TC_DEBUG", debug},
                                {"TC_EAGER", ""}});
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

}  // namespace
