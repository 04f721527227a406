// The file panel: type a path (or drop a file on the window) to open a store.
#include <imgui.h>

#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "app.h"

namespace tc::viewer::app {

void draw_file_panel(App& app) {
  Document& doc = app.doc();
  ImGui::TextUnformatted("Open a store:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(200.0f, ImGui::GetContentRegionAvail().x - 200));
  bool enter = ImGui::InputTextWithHint("##path", "path/to/run.tcdb, or a job's run.rank0.tcdb run.rank1.tcdb ... (or drop the files on the window)", app.path_buffer_,
                                        sizeof app.path_buffer_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Open") || enter) && app.path_buffer_[0] != '\0') {
    // Several paths separated by spaces: the stores of one job (unless the whole text names a file).
    std::string text = app.path_buffer_;
    std::vector<std::string> paths;
    std::error_code ec;
    if (!std::filesystem::exists(text, ec)) {
      std::istringstream words(text);
      for (std::string w; words >> w;) paths.push_back(w);
    }
    if (paths.size() > 1) app.request_open(paths);
    else app.request_open(text);
  }
  ImGui::SameLine();
  if (ImGui::Button("Close panel")) app.show_file_panel = false;
  if (doc.state() == Document::State::kLoading) ImGui::TextDisabled("loading %s ...", doc.path().c_str());
}

}  // namespace tc::viewer::app
