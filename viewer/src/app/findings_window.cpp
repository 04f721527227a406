// Findings from the analyzer (tc/analysis/report.h), costliest first. A row
// marks its anchors on the timeline and moves the view to them.
#include <imgui.h>

#include <algorithm>

#include "app.h"

namespace tc::viewer::app {

void draw_findings_window(Document& doc) {
  if (doc.analyzing()) {
    ImGui::TextDisabled("analyzing the run...");
    return;
  }
  if (!doc.findings_error().empty()) {
    ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "analysis failed: %s", doc.findings_error().c_str());
    return;
  }
  const auto& findings = doc.findings();
  if (findings.empty()) {
    ImGui::TextDisabled("No findings: the analyzer found nothing to fix in this run.");
    return;
  }
  ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                          ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("findings", 4, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("severity");
  ImGui::TableSetupColumn("finding", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("suggestion", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("saves");
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < findings.size(); ++i) {
    const analysis::Finding& f = findings[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable(analysis::severity_name(f.severity), doc.selected_finding == static_cast<int>(i),
                          ImGuiSelectableFlags_SpanAllColumns)) {
      doc.select_finding(static_cast<int>(i));
    }
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", f.title.c_str());
    ImGui::TextDisabled("%s", f.kind.c_str());
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", f.suggestion.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.2f s", f.estimated_saving_s);
  }
  ImGui::EndTable();
}

}  // namespace tc::viewer::app
