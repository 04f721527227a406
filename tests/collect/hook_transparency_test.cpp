// tc's Python hook (profiler/capture/python/sitecustomize.py) leaves the
// program as it was: tests/python/hook_transparency.py is run plainly and
// under `tc-profile -q`, with a sitecustomize of its own on PYTHONPATH, and
// its stdout, stderr and exit status must be identical (its sys.path,
// sys.meta_path, modules and `import sitecustomize`; `python -I`; fork and
// spawn workers; os._exit; jax.jit introspection). Then what the hook must
// still record: a forked worker's first step, a JAX program's calls when it
// ends in os._exit or SIGTERM, and the note for `python -I`/`-E`/`-S`. The
// peers are .tc-test-venv's (torch, jax): skipped without them, failed under
// TC_REQUIRE_PYTHON_PEERS=1. About 3 minutes here (torch imports).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "python_sample_util.h"
#include "tc/store/reader.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::JsonParser;
using tc::test::JsonValue;
using tc::test::TempDir;

namespace {

const std::string kProgram = std::string(TC_SOURCE_DIR) + "/tests/python/hook_transparency.py";
const char* const kHow = "scripts/test.sh installs torch and jax[cpu] into .tc-test-venv";
std::string python() { return tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv"); }

// A directory with the program's own sitecustomize (it says when it runs).
struct UserSite {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> env;
  UserSite() {
    std::ofstream(dir.file("sitecustomize.py")) << "import sys\nUSER_VALUE = 42\nsys.stderr.write('user sitecustomize ran\\n')\n";
    env = {{"PYTHONPATH", dir.path().string()}, {"JAX_PLATFORMS", "cpu"}};
  }
};

// The program's case run by `py` plainly and under tc-profile -q (store `out`): the same stdout, stderr and exit.
void expect_same(const std::vector<std::string>& flags, const std::string& which, const std::string& out = "",
                 const std::string& py = python()) {
  UserSite site;
  TempDir dir;
  std::vector<std::string> program = {py};
  program.insert(program.end(), flags.begin(), flags.end());
  program.insert(program.end(), {kProgram, which});
  Exit plain = tc::test::run(program, site.env);
  std::vector<std::string> profiled = {bin("tc-profile"), "-q", "-o", out.empty() ? dir.file("run.tcdb") : out, "--"};
  profiled.insert(profiled.end(), program.begin(), program.end());
  Exit under = tc::test::run(profiled, site.env);
  EXPECT_EQ(under.out, plain.out) << which;
  EXPECT_EQ(under.err, plain.err) << which;
  EXPECT_EQ(under.code, plain.code) << which << ": " << under.err;
  EXPECT_FALSE(plain.out.empty()) << plain.err;
}

TEST(HookTransparency, ThePathsModulesAndTheProgramsOwnSitecustomize) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  expect_same({}, "state");
  expect_same({}, "torch");
}

TEST(HookTransparency, IsolatedAndNoEnvironmentRuns) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  expect_same({"-I"}, "state");
  expect_same({"-E"}, "state");
}

TEST(HookTransparency, ForkWorkers) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  expect_same({}, "fork");
}

TEST(HookTransparency, SpawnWorkers) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  expect_same({}, "spawn");
}

TEST(HookTransparency, OsExit) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  expect_same({}, "exit");
}

// torch.compile is tc's wrapper under the hook (each step's input shapes): what it returns, for a module, a
// function, a decorator and Module.compile(), looks and behaves as torch's own.
TEST(HookTransparency, TorchCompileIntrospection) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  expect_same({}, "compile");
}

// The hook's memory count (a walk of the autograd graph before backward) reads no saved tensor that has an
// unpack hook: an activation checkpoint's forward runs once more per backward, as without tc (reading its saved
// tensors would run it again); torch.func still runs (a saved-tensor hook for the whole program would stop it);
// torch.autograd.backward, which the hook wraps, looks as torch's own.
TEST(HookTransparency, ActivationCheckpointsAndTorchFunc) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  expect_same({}, "checkpoint");
}

TEST(HookTransparency, JaxJitIntrospection) {
  TC_REQUIRE_PYTHON_PEER(python(), "jax", {}, kHow);
  expect_same({}, "jax");
}

// With torch_xla imported, CPU tensors' item()/bool()/float()/int()/to()/tolist()/cpu() are torch's own C methods
// and printing is torch's own Python (XLA tensors' reads and copies go through the hook's kernels: XlaPython.* checks
// what they record); the store has the XLA reads.
TEST(HookTransparency, XlaLeavesCpuTensorReadsInC) {
  const std::string py = tc::test::python_sample::python("TC_TEST_XLA_PYTHON", ".tc-test-venv-xla");
  TC_REQUIRE_PYTHON_PEER(py, "torch_xla", {}, "scripts/test.sh installs torch-xla 2.9 into .tc-test-venv-xla");
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  setenv("PJRT_DEVICE", "CPU", 1);
  expect_same({}, "xla", out, py);
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto n = r->scalar_i64("SELECT count(*) FROM explicit_evaluations WHERE kind = 'item'");
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 4);  // item(), bool(), float(), int() of the XLA tensor
  auto copies = r->scalar_i64("SELECT count(*) FROM explicit_evaluations WHERE kind = 'to_host'");
  ASSERT_TRUE(copies.ok()) << copies.status().message();
  EXPECT_EQ(*copies, 2);  // tolist() and cpu() of an XLA tensor (the CPU tensor's item() after it is no read)
}

// Two workers by fork() and the parent, 5 optimizer steps each: 15 steps, 5 per process.
TEST(HookTransparency, ForkedWorkersRecordTheirFirstStep) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  TempDir dir;
  UserSite site;
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", python(), kProgram, "fork"}, site.env);
  ASSERT_EQ(e.code, 0) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<int64_t, int64_t> per_process;
  for (auto q = r->query("SELECT t.upid, count(*) FROM steps s JOIN threads t ON t.utid = s.utid GROUP BY t.upid"); q.next();)
    per_process[q.i64(0)] = q.i64(1);
  ASSERT_EQ(per_process.size(), 3u) << e.out;
  for (const auto& [upid, n] : per_process) EXPECT_EQ(n, 5) << "process " << upid;
}

// A JAX program whose 5 jitted calls are followed by os._exit(0), or by SIGTERM: the calls are its steps.
TEST(HookTransparency, JaxRecordsSurviveOsExitAndSigterm) {
  TC_REQUIRE_PYTHON_PEER(python(), "jax", {}, kHow);
  for (const char* which : {"jaxexit", "jaxkill"}) {
    TempDir dir;
    UserSite site;
    const std::string out = dir.file("run.tcdb");
    Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", python(), kProgram, which}, site.env);
    ASSERT_EQ(e.code, std::string(which) == "jaxexit" ? 0 : 128 + 15) << which << ": " << e.err;
    Exit a = tc::test::run({bin("tc-analyze"), out, "--json"});
    ASSERT_EQ(a.code, 0) << a.err;
    JsonValue j = JsonParser(a.out).parse();
    EXPECT_EQ(j["summary"]["steps"].n, 5) << which << ": " << a.out;
    EXPECT_EQ(j["summary"]["step_source"].s, "jit_call") << which;
  }
}

// python -I, -E or -S: PYTHONPATH ignored or no site, so no hook; tc-profile says so (the program runs as it would).
TEST(HookTransparency, IsolatedPythonIsSaid) {
  TC_REQUIRE_PYTHON_PEER(python(), "torch", {}, kHow);
  UserSite site;
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"-I"}, {"-u", "-E"}, {"-X", "utf8", "-bS"}}) {
    TempDir dir;
    std::vector<std::string> argv = {bin("tc-profile"), "-o", dir.file("run.tcdb"), "--", python()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {kProgram, "state"});
    Exit e = tc::test::run(argv, site.env);
    ASSERT_EQ(e.code, 0) << e.err;
    const char flag = flags.back().back();
    const std::string said = std::string("tc-profile: python -") + flag + (flag == 'S' ? " skips site" : " ignores PYTHONPATH") +
                             ", so tc's Python hook does not load";
    EXPECT_NE(e.err.find(said), std::string::npos) << e.err;
    EXPECT_NE(e.err.find(std::string("drop -") + flag), std::string::npos) << e.err;
  }
  // Flags that keep the hook say nothing; neither does a -I that belongs to the program.
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"-u"}, {"-X", "utf8", "-W", "ignore"}}) {
    TempDir dir;
    std::vector<std::string> argv = {bin("tc-profile"), "-o", dir.file("run.tcdb"), "--", python()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {kProgram, "state", "-I"});
    Exit e = tc::test::run(argv, site.env);
    ASSERT_EQ(e.code, 0) << e.err;
    EXPECT_EQ(e.err.find("does not load"), std::string::npos) << e.err;
  }
}

}  // namespace
