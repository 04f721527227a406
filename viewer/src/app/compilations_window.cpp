// Compilations table: sortable by time, reason, graph and duration; a row
// selects the compilation and moves the timeline to it.
#include <imgui.h>

#include <algorithm>
#include <numeric>

#include "app.h"

namespace tc::viewer::app {
namespace {

std::vector<uint32_t> g_order;  // row order, re-sorted when the specs change
size_t g_rows_for = SIZE_MAX;

enum Column { kTime, kStep, kGraph, kReason, kDuration, kChange, kRank };

void sort_rows(const Timeline& tl, const ImGuiTableColumnSortSpecs& spec) {
  auto key = [&](uint32_t i) {
    const Compilation& c = tl.compilations[i];
    switch (spec.ColumnUserID) {
      case kStep: return c.step;
      case kGraph: return c.graph_id;
      case kReason: return static_cast<int64_t>(c.reason);
      case kDuration: return c.dur;
      case kRank: return c.rank;
      default: return c.ts;
    }
  };
  bool asc = spec.SortDirection != ImGuiSortDirection_Descending;
  std::stable_sort(g_order.begin(), g_order.end(), [&](uint32_t a, uint32_t b) {
    int64_t ka = key(a), kb = key(b);
    if (ka != kb) return asc ? ka < kb : ka > kb;
    return tl.compilations[a].ts < tl.compilations[b].ts;
  });
}

}  // namespace

void draw_compilations_window(Document& doc) {
  const Timeline* tl = doc.timeline();
  if (!tl) return;
  if (g_rows_for != tl->compilations.size() || g_order.size() != tl->compilations.size()) {
    g_order.resize(tl->compilations.size());
    std::iota(g_order.begin(), g_order.end(), 0u);
    g_rows_for = tl->compilations.size();
  }
  int recompiles = 0;
  for (const Compilation& c : tl->compilations) recompiles += c.reason != CompileReason::kFirst;
  ImGui::Text("%zu compilations, %d of them recompilations. Click a row to show it on the timeline.",
              tl->compilations.size(), recompiles);
  ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                          ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  const bool job = !tl->ranks.empty();  // a job's: which rank compiled it
  if (!ImGui::BeginTable("compilations", job ? 7 : 6, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("time", ImGuiTableColumnFlags_DefaultSort, 0, kTime);
  if (job) ImGui::TableSetupColumn("rank", 0, 0, kRank);
  ImGui::TableSetupColumn("step", 0, 0, kStep);
  ImGui::TableSetupColumn("graph", 0, 0, kGraph);
  ImGui::TableSetupColumn("reason", 0, 0, kReason);
  ImGui::TableSetupColumn("duration", 0, 0, kDuration);
  ImGui::TableSetupColumn("what changed", ImGuiTableColumnFlags_NoSort | ImGuiTableColumnFlags_WidthStretch, 0, kChange);
  ImGui::TableHeadersRow();
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
    if (specs->SpecsCount > 0) sort_rows(*tl, specs->Specs[0]);
    specs->SpecsDirty = false;
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(g_order.size()));
  while (clipper.Step()) {
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      uint32_t i = g_order[row];
      const Compilation& c = tl->compilations[i];
      EventRef ref = doc.find(TrackKind::kCompilations, i, c.ts);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::Selectable(format_time(*tl, c.ts).c_str(), ref.valid() && doc.selected == ref,
                            ImGuiSelectableFlags_SpanAllColumns)) {
        doc.select(ref, true);
      }
      ImGui::PopID();
      if (job) {
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(c.rank));
      }
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(c.step));
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(c.graph_id));
      ImGui::TableNextColumn();
      ImVec4 colour = c.reason == CompileReason::kShapeChange       ? ImVec4(0.92f, 0.26f, 0.21f, 1)
                      : c.reason == CompileReason::kStructureChange ? ImVec4(0.67f, 0.28f, 0.74f, 1)
                                                                    : ImVec4(0.6f, 0.7f, 0.95f, 1);
      ImGui::TextColored(colour, "%s", c.reason_text.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(c.dur).c_str());
      ImGui::TableNextColumn();
      std::string what;
      for (const InputChange& in : c.inputs) {
        if (!what.empty()) what += "; ";
        what += in.input + " dim " + std::to_string(in.dim) + ": " + std::to_string(in.old_value) + " -> " +
                std::to_string(in.new_value);
      }
      if (what.empty()) what = c.diff;
      ImGui::TextUnformatted(what.c_str());
    }
  }
  ImGui::EndTable();
}

}  // namespace tc::viewer::app
