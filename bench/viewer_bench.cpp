// tc-bench-viewer: how tc-viewer copes with a big run. Writes a synthetic store
// of N events (default 10 M) through tc::store::Writer, loads it into the
// timeline model, builds a zoomed-out frame's draw lists and row pixels, then
// runs `tc-viewer STORE --screenshot` and reads the viewer's own frame timer
// (frames with the view moving, and with it still).
// Needs a display for the last part: run under `xvfb-run -a`.
//
// --load then runs the viewer's timer again, --runs times each, alternating a
// quiet machine with one busy neighbour (a child process that spins on one
// CPU, started and stopped here), and prints both in one table with what the
// machine was doing meanwhile: the mean of /proc/stat's procs_running (tasks
// on a CPU or waiting for one; the viewer's own threads included) and the
// 1-minute load average.
//
// --ranks N writes the stores of an N-rank job instead (--events each) and
// times the job against its rank 0 alone.
//
//   xvfb-run -a build/bin/tc-bench-viewer [--events 10000000] [--dir /tmp] [--load [--runs 3]]
//   xvfb-run -a build/bin/tc-bench-viewer --ranks 4 --events 1000000
#include "busy_neighbour.h"

#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <vector>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <ctime>

#include "tc/viewer/demo_store.h"
#include "tc/viewer/frame_cache.h"
#include "tc/viewer/model.h"

namespace {

using Clock = std::chrono::steady_clock;
double cpu_s() {  // CPU time of every thread of this process
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The value after "key: " in the viewer's output, or -1.
double find_number(const std::string& out, const std::string& key) {
  size_t p = out.find(key);
  if (p == std::string::npos) return -1;
  return std::atof(out.c_str() + p + key.size());
}

// "key: median M, max X ..." in the viewer's output; -1 where it is missing
// (a viewer older than the line).
struct MedianMax {
  double median = -1, max = -1;
};
MedianMax find_median_max(const std::string& out, const std::string& key) {
  MedianMax m;
  size_t p = out.find("\n" + key + ": median ");
  if (p == std::string::npos) return m;
  std::sscanf(out.c_str() + p + key.size() + 3, "median %lf, max %lf", &m.median, &m.max);
  return m;
}

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

// procs_running from /proc/stat: tasks running or ready to run right now.
int procs_running() {
  std::ifstream f("/proc/stat");
  std::string key;
  long value = 0;
  while (f >> key) {
    if (key == "procs_running" && (f >> value)) return static_cast<int>(value);
    f.ignore(1 << 20, '\n');
  }
  return -1;
}

double load_average_1min() {
  double l = -1;
  return ::getloadavg(&l, 1) == 1 ? l : -1;
}

// One viewer run under a sampler of procs_running (every 20 ms).
struct LoadRun {
  bool loaded = false;
  MedianMax moved, still;
  double cpu = -1, cpu_still = -1, running = 0, loadavg = 0;
};
LoadRun run_viewer_sampled(const std::string& cmd, bool loaded) {
  std::atomic<bool> done{false};
  double sum = 0;
  int n = 0;
  std::thread sampler([&] {
    while (!done.load()) {
      int r = procs_running();
      if (r >= 0) sum += r, ++n;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const std::string out = run_command(cmd);
  done = true;
  sampler.join();
  LoadRun r;
  r.loaded = loaded;
  r.moved = find_median_max(out, "frame_ms_zoomed_out");
  r.still = find_median_max(out, "frame_ms_zoomed_out_still");
  r.cpu = find_number(out, "frame_cpu_ms_zoomed_out: ");
  r.cpu_still = find_number(out, "frame_cpu_ms_zoomed_out_still: ");
  r.running = n ? sum / n : -1;
  r.loadavg = load_average_1min();
  if (r.moved.median < 0) std::fprintf(stderr, "viewer output:\n%s\n", out.c_str());
  return r;
}

void print_load_row(const char* what, const LoadRun& r) {
  std::printf("%-14s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %9.1f %8.1f\n", what, r.moved.median, r.moved.max, r.cpu,
              r.still.median, r.still.max, r.cpu_still, r.running, r.loadavg);
}

// Quiet and loaded runs, alternating, then a summary per condition: the
// median of the runs' medians and the largest of their maxima.
void load_table(const std::string& cmd, int runs) {
  std::vector<LoadRun> all;
  for (int i = 0; i < runs; ++i) {
    for (bool loaded : {false, true}) {
      pid_t busy = loaded ? tc_bench::start_busy_neighbour() : 0;
      if (loaded) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      all.push_back(run_viewer_sampled(cmd, loaded));
      tc_bench::stop_busy_neighbour(busy);
    }
  }
  std::printf("\nzoomed-out frame, quiet vs one busy neighbour (ms; moved: the view changes every frame, "
              "still: it does not)\n");
  std::printf("%-14s %8s %8s %8s %8s %8s %8s %9s %8s\n", "run", "moved", "max", "cpu", "still", "max", "cpu",
              "running", "loadavg");
  for (size_t i = 0; i < all.size(); ++i) {
    std::string what = std::string(all[i].loaded ? "loaded " : "quiet ") + std::to_string(i / 2 + 1);
    print_load_row(what.c_str(), all[i]);
  }
  for (bool loaded : {false, true}) {
    std::vector<LoadRun> rs;
    for (const LoadRun& r : all) {
      if (r.loaded == loaded) rs.push_back(r);
    }
    auto median_of = [&](auto get) {
      std::vector<double> v;
      for (const LoadRun& r : rs) v.push_back(get(r));
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    auto max_of = [&](auto get) {
      double m = -1;
      for (const LoadRun& r : rs) m = std::max(m, get(r));
      return m;
    };
    LoadRun s;
    s.moved = {median_of([](const LoadRun& r) { return r.moved.median; }), max_of([](const LoadRun& r) { return r.moved.max; })};
    s.still = {median_of([](const LoadRun& r) { return r.still.median; }), max_of([](const LoadRun& r) { return r.still.max; })};
    s.cpu = median_of([](const LoadRun& r) { return r.cpu; });
    s.cpu_still = median_of([](const LoadRun& r) { return r.cpu_still; });
    s.running = median_of([](const LoadRun& r) { return r.running; });
    s.loadavg = median_of([](const LoadRun& r) { return r.loadavg; });
    print_load_row(loaded ? "loaded, all" : "quiet, all", s);
  }
  std::printf("(targets: moved median <= 8 ms and max <= 16 ms under one busy neighbour; running: mean of "
              "procs_running during the run, loadavg: 1-minute load average at its end, on %u CPUs)\n",
              std::thread::hardware_concurrency());
}

// --ranks N: the stores of an N-rank job (tc::analysis::timeline::load_job_timeline),
// --events each, against one of them alone: the in-process frame rebuild and
// the viewer's own timer, side by side.
struct RankRow {
  int64_t events = 0;
  double load_s = 0, prepare_ms = 0, prepare_cpu_ms = 0, frame_cpu = -1, still_cpu = -1, vertices = -1, first_frame_s = -1;
  size_t items = 0, rows = 0;
  MedianMax moved, still;
};

RankRow measure_ranks(const std::vector<std::string>& paths, const std::string& viewer, const std::string& size, int frames, const std::string& png) {
  RankRow row;
  auto t = Clock::now();
  auto tl = tc::analysis::timeline::load_job_timeline(paths);
  if (!tl.ok()) {
    std::fprintf(stderr, "%s\n", tl.status().message().c_str());
    return row;
  }
  row.load_s = since(t);
  row.events = tl->event_count;
  tc::viewer::FrameCache cache;
  const int reps = 20;
  t = Clock::now();
  double cpu0 = cpu_s();
  for (int r = 0; r < reps; ++r) {
    cache.invalidate();
    cache.prepare(*tl, {tl->start_ts, tl->end_ts, 1370.0f}, 198);
  }
  row.prepare_ms = since(t) * 1e3 / reps;
  row.prepare_cpu_ms = (cpu_s() - cpu0) * 1e3 / reps;
  row.rows = static_cast<size_t>(cache.frame().rows());
  for (const auto& lane : cache.frame().tracks)
    for (const auto& list : lane) row.items += list.items.size();
  std::string cmd = viewer;
  for (const std::string& p : paths) cmd += " " + p;
  cmd += " --screenshot " + png + " --size " + size + " --frames " + std::to_string(frames);
  if (!std::getenv("DISPLAY")) cmd = "xvfb-run -a " + cmd;
  const std::string out = run_command(cmd);
  row.first_frame_s = find_number(out, "time_to_first_frame_s: ");
  row.moved = find_median_max(out, "frame_ms_zoomed_out");
  row.still = find_median_max(out, "frame_ms_zoomed_out_still");
  row.frame_cpu = find_number(out, "frame_cpu_ms_zoomed_out: ");
  row.still_cpu = find_number(out, "frame_cpu_ms_zoomed_out_still: ");
  row.vertices = find_number(out, "frame_gl_zoomed_out: ");
  if (row.moved.median < 0) std::printf("viewer output:\n%s\n", out.c_str());
  return row;
}

int ranks_bench(int ranks, tc::viewer::DemoStoreOptions o, const std::string& dir, const std::string& viewer, const std::string& size, int frames,
                bool keep) {
  std::vector<std::string> paths;
  const std::string stem = dir + "/tc_viewer_bench_" + std::to_string(::getpid());
  auto t = Clock::now();
  for (int r = 0; r < ranks; ++r) {
    o.rank = r;
    o.world_size = ranks;
    o.clock_offset_ns = r * 1'000'000;  // rank r's clock 1 ms per rank behind rank 0's
    paths.push_back(stem + ".rank" + std::to_string(r) + ".tcdb");
    auto n = tc::viewer::write_demo_store(paths.back(), o);
    if (!n.ok()) return std::fprintf(stderr, "%s\n", n.status().message().c_str()), 1;
  }
  const double write_s = since(t);
  const std::string png = stem + ".png";
  // Alternating one store and the job, twice, so that a change in the machine's load falls on both.
  RankRow one = measure_ranks({paths[0]}, viewer, size, frames, png), job = measure_ranks(paths, viewer, size, frames, png);
  RankRow one2 = measure_ranks({paths[0]}, viewer, size, frames, png), job2 = measure_ranks(paths, viewer, size, frames, png);
  auto best = [](RankRow a, const RankRow& b) {  // the run with the lower moving median
    return b.moved.median >= 0 && (a.moved.median < 0 || b.moved.median < a.moved.median) ? b : a;
  };
  one = best(one, one2);
  job = best(job, job2);
  std::printf("tc-viewer benchmark, %d ranks: %d stores of %lld user ranges on %d threads each (written in %.1f s), %s\n", ranks, ranks,
              static_cast<long long>(o.range_events), o.threads, write_s, size.c_str());
  std::printf("%-46s %14s %14s %8s\n", "measure", "rank 0 alone", "the job", "ratio");
  auto line = [](const char* what, double a, double b, const char* unit) {
    std::printf("%-46s %11.2f %-2s %11.2f %-2s %7.2fx\n", what, a, unit, b, unit, a > 0 ? b / a : 0.0);
  };
  line("events", static_cast<double>(one.events) / 1e6, static_cast<double>(job.events) / 1e6, "M");
  line("rows (tracks)", static_cast<double>(one.rows), static_cast<double>(job.rows), "");
  line("load_job_timeline in process", one.load_s, job.load_s, "s");
  line("draw lists and row pixels, full width", one.prepare_ms, job.prepare_ms, "ms");
  line("  their CPU time", one.prepare_cpu_ms, job.prepare_cpu_ms, "ms");
  line("  draw items", static_cast<double>(one.items), static_cast<double>(job.items), "");
  line("viewer: time to first frame", one.first_frame_s, job.first_frame_s, "s");
  line("viewer: frame, view moved (median)", one.moved.median, job.moved.median, "ms");
  line("viewer: frame, view moved (max)", one.moved.max, job.moved.max, "ms");
  line("  CPU time per frame, all threads", one.frame_cpu, job.frame_cpu, "ms");
  line("viewer: frame, view still (median)", one.still.median, job.still.median, "ms");
  line("  CPU time per frame, all threads", one.still_cpu, job.still_cpu, "ms");
  line("  vertices per frame", one.vertices, job.vertices, "");
  std::printf("(the better of two alternating runs each; machine load average %.1f on %u CPUs)\n", load_average_1min(),
              std::thread::hardware_concurrency());
  if (!keep) {
    for (const std::string& p : paths) std::filesystem::remove(p);
    std::filesystem::remove(png);
  } else {
    std::printf("kept %s.rank*.tcdb\n", stem.c_str());
  }
  return one.moved.median < 0 || job.moved.median < 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"tc-bench-viewer: store size vs. tc-viewer's time to first frame and frame time"};
  int64_t events = 10'000'000;
  int threads = 4, frames = 30;
  std::string dir = std::filesystem::temp_directory_path().string(), write_only, size = "1600x900";
  bool keep = false, load = false;
  int runs = 3;
  std::string viewer = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "tc-viewer").string();
  cli.add_option("--events", events, "user ranges in the store")->capture_default_str();
  cli.add_option("--threads", threads, "threads (lanes) the ranges are spread over")->capture_default_str();
  cli.add_option("--dir", dir, "where the store is written")->capture_default_str();
  cli.add_option("--size", size, "screenshot size")->capture_default_str();
  cli.add_option("--frames", frames, "frames timed by the viewer")->capture_default_str();
  cli.add_flag("--keep", keep, "keep the store and the screenshot");
  cli.add_option("--write-only", write_only, "only write a demo store of --events events at this path");
  cli.add_flag("--load", load, "then time the viewer quiet and with one busy neighbour, --runs times each");
  cli.add_option("--runs", runs, "viewer runs per condition for --load")->capture_default_str()->check(CLI::Range(1, 50));
  cli.add_option("--viewer", viewer, "the tc-viewer to time (default: the one beside this program)");
  int ranks = 0;
  cli.add_option("--ranks", ranks, "time the stores of a job of this many ranks (--events each) against one of them alone")
      ->check(CLI::Range(2, 64));
  CLI11_PARSE(cli, argc, argv);

  tc::viewer::DemoStoreOptions o;
  o.range_events = events;
  o.threads = threads;
  o.steps = 200;
  if (ranks > 1) return ranks_bench(ranks, o, dir, viewer, size, frames, keep);
  if (!write_only.empty()) {
    auto n = tc::viewer::write_demo_store(write_only, o);
    if (!n.ok()) return std::fprintf(stderr, "%s\n", n.status().message().c_str()), 1;
    std::printf("%s: %lld events\n", write_only.c_str(), static_cast<long long>(*n));
    return 0;
  }

  const std::string store = dir + "/tc_viewer_bench_" + std::to_string(::getpid()) + ".tcdb";
  const std::string png = store + ".png";
  auto t = Clock::now();
  auto written = tc::viewer::write_demo_store(store, o);
  if (!written.ok()) return std::fprintf(stderr, "%s\n", written.status().message().c_str()), 1;
  const double write_s = since(t);

  t = Clock::now();
  double cpu0 = cpu_s();
  auto tl = tc::analysis::timeline::load_timeline(store);
  if (!tl.ok()) return std::fprintf(stderr, "%s\n", tl.status().message().c_str()), 1;
  const double load_s = since(t), load_cpu_s = cpu_s() - cpu0;

  // What a zoomed-out frame builds when the view moved: every track's draw
  // list and row of pixels, and the memory columns (tc::viewer::FrameCache).
  tc::viewer::FrameCache cache;
  size_t items = 0;
  const int reps = 20;
  t = Clock::now();
  cpu0 = cpu_s();
  for (int r = 0; r < reps; ++r) {
    cache.invalidate();
    cache.prepare(*tl, {tl->start_ts, tl->end_ts, 1370.0f}, 198);
  }
  const double lod_ms = since(t) * 1e3 / reps, lod_cpu_ms = (cpu_s() - cpu0) * 1e3 / reps;
  items = cache.frame().memory.columns.size();
  for (const auto& lane : cache.frame().tracks) {
    for (const auto& list : lane) items += list.items.size();
  }

  // The viewer's own timer, in a separate process as a user would start it.
  std::string cmd = viewer + " " + store + " --screenshot " + png + " --size " + size + " --frames " +
                    std::to_string(frames);
  if (!std::getenv("DISPLAY")) cmd = "xvfb-run -a " + cmd;
  t = Clock::now();
  const std::string out = run_command(cmd);
  const double viewer_s = since(t);
  double first_frame_s = find_number(out, "time_to_first_frame_s: ");
  double complete_frame_s = find_number(out, "time_to_complete_frame_s: ");
  double viewer_load_s = find_number(out, "load_s: ");
  const MedianMax frame = find_median_max(out, "frame_ms_zoomed_out");
  const MedianMax still = find_median_max(out, "frame_ms_zoomed_out_still");
  const double frame_ms = frame.median;
  double frame_cpu = find_number(out, "frame_cpu_ms_zoomed_out: ");
  double still_cpu = find_number(out, "frame_cpu_ms_zoomed_out_still: ");
  double frame_ui = find_number(out, "draw items (median ");
  double vertices = find_number(out, "frame_gl_zoomed_out: ");

  std::printf("tc-viewer benchmark: %lld events (%lld user ranges on %d threads), store %.0f MiB\n",
              static_cast<long long>(*written), static_cast<long long>(events), threads,
              std::filesystem::file_size(store) / 1048576.0);
  std::printf("%-44s %12s %10s\n", "measure", "value", "target");
  std::printf("%-44s %10.2f s %10s\n", "write the store (tc::store::Writer)", write_s, "");
  std::printf("%-44s %10.2f M/s %8s\n", "  rows written per second", *written / write_s / 1e6, "");
  std::printf("%-44s %10.2f s %10s\n", "load_timeline (model, in process)", load_s, "");
  std::printf("%-44s %10.2f s %10s\n", "  its CPU time, all threads", load_cpu_s, "");
  std::printf("%-44s %10.3f ms %9s\n", "draw lists and row pixels, full width", lod_ms, "");
  std::printf("%-44s %10.3f ms %9s\n", "  their CPU time", lod_cpu_ms, "");
  std::printf("%-44s %12zu %10s\n", "  draw items", items, "");
  std::printf("%-44s %10.2f s %10s\n", "viewer: load (its own timer)", viewer_load_s, "");
  std::printf("%-44s %10.2f s %10s\n", "viewer: time to first frame", first_frame_s, "<= 2 s");
  std::printf("%-44s %10.2f s %10s\n", "viewer: time to the frame with every range", complete_frame_s, "");
  std::printf("%-44s %10.2f ms %9s\n", "viewer: frame, zoomed out, view moved (median)", frame_ms, "<= 8 ms");
  std::printf("%-44s %10.2f ms %9s\n", "viewer: frame, zoomed out, view moved (max)", frame.max, "<= 16 ms");
  std::printf("%-44s %10.2f ms %9s\n", "  of which ImGui and draw lists (median)", frame_ui, "");
  std::printf("%-44s %10.2f ms %9s\n", "  CPU time per frame, all threads", frame_cpu, "");
  std::printf("%-44s %10.2f ms %9s\n", "viewer: frame, zoomed out, view still (median)", still.median, "");
  std::printf("%-44s %10.2f ms %9s\n", "viewer: frame, zoomed out, view still (max)", still.max, "");
  std::printf("%-44s %10.2f ms %9s\n", "  CPU time per frame, all threads", still_cpu, "");
  std::printf("%-44s %12.0f %10s\n", "  vertices per frame", vertices, "");
  std::printf("%-44s %10.2f s %10s\n", "viewer process, start to exit", viewer_s, "");
  std::printf("(machine load average %.1f on %u CPUs)\n", load_average_1min(), std::thread::hardware_concurrency());
  if (first_frame_s < 0 || frame_ms < 0) std::printf("\nviewer output:\n%s\n", out.c_str());
  if (load && frame_ms >= 0) load_table(cmd, runs);
  if (!keep) {
    std::filesystem::remove(store);
    std::filesystem::remove(png);
  } else {
    std::printf("kept %s and %s\n", store.c_str(), png.c_str());
  }
  return first_frame_s < 0 ? 1 : 0;
}
