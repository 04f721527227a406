// What the importers' libFuzzer targets share (fuzz_torch_trace.cpp,
// fuzz_jax_log.cpp, fuzz_xla_log.cpp): the input is a log the program wrote
// (anything); imported into a store, it must give rows and counts, never a
// crash, a hang, a sanitizer report or memory past the import's bound
// (scripts/fuzz.sh: -rss_limit_mb). Every row must lie in the run and within
// the caps: a violation aborts with one line.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tc/import/import.h"
#include "tc/store/reader.h"
#include "tc/store/writer.h"

namespace tc_fuzz {

inline constexpr uint64_t kStartTs = 1'000'000'000;
inline constexpr uint64_t kEndTs = 1'100'000'000;
inline constexpr uint64_t kStartUnixNs = 1'796'149'600'000'000'000;

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_import: %s\n", what.c_str());
  std::abort();
}

inline void write_file(const std::string& path, std::string_view bytes) {
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

// A directory of its own for this process's inputs and store: in memory
// (/dev/shm) where there is one, as a store's checkpoint syncs to disk.
inline const std::string& scratch() {
  static const std::string dir = [] {
    char shm[] = "/dev/shm/tc-fuzz-import-XXXXXX";
    if (mkdtemp(shm) != nullptr) return std::string(shm);
    char tmp[] = "/tmp/tc-fuzz-import-XXXXXX";
    if (mkdtemp(tmp) == nullptr) fail("mkdtemp");
    return std::string(tmp);
  }();
  return dir;
}

using Importer = tc::StatusOr<tc::import::ImportSummary> (*)(const std::string&, tc::import::ImportTarget&, const tc::import::ImportLimits&);

// Imports `dir` into a fresh store with small limits, then checks the rows.
inline void import_and_check(Importer importer, const std::string& dir) {
  const std::string path = scratch() + "/out.tcdb";
  tc::import::ImportLimits limits;
  limits.max_line_bytes = 4096;
  limits.max_rows = 64;
  limits.max_processes = 4;
  limits.max_files = 4;
  {
    auto w = tc::store::Writer::create(path, {.overwrite = true});
    if (!w.ok()) fail(w.status().message());
    tc::import::ImportTarget t;
    t.writer = w->get();
    t.start_ts = kStartTs;
    t.end_ts = kEndTs;
    t.start_unix_ns = kStartUnixNs;
    t.utid_for = [](uint32_t pid) { return static_cast<int64_t>(pid % 5); };
    t.pid_in_run = [](uint32_t pid) { return pid % 3 != 0; };
    for (int64_t k = 1; k <= 3; ++k) t.step_ends[7].push_back(static_cast<int64_t>(kStartTs) + k * 10'000'000);
    auto s = importer(dir, t, limits);
    if (!s.ok()) fail("import: " + s.status().message());
    const int64_t cap = static_cast<int64_t>(limits.max_rows);
    if (s->compilations > cap || s->explicit_evaluations > cap || s->steps > cap) fail("a per-run cap was passed");
    if (s->files > static_cast<int64_t>(limits.max_files)) fail("more files than the cap");
    if (auto st = (*w)->finalize(); !st.ok()) fail("finalize: " + st.message());
  }
  auto r = tc::store::Reader::open(path);
  if (!r.ok()) fail("the store does not open: " + r.status().message());
  // torch's wall-clock times may step 100 ms (docs/frameworks.md#limits-of-the-import).
  const std::string lo = std::to_string(kStartTs - 100'000'000), hi = std::to_string(kEndTs + 100'000'000);
  for (const char* table : {"compilations", "explicit_evaluations", "steps"}) {
    auto q = r->query(std::string("SELECT count(*) FROM ") + table + " WHERE ts < " + lo + " OR ts + dur > " + hi + " OR dur < 0");
    if (!q.next() || q.i64(0) != 0) fail(std::string(table) + ": a row outside the run");
  }
  auto q = r->query("SELECT count(*) FROM compilation_inputs WHERE dim < 0 OR old_value < 0 OR new_value < 0");
  if (!q.next() || q.i64(0) != 0) fail("compilation_inputs: a negative dim or size");
}

// The input as the one log `file` of the directory `subdir`, imported and checked.
inline int fuzz_one(Importer importer, const char* subdir, const char* file, const uint8_t* data, size_t size) {
  const std::string dir = scratch() + "/" + subdir;
  ::mkdir(dir.c_str(), 0700);
  write_file(dir + "/" + file, std::string_view(reinterpret_cast<const char*>(data), size));
  import_and_check(importer, dir);
  return 0;
}

}  // namespace tc_fuzz
