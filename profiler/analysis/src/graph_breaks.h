// torch.compile graph breaks: the remedy for each kind of break (torch's
// graph-break registry codes, docs/findings.md's table) and the
// explicit_evaluation finding of one break site.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tc/analysis/report.h"
#include "tc/store/reader.h"

namespace tc::analysis {

// What to change for one kind of graph break. `fix` may hold "{where}", the
// user's file:line, and "{kind}", the row's kind.
struct BreakRemedy {
  std::string_view codes;    // registry codes it covers, space-separated ("GB0170 GB0035"); "" for a fallback
  std::string_view gb_type;  // the registry's Gb_type (what torch's reason line starts with), to match a log without codes
  std::string_view kind;     // the explicit_evaluations kind it covers when no code matches ("item", "print", ...); "" for any
  std::string_view name;     // short name, e.g. "data-dependent branch"
  std::string_view fix;
};

// The remedy for a break: by its registry code (any of `codes`, comma-separated),
// then by its reason's start, then by its kind; the generic one when nothing matches.
// A print (kind "print") is matched before the builtin-call code it shares with others.
const BreakRemedy& break_remedy(std::string_view codes, std::string_view reason, std::string_view kinds);

// One break site, as the explicit_evaluations rows of one location give it.
struct BreakSite {
  std::string file, function, kinds, reason, codes;
  std::string broke_at;  // the library frames it broke in ("FILE:LINE", comma-separated); "" when in the user's own code
  int64_t line = 0, compilations = 0, first_ts = 0;
};

// Appends the explicit_evaluation finding of `site`.
void graph_break_finding(const store::Reader& r, Report& report, const BreakSite& site);

}  // namespace tc::analysis
