// Hover tooltips: what an event is, from the model's records.
#include <imgui.h>

#include <algorithm>

#include "app.h"
#include "tc/viewer/palette.h"

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
  const int64_t dur = t->end[i] - t->ts[i];
  switch (t->kind) {
    case TrackKind::kSteps: {
      const Step& s = tl->steps[t->ref[i]];
      ImGui::Text("Step %lld", static_cast<long long>(s.step));
      ImGui::Text("mark_step() took %s", format_duration(s.dur).c_str());
      ImGui::Text("called at %s", call_site(*tl, s.loc_id).c_str());
      break;
    }
    case TrackKind::kCompilations: {
      const Compilation& c = tl->compilations[t->ref[i]];
      bool re = c.reason != CompileReason::kFirst;
      ImGui::Text("%s of graph %lld", re ? "Recompilation" : "Compilation", static_cast<long long>(c.graph_id));
      ImGui::Text("reason: %s   trigger: %s", c.reason_text.c_str(), c.trigger.c_str());
      for (const InputChange& in : c.inputs) {
        ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "input %s, dim %lld: %lld -> %lld", in.input.c_str(),
                           static_cast<long long>(in.dim), static_cast<long long>(in.old_value),
                           static_cast<long long>(in.new_value));
      }
      if (!c.diff.empty()) ImGui::Text("differs: %s", c.diff.c_str());
      ImGui::Text("took %s in step %lld (cache: %s)", format_duration(c.dur).c_str(), static_cast<long long>(c.step),
                  c.cache.c_str());
      ImGui::Text("nodes %lld -> %lld after passes, %lld kernels", static_cast<long long>(c.nodes_before),
                  static_cast<long long>(c.nodes_after), static_cast<long long>(c.kernels));
      ImGui::Text("graph cut at %s", call_site(*tl, c.loc_id).c_str());
      break;
    }
    case TrackKind::kExecutions: {
      const Execution& x = tl->executions[t->ref[i]];
      ImGui::Text("Execution of graph %lld", static_cast<long long>(x.graph_id));
      ImGui::Text("took %s in step %lld, %lld nodes (%s)", format_duration(x.dur).c_str(),
                  static_cast<long long>(x.step), static_cast<long long>(x.nodes), x.trigger.c_str());
      break;
    }
    case TrackKind::kEvaluations: {
      const Evaluation& v = tl->evaluations[t->ref[i]];
      const Location* loc = tl->location(v.loc_id);
      ImGui::TextColored(ImColor(palette::kTooltipEvaluation.r, palette::kTooltipEvaluation.g, palette::kTooltipEvaluation.b).Value,
                         "Explicit evaluation: %s()", v.kind.c_str());
      if (loc) {
        ImGui::Text("at %s:%lld in %s", loc->file.c_str(), static_cast<long long>(loc->line), loc->function.c_str());
      }
      ImGui::Text("cost %s in step %lld; cut a subgraph of %lld nodes", format_duration(v.dur).c_str(),
                  static_cast<long long>(v.step), static_cast<long long>(v.nodes));
      ImGui::TextDisabled("It cuts the step's graph; log less often, or after mark_step().");
      break;
    }
    case TrackKind::kKernels: {
      const KernelRun& run = tl->kernel_runs[t->ref[i]];
      const KernelInfo& k = tl->kernels[run.kernel];
      ImGui::Text("Kernel %lld of graph %lld (%s): %s", static_cast<long long>(k.kernel), static_cast<long long>(k.graph_id),
                  k.kind.c_str(), k.ops.c_str());
      double s = static_cast<double>(std::max<int64_t>(run.dur, 1)) / 1e9;
      ImGui::Text("took %s: %.2f GFLOP/s, %.2f GB/s", format_duration(run.dur).c_str(), static_cast<double>(k.flops) / s / 1e9,
                  static_cast<double>(k.bytes) / s / 1e9);
      size_t at = 0;
      for (int shown = 0; at < k.sites.size() && shown < 4; ++shown) {
        size_t next = k.sites.find(';', at);
        std::string site = k.sites.substr(at, next == std::string::npos ? std::string::npos : next - at);
        ImGui::Text("%s %s", shown ? "   " : "from", site.c_str());
        at = next == std::string::npos ? k.sites.size() : next + 1;
      }
      break;
    }
    case TrackKind::kInstants:
    case TrackKind::kRanges: {
      const Location* loc = tl->location(t->ref[i]);
      ImGui::Text("%s", loc ? loc->name.c_str() : "?");
      if (t->kind == TrackKind::kRanges) ImGui::Text("%s, depth %d", format_duration(dur).c_str(), t->depth);
      ImGui::Text("arg %lld", static_cast<long long>(t->arg.empty() ? 0 : t->arg[i]));
      if (loc && !loc->file.empty()) {
        ImGui::Text("at %s:%lld in %s", loc->file.c_str(), static_cast<long long>(loc->line), loc->function.c_str());
      }
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
