#include "app.h"

#include <imgui.h>

#include <cstring>

namespace tc::viewer::app {

App::App(Options options) : options_(std::move(options)) {
  if (!options_.paths.empty()) request_open(options_.paths);
  else show_file_panel = true;
}

void App::request_open(const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  std::string shown;
  for (const std::string& p : paths) shown += (shown.empty() ? "" : " ") + p;
  std::strncpy(path_buffer_, shown.c_str(), sizeof path_buffer_ - 1);
  doc_.open(paths);
}

void App::release_gl() {
  row_texture_.release();
  release_gl_state();
}

void App::frame() {
  // Preprocess: take finished loads, build this frame's draw lists.
  doc_.poll();
  doc_.prepare();

  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->Pos);
  ImGui::SetNextWindowSize(vp->Size);
  ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                           ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoBringToFrontOnFocus |
                           ImGuiWindowFlags_NoSavedSettings |
                           ImGuiWindowFlags_NoBackground;  // the clear colour is the background: one pass less
  ImGui::Begin("tc-viewer", nullptr, flags);
  if (ImGui::BeginMenuBar()) {
    if (ImGui::BeginMenu("File")) {
      if (ImGui::MenuItem("Open...", nullptr, show_file_panel)) show_file_panel = !show_file_panel;
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
      if (ImGui::MenuItem("Fit the whole run", "F")) doc_.fit_all();
      if (ImGui::MenuItem("Zoom to selection", "Z", false, doc_.selected.valid())) doc_.select(doc_.selected, true);
      ImGui::EndMenu();
    }
    ImGui::TextDisabled("wheel: zoom   drag: pan   right-drag: zoom to range   arrows/WASD   F: fit   Z: selection");
    ImGui::EndMenuBar();
  }

  const Document::State state = doc_.state();
  if (show_file_panel || state == Document::State::kEmpty || state == Document::State::kFailed) {
    draw_file_panel(*this);
  }
  if (!doc_.error().empty()) {
    ImGui::TextColored(ImVec4(1.0f, 0.35f, 0.35f, 1.0f), "%s", doc_.error().c_str());
  }
  if (!doc_.warning().empty()) ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.3f, 1.0f), "%s", doc_.warning().c_str());
  if (state == Document::State::kLoading && !doc_.timeline()) ImGui::TextDisabled("loading %s ...", doc_.path().c_str());

  if (const Timeline* tl = doc_.timeline()) {
    std::string what = tl->path;
    if (!tl->ranks.empty()) {
      what = (tl->job.empty() ? std::string("job") : "job " + tl->job) + ": " + std::to_string(tl->ranks.size()) + " ranks on rank 0's clock (" +
             std::to_string(tl->paths.size()) + (tl->paths.size() == 1 ? " store)" : " stores)");
    }
    ImGui::Text("%s   %lld events on %zu lanes   view %s wide   loaded in %.2f s", what.c_str(),
                static_cast<long long>(tl->event_count), tl->lanes.size(),
                format_duration(doc_.view.t1 - doc_.view.t0).c_str(), doc_.load_s());
    if (!doc_.complete()) {
      ImGui::SameLine();
      ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "   loading the ranges...");
    }
    float height = ImGui::GetContentRegionAvail().y * 0.64f;
    draw_timeline_window(*this, height);
    if (ImGui::BeginTabBar("panels")) {
      auto tab = [&](const char* label, Panel p) {
        ImGuiTabItemFlags f = first_frame_ && panel == p ? ImGuiTabItemFlags_SetSelected : 0;
        bool open = ImGui::BeginTabItem(label, nullptr, f);
        if (open) {
          if (!first_frame_) panel = p;
          switch (p) {
            case Panel::kCompilations: draw_compilations_window(doc_); break;
            case Panel::kEvaluations: draw_evaluations_window(doc_); break;
            case Panel::kFindings: draw_findings_window(doc_); break;
            case Panel::kStatistics: draw_statistics_window(doc_); break;
          }
          ImGui::EndTabItem();
        }
      };
      tab("Compilations", Panel::kCompilations);
      tab("Explicit evaluations", Panel::kEvaluations);
      std::string findings = "Findings (" + std::to_string(doc_.findings().size()) + ")###findings";
      tab(findings.c_str(), Panel::kFindings);
      tab("Statistics", Panel::kStatistics);
      ImGui::EndTabBar();
      first_frame_ = false;
    }
  }
  ImGui::End();
}

}  // namespace tc::viewer::app
