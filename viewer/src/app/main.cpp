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
#include <optional>

#include "app.h"
#include "screenshot.h"

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
  if (a && count > 0) a->request_open(paths[0]);
}

// "recompilation:N" (the N-th recompilation, from 1), "compilation:N",
// "evaluation:N", "execution:N", "kernel:N" (the N-th timed kernel run), "step:N".
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
  if (kind == "step") {
    return pick(TrackKind::kSteps, tl->steps.size(), [](size_t) { return true; }, [&](size_t i) { return tl->steps[i].ts; });
  }
  return bad("kind must be recompilation, compilation, evaluation, execution, kernel or step");
}

struct ScreenshotArgs {
  std::string out;
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
  glClearColor(0.09f, 0.1f, 0.12f, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  glFinish();
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
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
    // The frame timer: fully zoomed out, draw lists rebuilt every frame.
    std::vector<double> ms, ui_ms;
    const double cpu0 = process_cpu_ms();
    for (int i = 0; i < std::max(1, a.frames); ++i) {
      doc.invalidate_prepared();
      ms.push_back(render_offscreen(app, fb, a, std::nullopt));
      ui_ms.push_back(g_last_ui_ms);
    }
    const double cpu_per_frame = (process_cpu_ms() - cpu0) / static_cast<double>(ms.size());
    std::sort(ui_ms.begin(), ui_ms.end());
    size_t items = doc.prepared().memory.columns.size();
    for (const auto& lane : doc.prepared().tracks) {
      for (const DrawList& l : lane) items += l.items.size();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("frame_ms_zoomed_out: median %.2f, max %.2f over %zu frames at %dx%d, %zu draw items "
                "(median %.2f ms in ImGui and draw lists, the rest in OpenGL)\n",
                ms[ms.size() / 2], ms.back(), ms.size(), a.width, a.height, items, ui_ms[ui_ms.size() / 2]);
    // CPU time of all the process's threads (llvmpipe's included): what a
    // frame costs when the machine is not shared.
    std::printf("frame_cpu_ms_zoomed_out: %.2f\n", cpu_per_frame);
  } else {
    std::fprintf(stderr, "tc-viewer: %s\n", doc.error().c_str());
    exit_code = 4;
  }
  doc.wait(true);  // findings in the picture too
  if (app.panel == Panel::kStatistics) choose_statistics_row(doc, 0);  // the top kernel's histogram
  std::optional<ImVec2> mouse;
  for (const std::string* spec : {&a.select, &a.hover}) {
    if (spec->empty()) continue;
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
  std::printf("screenshot: %s (%dx%d)\n", a.out.c_str(), a.width, a.height);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = Clock::now();
  CLI::App cli{
      "tc-viewer: the timeline of a tc run (a .tcdb store from tc-profile).\n\n"
      "  tc-viewer run.tcdb                       open a store in a window\n"
      "  tc-viewer                                open one from the file panel, or drop it on the window\n"
      "  tc-viewer run.tcdb --screenshot out.png  render without a window (e.g. under xvfb-run -a), write a PNG,\n"
      "                                           and print the frame timer (time to first frame, frame ms)\n\n"
      "In the window: mouse wheel zooms around the cursor, dragging pans, right-dragging a range zooms to it,\n"
      "arrows or WASD pan and zoom, F fits the whole run, Z zooms to the selected event. Click an event, or a\n"
      "row of the Compilations, Explicit evaluations or Findings tables, to select it and move to it.",
      "tc-viewer"};
  std::string store;
  ScreenshotArgs shot;
  std::string size = "1600x900", panel = "compilations";
  cli.add_option("store", store, "the .tcdb store to open");
  cli.add_option("--screenshot", shot.out, "render headless and write this PNG, then exit");
  cli.add_option("--size", size, "screenshot size, WIDTHxHEIGHT")->capture_default_str();
  cli.add_option("--select", shot.select,
                 "select an event and move the view to it: recompilation:N, compilation:N, evaluation:N, "
                 "execution:N, kernel:N (the N-th timed kernel run) or step:N (N from 1)");
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

  Options options;
  if (!store.empty()) options.paths.push_back(store);
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
      glClearColor(0.09f, 0.1f, 0.12f, 1);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      glfwSwapBuffers(window);
    }
  }
  app.doc().wait(true);  // let worker threads finish before their Document goes
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
