// libFuzzer target: a mutated store must give a Status or a report, never a
// crash, a hang or a sanitizer report. Seeds: real stores (scripts/fuzz.sh).
#include <cstdint>
#include <cstdio>
#include <string>

#include "input_file.h"
#include "tc/analysis/export.h"
#include "tc/analysis/report.h"
#include "tc/store/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = tc::fuzz::input_dir();
  const std::string path = tc::fuzz::write_input("input.tcdb", data, size);
  auto reader = tc::store::Reader::open(path);
  if (reader.ok()) {
    auto report = tc::analysis::analyze(*reader);
    if (report.ok()) (void)tc::analysis::to_json(*report);
    (void)tc::analysis::export_chrome(*reader, dir + "/trace.json");
  }
  std::remove(path.c_str());
  return 0;
}
