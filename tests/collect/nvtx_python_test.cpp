// End to end: NVTX from Python under tc-profile, with torch.cuda.nvtx (a CPU
// torch: no GPU needed) and the `nvtx` package, two copies of NVTX in one
// process (tests/python/nvtx_peers.py says what it emits). The peers live in
// a virtual environment that scripts/test.sh makes (.tc-test-venv); they are
// the test's, never tc's. Without it the test is skipped, saying so, unless
// TC_REQUIRE_PYTHON_PEERS=1 (as scripts/test.sh sets): then it fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

std::string python() {
  if (const char* p = std::getenv("TC_TEST_PYTHON"); p && *p) return p;
  return std::string(TC_SOURCE_DIR) + "/.tc-test-venv/bin/python";
}

int64_t scalar(const tc::store::Reader& r, const std::string& sql) {
  auto v = r.scalar_i64(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
  return v.ok() ? *v : -1;
}

TEST(NvtxPython, TorchAndTheNvtxPackageAreCapturedWithoutTouchingTheScript) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  const std::string py = python();
  if (!std::filesystem::exists(py) || tc::test::run({py, "-c", "import torch, nvtx"}).code != 0) {
    const char* require = std::getenv("TC_REQUIRE_PYTHON_PEERS");
    if (require && std::string(require) == "1") FAIL() << py << " lacks torch and nvtx; scripts/test.sh installs them";
    GTEST_SKIP() << py << " lacks torch and nvtx (scripts/test.sh installs them into .tc-test-venv)";
  }
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", py, std::string(TC_SOURCE_DIR) + "/tests/python/nvtx_peers.py"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "done\n");
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();

  std::map<std::tuple<std::string, std::string, int64_t, int64_t>, int> seen, want;  // name, domain, depth, payload
  auto q = r->query("SELECT l.name, l.function, r.depth, r.arg, r.dur FROM ranges r JOIN locations l ON l.id = r.loc_id WHERE l.file = 'nvtx'");
  while (q.next()) {
    ++seen[{std::string(q.text(0)), std::string(q.text(1)), q.i64(2), q.i64(3)}];
    EXPECT_GE(q.i64(4), 0) << q.text(0) << " was cut";
  }
  want[{"torch.outer", "", 0, 0}] = 1;
  want[{"torch.inner", "", 1, 0}] = 3;
  want[{"torch.ctx", "", 0, 0}] = 1;
  want[{"nvtx.annotated", "pydomain", 0, 0}] = 2;
  want[{"nvtx.pushed", "pydomain", 0, 7}] = 1;
  EXPECT_EQ(seen, want);
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM instants i JOIN locations l ON l.id = i.loc_id WHERE l.name = 'torch.mark' AND l.function = ''"), 1);
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM instants i JOIN locations l ON l.id = i.loc_id WHERE l.name = 'nvtx.mark' AND l.function = 'pydomain'"), 1);
  // torch's inner ranges lie inside its outer one.
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM ranges i JOIN locations li ON li.id = i.loc_id, ranges o JOIN locations lo ON lo.id = o.loc_id "
                       "WHERE li.name = 'torch.inner' AND lo.name = 'torch.outer' AND i.ts >= o.ts AND i.ts + i.dur <= o.ts + o.dur"),
            3);
  // The nvtx package's colour reached its sites.
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM nvtx_sites s JOIN locations l ON l.id = s.loc_id WHERE l.name = 'nvtx.annotated' "
                       "AND s.domain = 'pydomain' AND s.color IS NOT NULL"),
            1);
}

}  // namespace
