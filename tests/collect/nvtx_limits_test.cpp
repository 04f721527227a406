// NVTX at its limits (#27): tc-test-nvtx-limits (tests/programs/nvtx_limits.c)
// knows only nvtx3; each test runs one of its modes under tc-profile and
// checks what the NVTX calls returned and what the store holds. The limits
// are stated in docs/user-guide.md ("NVTX limits").
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

namespace {

class NvtxLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }

  // Runs `tc-test-nvtx-limits MODE N` under tc-profile, expects it to exit 0
  // with a complete store that lost nothing; its stdout is in `out`, the
  // store stays open in `store`. Call through ASSERT_NO_FATAL_FAILURE.
  void profile(const std::string& mode, long n, const std::vector<std::pair<std::string, std::string>>& env = {}) {
    const std::string path = dir_.file("run.tcdb");
    tc::test::Exit e = tc::test::run(
        {tc::test::bin("tc-profile"), "-q", "--force", "-o", path, "--", tc::test::bin("tc-test-nvtx-limits"), mode, std::to_string(n)}, env);
    ASSERT_EQ(e.code, 0) << e.err;
    out = e.out;
    auto r = tc::store::Reader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    store.emplace(std::move(*r));
    EXPECT_EQ(count("SELECT complete FROM run"), 1);
    EXPECT_EQ(count("SELECT dropped_count FROM run"), 0);
    EXPECT_EQ(count("SELECT count(*) FROM dropped"), 0);
  }

  int64_t count(const std::string& sql) const {
    auto v = store->scalar_i64(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
    return v.ok() ? *v : -1;
  }

  // NVTX ranges (rows of `ranges` at an NVTX site l) WHERE `where`.
  int64_t nvtx_ranges(const std::string& where = "1") const {
    return count("SELECT count(*) FROM ranges r JOIN locations l ON l.id = r.loc_id WHERE l.file = 'nvtx' AND " + where);
  }

  tc::test::TempDir dir_;
  std::optional<tc::store::Reader> store;
  std::string out;
};

// Was: 725 of 1,000 ends dropped as "no free ring: more threads than rings"
// with two threads alive, and the run marked incomplete.
TEST_F(NvtxLimits, RangesEndedOnThreadsThatComeAndGoAreAllStoredAndTheRunIsComplete) {
  ASSERT_NO_FATAL_FAILURE(profile("cross", 1000));
  EXPECT_EQ(out, "done\n");
  EXPECT_EQ(count("SELECT count(*) FROM nvtx_range_starts"), 1000);
  EXPECT_EQ(count("SELECT count(*) FROM nvtx_range_starts s JOIN nvtx_range_ends e USING (range_id) WHERE s.utid != e.utid "
                   "AND e.ts >= s.ts"),
            1000)
      << "each ended on a thread other than its own";
}

// Was: past 256 open ranges, the pop of an empty domain returned 256 and
// ended the innermost range of another domain.
TEST_F(NvtxLimits, PushAndPopAtAnyDepthAndPopsOfEmptyDomainsReturnMinusOneAndEndNothing) {
  ASSERT_NO_FATAL_FAILURE(profile("deep", 300));
  EXPECT_EQ(out, "0 wrong\ndone\n");
  EXPECT_EQ(nvtx_ranges(), 600);
  EXPECT_EQ(nvtx_ranges("r.dur >= 0"), 600) << "none cut";
  // Every range was still open at the mark after the empty pops.
  EXPECT_EQ(nvtx_ranges("r.ts + r.dur >= (SELECT i.ts FROM instants i JOIN locations m ON m.id = i.loc_id WHERE m.name = 'after')"), 600);
  // Pushed alternately, popped alternately: "d<i>" at depth 2i, "x<i>" at 2i + 1.
  EXPECT_EQ(nvtx_ranges("l.name = 'd' || (r.depth / 2) AND r.depth % 2 = 0 AND l.function = ''"), 300);
  EXPECT_EQ(nvtx_ranges("l.name = 'x' || (r.depth / 2) AND r.depth % 2 = 1 AND l.function = 'deep'"), 300);
}

// Was: each name past 32,768 cost ~70 us under a global lock (300,000: 19.4 s).
// Now every distinct message is a site of its own up to the cap (2^19).
TEST_F(NvtxLimits, ThreeHundredThousandDistinctMessagesAreEachASiteOfTheStore) {
  ASSERT_NO_FATAL_FAILURE(profile("names", 300000));
  EXPECT_EQ(count("SELECT count(*) FROM nvtx_sites s JOIN locations l ON l.id = s.loc_id WHERE l.name GLOB 'n[0-9]*'"), 300000);
  EXPECT_EQ(count("SELECT count(DISTINCT l.name) FROM ranges r JOIN locations l ON l.id = r.loc_id WHERE l.file = 'nvtx'"), 300000);
  EXPECT_EQ(nvtx_ranges(), 300000);
  EXPECT_EQ(count("SELECT count(*) FROM logs"), 0) << "no cap reached";
}

// Past the cap, new messages share one site named so, every event is kept
// there, and a line in logs says the cap was reached.
TEST_F(NvtxLimits, MessagesPastTheCapShareOneSiteThatSaysSoAndKeepTheirEvents) {
  ASSERT_NO_FATAL_FAILURE(profile("names", 1500, {{"TC_NVTX_MAX_SITES", "1000"}}));
  EXPECT_EQ(nvtx_ranges(), 1500);
  EXPECT_EQ(nvtx_ranges("l.name GLOB 'n[0-9]*'"), 1000);
  EXPECT_EQ(nvtx_ranges("l.name = '(more distinct NVTX messages than tc keeps apart)'"), 500);
  EXPECT_EQ(count("SELECT count(*) FROM logs WHERE level = 'warning' AND message LIKE 'NVTX: more distinct messages than tc keeps apart%'"),
            1);
}

// Was: 100,000 domains of one name were 100,000 handles, and 67k of their
// ranges went to an overflow bucket; 100,000 distinct domains took 7.9 s.
TEST_F(NvtxLimits, DomainsOfOneNameAreOneHandleAndDistinctNamesKeepTheirRangesApart) {
  ASSERT_NO_FATAL_FAILURE(profile("samedomain", 100000));
  EXPECT_EQ(out, "1 distinct handles\ndone\n");
  EXPECT_EQ(count("SELECT count(*) FROM nvtx_sites WHERE domain = 'same'"), 1);
  EXPECT_EQ(nvtx_ranges("l.name = 'in' AND l.function = 'same'"), 100000);

  ASSERT_NO_FATAL_FAILURE(profile("domains", 100000));
  const std::string per_domain = "SELECT count(*) AS n FROM ranges r JOIN locations l ON l.id = r.loc_id WHERE l.name = 'in' "
                                 "AND l.function GLOB 'dom[0-9]*' GROUP BY l.function";
  EXPECT_EQ(count("SELECT count(*) FROM (" + per_domain + ") WHERE n = 1"), 100000) << "one range in each domain";
}

TEST_F(NvtxLimits, RegisteredStringsAreInternedAndEachASite) {
  ASSERT_NO_FATAL_FAILURE(profile("strings", 100000));
  EXPECT_EQ(out, "s0 again: same handle\ndone\n");
  EXPECT_EQ(count("SELECT count(*) FROM nvtx_sites s JOIN locations l ON l.id = s.loc_id WHERE s.domain = 'reg' "
                   "AND s.message_type = 'registered' AND l.name GLOB 's[0-9]*'"),
            100000);
  EXPECT_EQ(nvtx_ranges("l.function = 'reg'"), 100000);
}

// Was: 500 distinct 1 MiB messages took the program from 2 MB to 510 MB.
// Now each is cut at 4096 bytes with a visible mark; the program measures
// its own resident set.
TEST_F(NvtxLimits, LongMessagesAreCutVisiblyAndCostBoundedMemory) {
  ASSERT_NO_FATAL_FAILURE(profile("big", 500));
  long grew = -1;
  ASSERT_EQ(std::sscanf(out.c_str(), "rss grew %ld MiB", &grew), 1) << out;
  EXPECT_LT(grew, 32) << "500 distinct messages of 1 MiB";
  const std::string mark = "\xe2\x80\xa6[cut: longer than 4096 bytes]";
  EXPECT_EQ(nvtx_ranges("l.name LIKE '%m" + mark + "'"), 500);
  EXPECT_EQ(count("SELECT count(DISTINCT l.name) FROM ranges r JOIN locations l ON l.id = r.loc_id WHERE l.name LIKE '%" + mark + "'"),
            500);
  EXPECT_EQ(count("SELECT max(length(CAST(l.name AS BLOB))) FROM locations l WHERE l.file = 'nvtx'"),
            static_cast<int64_t>(4096 + mark.size()));
}

}  // namespace
