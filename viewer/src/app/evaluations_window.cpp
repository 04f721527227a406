// Explicit evaluations grouped by call site, costliest first. Clicking a row
// selects its next occurrence on the timeline (click again to step through).
#include <imgui.h>

#include <algorithm>
#include <map>

#include "app.h"

namespace tc::viewer::app {
namespace {

struct Site {
  int64_t loc_id = 0;
  std::string kind, where;
  std::vector<uint32_t> evaluations;  // indices in Timeline::evaluations, by time
  int64_t total_ns = 0;
  size_t next = 0;  // which occurrence a click selects
};

std::vector<Site> g_sites;
const Timeline* g_sites_for = nullptr;

void group(const Timeline& tl) {
  std::map<std::pair<int64_t, std::string>, Site> by;
  for (uint32_t i = 0; i < tl.evaluations.size(); ++i) {
    const Evaluation& e = tl.evaluations[i];
    Site& s = by[{e.loc_id, e.kind}];
    s.loc_id = e.loc_id;
    s.kind = e.kind;
    s.evaluations.push_back(i);
    s.total_ns += std::max<int64_t>(e.dur, 0);
  }
  g_sites.clear();
  for (auto& [key, s] : by) {
    const Location* loc = tl.location(s.loc_id);
    s.where = call_site(tl, s.loc_id) + (loc && !loc->function.empty() ? " in " + loc->function : "");
    g_sites.push_back(std::move(s));
  }
  std::sort(g_sites.begin(), g_sites.end(), [](const Site& a, const Site& b) { return a.total_ns > b.total_ns; });
  g_sites_for = &tl;
}

}  // namespace

void draw_evaluations_window(Document& doc) {
  const Timeline* tl = doc.timeline();
  if (!tl) return;
  if (g_sites_for != tl) group(*tl);
  ImGui::Text("%zu explicit evaluations at %zu call sites. Click a row to step through its occurrences.",
              tl->evaluations.size(), g_sites.size());
  ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                          ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("evaluations", 5, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("call site", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("kind");
  ImGui::TableSetupColumn("count");
  ImGui::TableSetupColumn("total");
  ImGui::TableSetupColumn("mean");
  ImGui::TableHeadersRow();
  for (size_t r = 0; r < g_sites.size(); ++r) {
    Site& s = g_sites[r];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(r));
    bool selected = false;
    if (const Track* t = doc.track(doc.selected); t && t->kind == TrackKind::kEvaluations) {
      const Evaluation& cur = tl->evaluations[t->ref[doc.selected.event]];
      selected = cur.loc_id == s.loc_id && cur.kind == s.kind;
    }
    if (ImGui::Selectable(s.where.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns)) {
      uint32_t i = s.evaluations[s.next % s.evaluations.size()];
      ++s.next;
      doc.select(doc.find(TrackKind::kEvaluations, i, tl->evaluations[i].ts), true);
    }
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(s.kind.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%zu", s.evaluations.size());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(s.total_ns).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(s.total_ns / static_cast<int64_t>(s.evaluations.size())).c_str());
  }
  ImGui::EndTable();
}

}  // namespace tc::viewer::app
