// The framework importers under hostile logs (#27): memory bounded by the
// line at hand (measured by the process itself: ru_maxrss), work linear
// (counted: calls of the collector's callbacks, rows), caps per run, every
// value checked against the run, an unreadable directory said, and
// request_stop(). None of these assert a time.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "import_test_util.h"
#include "tc/import/import.h"
#include "tc/store/reader.h"
#include "tc/store/writer.h"

namespace fs = std::filesystem;

namespace {

using tc::import::ImportLimits;
using tc::import::ImportSummary;
using tc::import::ImportTarget;

struct Scratch : tc::import::import_testing::Scratch {
  Scratch() : tc::import::import_testing::Scratch("tc_import_bounds_test") {}
};

constexpr uint64_t kStartTs = 1'000'000'000;                    // the run's start, store time
constexpr uint64_t kStartUnixNs = 1'796'149'600'000'000'000;    // its wall clock
constexpr uint64_t kStartUs = kStartUnixNs / 1000;

// A torch trace header line of pid `pid` whose JSON is `json`.
std::string header(uint32_t pid, const std::string& json) { return "V1201 18:30:02.000000 " + std::to_string(pid) + " x.py:1] " + json + "\n"; }

// A compilation_metrics record: frame F, compile C, starting `after_us` into the run, `dur_us` long.
std::string metrics(uint32_t pid, int frame, int compile, uint64_t after_us, uint64_t dur_us, const std::string& extra = "") {
  return header(pid, "{\"compilation_metrics\": {\"compile_id\": \"" + std::to_string(frame) + "/" + std::to_string(compile) +
                         "\", \"co_name\": \"f\", \"co_filename\": \"x.py\", \"co_firstlineno\": 1, \"start_time_us\": " +
                         std::to_string(kStartUs + after_us) + ", \"duration_us\": " + std::to_string(dur_us) + extra +
                         "}, \"frame_id\": " + std::to_string(frame) + ", \"frame_compile_id\": " + std::to_string(compile) + ", \"attempt\": 0}");
}

// A graph break in frame F's first compilation at x.py:LINE.
std::string graph_break(uint32_t pid, int frame, int line) {
  return header(pid, "{\"artifact\": {\"name\": \"dynamo_graph_break_reason\", \"encoding\": \"string\"}, \"frame_id\": " + std::to_string(frame) +
                         ", \"frame_compile_id\": 0, \"attempt\": 0, \"has_payload\": \"x\"}") +
         "\tGraph break in user code at x.py:" + std::to_string(line) + "\n\tGraph Break Reason: Tensor.item()\n";
}

// A line of `bytes` bytes: `head`, then "0," repeated (a JSON array of that many small values), then `tail`.
void write_long_line(std::ofstream& out, const std::string& head, size_t bytes, const std::string& tail) {
  out << head;
  const std::string chunk = [] {
    std::string c;
    for (int i = 0; i < 32768; ++i) c += "0,";
    return c;
  }();
  size_t left = bytes - head.size() - tail.size();
  while (left > chunk.size()) {
    out << chunk;
    left -= chunk.size();
  }
  out << std::string(left, ' ') << tail << "\n";
}

int64_t max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

struct Store {
  explicit Store(const Scratch& s, const std::string& name) : path((s.dir / (name + ".tcdb")).string()) {
    auto w = tc::store::Writer::create(path);
    EXPECT_TRUE(w.ok()) << w.status().message();
    writer = std::move(*w);
    t.writer = writer.get();
    t.start_ts = kStartTs;
    t.start_unix_ns = kStartUnixNs;
    t.first_graph_id = 100;
    t.first_location_id = 50;
  }
  int64_t count(const std::string& table) {
    EXPECT_TRUE(writer->finalize().ok());
    auto r = tc::store::Reader::open(path);
    EXPECT_TRUE(r.ok());
    auto q = r->query("SELECT count(*) FROM " + table);
    return q.next() ? q.i64(0) : -1;
  }
  std::string note() {
    auto r = tc::store::Reader::open(path);
    EXPECT_TRUE(r.ok());
    auto q = r->query("SELECT coalesce(note, '') FROM framework_imports");
    return q.next() ? std::string(q.text(0)) : "(no framework_imports row)";
  }
  std::string path;
  std::unique_ptr<tc::store::Writer> writer;
  ImportTarget t;
};

// The probe: one 16 MiB JSON line (8 M tiny values) cost 2.2 GB. Now a line
// over max_line_bytes is skipped without being held, and the records
// around it are imported.
TEST(ImportBounds, LongTorchLineIsSkippedUnheld) {
  Scratch s;
  fs::create_directories(s.dir / "t");
  {
    std::ofstream out(s.dir / "t" / "trace.log");
    out << metrics(7, 0, 0, 1000, 63000);
    write_long_line(out, "V1201 18:30:02.000000 7 x.py:1] {\"str\": [", 16 << 20, "0]}");
    out << metrics(7, 1, 0, 2000, 63000);
  }
  Store st(s, "t");
  const int64_t before = max_rss_kib();
  auto r = tc::import::import_torch_trace((s.dir / "t").string(), st.t);
  const int64_t grew_mib = (max_rss_kib() - before) / 1024;
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->compilations, 2);
  EXPECT_EQ(r->too_long, 1);
  EXPECT_EQ(r->malformed, 1);
  EXPECT_LT(grew_mib, 48) << "the 16 MiB line was held, or parsed";
  EXPECT_EQ(st.count("compilations"), 2);
  EXPECT_NE(st.note().find("1 malformed line was longer than the limit of a line"), std::string::npos) << st.note();
}

TEST(ImportBounds, LongHookLinesAreSkippedUnheld) {
  Scratch s;
  fs::create_directories(s.dir / "jax");
  fs::create_directories(s.dir / "xla");
  {
    std::ofstream jax(s.dir / "jax" / "jax-7.log");
    jax << "{\"k\":\"start\",\"ts\":2000000000,\"pid\":7,\"jax\":\"0.10.2\"}\n";
    write_long_line(jax, "{\"k\":\"eval\",\"x\":[", 16 << 20, "0]}");
    jax << "{\"k\":\"eval\",\"ts\":2000000001,\"dur\":5,\"kind\":\"item\",\"file\":\"x.py\",\"line\":3}\n";
    std::ofstream xla(s.dir / "xla" / "xla-7.log");
    xla << "{\"k\":\"start\",\"ts\":2000000000,\"pid\":7,\"torch_xla\":\"2.9.0\"}\n";
    write_long_line(xla, "{\"k\":\"sync\",\"x\":[", 16 << 20, "0]}");
    xla << "{\"k\":\"sync\",\"ts\":2000000001,\"end\":2000000009,\"file\":\"x.py\",\"line\":3,\"compiles\":1,\"compile_ns\":4}\n";
  }
  Store st(s, "h");
  const int64_t before = max_rss_kib();
  auto j = tc::import::import_jax_log((s.dir / "jax").string(), st.t);
  auto x = tc::import::import_xla_log((s.dir / "xla").string(), st.t);
  const int64_t grew_mib = (max_rss_kib() - before) / 1024;
  ASSERT_TRUE(j.ok() && x.ok());
  EXPECT_EQ(j->explicit_evaluations, 1);
  EXPECT_EQ(j->too_long, 1);
  EXPECT_EQ(x->compilations, 1);
  EXPECT_EQ(x->steps, 1);
  EXPECT_EQ(x->too_long, 1);
  EXPECT_LT(grew_mib, 48) << "a 16 MiB line was held, or parsed";
}

// The probe: 160,000 graph-break records took 83 s (each compared with every
// one before it). 400,000 would take over 8 minutes that way, past ctest's
// timeout; kept in a set they are one pass (about 3 s here). The first 1,000
// are logged twice (a restart logs a break again): one row each.
TEST(ImportBounds, GraphBreaksAreDeduplicatedInOnePass) {
  Scratch s;
  fs::create_directories(s.dir / "t");
  constexpr int kBreaks = 400'000, kRepeats = 1'000;
  {
    std::ofstream out(s.dir / "t" / "trace.log");
    out << metrics(7, 0, 0, 1000, 10);
    for (int b = 0; b < kBreaks; ++b) out << graph_break(7, 0, b);
    for (int b = 0; b < kRepeats; ++b) out << graph_break(7, 0, b);
  }
  Store st(s, "t");
  ImportLimits limits;
  limits.max_rows = 1 << 20;
  auto r = tc::import::import_torch_trace((s.dir / "t").string(), st.t, limits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->records, 1 + kBreaks + kRepeats);
  EXPECT_EQ(r->malformed, 0);
  EXPECT_EQ(r->explicit_evaluations, kBreaks);
}

// The probe: 160,000 distinct pids became 160,000 processes rows (28 s, each
// new one a scan of the collector's threads). Now the collector is asked
// about a bounded number of pids, and at most max_processes are imported.
TEST(ImportBounds, ProcessesAreCappedPerRun) {
  Scratch s;
  fs::create_directories(s.dir / "t");
  constexpr int kPids = 20'000;
  {
    std::ofstream out(s.dir / "t" / "trace.log");
    for (int p = 0; p < kPids; ++p) out << metrics(static_cast<uint32_t>(1000 + p), 0, 0, 1000, 10);
  }
  Store st(s, "t");
  std::set<uint32_t> asked_utid;
  int64_t asked_in_run = 0;
  st.t.utid_for = [&](uint32_t pid) {
    asked_utid.insert(pid);
    return static_cast<int64_t>(pid);
  };
  st.t.pid_in_run = [&](uint32_t) {
    ++asked_in_run;
    return true;
  };
  ImportLimits limits;
  auto r = tc::import::import_torch_trace((s.dir / "t").string(), st.t, limits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->compilations, static_cast<int64_t>(limits.max_processes));
  EXPECT_EQ(asked_utid.size(), limits.max_processes);
  EXPECT_LE(asked_in_run, static_cast<int64_t>(4 * limits.max_processes + 64));
  EXPECT_EQ(r->over_cap, kPids - static_cast<int64_t>(limits.max_processes));
  EXPECT_NE(r->note.find("the per-run cap of 1024 processes was reached"), std::string::npos) << r->note;
}

// The probe: pid 1 in a log became a process named after init. A pid the
// collector does not know as the run's is malformed, and nothing of it is stored.
TEST(ImportBounds, PidsOutsideTheRunAreRefused) {
  Scratch s;
  fs::create_directories(s.dir / "t");
  fs::create_directories(s.dir / "jax");
  std::ofstream(s.dir / "t" / "trace.log") << metrics(1, 0, 0, 1000, 10) << graph_break(1, 0, 5) << metrics(7, 0, 0, 1000, 10)
                                           << metrics(5'000'000, 1, 0, 1000, 10);
  std::ofstream(s.dir / "jax" / "jax-1.log") << "{\"k\":\"start\",\"ts\":2000000000,\"pid\":1}\n"
                                             << "{\"k\":\"eval\",\"ts\":2000000001,\"dur\":5,\"kind\":\"item\",\"file\":\"x.py\",\"line\":3}\n";
  Store st(s, "t");
  std::set<uint32_t> asked_utid;
  st.t.utid_for = [&](uint32_t pid) {
    asked_utid.insert(pid);
    return static_cast<int64_t>(pid);
  };
  st.t.pid_in_run = [](uint32_t pid) { return pid != 1; };
  auto r = tc::import::import_torch_trace((s.dir / "t").string(), st.t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->compilations, 1);
  EXPECT_EQ(r->explicit_evaluations, 0);
  EXPECT_EQ(r->malformed, 3) << "pid 1's two records, and a pid above 2^22";
  auto j = tc::import::import_jax_log((s.dir / "jax").string(), st.t);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->explicit_evaluations, 0);
  EXPECT_EQ(j->malformed, 2);
  EXPECT_EQ(asked_utid, (std::set<uint32_t>{7}));
}

// The probes: "Compiling took 5317 s, 8405983% of 63 ms"; a dimension of
// INT64_MIN; 11-day compile times in a 41 ms run. Each is malformed, none stored.
TEST(ImportBounds, ValuesOutsideTheRunAreMalformed) {
  Scratch s;
  fs::create_directories(s.dir / "t");
  fs::create_directories(s.dir / "jax");
  fs::create_directories(s.dir / "xla");
  std::ofstream(s.dir / "t" / "trace.log")
      << metrics(7, 0, 0, 1000, 63000, ", \"backend_compile_time_s\": 5317")  // a stage longer than its compilation
      << metrics(7, 1, 0, 11ull * 86400 * 1000000, 63000)                     // starts 11 days into a 41 ms run
      << metrics(7, 2, 0, 1000, 11ull * 86400 * 1000000)                      // lasts 11 days
      << metrics(7, 3, 0, 1000, 63000, ", \"graph_op_count\": -4")
      << metrics(7, 4, 0, 1000, 30000)                                        // the one that is whole
      << header(7, "{\"chromium_event\": {}, \"frame_id\": 4, \"frame_compile_id\": 0, \"attempt\": 0, \"has_payload\": \"x\"}")
      << "\t{\"name\": \"automatic_dynamic\", \"args\": {\"name\": \"x\", \"dim_changed\": -9223372036854775808, \"cached\": \"3\", \"new\": \"4\", "
         "\"compile_id\": \"4/0\"}}\n";
  const std::string run = std::to_string(kStartTs);
  const std::string end = std::to_string(kStartTs + 41'000'000);
  std::ofstream(s.dir / "jax" / "jax-7.log")
      << "{\"k\":\"start\",\"ts\":" << run << ",\"pid\":7}\n"
      << "{\"k\":\"dur\",\"ts\":" << end << ",\"event\":\"/jax/core/compile/backend_compile_duration\",\"s\":950400,\"fun\":\"jit(f)\"}\n"
      << "{\"k\":\"eval\",\"ts\":" << end << ",\"dur\":950400000000000,\"kind\":\"item\",\"file\":\"x.py\",\"line\":3}\n"
      << "{\"k\":\"call\",\"f\":0,\"ts\":100,\"end\":200}\n"  // before the run
      << "{\"k\":\"dur\",\"ts\":" << end << ",\"event\":\"/jax/core/compile/backend_compile_duration\",\"s\":0.001,\"fun\":\"jit(f)\"}\n";
  std::ofstream(s.dir / "xla" / "xla-7.log")
      << "{\"k\":\"start\",\"ts\":" << run << ",\"pid\":7}\n"
      << "{\"k\":\"sync\",\"ts\":" << end << ",\"end\":" << end << ",\"file\":\"x.py\",\"line\":3,\"compiles\":1,\"compile_ns\":5317000000000}\n"
      << "{\"k\":\"sync\",\"ts\":" << end << ",\"end\":" << end << ",\"file\":\"x.py\",\"line\":3,\"compiles\":1000,\"compile_ns\":10}\n"
      << "{\"k\":\"input\",\"ts\":" << end << ",\"file\":\"x.py\",\"line\":3,\"name\":\"x\",\"shape\":[-9223372036854775808]}\n"
      << "{\"k\":\"sync\",\"ts\":" << end << ",\"end\":" << end << ",\"file\":\"x.py\",\"line\":3,\"compiles\":1,\"compile_ns\":10}\n";
  Store st(s, "v");
  st.t.end_ts = kStartTs + 41'000'000;
  auto t = tc::import::import_torch_trace((s.dir / "t").string(), st.t);
  auto j = tc::import::import_jax_log((s.dir / "jax").string(), st.t);
  auto x = tc::import::import_xla_log((s.dir / "xla").string(), st.t);
  ASSERT_TRUE(t.ok() && j.ok() && x.ok());
  EXPECT_EQ(t->compilations, 1);
  EXPECT_EQ(t->malformed, 5);
  EXPECT_EQ(j->compilations, 1);
  EXPECT_EQ(j->explicit_evaluations, 0);
  EXPECT_EQ(j->malformed, 3);
  EXPECT_EQ(x->compilations, 1);
  EXPECT_EQ(x->malformed, 3);
  EXPECT_EQ(st.count("compilation_inputs"), 0);
  auto r = tc::store::Reader::open(st.path);
  ASSERT_TRUE(r.ok());
  auto q = r->query("SELECT count(*) FROM compilations WHERE ts < " + run + " OR ts + dur > " + end + " OR build_ns > dur OR nodes_before < 0");
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.i64(0), 0);
}

// The fuzzer's find: a sync that began before the one before it ended, and a
// second start record after the first sync, made steps of negative length. A
// sync out of order is malformed; a step never starts after its sync.
TEST(ImportBounds, XlaStepsNeverRunBackwards) {
  Scratch s;
  fs::create_directories(s.dir / "xla");
  auto at = [](int64_t ms) { return std::to_string(kStartTs + ms * 1'000'000); };
  auto sync = [&](int64_t from, int64_t to) {
    return "{\"k\":\"sync\",\"ts\":" + at(from) + ",\"end\":" + at(to) + ",\"file\":\"x.py\",\"line\":5,\"compiles\":0,\"compile_ns\":0}\n";
  };
  std::ofstream(s.dir / "xla" / "xla-7.log") << "{\"k\":\"start\",\"ts\":" << at(0) << ",\"pid\":7}\n"
                                             << sync(1, 62) << "{\"k\":\"start\",\"ts\":" << at(70) << ",\"pid\":7}\n"
                                             << sync(2, 3)     // began before the one before ended
                                             << sync(63, 64);  // the second step
  Store st(s, "x");
  st.t.end_ts = kStartTs + 100'000'000;
  auto x = tc::import::import_xla_log((s.dir / "xla").string(), st.t);
  ASSERT_TRUE(x.ok()) << x.status().message();
  EXPECT_EQ(x->steps, 2);
  EXPECT_EQ(x->malformed, 1);
  EXPECT_EQ(st.count("steps"), 2);
  auto r = tc::store::Reader::open(st.path);
  ASSERT_TRUE(r.ok());
  auto q = r->query("SELECT min(dur), min(ts) FROM steps");
  ASSERT_TRUE(q.next());
  EXPECT_GE(q.i64(0), 0);
  EXPECT_LE(q.i64(1), static_cast<int64_t>(kStartTs) + 1'000'000) << "the first step starts at or before its sync";
}

// The probe: the row caps were per file, so many files passed them; a 250 KB
// XLA log became 2,000,000 compilations rows. Caps count every file and
// every importer of the run; one line makes a bounded number of rows.
TEST(ImportBounds, CapsArePerRun) {
  Scratch s;
  fs::create_directories(s.dir / "jax");
  fs::create_directories(s.dir / "xla");
  for (int p = 1; p <= 4; ++p) {
    std::ofstream out(s.dir / "jax" / ("jax-" + std::to_string(p) + ".log"));
    for (int i = 0; i < 10; ++i)
      out << "{\"k\":\"eval\",\"ts\":" << 2'000'000'000 + i << ",\"dur\":5,\"kind\":\"item\",\"file\":\"x.py\",\"line\":3}\n";
  }
  {
    std::ofstream out(s.dir / "xla" / "xla-9.log");
    for (int i = 0; i < 2000; ++i)
      out << "{\"k\":\"sync\",\"ts\":" << 2'000'000'000 + 2 * i << ",\"end\":" << 2'000'000'001 + 2 * i
          << ",\"file\":\"x.py\",\"line\":3,\"compiles\":1000,\"compile_ns\":1}\n";
    out << "{\"k\":\"eval\",\"ts\":2000009000,\"dur\":5,\"kind\":\"item\",\"file\":\"x.py\",\"line\":3,\"compiles\":0,\"compile_ns\":0}\n";
  }
  Store st(s, "c");
  ImportLimits limits;
  limits.max_rows = 25;
  limits.max_files = 4;
  auto j = tc::import::import_jax_log((s.dir / "jax").string(), st.t, limits);
  auto x = tc::import::import_xla_log((s.dir / "xla").string(), st.t, limits);
  ASSERT_TRUE(j.ok() && x.ok());
  EXPECT_EQ(j->files, 4);
  EXPECT_EQ(j->explicit_evaluations, 25);
  EXPECT_EQ(j->over_cap, 15);
  EXPECT_EQ(x->files, 0) << "the run's four files were the JAX logs";
  EXPECT_EQ(x->over_cap, 1);
  EXPECT_EQ(st.count("explicit_evaluations"), 25);
  // Each importer alone: a sync that counts 1000 compilations is no sync's.
  Store one(s, "one");
  auto x1 = tc::import::import_xla_log((s.dir / "xla").string(), one.t);
  ASSERT_TRUE(x1.ok());
  EXPECT_EQ(x1->compilations, 0);
  EXPECT_EQ(x1->malformed, 2000);
  EXPECT_EQ(one.count("compilations"), 0);
}

// The probe: a program that chmod 000s its log directory got no import row
// and no note. (Root reads through the mode bits: a file where the
// directory should be gives the same "cannot read" there.)
TEST(ImportBounds, UnreadableDirectoryIsSaid) {
  Scratch s;
  fs::create_directories(s.dir / "locked");
  std::ofstream(s.dir / "locked" / "jax-7.log") << "{\"k\":\"start\",\"ts\":2000000000,\"pid\":7}\n";
  ::chmod((s.dir / "locked").c_str(), 0);
  const bool root_reads = ::access((s.dir / "locked").c_str(), R_OK) == 0;
  std::ofstream(s.dir / "not-a-dir") << "x";
  const std::string dir = root_reads ? (s.dir / "not-a-dir").string() : (s.dir / "locked").string();
  Store st(s, "u");
  auto r = tc::import::import_jax_log(dir, st.t);
  ::chmod((s.dir / "locked").c_str(), 0755);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(st.count("framework_imports"), 1);
  const std::string want = "cannot read the directory " + dir + ": " + (root_reads ? "Not a directory" : "Permission denied");
  EXPECT_EQ(st.note(), want);
  EXPECT_EQ(tc::import::describe_skipped(*r), "jax log: " + want);
}

// request_stop() (tc-profile's signals after the program exited) ends an
// import at its next line; it stays requested for the process, so the test
// runs in a child.
TEST(ImportBounds, StopEndsTheImportAtTheNextLine) {
  Scratch s;
  fs::create_directories(s.dir / "t");
  {
    std::ofstream out(s.dir / "t" / "trace.log");
    for (int f = 0; f < 1000; ++f) out << metrics(7, f, 0, 1000 + f, 10);
  }
  const std::string path = (s.dir / "s.tcdb").string();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto w = tc::store::Writer::create(path);
    if (!w.ok()) ::_exit(10);
    ImportTarget t;
    t.writer = w->get();
    t.start_ts = kStartTs;
    t.start_unix_ns = kStartUnixNs;
    t.pid_in_run = [](uint32_t) {
      tc::import::request_stop();  // the signal arrives while the first record is taken, the second line read
      return true;
    };
    auto r = tc::import::import_torch_trace((s.dir / "t").string(), t);
    if (!r.ok() || !r->stopped || r->lines != 2 || r->compilations != 2) ::_exit(11);
    if (r->note.find("stopped by a signal") == std::string::npos || !(*w)->finalize().ok()) ::_exit(12);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
