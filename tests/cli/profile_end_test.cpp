// tc-profile's end of run (#27): a signal after the program ended, the run's
// end time, an exception while finishing, two runs writing the same output,
// and the exit statuses docs/cli.md gives. Coordinated through FIFOs and the
// processes' states in /proc, never by sleeping a fixed time.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/framework_logs.h"
#include "support/process.h"
#include "tc/store/reader.h"

using tc::test::bin;
using tc::test::Child;
using tc::test::TempDir;

namespace {

// The first column of the first row, as text ("" for NULL or no row); a
// store that does not open, or a query that fails, fails the test.
std::string text(const std::string& store, const std::string& sql) {
  auto r = tc::store::Reader::open(store);
  if (!r.ok()) {
    ADD_FAILURE() << store << ": " << r.status().message();
    return "";
  }
  auto q = r->query(sql);
  std::string value = q.next() && !q.is_null(0) ? std::string(q.text(0)) : std::string();
  EXPECT_TRUE(q.status().ok()) << sql << ": " << q.status().message();
  return value;
}

int64_t i64(const std::string& store, const std::string& sql) { return std::atoll(text(store, sql).c_str()); }

// The state letter of /proc/PID/stat ('S', 'T', 'Z', ...), 0 once it is reaped.
char state(pid_t pid) {
  std::string stat = tc::test::read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// A real torch.compile trace (4 compilations).
const std::string kFixture = std::string(TC_SOURCE_DIR) + "/tests/fixtures/frameworks/torch-2.15.0-dynamic-padding/trace.log";

// Polls until `done` holds (at most about a minute): no fixed sleep decides anything.
template <typename F>
bool poll_until(F done) {
  for (int i = 0; i < 60000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// Opens a FIFO for writing once its reader (the program) has opened it: the
// program has started, so tc-profile has passed its checks of the output.
int open_writer(const std::string& fifo) {
  int fd = -1;
  poll_until([&] { return (fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0 || errno != ENXIO; });
  return fd;
}

uint64_t monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::vector<std::string> temp_stores(const TempDir& dir) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".run.tcdb.tc-tmp-", 0) == 0) found.push_back(e.path().string());
  }
  return found;
}

// The signal's default disposition for a scope, in what this test starts
// (a shell's background job has SIGINT ignored, nohup SIGHUP).
class DefaultSignal {
 public:
  explicit DefaultSignal(int sig) : sig_(sig) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, &saved_);
  }
  ~DefaultSignal() { sigaction(sig_, &saved_, nullptr); }

 private:
  int sig_;
  struct sigaction saved_ {};
};

// ---------------------------------------------------------------- a signal after the program ended

// SIGTERM, SIGINT or SIGHUP once the program has exited used to be forwarded
// to it (gone) and ignored: only SIGKILL ended the import, and lost the store.
// Now it stops the import, the store is written marked incomplete, one line
// says so, and tc-profile ends by the signal. Deterministic: tc-profile is
// stopped (SIGSTOP) while the program exits, so it is a zombie nobody has
// reaped when the signal comes; SIGCONT lets tc-profile go on.
class ProfileSignalAfterTheProgram : public ::testing::TestWithParam<int> {};

TEST_P(ProfileSignalAfterTheProgram, StopsTheImportKeepsTheStoreAndEndsByTheSignal) {
  const int sig = GetParam();
  DefaultSignal dfl(sig);
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), fifo = dir.file("go");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Child child({bin("tc-profile"), "-q", "-o", out, "--", "/bin/sh", "-c",
               tc::test::torch_fixture_in_the_run(kFixture) + " > \"$TORCH_TRACE/dedicated_log_torch_trace_x.log\"; echo $$ \"$TORCH_TRACE\"; read x < '" + fifo +
                   "'; exit 0"},
              {{"TORCH_TRACE", ""}});
  const std::string line = child.read_line();
  const pid_t program = static_cast<pid_t>(std::atol(line.c_str()));
  const std::string trace_dir = line.substr(line.find(' ') + 1, line.size() - line.find(' ') - 2);
  ASSERT_GT(program, 0) << line;
  ASSERT_EQ(kill(child.pid(), SIGSTOP), 0);
  ASSERT_TRUE(poll_until([&] { return state(child.pid()) == 'T'; }));
  const int w = open_writer(fifo);
  ASSERT_GE(w, 0) << std::strerror(errno);
  close(w);  // the program reads its end of file and exits 0
  ASSERT_TRUE(poll_until([&] { return state(program) == 'Z'; })) << "state " << state(program);
  ASSERT_EQ(kill(child.pid(), sig), 0);
  ASSERT_EQ(kill(child.pid(), SIGCONT), 0);
  tc::test::Exit e = child.wait(std::chrono::seconds(120));
  ASSERT_FALSE(e.timed_out) << e.err;
  EXPECT_EQ(e.signal, sig) << "exit " << e.code << ": " << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("after the program ended"), std::string::npos) << e.err;
  // The store: the program's exit, marked incomplete, the import's note.
  EXPECT_EQ(i64(out, "SELECT complete FROM run"), 0);
  EXPECT_EQ(i64(out, "SELECT exit_code FROM run"), 0);
  EXPECT_EQ(i64(out, "SELECT count(*) FROM dropped WHERE reason LIKE 'tc-profile was signalled%'"), 1);
  EXPECT_NE(text(out, "SELECT note FROM framework_imports").find("stopped by a signal"), std::string::npos);
  EXPECT_LT(i64(out, "SELECT count(*) FROM compilations"), 4) << "the import ran to its end";
  // Nothing left behind.
  EXPECT_FALSE(std::filesystem::exists(trace_dir)) << trace_dir;
  EXPECT_TRUE(temp_stores(dir).empty());
}

INSTANTIATE_TEST_SUITE_P(Signals, ProfileSignalAfterTheProgram, ::testing::Values(SIGTERM, SIGINT, SIGHUP), [](const auto& info) {
  return std::string(info.param == SIGTERM ? "TERM" : info.param == SIGINT ? "INT" : "HUP");
});

// Without frameworks' logs to import, such a signal still ends tc-profile by
// it, after a complete store.
TEST(ProfileEnd, ASignalAfterTheProgramWithNothingToImportLeavesACompleteStore) {
  DefaultSignal dfl(SIGTERM);
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), fifo = dir.file("go");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Child child({bin("tc-profile"), "-q", "--no-framework-logs", "-o", out, "--", "/bin/sh", "-c", "echo $$; read x < '" + fifo + "'; exit 0"});
  const pid_t program = static_cast<pid_t>(std::atol(child.read_line().c_str()));
  ASSERT_GT(program, 0);
  ASSERT_EQ(kill(child.pid(), SIGSTOP), 0);
  ASSERT_TRUE(poll_until([&] { return state(child.pid()) == 'T'; }));
  const int w = open_writer(fifo);
  ASSERT_GE(w, 0);
  close(w);
  ASSERT_TRUE(poll_until([&] { return state(program) == 'Z'; }));
  ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
  ASSERT_EQ(kill(child.pid(), SIGCONT), 0);
  tc::test::Exit e = child.wait(std::chrono::seconds(120));
  EXPECT_EQ(e.signal, SIGTERM) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("the store is written"), std::string::npos) << e.err;
  EXPECT_EQ(i64(out, "SELECT complete FROM run"), 1);
  EXPECT_TRUE(temp_stores(dir).empty());
}

// ---------------------------------------------------------------- the run's end time

// The run's end was read after the imports: a 1 s program was reported as
// 35.9 s of wall time. It is now read when tc-profile finds the program
// gone, so it is no later than the moment this test sees the program reaped
// (gone from /proc), while the import of an 18 MB trace still lies ahead.
TEST(ProfileEnd, TheRunEndsWhenTheProgramDoesNotAfterTheImport) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), one = dir.file("one.log");
  // 300 copies of the fixture, its times moved into the run (the importers refuse others).
  Child child({bin("tc-profile"), "-q", "-o", out, "--", "/bin/sh", "-c",
               tc::test::torch_fixture_in_the_run(kFixture) + " > '" + one + "'; i=0; while [ $i -lt 300 ]; do cat '" + one +
                   "'; i=$((i + 1)); done > \"$TORCH_TRACE/dedicated_log_torch_trace_x.log\"; echo $$"},
              {{"TORCH_TRACE", ""}});
  const pid_t program = static_cast<pid_t>(std::atol(child.read_line().c_str()));
  ASSERT_GT(program, 0);
  ASSERT_TRUE(poll_until([&] { return state(program) == 0; }));
  const uint64_t seen_gone = monotonic_now();
  tc::test::Exit e = child.wait(std::chrono::seconds(120));
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_GT(i64(out, "SELECT count(*) FROM compilations"), 4) << "the trace was imported";
  const int64_t end = i64(out, "SELECT end_ts FROM run"), start = i64(out, "SELECT start_ts FROM run");
  EXPECT_LE(start, end);
  EXPECT_LE(end, static_cast<int64_t>(seen_gone)) << "the run ended " << (end - static_cast<int64_t>(seen_gone)) / 1000
                                                  << " us after the program was reaped: after the import";
}

// ---------------------------------------------------------------- an exception while finishing

// A 250 MiB line under a 200 MB address space limit: std::bad_alloc (a real
// one, reading the log). tc-profile used to die of std::terminate (exit 134)
// with no store, its temporary store and its private directory (with the
// 250 MB log) left behind. Now the store is written, marked incomplete with
// the reason, nothing is left behind, and the exit status is the program's.
TEST(ProfileEnd, OutOfMemoryWhileImportingKeepsTheStoreAndLeavesNothingBehind) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves its shadow memory: no address space limit fits it";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "ASan reserves its shadow memory: no address space limit fits it";
#endif
#endif
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string program =
      "echo \"$TORCH_TRACE\"; { printf 'V1201 18:29:54.463000 7640 torch/_dynamo/utils.py:2473] {\"str\": \"'; "
      "head -c 262144000 /dev/zero | tr '\\0' a; printf '\"}\\n'; } > \"$TORCH_TRACE/dedicated_log_torch_trace_x.log\"";
  tc::test::Exit e = tc::test::run({"/bin/sh", "-c", "ulimit -v 200000 && exec \"$0\" \"$@\"", bin("tc-profile"), "-q", "--rings", "1", "--ring-slots", "64",
                          "-o", out, "--", "/bin/sh", "-c", program},
                         {{"TORCH_TRACE", ""}});
  EXPECT_EQ(e.signal, 0);
  EXPECT_EQ(e.code, 0) << e.err;
  const std::string trace_dir = e.out.substr(0, e.out.find('\n'));
  ASSERT_FALSE(trace_dir.empty());
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(trace_dir).parent_path())) << trace_dir << " was left behind";
  EXPECT_TRUE(temp_stores(dir).empty());
  ASSERT_TRUE(std::filesystem::exists(out)) << e.err;
  // Where the import fits (a bounded importer), the store is complete and nothing is said.
  const bool cut = e.err.find("out of memory") != std::string::npos;
  EXPECT_EQ(tc::test::count_lines(e.err), cut ? 1 : 0) << e.err;
  EXPECT_EQ(i64(out, "SELECT complete FROM run"), cut ? 0 : 1);
  if (cut) {
    EXPECT_EQ(i64(out, "SELECT count(*) FROM dropped WHERE reason LIKE 'out of memory%'"), 1);
  }
}

// ---------------------------------------------------------------- two runs, one output

// Two runs with the same -o and no --force, both started before either
// ended: the second used to replace the first's store, and both said
// "wrote". Now the second fails in one line (exit 1: its program exited 0)
// and its store stays beside the first, named in the line.
TEST(ProfileEnd, ASecondRunWithTheSameOutputKeepsItsStoreBesideTheFirst) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), fifo_a = dir.file("a"), fifo_b = dir.file("b");
  ASSERT_EQ(mkfifo(fifo_a.c_str(), 0600), 0);
  ASSERT_EQ(mkfifo(fifo_b.c_str(), 0600), 0);
  auto run_until = [&](const std::string& fifo) {
    return std::vector<std::string>{bin("tc-profile"), "-q", "-o", out, "--", "/bin/sh", "-c", "read x < '" + fifo + "'; exit 0"};
  };
  Child a(run_until(fifo_a));
  Child b(run_until(fifo_b));
  const int wa = open_writer(fifo_a), wb = open_writer(fifo_b);  // both programs run: both checks passed
  ASSERT_GE(wa, 0);
  ASSERT_GE(wb, 0);
  close(wa);
  tc::test::Exit ea = a.wait(std::chrono::seconds(120));
  EXPECT_EQ(ea.code, 0) << ea.err;
  EXPECT_EQ(ea.err, "");
  close(wb);
  tc::test::Exit eb = b.wait(std::chrono::seconds(120));
  EXPECT_EQ(eb.code, 1) << eb.err;
  EXPECT_EQ(tc::test::count_lines(eb.err), 1) << eb.err;
  EXPECT_NE(eb.err.find("not replaced without --force"), std::string::npos) << eb.err;
  EXPECT_NE(text(out, "SELECT command FROM run").find(fifo_a), std::string::npos) << "the first run's store was replaced";
  std::vector<std::string> kept = temp_stores(dir);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_NE(eb.err.find(kept[0]), std::string::npos) << eb.err;
  EXPECT_NE(text(kept[0], "SELECT command FROM run").find(fifo_b), std::string::npos);
  EXPECT_EQ(i64(kept[0], "SELECT complete FROM run"), 1);
}

// With --force the later run replaces the output, as the option says.
TEST(ProfileEnd, WithForceTheLaterRunReplacesTheOutput) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), fifo = dir.file("a");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Child a({bin("tc-profile"), "-q", "--force", "-o", out, "--", "/bin/sh", "-c", "read x < '" + fifo + "'; exit 0"});
  const int w = open_writer(fifo);
  ASSERT_GE(w, 0);
  ASSERT_EQ(tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", "true"}).code, 0);
  close(w);
  tc::test::Exit e = a.wait(std::chrono::seconds(120));
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_NE(text(out, "SELECT command FROM run").find(fifo), std::string::npos);
  EXPECT_TRUE(temp_stores(dir).empty());
}

// ---------------------------------------------------------------- exit statuses (docs/cli.md)

TEST(ProfileEnd, ExitStatusesAreTheDocumentedOnes) {
  TempDir dir;
  // 126: the program cannot be executed.
  const std::string not_exec = dir.file("not-executable");
  std::ofstream(not_exec) << "#!/bin/sh\n";
  tc::test::Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", dir.file("a.tcdb"), "--", not_exec});
  EXPECT_EQ(e.code, 126) << e.err;
  // 127: it does not exist.
  e = tc::test::run({bin("tc-profile"), "-q", "-o", dir.file("b.tcdb"), "--", dir.file("missing")});
  EXPECT_EQ(e.code, 127) << e.err;
  // 128+N: it died of signal N.
  e = tc::test::run({bin("tc-profile"), "-q", "-o", dir.file("c.tcdb"), "--", "/bin/sh", "-c", "kill -USR1 $$"});
  EXPECT_EQ(e.code, 128 + SIGUSR1) << e.err;
  // Its own status.
  e = tc::test::run({bin("tc-profile"), "-q", "-o", dir.file("d.tcdb"), "--", "/bin/sh", "-c", "exit 42"});
  EXPECT_EQ(e.code, 42) << e.err;
  // 2: bad usage, and an output that cannot be written; one line each.
  e = tc::test::run({bin("tc-profile"), "--rings", "0", "--", "true"});
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  e = tc::test::run({bin("tc-profile"), "-q", "-o", dir.file("d.tcdb"), "--", "true"});
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  // --help: 0.
  EXPECT_EQ(tc::test::run({bin("tc-profile"), "--help"}).code, 0);
  for (const char* f : {"a.tcdb", "b.tcdb"}) EXPECT_TRUE(std::filesystem::exists(dir.file(f))) << f << ": a run that could not start still has its store";
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tc-tmp-"), std::string::npos) << entry.path();
  }
}

}  // namespace

// ---------------------------------------------------------------- a killed tc-profile's private directory

// kill -9 of tc-profile leaves its private directory of the frameworks' logs
// (nothing can remove it then); the next tc-profile removes those of
// tc-profiles that ended, keeps those of live ones, and removes a link in
// them, never what it names.
TEST(ProfileEnd, TheNextRunRemovesThePrivateDirectoryOfAKilledOne) {
  TempDir dir;
  const std::string outside = dir.file("outside.txt");
  std::ofstream(outside) << "keep me";
  const pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(dead, &status, 0), dead);
  const std::string gone = dir.file("tc-profile-" + std::to_string(dead) + "-abcdef");
  const std::string live = dir.file("tc-profile-" + std::to_string(getpid()) + "-ghijkl");
  for (const std::string& d : {gone, live}) {
    std::filesystem::create_directories(d + "/torch_trace");
    std::ofstream(d + "/torch_trace/x.log") << "log\n";
    std::filesystem::create_symlink(outside, d + "/link");
  }
  tc::test::Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", dir.file("run.tcdb"), "--", "/bin/true"}, {{"TMPDIR", dir.path().string()}});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_FALSE(std::filesystem::exists(gone)) << "the directory of an ended tc-profile stays";
  EXPECT_TRUE(std::filesystem::exists(live + "/torch_trace/x.log")) << "a live tc-profile's directory was removed";
  EXPECT_EQ(tc::test::read_file(outside), "keep me");
  // And the run's own is gone too.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("tc-profile-", 0) == 0) {
      EXPECT_EQ(entry.path().string(), live) << name;
    }
  }
}
