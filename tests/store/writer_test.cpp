#include "tc/store/writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "store_test_util.h"
#include "tc/store/reader.h"

namespace tc::store {
namespace {

using testing::exists;
using testing::expect_one_line_naming;
using testing::ScratchDir;

TEST(store_writer, RoundTripsExactValues) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.status().message();
    Writer& wr = **w;
    ASSERT_TRUE(wr.row(schema::run)
                    .i64(1).text("0.1.0").text(R"(["train","--steps","3"])").text("/home/u").text("host-1")
                    .text("in-process").text("tsc").i64(1'000'000'000).null().i64(1'700'000'000'123'456'789)
                    .null().i64(9).i64(0).i64(6).i64(2).text("no device: cudaGetDeviceCount error 35")
                    .null().null().null().insert().ok());
    ASSERT_TRUE(wr.row(schema::run_env).null().text("TC_EAGER").text("1").insert().ok());
    ASSERT_TRUE(wr.row(schema::strings).i64(42).text("input_ids 'quoted' \xc3\xa9").insert().ok());
    ASSERT_TRUE(wr.row(schema::locations).i64(7).text("train.step").text("train.cpp").text("main").i64(12).insert().ok());
    ASSERT_TRUE(wr.row(schema::processes).i64(1).i64(4242).text("train").i64(1'000'000'000).null().insert().ok());
    ASSERT_TRUE(wr.row(schema::threads).i64(1).i64(1).i64(4243).text("main").insert().ok());
    auto ranges = wr.row(schema::ranges);  // one Row, reused
    ASSERT_TRUE(ranges.null().i64(1).i64(1'000'000'100).i64(500).i64(0).i64(7).i64(-3).insert().ok());
    ASSERT_TRUE(ranges.null().i64(1).i64(1'000'000'200).i64(-1).i64(1).i64(7).i64(INT64_MAX).insert().ok());
    ASSERT_TRUE(wr.row(schema::instants).null().i64(1).i64(1'000'000'300).i64(7).i64(42).insert().ok());
    ASSERT_TRUE(wr.row(schema::counters).null().i64(1).i64(1'000'000'400).i64(7).f64(0.1).insert().ok());
    ASSERT_TRUE(wr.row(schema::dropped).null().i64(1).null().i64(2).text("no free ring").insert().ok());
    // INSERT OR REPLACE: the run row is rewritten when the run ends.
    ASSERT_TRUE(wr.row(schema::run)
                    .i64(1).text("0.1.0").text(R"(["train","--steps","3"])").text("/home/u").text("host-1")
                    .text("in-process").text("tsc").i64(1'000'000'000).i64(2'000'000'000).i64(1'700'000'000'123'456'789)
                    .i64(0).null().i64(1).i64(6).i64(2).text("no device: cudaGetDeviceCount error 35")
                    .text("train_step").text("tc").text("tc").insert().ok());
    EXPECT_EQ(wr.rows_written(), 12);
    Status s = wr.finalize();
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_FALSE(exists(path + "-wal"));
  EXPECT_FALSE(exists(path + "-shm"));

  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->schema_version(), kSchemaVersion);
  EXPECT_EQ(*r->scalar_i64("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(*r->scalar_i64("PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM run"), 1);

  auto run = r->query("SELECT command, end_ts, start_unix_ns, exit_code, exit_signal, complete, cuda, step_range, nvtx FROM run");
  ASSERT_TRUE(run.next()) << run.status().message();
  EXPECT_EQ(run.text(0), R"(["train","--steps","3"])");
  EXPECT_EQ(run.i64(1), 2'000'000'000);
  EXPECT_EQ(run.i64(2), 1'700'000'000'123'456'789);
  EXPECT_EQ(run.i64(3), 0);
  EXPECT_TRUE(run.is_null(4));
  EXPECT_EQ(run.i64(5), 1);
  EXPECT_EQ(run.text(6), "no device: cudaGetDeviceCount error 35");
  EXPECT_EQ(run.text(7), "train_step");
  EXPECT_EQ(run.text(8), "tc");
  EXPECT_FALSE(run.next());
  EXPECT_TRUE(run.status().ok());

  auto q = r->query("SELECT id, ts, dur, depth, arg FROM ranges ORDER BY id");
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.i64(0), 1);
  EXPECT_EQ(q.i64(1), 1'000'000'100);
  EXPECT_EQ(q.i64(2), 500);
  EXPECT_EQ(q.i64(4), -3);
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.i64(0), 2);
  EXPECT_EQ(q.i64(2), -1);
  EXPECT_EQ(q.i64(3), 1);
  EXPECT_EQ(q.i64(4), INT64_MAX);
  EXPECT_FALSE(q.next());

  auto s = r->query("SELECT value FROM strings WHERE id = 42");
  ASSERT_TRUE(s.next());
  EXPECT_EQ(s.text(0), "input_ids 'quoted' \xc3\xa9");
  auto c = r->query("SELECT value, typeof(value) FROM counters");
  ASSERT_TRUE(c.next());
  EXPECT_EQ(c.f64(0), 0.1);
  EXPECT_EQ(c.text(1), "real");
  auto d = r->query("SELECT utid, count, reason FROM dropped");
  ASSERT_TRUE(d.next());
  EXPECT_TRUE(d.is_null(0));
  EXPECT_EQ(d.i64(1), 2);
  EXPECT_EQ(d.text(2), "no free ring");
  EXPECT_EQ(*r->scalar_i64("SELECT arg FROM instants WHERE loc_id = 7"), 42);
  EXPECT_EQ(*r->scalar_i64("SELECT line FROM locations WHERE name = 'train.step'"), 12);
  EXPECT_EQ(*r->scalar_i64("SELECT tid FROM threads JOIN processes USING (upid) WHERE pid = 4242"), 4243);
}

TEST(store_writer, RefusesExistingPathUnlessOverwrite) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_bytes(path, "precious");
  auto w = Writer::create(path);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kAlreadyExists);
  expect_one_line_naming(w.status(), path);
  EXPECT_EQ(testing::read_bytes(path), "precious");

  auto o = Writer::create(path, {.overwrite = true});
  ASSERT_TRUE(o.ok()) << o.status().message();
  ASSERT_TRUE((*o)->finalize().ok());
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM ranges"), 0);
}

TEST(store_writer, BadDirectoryIsIoError) {
  ScratchDir dir;
  testing::write_bytes(dir.path("file"), "x");
  std::filesystem::create_directory(dir.path("subdir"));
  const std::string paths[] = {
      dir.path("file/run.tcdb"),          // parent is a regular file
      dir.path("missing/run.tcdb"),       // parent does not exist
      dir.path("file/deeper/run.tcdb"),   // an ancestor is a regular file
  };
  for (const std::string& path : paths) {
    auto w = Writer::create(path);
    ASSERT_FALSE(w.ok()) << path;
    EXPECT_EQ(w.status().code(), StatusCode::kIoError) << w.status().message();
    expect_one_line_naming(w.status(), path);
  }
  auto d = Writer::create(dir.path("subdir"), {.overwrite = true});  // never removes a directory
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kIoError);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path("subdir")));
}

TEST(store_writer, WrongValueCountIsAnErrorNotACrash) {
  ScratchDir dir;
  auto w = Writer::create(dir.path("run.tcdb"));
  ASSERT_TRUE(w.ok());
  auto row = (*w)->row(schema::instants);
  Status few = row.null().i64(1).i64(2).insert();
  EXPECT_EQ(few.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(few.message().find("instants"), std::string::npos) << few.message();
  Status many = row.null().i64(1).i64(2).i64(3).i64(4).i64(5).i64(6).insert();
  EXPECT_EQ(many.code(), StatusCode::kInvalidArgument);
  Status mismatch = row.text("not an id").i64(1).i64(2).i64(3).i64(4).insert();  // text into INTEGER PRIMARY KEY
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument) << mismatch.message();
  expect_one_line_naming(mismatch, dir.path("run.tcdb"));
  EXPECT_TRUE(row.null().i64(1).i64(2).i64(3).i64(4).insert().ok());  // the writer goes on
  EXPECT_EQ((*w)->rows_written(), 1);
  ASSERT_TRUE((*w)->finalize().ok());
  EXPECT_FALSE((*w)->row(schema::instants).null().i64(1).i64(2).i64(3).i64(4).insert().ok());  // after finalize
  EXPECT_EQ(*Reader::open(dir.path("run.tcdb"))->scalar_i64("SELECT count(*) FROM instants"), 1);
}

TEST(store_writer, CommitMakesRowsVisibleToReaders) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  auto w = Writer::create(path, {.rows_per_transaction = 10});
  ASSERT_TRUE(w.ok());
  auto row = (*w)->row(schema::instants);
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(row.null().i64(1).i64(i).i64(2).i64(3).insert().ok());
  {
    auto r = Reader::open(path);  // the live store, with its -wal file
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM instants"), 20);  // two automatic commits
  }
  ASSERT_TRUE((*w)->commit().ok());
  {
    auto r = Reader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM instants"), 25);
  }
  ASSERT_TRUE((*w)->finalize().ok());
  EXPECT_FALSE(exists(path + "-wal"));
}

TEST(store_writer, DestructorWithoutFinalizeLeavesAValidStore) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->row(schema::strings).i64(1).text("kept").insert().ok());
  }
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM strings WHERE value = 'kept'"), 1);
}

// The schema goes into the main file before WAL mode starts: a copy of the
// main file alone, taken after rows were committed (to the WAL) and before
// any checkpoint, is a store of this version with every table, empty.
TEST(store_writer, TheMainFileAloneIsAStoreBeforeAnyCheckpoint) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb"), alone = dir.path("alone.tcdb");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_TRUE((*w)->row(schema::strings).i64(1).text("in the wal").insert().ok());
  ASSERT_TRUE((*w)->commit().ok());
  ASSERT_TRUE(exists(path + "-wal"));
  testing::write_bytes(alone, testing::read_bytes(path));
  auto r = Reader::open(alone);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->schema_version(), kSchemaVersion);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM sqlite_schema WHERE type = 'table'"),
            static_cast<int64_t>(schema::all_tables().size()));
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM strings"), 0);
}

// finalize() leaves one file in rollback mode (header bytes 18 and 19 are 1;
// 2 would be WAL, which makes every reader create -wal and -shm files beside
// it), with nothing beside it and every row in it.
TEST(store_writer, FinalizeLeavesOneFileOutOfWalMode) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_sample_store(path, 100);
  const std::string bytes = testing::read_bytes(path);
  ASSERT_GT(bytes.size(), 100u);
  EXPECT_EQ(bytes.substr(0, 16), std::string("SQLite format 3\0", 16));
  EXPECT_EQ(static_cast<int>(bytes[18]), 1) << "write version: still WAL";
  EXPECT_EQ(static_cast<int>(bytes[19]), 1) << "read version: still WAL";
  for (const char* side : {"-wal", "-shm", "-journal", "-reserve"}) EXPECT_FALSE(exists(path + side)) << side;
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM ranges"), 100);
  auto q = r->query("PRAGMA integrity_check");
  ASSERT_TRUE(q.next()) << q.status().message();
  EXPECT_EQ(q.text(0), "ok");
}

// A file size limit (ulimit -f) makes writes fail the way a full disk does,
// without filling one. Runs in a child so the limit stays there.
TEST(store_writer, WriteFailureIsOneLineIoError) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    Status s;
    {
      auto w = Writer::create(path, {.rows_per_transaction = 1000});
      s = w.status();
      if (w.ok()) {
        auto row = (*w)->row(schema::ranges);
        for (int i = 0; i < 1'000'000 && s.ok(); ++i) s = row.null().i64(1).i64(i).i64(i).i64(0).i64(1).i64(i).insert();
        if (s.ok()) s = (*w)->finalize();
        Status again = row.null().i64(1).i64(0).i64(0).i64(0).i64(1).i64(0).insert();
        if (again.code() != s.code()) s = Status(StatusCode::kInternal, "error did not stick: " + again.message());
      }
    }
    std::string out = std::to_string(static_cast<int>(s.code())) + " " + s.message();
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  ASSERT_TRUE(WIFEXITED(wstatus));
  const size_t space = out.find(' ');
  ASSERT_NE(space, std::string::npos) << out;
  EXPECT_EQ(std::stoi(out.substr(0, space)), static_cast<int>(StatusCode::kIoError)) << out;
  expect_one_line_naming(Status(StatusCode::kIoError, out.substr(space + 1)), path);
  std::printf("  message: %s\n", out.substr(space + 1).c_str());
}

TEST(store_writer, FinalizeWithAReaderOpenIsNotAnError) {
  // The sqlite3 shell or a viewer holding the store open pins its WAL: that
  // made finalize() wait out the busy timeout twice and fail, although every
  // row had been committed. Now the store stays valid in WAL mode.
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  auto row = (*w)->row(schema::instants);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(row.null().i64(1).i64(i).i64(2).i64(3).insert().ok());
  ASSERT_TRUE((*w)->commit().ok());
  {
    auto r = Reader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto q = r->query("SELECT ts FROM instants ORDER BY ts");
    ASSERT_TRUE(q.next());  // a read transaction stays open
    Status s = (*w)->finalize();
    EXPECT_TRUE(s.ok()) << s.message();
    int n = 1;
    while (q.next()) ++n;
    EXPECT_EQ(n, 100);
  }
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM instants"), 100);
  EXPECT_FALSE(exists(path + "-reserve"));
}

TEST(store_writer, AStoreRemovedWhileWrittenSaysSoInOneLine) {
  // The message used to be about "leaving WAL mode".
  ScratchDir dir;
  std::filesystem::create_directory(dir.path("out"));
  const std::string path = dir.path("out/run.tcdb");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->row(schema::strings).i64(1).text("x").insert().ok());
  ASSERT_TRUE((*w)->commit().ok());
  std::filesystem::remove_all(dir.path("out"));
  Status s = (*w)->finalize();
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("removed while it was written"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("WAL"), std::string::npos) << s.message();
  expect_one_line_naming(s, path);
}

// After a full disk, recover() keeps every committed row and makes room for
// a last small transaction (the reserve file's space).
TEST(store_writer, AfterAFullDiskRecoverKeepsCommittedRowsAndTakesALastOne) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{2 << 20, 2 << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string out;
    {
      auto w = Writer::create(path, {.rows_per_transaction = 1000});
      Status s = w.status();
      int64_t i = 0;
      if (w.ok()) {
        auto row = (*w)->row(schema::ranges);
        for (; i < 1'000'000 && s.ok(); ++i) s = row.null().i64(1).i64(i).i64(i).i64(0).i64(1).i64(i).insert();
        int64_t committed = (*w)->rows_committed(schema::ranges);
        Status r = (*w)->recover();
        if (r.ok()) r = (*w)->row(schema::dropped).null().null().null().i64(i - committed).text("disk full").insert();
        if (r.ok()) r = (*w)->commit();
        if (r.ok()) r = (*w)->close();
        out = std::to_string(committed) + " " + (r.ok() ? "ok" : r.message());
      } else {
        out = "0 " + s.message();
      }
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  ASSERT_TRUE(WIFEXITED(wstatus));
  const size_t space = out.find(' ');
  ASSERT_NE(space, std::string::npos) << out;
  EXPECT_EQ(out.substr(space + 1), "ok");
  int64_t committed = std::stoll(out.substr(0, space));
  EXPECT_GT(committed, 10'000) << "what fitted was kept";
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM ranges"), committed);
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM dropped WHERE reason = 'disk full' AND count > 0"), 1);
}

}  // namespace
}  // namespace tc::store
