// Golden findings tests, in the manner of Perfetto's diff tests: every folder
// of tests/golden holds one or more SQL scripts (each one store), optionally
// an `args` file (tc-analyze's options and subcommand, on one line), and what
// tc-analyze prints for those stores: expected.json (--json, indented) and
// expected.txt (the text report, then its stderr and exit status). The test
// builds the stores, runs tc-analyze and fails with a unified diff on any
// difference. TC_GOLDEN_REGEN=1 writes the expected files instead
// (tests/golden/regen.sh BUILD_DIR); review that diff like code.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.h"
#include "tc/store/writer.h"

namespace fs = std::filesystem;
using tc::test::TempDir;

namespace {

const fs::path kCases = fs::path(TC_SOURCE_DIR) / "tests" / "golden";

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kCases)) {
    if (!e.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(e.path())) {
      if (f.path().extension() == ".sql") {
        names.push_back(e.path().filename().string());
        break;
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The store at `out` from the rows `sql` inserts: tc::store::Writer creates it
// (schema, version, application id), the script runs on a second connection,
// and Writer::finalize builds the derived tables and indexes as after a run.
// "" on success, else why not.
std::string build_store(const fs::path& sql, const fs::path& out) {
  auto w = tc::store::Writer::create(out.string());
  if (!w.ok()) return w.status().message();
  if (tc::Status s = (*w)->commit(); !s.ok()) return s.message();
  sqlite3* db = nullptr;
  std::string error;
  if (sqlite3_open(out.c_str(), &db) != SQLITE_OK) {
    error = sqlite3_errmsg(db);
  } else {
    char* message = nullptr;
    if (sqlite3_exec(db, slurp(sql).c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      error = sql.filename().string() + ": " + (message ? message : "error");
    }
    sqlite3_free(message);
  }
  sqlite3_close(db);
  if (!error.empty()) return error;
  tc::Status s = (*w)->finalize();
  return s.ok() ? "" : s.message();
}

// JSON indented two spaces, keys in tc-analyze's order, numbers as it wrote them.
std::string indented(const std::string& json) {
  try {
    return nlohmann::ordered_json::parse(json).dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    return "not JSON (" + std::string(e.what()) + "):\n" + json;
  }
}

// What the text form of a run says: stdout, then stderr and the exit status when there are any.
std::string transcript(const tc::test::Exit& e) {
  std::string t = e.out;
  std::istringstream err(e.err);
  for (std::string line; std::getline(err, line);) t += "stderr: " + line + "\n";
  if (e.code != 0) t += "exit status: " + std::to_string(e.code) + "\n";
  return t;
}

// Runs in `dir`, so that the stores are named as given and no temporary path reaches the output.
// TC_GOLDEN_TC_ANALYZE names another tc-analyze to run (an older build, to see what a change did).
tc::test::Exit analyze_in(const fs::path& dir, std::vector<std::string> args) {
  const char* other = std::getenv("TC_GOLDEN_TC_ANALYZE");
  args.insert(args.begin(), other && *other ? std::string(other) : tc::test::bin("tc-analyze"));
  fs::path was = fs::current_path();
  fs::current_path(dir);
  tc::test::Exit e = tc::test::run(args);
  fs::current_path(was);
  return e;
}

// Compares `actual` with the file, or writes it under TC_GOLDEN_REGEN.
void check(const fs::path& expected, const std::string& actual, const fs::path& scratch) {
  const char* regen = std::getenv("TC_GOLDEN_REGEN");
  if (regen && *regen && std::string(regen) != "0") {
    std::ofstream(expected, std::ios::binary) << actual;
    return;
  }
  if (fs::exists(expected) && slurp(expected) == actual) return;
  fs::path got = scratch / ("actual." + expected.filename().string());
  std::ofstream(got, std::ios::binary) << actual;
  tc::test::Exit diff = tc::test::run({"diff", "-u", fs::exists(expected) ? expected.string() : "/dev/null", got.string()});
  ADD_FAILURE() << expected.string() << " differs from what tc-analyze printed (TC_GOLDEN_REGEN=1 rewrites it; see tests/golden/README.md):\n"
                << diff.out;
}

class Golden : public testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesExpected) {
  const fs::path dir = kCases / GetParam();
  TempDir tmp;
  std::vector<fs::path> scripts;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".sql") scripts.push_back(f.path());
  std::sort(scripts.begin(), scripts.end());
  std::vector<std::string> args;
  if (fs::exists(dir / "args")) {
    std::istringstream in(slurp(dir / "args"));
    for (std::string a; in >> a;) args.push_back(a);
  }
  for (const fs::path& sql : scripts) {
    std::string store = sql.stem().string() + ".tcdb";
    std::string error = build_store(sql, tmp.path() / store);
    ASSERT_EQ(error, "") << sql;
    args.push_back(store);
  }
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  tc::test::Exit json = analyze_in(tmp.path(), json_args);
  check(dir / "expected.json", indented(json.out), tmp.path());
  check(dir / "expected.txt", transcript(analyze_in(tmp.path(), args)), tmp.path());
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, testing::ValuesIn(case_names()), [](const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

}  // namespace
