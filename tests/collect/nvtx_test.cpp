// End to end: NVTX from a program that knows nothing of tc (tracker #13).
// tc-test-nvtx (tests/programs/nvtx_program.c) includes only nvtx3; under
// tc-profile, libtc_nvtx records its ranges, marks, domains, categories,
// colours, payloads and thread names. Each test compares the store with what
// the program emitted, which its source states.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "support/json.h"
#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Child;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

int64_t scalar(const tc::store::Reader& r, const std::string& sql) {
  auto v = r.scalar_i64(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
  return v.ok() ? *v : -1;
}

std::string text(const tc::store::Reader& r, const std::string& sql) {
  auto q = r.query(sql);
  return q.next() && !q.is_null(0) ? std::string(q.text(0)) : "<null>";
}

struct Range {
  std::string name, domain, thread;
  int64_t ts, dur, depth, arg;
};

// Every NVTX range, by thread (named, or "main"), in time order.
std::vector<Range> nvtx_ranges(const tc::store::Reader& r) {
  std::vector<Range> out;
  auto q = r.query(
      "SELECT l.name, l.function, coalesce(t.name, 'main'), r.ts, r.dur, r.depth, r.arg FROM ranges r "
      "JOIN locations l ON l.id = r.loc_id JOIN threads t USING (utid) WHERE l.file = 'nvtx' ORDER BY r.utid, r.ts");
  while (q.next()) {
    out.push_back({std::string(q.text(0)), std::string(q.text(1)), std::string(q.text(2)), q.i64(3), q.i64(4), q.i64(5), q.i64(6)});
  }
  return out;
}

class Nvtx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }
};

TEST_F(Nvtx, AProgramThatKnowsNothingOfTcHasItsRangesMarksAndDomainsStored) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-nvtx")});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "done\n");
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(text(*r, "SELECT nvtx FROM run"), "tc");
  EXPECT_EQ(scalar(*r, "SELECT complete FROM run"), 1);
  EXPECT_EQ(scalar(*r, "SELECT dropped_count FROM run"), 0);

  // Exactly the ranges it pushed, on the threads that pushed them.
  std::vector<Range> ranges = nvtx_ranges(*r);
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, int> seen;  // thread, name, domain, depth
  for (const Range& g : ranges) {
    ++seen[{g.thread, g.name, g.domain, g.depth}];
    EXPECT_GE(g.dur, 0) << g.name << " on " << g.thread << " was cut";
  }
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, int> want = {
      {{"main", "main", "", 0}, 1}, {{"main", "setup", "", 1}, 1}, {{"main", "grüße", "", 1}, 1}};
  for (int i = 1; i <= 3; ++i) {
    std::string t = "worker-" + std::to_string(i);
    want[{t, "worker", "", 0}] = 1;
    want[{t, "step", "physics", 1}] = 1;
    want[{t, "chunk", "", 2}] = 2 + i;
    want[{t, "inner", "", 3}] = 2 + i;
  }
  EXPECT_EQ(seen, want);
  EXPECT_EQ(ranges.size(), 33u);

  // Nested correctly: each range lies inside the innermost range that was
  // open on its thread when it began (the one of depth - 1 before it), and
  // the domain's "step" got its payload.
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Range& g = ranges[i];
    if (g.name == "step") EXPECT_EQ("worker-" + std::to_string(g.arg), g.thread) << "the payload is the worker's number";
    if (g.depth == 0) continue;
    const Range* parent = nullptr;
    for (size_t j = 0; j < ranges.size(); ++j) {
      const Range& p = ranges[j];
      if (p.thread == g.thread && p.depth == g.depth - 1 && p.ts <= g.ts && (!parent || p.ts > parent->ts)) parent = &p;
    }
    ASSERT_NE(parent, nullptr) << g.name;
    if (g.name == "step") continue;  // "worker" (the default domain) ends before it: the domains interleave
    EXPECT_LE(g.ts + g.dur, parent->ts + parent->dur) << g.name << " ends after its parent " << parent->name;
  }
  // "step" outlives "worker" on each worker thread: popped after it.
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM ranges s JOIN locations ls ON ls.id = s.loc_id JOIN ranges w ON w.utid = s.utid "
                       "JOIN locations lw ON lw.id = w.loc_id WHERE ls.name = 'step' AND lw.name = 'worker' AND s.ts > w.ts "
                       "AND s.ts + s.dur > w.ts + w.dur"),
            3);

  // The site of "step": domain, category, colour, a registered message.
  auto q = r->query("SELECT s.domain, s.category, s.color, s.message_type FROM nvtx_sites s JOIN locations l ON l.id = s.loc_id "
                    "WHERE l.name = 'step'");
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.text(0), "physics");
  EXPECT_EQ(q.i64(1), 7);
  EXPECT_EQ(q.i64(2), 0xFF00FF00);
  EXPECT_EQ(q.text(3), "registered");
  EXPECT_FALSE(q.next()) << "one site for the three threads' 'step'";
  EXPECT_EQ(text(*r, "SELECT s.message_type FROM nvtx_sites s JOIN locations l ON l.id = s.loc_id WHERE l.name = 'grüße'"), "unicode");
  EXPECT_EQ(text(*r, "SELECT name FROM nvtx_categories WHERE domain = 'physics' AND category = 7"), "solver");

  // Marks: two in the default domain on the main thread, one per worker in
  // "physics" with its floating-point payload at the mark's own ts.
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM instants i JOIN locations l ON l.id = i.loc_id JOIN threads t USING (utid) "
                       "WHERE l.name IN ('begin', 'end') AND l.function = '' AND t.name IS NULL"),
            2);
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM instants i JOIN locations l ON l.id = i.loc_id JOIN nvtx_real_payloads p "
                       "ON p.utid = i.utid AND p.loc_id = i.loc_id AND p.ts = i.ts WHERE l.name = 'physics.mark' "
                       "AND l.function = 'physics' AND p.value = 2.5"),
            3);

  // The start/end range: started on the main thread, ended on worker-1.
  q = r->query("SELECT coalesce(ts.name, 'main'), te.name, e.ts - s.ts FROM nvtx_range_starts s JOIN locations l ON l.id = s.loc_id "
               "JOIN nvtx_range_ends e ON e.range_id = s.range_id JOIN threads ts ON ts.utid = s.utid JOIN threads te ON te.utid = e.utid "
               "WHERE l.name = 'io'");
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.text(0), "main");
  EXPECT_EQ(q.text(1), "worker-1");
  EXPECT_GE(q.i64(2), 0);
  EXPECT_FALSE(q.next());

  // Thread names from nvtxNameOsThread.
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM threads WHERE name LIKE 'worker-_'"), 3);
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM nvtx_thread_names"), 3);
}

// The same run read back through the Chrome export, as a user's trace viewer
// sees it (docs/export.md).
TEST_F(Nvtx, TheChromeExportHoldsExactlyTheProgramsRangesMarksAndThreads) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), trace = dir.file("trace.json");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-nvtx")});
  ASSERT_EQ(e.code, 0) << e.err;
  Exit x = tc::test::run({bin("tc-analyze"), "export", out, "--format", "chrome", "-o", trace});
  ASSERT_EQ(x.code, 0) << x.err;
  tc::test::JsonValue doc = tc::test::parse_json(tc::test::read_file(trace));
  std::map<std::string, std::string> thread_of;  // "pid/tid" -> name
  for (const auto& ev : doc["traceEvents"].a) {
    if (ev["ph"].s == "M" && ev["name"].s == "thread_name") {
      thread_of[std::to_string(static_cast<int64_t>(ev["pid"].n)) + "/" + std::to_string(static_cast<int64_t>(ev["tid"].n))] = ev["args"]["name"].s;
    }
  }
  auto thread = [&](const tc::test::JsonValue& ev) {
    auto it = thread_of.find(std::to_string(static_cast<int64_t>(ev["pid"].n)) + "/" + std::to_string(static_cast<int64_t>(ev["tid"].n)));
    return it == thread_of.end() || it->second.rfind("worker-", 0) != 0 ? std::string("main") : it->second;
  };
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, int> ranges;  // thread, name, cat, depth
  std::map<std::tuple<std::string, std::string, std::string>, int> marks;           // thread, name, cat
  int async_begin = 0, async_end = 0;
  for (const auto& ev : doc["traceEvents"].a) {
    if (!ev.has("cat") || ev["cat"].s.rfind("nvtx", 0) != 0) continue;
    if (ev["ph"].s == "X") {
      ++ranges[{thread(ev), ev["name"].s, ev["cat"].s, static_cast<int64_t>(ev["args"]["depth"].n)}];
      EXPECT_FALSE(ev["args"].has("cut") && ev["args"]["cut"].b) << ev["name"].s;
      if (ev["name"].s == "step") {
        EXPECT_EQ(ev["args"]["domain"].s, "physics");
        EXPECT_EQ(ev["args"]["category"].s, "solver");
        EXPECT_EQ(ev["args"]["color"].s, "#00FF00");
        EXPECT_EQ("worker-" + std::to_string(static_cast<int64_t>(ev["args"]["payload"].n)), thread(ev));
      }
    } else if (ev["ph"].s == "i") {
      ++marks[{thread(ev), ev["name"].s, ev["cat"].s}];
      if (ev["name"].s == "physics.mark") EXPECT_EQ(ev["args"]["payload"].n, 2.5);
    } else if (ev["ph"].s == "b") {
      EXPECT_EQ(ev["name"].s, "io");
      EXPECT_EQ(thread(ev), "main");
      ++async_begin;
    } else if (ev["ph"].s == "e") {
      EXPECT_EQ(thread(ev), "worker-1");
      ++async_end;
    }
  }
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, int> want = {
      {{"main", "main", "nvtx", 0}, 1}, {{"main", "setup", "nvtx", 1}, 1}, {{"main", "grüße", "nvtx", 1}, 1}};
  std::map<std::tuple<std::string, std::string, std::string>, int> want_marks = {{{"main", "begin", "nvtx"}, 1}, {{"main", "end", "nvtx"}, 1}};
  for (int i = 1; i <= 3; ++i) {
    std::string t = "worker-" + std::to_string(i);
    want[{t, "worker", "nvtx", 0}] = 1;
    want[{t, "step", "nvtx:physics", 1}] = 1;
    want[{t, "chunk", "nvtx", 2}] = 2 + i;
    want[{t, "inner", "nvtx", 3}] = 2 + i;
    want_marks[{t, "physics.mark", "nvtx:physics"}] = 1;
  }
  EXPECT_EQ(ranges, want);
  EXPECT_EQ(marks, want_marks);
  EXPECT_EQ(async_begin, 1);
  EXPECT_EQ(async_end, 1);
}

TEST_F(Nvtx, SigkillInsideARangeKeepsWhatWasRecordedAndMarksTheOpenRangesCut) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  Child child({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-nvtx"), "--hold"});
  ASSERT_EQ(child.read_line(), "holding\n");
  // The program is tc-profile's only child.
  const std::string task = "/proc/" + std::to_string(child.pid()) + "/task/" + std::to_string(child.pid()) + "/children";
  const pid_t program = static_cast<pid_t>(std::atol(tc::test::read_file(task).c_str()));
  ASSERT_GT(program, 0) << task;
  ASSERT_EQ(kill(program, SIGKILL), 0);
  Exit e = child.wait();
  EXPECT_EQ(e.code, 128 + SIGKILL) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<Range> ranges = nvtx_ranges(*r);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].name, "held");
  EXPECT_EQ(ranges[0].depth, 0);
  EXPECT_EQ(ranges[0].dur, -1) << "cut: still open at the kill";
  EXPECT_EQ(ranges[1].name, "inner-held");
  EXPECT_EQ(ranges[1].depth, 1);
  EXPECT_EQ(ranges[1].dur, -1);
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM instants i JOIN locations l ON l.id = i.loc_id WHERE l.name = 'before-kill'"), 1);
  EXPECT_EQ(scalar(*r, "SELECT complete FROM run"), 0);
  EXPECT_EQ(scalar(*r, "SELECT exit_signal FROM run"), SIGKILL);
}

TEST_F(Nvtx, AnInjectionLibraryOfTheUsersIsLeftAloneAndSaidSo) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  const std::string theirs = dir.file("libtheir_tool.so");  // absent: NVTX then records nothing
  Exit e = tc::test::run({bin("tc-profile"), "-o", out, "--", bin("tc-test-nvtx")}, {{"NVTX_INJECTION64_PATH", theirs}});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.err.find("NVTX_INJECTION64_PATH is already set (" + theirs + "); leaving it alone"), std::string::npos) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(text(*r, "SELECT nvtx FROM run"), "user: " + theirs);
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM ranges"), 0);
}

TEST_F(Nvtx, NoNvtxRecordsNoneAndSaysSoInTheRun) {
  TempDir dir;
  const std::string out = dir.file("run.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "--no-nvtx", "-o", out, "--", bin("tc-test-nvtx")});
  ASSERT_EQ(e.code, 0) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(text(*r, "SELECT nvtx FROM run"), "off");
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM ranges"), 0);
}

TEST_F(Nvtx, TheLibraryLoadedOutsideTcProfileSaysSoInOneLineAndRecordsNothing) {
  Exit e = tc::test::run({bin("tc-test-nvtx")}, {{"NVTX_INJECTION64_PATH", std::string(TC_BINARY_DIR) + "/lib/libtc_nvtx.so"}});
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "done\n");
  EXPECT_EQ(e.err, "tc: libtc_nvtx.so was loaded outside tc-profile; NVTX is not recorded (run the program under tc-profile)\n");
}

// tc's own compiler emits NVTX (domain "tc") for a tool other than tc. The
// other tool here is libtc_nvtx under another name, so that what it captured
// can be read back from the store; under tc-profile's own injection the same
// program emits none (tc-profile records its steps already).
TEST_F(Nvtx, TcEmitsItsStepsCompilationsAndExecutionsForAnotherToolOnly) {
  TempDir dir;
  const std::string other = dir.file("libother_tool.so");
  std::filesystem::copy_file(std::string(TC_BINARY_DIR) + "/lib/libtc_nvtx.so", other);
  const std::string cache = dir.file("cache");
  const std::vector<std::pair<std::string, std::string>> env = {{"TC_CACHE_DIR", cache}, {"NVTX_INJECTION64_PATH", other}};
  const std::string out = dir.file("other.tcdb");
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-compile"), "--batches", "16,16,24"}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto count = [&](const std::string& name) {
    return scalar(*r, "SELECT count(*) FROM ranges r JOIN locations l ON l.id = r.loc_id JOIN nvtx_sites s ON s.loc_id = l.id "
                      "WHERE s.domain = 'tc' AND l.name = '" + name + "' AND r.dur >= 0");
  };
  EXPECT_EQ(count("tc.step"), scalar(*r, "SELECT count(*) FROM steps"));
  EXPECT_EQ(count("tc.compile"), scalar(*r, "SELECT count(*) FROM compilations"));
  EXPECT_EQ(count("tc.execute"), scalar(*r, "SELECT count(*) FROM executions WHERE trigger = 'mark_step'"));
  EXPECT_EQ(count("tc.step"), 3);
  // The main thread recorded into two rings (tc's, the tool's): one thread in the store.
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM threads"), scalar(*r, "SELECT count(DISTINCT tid) FROM threads"));
  EXPECT_EQ(scalar(*r, "SELECT count(DISTINCT r.utid) FROM ranges r JOIN locations l ON l.id = r.loc_id WHERE l.name = 'tc.step'"),
            scalar(*r, "SELECT count(DISTINCT utid) FROM steps"));
  EXPECT_EQ(count("tc.compile"), 2) << "batch 16, then 24";
  // The steps' payloads are their indexes.
  EXPECT_EQ(text(*r, "SELECT group_concat(arg) FROM (SELECT r.arg FROM ranges r JOIN locations l ON l.id = r.loc_id "
                     "WHERE l.name = 'tc.step' ORDER BY r.ts)"),
            "0,1,2");

  const std::string ours = dir.file("ours.tcdb");
  Exit o = tc::test::run({bin("tc-profile"), "-q", "-o", ours, "--", bin("tc-test-compile"), "--batches", "16,16,24"}, {{"TC_CACHE_DIR", cache}});
  ASSERT_EQ(o.code, 0) << o.err;
  auto q = tc::store::Reader::open(ours);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(scalar(*q, "SELECT count(*) FROM steps"), 3);
  EXPECT_EQ(scalar(*q, "SELECT count(*) FROM nvtx_sites WHERE domain = 'tc'"), 0) << "not duplicated when tc-profile is the injector";
}

}  // namespace
