// tc-viewer --screenshot under a display (xvfb-run -a when DISPLAY is unset):
// the PNG has the asked size, is not blank, and shows every lane's colour.
#include <gtest/gtest.h>

#include <functional>
#include <stb/stb_image.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "tc/viewer/demo_store.h"
#include "viewer/screenshot_support.h"
#include "tc/viewer/model.h"

namespace tc::viewer {
namespace {

namespace fs = std::filesystem;

class ScreenshotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("tc_viewer_gui_" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
    DemoStoreOptions o;
    o.range_events = 3000;
    o.threads = 2;
    auto n = write_demo_store(dir_ + "/run.tcdb", o);
    ASSERT_TRUE(n.ok()) << n.status().message();
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    if (!have_display()) GTEST_SKIP() << "no DISPLAY and no xvfb-run";
  }
  static inline std::string dir_;
};

TEST_F(ScreenshotTest, WholeRunShowsEveryLaneColour) {
  const std::string png = dir_ + "/whole.png";
  ViewerRun r = run(dir_ + "/run.tcdb --screenshot " + png + " --size 1280x720");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("time_to_first_frame_s: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("frame_ms_zoomed_out: median "), std::string::npos) << r.output;
  Image img = load_png(png);
  ASSERT_EQ(img.w, 1280);
  ASSERT_EQ(img.h, 720);
  EXPECT_GT(img.colours.size(), 20u) << "a blank picture";
  const std::pair<const char*, palette::Rgb> lanes[] = {
      {"first compilation", palette::kCompileFirst}, {"shape-change recompilation", palette::kCompileShape},
      {"structure-change recompilation", palette::kCompileStructure}, {"execution", palette::kExecution},
      {"explicit evaluation", palette::kEvaluation}, {"memory", palette::kMemory},
      {"capacity", palette::kCapacity}, {"out of memory", palette::kOutOfMemory},
      {"steps", palette::kStepEven}, {"ranges", palette::range_colour(1)}};
  for (const auto& [name, colour] : lanes) {
    EXPECT_GE(img.count(colour), 8) << name << " colour missing from the screenshot";
  }
}

TEST_F(ScreenshotTest, SelectAndHoverRenderTheTooltip) {
  const std::string plain = dir_ + "/plain.png", hover = dir_ + "/hover.png";
  ViewerRun a = run(dir_ + "/run.tcdb --screenshot " + plain + " --size 1000x700 --select evaluation:1 --frames 1");
  ViewerRun b = run(dir_ + "/run.tcdb --screenshot " + hover + " --size 1000x700 --hover evaluation:1 --frames 1");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  Image x = load_png(plain), y = load_png(hover);
  ASSERT_EQ(y.w, 1000);
  // The tooltip's title is drawn in its own amber; only the hovered picture has it.
  const palette::Rgb title = palette::kTooltipEvaluation;
  EXPECT_EQ(x.count(title), 0);
  EXPECT_GT(y.count(title), 10);
}

// The kernel lane draws the runs of a recorded execution, coloured by the
// source line they came from; the statistics panel renders.
TEST_F(ScreenshotTest, KernelLaneDrawsTheKernelsOfAnExecution) {
  const std::string png = dir_ + "/kernels.png";
  ViewerRun r = run(dir_ + "/run.tcdb --screenshot " + png + " --size 1200x700 --select execution:3 --frames 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Image img = load_png(png);
  ASSERT_EQ(img.w, 1200);
  auto site_colour = [](const std::string& site) {
    return palette::range_colour(static_cast<int64_t>(std::hash<std::string>{}(site) & 0x7fffffff));
  };
  EXPECT_GE(img.count(site_colour("model.cpp:42")), 50) << "the product's kernel is missing from the kernel lane";
  EXPECT_GE(img.count(site_colour("model.cpp:43")), 8);
  const std::string stats = dir_ + "/stats.png";
  ViewerRun s = run(dir_ + "/run.tcdb --screenshot " + stats + " --size 1200x700 --panel statistics --frames 1");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_GT(load_png(stats).colours.size(), 20u);
}

// NVTX: each domain's group (its label row) with the program's colours and
// the marks' diamonds; hovering a cut range says so in its tooltip.
TEST_F(ScreenshotTest, NvtxGroupsDrawInTheProgramsColoursAndCutRangesSaySo) {
  auto tl = load_timeline(dir_ + "/run.tcdb");
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  const std::string png = dir_ + "/nvtx.png";
  ViewerRun r = run(dir_ + "/run.tcdb --screenshot " + png + " --size 1600x1000 --frames 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Image img = load_png(png);
  ASSERT_EQ(img.w, 1600);
  EXPECT_GE(img.count(palette::kNvtxGroup), 1000) << "two domains' label rows";
  int coloured = 0;
  for (const NvtxSite& site : tl->nvtx_sites) {
    if (!site.color) continue;
    ++coloured;
    palette::Rgb c = palette::from_argb(*site.color);
    EXPECT_GE(img.count(c), 20) << "NVTX colour " << std::hex << *site.color << " missing from the screenshot";
  }
  EXPECT_EQ(coloured, 4) << "the demo's coloured sites";

  // The N-th NVTX range by start time (as --hover nvtx:N counts) that is cut.
  std::vector<std::pair<int64_t, bool>> ranges;
  for (const Lane& lane : tl->lanes) {
    for (const Track& t : lane.tracks) {
      if (t.kind != TrackKind::kNvtxRanges && t.kind != TrackKind::kNvtxStartEnd) continue;
      for (size_t i = 0; i < t.size(); ++i) ranges.push_back({t.ts[i], t.is_cut(i)});
    }
  }
  std::stable_sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t cut = 0;
  while (cut < ranges.size() && !ranges[cut].second) ++cut;
  ASSERT_LT(cut, ranges.size()) << "the demo has a cut range";
  const std::string plain = dir_ + "/nvtx_plain.png", hover = dir_ + "/nvtx_hover.png";
  const std::string spec = "nvtx:" + std::to_string(cut + 1);
  ViewerRun a = run(dir_ + "/run.tcdb --screenshot " + plain + " --size 1400x900 --select " + spec + " --frames 1");
  ViewerRun b = run(dir_ + "/run.tcdb --screenshot " + hover + " --size 1400x900 --hover " + spec + " --frames 1");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(load_png(plain).count(palette::kTooltipCut), 0);
  EXPECT_GT(load_png(hover).count(palette::kTooltipCut), 10) << "the tooltip's cut line";
}

TEST_F(ScreenshotTest, BadStoreShowsItsErrorInsteadOfCrashing) {
  const std::string bad = dir_ + "/bad.tcdb", png = dir_ + "/bad.png";
  { FILE* f = std::fopen(bad.c_str(), "w"); std::fputs("not a store, just text", f); std::fclose(f); }
  ViewerRun r = run(bad + " --screenshot " + png + " --size 800x400");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("not a tc store"), std::string::npos) << r.output;
  Image img = load_png(png);  // the window with the error line, still rendered
  EXPECT_EQ(img.w, 800);
  EXPECT_EQ(img.h, 400);
}

TEST_F(ScreenshotTest, UnknownSelectionIsAnError) {
  ViewerRun r = run(dir_ + "/run.tcdb --screenshot " + dir_ + "/x.png --select recompilation:99 --frames 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("recompilation:99"), std::string::npos) << r.output;
}

TEST_F(ScreenshotTest, HelpTeachesTheOptions) {
  ViewerRun r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--screenshot", "--size", "--select", "--hover", "recompilation:N", "xvfb-run"}) {
    EXPECT_NE(r.output.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace tc::viewer
