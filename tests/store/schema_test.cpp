#include "tc/store/json_text.h"
#include "tc/store/schema.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "store_test_util.h"
#include "tc/store/reader.h"

namespace tc::store {
namespace {

using testing::ScratchDir;

TEST(store_schema, DocsMatchTheDeclarations) {
  const std::string path = std::string(TC_SOURCE_DIR) + "/docs/schema.md";
  EXPECT_TRUE(testing::read_bytes(path) == schema_markdown())
      << path << " is stale: run `ninja schema-doc` (or tc-store-schema > docs/schema.md)";
}

TEST(store_schema, DeclarationsAreWellFormed) {
  const std::set<std::string_view> types = {"INTEGER", "REAL", "TEXT"};
  std::set<std::string_view> tables, indexes;
  for (const TableDecl* t : schema::all_tables()) {
    SCOPED_TRACE(t->name);
    EXPECT_TRUE(tables.insert(t->name).second) << "table declared twice";
    EXPECT_FALSE(t->doc.empty());
    ASSERT_FALSE(t->columns.empty());
    EXPECT_EQ(t->columns[0].type, "INTEGER") << "the first column is the INTEGER PRIMARY KEY";
    std::set<std::string_view> columns;
    for (const ColumnDecl& c : t->columns) {
      EXPECT_TRUE(columns.insert(c.name).second) << c.name << " declared twice";
      EXPECT_TRUE(types.count(c.type)) << c.name << ": " << c.type;
      EXPECT_FALSE(c.doc.empty()) << c.name;
      EXPECT_EQ(c.doc.find('\n'), std::string_view::npos) << c.name;
    }
    for (const IndexDecl& ix : t->indexes) {
      EXPECT_TRUE(indexes.insert(ix.name).second) << ix.name << " declared twice";
    }
  }
  // The foundation's tables are all there (later tables are more declarations).
  for (std::string_view name : {"run", "run_env", "strings", "locations", "processes", "threads", "ranges", "instants", "counters", "dropped"}) {
    EXPECT_TRUE(tables.count(name)) << name;
  }
}

// Ties the declarations to the file: the store has exactly the declared
// tables, columns (name, type, key) and indexes.
TEST(store_schema, StoreHasExactlyTheDeclaredTables) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_sample_store(path);
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();

  std::set<std::string> declared_tables, declared_indexes, tables, indexes;
  for (const TableDecl* t : schema::all_tables()) {
    SCOPED_TRACE(t->name);
    declared_tables.insert(std::string(t->name));
    for (const IndexDecl& ix : t->indexes) declared_indexes.insert(std::string(ix.name));

    auto q = r->query("SELECT name, type, pk FROM pragma_table_info('" + std::string(t->name) + "') ORDER BY cid");
    size_t i = 0;
    for (; q.next(); ++i) {
      ASSERT_LT(i, t->columns.size()) << "undeclared column " << q.text(0);
      EXPECT_EQ(q.text(0), t->columns[i].name);
      EXPECT_EQ(q.text(1), t->columns[i].type);
      EXPECT_EQ(q.i64(2), i == 0 ? 1 : 0) << q.text(0);
    }
    EXPECT_TRUE(q.status().ok()) << q.status().message();
    EXPECT_EQ(i, t->columns.size());

    for (const IndexDecl& ix : t->indexes) {
      std::string cols;
      auto c = r->query("SELECT name FROM pragma_index_info('" + std::string(ix.name) + "') ORDER BY seqno");
      while (c.next()) cols += (cols.empty() ? "" : ", ") + std::string(c.text(0));
      EXPECT_EQ(cols, ix.columns) << ix.name;
    }
  }
  auto q = r->query("SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'");
  while (q.next()) (q.text(0) == "table" ? tables : indexes).insert(std::string(q.text(1)));
  EXPECT_EQ(tables, declared_tables);
  EXPECT_EQ(indexes, declared_indexes);
}

// The ```sql examples in docs/schema.md run on a real store.
TEST(store_schema, DocExamplesRun) {
  ScratchDir dir;
  const std::string path = dir.path("run.tcdb");
  testing::write_sample_store(path);
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string md = schema_markdown();
  int examples = 0;
  for (size_t at = md.find("```sql\n"); at != std::string::npos; at = md.find("```sql\n", at)) {
    at += 7;
    const std::string sql = md.substr(at, md.find("```", at) - at);
    auto q = r->query(sql);
    while (q.next()) {
    }
    EXPECT_TRUE(q.status().ok()) << sql << "\n" << q.status().message();
    ++examples;
  }
  EXPECT_GE(examples, 2);
}

TEST(store_schema, CreateSqlCarriesTheDocs) {
  const std::string sql = create_table_sql(schema::ranges);
  EXPECT_EQ(sql.rfind("CREATE TABLE ranges (\n  id INTEGER PRIMARY KEY,  -- ", 0), 0u) << sql;
  EXPECT_NE(sql.find("dur INTEGER,  -- its length in ns; -1 when"), std::string::npos) << sql;
  EXPECT_EQ(create_index_sql(schema::threads, schema::threads.indexes[0]),
            "CREATE INDEX IF NOT EXISTS threads_upid ON threads (upid)");
  EXPECT_STREQ(status_code_name(StatusCode::kNewerVersion), "newer version");
}

}  // namespace
}  // namespace tc::store

namespace tc::store {
namespace {

TEST(store_json_text, CommandLinesRoundTrip) {
  const std::vector<std::string> argv = {"./train", "--name", "a \"quoted\" value", "back\\slash", "tab\tand\nnewline", std::string("ctl\x01", 4), ""};
  std::string json = json_string_array(argv);
  EXPECT_EQ(json.find('\n'), std::string::npos) << json;
  EXPECT_NE(json.find("\\u0001"), std::string::npos) << json;
  EXPECT_EQ(parse_json_string_array(json), argv);
  EXPECT_EQ(json_string_array({}), "[]");
  EXPECT_TRUE(parse_json_string_array("[]").empty());
}

}  // namespace
}  // namespace tc::store
