// NVTX at its limits (#27): tc-test-nvtx-limits (tests/programs/nvtx_limits.c)
// knows only nvtx3; each test runs one of its modes under tc-profile and
// checks what the NVTX calls returned and what the store holds. The limits
// are stated in docs/user-guide.md ("NVTX limits").
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

int64_t scalar(const tc::store::Reader& r, const std::string& sql) {
  auto v = r.scalar_i64(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
  return v.ok() ? *v : -1;
}

class NvtxLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }

  // Runs `tc-test-nvtx-limits MODE N` under tc-profile; the store stays open in `store`.
  Exit profile(const std::string& mode, long n, const std::vector<std::pair<std::string, std::string>>& env = {}) {
    const std::string out = dir_.file("run.tcdb");
    Exit e = tc::test::run({bin("tc-profile"), "-q", "--force", "-o", out, "--", bin("tc-test-nvtx-limits"), mode, std::to_string(n)}, env);
    auto r = tc::store::Reader::open(out);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (r.ok()) store.emplace(std::move(*r));
    return e;
  }

  // The run ended normally and lost nothing.
  void expect_complete() {
    EXPECT_EQ(scalar(*store, "SELECT complete FROM run"), 1);
    EXPECT_EQ(scalar(*store, "SELECT dropped_count FROM run"), 0);
    EXPECT_EQ(scalar(*store, "SELECT count(*) FROM dropped"), 0);
  }

  TempDir dir_;
  std::optional<tc::store::Reader> store;
};

// Was: 725 of 1,000 ends dropped as "no free ring: more threads than rings"
// with two threads alive, and the run marked incomplete.
TEST_F(NvtxLimits, RangesEndedOnThreadsThatComeAndGoAreAllStoredAndTheRunIsComplete) {
  Exit e = profile("cross", 1000);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "done\n");
  ASSERT_TRUE(store);
  expect_complete();
  EXPECT_EQ(scalar(*store, "SELECT count(*) FROM nvtx_range_starts"), 1000);
  EXPECT_EQ(scalar(*store, "SELECT count(*) FROM nvtx_range_starts s JOIN nvtx_range_ends e USING (range_id) WHERE s.utid != e.utid "
                           "AND e.ts >= s.ts"),
            1000)
      << "each ended on a thread other than its own";
}

}  // namespace
