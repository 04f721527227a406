#include "tc/store/reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

#include "../support/downgrade.h"
#include "store_test_util.h"
#include "tc/store/writer.h"

namespace tc::store {
namespace {

using testing::exists;
using testing::expect_one_line_naming;
using testing::read_bytes;
using testing::ScratchDir;
using testing::snapshot;
using testing::write_bytes;

void write_sqlite_file(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

void patch(const std::string& path, size_t offset, const std::string& bytes) {
  std::string all = read_bytes(path);
  ASSERT_LE(offset + bytes.size(), all.size());
  all.replace(offset, bytes.size(), bytes);
  write_bytes(path, all);
}

struct BadFile {
  const char* name;
  std::function<void(const std::string& path)> make;  // nothing: the path does not exist
  StatusCode code;
  const char* says;  // part of the message
};

// The newer-version case: one version ahead of this tc.
const std::string kNewerMessage = "written by tc schema v" + std::to_string(kSchemaVersion + 1) + "; this tc reads up to v" +
                                  std::to_string(kSchemaVersion) + "; upgrade tc";

const BadFile kBadFiles[] = {
    {"missing", nullptr, StatusCode::kNotFound, "no such file"},
    {"directory", [](const std::string& p) { std::filesystem::create_directory(p); }, StatusCode::kNotAStore,
     "a directory"},
    {"empty", [](const std::string& p) { write_bytes(p, ""); }, StatusCode::kNotAStore, "an empty file"},
    {"text", [](const std::string& p) { write_bytes(p, "hello\n"); }, StatusCode::kNotAStore, "not an SQLite"},
    {"random",
     [](const std::string& p) {
       std::mt19937 gen(7);
       std::string bytes(65536, '\0');
       for (char& c : bytes) c = static_cast<char>(gen());
       write_bytes(p, bytes);
     },
     StatusCode::kNotAStore, "not an SQLite"},
    {"other_sqlite", [](const std::string& p) { write_sqlite_file(p, "CREATE TABLE t(x); INSERT INTO t VALUES (1);"); },
     StatusCode::kNotAStore, "application_id 0x00000000"},
    {"truncated_header",
     [](const std::string& p) {
       testing::write_sample_store(p);
       write_bytes(p, read_bytes(p).substr(0, 50));
     },
     StatusCode::kCorrupt, "truncated"},
    {"truncated",
     [](const std::string& p) {
       testing::write_sample_store(p, 20000);
       std::string all = read_bytes(p);
       write_bytes(p, all.substr(0, all.size() / 2));
     },
     StatusCode::kCorrupt, "truncated"},
    {"damaged_schema_page",
     [](const std::string& p) {
       testing::write_sample_store(p);
       patch(p, 100, std::string(400, '\xa5'));
     },
     StatusCode::kCorrupt, "damaged"},
    {"newer_version",
     [](const std::string& p) {
       testing::write_sample_store(p);
       patch(p, 60, std::string("\0\0\0", 3) + static_cast<char>(kSchemaVersion + 1));  // user_version: one ahead
     },
     StatusCode::kNewerVersion,
     kNewerMessage.c_str()},
    // user_version is signed: -1 is a damaged header, not "schema v4294967295".
    {"negative_version",
     [](const std::string& p) {
       testing::write_sample_store(p);
       patch(p, 60, std::string("\xff\xff\xff\xff", 4));
     },
     StatusCode::kCorrupt, "damaged store (schema version -1"},
    {"int32_min_version",
     [](const std::string& p) {
       testing::write_sample_store(p);
       patch(p, 60, std::string("\x80\0\0\0", 4));
     },
     StatusCode::kCorrupt, "damaged store (schema version -2147483648"},
};

TEST(store_reader, RefusesBadFilesWithOneLineAndWritesNothing) {
  for (const BadFile& bad : kBadFiles) {
    SCOPED_TRACE(bad.name);
    ScratchDir dir;
    const std::string path = dir.path(std::string(bad.name) + ".tcdb");
    if (bad.make) bad.make(path);
    const testing::Snapshot before = snapshot(path);

    auto r = Reader::open(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), bad.code) << status_code_name(r.status().code()) << ": " << r.status().message();
    expect_one_line_naming(r.status(), path);
    EXPECT_NE(r.status().message().find(bad.says), std::string::npos) << r.status().message();

    EXPECT_TRUE(snapshot(path) == before) << "the reader changed the file";
    for (const char* side : {"-wal", "-shm", "-journal"}) EXPECT_FALSE(exists(path + side)) << side;
  }
}

TEST(store_reader, ReadingAFinalizedStoreWritesNothing) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_sample_store(path);
  const testing::Snapshot before = snapshot(path);
  {
    auto r = Reader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->scalar_i64("SELECT sum(dur) FROM ranges"), 1000 * 1001 / 2);
  }
  EXPECT_TRUE(snapshot(path) == before);
  for (const char* side : {"-wal", "-shm", "-journal"}) EXPECT_FALSE(exists(path + side)) << side;
}

// A writer killed mid-run leaves the store with its -wal file: what it
// committed is readable, and reading changes neither file.
void write_and_die(const std::string& path, int committed_rows) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto w = Writer::create(path);
    if (!w.ok()) ::_exit(1);
    auto row = (*w)->row(schema::ranges);
    for (int i = 0; i < committed_rows; ++i) (void)row.null().i64(1).i64(i).i64(1).i64(0).i64(1).i64(0).insert();
    if (!(*w)->commit().ok()) ::_exit(2);
    for (int i = 0; i < 10; ++i) (void)row.null().i64(1).i64(i).i64(1).i64(0).i64(1).i64(0).insert();
    ::_exit(0);  // no destructor, no finalize: as if killed
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
}

TEST(store_reader, ReadsTheStoreOfAKilledWriter) {
  for (int rows : {1000, 0}) {
    SCOPED_TRACE(rows);
    ScratchDir dir;
    const std::string path = dir.path("run.tcdb");
    write_and_die(path, rows);
    ASSERT_TRUE(exists(path + "-wal"));
    const testing::Snapshot before = snapshot(path), wal_before = snapshot(path + "-wal");
    {
      auto r = Reader::open(path);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r->schema_version(), kSchemaVersion);
      EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM ranges"), rows);
    }
    EXPECT_TRUE(snapshot(path) == before) << "the reader changed the store";
    EXPECT_TRUE(snapshot(path + "-wal") == wal_before) << "the reader changed the -wal file";
  }
}

TEST(store_reader, UnreadableWalIsOneLineError) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  write_and_die(path, 1000);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  std::filesystem::create_directory(path + "-wal");  // stands in for a -wal file SQLite cannot open
  auto r = Reader::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError) << r.status().message();
  expect_one_line_naming(r.status(), path);
  EXPECT_NE(r.status().message().find(path + "-wal"), std::string::npos) << r.status().message();
  std::printf("  message: %s\n", r.status().message().c_str());
}

TEST(store_reader, QueryErrorsAreStatusesNotCrashes) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_sample_store(path, 3);
  auto opened = Reader::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Reader r = std::move(opened).value();  // movable

  auto bad = r.query("SELECT nope FROM nowhere");
  EXPECT_FALSE(bad.next());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  expect_one_line_naming(bad.status(), path);
  EXPECT_NE(bad.status().message().find("no such table: nowhere"), std::string::npos) << bad.status().message();

  auto write = r.query("DELETE FROM ranges");
  EXPECT_FALSE(write.next());
  EXPECT_EQ(write.status().code(), StatusCode::kInvalidArgument) << write.status().message();
  EXPECT_FALSE(r.query("PRAGMA user_version = 2").next());
  EXPECT_EQ(*r.scalar_i64("SELECT count(*) FROM ranges"), 3);
  EXPECT_EQ(*r.scalar_i64("PRAGMA user_version"), kSchemaVersion);

  auto two = r.query("SELECT 1; SELECT 2");
  EXPECT_FALSE(two.next());
  EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.query("SELECT 1; garbage").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*r.scalar_i64("SELECT 5; -- a trailing comment is fine\n"), 5);
  EXPECT_EQ(r.query("  ").status().code(), StatusCode::kInvalidArgument);
  auto attach = r.query("ATTACH '" + dir.path("other.db") + "' AS other");  // queries see this store only
  EXPECT_FALSE(attach.next());
  EXPECT_EQ(attach.status().code(), StatusCode::kInvalidArgument) << attach.status().message();
  EXPECT_FALSE(exists(dir.path("other.db")));

  EXPECT_EQ(r.scalar_i64("SELECT id FROM ranges WHERE id < 0").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(r.scalar_i64("SELECT NULL").ok());

  auto q = r.query("SELECT id AS n, dur * 0.5 AS half, 'x' || id AS label, NULL AS missing FROM ranges ORDER BY id");
  ASSERT_EQ(q.columns(), 4) << q.status().message();
  EXPECT_EQ(q.column_name(2), "label");
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.i64(0), 1);
  EXPECT_EQ(q.f64(1), 0.5);
  EXPECT_EQ(q.text(2), "x1");
  EXPECT_TRUE(q.is_null(3));
  EXPECT_EQ(q.text(3), "");
  Query moved = std::move(q);
  ASSERT_TRUE(moved.next());
  EXPECT_EQ(moved.i64(0), 2);
}

// #27: a sum past 64 bits over the store's own values is damage (5), not bad usage (2).
TEST(store_reader, IntegerOverflowInAQueryIsADamagedStore) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_sample_store(path, 3);
  write_sqlite_file(path, "UPDATE ranges SET dur = -9223372036854775807 - 1 WHERE id < 3");
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto q = r->query("SELECT sum(dur) FROM ranges");
  EXPECT_FALSE(q.next());
  EXPECT_EQ(q.status().code(), StatusCode::kCorrupt) << q.status().message();
  expect_one_line_naming(q.status(), path);
  EXPECT_NE(q.status().message().find("values out of range"), std::string::npos) << q.status().message();
  EXPECT_EQ(r->scalar_i64("SELECT abs(dur) FROM ranges WHERE id = 1").status().code(), StatusCode::kCorrupt);
  // Bad SQL stays bad usage.
  EXPECT_EQ(r->scalar_i64("SELECT sum(nope) FROM ranges").status().code(), StatusCode::kInvalidArgument);
}

// A store of schema v1 (before executions.execution_id) still opens; has()
// says which columns its version lacks.
TEST(store_reader, OpensAStoreOfAnOlderVersion) {
  ScratchDir dir;
  const std::string path = dir.path("v1.tcdb");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE((*w)->row(schema::executions).null().i64(1).i64(10).i64(5).i64(3).i64(0).text("mark_step").i64(8).i64(41).null().insert().ok());
    ASSERT_TRUE((*w)->finalize().ok());
  }
  ASSERT_EQ(tc::test::downgrade_store(path, 1), "");
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->schema_version(), 1);
  EXPECT_FALSE(r->has(schema::executions, "execution_id"));
  EXPECT_TRUE(r->has(schema::executions, "graph_id"));
  EXPECT_FALSE(r->has(schema::executions, "no_such_column"));
  EXPECT_EQ(*r->scalar_i64("SELECT graph_id FROM executions"), 3);
  EXPECT_FALSE(r->query("SELECT execution_id FROM executions").next());

  // The current version has it.
  const std::string now = dir.path("v2.tcdb");
  testing::write_sample_store(now, 1);
  auto r2 = Reader::open(now);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_TRUE(r2->has(schema::executions, "execution_id"));
}

// v4's store columns: a row bound up to its record's fields gets tc's values
// (every writer from before v4 binds just those); a v3 store lacks them and
// framework_imports, and still opens.
TEST(store_reader, StoreColumnsTakeTcsValuesAndAV3StoreLacksThem) {
  ScratchDir dir;
  const std::string path = dir.path("v3.tcdb");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE((*w)->row(schema::steps).null().i64(1).i64(10).i64(5).i64(0).i64(1).insert().ok());
    ASSERT_TRUE((*w)->row(schema::compilation_inputs).null().i64(1).i64(7).text("ids").i64(1).i64(8).i64(9).insert().ok());
    ASSERT_TRUE((*w)->row(schema::explicit_evaluations).null().i64(1).i64(10).i64(5).i64(0).text("item").i64(1).i64(3).i64(0).text("torch.compile")
                    .insert().ok());
    // One value too many is still refused.
    EXPECT_FALSE((*w)->row(schema::steps).null().i64(1).i64(10).i64(5).i64(0).i64(1).text("tc").text("extra").insert().ok());
    ASSERT_TRUE((*w)->finalize().ok());
  }
  {
    auto r = Reader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto q = r->query("SELECT (SELECT framework FROM steps), (SELECT dynamic FROM compilation_inputs), (SELECT framework FROM explicit_evaluations), "
                      "(SELECT reason IS NULL FROM explicit_evaluations), (SELECT count(*) FROM framework_imports)");
    ASSERT_TRUE(q.next()) << q.status().message();
    EXPECT_EQ(q.text(0), "tc");
    EXPECT_EQ(q.i64(1), 0);
    EXPECT_EQ(q.text(2), "torch.compile");
    EXPECT_EQ(q.i64(3), 1);
    EXPECT_EQ(q.i64(4), 0);
  }
  ASSERT_EQ(tc::test::downgrade_store(path, 3), "");
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->schema_version(), 3);
  EXPECT_FALSE(r->has(schema::compilations, "framework"));
  EXPECT_FALSE(r->has(schema::framework_imports, "framework"));
  EXPECT_TRUE(r->has(schema::compilations, "reason"));
  EXPECT_EQ(*r->scalar_i64("SELECT count(*) FROM steps"), 1);
}

// A column the store's own version declares must be there.
TEST(store_reader, RefusesAStoreWithoutAColumnOfItsVersion) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_sample_store(path, 1);
  ASSERT_EQ(tc::test::downgrade_store(path, 1), "");
  write_sqlite_file(path, "PRAGMA user_version = 2;");  // claims v2 without v2's column
  auto r = Reader::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << r.status().message();
  expect_one_line_naming(r.status(), path);
  EXPECT_NE(r.status().message().find("without column executions.execution_id"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tc::store
