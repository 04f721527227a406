// End-to-end: tc-analyze on real stores (tc-test-train under tc-profile) and
// on every kind of bad input.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "../../cli/src/analyze_queries.h"
#include "support/json.h"
#include "support/process.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

std::string record_training(const TempDir& dir, const std::string& name, int steps) {
  std::string out = dir.file(name);
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-train"), "--steps", std::to_string(steps)});
  EXPECT_EQ(e.code, 0) << e.err;
  return out;
}

Exit analyze(std::vector<std::string> args) {
  args.insert(args.begin(), bin("tc-analyze"));
  return tc::test::run(args, {{"NO_COLOR", "1"}});
}

TEST(Analyze, ReportsATrainingRun) {
  TempDir dir;
  std::string store = record_training(dir, "run.tcdb", 5);
  Exit e = analyze({store});
  if (!tc::trace::kCompiledIn) {
    EXPECT_EQ(e.code, 12) << "no steps recorded when recording is compiled out: " << e.err;
    return;
  }
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("steps     5"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("explicit_evaluation"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("train.cpp"), std::string::npos) << e.out;
  EXPECT_EQ(e.out.find("\033["), std::string::npos) << "no colour when stdout is not a terminal";
}

TEST(Analyze, JsonIsOneObjectAndSubcommandsWork) {
  TempDir dir;
  std::string store = record_training(dir, "run.tcdb", 4);
  Exit e = analyze({store, "--json"});
  if (tc::trace::kCompiledIn) {
    ASSERT_EQ(e.code, 0) << e.err;
  }
  tc::test::JsonValue j = tc::test::parse_json(e.out);
  EXPECT_EQ(j["schema"].s, "tc-analyze/1");
  EXPECT_EQ(j["summary"]["steps"].n, tc::trace::kCompiledIn ? 4 : 0);
  EXPECT_EQ(j["run"]["command"].a.size(), 3u);
  for (const char* sub : {"report", "recompiles", "evals", "memory", "suggest"}) {
    Exit s = analyze({sub, store});
    EXPECT_EQ(s.code, tc::trace::kCompiledIn || std::string(sub) != "report" ? 0 : 12) << sub << ": " << s.err;
    EXPECT_FALSE(s.out.empty()) << sub;
  }
}

TEST(Analyze, FailOnExitsOneWithAReasonAndZeroOtherwise) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  std::string store = record_training(dir, "run.tcdb", 3);
  Exit crossed = analyze({store, "--fail-on", "explicit_evaluations>0"});
  EXPECT_EQ(crossed.code, 1);
  EXPECT_NE(crossed.err.find("explicit_evaluations is 6, which crosses the threshold explicit_evaluations>0"), std::string::npos) << crossed.err;
  EXPECT_EQ(tc::test::count_lines(crossed.err), 1) << crossed.err;
  Exit fine = analyze({store, "--fail-on", "recompilations>2", "--fail-on", "steps<3"});
  EXPECT_EQ(fine.code, 0) << fine.err;
  Exit json = analyze({store, "--json", "--fail-on", "steps>=3"});
  EXPECT_EQ(json.code, 1);
  EXPECT_NO_THROW(tc::test::parse_json(json.out)) << "the JSON is still printed";
  Exit bad = analyze({store, "--fail-on", "recompiles>2"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown metric 'recompiles'"), std::string::npos) << bad.err;
}

// A run with ranges but no steps is a normal run (#13); one that recorded
// nothing at all is an error of its own.
TEST(Analyze, ARunWithNoStepsIsReportedAndOneWithNothingIsAnError) {
  TempDir dir;
  std::string out = dir.file("run.tcdb"), empty = dir.file("empty.tcdb");
  ASSERT_EQ(tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-recorder"), "--events", "10", "--threads", "1", "--end", "exit"}).code, 0);
  ASSERT_EQ(tc::test::run({bin("tc-profile"), "-q", "-o", empty, "--", bin("tc-test-recorder"), "--events", "0", "--threads", "1", "--end", "exit"}).code, 0);
  Exit nothing = analyze({empty});
  EXPECT_EQ(nothing.code, 12) << nothing.err;
  EXPECT_NE(nothing.err.find("the run recorded nothing"), std::string::npos) << nothing.err;
  EXPECT_EQ(tc::test::count_lines(nothing.err), 1) << nothing.err;
  Exit e = analyze({out});
  if (!tc::trace::kCompiledIn) {
    EXPECT_EQ(e.code, 12) << "nothing recorded when recording is compiled out: " << e.err;
    return;
  }
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("note      no training steps: the program does not link tc"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("test.range"), std::string::npos) << "its ranges are shown: " << e.out;
  EXPECT_NE(e.out.find("recorder-0"), std::string::npos) << "and its threads, by name: " << e.out;
}

TEST(Analyze, AnIncompleteRunIsAnalysedAndMarked) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  std::string out = dir.file("run.tcdb");
  // Out of memory: the program exits 3; then a store cut short by a signal.
  tc::test::Child child({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-recorder"), "--events", "30", "--threads", "1", "--end", "abort"});
  child.wait();
  Exit e = analyze({out, "--json"});
  EXPECT_EQ(e.code, 0) << "it has no steps, but ranges and marks: " << e.err;
  tc::test::JsonValue j = tc::test::parse_json(e.out);
  EXPECT_FALSE(j["run"]["complete"].b);
  EXPECT_EQ(j["run"]["exit_signal"].n, 6);
  Exit text = analyze({out});
  EXPECT_NE(text.err.find("did not end normally (killed by signal 6)"), std::string::npos) << text.err;
}

TEST(Analyze, DiffShowsBothRuns) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  TempDir dir;
  std::string a = record_training(dir, "a.tcdb", 2), b = record_training(dir, "b.tcdb", 6);
  Exit e = analyze({"diff", a, b});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("steps"), std::string::npos);
  EXPECT_NE(e.out.find("+4 (+200%)"), std::string::npos) << e.out;
  Exit j = analyze({"diff", a, b, "--json"});
  tc::test::JsonValue v = tc::test::parse_json(j.out);
  EXPECT_EQ(v["a"]["steps"].n, 2);
  EXPECT_EQ(v["b"]["steps"].n, 6);
  EXPECT_EQ(analyze({"diff", a}).code, 2) << "diff needs two stores";
}

// The Trace Event format's rules for what the export writes.
void check_trace_event_rules(const tc::test::JsonValue& root) {
  ASSERT_EQ(root.type, tc::test::JsonValue::kObject);
  const auto& events = root["traceEvents"];
  ASSERT_EQ(events.type, tc::test::JsonValue::kArray);
  std::set<std::pair<double, double>> named_threads;
  for (const auto& e : events.a) {
    ASSERT_EQ(e.type, tc::test::JsonValue::kObject);
    ASSERT_EQ(e["ph"].type, tc::test::JsonValue::kString);
    ASSERT_EQ(e["name"].type, tc::test::JsonValue::kString);
    ASSERT_EQ(e["pid"].type, tc::test::JsonValue::kNumber);
    const std::string& ph = e["ph"].s;
    if (ph == "M") {
      ASSERT_TRUE(e["name"].s == "process_name" || e["name"].s == "thread_name") << e["name"].s;
      ASSERT_EQ(e["args"]["name"].type, tc::test::JsonValue::kString);
      if (e["name"].s == "thread_name") named_threads.insert({e["pid"].n, e["tid"].n});
      continue;
    }
    ASSERT_EQ(e["ts"].type, tc::test::JsonValue::kNumber) << ph;
    ASSERT_GE(e["ts"].n, 0) << "times are relative to the run's start";
    if (ph == "X") {
      ASSERT_EQ(e["dur"].type, tc::test::JsonValue::kNumber);
      ASSERT_GE(e["dur"].n, 0);
      ASSERT_EQ(e["tid"].type, tc::test::JsonValue::kNumber);
      ASSERT_TRUE(named_threads.count({e["pid"].n, e["tid"].n})) << "an event on an unnamed thread";
    } else if (ph == "i") {
      ASSERT_TRUE(e["s"].s == "t" || e["s"].s == "p" || e["s"].s == "g");
    } else if (ph == "C") {
      ASSERT_EQ(e["args"].type, tc::test::JsonValue::kObject);
      for (const auto& [k, v] : e["args"].o) ASSERT_EQ(v.type, tc::test::JsonValue::kNumber) << "counter series " << k;
    } else {
      FAIL() << "unexpected phase " << ph;
    }
  }
}

TEST(Analyze, ChromeExportFollowsTheTraceEventFormat) {
  TempDir dir;
  std::string store = record_training(dir, "run.tcdb", 3);
  std::string json = dir.file("trace.json");
  Exit e = analyze({"export", store, "--format", "chrome", "-o", json});
  ASSERT_EQ(e.code, 0) << e.err;
  tc::test::JsonValue root = tc::test::parse_json(tc::test::read_file(json));
  check_trace_event_rules(root);
  if (!tc::trace::kCompiledIn) return;
  std::set<std::string> cats;
  for (const auto& ev : root["traceEvents"].a) {
    if (ev.has("cat")) cats.insert(ev["cat"].s);
  }
  for (const char* c : {"step", "execute", "explicit_evaluation"}) EXPECT_TRUE(cats.count(c)) << c;
  Exit unwritable = analyze({"export", store, "-o", dir.file("missing/trace.json")});
  EXPECT_EQ(unwritable.code, 7) << unwritable.err;
}

// Every bad input: one line on stderr, its own exit status, the file untouched.
TEST(Analyze, BadInputGetsOneLineAndItsOwnExitStatus) {
  TempDir dir;
  std::string good = record_training(dir, "good.tcdb", 1);
  std::string empty = dir.file("empty.tcdb"), random = dir.file("random.tcdb"), truncated = dir.file("truncated.tcdb"),
              newer = dir.file("newer.tcdb"), other = dir.file("other.sqlite");
  { std::ofstream created(empty); }
  {
    std::ofstream f(random, std::ios::binary);
    for (int i = 0; i < 5000; ++i) f.put(static_cast<char>((i * 7919 + 13) % 251));
  }
  std::filesystem::copy_file(good, truncated);
  std::filesystem::resize_file(truncated, std::filesystem::file_size(good) / 2);
  std::filesystem::copy_file(good, newer);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  struct Case {
    std::string path;
    int code;
    const char* says;
  };
  const std::vector<Case> cases = {{dir.file("missing.tcdb"), 3, "no such file"}, {dir.path().string(), 4, "directory"}, {empty, 4, "empty"},
                                   {random, 4, "not"},  {other, 4, "not a tc store"}, {truncated, 5, "truncated"}, {newer, 6, "newer"}};
  for (const Case& c : cases) {
    std::string before = std::filesystem::is_regular_file(c.path) ? tc::test::read_file(c.path) : "";
    for (std::vector<std::string> args : {std::vector<std::string>{c.path}, {c.path, "--json"}, {"export", c.path, "-o", dir.file("x.json")}}) {
      Exit e = analyze(args);
      EXPECT_EQ(e.code, c.code) << c.path << ": " << e.err;
      EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
      EXPECT_NE(e.err.find(c.says), std::string::npos) << e.err;
      EXPECT_TRUE(e.out.empty()) << e.out;
    }
    if (std::filesystem::is_regular_file(c.path)) {
      EXPECT_EQ(tc::test::read_file(c.path), before) << c.path << " was changed";
    }
  }
}

// ---------------------------------------------------------------- hardening (#12)

void sql(const std::string& path, const char* statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, statement, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(Analyze, ExportRefusesToWriteOverTheStoreItReads) {
  TempDir dir;
  std::string store = record_training(dir, "run.tcdb", 1);
  std::string before = tc::test::read_file(store);
  std::filesystem::create_symlink(store, dir.file("link.tcdb"));
  std::filesystem::create_hard_link(store, dir.file("hard.tcdb"));
  const std::vector<std::vector<std::string>> cases = {
      {"export", store, "-o", store},
      {"export", store, "-o", dir.path().string() + "/../" + dir.path().filename().string() + "/run.tcdb"},
      {"export", dir.file("link.tcdb"), "-o", store},
      {"export", store, "-o", dir.file("link.tcdb")},
      {"export", store, "--format", "chrome", "-o", dir.file("hard.tcdb")},
  };
  for (const auto& args : cases) {
    Exit e = analyze(args);
    EXPECT_EQ(e.code, 2) << args.back() << ": " << e.err;
    EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
    EXPECT_NE(e.err.find("the store being read"), std::string::npos) << e.err;
  }
  EXPECT_EQ(tc::test::read_file(store), before) << "the store was destroyed";
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("link.tcdb")));
}

// An export that fails (here: past the file size limit) leaves the file it
// would have replaced as it was, and nothing else behind.
TEST(Analyze, AFailedExportLeavesNoPartialFile) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF): the export is too small to fail";
  TempDir dir;
  std::string store = record_training(dir, "run.tcdb", 20);
  std::string out = dir.file("trace.json");
  { std::ofstream(out) << "old"; }
  Exit e;
  {
    rlimit saved{};
    getrlimit(RLIMIT_FSIZE, &saved);
    rlimit lower = saved;
    lower.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lower), 0);
    e = analyze({"export", store, "-o", out});
    setrlimit(RLIMIT_FSIZE, &saved);
  }
  EXPECT_EQ(e.signal, 0) << "tc-analyze was killed by signal " << e.signal;
  EXPECT_EQ(e.code, 7) << e.err;
  EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
  EXPECT_EQ(tc::test::read_file(out), "old");
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(f.path().filename().string().find(".tc-tmp-"), std::string::npos) << f.path();
  }
  // A device is written in place, never replaced (a copy of /dev/null of the
  // test's own, where it may make one: a regression must not break the machine's).
  std::string null_copy = dir.file("null");
  if (mknod(null_copy.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return;
  if (int fd = open(null_copy.c_str(), O_WRONLY); fd >= 0) {
    close(fd);
  } else {
    return;  // a nodev file system
  }
  Exit to_null = analyze({"export", store, "-o", null_copy});
  EXPECT_EQ(to_null.code, 0) << to_null.err;
  struct stat st{};
  ASSERT_EQ(stat(null_copy.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced by a file";
}

TEST(Analyze, ParseErrorsAreOneLineAndExitTwo) {
  TempDir dir;
  std::string store = record_training(dir, "run.tcdb", 1);
  const std::vector<std::vector<std::string>> bad = {
      {"export", store, "--format", "perfetto", "-o", dir.file("x.json")},
      {"export", store},
      {"export", store, "-o", ""},
      {store, "--bogus"},
      {store, "--safety-margin", "abc"},
      {store, "--safety-margin", "5"},
      {},
      {"kernels", store, dir.file("second.tcdb")},
      {store, store},  // several stores are one MPI job's: this one names no rank
      {"diff", store},
      {"diff", store, "--"},
  };
  for (const auto& args : bad) {
    Exit e = analyze(args);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(e.code, 2) << shown << ": " << e.err;
    EXPECT_EQ(tc::test::count_lines(e.err), 1) << shown << ": " << e.err;
    EXPECT_EQ(e.err.rfind("tc-analyze: ", 0), 0u) << e.err;
    EXPECT_EQ(e.err.find("WAL"), std::string::npos) << e.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.json")));
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"}, {"export", "--help"}}) {
    Exit help = analyze(args);
    EXPECT_EQ(help.code, 0) << help.err;
    EXPECT_NE(help.out.find("tc-analyze run.tcdb --json"), std::string::npos) << help.out;
  }
}

TEST(Analyze, DamagedStoresAreCodeFive) {
  TempDir dir;
  std::string good = record_training(dir, "good.tcdb", 1);
  std::string no_run = dir.file("no-run.tcdb"), negative = dir.file("negative.tcdb");
  std::filesystem::copy_file(good, no_run);
  sql(no_run, "DELETE FROM run");
  std::filesystem::copy_file(good, negative);
  sql(negative, "PRAGMA user_version = -1");
  for (const std::string& path : {no_run, negative}) {
    for (std::vector<std::string> args : {std::vector<std::string>{path}, {path, "--json"}, {"export", path, "-o", dir.file("x.json")}}) {
      Exit e = analyze(args);
      EXPECT_EQ(e.code, 5) << path << ": " << e.err;
      EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
      EXPECT_EQ(e.err.find("no such file"), std::string::npos) << e.err;
      EXPECT_EQ(e.err.find("4294967295"), std::string::npos) << e.err;
      EXPECT_TRUE(e.out.empty()) << e.out;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.json")));
}

// #27: negative or INT64_MIN durations overflow the sums of every report: a
// damaged store (5, one line that says so), not bad usage (2).
TEST(Analyze, DurationsThatOverflowAreADamagedStore) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF): the run records no compilations";
  TempDir dir;
  std::string good = record_training(dir, "good.tcdb", 1);
  for (const char* table : {"compilations", "executions"}) {
    std::string path = dir.file(std::string(table) + ".tcdb");
    std::filesystem::copy_file(good, path);
    sql(path, (std::string("UPDATE ") + table + " SET dur = -9223372036854775807 - 1").c_str());
    for (std::vector<std::string> args : {std::vector<std::string>{path}, {path, "--json"}, {"recompiles", path}, {"evals", path},
                                          {"memory", path}, {"suggest", path}, {"diff", path, path}}) {
      Exit e = analyze(args);
      EXPECT_EQ(e.code, 5) << table << " " << args[0] << ": " << e.err;
      EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
      EXPECT_NE(e.err.find("values out of range"), std::string::npos) << e.err;
      EXPECT_TRUE(e.out.empty()) << e.out;
    }
  }
}

// The rows of `statement` on `path`, each row's columns joined by '|' (NULL as "NULL").
std::vector<std::string> rows(const std::string& path, std::string_view statement) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, statement.data(), static_cast<int>(statement.size()), &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::string> out;
  while (st && sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const unsigned char* t = sqlite3_column_text(st, c);
      row += (c ? "|" : "") + (t ? std::string(reinterpret_cast<const char*>(t)) : std::string("NULL"));
    }
    out.push_back(row);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// #27: `recompiles` took 113 s on 50k compilations: a subquery per compilation
// scanned compilation_inputs whole. Its query now groups the inputs once and
// joins them by graph_id through an index, with the same rows as before.
TEST(Analyze, RecompilesJoinsTheShapeChangesOnceWithTheOldRows) {
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF): the run records no compilations";
  TempDir dir;
  std::string path = record_training(dir, "many.tcdb", 1);
  // 3,000 more compilations: graph 1000+k, with 0, 1 or more shape changes (of two threads, in no graph_id order), a diff on every 5th.
  sql(path,
      "WITH RECURSIVE n(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM n WHERE k < 2999) "
      "INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, "
      "kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) "
      "SELECT 1, 9000000000000 + 1000 * k, 500 + k, 1000 + k, k, 's' || k, 'e', 'shape_change', 'mark_step', NULL, 10, 5, 2, 1, 1, 1, 'built', "
      "CASE WHEN k % 5 = 0 THEN 'ops ' || k ELSE NULL END, NULL, 'tc', NULL, NULL FROM n");
  sql(path,
      "WITH RECURSIVE n(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM n WHERE k < 3999) "
      "INSERT INTO compilation_inputs (utid, graph_id, input, dim, old_value, new_value, dynamic) "
      "SELECT 1 + k % 2, 1000 + (k * 7) % 2500, 'x' || (k % 3), k % 4, k, k + 1, 0 FROM n");
  const std::string old_sql =
      "SELECT c.ts, c.graph_id, c.step, c.reason, c.dur, (SELECT group_concat(input || '[' || dim || '] ' || old_value || '->' || "
      "new_value, ', ') FROM compilation_inputs i WHERE i.graph_id = c.graph_id), c.diff FROM compilations c ORDER BY c.ts";
  std::vector<std::string> now = rows(path, tc::cli::kCompilationsSql), before = rows(path, old_sql);
  ASSERT_GT(now.size(), 3000u);
  EXPECT_EQ(now, before);
  // No subquery per row: compilation_inputs is read once, and the join looks graph_id up in an index.
  std::vector<std::string> plan = rows(path, "EXPLAIN QUERY PLAN " + std::string(tc::cli::kCompilationsSql));
  int input_scans = 0;
  bool search = false;
  for (const std::string& line : plan) {
    EXPECT_EQ(line.find("CORRELATED"), std::string::npos) << line;
    input_scans += line.find("compilation_inputs") != std::string::npos;
    search |= line.find("SEARCH") != std::string::npos && line.find("(graph_id=?)") != std::string::npos;
  }
  EXPECT_EQ(input_scans, 1);
  EXPECT_TRUE(search) << "the join is an index lookup";
  Exit e = analyze({"recompiles", path});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("ops "), std::string::npos) << "a diff where there are no shape changes";
  EXPECT_NE(e.out.find("] 0->1, "), std::string::npos) << "several shape changes";
  EXPECT_GT(tc::test::count_lines(e.out), 3000);
}

// Names with invalid UTF-8 and terminal escapes, in a store written here.
std::string write_store_with_bad_names(const TempDir& dir) {
  namespace schema = tc::store::schema;
  std::string path = dir.file("names.tcdb");
  auto w = tc::store::Writer::create(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return path;
  tc::store::Writer& s = **w;
  const int64_t ms = 1'000'000;
  auto ok = [](const tc::Status& st) { EXPECT_TRUE(st.ok()) << st.message(); };
  auto run = s.row(schema::run);
  run.i64(1).text("0.1.0").text("[\"./tr\xff\",\"\x1b]0;owned\x07\"]").text("/work").text("host").text("tc-profile").text("monotonic");
  ok(run.i64(0).i64(10 * ms).i64(0).i64(0).null().i64(1).i64(0).i64(0).text("none").null().null().null().insert());
  ok(s.row(schema::locations).i64(1).text("item").text("/src/\x1b[2Jtr\xfe\xffin.cpp").text("main").i64(7).insert());
  ok(s.row(schema::processes).i64(1).i64(4242).text("train").i64(0).null().insert());
  ok(s.row(schema::threads).i64(1).i64(1).i64(10).text("worker\xc3").insert());
  for (int step = 0; step < 3; ++step) {
    ok(s.row(schema::steps).null().i64(1).i64(step * 3 * ms).i64(2 * ms).i64(step).i64(1).insert());
    ok(s.row(schema::explicit_evaluations).null().i64(1).i64(step * 3 * ms + ms).i64(ms / 2).i64(step).text("item").i64(1).i64(12).i64(0).insert());
  }
  ok(s.finalize());
  return path;
}

bool has_raw_control(const std::string& text) {
  for (char c : text) {
    if (c != '\n' && static_cast<unsigned char>(c) < 0x20) return true;
  }
  return false;
}

TEST(Analyze, NamesWithInvalidUtf8OrEscapesStayValidAndInert) {
  TempDir dir;
  std::string store = write_store_with_bad_names(dir);
  Exit j = analyze({store, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  tc::test::JsonValue v;
  ASSERT_NO_THROW(v = tc::test::parse_json(j.out)) << j.out;
  ASSERT_EQ(v["notes"].a.size(), 1u) << j.out;
  EXPECT_NE(v["notes"].a[0].s.find("replaced with U+FFFD"), std::string::npos);
  EXPECT_NE(j.err.find("invalid UTF-8, replaced with U+FFFD"), std::string::npos) << j.err;
  EXPECT_EQ(tc::test::count_lines(j.err), 1) << j.err;

  for (const char* sub : {"report", "evals", "suggest"}) {
    Exit t = analyze({sub, store});
    ASSERT_EQ(t.code, 0) << sub << ": " << t.err;
    EXPECT_FALSE(has_raw_control(t.out)) << sub << ": a name reached the terminal raw: " << t.out;
    EXPECT_NE(t.out.find("\\x1b"), std::string::npos) << sub << ": " << t.out;
    EXPECT_FALSE(has_raw_control(t.err)) << t.err;
  }

  std::string json = dir.file("trace.json");
  Exit e = analyze({"export", store, "-o", json});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.err.find("invalid UTF-8, replaced with U+FFFD"), std::string::npos) << e.err;
  tc::test::JsonValue trace;
  ASSERT_NO_THROW(trace = tc::test::parse_json(tc::test::read_file(json)));
  check_trace_event_rules(trace);
}

// ---------------------------------------------------------------- ranges and steps from a range (#13)

// What the NVTX injection library writes for a program that does not link
// tc: thread 1 runs train_step three times (forward inside each), thread 2
// loads in domain "data"; a mark; a start/end range ended on thread 2.
std::string write_nvtx_store(const TempDir& dir, const std::string& name = "nvtx.tcdb") {
  namespace schema = tc::store::schema;
  std::string path = dir.file(name);
  auto w = tc::store::Writer::create(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return path;
  tc::store::Writer& s = **w;
  const int64_t ms = 1'000'000;
  auto ok = [](const tc::Status& st) { EXPECT_TRUE(st.ok()) << st.message(); };
  auto run = s.row(schema::run);
  run.i64(1).text("0.1.0").text("[\"python\",\"train.py\"]").text("/work").text("host").text("tc-profile").text("monotonic");
  ok(run.i64(0).i64(100 * ms).i64(0).i64(0).null().i64(1).i64(0).i64(0).text("none").null().text("tc").null().insert());
  ok(s.row(schema::processes).i64(1).i64(4242).text("python").i64(0).null().insert());
  ok(s.row(schema::threads).i64(1).i64(1).i64(4242).text("MainThread").insert());
  ok(s.row(schema::threads).i64(2).i64(1).i64(4243).text("loader").insert());
  auto site = [&](int64_t id, const char* message, const char* domain) {
    ok(s.row(schema::locations).i64(id).text(message).text("nvtx").text(domain).i64(0).insert());
    auto r = s.row(schema::nvtx_sites);
    r.null().i64(1).i64(id);
    if (*domain) r.text(domain); else r.null();
    ok(r.null().null().text("ascii").insert());
  };
  site(1, "train_step", "");
  site(2, "forward", "");
  site(3, "load", "data");
  site(4, "checkpoint", "");
  site(5, "prefetch", "data");
  auto range = [&](int64_t utid, int64_t ts, int64_t dur, int64_t depth, int64_t loc) {
    ok(s.row(schema::ranges).null().i64(utid).i64(ts).i64(dur).i64(depth).i64(loc).i64(0).insert());
  };
  for (int64_t i = 0; i < 3; ++i) {
    range(1, i * 30 * ms, (20 + 5 * i) * ms, 0, 1);  // 20, 25, 30 ms
    range(1, i * 30 * ms, 10 * ms, 1, 2);
    range(2, i * 30 * ms, 4 * ms, 0, 3);
  }
  range(1, 90 * ms, -1, 0, 1);  // the program ended inside it
  ok(s.row(schema::instants).null().i64(1).i64(50 * ms).i64(4).i64(0).insert());
  ok(s.row(schema::nvtx_range_starts).null().i64(1).i64(5 * ms).i64(1).i64(5).i64(0).insert());
  ok(s.row(schema::nvtx_range_ends).null().i64(2).i64(12 * ms).i64(1).insert());
  ok(s.finalize());
  return path;
}

TEST(Analyze, RangesTableTextAndJson) {
  TempDir dir;
  std::string store = write_nvtx_store(dir);
  Exit j = analyze({"ranges", store, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  tc::test::JsonValue v = tc::test::parse_json(j.out);
  EXPECT_EQ(v["schema"].s, "tc-analyze-ranges/1");
  ASSERT_EQ(v["ranges"].a.size(), 4u) << j.out;
  const auto& step = v["ranges"].a[0];
  EXPECT_EQ(step["name"].s, "train_step");
  EXPECT_EQ(step["kind"].s, "nvtx");
  EXPECT_EQ(step["count"].n, 4);
  EXPECT_EQ(step["cut"].n, 1);
  EXPECT_EQ(step["total_ns"].n, 75'000'000);
  EXPECT_EQ(step["p50_ns"].n, 25'000'000);
  EXPECT_EQ(step["self_ns"].n, 45'000'000) << "75 ms less three 10 ms forwards";
  EXPECT_EQ(v["ranges"].a[3]["name"].s, "prefetch") << "the start/end range, 7 ms";
  EXPECT_EQ(v["ranges"].a[3]["total_ns"].n, 7'000'000);
  EXPECT_EQ(v["marks"].a.at(0)["name"].s, "checkpoint");
  EXPECT_EQ(v["threads"].a.at(1)["name"].s, "loader");

  Exit t = analyze({"ranges", store});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("11 ranges (1 cut) of 4 names on 2 threads; 1 mark of 1 name"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("train_step"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("75.0 ms"), std::string::npos) << "times carry units: " << t.out;
  EXPECT_NE(t.out.find("(default)"), std::string::npos) << t.out;
  Exit top = analyze({"ranges", store, "--top", "1"});
  EXPECT_NE(top.out.find("... 3 more"), std::string::npos) << top.out;
  Exit data = analyze({"ranges", store, "--domain", "data", "--json"});
  ASSERT_EQ(data.code, 0) << data.err;
  tc::test::JsonValue d = tc::test::parse_json(data.out);
  ASSERT_EQ(d["ranges"].a.size(), 2u) << data.out;
  for (const auto& r : d["ranges"].a) EXPECT_EQ(r["domain"].s, "data");
  Exit none = analyze({"ranges", store, "--name", "no-such-range"});
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.out.find("no ranges or marks match"), std::string::npos) << none.out;
  EXPECT_EQ(analyze({"ranges", store, "--kind", "cuda"}).code, 2);
  Exit help = analyze({"ranges", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--domain"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--step-range NAME"), std::string::npos) << help.out;
}

// python -I, -E or -S keeps tc's hook from loading: the note says so, not
// that the program "does not link tc" (#27). python3 is Debian's.
TEST(Analyze, APythonRunWithoutTheHookIsSaid) {
  TempDir dir;
  for (const char* flag : {"-I", "-E", "-S"}) {
    const std::string store = dir.file(std::string("py") + flag + ".tcdb");
    Exit p = tc::test::run({bin("tc-profile"), "-q", "-o", store, "--", "python3", flag, "-c", "pass"});
    ASSERT_EQ(p.code, 0) << p.err;
    const std::string words = std::string("python ") + flag + (flag[1] == 'S' ? " skips site" : " ignores PYTHONPATH");
    // Nothing recorded (exit 12): the one line says why.
    Exit e = analyze({store});
    EXPECT_EQ(e.code, 12) << e.err;
    EXPECT_NE(e.err.find(words + ", so tc's Python hook did not load; rerun without " + flag), std::string::npos) << e.err;
    EXPECT_EQ(tc::test::count_lines(e.err), 1) << e.err;
    // With a range recorded, the report's note says so.
    Exit j = analyze({store, "--json"});
    EXPECT_NE(j.out.find("no training steps: " + words + ", so tc's Python hook did not load; rerun without " + flag), std::string::npos)
        << j.out;
    EXPECT_EQ(j.out.find("does not link tc"), std::string::npos) << j.out;
  }
}

TEST(Analyze, AProgramWithoutTcIsReportedAndStepsComeFromARange) {
  TempDir dir;
  std::string store = write_nvtx_store(dir);
  Exit e = analyze({store});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("note      no training steps: the program does not link tc and no --step-range was given"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("MainThread"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("checkpoint"), std::string::npos) << e.out;
  Exit j = analyze({store, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  tc::test::JsonValue v = tc::test::parse_json(j.out);
  EXPECT_EQ(v["summary"]["steps"].n, 0);
  ASSERT_EQ(v["ranges"].a.size(), 4u);
  EXPECT_EQ(v["ranges"].a[0]["self_ns"].n, 45'000'000);

  Exit steps = analyze({store, "--step-range", "train_step", "--json"});
  ASSERT_EQ(steps.code, 0) << steps.err;
  tc::test::JsonValue s = tc::test::parse_json(steps.out);
  EXPECT_EQ(s["summary"]["steps"].n, 3) << "the cut one is not a step";
  EXPECT_EQ(s["summary"]["step_source"].s, "range");
  EXPECT_DOUBLE_EQ(s["summary"]["step_p50_s"].n, 0.025);
  Exit text = analyze({store, "--step-range", "train_step"});
  EXPECT_NE(text.out.find("steps     3 (range 'train_step', p50 25.0 ms, p99 30.0 ms)"), std::string::npos) << text.out;
  EXPECT_EQ(analyze({store, "--step-range", "train_step", "--fail-on", "steps<3"}).code, 0);

  Exit missing = analyze({store, "--step-range", "trian_step"});
  EXPECT_EQ(missing.code, 0) << missing.err;
  EXPECT_NE(missing.out.find("no training steps: no range is named 'trian_step' (tc-analyze --step-range); the ranges with the most time here: "
                             "'train_step' (4)"),
            std::string::npos)
      << missing.out;
  Exit blank = analyze({store, "--step-range", ""});
  EXPECT_EQ(blank.code, 2) << blank.err;
  EXPECT_EQ(tc::test::count_lines(blank.err), 1) << blank.err;
}

}  // namespace
