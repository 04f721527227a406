// Helpers for the store tests: a scratch directory, file snapshots, a sample store.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tc/store/reader.h"
#include "tc/store/writer.h"

namespace tc::store::testing {

// A fresh directory, removed with everything in it at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tc_store_test.XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
    EXPECT_FALSE(dir_.empty());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline bool exists(const std::string& path) { return std::filesystem::exists(path); }

// Bytes and modification time of a file, to prove that a reader wrote nothing.
struct Snapshot {
  std::string bytes;
  int64_t mtime_ns = -1;
  bool operator==(const Snapshot&) const = default;
};

inline Snapshot snapshot(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {S_ISREG(st.st_mode) ? read_bytes(path) : "", int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

// A finalized store with `ranges` rows in ranges (ts = 1000 * i, dur = i).
inline void write_sample_store(const std::string& path, int ranges = 1000) {
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto r = (*w)->row(schema::ranges);
  for (int i = 1; i <= ranges; ++i) {
    ASSERT_TRUE(r.i64(i).i64(1).i64(1000 * i).i64(i).i64(0).i64(7).i64(0).insert().ok());
  }
  Status s = (*w)->finalize();
  ASSERT_TRUE(s.ok()) << s.message();
}

// The checks every error from the store must pass.
inline void expect_one_line_naming(const Status& s, const std::string& path) {
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

}  // namespace tc::store::testing
