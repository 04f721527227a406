// End to end, the memory half for JAX (issue #30): tests/python/jax_memory.py
// (an MLP's jitted step at batch 16, a short last batch) under plain
// `tc-profile`, then `tc-analyze --json`: the run's peak against XLA's own
// memory_analysis() of the step it ran (the script prints it), and at a
// capacity where the suggested batch falls between the batches the hook
// compiled ahead of time, the prediction at that batch against XLA's analysis
// of the step compiled there (the script again, without tc), each within
// 15%. About 14 s here (three Python processes, the hook's two probe
// compiles): labelled python and slow.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "python_sample_util.h"

namespace {

namespace t = tc::test;
using t::JsonValue;

const std::string kScript = std::string(TC_SOURCE_DIR) + "/tests/python/jax_memory.py";
const std::vector<std::pair<std::string, std::string>> kEnv = {{"JAX_PLATFORMS", "cpu"}};

double xla_peak(const std::string& out, int64_t batch) { return t::python_sample::per_batch(out, "xla_peak", batch); }

JsonValue headroom(const std::string& store, const std::vector<std::string>& extra = {}) {
  return t::python_sample::only_evidence(t::python_sample::analyze_json(store, extra), "memory.headroom");
}

TEST(JaxMemoryPython, PeakAndPredictionAgainstXlasOwnAnalysis) {
  const std::string py = tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv");
  TC_REQUIRE_PYTHON_PEER(py, "jax", kEnv, "scripts/test.sh installs jax[cpu] into .tc-test-venv");
  t::TempDir dir;
  const std::string out = dir.file("run.tcdb");
  t::Exit e = t::run({t::bin("tc-profile"), "-q", "-o", out, "--", py, kScript, "--batch", "16"}, kEnv);
  ASSERT_EQ(e.code, 0) << e.err;
  const double truth = xla_peak(e.out, 16);
  ASSERT_GT(truth, 0) << e.out;

  JsonValue ev = headroom(out);
  ASSERT_TRUE(ev.has("peak_bytes")) << "no memory.headroom";
  EXPECT_NEAR(ev["peak_bytes"].n, truth, 0.15 * truth);
  EXPECT_EQ(ev["batch_size"].n, 16);
  ASSERT_EQ(ev["points"].a.size(), 3u);  // 16 (ran), 32 and 128 (compiled ahead of time)
  const double p32 = ev["points"].a[1]["peak_bytes"].n, p128 = ev["points"].a[2]["peak_bytes"].n;

  // A capacity whose usable 90% is halfway between the peaks at 32 and 128.
  const auto capacity = static_cast<int64_t>((p32 + p128) / 2 / 0.9);
  JsonValue at = headroom(out, {"--capacity", std::to_string(capacity)});
  ASSERT_TRUE(at.has("suggested_batch"));
  const auto suggested = static_cast<int64_t>(at["suggested_batch"].n);
  EXPECT_GT(suggested, 32);
  EXPECT_LT(suggested, 128);
  for (const char* key : {"peak_bytes", "capacity_bytes", "batch_size", "fixed_bytes", "bytes_per_sample", "largest_batch_that_fits",
                          "suggested_batch", "lr_scale_linear", "lr_scale_sqrt", "method"})
    EXPECT_TRUE(at.has(key)) << key;
  EXPECT_EQ(at["capacity_bytes"].n, static_cast<double>(capacity));
  const double predicted = at["fixed_bytes"].n + at["bytes_per_sample"].n * static_cast<double>(suggested);
  t::Exit x = t::run({py, kScript, "--analyse-at", std::to_string(suggested)}, kEnv);
  ASSERT_EQ(x.code, 0) << x.err;
  const double xla = xla_peak(x.out, suggested);
  ASSERT_GT(xla, 0) << x.out;
  EXPECT_NEAR(predicted, xla, 0.15 * xla) << "batch " << suggested;
  std::printf("peak %.0f (XLA %.0f); batch %lld: predicted %.0f, XLA %.0f\n", ev["peak_bytes"].n, truth, static_cast<long long>(suggested), predicted, xla);
}

// XLA's RESOURCE_EXHAUSTED (the script's last step at batch 200000 with 256
// MiB more to map; JAX dispatches asynchronously, so it surfaces where the
// script reads the loss, uncaught): the run ends with JAX's error, and
// tc-analyze with a capacity between the model's batches 32 and 128 says in
// memory.oom what was asked for, the batch that failed and the largest that
// fits, whose peak by XLA's own analysis is within 15% of the 90% kept.
TEST(JaxMemoryPython, AnOutOfMemoryStepGetsThePostMortem) {
  const std::string py = tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv");
  TC_REQUIRE_PYTHON_PEER(py, "jax", kEnv, "scripts/test.sh installs jax[cpu] into .tc-test-venv");
  t::TempDir dir;
  const std::string out = dir.file("run.tcdb");
  t::Exit e = t::run({t::bin("tc-profile"), "-q", "-o", out, "--", py, kScript, "--batch", "16", "--oom-at", "200000"}, kEnv);
  EXPECT_EQ(e.code, 1) << e.err;
  EXPECT_NE(e.err.find("RESOURCE_EXHAUSTED"), std::string::npos) << e.err;
  auto analysed = [&](int64_t batch) {
    t::Exit x = t::run({py, kScript, "--analyse-at", std::to_string(batch)}, kEnv);
    EXPECT_EQ(x.code, 0) << x.err;
    return xla_peak(x.out, batch);
  };
  const double p32 = analysed(32), p128 = analysed(128);
  ASSERT_GT(p32, 0);
  ASSERT_GT(p128, p32);
  const auto capacity = static_cast<int64_t>((p32 + p128) / 2 / 0.9);
  const JsonValue ev = t::python_sample::only_evidence(t::python_sample::analyze_json(out, {"--capacity", std::to_string(capacity)}),
                                                       "memory.oom");
  ASSERT_EQ(ev.type, JsonValue::kObject);
  EXPECT_GT(ev["requested_bytes"].n, 256 << 20);
  EXPECT_EQ(ev["failing_batch_size"].n, 200000);
  EXPECT_NE(ev["method"].s.find("memory_analysis()"), std::string::npos) << ev["method"].s;
  const auto fits = static_cast<int64_t>(ev["largest_batch_that_fits"].n);
  EXPECT_GT(fits, 32);
  EXPECT_LT(fits, 128);
  const double at = analysed(fits);
  EXPECT_NEAR(at, 0.9 * static_cast<double>(capacity), 0.15 * 0.9 * static_cast<double>(capacity)) << "batch " << fits;
  std::printf("batch %lld fits %lld bytes: XLA's peak there %.0f\n", static_cast<long long>(fits), static_cast<long long>(capacity), at);
}

}  // namespace
