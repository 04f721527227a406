// End-to-end: tc-profile (and TC_PROFILE=) around tc-test-recorder, then the
// store is read back and compared with exactly what the program recorded.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <map>
#include <set>

#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Child;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

// With recording compiled out the program records nothing, and the store
// must say so (zero events) while everything else still holds.
constexpr bool kRecords = tc::trace::kCompiledIn;

struct RunRow {
  bool complete;
  bool has_code, has_signal;
  int64_t exit_code, exit_signal, event_count, dropped;
  std::string collector;
};

RunRow read_run(const tc::store::Reader& r) {
  auto q = r.query("SELECT complete, exit_code, exit_signal, event_count, dropped_count, collector FROM run WHERE id = 1");
  EXPECT_TRUE(q.next()) << q.status().message();
  RunRow row{};
  row.complete = q.i64(0) != 0;
  row.has_code = !q.is_null(1);
  row.exit_code = row.has_code ? q.i64(1) : -1;
  row.has_signal = !q.is_null(2);
  row.exit_signal = row.has_signal ? q.i64(2) : 0;
  row.event_count = q.i64(3);
  row.dropped = q.i64(4);
  row.collector = std::string(q.text(5));
  return row;
}

// Checks the store holds exactly events 0..n_t-1 of each of `threads` threads
// (the recorder's split of `events`), named right, in per-thread time order.
void expect_exact_events(const std::string& path, long events, int threads) {
  auto reader = tc::store::Reader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const tc::store::Reader& r = *reader;
  long expected = kRecords ? events : 0;
  auto total = r.scalar_i64("SELECT (SELECT count(*) FROM ranges) + (SELECT count(*) FROM instants) + (SELECT count(*) FROM counters)");
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, expected);
  EXPECT_EQ(read_run(r).event_count, expected);
  EXPECT_EQ(read_run(r).dropped, 0);
  if (!kRecords) return;

  // tag = t << 32 | i; kind follows i % 3; names from the recording sites.
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> by_thread;  // recorder thread -> (i, ts)
  std::map<int64_t, std::string> thread_names;
  auto q = r.query(
      "SELECT e.tag, e.ts, e.kind, l.name, t.name FROM ("
      " SELECT arg AS tag, ts, 0 AS kind, loc_id, utid FROM ranges WHERE dur >= 0"
      " UNION ALL SELECT arg, ts, 1, loc_id, utid FROM instants"
      " UNION ALL SELECT CAST(value AS INTEGER), ts, 2, loc_id, utid FROM counters) e"
      " JOIN locations l ON l.id = e.loc_id JOIN threads t ON t.utid = e.utid");
  const char* names[] = {"test.range", "test.instant", "test.counter"};
  while (q.next()) {
    int64_t tag = q.i64(0), t = tag >> 32, i = tag & 0xffffffff;
    ASSERT_EQ(q.i64(2), i % 3) << "event " << i << " of thread " << t << " stored as the wrong kind";
    ASSERT_EQ(q.text(3), names[i % 3]);
    by_thread[t].emplace_back(i, q.i64(1));
    thread_names[t] = std::string(q.text(4));
  }
  ASSERT_TRUE(q.status().ok()) << q.status().message();
  ASSERT_EQ(static_cast<int>(by_thread.size()), std::min<long>(threads, events));
  for (auto& [t, evs] : by_thread) {
    long n = events / threads + (t < events % threads ? 1 : 0);
    std::sort(evs.begin(), evs.end());
    ASSERT_EQ(static_cast<long>(evs.size()), n) << "thread " << t;
    for (long i = 0; i < n; ++i) {
      ASSERT_EQ(evs[static_cast<size_t>(i)].first, i) << "thread " << t << " is missing an event";
      if (i > 0) {
        ASSERT_LE(evs[static_cast<size_t>(i - 1)].second, evs[static_cast<size_t>(i)].second) << "thread " << t << " event " << i;
      }
    }
    EXPECT_EQ(thread_names[t], "recorder-" + std::to_string(t));
  }
}

std::vector<std::string> recorder(long events, int threads, const std::string& end) {
  return {bin("tc-test-recorder"), "--events", std::to_string(events), "--threads", std::to_string(threads), "--end", end};
}

std::vector<std::string> profiled(const std::string& out, std::vector<std::string> program) {
  std::vector<std::string> argv = {bin("tc-profile"), "-o", out, "--"};
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

TEST(Profile, RoundTripUnderTcProfile) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run(profiled(out, recorder(60000, 4, "exit")));
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.err.find("wrote " + out), std::string::npos) << e.err;
  expect_exact_events(out, 60000, 4);
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok());
  RunRow run = read_run(*r);
  EXPECT_TRUE(run.complete);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_FALSE(run.has_signal);
  EXPECT_EQ(run.collector, "tc-profile");
}

TEST(Profile, RoundTripInProcess) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run(recorder(30000, 3, "exit"), {{"TC_PROFILE", out}});
  ASSERT_EQ(e.code, 0) << e.err;
  expect_exact_events(out, 30000, 3);
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok());
  RunRow run = read_run(*r);
  EXPECT_TRUE(run.complete);
  EXPECT_EQ(run.collector, "in-process");
}

TEST(Profile, ManyMoreEventsThanRingSlotsLoseNothing) {
  // 64-slot rings force the producers to wait for the collector over and over.
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  std::vector<std::string> argv = {bin("tc-profile"), "--ring-slots", "64", "-o", out, "--"};
  for (auto& a : recorder(20000, 2, "exit")) argv.push_back(a);
  Exit e = tc::test::run(argv);
  ASSERT_EQ(e.code, 0) << e.err;
  expect_exact_events(out, 20000, 2);
}

struct CrashCase {
  const char* name;
  const char* end;
  int signal;
};

class ProfileCrash : public ::testing::TestWithParam<CrashCase> {};

TEST_P(ProfileCrash, StoreOpensMarkedIncompleteWithEveryEvent) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  const CrashCase& c = GetParam();
  // Under AddressSanitizer a segfault would become exit(1): let it be a signal.
  Child child(profiled(out, recorder(9000, 3, c.end)), {{"ASAN_OPTIONS", "handle_segv=0:handle_abort=0"}});
  std::string line = child.read_line();
  ASSERT_EQ(line.rfind("recorded 9000 pid ", 0), 0u) << line;
  if (c.signal == SIGKILL) {
    pid_t program = static_cast<pid_t>(std::stol(line.substr(line.find("pid ") + 4)));
    ASSERT_EQ(kill(program, SIGKILL), 0);
  }
  Exit e = child.wait();
  EXPECT_EQ(e.code, 128 + c.signal) << e.err;
  EXPECT_NE(e.err.find("incomplete"), std::string::npos) << e.err;
  expect_exact_events(out, 9000, 3);
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok());
  RunRow run = read_run(*r);
  EXPECT_FALSE(run.complete);
  EXPECT_TRUE(run.has_signal);
  EXPECT_EQ(run.exit_signal, c.signal);
  EXPECT_FALSE(run.has_code);
}

INSTANTIATE_TEST_SUITE_P(Ends, ProfileCrash,
                         ::testing::Values(CrashCase{"abort", "abort", SIGABRT}, CrashCase{"segv", "segv", SIGSEGV},
                                           CrashCase{"kill", "wait", SIGKILL}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Profile, SigintIsForwardedAndTheStoreIsComplete) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Child child(profiled(out, recorder(3000, 1, "wait")));
  std::string line = child.read_line();
  ASSERT_EQ(line.rfind("recorded 3000", 0), 0u) << line;
  ASSERT_EQ(kill(child.pid(), SIGINT), 0);
  Exit e = child.wait();
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("stopped by signal"), std::string::npos) << "the program did not receive SIGINT: " << e.out;
  expect_exact_events(out, 3000, 1);
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(read_run(*r).complete);
}

TEST(Profile, ExitStatusIsTheProgramsOwn) {
  TempDir dir;
  Exit e = tc::test::run(profiled(dir.file("a.tcdb"), {"sh", "-c", "exit 3"}));
  EXPECT_EQ(e.code, 3) << e.err;
  auto r = tc::store::Reader::open(dir.file("a.tcdb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  RunRow run = read_run(*r);
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_TRUE(run.complete);
}

// A program that records nothing (and knows nothing of tc): a complete store,
// one file out of WAL mode, nothing left beside it, and the run row says what
// the CUDA probe found; on a machine without an NVIDIA driver that it loaded
// nothing.
TEST(Profile, AProgramThatRecordsNothingGetsAFinishedStore) {
  TempDir dir;
  const std::string out = dir.file("true.tcdb");
  Exit e = tc::test::run(profiled(out, {"/bin/true"}));
  ASSERT_EQ(e.code, 0) << e.err;
  for (const char* side : {"-wal", "-shm", "-journal", "-reserve"}) EXPECT_FALSE(std::filesystem::exists(out + side)) << side;
  std::ifstream in(out, std::ios::binary);
  char header[20] = {};
  in.read(header, sizeof header);
  EXPECT_EQ(header[18], 1) << "the store is still in WAL mode";
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  RunRow run = read_run(*r);
  EXPECT_TRUE(run.complete);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.event_count, 0);
  auto q = r->query("SELECT cuda FROM run");
  ASSERT_TRUE(q.next()) << q.status().message();
  const std::string cuda(q.text(0));
  struct stat st{};
  bool driver = false;
  for (const char* node : {"/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg"}) driver = driver || ::stat(node, &st) == 0;
  if (cuda != "built without CUDA" && !driver) {
    EXPECT_EQ(cuda, "no device: no NVIDIA driver (none of /proc/driver/nvidia/version, /dev/nvidiactl, /dev/dxg)");
  }
  EXPECT_FALSE(cuda.empty());
}

TEST(Profile, MissingProgramExits127WithAOneLineReason) {
  TempDir dir;
  Exit e = tc::test::run(profiled(dir.file("a.tcdb"), {dir.file("no-such-program")}));
  EXPECT_EQ(e.code, 127);
  EXPECT_NE(e.err.find("could not start"), std::string::npos) << e.err;
}

TEST(Profile, RefusesAnExistingOutputBeforeTheProgramStarts) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  { std::ofstream(out) << "precious"; }
  std::string marker = dir.file("started");
  Exit e = tc::test::run(profiled(out, {"touch", marker}));
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("--force"), std::string::npos) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the program ran although the output was refused";
  EXPECT_EQ(tc::test::read_file(out), "precious");

  std::vector<std::string> forced = {bin("tc-profile"), "--force", "-o", out, "--", "touch", marker};
  Exit f = tc::test::run(forced);
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(std::filesystem::exists(marker));
  EXPECT_TRUE(tc::store::Reader::open(out).ok());
}

TEST(Profile, RefusesAnUnwritableOutputBeforeTheProgramStarts) {
  TempDir dir;
  std::string marker = dir.file("started");
  std::string not_a_dir = dir.file("plain-file");
  { std::ofstream(not_a_dir) << "x"; }
  // Root ignores permission bits, so use places nobody can create a file in.
  for (const std::string& out : {dir.file("missing-dir/run.tcdb"), not_a_dir + "/run.tcdb", std::string("/proc/run.tcdb")}) {
    Exit e = tc::test::run(profiled(out, {"touch", marker}));
    EXPECT_EQ(e.code, 2) << out << ": " << e.err;
    EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << out;
  }
}

// ---------------------------------------------------------------- hardening (#12)

// Files in dir whose names start with prefix (the store's temporary name).
std::vector<std::string> files_starting(const TempDir& dir, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) found.push_back(e.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Lowers this process's file size limit (inherited by what it starts) for a scope.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit lower = saved_;
    lower.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &lower) == 0;
  }
  ~FileSizeLimit() { setrlimit(RLIMIT_FSIZE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

// Whether pid has ended (gone, or a zombie nobody reaps).
bool ended(pid_t pid) {
  std::string stat = tc::test::read_file("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && (stat[paren + 2] == 'Z' || stat[paren + 2] == 'X');
}

// Waits for tc-profile to end, then for its output. A program tc-profile
// left behind (it died instead of forwarding) would hold the output pipe open
// forever: it is killed, and *orphaned says so.
Exit wait_launcher(Child& child, pid_t program, bool* orphaned) {
  for (int i = 0; i < 600 && !ended(child.pid()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  *orphaned = false;
  for (int i = 0; i < 40 && !ended(program); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!ended(program)) {
    *orphaned = true;
    kill(program, SIGKILL);
  }
  return child.wait();
}

pid_t program_pid(const std::string& recorded_line) {
  return static_cast<pid_t>(std::stol(recorded_line.substr(recorded_line.find("pid ") + 4)));
}

// Device nodes of the test's own (a copy of /dev/null and /dev/full where the
// test may create them): if this ever regresses, it replaces those copies, not
// the machine's /dev/null.
TEST(Profile, RefusesDeviceNodesFifosAndDirectoriesEvenWithForce) {
  TempDir dir;
  std::string marker = dir.file("started");
  std::string fifo = dir.file("fifo.tcdb"), link = dir.file("link.tcdb"), subdir = dir.file("dir.tcdb");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  std::filesystem::create_directory(subdir);
  std::vector<std::string> outputs = {fifo, subdir};
  std::string null_copy = dir.file("null.tcdb"), full_copy = dir.file("full.tcdb");
  if (mknod(null_copy.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0 && mknod(full_copy.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0) {
    outputs.push_back(null_copy);
    outputs.push_back(full_copy);
    std::filesystem::create_symlink(null_copy, link);
  } else {
    std::filesystem::create_symlink(fifo, link);  // not allowed to make device nodes here: FIFOs stand in
  }
  outputs.push_back(link);
  for (const std::string& out : outputs) {
    struct stat before{};
    ASSERT_EQ(stat(out.c_str(), &before), 0) << out;
    for (bool force : {false, true}) {
      std::vector<std::string> argv = {bin("tc-profile"), "-o", out, "--", "touch", marker};
      if (force) argv.insert(argv.begin() + 1, "--force");
      Exit e = tc::test::run(argv);
      EXPECT_EQ(e.code, 2) << out << ": " << e.err;
      EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
      EXPECT_NE(e.err.find("regular file"), std::string::npos) << e.err;
      EXPECT_FALSE(std::filesystem::exists(marker)) << "the program ran although " << out << " was refused";
      struct stat after{};
      ASSERT_EQ(stat(out.c_str(), &after), 0) << out << " is gone";
      EXPECT_EQ(after.st_mode, before.st_mode) << out << " was replaced";
      EXPECT_EQ(after.st_rdev, before.st_rdev) << out;
    }
  }
  EXPECT_TRUE(std::filesystem::is_symlink(link));
}

TEST(Profile, RefusesAnEmptyOutputAndTheProgramItself) {
  TempDir dir;
  std::string marker = dir.file("started");
  Exit e = tc::test::run({bin("tc-profile"), "-o", "", "--", "touch", marker});
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("empty"), std::string::npos) << e.err;
  EXPECT_EQ(e.err.find("WAL"), std::string::npos) << e.err;
  EXPECT_FALSE(std::filesystem::exists(marker));

  std::string program = dir.file("prog.sh");
  { std::ofstream(program) << "#!/bin/sh\ntouch " << marker << "\n"; }
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  std::string before = tc::test::read_file(program);
  Exit self = tc::test::run({bin("tc-profile"), "--force", "-o", program, "--", program});
  EXPECT_EQ(self.code, 2) << self.err;
  EXPECT_EQ(tc::test::count_lines(self.err), 1) << self.err;
  EXPECT_EQ(tc::test::read_file(program), before) << "the program was overwritten by its own store";
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(Profile, ParseErrorsAreOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"--rings", "0", "--", "true"},   {"--rings", "99999", "--", "true"}, {"--ring-slots", "abc", "--", "true"},
      {"--rings", "-3", "--", "true"},  {"--bogus", "--", "true"},         {"-o"},
      {"--ring-slots", "100", "--", "true"}, {},
  };
  for (const auto& args : bad) {
    std::vector<std::string> argv = {bin("tc-profile")};
    argv.insert(argv.end(), args.begin(), args.end());
    Exit e = tc::test::run(argv);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(e.code, 2) << shown << ": " << e.err;
    EXPECT_EQ(tc::test::count_lines(e.err), 1) << shown << ": " << e.err;
    EXPECT_EQ(e.err.rfind("tc-profile: ", 0), 0u) << e.err;
  }
  Exit help = tc::test::run({bin("tc-profile"), "--help"});
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("tc-profile -o run.tcdb -- ./train"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--ring-slots"), std::string::npos) << help.out;
}

// The store is written under a temporary name beside the output and renamed
// at the end: while the program runs, the output is not there yet.
TEST(Profile, WritesBesideTheOutputAndRenamesAtTheEnd) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Child child(profiled(out, recorder(3000, 1, "wait")));
  std::string line = child.read_line();
  ASSERT_EQ(line.rfind("recorded 3000", 0), 0u) << line;
  EXPECT_FALSE(std::filesystem::exists(out)) << "the output is written in place";
  std::vector<std::string> temps = files_starting(dir, ".run.tcdb.tc-tmp-");
  EXPECT_FALSE(temps.empty()) << "no temporary store beside the output";
  ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
  Exit e = child.wait();
  EXPECT_EQ(e.code, 0) << e.err;
  expect_exact_events(out, 3000, 1);
  EXPECT_TRUE(files_starting(dir, ".run.tcdb.tc-tmp-").empty()) << "the temporary store stayed";
  for (const char* side : {"-wal", "-shm", "-journal", "-reserve"}) EXPECT_FALSE(std::filesystem::exists(out + side)) << side;
}

// SIGUSR1/SIGUSR2 (a batch scheduler's warning) and the rest reach the
// program; the launcher stays to write the store.
class ProfileForwards : public ::testing::TestWithParam<int> {};

TEST_P(ProfileForwards, TheSignalReachesTheProgramAndEveryEventIsStored) {
  const int sig = GetParam();
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Child child(profiled(out, recorder(3000, 2, "wait")));
  std::string line = child.read_line();
  ASSERT_EQ(line.rfind("recorded 3000", 0), 0u) << line;
  ASSERT_EQ(kill(child.pid(), sig), 0);
  bool orphaned = false;
  Exit e = wait_launcher(child, program_pid(line), &orphaned);
  EXPECT_FALSE(orphaned) << "the program was left running";
  EXPECT_EQ(e.signal, 0) << "tc-profile itself died of signal " << e.signal;
  EXPECT_EQ(e.code, 128 + sig) << e.err;  // the program dies of it (default action)
  expect_exact_events(out, 3000, 2);
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  RunRow run = read_run(*r);
  EXPECT_TRUE(run.has_signal);
  EXPECT_EQ(run.exit_signal, sig);
}

INSTANTIATE_TEST_SUITE_P(Signals, ProfileForwards, ::testing::Values(SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGPWR, SIGIO),
                         [](const auto& info) {
                           switch (info.param) {
                             case SIGUSR1: return std::string("USR1");
                             case SIGUSR2: return std::string("USR2");
                             case SIGALRM: return std::string("ALRM");
                             case SIGVTALRM: return std::string("VTALRM");
                             case SIGPROF: return std::string("PROF");
                             case SIGPWR: return std::string("PWR");
                             case SIGIO: return std::string("IO");
                           }
                           return std::to_string(info.param);
                         });

TEST(Profile, ForwardsRealTimeSignals) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Child child(profiled(out, recorder(100, 1, "wait")));
  std::string line = child.read_line();
  ASSERT_EQ(line.rfind("recorded 100", 0), 0u) << line;
  ASSERT_EQ(kill(child.pid(), SIGRTMIN + 2), 0);
  bool orphaned = false;
  Exit e = wait_launcher(child, program_pid(line), &orphaned);
  EXPECT_FALSE(orphaned) << "the program was left running";
  EXPECT_EQ(e.code, 128 + SIGRTMIN + 2) << e.err;
}

// kill -9 of tc-profile: the program is sent SIGTERM (it is not left running
// unrecorded), and what was recorded up to a second before is in the
// temporary store beside the output.
TEST(Profile, KillingTheLauncherTerminatesTheProgramAndKeepsTheTemporaryStore) {
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Child child(profiled(out, recorder(3000, 1, "wait")));
  std::string line = child.read_line();
  ASSERT_EQ(line.rfind("recorded 3000 pid ", 0), 0u) << line;
  pid_t program = static_cast<pid_t>(std::stol(line.substr(line.find("pid ") + 4)));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past the launcher's once-a-second commit
  ASSERT_EQ(kill(child.pid(), SIGKILL), 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ended(program);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!gone) kill(program, SIGKILL);  // do not leave it behind
  EXPECT_TRUE(gone) << "the program kept running after tc-profile was killed";
  Exit e = child.wait();
  EXPECT_EQ(e.signal, SIGKILL);
  if (gone) EXPECT_NE(e.out.find("stopped by signal"), std::string::npos) << "the program was not sent SIGTERM: " << e.out;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::vector<std::string> temps;
  for (const std::string& f : files_starting(dir, ".run.tcdb.tc-tmp-")) {
    if (f.find("-wal") == std::string::npos && f.find("-shm") == std::string::npos && f.find("-reserve") == std::string::npos) temps.push_back(f);
  }
  ASSERT_EQ(temps.size(), 1u) << "the killed launcher's data should be in one temporary store";
  auto r = tc::store::Reader::open(temps[0]);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto events = r->scalar_i64("SELECT (SELECT count(*) FROM ranges) + (SELECT count(*) FROM instants) + (SELECT count(*) FROM counters)");
  ASSERT_TRUE(events.ok()) << events.status().message();
  EXPECT_EQ(*events, kRecords ? 3000 : 0);
}

// `ulimit -f`: the store's writes fail (EFBIG) instead of SIGXFSZ killing the
// launcher; one line says so, the exit status is 1 (the program exited 0), and
// the output holds what fit, marked incomplete.
TEST(Profile, AFileSizeLimitIsReportedAsAFullStore) {
  if (!kRecords) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF): nothing fills the store";
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Exit e;
  {
    FileSizeLimit limit(1000000);
    ASSERT_TRUE(limit.ok());
    e = tc::test::run({bin("tc-profile"), "-q", "--rings", "4", "--ring-slots", "4096", "-o", out, "--", bin("tc-test-recorder"), "--events",
                       "200000", "--threads", "2", "--end", "exit"});
  }
  EXPECT_EQ(e.signal, 0) << "tc-profile was killed by signal " << e.signal;
  EXPECT_EQ(e.code, 1) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("ulimit -f"), std::string::npos) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(read_run(*r).complete);
  EXPECT_TRUE(files_starting(dir, ".run.tcdb.tc-tmp-").empty());
}

// A store that fills up early in a run that goes on recording for seconds:
// tc-profile keeps draining (counting what it cannot store), the program ends,
// and the store is marked. tc-profile used to stop draining at its first
// periodic commit after the failure, while the program's threads waited for
// ring space as long as it lived: both hung for good. The watchdog only turns
// such a hang into a failure instead of a stuck test.
TEST(Profile, AStoreThatFillsUpEarlyStillEndsWithTheProgram) {
  if (!kRecords) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF): nothing fills the store";
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  Exit e;
  std::atomic<bool> done{false};
  {
    FileSizeLimit limit(1000000);
    ASSERT_TRUE(limit.ok());
    Child child({bin("tc-profile"), "-q", "--rings", "4", "--ring-slots", "4096", "-o", out, "--", bin("tc-test-recorder"), "--events",
                 "2000000", "--threads", "2", "--end", "exit"});
    std::thread watchdog([&] {
      for (int i = 0; i < 1200 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!done) kill(child.pid(), SIGKILL);
    });
    e = child.wait();
    done = true;
    watchdog.join();
  }
  ASSERT_NE(e.signal, SIGKILL) << "tc-profile hung after the store filled up: " << e.err;
  EXPECT_EQ(e.code, 1) << e.err;
  EXPECT_NE(e.err.find("ulimit -f"), std::string::npos) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(read_run(*r).complete);
  auto marked = r->scalar_i64("SELECT count(*) FROM dropped WHERE reason LIKE 'disk full%'");
  ASSERT_TRUE(marked.ok()) << marked.status().message();
  EXPECT_EQ(*marked, 1);
}

// A forced run whose recording fails does not replace the good store.
TEST(Profile, AFailedRecordingKeepsTheStoreItWouldHaveReplaced) {
  if (!kRecords) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF): nothing fills the store";
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  ASSERT_EQ(tc::test::run(profiled(out, recorder(100, 1, "exit"))).code, 0);
  std::string good = tc::test::read_file(out);
  Exit e;
  {
    FileSizeLimit limit(1000000);
    ASSERT_TRUE(limit.ok());
    e = tc::test::run({bin("tc-profile"), "-q", "--force", "--rings", "4", "--ring-slots", "4096", "-o", out, "--", bin("tc-test-recorder"),
                       "--events", "200000", "--threads", "2", "--end", "exit"});
  }
  EXPECT_EQ(e.code, 1) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("was not replaced"), std::string::npos) << e.err;
  EXPECT_EQ(tc::test::read_file(out), good) << "the good store was replaced by a failed run";
  std::vector<std::string> temps = files_starting(dir, ".run.tcdb.tc-tmp-");
  ASSERT_FALSE(temps.empty());
  EXPECT_NE(e.err.find(temps[0]), std::string::npos) << "the message names where the data is: " << e.err;
}

}  // namespace
