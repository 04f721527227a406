// The file panel: type a path (or drop a file on the window) to open a store.
#include <imgui.h>

#include <cstring>

#include "app.h"

namespace tc::viewer::app {

void draw_file_panel(App& app) {
  Document& doc = app.doc();
  ImGui::TextUnformatted("Open a store:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(200.0f, ImGui::GetContentRegionAvail().x - 200));
  bool enter = ImGui::InputTextWithHint("##path", "path/to/run.tcdb (or drop a file on the window)", app.path_buffer_,
                                        sizeof app.path_buffer_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Open") || enter) && app.path_buffer_[0] != '\0') app.request_open(app.path_buffer_);
  ImGui::SameLine();
  if (ImGui::Button("Close panel")) app.show_file_panel = false;
  if (doc.state() == Document::State::kLoading) ImGui::TextDisabled("loading %s ...", doc.path().c_str());
}

}  // namespace tc::viewer::app
