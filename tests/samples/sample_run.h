// Support for the samples' end-to-end tests: run a sample under tc-profile,
// then ask its store questions.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

// With recording compiled out (TC_TRACE=OFF) the samples still run, but their
// stores hold no events: a test stops checking the store there.
#define TC_SKIP_STORE_CHECKS_WITHOUT_RECORDING() \
  if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)"

namespace tc::test {

inline bool have_fortunes() {
  return std::filesystem::exists("/usr/share/games/fortunes/computers");
}
inline constexpr const char* kNoFortunes =
    "Debian's fortunes data is missing (/usr/share/games/fortunes): install the `fortunes` package";

struct SampleRun {
  Exit exit;
  std::string store;
};

// The compiled code cache every build of the suite shares (as the compiler's
// tests do), so that only the first run pays for building the samples' graphs.
inline std::vector<std::pair<std::string, std::string>> sample_env(
    std::vector<std::pair<std::string, std::string>> env = {}) {
  env.emplace_back("TC_CACHE_DIR", TC_TEST_CACHE_DIR);
  return env;
}

// tc-profile -q -o DIR/NAME.tcdb -- tc-sample-NAME ARGS...
inline SampleRun profile_sample(const TempDir& dir, const std::string& name, const std::vector<std::string>& args,
                                std::vector<std::pair<std::string, std::string>> env = {}) {
  env = sample_env(std::move(env));
  SampleRun r;
  r.store = dir.file(name + ".tcdb");
  std::vector<std::string> argv = {bin("tc-profile"), "-q", "-o", r.store, "--", bin("tc-sample-" + name)};
  argv.insert(argv.end(), args.begin(), args.end());
  r.exit = run(argv, env);
  return r;
}

// One integer from the store; a failed query fails the test and returns -1.
inline int64_t store_i64(const std::string& store, const std::string& sql) {
  auto reader = tc::store::Reader::open(store);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return -1;
  auto v = reader->scalar_i64(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
  return v.ok() ? *v : -1;
}

// The 1-based lines of `source` that contain `marker`.
inline std::vector<int64_t> lines_marked(const std::string& source, const std::string& marker) {
  std::vector<int64_t> out;
  std::istringstream in(read_file(source));
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) out.push_back(n);
  return out;
}

inline std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

}  // namespace tc::test
