// End-to-end: tc-profile (and TC_PROFILE=) around tc-test-recorder, then the
// store is read back and compared with exactly what the program recorded.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
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

}  // namespace
