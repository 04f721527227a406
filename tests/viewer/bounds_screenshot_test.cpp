// tc-viewer --screenshot over damaged and huge stores (#27): a store it
// cannot draw is one line and exit 5, never a crash or the machine's memory;
// a store of more rows than a frame holds pixels for draws its top rows.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "analysis/rank_store.h"
#include "support/process.h"
#include "tc/store/writer.h"
#include "tc/viewer/frame_cache.h"
#include "viewer/screenshot_support.h"

namespace tc::viewer {
namespace {

using tc::test::TempDir;

// tc-viewer with at most 6 GiB of address space (not under AddressSanitizer,
// which maps terabytes of shadow): a viewer that allocates from a store's
// numbers fails here instead of taking the machine.
ViewerRun run_capped(const std::string& args) {
#if defined(__SANITIZE_ADDRESS__)
  return run(args);
#else
  const std::string command = viewer_command();
  const std::string viewer = command.rfind("xvfb-run -a env ", 0) == 0 ? command.substr(16) : command;
  const std::string capped = "sh -c 'ulimit -v 6291456; exec env " + viewer + " " + args + "'";
  ViewerRun r;
  const std::string full = (command == viewer ? "" : "xvfb-run -a ") + capped + " 2>&1";
  FILE* p = ::popen(full.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
#endif
}

void sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

class BoundsScreenshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_display()) GTEST_SKIP() << "no DISPLAY and no xvfb-run";
  }
  TempDir dir_;
};

// #27: clock_offset_ns = INT64_MAX took tc-viewer to 23.7 GB and the OOM
// killer (SIGSEGV under a cap).
TEST_F(BoundsScreenshotTest, AClockOffsetOfInt64MaxIsADamagedStoreInOneLine) {
  auto paths = tc::test::write_job(dir_.path().string(), {{.rank = 0}, {.rank = 1}}, 2, {});
  sql(paths[1], "UPDATE ranks SET clock_offset_ns = 9223372036854775807");
  const std::string png = dir_.file("offset.png");
  ViewerRun r = run_capped(paths[0] + " " + paths[1] + " --screenshot " + png + " --size 800x400 --frames 1");
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("tc-viewer: " + paths[1] + ": "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("damaged store"), std::string::npos) << r.output;
  EXPECT_EQ(load_png(png).w, 800) << "the window with the error line, still rendered";
}

// More rows than a frame holds pixels for (a track per depth): the top ones
// are drawn, in the range's colour.
TEST_F(BoundsScreenshotTest, ThousandsOfNestedRangesDrawTheirTopRows) {
  namespace schema = store::schema;
  const std::string path = dir_.file("deep.tcdb"), png = dir_.file("deep.png");
  const int64_t n = static_cast<int64_t>(FrameCache::Frame::kMaxRasterRows) + 500;
  {
    auto created = store::Writer::create(path, {.overwrite = true});
    ASSERT_TRUE(created.ok()) << created.status().message();
    store::Writer& w = **created;
    auto ok = [](const Status& s) { ASSERT_TRUE(s.ok()) << s.message(); };
    ok(w.row(schema::locations).i64(1).text("layer").text("model.py").text("forward").i64(10).insert());
    ok(w.row(schema::threads).i64(1).i64(1).i64(100).text("main").insert());
    // A step over the ranges: the quick first load (no ranges) has the run's extent too.
    ok(w.row(schema::steps).null().i64(1).i64(1000).i64(2 * n).i64(0).i64(1).insert());
    for (int64_t i = 0; i < n; ++i) ok(w.row(schema::ranges).null().i64(1).i64(1000 + i).i64(2 * (n - i)).i64(i).i64(1).i64(0).insert());
    ok(w.finalize());
  }
  ViewerRun r = run_capped(path + " --screenshot " + png + " --size 1000x600 --frames 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::to_string(n + 1) + " events on 1 lanes"), std::string::npos) << r.output;
  EXPECT_GT(load_png(png).count(palette::range_colour(1)), 10000) << "the visible depths' fills";
}

}  // namespace
}  // namespace tc::viewer
