// What tc-profile and tc-analyze share: how a command-line error is reported.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

namespace tc::cli {

constexpr int kUsage = 2;  // docs/cli.md: bad usage, for every tool

// CLI11 reports a bad option with its own exit codes (104-109) and two lines;
// the tools' contract is one line and exit 2. --help (and anything else
// CLI11 treats as success) keeps CLI11's text and exit 0.
inline int parse_error(const char* tool, const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);
  std::string what = e.what();
  for (char& c : what) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!what.empty() && what.back() == ' ') what.pop_back();
  std::fprintf(stderr, "%s: %s; see %s --help\n", tool, what.c_str(), tool);
  return kUsage;
}

}  // namespace tc::cli
