// End to end: samples/python/torchrun_ddp.py (torch.compile(DDP(model)), gloo
// on the CPU, 2 ranks) in both launch forms, `torchrun --no-python tc-profile`
// (each rank's own) and `tc-profile -- torchrun` (one over the tree, which
// splits its store by rank), rank 1's
// token_ids dim 1 growing from 16 to 24 at step 3. Each rank's store counts
// its optimizer steps, holds DDP's all-reduces (tc's Python hook: a comm hook
// timing each one), and `tc-analyze run.rank*.tcdb` names rank 1 as the
// straggler of step 3, the input and dim that changed, rank 0's wait, and
// torch.compile's own remedies. The backend is aot_eager (no Inductor code
// generation: the shortest compile that still recompiles).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "python_sample_util.h"

namespace {

namespace t = tc::test;

class TorchrunPython : public ::testing::TestWithParam<bool> {};  // true: one tc-profile over the tree

TEST_P(TorchrunPython, TheRankThatRecompiledIsTheStragglerWithItsInputAndTheOthersWait) {
  const bool whole_tree = GetParam();
  const std::string sample = std::string(TC_SOURCE_DIR) + "/samples/python/torchrun_ddp.py";
  const std::string py = t::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv");
  TC_REQUIRE_PYTHON_PEER(py, "torch.distributed", {}, "scripts/test.sh installs it into .tc-test-venv");
  t::TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::vector<std::string> torchrun = {py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"};
  const std::vector<std::string> train = {py, sample, "--backend", "aot_eager", "--steps", "6", "--long-at", "3"};
  std::vector<std::string> command;
  if (whole_tree) {
    command = {t::bin("tc-profile"), "-q", "-o", out, "--"};
    command.insert(command.end(), torchrun.begin(), torchrun.end());
    command.insert(command.end(), train.begin() + 1, train.end());  // torchrun runs the script with its python
  } else {
    command = torchrun;
    for (const std::string& a : std::vector<std::string>{"--no-python", t::bin("tc-profile"), "-q", "-o", out, "--"}) command.push_back(a);
    command.insert(command.end(), train.begin(), train.end());
  }
  t::Exit e = t::run(command,
                         {{"TORCHINDUCTOR_CACHE_DIR", dir.file("inductor")}, {"TORCH_TRACE", ""}, {"OMP_NUM_THREADS", "1"},
                          {"OMPI_COMM_WORLD_RANK", ""}, {"PMI_RANK", ""}, {"SLURM_PROCID", ""}, {"SLURM_JOB_ID", ""}},
                         std::chrono::seconds(240));
  ASSERT_EQ(e.code, 0) << e.out << e.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "a store per rank, in both forms";
  t::Exit a = t::run({t::bin("tc-analyze"), dir.file("run.rank0.tcdb"), dir.file("run.rank1.tcdb"), "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  t::JsonValue j = t::JsonParser(a.out).parse();
  ASSERT_EQ(j["ranks"].a.size(), 2u) << a.out;
  for (const t::JsonValue& r : j["ranks"].a) {
    EXPECT_EQ(r["steps"].n, 6) << "rank " << r["rank"].n;
    EXPECT_EQ(r["collectives"].n, 6) << "one all-reduce (one bucket) per step, rank " << r["rank"].n;
  }

  const t::JsonValue* straggler = nullptr;
  // Step 0's first compilations may make either rank the later one; step 3's is rank 1's alone.
  for (const t::JsonValue* f : t::python_sample::findings(j, "distributed.straggler"))
    if ((*f)["evidence"]["cause"].s == "compile" && (*f)["evidence"]["step"].n == 3) straggler = f;
  ASSERT_NE(straggler, nullptr) << a.out;
  const t::JsonValue& ev = (*straggler)["evidence"];
  EXPECT_EQ(ev["rank"].n, 1);
  EXPECT_EQ(ev["step"].n, 3);
  EXPECT_GT(ev["waited_s"]["0"].n, 0);
  EXPECT_GT(ev["total_waited_s"].n, 0);
  bool changed = false;
  for (const t::JsonValue& c : ev["compilations"].a)
    for (const t::JsonValue& in : c["inputs"].a)
      changed = changed || (in["input"].s == "token_ids" && in["dim"].n == 1 && in["old_value"].n == 16 && in["new_value"].n == 24);
  EXPECT_TRUE(changed) << a.out;
  const std::string fix = (*straggler)["suggestion"].s;
  EXPECT_NE(fix.find("Pad token_ids dim 1 to 24 on every rank"), std::string::npos) << fix;
  EXPECT_NE(fix.find("torch._dynamo.mark_dynamic(token_ids, 1)"), std::string::npos) << fix;
  EXPECT_NE(fix.find("enable_compiler_collective"), std::string::npos) << fix;
  EXPECT_EQ(fix.find("args["), std::string::npos) << "DDP's own frame argument is the same tensor: " << fix;
  // No suggestion sends the user into torch or Python's library, and tc's hook breaks no graph of its own.
  for (const t::JsonValue& f : j["findings"].a) {
    const std::string& s = f["suggestion"].s;
    EXPECT_EQ(s.find("site-packages"), std::string::npos) << s;
    EXPECT_EQ(s.find("/lib/python3"), std::string::npos) << s;
    EXPECT_EQ(f["title"].s.find("sitecustomize"), std::string::npos) << f["title"].s;
  }
}

INSTANTIATE_TEST_SUITE_P(LaunchForms, TorchrunPython, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "OneTcProfileOverTorchrun" : "TcProfileUnderTorchrun"; });

}  // namespace
