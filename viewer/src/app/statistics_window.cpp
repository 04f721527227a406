// Statistics: per kernel, per source site of kernels, or per range name,
// count, total, mean, p50/p99 and a histogram of durations; a search box
// filters by name; clicking a row selects its slowest instance.
#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cstring>

#include "app.h"

namespace tc::viewer::app {
namespace {

struct State {
  const Timeline* for_timeline = nullptr;
  StatsBy by = StatsBy::kKernel;
  std::vector<EventStats> rows;
  char search[128] = "";
  int chosen = -1;
};
State g_stats;  // one document at a time

bool matches(const std::string& name, const char* needle) {
  if (!*needle) return true;
  auto it = std::search(name.begin(), name.end(), needle, needle + std::strlen(needle),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); });
  return it != name.end();
}

}  // namespace

void draw_statistics_window(Document& doc) {
  const Timeline* tl = doc.timeline();
  if (!tl) return;
  State& s = g_stats;
  int by = static_cast<int>(s.by);
  bool changed = s.for_timeline != tl;
  ImGui::TextUnformatted("Group by");
  ImGui::SameLine();
  changed |= ImGui::RadioButton("kernel", &by, static_cast<int>(StatsBy::kKernel));
  ImGui::SameLine();
  changed |= ImGui::RadioButton("source line", &by, static_cast<int>(StatsBy::kSite));
  ImGui::SameLine();
  changed |= ImGui::RadioButton("range name", &by, static_cast<int>(StatsBy::kRange));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(260);
  ImGui::InputTextWithHint("##search", "search by name", s.search, sizeof s.search);
  if (changed) {
    s.by = static_cast<StatsBy>(by);
    s.rows = event_statistics(*tl, s.by);
    s.for_timeline = tl;
    s.chosen = -1;
  }
  int64_t all = 0;
  for (const EventStats& r : s.rows) all += r.total;
  if (s.rows.empty()) {
    ImGui::TextDisabled(s.by == StatsBy::kRange ? "This run recorded no ranges."
                                                : "This run has no kernel timings (record it with tc-profile; stores before schema v2 have none).");
    return;
  }
  if (s.chosen >= 0 && static_cast<size_t>(s.chosen) < s.rows.size()) {
    const EventStats& c = s.rows[static_cast<size_t>(s.chosen)];
    ImGui::Text("%s: durations from %s to %s (log scale)", c.name.c_str(), format_duration(c.min).c_str(), format_duration(c.max).c_str());
    ImGui::PlotHistogram("##histogram", c.histogram.data(), static_cast<int>(c.histogram.size()), 0, nullptr, 0.0f, FLT_MAX,
                         ImVec2(ImGui::GetContentRegionAvail().x, 48));
  }
  ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("statistics", 7, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthStretch);
  for (const char* h : {"count", "total", "share", "mean", "p50", "p99"}) ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const EventStats& r = s.rows[i];
    if (!matches(r.name, s.search)) continue;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable(r.name.c_str(), s.chosen == static_cast<int>(i), ImGuiSelectableFlags_SpanAllColumns)) {
      s.chosen = static_cast<int>(i);
      doc.select(EventRef{r.slowest_lane, r.slowest_track, r.slowest_event}, true);
    }
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::Text("%lld", static_cast<long long>(r.count));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(r.total).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.1f%%", all > 0 ? 100.0 * static_cast<double>(r.total) / static_cast<double>(all) : 0.0);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(r.mean).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(r.p50).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(r.p99).c_str());
  }
  ImGui::EndTable();
}

// For --select/--hover slowest-kernel and screenshots of the window.
void choose_statistics_row(const Document& doc, int row) {
  if (const Timeline* tl = doc.timeline()) {
    g_stats.by = StatsBy::kKernel;
    g_stats.rows = event_statistics(*tl, g_stats.by);
    g_stats.for_timeline = tl;
    g_stats.chosen = row < static_cast<int>(g_stats.rows.size()) ? row : -1;
  }
}

}  // namespace tc::viewer::app
