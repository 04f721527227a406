// tc-analyze's text output: the tables and findings a person reads (--json
// prints the analysis library's JSON instead). Text from the store goes
// through shown(): a name with an escape sequence in it must not drive the
// terminal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tc/analysis/job.h"
#include "tc/analysis/kernels.h"
#include "tc/analysis/ranges.h"
#include "tc/analysis/report.h"
#include "tc/store/reader.h"

namespace tc::cli {

struct Style {
  bool color = false;
  const char* on(analysis::Severity s) const;
  const char* bold() const { return color ? "\033[1m" : ""; }
  const char* off() const { return color ? "\033[0m" : ""; }
};

std::string shown(std::string_view text);
std::string secs(double s);
// "exited 0", "killed by signal 9", "end unknown".
std::string ending(const analysis::Report& r);
// "N ranges (C cut) of N names on N threads; N marks of N names".
std::string range_totals(const analysis::RangeTable& t);

// The range, mark and thread tables, at most `top` rows of each; `more` is how to see the rest.
void print_ranges(const analysis::RangeTable& t, size_t top, const char* more);
// The kernel table (tc-analyze kernels) of `store`, at most `top` rows, then the GPU's share.
// `why_none`: why the store has no kernel timings, shown when it has none.
void print_kernels(const std::string& store, const analysis::KernelTable& t, bool by_site, int top, const std::string& why_none);
// The report's first lines: the run, where its wall time went, steps, memory.
void print_summary(const std::string& path, const analysis::Report& r, const Style& st);
// The findings whose kind starts with `prefix` ("" for all).
void print_findings(const analysis::Report& r, const Style& st, const std::string& prefix);
// tc-analyze suggest: the fixes that save something, most costly first.
void print_suggestions(const analysis::Report& r);
// The tables of recompiles, evals and memory; a failed query (a damaged
// store) ends the table and is returned.
Status print_compilations(const store::Reader& reader, int64_t t0);
Status print_evals(const store::Reader& reader);
Status print_memory(const store::Reader& reader);

// Several stores of one job (tc/analysis/job.h): the ranks, then one list of
// findings of the kinds that start with one of `prefixes` (all when empty).
void print_job(const analysis::JobReport& job, const Style& st);
void print_job_findings(const analysis::JobReport& job, const Style& st, const std::vector<std::string>& prefixes);
void print_job_suggestions(const analysis::JobReport& job);

}  // namespace tc::cli
