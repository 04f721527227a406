// libFuzzer target: the --fail-on expression parser and the JSON it feeds.
#include <cstdint>
#include <string_view>

#include "tc/analysis/fail_on.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rule = tc::analysis::parse_fail_on(text);
  if (rule.ok()) {
    tc::analysis::Report report;
    report.summary.steps = 3;
    report.run.wall_s = 1;
    (void)tc::analysis::crossed(*rule, report);
    (void)tc::analysis::to_json(report);
  }
  return 0;
}
