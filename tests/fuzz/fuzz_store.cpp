// libFuzzer target: a mutated store must give a Status or a report, never a
// crash, a hang or a sanitizer report. Seeds: real stores (scripts/fuzz.sh).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tc/analysis/export.h"
#include "tc/analysis/report.h"
#include "tc/store/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/tc-fuzz-XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  const std::string path = dir + "/input.tcdb";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  auto reader = tc::store::Reader::open(path);
  if (reader.ok()) {
    auto report = tc::analysis::analyze(*reader);
    if (report.ok()) (void)tc::analysis::to_json(*report);
    (void)tc::analysis::export_chrome(*reader, dir + "/trace.json");
  }
  std::remove(path.c_str());
  return 0;
}
