// tc-bench-launcher: tc-profile's fixed cost, and what it adds to a short
// training run. Prints a table of medians; every number is measured in this
// one run.
//
//   build/bin/tc-bench-launcher [--runs N] [--program-runs M] [--tc-profile PATH] [--baseline OLD_TC_PROFILE]
//                               [--program "PATH ARGS"] [--dir DIR]
//
// Rows:
//   /bin/true                    : starting a process, the floor
//   tc-profile -- /bin/true      : tc-profile -q -o DIR/x.tcdb -- /bin/true (target <= 15 ms)
//   baseline -- /bin/true        : the same with --baseline's tc-profile (another build), runs interleaved
//   phases                       : the same steps as tc-profile, called in this process and timed apart:
//                                  create the store (beside the output), the ring memory, the CUDA probe,
//                                  the collector and its begin(), finish() with nothing recorded, close and
//                                  rename into place
//   PROGRAM, PROGRAM under tc-profile (and under the baseline): a 200-step training run (default
//                                  tc-sample-mlp beside this binary, --steps 200), runs interleaved, and
//                                  each one's ratio to the bare run
//
// The store goes to DIR (default: the system's temporary directory): the cost
// of its fdatasync calls is the file system's.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tc/collect/collector.h"
#include "tc/store/output.h"
#include "tc/store/writer.h"
#include "tc/trace/region.h"

extern char** environ;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "tc-bench-launcher: %s\n", why.c_str());
  std::exit(1);
}

// CPU milliseconds (user + system) of the last time_run(), its reaped children included.
double g_last_cpu_ms = 0;

// Wall milliseconds of one run of argv, its output to /dev/null. Dies if it
// does not exit 0: a failing run would measure the wrong thing.
double time_run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  auto t0 = Clock::now();
  if (int err = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ); err != 0) die(argv[0] + ": " + std::strerror(err));
  int status = 0;
  struct rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  double ms = ms_since(t0);
  posix_spawn_file_actions_destroy(&fa);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die(argv[0] + " did not exit 0 (status " + std::to_string(status) + ")");
  auto tv_ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
  g_last_cpu_ms = tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime);
  return ms;
}

// Runs argv and keeps its wall and CPU time.
void timed(const std::vector<std::string>& argv, std::vector<double>& wall, std::vector<double>& cpu) {
  wall.push_back(time_run(argv));
  cpu.push_back(g_last_cpu_ms);
}

struct Phases {
  std::vector<double> create, rings, probe, begin, finish, install, total;
};

// tc-profile's steps for a program that records nothing, in this process.
void time_phases(const std::string& output, Phases& p) {
  auto t_all = Clock::now();
  auto t = Clock::now();
  std::string temp = tc::store::temp_beside(output);
  auto writer = tc::store::Writer::create(temp);
  if (!writer.ok()) die(writer.status().message());
  p.create.push_back(ms_since(t));
  t = Clock::now();
  std::string error;
  auto region = tc::trace::Region::create_shared(64, 1u << 16, &error, /*inheritable=*/false);
  if (!region) die("ring memory: " + error);
  p.rings.push_back(ms_since(t));
  t = Clock::now();
  tc::collect::RunInfo info = tc::collect::gather_run_info({"/bin/true"}, "tc-bench-launcher");
  info.cuda = tc::collect::cuda_probe();
  p.probe.push_back(ms_since(t));
  t = Clock::now();
  auto collector = std::make_unique<tc::collect::Collector>(*region, **writer, std::move(info));
  if (tc::Status s = collector->begin(); !s.ok()) die(s.message());
  p.begin.push_back(ms_since(t));
  t = Clock::now();
  tc::collect::RunEnd end;
  end.exit_code = 0;
  end.complete = true;
  if (tc::Status s = collector->finish(end); !s.ok()) die(s.message());
  collector.reset();
  writer->reset();
  p.finish.push_back(ms_since(t));
  t = Clock::now();
  if (std::string why = tc::store::install(temp, output); !why.empty()) die(why);
  p.install.push_back(ms_since(t));
  p.total.push_back(ms_since(t_all));
}

void row(const char* what, const std::vector<double>& v, const std::vector<double>& cpu, const std::string& note = "") {
  double low = v.empty() ? 0 : *std::min_element(v.begin(), v.end());
  if (cpu.empty()) {
    std::printf("| %-44s | %9.2f | %9.2f | %9s | %s\n", what, median(v), low, "", note.c_str());
  } else {
    std::printf("| %-44s | %9.2f | %9.2f | %9.2f | %s\n", what, median(v), low, median(cpu), note.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 30, program_runs = 10;
  std::error_code ec;
  fs::path here = fs::read_symlink("/proc/self/exe", ec).parent_path();
  std::string tc_profile = (here / "tc-profile").string(), baseline;
  std::string program_line;
  fs::path mlp = here / "tc-sample-mlp";
  if (fs::exists(mlp)) program_line = mlp.string() + " --steps 200";
  std::string dir = fs::temp_directory_path().string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--runs") runs = std::max(1, std::atoi(value().c_str()));
    else if (a == "--program-runs") program_runs = std::max(0, std::atoi(value().c_str()));
    else if (a == "--tc-profile") tc_profile = value();
    else if (a == "--baseline") baseline = value();
    else if (a == "--program") program_line = value();
    else if (a == "--dir") dir = value();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: tc-bench-launcher [--runs N] [--program-runs M] [--tc-profile PATH] [--baseline OLD_TC_PROFILE] [--program \"PATH ARGS\"] [--dir DIR]\n");
      return 0;
    } else {
      die("unknown argument " + a + " (see --help)");
    }
  }
  double load_before[3] = {};
  if (getloadavg(load_before, 3) < 0) load_before[0] = -1;
  fs::path work = fs::path(dir) / ("tc-bench-launcher-" + std::to_string(getpid()));
  fs::create_directories(work);
  const std::string out = (work / "true.tcdb").string();
  const std::vector<std::string> bare = {"/bin/true"};
  const std::vector<std::string> profiled = {tc_profile, "-q", "-f", "-o", out, "--", "/bin/true"};

  std::vector<std::string> old = profiled;
  old[0] = baseline;
  // One of each first: page cache, the dynamic loader's cache.
  time_run(bare);
  time_run(profiled);
  if (!baseline.empty()) time_run(old);
  std::vector<double> t_bare, t_profiled, t_old, c_bare, c_profiled, c_old;
  for (int i = 0; i < runs; ++i) {
    timed(bare, t_bare, c_bare);
    timed(profiled, t_profiled, c_profiled);
    if (!baseline.empty()) timed(old, t_old, c_old);
  }
  // Each in a fresh child, as tc-profile is: the CUDA runtime keeps what its
  // first probe found for the rest of the process.
  Phases ph;
  for (int i = 0; i < runs; ++i) {
    int fds[2];
    if (pipe(fds) != 0) die("pipe");
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      Phases one;
      time_phases((work / "phases.tcdb").string(), one);
      double v[] = {one.create[0], one.rings[0], one.probe[0], one.begin[0], one.finish[0], one.install[0], one.total[0]};
      _exit(write(fds[1], v, sizeof v) == static_cast<ssize_t>(sizeof v) ? 0 : 1);
    }
    close(fds[1]);
    double v[7] = {};
    ssize_t got = read(fds[0], v, sizeof v);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != static_cast<ssize_t>(sizeof v) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("a phase run failed");
    std::vector<double>* cols[] = {&ph.create, &ph.rings, &ph.probe, &ph.begin, &ph.finish, &ph.install, &ph.total};
    for (int k = 0; k < 7; ++k) cols[k]->push_back(v[k]);
  }

  std::vector<double> t_prog, t_prog_profiled, t_prog_old, c_prog, c_prog_profiled, c_prog_old;
  std::vector<std::string> prog;
  if (!program_line.empty() && program_runs > 0) {
    std::istringstream words(program_line);
    for (std::string w; words >> w;) prog.push_back(w);
    std::vector<std::string> prog_profiled = {tc_profile, "-q", "-f", "-o", (work / "program.tcdb").string(), "--"};
    prog_profiled.insert(prog_profiled.end(), prog.begin(), prog.end());
    std::vector<std::string> prog_old = prog_profiled;
    prog_old[0] = baseline;
    time_run(prog);  // a cold code cache compiles once, outside the timing
    time_run(prog_profiled);
    if (!baseline.empty()) time_run(prog_old);
    for (int i = 0; i < program_runs; ++i) {
      timed(prog, t_prog, c_prog);
      timed(prog_profiled, t_prog_profiled, c_prog_profiled);
      if (!baseline.empty()) timed(prog_old, t_prog_old, c_prog_old);
    }
  }
  fs::remove_all(work, ec);

  double load[3] = {};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  std::printf("tc-bench-launcher: %d runs each (%d of the program), store in %s, load average %.2f before, %.2f after\n\n", runs,
              t_prog.empty() ? 0 : program_runs, dir.c_str(), load_before[0], load[0]);
  std::printf("| %-44s | %9s | %9s | %9s |\n", "what", "median ms", "min ms", "CPU ms");
  std::printf("|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(11, '-').c_str(), std::string(11, '-').c_str(),
              std::string(11, '-').c_str());
  row("/bin/true", t_bare, c_bare);
  row("tc-profile -q -o X -- /bin/true", t_profiled, c_profiled, "target <= 15 ms");
  if (!t_old.empty()) {
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, " (%.2fx this one)", median(t_old) / median(t_profiled));
    row("baseline -q -o X -- /bin/true", t_old, c_old, baseline + ratio);
  }
  row("  in-process: create the store", ph.create, {});
  row("  in-process: ring memory", ph.rings, {});
  row("  in-process: run info + CUDA probe", ph.probe, {});
  row("  in-process: collector + begin()", ph.begin, {});
  row("  in-process: finish() + close", ph.finish, {});
  row("  in-process: rename into place", ph.install, {});
  row("  in-process: all of the above", ph.total, {});
  if (!t_prog.empty()) {
    std::string name = fs::path(prog[0]).filename().string();
    for (size_t i = 1; i < prog.size(); ++i) name += " " + prog[i];
    row(name.c_str(), t_prog, c_prog);
    std::string under = "tc-profile -- " + name;
    char ratio[96];
    std::snprintf(ratio, sizeof ratio, "%.3fx (+%.1f ms)", median(t_prog_profiled) / median(t_prog), median(t_prog_profiled) - median(t_prog));
    row(under.c_str(), t_prog_profiled, c_prog_profiled, ratio);
    if (!t_prog_old.empty()) {
      std::snprintf(ratio, sizeof ratio, "%.3fx (+%.1f ms)", median(t_prog_old) / median(t_prog), median(t_prog_old) - median(t_prog));
      row(("baseline -- " + name).c_str(), t_prog_old, c_prog_old, ratio);
    }
  }
  return 0;
}
