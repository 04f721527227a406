// tc-bench-viewer: how tc-viewer copes with a big run. Writes a synthetic store
// of N events (default 10 M) through tc::store::Writer, loads it into the
// timeline model, builds full-width draw lists, then runs
// `tc-viewer STORE --screenshot` and reads the viewer's own frame timer.
// Needs a display for the last part: run under `xvfb-run -a`.
//
//   xvfb-run -a build/bin/tc-bench-viewer [--events 10000000] [--dir /tmp]
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <ctime>

#include "tc/viewer/demo_store.h"
#include "tc/viewer/lod.h"
#include "tc/viewer/timeline.h"

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"tc-bench-viewer: store size vs. tc-viewer's time to first frame and frame time"};
  int64_t events = 10'000'000;
  int threads = 4, frames = 30;
  std::string dir = std::filesystem::temp_directory_path().string(), write_only, size = "1600x900";
  bool keep = false;
  cli.add_option("--events", events, "user ranges in the store")->capture_default_str();
  cli.add_option("--threads", threads, "threads (lanes) the ranges are spread over")->capture_default_str();
  cli.add_option("--dir", dir, "where the store is written")->capture_default_str();
  cli.add_option("--size", size, "screenshot size")->capture_default_str();
  cli.add_option("--frames", frames, "frames timed by the viewer")->capture_default_str();
  cli.add_flag("--keep", keep, "keep the store and the screenshot");
  cli.add_option("--write-only", write_only, "only write a demo store of --events events at this path");
  CLI11_PARSE(cli, argc, argv);

  tc::viewer::DemoStoreOptions o;
  o.range_events = events;
  o.threads = threads;
  o.steps = 200;
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
  auto tl = tc::viewer::load_timeline(store);
  if (!tl.ok()) return std::fprintf(stderr, "%s\n", tl.status().message().c_str()), 1;
  const double load_s = since(t), load_cpu_s = cpu_s() - cpu0;

  // Full-width draw lists for every track, as one zoomed-out frame builds them.
  tc::viewer::DrawList list;
  tc::viewer::CounterDrawList mem;
  size_t items = 0;
  const int reps = 20;
  t = Clock::now();
  cpu0 = cpu_s();
  for (int r = 0; r < reps; ++r) {
    items = 0;
    for (const auto& lane : tl->lanes) {
      for (const auto& track : lane.tracks) {
        tc::viewer::build_draw_list(track, {tl->start_ts, tl->end_ts, 1370.0f}, &list);
        items += list.items.size();
      }
    }
    tc::viewer::build_counter_draw_list(tl->memory, {tl->start_ts, tl->end_ts, 1370.0f}, &mem);
    items += mem.columns.size();
  }
  const double lod_ms = since(t) * 1e3 / reps, lod_cpu_ms = (cpu_s() - cpu0) * 1e3 / reps;

  // The viewer's own timer, in a separate process as a user would start it.
  std::string viewer = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "tc-viewer").string();
  std::string cmd = viewer + " " + store + " --screenshot " + png + " --size " + size + " --frames " +
                    std::to_string(frames);
  if (!std::getenv("DISPLAY")) cmd = "xvfb-run -a " + cmd;
  std::string out;
  t = Clock::now();
  if (FILE* p = ::popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
  }
  const double viewer_s = since(t);
  double first_frame_s = find_number(out, "time_to_first_frame_s: ");
  double complete_frame_s = find_number(out, "time_to_complete_frame_s: ");
  double viewer_load_s = find_number(out, "load_s: ");
  double frame_ms = find_number(out, "frame_ms_zoomed_out: median ");
  double frame_max = find_number(out, ", max ");
  double frame_cpu = find_number(out, "frame_cpu_ms_zoomed_out: ");
  double frame_ui = find_number(out, "draw items (median ");

  std::printf("tc-viewer benchmark: %lld events (%lld user ranges on %d threads), store %.0f MiB\n",
              static_cast<long long>(*written), static_cast<long long>(events), threads,
              std::filesystem::file_size(store) / 1048576.0);
  std::printf("%-44s %12s %10s\n", "measure", "value", "target");
  std::printf("%-44s %10.2f s %10s\n", "write the store (tc::store::Writer)", write_s, "");
  std::printf("%-44s %10.2f M/s %8s\n", "  rows written per second", *written / write_s / 1e6, "");
  std::printf("%-44s %10.2f s %10s\n", "load_timeline (model, in process)", load_s, "");
  std::printf("%-44s %10.2f s %10s\n", "  its CPU time, all threads", load_cpu_s, "");
  std::printf("%-44s %10.3f ms %9s\n", "draw lists, full width, all tracks", lod_ms, "");
  std::printf("%-44s %10.3f ms %9s\n", "  their CPU time", lod_cpu_ms, "");
  std::printf("%-44s %12zu %10s\n", "  draw items", items, "");
  std::printf("%-44s %10.2f s %10s\n", "viewer: load (its own timer)", viewer_load_s, "");
  std::printf("%-44s %10.2f s %10s\n", "viewer: time to first frame", first_frame_s, "<= 2 s");
  std::printf("%-44s %10.2f s %10s\n", "viewer: time to the frame with every range", complete_frame_s, "");
  std::printf("%-44s %10.2f ms %9s\n", "viewer: frame, fully zoomed out (median)", frame_ms, "<= 16 ms");
  std::printf("%-44s %10.2f ms %9s\n", "viewer: frame, fully zoomed out (max)", frame_max, "");
  std::printf("%-44s %10.2f ms %9s\n", "  of which ImGui and draw lists (median)", frame_ui, "");
  std::printf("%-44s %10.2f ms %9s\n", "  CPU time per frame, all threads", frame_cpu, "");
  std::printf("%-44s %10.2f s %10s\n", "viewer process, start to exit", viewer_s, "");
  double load = 0;
  if (::getloadavg(&load, 1) == 1) std::printf("(machine load average %.1f on %u CPUs)\n", load, std::thread::hardware_concurrency());
  if (first_frame_s < 0 || frame_ms < 0) std::printf("\nviewer output:\n%s\n", out.c_str());
  if (!keep) {
    std::filesystem::remove(store);
    std::filesystem::remove(png);
  } else {
    std::printf("kept %s and %s\n", store.c_str(), png.c_str());
  }
  return first_frame_s < 0 ? 1 : 0;
}
