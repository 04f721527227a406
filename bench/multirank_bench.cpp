// tc-bench-multirank: how long `tc-analyze` takes to merge the stores of a
// 64-rank data-parallel job, 200 k events each (12.8 M in all), and the
// memory it needs. Target: <= 5 s and <= 2 GB.
//
// Each rank store is what tc-profile under mpirun writes: a ranks row (rank,
// world 64, host, job, a clock offset of up to +-0.5 ms), run_env, 1000 steps
// of: a "step" range around "data", "forward" and "backward" (65 "layer"
// ranges each) and "optimizer"; the step's execution (10 timed kernels); an
// all_reduce_mean (seq 2s+1) whose dur is the wait for the last rank; mark_step
// with a small execution; a second all_reduce_mean (seq 2s+2); 40
// memory.live_bytes samples and 10 instants. Every rank jitters by up to
// 0.3 ms. Planted stragglers: rank 7 recompiles (input_ids dim 1 128->160 at
// step 100, 160->192 at step 500, 400 ms each), rank 23 calls item() at step
// 300 (150 ms), rank 41 executes 30 ms slower at steps 700-709.
//
//   build/bin/tc-bench-multirank [--ranks N] [--events N] [--keep DIR] [--runs N]
//
// --keep DIR writes the stores there and keeps them (a second run with the
// same DIR, N and events reuses them).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tc/store/writer.h"

namespace schema = tc::store::schema;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kMs = 1'000'000, kUs = 1'000;

void check(const tc::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "tc-bench-multirank: %s\n", s.message().c_str());
    std::exit(1);
  }
}

// A deterministic jitter in [0, span).
int64_t jitter(int64_t rank, int64_t step, int64_t salt, int64_t span) {
  uint64_t x = static_cast<uint64_t>(rank * 1000003 + step * 7919 + salt * 104729) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<int64_t>(x % static_cast<uint64_t>(span));
}

struct Plan {
  int64_t ranks = 64, steps = 1000, layers = 65;
  // Per step, on the aligned clock: the start, each rank's arrival at the two all-reduces, and when each ended.
  std::vector<int64_t> start, end_a, end_b;
  std::vector<std::vector<int64_t>> arrive_a, arrive_b;
};

int64_t data_ns(const Plan&, int64_t, int64_t) { return 2 * kMs; }
int64_t eval_ns(int64_t rank, int64_t step) { return rank == 23 && step == 300 ? 150 * kMs : 0; }
int64_t compile_ns(int64_t rank, int64_t step) {
  if (step == 0) return 800 * kMs + rank * 100 * kUs;
  return rank == 7 && (step == 100 || step == 500) ? 400 * kMs : 0;
}
int64_t exec_ns(int64_t rank, int64_t step) { return 40 * kMs + jitter(rank, step, 1, 300 * kUs) + (rank == 41 && step >= 700 && step < 710 ? 30 * kMs : 0); }

void schedule(Plan& p) {
  int64_t t = 10 * kMs;
  p.arrive_a.assign(static_cast<size_t>(p.steps), std::vector<int64_t>(static_cast<size_t>(p.ranks)));
  p.arrive_b = p.arrive_a;
  for (int64_t s = 0; s < p.steps; ++s) {
    p.start.push_back(t);
    int64_t last = 0;
    for (int64_t r = 0; r < p.ranks; ++r) {
      int64_t a = t + data_ns(p, r, s) + eval_ns(r, s) + compile_ns(r, s) + exec_ns(r, s);
      p.arrive_a[s][r] = a;
      last = std::max(last, a);
    }
    p.end_a.push_back(last + kMs);
    last = 0;
    for (int64_t r = 0; r < p.ranks; ++r) {
      int64_t b = p.end_a.back() + (s == 0 ? 300 * kMs : 0) + 3 * kMs + jitter(r, s, 2, 100 * kUs);
      p.arrive_b[s][r] = b;
      last = std::max(last, b);
    }
    p.end_b.push_back(last + 200 * kUs);
    t = p.end_b.back();
  }
}

int64_t clock_offset(int64_t rank) { return rank == 0 ? 0 : (rank * 7919 % 1000 - 500) * kUs; }

// Writes rank r's store; returns its row count.
int64_t write_rank(const Plan& p, int64_t r, const std::string& path) {
  auto w = tc::store::Writer::create(path, {.overwrite = true});
  check(w.status().ok() ? tc::Status::Ok() : w.status());
  tc::store::Writer& s = **w;
  const int64_t off = clock_offset(r);
  auto L = [&](int64_t aligned) { return aligned - off; };  // this rank's clock
  int64_t rows = 0;
  const char* names[] = {"step", "data", "forward", "backward", "optimizer", "layer", "memory.live_bytes", "checkpoint.tick", "mark_step", "all_reduce_mean", "item"};
  for (int64_t i = 0; i < 11; ++i) {
    check(s.row(schema::locations).i64(i + 1).text(names[i]).text(i >= 8 ? "/src/train.cpp" : "/src/model.cpp").text("main").i64(100 + 10 * i).insert());
  }
  check(s.row(schema::processes).i64(1).i64(5000 + r).text("train").i64(L(0)).i64(L(p.end_b.back())).insert());
  check(s.row(schema::threads).i64(1).i64(1).i64(5000 + r).text("main").insert());
  check(s.row(schema::ranks).null().i64(1).i64(r).i64(p.ranks).text("node" + std::to_string(r / 8)).text("bench-job").i64(off).i64(5 * kUs).insert());
  const std::pair<const char*, std::string> env[] = {{"OMPI_COMM_WORLD_RANK", std::to_string(r)}, {"OMPI_COMM_WORLD_SIZE", std::to_string(p.ranks)},
                                                     {"PMIX_NAMESPACE", "bench-job"}, {"TC_DEVICE", "cpu"}};
  for (const auto& [k, v] : env) check(s.row(schema::run_env).null().text(k).text(v).insert());
  for (int64_t k = 0; k < 10; ++k) {
    check(s.row(schema::kernels).null().i64(1).i64(1).i64(k).text(k % 3 ? "elementwise" : "matmul").text(k % 3 ? "add,relu" : "matmul").text("64x128")
              .i64(1 << 20).i64(1 << 19).i64(k % 3 ? 1 << 18 : 1 << 26).text("/src/model.cpp:" + std::to_string(40 + k)).insert());
  }
  auto range = s.row(schema::ranges);
  auto counter = s.row(schema::counters);
  auto instant = s.row(schema::instants);
  auto kexec = s.row(schema::kernel_executions);
  int64_t graph = 2, execution = 0, length = 128;
  auto compile = [&](int64_t ts, int64_t dur, int64_t g, int64_t step, const std::string& sig, const char* reason, const char* trigger) {
    check(s.row(schema::compilations).null().i64(1).i64(L(ts)).i64(dur).i64(g).i64(step).text(sig).text("erased").text(reason).text(trigger).i64(9)
              .i64(400).i64(250).i64(10).i64(dur / 10).i64(dur / 10).i64(dur / 2).text("built").null().text("/tmp/g.cpp").insert());
    ++rows;
  };
  for (int64_t st = 0; st < p.steps; ++st) {
    int64_t t = p.start[st];
    const int64_t step_end = p.end_b[st];
    check(range.null().i64(1).i64(L(t)).i64(step_end - t).i64(0).i64(1).i64(st).insert());
    check(range.null().i64(1).i64(L(t)).i64(data_ns(p, r, st)).i64(1).i64(2).i64(0).insert());
    rows += 2;
    t += data_ns(p, r, st);
    if (int64_t e = eval_ns(r, st)) {
      check(s.row(schema::explicit_evaluations).null().i64(1).i64(L(t)).i64(e).i64(st).text("item").i64(11).i64(30).i64(1).insert());
      check(s.row(schema::executions).null().i64(1).i64(L(t + e / 4)).i64(e / 2).i64(1).i64(st).text("explicit_evaluation").i64(30).i64(++execution).null().insert());
      rows += 2;
      t += e;
    }
    if (int64_t c = compile_ns(r, st)) {
      if (st == 0) {
        compile(t, c, 1, 0, "sig-step-128", "first", "collective");
      } else {
        int64_t next = length + 32;
        compile(t, c, ++graph, st, "sig-step-" + std::to_string(next), "shape_change", "collective");
        check(s.row(schema::compilation_inputs).null().i64(1).i64(graph).text("input_ids").i64(1).i64(length).i64(next).insert());
        ++rows;
        length = next;
      }
      t += c;
    }
    const int64_t ex = exec_ns(r, st);
    check(s.row(schema::executions).null().i64(1).i64(L(t)).i64(ex).i64(1).i64(st).text("collective").i64(250).i64(++execution).null().insert());
    ++rows;
    for (int64_t k = 0; k < 10; ++k) check(kexec.null().i64(1).i64(execution).i64(1).i64(k).i64(L(t + k * ex / 10)).i64(ex / 10).insert());
    rows += 10;
    // forward (40%), backward (50%), optimizer (10%), each layer a range one level deeper.
    const int64_t fwd = ex * 4 / 10, bwd = ex / 2;
    check(range.null().i64(1).i64(L(t)).i64(fwd).i64(1).i64(3).i64(0).insert());
    for (int64_t l = 0; l < p.layers; ++l) check(range.null().i64(1).i64(L(t + l * fwd / p.layers)).i64(fwd / p.layers - 1).i64(2).i64(6).i64(l).insert());
    check(range.null().i64(1).i64(L(t + fwd)).i64(bwd).i64(1).i64(4).i64(0).insert());
    for (int64_t l = 0; l < p.layers; ++l) check(range.null().i64(1).i64(L(t + fwd + l * bwd / p.layers)).i64(bwd / p.layers - 1).i64(2).i64(6).i64(l).insert());
    check(range.null().i64(1).i64(L(t + fwd + bwd)).i64(ex - fwd - bwd).i64(1).i64(5).i64(0).insert());
    rows += 3 + 2 * p.layers;
    for (int64_t k = 0; k < 40; ++k) check(counter.null().i64(1).i64(L(t + k * ex / 40)).i64(7).f64(static_cast<double>((1 << 26) + k * (1 << 20))).insert());
    for (int64_t k = 0; k < 10; ++k) check(instant.null().i64(1).i64(L(t + k * ex / 10)).i64(8).i64(k).insert());
    rows += 50;
    const int64_t a = p.arrive_a[st][r];
    check(s.row(schema::collectives).null().i64(1).i64(L(a)).i64(p.end_a[st] - a).i64(st).i64(2 * st + 1).text("all_reduce_mean").i64(1 << 22).i64(40)
              .i64(10).insert());
    // mark_step: the step's second graph.
    int64_t m = p.end_a[st];
    const int64_t b = p.arrive_b[st][r];
    if (st == 0) {
      compile(m, 300 * kMs, 2, 0, "sig-update", "first", "mark_step");
    }
    check(s.row(schema::executions).null().i64(1).i64(L(b - 2 * kMs)).i64(2 * kMs).i64(2).i64(st).text("mark_step").i64(40).i64(++execution).null().insert());
    check(s.row(schema::steps).null().i64(1).i64(L(m)).i64(b - m).i64(st).i64(9).insert());
    check(s.row(schema::collectives).null().i64(1).i64(L(b)).i64(p.end_b[st] - b).i64(st + 1).i64(2 * st + 2).text("all_reduce_mean").i64(4).i64(1)
              .i64(10).insert());
    rows += 4;
  }
  check(s.row(schema::run).i64(1).text("0.1.0").text("[\"./train\",\"--ranks\",\"64\"]").text("/work").text("node" + std::to_string(r / 8))
            .text("tc-profile").text("monotonic").i64(L(0)).i64(L(p.end_b.back() + kMs)).i64(0).i64(0).null().i64(1).i64(rows).i64(0).text("none")
            .null().text("tc").null().insert());
  check(s.finalize());
  return rows;
}

struct Timed {
  double s = 0;
  int status = 0;
};

Timed run_analyze(const std::string& tool, const std::vector<std::string>& stores, const char* extra, const std::string& out) {
  std::vector<const char*> argv = {tool.c_str()};
  for (const auto& p : stores) argv.push_back(p.c_str());
  if (extra) argv.push_back(extra);
  argv.push_back(nullptr);
  auto t = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout)) _exit(126);
    execv(tool.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {std::chrono::duration<double>(Clock::now() - t).count(), WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  Plan plan;
  int64_t events = 200'000;
  int runs = 3;
  std::string keep;
  const char* usage =
      "usage: tc-bench-multirank [--ranks N] [--events N] [--keep DIR] [--runs N]\n"
      "  Writes N synthetic rank stores of one job (default 64 ranks of 200000 events, planted stragglers and a\n"
      "  desync), then times `tc-analyze` merging them (--runs times, default 3) and prints a table: median, peak RSS,\n"
      "  and whether the planted findings were found. --keep DIR writes the stores there and keeps them.\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(usage, stdout);
      return 0;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "tc-bench-multirank: %s needs a value\n%s", argv[argc - 1], usage);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks")) plan.ranks = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--events")) events = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
    else if (!std::strcmp(argv[i], "--runs")) runs = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "tc-bench-multirank: unknown option %s\n%s", argv[i], usage);
      return 2;
    }
  }
  // 200 rows per step (5 + 10 kernels + 50 samples + 135 ranges): the steps follow from the events.
  plan.steps = std::max<int64_t>(1, events / (65 + 5 + 2 * plan.layers));
  schedule(plan);
  namespace fs = std::filesystem;
  const fs::path dir = keep.empty() ? fs::temp_directory_path() / ("tc-bench-multirank-" + std::to_string(getpid())) : fs::path(keep);
  fs::create_directories(dir);
  std::vector<std::string> stores;
  for (int64_t r = 0; r < plan.ranks; ++r) stores.push_back((dir / ("run.rank" + std::to_string(r) + ".tcdb")).string());
  const std::string stamp = (dir / "bench.plan").string();
  const std::string want = std::to_string(plan.ranks) + " " + std::to_string(events) + "\n";
  bool reuse = !keep.empty() && fs::exists(stamp) && [&] {
    std::ifstream in(stamp);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str() == want;
  }();
  double write_s = 0;
  std::atomic<int64_t> rows{0};
  if (!reuse) {
    auto t0 = Clock::now();
    std::atomic<int64_t> next{0};
    auto work = [&] {
      for (int64_t r; (r = next.fetch_add(1)) < plan.ranks;) rows += write_rank(plan, r, stores[static_cast<size_t>(r)]);
    };
    std::thread other(work);
    work();
    other.join();
    write_s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::ofstream(stamp) << want;
  }
  uintmax_t bytes = 0;
  for (const auto& s : stores) bytes += fs::file_size(s);

  const std::string tool = (fs::path(argv[0]).parent_path() / "tc-analyze").string();
  const std::string out = (dir / "report.txt").string();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    Timed t = run_analyze(tool, stores, nullptr, out);
    if (t.status != 0) {
      std::fprintf(stderr, "tc-bench-multirank: %s exited with %d\n", tool.c_str(), t.status);
      return 1;
    }
    times.push_back(t.s);
  }
  struct rusage ru {};
  getrusage(RUSAGE_CHILDREN, &ru);
  const double rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  Timed json = run_analyze(tool, stores, "--json", (dir / "report.json").string());
  std::string report;
  {
    std::ifstream in(dir / "report.json");
    std::stringstream ss;
    ss << in.rdbuf();
    report = ss.str();
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];

  std::printf("tc-bench-multirank: %lld rank stores x %lld steps (%.1f M events in all, %.0f MiB), %s\n\n", static_cast<long long>(plan.ranks),
              static_cast<long long>(plan.steps), static_cast<double>(plan.ranks * plan.steps * (70 + 2 * plan.layers)) / 1e6,
              static_cast<double>(bytes) / (1 << 20), reuse ? "reused from --keep" : ("written in " + std::to_string(write_s).substr(0, 5) + " s").c_str());
  std::printf("| what                                          | runs                 | median   | peak RSS  | target        |\n");
  std::printf("|-----------------------------------------------|----------------------|----------|-----------|---------------|\n");
  std::string each;
  for (double t : times) each += (each.empty() ? "" : ", ") + std::to_string(t).substr(0, 4);
  const std::string what = "tc-analyze run.rank0.." + std::to_string(plan.ranks - 1) + ".tcdb (report)";
  std::printf("| %-45s | %-20s | %6.2f s | %6.0f MiB | <= 5 s, 2 GB  |\n", what.c_str(), each.c_str(), median, rss_mib);
  std::printf("| tc-analyze ... --json                         | %-20s | %6.2f s |           |               |\n", std::to_string(json.s).substr(0, 4).c_str(),
              json.s);
  std::printf("\nfindings: %d distributed.straggler (planted: rank 7 at steps 100 and 500, rank 23 at 300, rank 41 at 700-709: 13), %d distributed.desync; "
              "%s\n",
              count(report, "\"kind\":\"distributed.straggler\""), count(report, "\"kind\":\"distributed.desync\""),
              median <= 5.0 && rss_mib <= 2048 ? "within target" : "OVER TARGET");
  if (keep.empty()) fs::remove_all(dir);
  return median <= 5.0 && rss_mib <= 2048 ? 0 : 1;
}
