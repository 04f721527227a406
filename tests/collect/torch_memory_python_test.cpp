// End to end, the memory half for torch (issue #30): tests/python/torch_memory.py
// (an MLP classifier, torch.compile, AdamW, batch 64) under plain
// `tc-profile`, then `tc-analyze --json`: the summary's peak and its source,
// and memory.headroom's evidence against the training's tensors as the
// script counts them itself without tc (parameters, gradients, AdamW's state,
// and the activations torch's own saved-tensor hooks see: a count
// independent of the hook's graph walk), at batch 64 and, for the
// prediction, at 4x (a real run at 256), each within 15%; an out-of-memory
// step's post-mortem; and a Hugging Face Trainer run's memory line and
// memory.headroom. About 15 s each here:
// labelled python and slow.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "python_sample_util.h"

namespace {

namespace t = tc::test;
using t::JsonValue;

const std::string kScript = std::string(TC_SOURCE_DIR) + "/tests/python/torch_memory.py";
const std::vector<std::pair<std::string, std::string>> kEnv = {{"CUDA_VISIBLE_DEVICES", ""}};

double tensors(const std::string& out, int64_t batch) { return t::python_sample::per_batch(out, "tensors", batch); }

TEST(TorchMemoryPython, PeakAndPredictionAgainstTheTrainingsTensors) {
  const std::string py = tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv");
  TC_REQUIRE_PYTHON_PEER(py, "torch", kEnv, "scripts/test.sh installs torch into .tc-test-venv");
  t::TempDir dir;
  const std::string out = dir.file("run.tcdb");
  t::Exit e = t::run({t::bin("tc-profile"), "-q", "-o", out, "--", py, kScript, "--batch", "64"}, kEnv);
  ASSERT_EQ(e.code, 0) << e.err;
  t::Exit truth = t::run({py, kScript, "--truth", "64", "256"}, kEnv);
  ASSERT_EQ(truth.code, 0) << truth.err;
  const double at64 = tensors(truth.out, 64), at256 = tensors(truth.out, 256);
  ASSERT_GT(at64, 0) << truth.out;
  ASSERT_GT(at256, 0) << truth.out;

  const JsonValue j = t::python_sample::analyze_json(out);
  EXPECT_EQ(j["summary"]["memory_source"].s, "torch_tensors");
  EXPECT_NEAR(j["summary"]["peak_bytes"].n, at64, 0.15 * at64);
  const JsonValue ev = t::python_sample::only_evidence(j, "memory.headroom");
  ASSERT_EQ(ev.type, JsonValue::kObject);
  for (const char* key : {"peak_bytes", "capacity_bytes", "batch_size", "fixed_bytes", "bytes_per_sample", "largest_batch_that_fits",
                          "suggested_batch", "lr_scale_linear", "lr_scale_sqrt", "method"})
    EXPECT_TRUE(ev.has(key)) << key;
  EXPECT_EQ(ev["batch_size"].n, 64);
  EXPECT_NE(ev["method"].s.find("torch's tensors at batch 64"), std::string::npos) << ev["method"].s;
  EXPECT_NEAR(ev["peak_bytes"].n, at64, 0.15 * at64);
  const double predicted = ev["fixed_bytes"].n + ev["bytes_per_sample"].n * 256;
  EXPECT_NEAR(predicted, at256, 0.15 * at256);
  // The activations grow with the batch: a prediction that ignored them would be off by more than the tolerance.
  ASSERT_GT(at256 - at64, 0.15 * at256);

  t::Exit text = t::run({t::bin("tc-analyze"), out});
  EXPECT_NE(text.out.find("from torch's tensors at the largest step"), std::string::npos) << text.out;
  std::printf("peak %.0f (tensors %.0f); batch 256: predicted %.0f, tensors %.0f\n", ev["peak_bytes"].n, at64, predicted, at256);
}

// torch's CPU allocator fails (the script's last step at batch 300000 with
// 256 MiB left to map): the run ends with torch's error, and tc-analyze with
// the capacity given (64 MiB) says in memory.oom what was asked for, the batch
// that failed and the largest that fits; the training's tensors at that
// batch, counted by the script without tc, fit the capacity.
TEST(TorchMemoryPython, AnOutOfMemoryStepGetsThePostMortem) {
  const std::string py = tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv");
  TC_REQUIRE_PYTHON_PEER(py, "torch", kEnv, "scripts/test.sh installs torch into .tc-test-venv");
  t::TempDir dir;
  const std::string out = dir.file("run.tcdb");
  t::Exit e = t::run({t::bin("tc-profile"), "-q", "-o", out, "--", py, kScript, "--batch", "64", "--oom-at", "300000"}, kEnv);
  EXPECT_EQ(e.code, 1) << e.err;
  EXPECT_NE(e.err.find("can't allocate memory"), std::string::npos) << e.err;
  constexpr int64_t kCapacity = int64_t{64} << 20;
  const JsonValue ev = t::python_sample::only_evidence(t::python_sample::analyze_json(out, {"--capacity", std::to_string(kCapacity)}),
                                                       "memory.oom");
  ASSERT_EQ(ev.type, JsonValue::kObject);
  EXPECT_GT(ev["requested_bytes"].n, 256 << 20);  // more than the process had left to map
  EXPECT_EQ(ev["failing_batch_size"].n, 300000);
  EXPECT_EQ(ev["capacity_bytes"].n, static_cast<double>(kCapacity));
  EXPECT_GT(ev["breakdown"]["parameter"].n, 0);
  EXPECT_NE(ev["method"].s.find("torch's tensors at batch 64"), std::string::npos) << ev["method"].s;
  const auto fits = static_cast<int64_t>(ev["largest_batch_that_fits"].n);
  ASSERT_GT(fits, 64);
  ASSERT_LT(fits, 300000);
  t::Exit truth = t::run({py, kScript, "--truth", std::to_string(fits)}, kEnv);
  ASSERT_EQ(truth.code, 0) << truth.err;
  const double at = tensors(truth.out, fits);
  ASSERT_GT(at, 0) << truth.out;
  EXPECT_LE(at, 0.9 * static_cast<double>(kCapacity) * 1.15) << "batch " << fits;  // the headroom kept, within the model's 15%
  EXPECT_GE(at, 0.9 * static_cast<double>(kCapacity) * 0.85) << "batch " << fits;  // and not far below: the largest
  std::printf("batch %lld fits 64 MiB: its tensors %.0f bytes\n", static_cast<long long>(fits), at);
}

// A Hugging Face Trainer run (torch_compile=True, DataCollatorWithPadding, a
// tiny BERT from a config: tests/fixtures/frameworks/hf_trainer_padding.py)
// under plain tc-profile gets the memory line and memory.headroom, its batch
// the Trainer's (8, from the compiled forward's keyword arguments).
TEST(TorchMemoryPython, AHuggingFaceTrainerRunGetsTheMemoryLineAndHeadroom) {
  const std::string py = tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv");
  TC_REQUIRE_PYTHON_PEER(py, "transformers", kEnv, "scripts/test.sh installs transformers, tokenizers and accelerate into .tc-test-venv");
  t::TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string script = std::string(TC_SOURCE_DIR) + "/tests/fixtures/frameworks/hf_trainer_padding.py";
  t::Exit e = t::run({t::bin("tc-profile"), "-q", "-o", out, "--", py, script, "--backend", "aot_eager"}, kEnv);
  ASSERT_EQ(e.code, 0) << e.err;
  const JsonValue j = t::python_sample::analyze_json(out);
  EXPECT_EQ(j["summary"]["memory_source"].s, "torch_tensors");
  EXPECT_GT(j["summary"]["peak_bytes"].n, 0);
  const JsonValue ev = t::python_sample::only_evidence(j, "memory.headroom");
  ASSERT_EQ(ev.type, JsonValue::kObject);
  EXPECT_EQ(ev["batch_size"].n, 8);
  EXPECT_GT(ev["bytes_per_sample"].n, 0);
  EXPECT_GT(ev["suggested_batch"].n, 8);
  t::Exit text = t::run({t::bin("tc-analyze"), out});
  EXPECT_NE(text.out.find("  memory    peak "), std::string::npos) << text.out;
}

}  // namespace
