// tc-profile's set-up for frameworks (docs/frameworks.md), without torch:
// the private TORCH_TRACE directory (imported at the end, then removed), the
// user's own TORCH_TRACE (used, kept, older logs skipped), --no-framework-logs,
// and the Python start-up hook (it chains to the sitecustomize it hides and
// imports nothing).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/framework_logs.h"
#include "support/process.h"
#include "tc/store/reader.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

const std::string kFixture = std::string(TC_SOURCE_DIR) + "/tests/fixtures/frameworks/torch-2.15.0-dynamic-padding/trace.log";

int64_t scalar(const std::string& store, const std::string& sql) {
  auto r = tc::store::Reader::open(store);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return -1;
  auto v = r->scalar_i64(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
  return v.ok() ? *v : -1;
}

// A "program" that writes a real torch trace where TORCH_TRACE says, and prints that place.
std::vector<std::string> writer_of_a_trace() {
  return {"/bin/sh", "-c", "echo \"$TORCH_TRACE\"; [ -n \"$TORCH_TRACE\" ] && " + tc::test::torch_fixture_in_the_run(kFixture) +
                               " > \"$TORCH_TRACE/dedicated_log_torch_trace_x.log\"; true"};
}

TEST(ProfileFrameworks, APrivateTorchTraceIsImportedThenRemoved) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  std::vector<std::string> argv = {bin("tc-profile"), "-q", "-o", out, "--"};
  for (const std::string& a : writer_of_a_trace()) argv.push_back(a);
  Exit e = tc::test::run(argv, {{"TORCH_TRACE", ""}});
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string trace_dir = e.out.substr(0, e.out.find('\n'));
  ASSERT_FALSE(trace_dir.empty());
  EXPECT_FALSE(std::filesystem::exists(trace_dir)) << trace_dir << " was left behind";
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(trace_dir).parent_path()));
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM compilations WHERE framework = 'torch.compile'"), 4);
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM explicit_evaluations WHERE framework = 'torch.compile'"), 3);
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM compilation_inputs WHERE input = 'token_ids' AND dynamic = 1"), 2);
}

TEST(ProfileFrameworks, TheUsersTorchTraceIsUsedAndKeptAndItsOlderLogsSkipped) {
  TempDir dir;
  const std::string mine = dir.file("mine");
  std::filesystem::create_directories(mine);
  // A log of an earlier run, written an hour ago.
  std::filesystem::copy_file(kFixture, mine + "/dedicated_log_torch_trace_old.log");
  struct utimbuf old{::time(nullptr) - 3600, ::time(nullptr) - 3600};
  ASSERT_EQ(::utime((mine + "/dedicated_log_torch_trace_old.log").c_str(), &old), 0);
  const std::string out = dir.file("run.tcdb");
  std::vector<std::string> argv = {bin("tc-profile"), "-q", "-o", out, "--"};
  for (const std::string& a : writer_of_a_trace()) argv.push_back(a);
  Exit e = tc::test::run(argv, {{"TORCH_TRACE", mine}});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, mine + "\n");
  EXPECT_EQ(e.err, "");
  EXPECT_TRUE(std::filesystem::exists(mine + "/dedicated_log_torch_trace_x.log"));
  EXPECT_TRUE(std::filesystem::exists(mine + "/dedicated_log_torch_trace_old.log"));
  // This run's log only: 4 compilations, not 8.
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM compilations WHERE framework = 'torch.compile'"), 4);
  EXPECT_EQ(scalar(out, "SELECT files FROM framework_imports"), 1);
}

TEST(ProfileFrameworks, NoFrameworkLogsLeavesTorchTraceUnset) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  std::vector<std::string> argv = {bin("tc-profile"), "-q", "--no-framework-logs", "-o", out, "--"};
  for (const std::string& a : writer_of_a_trace()) argv.push_back(a);
  Exit e = tc::test::run(argv, {{"TORCH_TRACE", ""}});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "\n");
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM framework_imports"), 0);
}

// The JAX log the Python hook writes: where TC_JAX_LOG_DIR says (a private
// directory), imported at the end of the run, then removed with it.
TEST(ProfileFrameworks, APrivateJaxLogIsImportedThenRemoved) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string log = std::string(TC_SOURCE_DIR) + "/tests/fixtures/frameworks/jax-0.10.2-dynamic-padding/jax-14922.log";
  // Its records end at 32934481083431 ns (CLOCK_MONOTONIC).
  const std::string now = "python3 -c \"import time; print(time.monotonic_ns())\"";
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", "/bin/sh", "-c",
                          "echo \"$TC_JAX_LOG_DIR\"; [ -n \"$TC_JAX_LOG_DIR\" ] && " +
                              tc::test::moved_into_the_run(log, "ts|end", now, "32934531083431", "5.7") + " > \"$TC_JAX_LOG_DIR/jax-14922.log\"; true"});
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string jax_dir = e.out.substr(0, e.out.find('\n'));
  ASSERT_FALSE(jax_dir.empty());
  EXPECT_FALSE(std::filesystem::exists(jax_dir)) << jax_dir << " was left behind";
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM compilations WHERE framework = 'jax' AND trigger = 'jit_call'"), 10);
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM steps WHERE framework = 'jax'"), 11);
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM explicit_evaluations WHERE framework = 'jax'"), 11);
  // --no-python-hooks: no hook, so no JAX log.
  Exit off = tc::test::run({bin("tc-profile"), "-q", "-f", "--no-python-hooks", "-o", out, "--", "/bin/sh", "-c", "echo \"[$TC_JAX_LOG_DIR]\""},
                           {{"TC_JAX_LOG_DIR", "/nowhere"}});
  ASSERT_EQ(off.code, 0) << off.err;
  EXPECT_EQ(off.out, "[]\n");
}

// The launcher's last line says what the store holds besides tc's own events
// (a JAX run has none of those: "0 events" read like a failed recording), and
// tc-analyze kernels says why there are no kernel timings (not "schema v2").
TEST(ProfileFrameworks, TheLastLineSaysWhatWasImported) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string log = std::string(TC_SOURCE_DIR) + "/tests/fixtures/frameworks/jax-0.10.2-dynamic-padding/jax-14922.log";
  const std::string now = "python3 -c \"import time; print(time.monotonic_ns())\"";
  Exit e = tc::test::run({bin("tc-profile"), "-o", out, "--", "/bin/sh", "-c",
                          "[ -n \"$TC_JAX_LOG_DIR\" ] && " + tc::test::moved_into_the_run(log, "ts|end", now, "32934531083431", "5.7") +
                              " > \"$TC_JAX_LOG_DIR/jax-14922.log\"; true"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.err.find(" tc events from "), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("; 11 steps; imported from jax: 13 compilations, 11 explicit evaluations\n"), std::string::npos) << e.err;
  Exit k = tc::test::run({bin("tc-analyze"), "kernels", out});
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_EQ(k.out.find("schema v2"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("no kernel timings in this store: the run compiled with jax"), std::string::npos) << k.out;
}

// The hook runs the user's own sitecustomize, which is then the module `import sitecustomize` returns, as
// without the hook (#27), and imports nothing (torch least of all).
TEST(ProfileFrameworks, ThePythonHookChainsToTheUsersSitecustomizeAndImportsNothing) {
  if (tc::test::run({"python3", "-c", "pass"}).code != 0) GTEST_SKIP() << "no python3";
  TempDir dir;
  std::filesystem::create_directories(dir.file("site"));
  std::ofstream(dir.file("site/sitecustomize.py")) << "print('user sitecustomize ran')\n";
  const std::string script = "import sys; print(sorted(m for m in ('torch', 'numpy', 'jax') if m in sys.modules)); "
                             "print(sys.modules['sitecustomize'].__file__.endswith('site/sitecustomize.py'))";
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", "python3", "-c", script}, {{"PYTHONPATH", dir.file("site")}});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "user sitecustomize ran\n[]\nTrue\n");  // the user's module
  // --no-python-hooks: the user's alone.
  Exit off = tc::test::run({bin("tc-profile"), "-q", "-f", "--no-python-hooks", "-o", out, "--", "python3", "-c", script},
                           {{"PYTHONPATH", dir.file("site")}});
  ASSERT_EQ(off.code, 0) << off.err;
  EXPECT_EQ(off.out, "user sitecustomize ran\n[]\nTrue\n");
}

}  // namespace
