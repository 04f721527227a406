// Hover tooltips: what an event is, as the model's card for it says.
#include <imgui.h>

#include <algorithm>

#include "app.h"
#include "tc/viewer/model.h"

namespace tc::viewer::app {

void draw_event_tooltip(const Document& doc, EventRef e, uint32_t merged_count) {
  const Timeline* tl = doc.timeline();
  const Track* t = doc.track(e);
  if (!tl || !t) return;
  const uint32_t i = e.event;
  ImGui::BeginTooltip();
  if (merged_count > 1) {
    ImGui::TextColored(ImVec4(1, 0.8f, 0.4f, 1), "%u %s merged in this pixel column; zoom in to separate them",
                       merged_count, track_kind_name(t->kind));
    ImGui::Separator();
    ImGui::TextDisabled("first of them:");
  }
  for (const CardLine& line : event_card(*tl, tl->lanes[static_cast<size_t>(e.lane)], *t, i)) {
    switch (line.style) {
      case CardLine::Style::kText: ImGui::Text("%s", line.text.c_str()); break;
      case CardLine::Style::kDisabled: ImGui::TextDisabled("%s", line.text.c_str()); break;
      case CardLine::Style::kColoured:
        ImGui::TextColored(ImVec4(line.rgba[0], line.rgba[1], line.rgba[2], line.rgba[3]), "%s", line.text.c_str());
        break;
    }
  }
  ImGui::TextDisabled("at %s", format_time(*tl, t->ts[i]).c_str());
  ImGui::EndTooltip();
}

void draw_memory_tooltip(const Document& doc, int64_t ts) {
  const Timeline* tl = doc.timeline();
  if (!tl || tl->memory.size() == 0) return;
  const auto& s = tl->memory;
  auto it = std::upper_bound(s.ts.begin(), s.ts.end(), ts);
  if (it == s.ts.begin()) return;
  double v = s.value[static_cast<size_t>(it - s.ts.begin()) - 1];
  ImGui::BeginTooltip();
  ImGui::Text("live %s", format_bytes(v).c_str());
  if (tl->capacity_bytes > 0) {
    ImGui::Text("capacity %s, headroom %s (%.0f%%)", format_bytes(tl->capacity_bytes).c_str(),
                format_bytes(tl->capacity_bytes - v).c_str(), 100.0 * (tl->capacity_bytes - v) / tl->capacity_bytes);
  }
  ImGui::Text("peak of the run %s", format_bytes(s.max_value).c_str());
  ImGui::TextDisabled("at %s", format_time(*tl, ts).c_str());
  ImGui::EndTooltip();
}

}  // namespace tc::viewer::app
