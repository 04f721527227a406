// Helpers for the framework importers' diff tests (import_test.cpp,
// jax_import_test.cpp, xla_import_test.cpp): a scratch directory, the
// imported tables as text, and the comparison with a fixture's expected.txt
// (TC_UPDATE_EXPECTED=1 rewrites it instead).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "support/json.h"
#include "tc/analysis/report.h"
#include "tc/import/import.h"
#include "tc/store/reader.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"

namespace tc::import::import_testing {

inline const std::string kFixtures = std::string(TC_SOURCE_DIR) + "/tests/fixtures/frameworks/";

// A directory of its own under the temporary directory, removed at the end.
struct Scratch {
  explicit Scratch(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::filesystem::path dir;
};

// Imports `dir` with `importer` (import_jax_log, import_xla_log) into a new
// store at `path`, graph ids from 100 and location ids from 50, with the run
// row a collector writes (so tc-analyze can read it); returns `path`. The
// run's clock pair is (start_ts, start_unix_ns), 0 and 0 unless given.
using Importer = StatusOr<ImportSummary> (*)(const std::string&, ImportTarget&, const ImportLimits&);
inline std::string import_with_run(Importer importer, const std::string& dir, const std::string& path, ImportSummary* summary = nullptr,
                                   uint64_t start_ts = 0, uint64_t start_unix_ns = 0) {
  auto w = tc::store::Writer::create(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return path;
  ImportTarget t;
  t.writer = w->get();
  t.first_graph_id = 100;
  t.first_location_id = 50;
  t.start_ts = start_ts;
  t.start_unix_ns = start_unix_ns;
  auto r = importer(dir, t, ImportLimits{});
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok() && summary) *summary = *r;
  EXPECT_TRUE((*w)->row(tc::store::schema::run).i64(1).text("0").text("[\"python\"]").text("/").text("h").text("tc-profile").text("monotonic")
                  .i64(1).i64(INT64_C(1) << 61).i64(0).i64(0).null().i64(1).i64(0).i64(0).text("").null().text("tc").null().insert().ok());
  EXPECT_TRUE((*w)->finalize().ok());
  return path;
}

inline std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Query results as text: "== TITLE" and then each row, its columns joined by " | " (NULL for null).
class Tables {
 public:
  explicit Tables(const std::string& path) : r_(tc::store::Reader::open(path)) { EXPECT_TRUE(r_.ok()) << r_.status().message(); }
  bool ok() const { return r_.ok(); }
  void dump(const std::string& title, const std::string& sql) {
    out_ += "== " + title + "\n";
    auto q = r_->query(sql);
    while (q.next()) {
      std::string line;
      for (int c = 0; c < q.columns(); ++c) line += (c ? " | " : "") + (q.is_null(c) ? std::string("NULL") : std::string(q.text(c)));
      out_ += line + "\n";
    }
    EXPECT_TRUE(q.status().ok()) << q.status().message();
  }
  const std::string& text() const { return out_; }

 private:
  decltype(tc::store::Reader::open(std::string())) r_;
  std::string out_;
};

// `got` must equal the fixture's expected.txt less its opening comment lines ('#', where its numbers come from).
inline void expect_expected(const std::string& fixture, const std::string& got) {
  const std::string expected_path = kFixtures + fixture + "/expected.txt";
  std::string expected = read(expected_path);
  std::string body, header;
  std::istringstream lines(expected);
  for (std::string l; std::getline(lines, l);) (l.starts_with("#") ? header : body) += l + "\n";
  if (const char* u = std::getenv("TC_UPDATE_EXPECTED"); u && std::string(u) == "1") {
    std::ofstream(expected_path) << header << got;
    return;
  }
  EXPECT_EQ(got, body) << "diff against " << expected_path;
}

// The truth of the bucket scripts (samples/python/xla_loader_buckets.py,
// jax_buckets.py; truth.json beside their fixtures): 11 steps; token_ids dim 1
// padded to 32 (4 steps), 64 (5) and 128 (2), so padding to 128 is 50%
// padding; a short last batch of 4 rows instead of 8. The shape findings of
// `rep` must say so: each step under the size it ran, a pad size not below the
// largest, the padding share within 5 points, every step recorded.
inline void expect_bucket_truth(const tc::analysis::Report& rep) {
  EXPECT_EQ(rep.summary.steps, 11);
  const tc::analysis::Finding* length = nullptr;
  const tc::analysis::Finding* batch = nullptr;
  for (const auto& f : rep.findings) {
    if (f.kind == "recompilation.shape_change" && f.identity.starts_with("token_ids dim 1:")) length = &f;
    // The batch's dim 0: one finding for every input of the batch (tied dims), named by the first of them.
    if (f.kind == "recompilation.shape_change" && f.identity.ends_with(" dim 0: 4 8") && f.title.find("token_ids dim 0") != std::string::npos) batch = &f;
  }
  ASSERT_NE(length, nullptr);
  EXPECT_EQ(length->identity, "token_ids dim 1: 32 64 128");
  tc::test::JsonValue ev = tc::test::JsonParser(length->evidence_json).parse();
  std::map<int64_t, int64_t> steps;
  for (const auto& v : ev["values"].a) steps[static_cast<int64_t>(v["value"].n)] = static_cast<int64_t>(v["steps"].n);
  EXPECT_EQ(steps, (std::map<int64_t, int64_t>{{32, 4}, {64, 5}, {128, 2}})) << length->evidence_json;
  EXPECT_GE(ev["pad"]["to"].n, 128) << "never below the data's largest";
  EXPECT_NEAR(ev["pad"]["padding_waste"].n, 0.5, 0.05) << "the data's padding share at 128";
  EXPECT_EQ(ev["steps_recorded"].n, 11);
  EXPECT_EQ(ev["steps_unrecorded"].n, 0);
  EXPECT_TRUE(length->suggestion.find("Pad token_ids dim 1 to 128") != std::string::npos ||
              length->suggestion.find("Bucket token_ids dim 1 as") != std::string::npos) << length->suggestion;
  std::string kinds;
  for (const auto& f : rep.findings) kinds += "\n  " + f.kind + " [" + f.identity + "] " + f.title;
  ASSERT_NE(batch, nullptr) << "the findings:" << kinds;
  EXPECT_NE(batch->suggestion.find("short last batch (4 instead of 8)"), std::string::npos) << batch->suggestion;
}

}  // namespace tc::import::import_testing
