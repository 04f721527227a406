// tc-bench-compiler: training-step time of tc (compiled and eager) against
// libtorch, JAX and torch 2.15 (eager and torch.compile, with
// --torch-python), in one harness run that prints one table per model; with
// --neighbour busy, the contention table (each contender alone and beside a
// process spinning on one core). Under each table's title, the CPU it ran on:
// model, ISA, the product kernel (TC_GEMM) and the load average.
//
// Each contender runs in a child process of this harness with the thread
// settings it is measured under (they are printed in the table): a library's
// thread pools are fixed when it loads, so they cannot share one process.
// Rounds interleave the contenders (tc, tc eager, libtorch, JAX, tc, ...) so a
// noisy neighbour hits them alike; the table shows the median over rounds of
// each round's median step time.
//
// The models (same shapes, same optimizer, fp32, no dropout):
//   mlp          784-512-512-10, ReLU, batch 128, cross-entropy, SGD lr 0.01
//   transformer  one post-norm encoder layer (d 128, 4 heads, ff 512, ReLU),
//                batch 16, sequence 64, mean-pooled, linear head to 10
//                classes, cross-entropy, SGD lr 0.01
// "first step" is the wall time of the first training step from a cold code
// cache: tracing plus compilation plus one execution (tc: passes, codegen,
// g++ build; JAX: jit trace and XLA compile). --cold-start prints that first
// step instead, every round from an empty cache, with tiered builds off and on
// (TC_TIERED), and the time to step 10 and to the last.
#include "busy_neighbour.h"

#include <CLI/CLI.hpp>
#include <tc/tc.h>

#include "backend/cpu/gemm.h"  // compiler/src: the CPU line of each table

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#ifdef TC_BENCH_TORCH
#include <torch/torch.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// What one child reports: first-step time, the median of the timed steps, and
// the loss before and after (a contender that does not learn is not measured).
// step_max_ms and step_mean_ms show the spikes a median hides (the
// contention table); a peer that does not print them leaves them NaN.
// to10_ms and total_ms: wall time from the first step's start to the end of
// the 10th step and of the last (the cold-start table).
struct ChildResult {
  double first_ms = NAN, step_ms = NAN, step_max_ms = NAN, step_mean_ms = NAN, loss_first = NAN, loss_last = NAN;
  double to10_ms = NAN, total_ms = NAN;
};

void print_result(const ChildResult& r) {
  std::printf("RESULT first_ms=%.3f step_ms=%.4f step_max_ms=%.4f step_mean_ms=%.4f loss_first=%.6f loss_last=%.6f to10_ms=%.3f "
              "total_ms=%.3f\n",
              r.first_ms, r.step_ms, r.step_max_ms, r.step_mean_ms, r.loss_first, r.loss_last, r.to10_ms, r.total_ms);
}

bool parse_result(const std::string& out, ChildResult& r) {
  auto at = out.rfind("RESULT ");
  if (at == std::string::npos) return false;
  std::istringstream is(out.substr(at + 7));
  std::string kv;
  std::map<std::string, double> m;
  while (is >> kv) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) m[kv.substr(0, eq)] = std::strtod(kv.c_str() + eq + 1, nullptr);
  }
  if (!m.count("step_ms")) return false;
  r.first_ms = m["first_ms"];
  r.step_ms = m["step_ms"];
  r.step_max_ms = m.count("step_max_ms") ? m["step_max_ms"] : NAN;
  r.step_mean_ms = m.count("step_mean_ms") ? m["step_mean_ms"] : NAN;
  r.loss_first = m["loss_first"];
  r.loss_last = m["loss_last"];
  r.to10_ms = m.count("to10_ms") ? m["to10_ms"] : NAN;
  r.total_ms = m.count("total_ms") ? m["total_ms"] : NAN;
  return true;
}

// Seeded data shared by every contender (the JAX peer draws its own with the
// same shapes; only shapes matter for time).
struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
};
Data make_data(std::size_t n_x, std::size_t n_y, int classes) {
  Data d;
  std::mt19937_64 g(7);
  std::normal_distribution<float> nd(0, 1);
  d.x.resize(n_x);
  for (auto& v : d.x) v = nd(g);
  d.y.resize(n_y);
  for (auto& v : d.y) v = static_cast<int32_t>(g() % static_cast<uint64_t>(classes));
  return d;
}

constexpr int64_t kMlpBatch = 128, kMlpIn = 784, kMlpHidden = 512, kClasses = 10;
constexpr int64_t kTfBatch = 16, kTfDim = 128, kTfHeads = 4, kTfFf = 512;
constexpr double kLr = 0.01;
int64_t kTfSeq = 64;  // --seq

// ---- tc ---------------------------------------------------------------------------

template <typename StepFn>
ChildResult time_steps(int steps, StepFn&& step) {
  ChildResult r;
  auto t0 = Clock::now();
  r.loss_first = step();
  r.first_ms = ms_since(t0);
  std::vector<double> times;
  float loss = r.loss_first;
  for (int i = 0; i < steps; ++i) {
    auto t = Clock::now();
    loss = step();
    times.push_back(ms_since(t));
    if (i == 8) r.to10_ms = ms_since(t0);
  }
  r.total_ms = ms_since(t0);
  r.step_ms = median(times);
  r.step_max_ms = *std::max_element(times.begin(), times.end());
  double sum = 0;
  for (double t : times) sum += t;
  r.step_mean_ms = sum / static_cast<double>(times.size());
  r.loss_last = loss;
  return r;
}

ChildResult run_tc(const std::string& model, bool eager, int steps) {
  tc::set_eager(eager);
  if (model == "mlp") {
    Data d = make_data(kMlpBatch * kMlpIn, kMlpBatch, kClasses);
    tc::nn::Sequential net{tc::nn::Linear(kMlpIn, kMlpHidden, true, 1), tc::nn::ReLU(),
                           tc::nn::Linear(kMlpHidden, kMlpHidden, true, 2), tc::nn::ReLU(),
                           tc::nn::Linear(kMlpHidden, kClasses, true, 3)};
    auto params = net.parameters();
    tc::optim::SGD opt(params, {.lr = kLr});
    return time_steps(steps, [&] {
      auto x = tc::from_host(d.x, {kMlpBatch, kMlpIn}, "x");
      auto y = tc::from_host(d.y, {kMlpBatch}, "y");
      auto loss = tc::nn::cross_entropy(net(x), y);
      opt.step(tc::grad(loss, params));
      tc::mark_step();
      return loss.item();
    });
  }
  Data d = make_data(kTfBatch * kTfSeq * kTfDim, kTfBatch, kClasses);
  tc::nn::TransformerEncoderLayer layer(kTfDim, kTfHeads, kTfFf, 0.0, uint64_t{5});
  tc::nn::Linear head(kTfDim, kClasses, true, 6);
  auto params = layer.parameters();
  for (auto& p : head.parameters()) params.push_back(p);
  tc::optim::SGD opt(params, {.lr = kLr});
  return time_steps(steps, [&] {
    auto x = tc::from_host(d.x, {kTfBatch, kTfSeq, kTfDim}, "x");
    auto y = tc::from_host(d.y, {kTfBatch}, "y");
    auto h = layer.encode(x, tc::Tensor{});
    auto loss = tc::nn::cross_entropy(head(tc::mean(h, {1})), y);
    opt.step(tc::grad(loss, params));
    tc::mark_step();
    return loss.item();
  });
}

// ---- libtorch ---------------------------------------------------------------------

#ifdef TC_BENCH_TORCH
ChildResult run_torch(const std::string& model, int steps) {
  torch::manual_seed(1);
  if (model == "mlp") {
    Data d = make_data(kMlpBatch * kMlpIn, kMlpBatch, kClasses);
    auto x = torch::from_blob(d.x.data(), {kMlpBatch, kMlpIn}, torch::kFloat32).clone();
    auto y = torch::from_blob(d.y.data(), {kMlpBatch}, torch::kInt32).to(torch::kInt64);
    torch::nn::Sequential net(torch::nn::Linear(kMlpIn, kMlpHidden), torch::nn::ReLU(),
                              torch::nn::Linear(kMlpHidden, kMlpHidden), torch::nn::ReLU(),
                              torch::nn::Linear(kMlpHidden, kClasses));
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(kLr));
    return time_steps(steps, [&] {
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      opt.step();
      return loss.item<float>();
    });
  }
  Data d = make_data(kTfBatch * kTfSeq * kTfDim, kTfBatch, kClasses);
  auto x = torch::from_blob(d.x.data(), {kTfBatch, kTfSeq, kTfDim}, torch::kFloat32).clone();
  auto y = torch::from_blob(d.y.data(), {kTfBatch}, torch::kInt32).to(torch::kInt64);
  // batch_first is not in 1.13's C++ options: the layer takes [seq, batch, dim].
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(kTfDim, kTfHeads).dim_feedforward(kTfFf).dropout(0.0));
  torch::nn::Linear head(kTfDim, kClasses);
  std::vector<torch::Tensor> params = layer->parameters();
  for (auto& p : head->parameters()) params.push_back(p);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(kLr));
  auto xt = x.transpose(0, 1).contiguous();
  return time_steps(steps, [&] {
    opt.zero_grad();
    auto h = layer->forward(xt);  // [seq, batch, dim]
    auto loss = torch::nn::functional::cross_entropy(head->forward(h.mean(0)), y);
    loss.backward();
    opt.step();
    return loss.item<float>();
  });
}
#endif

// ---- the harness --------------------------------------------------------------------

struct Contender {
  std::string name, threads;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string cold_cache = {};  // a tc code cache emptied before round 1: its first step builds from nothing
};

// Runs argv with env added; returns its stdout (stderr passes through).
bool run_child(const Contender& c, std::string& out) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    for (auto& [k, v] : c.env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (auto& a : c.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "tc-bench-compiler: cannot run %s\n", args[0]);
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "tc-bench-compiler" : p.string();
}

// The line under each table's title: which CPU, ISA and product kernel (TC_GEMM reaches the children too), and the load.
void print_machine() {
  double load[3] = {NAN, NAN, NAN};
  if (::getloadavg(load, 3) != 3) load[0] = load[1] = load[2] = NAN;
  std::printf("on %s; load average %.2f %.2f %.2f\n", tc::detail::cpu::machine_line().c_str(), load[0], load[1], load[2]);
}

std::string fmt(double v, const char* f = "%.2f") {
  if (std::isnan(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// The contention table: every round, each contender once alone and once
// beside a busy neighbour (alternating, so slow drift hits both alike).
// Columns: medians over rounds of each run's median step, the largest step
// of any busy run, the mean of the busy runs' mean steps, and the ratios the
// targets are stated in (busy median / quiet median, busy max / busy median);
// then the floor a fair scheduler puts under tc's busy step.
// --cold-start: every round, each tc contender from an empty code cache
// (rounds interleaved): the first step, the time to the 10th and to the last,
// and the median step, each the median over rounds (first step: min and max too).
int cold_start_table(const std::string& model, const std::vector<Contender>& cs, int rounds, int steps) {
  int failures = 0;
  std::vector<std::vector<ChildResult>> res(cs.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < cs.size(); ++i) {
      if (cs[i].cold_cache.empty()) continue;
      std::filesystem::remove_all(cs[i].cold_cache);
      std::string out;
      ChildResult cr;
      if (!run_child(cs[i], out) || !parse_result(out, cr)) {
        std::fprintf(stderr, "tc-bench-compiler: %s failed on %s, round %d\n", cs[i].name.c_str(), model.c_str(), r + 1);
        ++failures;
        continue;
      }
      res[i].push_back(cr);
    }
  std::printf("\n%s: cold start, median over %d rounds from an empty code cache (ms)\n", model.c_str(), rounds);
  print_machine();
  std::printf("%-24s %10s %8s %8s %12s %12s %10s %12s\n", "contender", "first", "min", "max", "to step 10",
              ("to step " + std::to_string(steps + 1)).c_str(), "ms/step", "loss 0 -> N");
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (cs[i].cold_cache.empty() || res[i].empty()) continue;
    auto col = [&](double ChildResult::*f) {
      std::vector<double> v;
      for (auto& c : res[i]) v.push_back(c.*f);
      return v;
    };
    std::vector<double> first = col(&ChildResult::first_ms);
    std::string loss = fmt(res[i][0].loss_first, "%.3f") + " -> " + fmt(res[i][0].loss_last, "%.3f");
    std::printf("%-24s %10s %8s %8s %12s %12s %10s %12s\n", cs[i].name.c_str(), fmt(median(first), "%.0f").c_str(),
                fmt(*std::min_element(first.begin(), first.end()), "%.0f").c_str(),
                fmt(*std::max_element(first.begin(), first.end()), "%.0f").c_str(), fmt(median(col(&ChildResult::to10_ms)), "%.0f").c_str(),
                fmt(median(col(&ChildResult::total_ms)), "%.0f").c_str(), fmt(median(col(&ChildResult::step_ms)), "%.3f").c_str(),
                loss.c_str());
  }
  for (const Contender& c : cs)
    if (!c.cold_cache.empty()) std::filesystem::remove_all(c.cold_cache);
  return failures;
}

int contention_table(const std::string& model, const std::vector<Contender>& cs, int rounds, int steps) {
  int failures = 0;
  std::vector<std::vector<ChildResult>> quiet(cs.size()), busy(cs.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < cs.size(); ++i) {
      for (int b = 0; b < 2; ++b) {
        pid_t n = b ? tc_bench::start_busy_neighbour() : -1;
        std::string out;
        ChildResult cr;
        bool ok = run_child(cs[i], out) && parse_result(out, cr);
        tc_bench::stop_busy_neighbour(n);
        if (!ok) {
          std::fprintf(stderr, "tc-bench-compiler: %s (%s) failed on %s, round %d%s\n", cs[i].name.c_str(), cs[i].threads.c_str(),
                       model.c_str(), r + 1, b ? ", busy" : "");
          ++failures;
          continue;
        }
        (b ? busy : quiet)[i].push_back(cr);
      }
    }
  }
  std::printf("\n%s: ms per training step alone and beside one busy process (while true) on %ld cores, %d rounds of %d steps\n",
              model.c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), rounds, steps);
  print_machine();
  std::printf("%-16s %-18s %10s %10s %10s %10s %10s %12s %14s\n", "contender", "threads", "quiet", "quiet max", "busy",
              "busy mean", "busy max", "busy/quiet", "max/busy med");
  std::map<std::string, double> quiet_median;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    std::vector<double> q, qmax, bm, bmean;
    double bmax = NAN;
    for (auto& c : quiet[i]) q.push_back(c.step_ms), qmax.push_back(c.step_max_ms);
    for (auto& c : busy[i]) {
      bm.push_back(c.step_ms);
      bmean.push_back(c.step_mean_ms);
      if (std::isnan(bmax) || c.step_max_ms > bmax) bmax = c.step_max_ms;
    }
    double qm = median(q), bmed = median(bm);
    double qmx = qmax.empty() ? NAN : *std::max_element(qmax.begin(), qmax.end());
    std::printf("%-16s %-18s %10s %10s %10s %10s %10s %12s %14s\n", cs[i].name.c_str(), cs[i].threads.c_str(),
                fmt(qm, "%.3f").c_str(), fmt(qmx, "%.3f").c_str(), fmt(bmed, "%.3f").c_str(), fmt(median(bmean), "%.3f").c_str(),
                fmt(bmax, "%.3f").c_str(), fmt(bmed / qm, "%.2fx").c_str(), fmt(bmax / bmed, "%.2fx").c_str());
    quiet_median[cs[i].name] = qm;
  }
  // With one spinner, a fair scheduler gives tc's n threads on n cores n * n / (n + 1)
  // cores, so its busy step is at least the one-thread step times (n + 1) / n^2.
  const double n = static_cast<double>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (quiet_median.count("tc compiled") && quiet_median.count("tc 1 thread") && n > 1) {
    const double t1 = quiet_median["tc 1 thread"], tn = quiet_median["tc compiled"];
    std::printf("fair-share floor of tc compiled beside the spinner: %.3f ms = %.2fx its quiet step (one thread %.3f ms, "
                "%.2fx slower than %g)\n",
                t1 * (n + 1) / (n * n), t1 * (n + 1) / (n * n) / tn, t1, t1 / tn, n);
  }
  std::fflush(stdout);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::string child, model_opt = "both", jax_python, torch_python, cache_dir, baseline, neighbour;
  int rounds = 5, steps = 30;
  int64_t seq = 64;
  bool no_torch = false, recording = false, no_torch_compile = false, cold_start = false;
  CLI::App app{"Training-step time of tc (compiled, eager) vs libtorch and JAX jit on the CPU: an MLP\n"
               "784-512-512-10 (batch 128) and a Transformer encoder layer (batch 16, seq 64, d 128),\n"
               "SGD, fp32. Each contender runs in its own child process with the thread settings shown;\n"
               "rounds interleave the contenders. Prints one table per model.",
               "tc-bench-compiler"};
  app.add_option("--model", model_opt, "mlp, transformer or both")->check(CLI::IsMember({"mlp", "transformer", "both"}))->capture_default_str();
  app.add_option("--rounds", rounds, "Rounds (each contender runs once per round)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--steps", steps, "Timed steps per round, after the first")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--jax-python", jax_python,
                 "Python with jax installed (runs bench/jax_peer.py); empty: no JAX column")->capture_default_str();
  app.add_option("--torch-python", torch_python,
                 "Python with torch installed (runs bench/torch_peer.py): adds torch eager and torch.compile (Inductor); "
                 "empty: no such columns")->capture_default_str();
  app.add_option("--seq", seq, "Sequence length of the Transformer layer")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--neighbour", neighbour,
                 "busy: the contention table instead: each contender runs every round once alone and once beside a "
                 "process spinning on one core (while true), and the table shows the quiet and busy medians, the busy "
                 "max step and their ratios; tc also runs on one thread, for the floor a fair scheduler puts under "
                 "its busy step")
      ->check(CLI::IsMember({"busy"}));
  app.add_flag("--cold-start", cold_start,
               "The cold-start table instead: tc with TC_TIERED=0 and =1 (and --baseline), each round from an empty code "
               "cache: first step, time to step 10 and to the last, step time");
  app.add_flag("--no-torch", no_torch, "Leave libtorch out");
  app.add_flag("--no-torch-compile", no_torch_compile,
               "With --torch-python: torch eager only, without torch.compile (whose compilation takes most of a round)");
  app.add_flag("--recording", recording,
               "Add tc compiled while recording into a store (TC_PROFILE: every kernel timed): what profiling costs a step");
  app.add_option("--baseline", baseline,
                 "Another build's tc-bench-compiler: its tc compiled runs as one more contender (before/after a change, "
                 "in one run)");
  app.add_option("--child", child, "(internal) run one contender: tc, tc-eager, torch")->group("");
  app.add_option("--cache-dir", cache_dir, "(internal) tc code cache of the child")->group("");
  CLI11_PARSE(app, argc, argv);
  kTfSeq = seq;

  if (!child.empty()) {
    try {
      if (child == "tc" || child == "tc-eager") {
        print_result(run_tc(model_opt, child == "tc-eager", steps));
        return 0;
      }
#ifdef TC_BENCH_TORCH
      if (child == "torch") {
        print_result(run_torch(model_opt, steps));
        return 0;
      }
#endif
      std::fprintf(stderr, "tc-bench-compiler: unknown contender %s\n", child.c_str());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tc-bench-compiler: %s: %s\n", child.c_str(), e.what());
      return 1;
    }
  }

  namespace fs = std::filesystem;
  fs::path cold = fs::temp_directory_path() / ("tc-bench-cache-" + std::to_string(::getpid()));
  std::string self = self_exe();
  std::string jax_script = fs::path(TC_BENCH_SOURCE_DIR) / "jax_peer.py";
  std::string torch_script = fs::path(TC_BENCH_SOURCE_DIR) / "torch_peer.py";
  std::vector<std::string> models = model_opt == "both" ? std::vector<std::string>{"mlp", "transformer"}
                                                        : std::vector<std::string>{model_opt};
  bool have_torch = false;
#ifdef TC_BENCH_TORCH
  have_torch = !no_torch;
#endif
  if (!have_torch && !no_torch)
    std::fprintf(stderr, "tc-bench-compiler: built without libtorch (install libtorch-dev and reconfigure): no libtorch column\n");

  int failures = 0;
  for (const std::string& model : models) {
    std::vector<Contender> cs;
    std::string st = std::to_string(steps), sq = std::to_string(seq);
    // tc: OpenMP for its kernels and OpenBLAS's own threads for sgemm, 2 each (one runs at a time).
    cs.push_back({"tc compiled", "pool 2, BLAS 2", {self, "--child", "tc", "--model", model, "--steps", st, "--seq", sq},
                  {{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}, {"TC_CACHE_DIR", cold.string()}},
                  cold.string()});
    // Beside a neighbour, tc on one thread too: the fair-share floor of the busy step (contention_table).
    if (!neighbour.empty())
      cs.push_back({"tc 1 thread", "pool 1", {self, "--child", "tc", "--model", model, "--steps", st, "--seq", sq},
                    {{"TC_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}, {"TC_CACHE_DIR", cold.string()}}});
    cs.push_back({"tc eager", "OMP 2, BLAS 2", {self, "--child", "tc-eager", "--model", model, "--steps", st, "--seq", sq},
                  {{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}}});
    if (have_torch) {
      cs.push_back({"libtorch 1.13", "OMP 2, BLAS 1", {self, "--child", "torch", "--model", model, "--steps", st, "--seq", sq},
                    {{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "1"}}});
      cs.push_back({"libtorch 1.13", "OMP 2, BLAS 2", {self, "--child", "torch", "--model", model, "--steps", st, "--seq", sq},
                    {{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}}});
    }
    if (recording) {
      std::string store = (fs::temp_directory_path() / ("tc-bench-recording-" + std::to_string(::getpid()) + ".tcdb")).string();
      cs.push_back({"tc recording", "OMP 2, BLAS 2", {self, "--child", "tc", "--model", model, "--steps", st, "--seq", sq},
                    {{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}, {"TC_CACHE_DIR", cold.string()}, {"TC_PROFILE", store},
                     {"TC_PROFILE_QUIET", "1"}}});
    }
    if (!baseline.empty()) {
      std::string base_cold = cold.string() + "-baseline";
      // An older harness may not know --seq: passed only when it is not the default.
    std::vector<std::string> base_argv = {baseline, "--child", "tc", "--model", model, "--steps", st};
    if (seq != 64) base_argv.insert(base_argv.end(), {"--seq", sq});
    cs.push_back({"tc baseline", "its own 2, BLAS 2", base_argv,
                    {{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}, {"TC_CACHE_DIR", base_cold}}, base_cold});
    }
    if (!jax_python.empty())
      cs.push_back({"JAX jit", "XLA CPU, 2 cores", {jax_python, jax_script, "--model", model, "--steps", st, "--seq", sq},
                    {{"XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true"}, {"JAX_PLATFORMS", "cpu"}}});
    if (!torch_python.empty()) {
      // torch's own intra-op pool (OpenMP), 2 threads; Inductor builds its C++ with g++ into its own cache.
      std::string inductor_cache = cold.string() + "-inductor";
      cs.push_back({"torch eager", "OMP 2", {torch_python, torch_script, "--model", model, "--steps", st, "--seq", sq},
                    {{"OMP_NUM_THREADS", "2"}}});
      if (!no_torch_compile)
        cs.push_back({"torch.compile", "OMP 2, inductor",
                      {torch_python, torch_script, "--model", model, "--steps", st, "--seq", sq, "--compile"},
                      {{"OMP_NUM_THREADS", "2"}, {"TORCHINDUCTOR_CACHE_DIR", inductor_cache}}, inductor_cache});
    }
    if (cold_start) {
      // Tiers off (the build before them) and on, each with a cache of its own.
      cs[0].name = "tc, TC_TIERED=0";
      cs[0].env.push_back({"TC_TIERED", "0"});
      Contender on = cs[0];
      on.name = "tc, TC_TIERED=1";
      on.env.back().second = "1";
      on.cold_cache += "-tiered";
      for (auto& [k, v] : on.env)
        if (k == "TC_CACHE_DIR") v = on.cold_cache;
      cs.insert(cs.begin() + 1, on);
      failures += cold_start_table(model, cs, rounds, steps);
      continue;
    }
    if (!neighbour.empty()) {
      failures += contention_table(model, cs, rounds, steps);
      for (const Contender& c : cs)
        if (!c.cold_cache.empty()) std::filesystem::remove_all(c.cold_cache);
      continue;
    }

    std::vector<std::vector<ChildResult>> res(cs.size());
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t i = 0; i < cs.size(); ++i) {
        if (r == 0 && !cs[i].cold_cache.empty()) fs::remove_all(cs[i].cold_cache);  // tc's first step of the run compiles from nothing
        std::string out;
        ChildResult cr;
        if (!run_child(cs[i], out) || !parse_result(out, cr)) {
          std::fprintf(stderr, "tc-bench-compiler: %s (%s) failed on %s, round %d\n", cs[i].name.c_str(),
                       cs[i].threads.c_str(), model.c_str(), r + 1);
          ++failures;
          continue;
        }
        res[i].push_back(cr);
      }
    }
    for (const Contender& c : cs)
      if (!c.cold_cache.empty()) fs::remove_all(c.cold_cache);

    // Reference: libtorch as the issue prescribes it (BLAS 1), else eager tc.
    std::size_t ref = have_torch ? 2 : 1;
    double ref_ms = NAN;
    if (ref < res.size()) {
      std::vector<double> v;
      for (auto& c : res[ref]) v.push_back(c.step_ms);
      ref_ms = median(v);
    }
    std::printf("\n%s%s: median ms per training step over %d rounds of %d steps (ratio: vs %s)\n", model.c_str(),
                model == "transformer" ? (" seq " + std::to_string(seq)).c_str() : "", rounds, steps,
                ref < cs.size() ? (cs[ref].name + ", " + cs[ref].threads).c_str() : "-");
    print_machine();
    std::printf("%-16s %-18s %10s %8s %10s %10s %14s %12s\n", "contender", "threads", "ms/step", "ratio", "min", "max",
                "first step ms", "loss 0 -> N");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      std::vector<double> v;
      for (auto& c : res[i]) v.push_back(c.step_ms);
      double med = median(v);
      double lo = v.empty() ? NAN : *std::min_element(v.begin(), v.end());
      double hi = v.empty() ? NAN : *std::max_element(v.begin(), v.end());
      // First step: tc compiled's from the cold first round; others' (JAX compiles every process) the median.
      std::vector<double> f;
      for (auto& c : res[i]) f.push_back(c.first_ms);
      double first = !cs[i].cold_cache.empty() ? (res[i].empty() ? NAN : res[i][0].first_ms) : median(f);
      std::string loss = res[i].empty() ? "-" : fmt(res[i][0].loss_first, "%.3f") + " -> " + fmt(res[i][0].loss_last, "%.3f");
      std::printf("%-16s %-18s %10s %8s %10s %10s %14s %12s\n", cs[i].name.c_str(), cs[i].threads.c_str(), fmt(med, "%.3f").c_str(),
                  fmt(med / ref_ms, "%.2fx").c_str(), fmt(lo, "%.3f").c_str(), fmt(hi, "%.3f").c_str(), fmt(first, "%.0f").c_str(),
                  loss.c_str());
    }
    for (std::size_t i = 0; i < cs.size(); ++i) {
      if (cs[i].cold_cache.empty() || res[i].empty()) continue;
      std::vector<double> warm;
      for (std::size_t r = 1; r < res[i].size(); ++r) warm.push_back(res[i][r].first_ms);
      std::printf("%s first step: %s ms from a cold code cache (g++ build), %s ms with the disk cache warm\n",
                  cs[i].name.c_str(), fmt(res[i][0].first_ms, "%.0f").c_str(), fmt(median(warm), "%.0f").c_str());
    }
  }
  std::fflush(stdout);
  return failures ? 1 : 0;
}
