// What the live framework tests share (torch_compile_python_test.cpp,
// jax_python_test.cpp, xla_python_test.cpp): the venv's interpreter that
// scripts/test.sh makes, a skip (or a failure when TC_REQUIRE_PYTHON_PEERS=1)
// when it lacks the framework, a sample's line by its text, the "shapes: ..."
// line the samples print with --print-shapes, and tc-analyze's findings of a
// kind (and its JSON, and the evidence of a kind's one finding).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/json.h"
#include "support/process.h"
#include "tc/trace/trace.h"

namespace tc::test::python_sample {

// $ENV_OVERRIDE if set, else TC_SOURCE_DIR/VENV/bin/python.
inline std::string python(const char* env_override, const char* venv) {
  if (const char* p = std::getenv(env_override); p && *p) return p;
  return std::string(TC_SOURCE_DIR) + "/" + venv + "/bin/python";
}

// Empty when `py` can import `module` (with `env`), else why not.
inline std::string lacks(const std::string& py, const std::string& module,
                         const std::vector<std::pair<std::string, std::string>>& env = {}) {
  if (!std::filesystem::exists(py)) return py + " does not exist";
  if (tc::test::run({py, "-c", "import " + module}, env).code != 0) return py + " lacks " + module;
  return "";
}

// The 1-based line of `file` that contains `text`, or -1.
inline int line_of(const std::string& file, const std::string& text) {
  std::ifstream in(file);
  int n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    if (l.find(text) != std::string::npos) return n;
  }
  return -1;
}

// "shapes: 8x39 8x40 ... 4x93" in a sample's output: (rows, length) per step;
// empty when there is no such line.
inline std::vector<std::pair<int64_t, int64_t>> shapes(const std::string& out) {
  std::vector<std::pair<int64_t, int64_t>> r;
  size_t at = out.find("shapes: ");
  if (at == std::string::npos) return r;
  std::istringstream in(out.substr(at + 8, out.find('\n', at) - at - 8));
  for (std::string s; in >> s;) r.emplace_back(std::stoll(s.substr(0, s.find('x'))), std::stoll(s.substr(s.find('x') + 1)));
  return r;
}

// "KEY BATCH BYTES" in a script's output (tests/python/*_memory.py: xla_peak,
// tensors): BYTES for that batch, or -1.
inline double per_batch(const std::string& out, const std::string& key, int64_t batch) {
  std::istringstream in(out);
  for (std::string w; in >> w;) {
    int64_t b = 0;
    double bytes = 0;
    if (w == key && in >> b >> bytes && b == batch) return bytes;
  }
  return -1;
}

inline std::vector<const JsonValue*> findings(const JsonValue& j, const std::string& kind) {
  std::vector<const JsonValue*> out;
  for (const JsonValue& f : j["findings"].a)
    if (f["kind"].s == kind) out.push_back(&f);
  return out;
}

// `tc-analyze STORE --json EXTRA...`, parsed; a failed run is a test failure.
inline JsonValue analyze_json(const std::string& store, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> cmd = {bin("tc-analyze"), store, "--json"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  Exit a = run(cmd);
  EXPECT_EQ(a.code, 0) << a.err;
  return JsonParser(a.out).parse();
}

// The evidence of the one finding of `kind` in tc-analyze's JSON `j`; an
// empty value, and a test failure, when there is not exactly one.
inline JsonValue only_evidence(const JsonValue& j, const std::string& kind) {
  auto f = findings(j, kind);
  EXPECT_EQ(f.size(), 1u) << "findings of kind " << kind;
  return f.size() == 1 ? (*f[0])["evidence"] : JsonValue{};
}

}  // namespace tc::test::python_sample

// Skips the test when recording is compiled out or `py` lacks `module`
// (`how` says how to get it); fails instead under TC_REQUIRE_PYTHON_PEERS=1.
#define TC_REQUIRE_PYTHON_PEER(py, module, env, how)                                               \
  do {                                                                                             \
    if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";       \
    const std::string why_ = tc::test::python_sample::lacks(py, module, env);                      \
    if (!why_.empty()) {                                                                           \
      const char* require_ = std::getenv("TC_REQUIRE_PYTHON_PEERS");                               \
      if (require_ && std::string(require_) == "1") FAIL() << why_ << "; " << how;                 \
      GTEST_SKIP() << why_ << " (" << how << ")";                                                  \
    }                                                                                              \
  } while (0)
