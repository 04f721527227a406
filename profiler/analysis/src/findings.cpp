#include "findings.h"

namespace tc::analysis {

Status add_findings(const store::Reader& store, Report& report, const Options& options) {
  (void)store;
  (void)report;
  (void)options;
  return Status::Ok();
}

}  // namespace tc::analysis
