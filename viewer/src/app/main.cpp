// tc-viewer: the timeline of a tc run. See docs/viewer.md.
#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <GL/gl.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "app.h"
#include "screenshot.h"
#include "tc/viewer/model.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace tc::viewer;
using namespace tc::viewer::app;

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void on_drop(GLFWwindow* window, int count, const char** paths) {
  auto* a = static_cast<App*>(glfwGetWindowUserPointer(window));
  if (a && count > 0) a->request_open(std::vector<std::string>(paths, paths + count));  // several: one job's stores
}

// "recompilation:N" (the N-th recompilation, from 1), "compilation:N",
// "evaluation:N", "execution:N", "kernel:N" (the N-th timed kernel run), "collective:N" (by arrival), "step:N",
// "nvtx:N" (the N-th NVTX range, push/pop or start/end, by start time), "mark:N" (the N-th NVTX mark).
tc::StatusOr<EventRef> resolve(const Document& doc, const std::string& spec) {
  const Timeline* tl = doc.timeline();
  auto bad = [&](const std::string& why) {
    return tc::Status(tc::StatusCode::kInvalidArgument, "--select/--hover " + spec + ": " + why);
  };
  if (!tl) return bad("no store loaded");
  size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  long n = 1;
  if (colon != std::string::npos) {
    try {
      n = std::stol(spec.substr(colon + 1));
    } catch (...) {
      return bad("N must be a number");
    }
  }
  if (n < 1) return bad("N counts from 1");
  auto pick = [&](TrackKind k, size_t count, auto accept, auto ts_of) -> tc::StatusOr<EventRef> {
    long seen = 0;
    for (size_t i = 0; i < count; ++i) {
      if (!accept(i) || ++seen < n) continue;
      EventRef e = doc.find(k, static_cast<uint32_t>(i), ts_of(i));
      if (!e.valid()) return bad("not on the timeline");
      return e;
    }
    return bad("the run has only " + std::to_string(seen));
  };
  auto comp_ts = [&](size_t i) { return tl->compilations[i].ts; };
  if (kind == "recompilation") {
    return pick(TrackKind::kCompilations, tl->compilations.size(),
                [&](size_t i) { return tl->compilations[i].reason != CompileReason::kFirst; }, comp_ts);
  }
  if (kind == "compilation") return pick(TrackKind::kCompilations, tl->compilations.size(), [](size_t) { return true; }, comp_ts);
  if (kind == "evaluation") {
    return pick(TrackKind::kEvaluations, tl->evaluations.size(), [](size_t) { return true; },
                [&](size_t i) { return tl->evaluations[i].ts; });
  }
  if (kind == "execution") {
    return pick(TrackKind::kExecutions, tl->executions.size(), [](size_t) { return true; },
                [&](size_t i) { return tl->executions[i].ts; });
  }
  if (kind == "kernel") {
    return pick(TrackKind::kKernels, tl->kernel_runs.size(), [](size_t) { return true; },
                [&](size_t i) { return tl->kernel_runs[i].ts; });
  }
  if (kind == "collective") {  // the N-th collective call of any rank, by arrival
    return pick(TrackKind::kCollectives, tl->collectives.size(), [](size_t) { return true; },
                [&](size_t i) { return tl->collectives[i].ts; });
  }
  if (kind == "step") {
    return pick(TrackKind::kSteps, tl->steps.size(), [](size_t) { return true; }, [&](size_t i) { return tl->steps[i].ts; });
  }
  if (kind == "nvtx" || kind == "mark") {
    std::vector<std::pair<int64_t, EventRef>> events;  // by start time over every lane
    for (size_t l = 0; l < tl->lanes.size(); ++l) {
      for (size_t k = 0; k < tl->lanes[l].tracks.size(); ++k) {
        const Track& t = tl->lanes[l].tracks[k];
        bool want = kind == "mark" ? t.kind == TrackKind::kNvtxMarks : t.kind == TrackKind::kNvtxRanges || t.kind == TrackKind::kNvtxStartEnd;
        for (uint32_t i = 0; want && i < t.size(); ++i) events.push_back({t.ts[i], {static_cast<int>(l), static_cast<int>(k), i}});
      }
    }
    if (static_cast<size_t>(n) > events.size()) return bad("the run has only " + std::to_string(events.size()));
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return events[static_cast<size_t>(n - 1)].second;
  }
  return bad("kind must be recompilation, compilation, evaluation, execution, kernel, collective, step, nvtx, mark or finding");
}

struct ScreenshotArgs {
  std::string out;
  std::string collapse;  // ranks, comma-separated
  int width = 1600, height = 900;
  std::string select, hover;
  int frames = 30;
};

// One frame into the offscreen buffer; returns its time in ms (to glFinish).
// Glyphs sit on whole pixels, so nearest sampling looks the same as linear
// and costs software renderers (llvmpipe under Xvfb) much less per pixel.
void use_nearest_font_filter() {
  static bool done = false;
  ImTextureID tex = ImGui::GetIO().Fonts->TexID;
  if (done || !tex) return;
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(reinterpret_cast<intptr_t>(tex)));
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  done = true;
}

// The timeline's rows show palette::kBackground where they have no event, so
// the clear colour is that, exactly.
void clear_to_background() {
  constexpr palette::Rgb c = palette::kBackground;
  glClearColor(c.r / 255.0f, c.g / 255.0f, c.b / 255.0f, 1);
  glClear(GL_COLOR_BUFFER_BIT);
}

double g_last_ui_ms = 0;  // of the last frame: ImGui and the draw lists, before OpenGL

double render_offscreen(App& app, const Offscreen& fb, const ScreenshotArgs& a, std::optional<ImVec2> mouse) {
  auto t = Clock::now();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(static_cast<float>(a.width), static_cast<float>(a.height));
  io.DisplayFramebufferScale = ImVec2(1, 1);
  io.MousePos = mouse ? *mouse : ImVec2(-FLT_MAX, -FLT_MAX);
  ImGui::NewFrame();
  use_nearest_font_filter();
  app.frame();
  ImGui::Render();
  g_last_ui_ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  fb.bind();
  glViewport(0, 0, a.width, a.height);
  clear_to_background();
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  glFinish();
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct FrameTimes {
  double median = 0, max = 0, ui_median = 0, cpu = 0;  // ms; cpu: all threads, per frame
  size_t frames = 0;
};

// a.frames frames of the current view; moved: as if the view changed before each.
FrameTimes time_frames(App& app, const Offscreen& fb, const ScreenshotArgs& a, bool moved) {
  std::vector<double> ms, ui_ms;
  const double cpu0 = process_cpu_ms();
  for (int i = 0; i < std::max(1, a.frames); ++i) {
    if (moved) app.doc().invalidate_prepared();
    ms.push_back(render_offscreen(app, fb, a, std::nullopt));
    ui_ms.push_back(g_last_ui_ms);
  }
  FrameTimes t;
  t.frames = ms.size();
  t.cpu = (process_cpu_ms() - cpu0) / static_cast<double>(ms.size());
  std::sort(ms.begin(), ms.end());
  std::sort(ui_ms.begin(), ui_ms.end());
  t.median = ms[ms.size() / 2];
  t.max = ms.back();
  t.ui_median = ui_ms[ui_ms.size() / 2];
  return t;
}

int run_screenshot(App& app, const ScreenshotArgs& a, Clock::time_point start) {
  Offscreen fb;
  if (tc::Status s = fb.create(a.width, a.height); !s.ok()) {
    std::fprintf(stderr, "tc-viewer: %s\n", s.message().c_str());
    return static_cast<int>(s.code());
  }
  Document& doc = app.doc();
  doc.view.width_px = static_cast<float>(a.width) - 230;
  doc.wait_first();
  render_offscreen(app, fb, a, std::nullopt);
  const double first_frame_s = seconds_since(start);
  const bool first_complete = doc.complete();
  doc.wait(false);
  if (!a.collapse.empty()) {
    const Timeline* tl = doc.timeline();
    size_t at = 0;
    while (tl && at <= a.collapse.size()) {
      size_t comma = std::min(a.collapse.find(',', at), a.collapse.size());
      const std::string r = a.collapse.substr(at, comma - at);
      bool found = false;
      for (size_t g = 0; g < tl->ranks.size(); ++g) {
        if (std::to_string(tl->ranks[g].rank) == r) doc.set_collapsed(static_cast<int>(g), true), found = true;
      }
      if (!found) {
        std::fprintf(stderr, "tc-viewer: --collapse %s: the timeline has no rank %s\n", a.collapse.c_str(), r.c_str());
        return 2;
      }
      at = comma + 1;
    }
  }
  render_offscreen(app, fb, a, std::nullopt);
  const double full_frame_s = seconds_since(start);
  int exit_code = 0;
  if (const Timeline* tl = doc.timeline()) {
    std::printf("tc-viewer: %s: %lld events on %zu lanes\n", tl->path.c_str(), static_cast<long long>(tl->event_count),
                tl->lanes.size());
    std::printf("load_s: %.3f\n", doc.load_s());
    std::printf("time_to_first_frame_s: %.3f%s\n", first_frame_s,
                first_complete ? "" : " (steps, compilations, evaluations, memory; ranges still loading)");
    std::printf("time_to_complete_frame_s: %.3f\n", full_frame_s);
    // The frame timer, fully zoomed out, once the analyzer's thread is done:
    // after a big load it competes for the CPUs for a second or more, which
    // is not what a frame costs. Two kinds of frame: the view moved (draw
    // lists and row pixels rebuilt, as while panning or zooming) and the view
    // still (both cached, as while hovering).
    doc.wait(true);
    const FrameTimes moved = time_frames(app, fb, a, true);
    const FrameTimes still = time_frames(app, fb, a, false);
    size_t items = doc.prepared().memory.columns.size();
    for (const auto& lane : doc.prepared().tracks) {
      for (const DrawList& l : lane) items += l.items.size();
    }
    std::printf("frame_ms_zoomed_out: median %.2f, max %.2f over %zu frames at %dx%d, %zu draw items "
                "(median %.2f ms in ImGui and draw lists, the rest in OpenGL; the view moved every frame)\n",
                moved.median, moved.max, moved.frames, a.width, a.height, items, moved.ui_median);
    // CPU time of all the process's threads (llvmpipe's included): what a
    // frame costs when the machine is not shared.
    std::printf("frame_cpu_ms_zoomed_out: %.2f\n", moved.cpu);
    std::printf("frame_ms_zoomed_out_still: median %.2f, max %.2f over %zu frames (median %.2f ms in ImGui; the view "
                "unchanged, draw lists cached)\n",
                still.median, still.max, still.frames, still.ui_median);
    std::printf("frame_cpu_ms_zoomed_out_still: %.2f\n", still.cpu);
    const ImDrawData* dd = ImGui::GetDrawData();
    int commands = 0;
    for (int i = 0; i < dd->CmdListsCount; ++i) commands += dd->CmdLists[i]->CmdBuffer.Size;
    std::printf("frame_gl_zoomed_out: %d vertices, %d indices, %d draw commands\n", dd->TotalVtxCount, dd->TotalIdxCount,
                commands);
  } else {
    std::fprintf(stderr, "tc-viewer: %s\n", doc.error().c_str());
    exit_code = doc.error_code() == tc::StatusCode::kCorrupt ? 5 : 4;  // 5: a damaged store
  }
  doc.wait(true);  // findings in the picture too
  if (app.panel == Panel::kStatistics) choose_statistics_row(doc, 0);  // the top kernel's histogram
  std::optional<ImVec2> mouse;
  for (const std::string* spec : {&a.select, &a.hover}) {
    if (spec->empty()) continue;
    if (spec->rfind("finding:", 0) == 0) {  // the N-th row of the Findings table, as a click on it
      long n = std::atol(spec->c_str() + 8);
      if (n < 1 || static_cast<size_t>(n) > doc.findings().size()) {
        std::fprintf(stderr, "tc-viewer: --select %s: the run has %zu findings\n", spec->c_str(), doc.findings().size());
        return 2;
      }
      doc.select_finding(static_cast<int>(n - 1));
      continue;
    }
    auto e = resolve(doc, *spec);
    if (!e.ok()) {
      std::fprintf(stderr, "tc-viewer: %s\n", e.status().message().c_str());
      return 2;
    }
    doc.select(*e, true);
  }
  for (int i = 0; i < 3; ++i) {
    render_offscreen(app, fb, a, mouse);
    if (!a.hover.empty()) {
      if (auto p = app.selected_screen_pos()) mouse = ImVec2(p->first, p->second);
    }
  }
  if (tc::Status s = write_png(a.out, a.width, a.height, fb.read()); !s.ok()) {
    std::fprintf(stderr, "tc-viewer: %s\n", s.message().c_str());
    return static_cast<int>(s.code());
  }
  if (const Timeline* tl = doc.timeline()) {
    std::printf("view_s: %.6f .. %.6f (seconds since the start)\n", static_cast<double>(doc.view.t0 - tl->origin_ts) / 1e9,
                static_cast<double>(doc.view.t1 - tl->origin_ts) / 1e9);
  }
  std::printf("screenshot: %s (%dx%d)\n", a.out.c_str(), a.width, a.height);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = Clock::now();
  CLI::App cli{
      "tc-viewer: the timeline of a tc run (a .tcdb store from tc-profile).\n\n"
      "  tc-viewer run.tcdb                       open a store in a window\n"
      "  tc-viewer run.rank*.tcdb                 the stores of one MPI job: one group of lanes per rank, on rank 0's clock\n"
      "  tc-viewer                                open one from the file panel, or drop it on the window\n"
      "  tc-viewer run.tcdb --screenshot out.png  render without a window (e.g. under xvfb-run -a), write a PNG,\n"
      "                                           and print the frame timer (time to first frame, frame ms)\n\n"
      "In the window: mouse wheel zooms around the cursor, dragging pans, right-dragging a range zooms to it,\n"
      "arrows or WASD pan and zoom, F fits the whole run, Z zooms to the selected event. Click an event, or a\n"
      "row of the Compilations, Explicit evaluations or Findings tables, to select it and move to it.",
      "tc-viewer"};
  std::vector<std::string> stores;
  std::string collapse;
  ScreenshotArgs shot;
  std::string size = "1600x900", panel = "compilations";
  cli.add_option("stores", stores,
                 "the .tcdb store to open; or the stores of one MPI job (run.rank*.tcdb), every rank on one time axis");
  cli.add_option("--collapse", collapse, "ranks of a job drawn as their header row only, e.g. 1,3 (screenshots)");
  cli.add_option("--screenshot", shot.out, "render headless and write this PNG, then exit");
  cli.add_option("--size", size, "screenshot size, WIDTHxHEIGHT")->capture_default_str();
  cli.add_option("--select", shot.select,
                 "select an event and move the view to it: recompilation:N, compilation:N, evaluation:N, "
                 "execution:N, kernel:N (the N-th timed kernel run), collective:N (the N-th collective call of any rank, by "
                 "arrival), step:N, nvtx:N (the N-th NVTX range by start time), "
                 "mark:N (the N-th NVTX mark) or finding:N (the N-th row of the Findings table, and the view to its step); N from 1");
  cli.add_option("--hover", shot.hover, "like --select, and put the mouse on it so its tooltip shows (screenshots)");
  cli.add_option("--panel", panel, "table shown under the timeline: compilations, evaluations, findings or statistics (per kernel, "
                 "source line or range name, with the slowest kernel's histogram)")
      ->capture_default_str()
      ->check(CLI::IsMember({"compilations", "evaluations", "findings", "statistics"}));
  cli.add_option("--frames", shot.frames, "frames timed for frame_ms_zoomed_out in screenshot mode")
      ->capture_default_str();
  CLI11_PARSE(cli, argc, argv);
  if (std::sscanf(size.c_str(), "%dx%d", &shot.width, &shot.height) != 2 || shot.width < 64 || shot.height < 64 ||
      shot.width > 8192 || shot.height > 8192) {
    std::fprintf(stderr, "tc-viewer: --size %s: expected WIDTHxHEIGHT, e.g. 1600x900\n", size.c_str());
    return 2;
  }
  const bool headless = !shot.out.empty();
  shot.collapse = collapse;

  Options options;
  options.paths = stores;
  options.screenshot_mode = headless;
  App app(options);  // starts loading now, while the window is made
  app.panel = panel == "findings"      ? Panel::kFindings
              : panel == "evaluations" ? Panel::kEvaluations
              : panel == "statistics"  ? Panel::kStatistics
                                       : Panel::kCompilations;

  glfwSetErrorCallback([](int, const char* what) { std::fprintf(stderr, "tc-viewer: GLFW: %s\n", what); });
  if (!glfwInit()) {
    std::fprintf(stderr, "tc-viewer: no display; set DISPLAY, or run under xvfb-run -a for --screenshot\n");
    return 9;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, headless ? GLFW_FALSE : GLFW_TRUE);
  GLFWwindow* window = glfwCreateWindow(headless ? shot.width : 1600, headless ? shot.height : 900, "tc-viewer",
                                        nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "tc-viewer: cannot create an OpenGL 3.3 window\n");
    glfwTerminate();
    return 9;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless ? 0 : 1);
  glfwSetWindowUserPointer(window, &app);
  glfwSetDropCallback(window, on_drop);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 150");

  int rc = 0;
  if (headless) {
    rc = run_screenshot(app, shot, start);
  } else {
    while (!glfwWindowShouldClose(window)) {
      glfwPollEvents();
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      use_nearest_font_filter();
      app.frame();
      ImGui::Render();
      int w, h;
      glfwGetFramebufferSize(window, &w, &h);
      glViewport(0, 0, w, h);
      clear_to_background();
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      glfwSwapBuffers(window);
    }
  }
  app.doc().wait(true);  // let worker threads finish before their Document goes
  app.release_gl();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
