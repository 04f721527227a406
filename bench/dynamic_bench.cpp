// tc-bench-dynamic: what automatic dynamic dims (issue 31) cost and save, on
// the outside program: a Transformer classifier (embedding,
// positions, one post-norm encoder layer d 64, 4 heads, ff 128, key-padding
// mask, mean pooling, AdamW) whose sequence length takes 24 values in 48
// steps, batch 16. Each mode runs in its own process from an empty code
// cache (--cache-root): TC_DYNAMIC=auto (the default) and TC_DYNAMIC=off,
// each with TC_TIERED=0 (a build blocks its step) and 1 (the default).
//
// Rows: compilations and the time they took (compilations table: passes,
// codegen, build), wall time of the 48 steps; in auto, the time a step at a
// length the run has not seen yet takes beyond a step at a seen one once the
// dim is dynamic (the miss, the family check, arena growth: "time to a new
// size"; and by pairs: a new length, then the same one again), and the
// dynamic step against the static step at length 64,
// measured interleaved (20 rounds, medians).
#include <CLI/CLI.hpp>
#include <tc/tc.h>

#include "compile.h"  // compiler/src: prefer_dynamic_for_bench
#include "events.h"   // compiler/src: compilations as they happen

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Compilations that blocked a step, and tier-ups (TC_TIERED: the optimized
// build of a graph whose first steps ran on the eager executor, built on a
// thread beside the steps).
struct Count : tc::events::TestObserver {
  int n = 0, tier_ups = 0;
  double ms = 0, tier_up_ms = 0;
  void compilation(const tc::events::CompilationRecord& c) override {
    const double t = static_cast<double>(c.passes_ns + c.codegen_ns + c.build_ns) / 1e6;
    if (c.trigger == "tier_up") ++tier_ups, tier_up_ms += t;
    else ++n, ms += t;
  }
};

constexpr int64_t kB = 16, kD = 64, kV = 1000, kP = 160, kC = 4;

struct Model {
  tc::nn::Embedding tokens{kV, kD, 1}, positions{kP, kD, 2};
  tc::nn::TransformerEncoderLayer layer{kD, 4, 128, 0.0, 3};
  tc::nn::Linear head{kD, kC, true, 4};
  std::vector<tc::Tensor> params;
  std::unique_ptr<tc::optim::AdamW> opt;
  Model() {
    params = tokens.parameters();
    for (auto* m : std::initializer_list<tc::nn::Module*>{&positions, &layer, &head})
      for (const auto& p : m->parameters()) params.push_back(p);
    opt = std::make_unique<tc::optim::AdamW>(params, tc::optim::AdamWOptions{.lr = 1e-3});
  }
  // One training step at `len`; returns its wall time in ms.
  double step(int64_t len, int salt) {
    auto t0 = Clock::now();
    std::vector<int32_t> ids(static_cast<std::size_t>(kB * len)), labels(kB);
    for (int64_t i = 0; i < kB * len; ++i) ids[static_cast<std::size_t>(i)] = static_cast<int32_t>(1 + (i * 7 + salt) % (kV - 1));
    for (int64_t b = 0; b < kB; ++b) labels[static_cast<std::size_t>(b)] = static_cast<int32_t>((b + salt) % kC);
    tc::Tensor x_ids = tc::from_host(ids, {kB, len}, "input_ids");
    tc::Tensor pad = x_ids < 1;
    tc::Tensor x = layer.encode(tokens(x_ids) + positions(tc::arange(len, tc::i32)) * 0.1, pad);
    tc::Tensor keep = tc::cast(tc::logical_not(pad), tc::f32);
    tc::Tensor pooled = tc::sum(x * tc::unsqueeze(keep, -1), {1}) / tc::sum(keep, {1}, true);
    tc::Tensor loss = tc::nn::cross_entropy(head(pooled), tc::from_host(labels, {kB}, "labels"));
    opt->step(tc::grad(loss, params));
    tc::mark_step();
    return ms_since(t0);
  }
};

int child(const std::string& mode) {
  Model m;
  Count count;
  tc::events::set_test_observer(&count);
  std::vector<int64_t> lengths;
  for (int s = 0; s < 48; ++s) lengths.push_back(16 + 5 * ((s * 7) % 24));
  std::set<int64_t> seen;
  std::vector<double> fresh, again;  // after the dynamic compile: new lengths, seen lengths
  int compiled_at = -1;
  auto t0 = Clock::now();
  for (int s = 0; s < 48; ++s) {
    const int before = count.n;
    const double ms = m.step(lengths[static_cast<std::size_t>(s)], s);
    const bool is_new = seen.insert(lengths[static_cast<std::size_t>(s)]).second;
    if (count.n > before) compiled_at = s;
    else if (compiled_at >= 0) (is_new ? fresh : again).push_back(ms);
  }
  const double wall = ms_since(t0);
  std::printf("%s compilations %d compile_ms %.0f tier_ups %d tier_up_ms %.0f wall_ms %.0f", mode.c_str(), count.n, count.ms, count.tier_ups,
              count.tier_up_ms, wall);
  if (mode == "auto") {
    // The rows below compare built code: every build finished and swapped in.
    tc::detail::wait_for_tier_ups();
    // Length 64 static too (TC_DYNAMIC=off compiles it), then interleaved.
    ::setenv("TC_DYNAMIC", "off", 1);
    m.step(64, 100);
    tc::detail::wait_for_tier_ups();
    m.step(64, 101);  // the built code takes over at a step boundary
    ::setenv("TC_DYNAMIC", "auto", 1);
    std::vector<double> st, dy;
    for (int r = 0; r < 20; ++r) {
      tc::detail::prefer_dynamic_for_bench(false);
      st.push_back(m.step(64, 200 + r));
      tc::detail::prefer_dynamic_for_bench(true);
      dy.push_back(m.step(64, 300 + r));
    }
    tc::detail::prefer_dynamic_for_bench(false);
    // Time to a new size: lengths the run never had, each step followed by
    // one more at the same length; the difference is what the new size
    // cost. Below the largest length so far (18..36, even), and above it
    // (140..158: the arena grows every time).
    std::vector<double> extra, grown;
    const int before = count.n;
    for (int64_t len = 18; len <= 36; len += 2) {
      const double first = m.step(len, 400 + static_cast<int>(len));
      extra.push_back(first - m.step(len, 500 + static_cast<int>(len)));
    }
    for (int64_t len = 140; len < 160; len += 2) {
      const double first = m.step(len, 400 + static_cast<int>(len));
      grown.push_back(first - m.step(len, 500 + static_cast<int>(len)));
    }
    std::printf(" new_size_ms %.3f seen_size_ms %.3f (%zu and %zu steps) new_size_extra_ms %.3f grown_size_extra_ms %.3f"
                " (10 lengths each, %d compilations) static64_ms %.3f dynamic64_ms %.3f",
                median(fresh), median(again), fresh.size(), again.size(), median(extra), median(grown), count.n - before, median(st),
                median(dy));
  }
  std::printf("\n");
  tc::events::set_test_observer(nullptr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tc-bench-dynamic: automatic dynamic dims against one graph per length (issue 31)"};
  std::string mode, cache_root = "/tmp/tc-bench-dynamic";
  app.add_option("--child", mode, "run one mode here: auto or off");
  app.add_option("--cache-root", cache_root, "each mode builds into an empty DIR/MODE")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!mode.empty()) return child(mode);
  // Untiered first (each compilation's build blocks its step: the issue's
  // comparison of compilations and compile time), then the defaults.
  for (const char* tiered : {"0", "1"}) {
    for (const char* m : {"auto", "off"}) {
      const std::string dir = cache_root + "/" + m;
      std::filesystem::remove_all(dir);
      std::printf("TC_TIERED=%s ", tiered);
      std::fflush(stdout);
      const std::string cmd = "TC_TIERED=" + std::string(tiered) + " TC_DYNAMIC=" + std::string(m) + " TC_CACHE_DIR=" + dir + " " + argv[0] + " --child " + m;
      if (std::system(cmd.c_str()) != 0) return 1;
    }
  }
  return 0;
}
