// tc-bench-analyze: how long `tc-analyze report` takes on a synthetic store of
// 10 M events (4 M ranges, 3 M instants, 3 M counters, half of them
// memory.live_bytes samples) plus a training run's compiler tables (1000
// steps, 40 shape-change recompilations, explicit evaluations). Target: <= 2 s.
//
//   build/bin/tc-bench-analyze [--events N] [--keep PATH]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tc/store/writer.h"

namespace schema = tc::store::schema;
using Clock = std::chrono::steady_clock;

namespace {

void check(const tc::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "tc-bench-analyze: %s\n", s.message().c_str());
    std::exit(1);
  }
}

void write_store(const std::string& path, int64_t events) {
  auto w = tc::store::Writer::create(path, {.overwrite = true});
  check(w.status().ok() ? tc::Status::Ok() : w.status());
  tc::store::Writer& s = **w;
  const int64_t ms = 1'000'000, steps = 1000;
  check(s.row(schema::locations).i64(1).text("train.step").text("/src/train.cpp").text("main").i64(40).insert());
  check(s.row(schema::locations).i64(2).text("memory.live_bytes").text("/src/memory.cpp").text("alloc").i64(9).insert());
  check(s.row(schema::locations).i64(3).text("item").text("/src/train.cpp").text("main").i64(88).insert());
  check(s.row(schema::locations).i64(4).text("kernel").text("/src/exec.cpp").text("run").i64(7).insert());
  check(s.row(schema::threads).i64(1).i64(1).i64(100).text("main").insert());
  check(s.row(schema::processes).i64(1).i64(100).text("train").i64(0).i64(steps * 20 * ms).insert());
  int64_t ranges = events * 4 / 10, instants = events * 3 / 10, counters = events - ranges - instants;
  auto r = s.row(schema::ranges);
  for (int64_t i = 0; i < ranges; ++i) check(r.null().i64(1).i64(i * 50).i64(40).i64(i % 3).i64(4).i64(i).insert());
  auto in = s.row(schema::instants);
  for (int64_t i = 0; i < instants; ++i) check(in.null().i64(1).i64(i * 60).i64(4).i64(i).insert());
  auto c = s.row(schema::counters);
  for (int64_t i = 0; i < counters; ++i) check(c.null().i64(1).i64(i * 70).i64(i % 2 ? 2 : 4).f64(static_cast<double>((i * 7919) % 1000000)).insert());
  for (int64_t st = 0; st < steps; ++st) {
    int64_t ts = st * 20 * ms;
    int64_t graph = st < 40 ? st + 1 : 1 + st % 40;
    check(s.row(schema::steps).null().i64(1).i64(ts).i64(15 * ms).i64(st).i64(1).insert());
    if (st < 40) {
      check(s.row(schema::compilations).null().i64(1).i64(ts).i64(500 * ms).i64(graph).i64(st).text("s").text("e")
                .text(st ? "shape_change" : "first").text("mark_step").i64(1).i64(100).i64(60).i64(8).i64(ms).i64(ms).i64(400 * ms)
                .text("built").null().text("/tmp/g.cpp").insert());
      if (st) check(s.row(schema::compilation_inputs).null().i64(1).i64(graph).text("input_ids").i64(1).i64(16 + 4 * st - 4).i64(16 + 4 * st).insert());
    }
    check(s.row(schema::executions).null().i64(1).i64(ts + ms).i64(10 * ms).i64(graph).i64(st).text("mark_step").i64(60).i64(st + 1).null().insert());
    check(s.row(schema::explicit_evaluations).null().i64(1).i64(ts + 12 * ms).i64(2 * ms).i64(st).text("item").i64(3).i64(12).i64(0).insert());
  }
  check(s.row(schema::run).i64(1).text("0.1.0").text("[\"./train\"]").text("/").text("h").text("tc-profile").text("monotonic").i64(0)
            .i64(steps * 20 * ms).i64(0).i64(0).null().i64(1).i64(events).i64(0).text("none").null().null().null().insert());
  check(s.finalize());
}

}  // namespace

int main(int argc, char** argv) {
  int64_t events = 10'000'000;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--events")) events = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
  }
  std::string path = keep.empty() ? (std::filesystem::temp_directory_path() / "tc-bench-analyze.tcdb").string() : keep;
  auto t0 = Clock::now();
  write_store(path, events);
  double write_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string tool = (std::filesystem::path(argv[0]).parent_path() / "tc-analyze").string();
  std::vector<double> runs;
  for (int i = 0; i < 5; ++i) {
    auto t = Clock::now();
    pid_t pid = fork();
    if (pid == 0) {
      freopen("/dev/null", "w", stdout);
      execl(tool.c_str(), tool.c_str(), path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "tc-bench-analyze: %s exited with %d\n", tool.c_str(), WEXITSTATUS(status));
      return 1;
    }
    runs.push_back(std::chrono::duration<double>(Clock::now() - t).count());
  }
  std::sort(runs.begin(), runs.end());
  std::printf("tc-bench-analyze: store of %lld events (%.0f MiB) written in %.1f s\n\n", static_cast<long long>(events),
              static_cast<double>(std::filesystem::file_size(path)) / (1 << 20), write_s);
  std::printf("| what                                   | median of 5 | min     | target |\n");
  std::printf("|----------------------------------------|-------------|---------|--------|\n");
  std::printf("| tc-analyze report, %5.1f M events      | %8.2f s  | %5.2f s | <= 2 s |\n", static_cast<double>(events) / 1e6, runs[2], runs[0]);
  if (keep.empty()) std::filesystem::remove(path);
  return 0;
}
