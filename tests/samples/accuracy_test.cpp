// Slow: the text classifier, trained for one epoch, beats the
// majority-class baseline on the held-out quotes by its stated margin.
#include <gtest/gtest.h>

#include <iostream>

#include "sample_run.h"

namespace {

// Stated in docs/samples.md: after one epoch (93 steps), at least 30 points
// over the majority class (measured: +42.2 at --max-length 64, +42.5 at 128).
constexpr double kStatedMargin = 30.0;

TEST(TextClassifierAccuracy, BeatsTheMajorityClassByTheStatedMargin) {
  if (!tc::test::have_fortunes()) FAIL() << tc::test::kNoFortunes;
  auto e = tc::test::run({tc::test::bin("tc-sample-text-classifier"), "--padding", "max_length", "--max-length", "64", "--epochs", "1",
                          "--log-every", "0"},
                         tc::test::sample_env());
  ASSERT_EQ(e.code, 0) << e.err;
  auto lines = tc::test::lines_starting(e.out, "held-out accuracy:");
  ASSERT_EQ(lines.size(), 1u) << e.out;
  auto at = lines[0].find("margin: ");
  ASSERT_NE(at, std::string::npos) << lines[0];
  double margin = std::stod(lines[0].substr(at + 8));
  EXPECT_GE(margin, kStatedMargin) << lines[0];
  std::cout << lines[0] << "\n";
}

}  // namespace
