// Hover tooltips: what an event is, from the model's records.
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
    case TrackKind::kCollectives: {
      const Collective& c = tl->collectives[t->ref[i]];
      ImGui::TextColored(ImColor(palette::kCollective.r, palette::kCollective.g, palette::kCollective.b).Value, "Collective %s, #%lld",
                         c.op.c_str(), static_cast<long long>(c.seq));
      ImGui::Text("%lld bytes in %lld tensors, step %lld, called at %s", static_cast<long long>(c.bytes), static_cast<long long>(c.tensors),
                  static_cast<long long>(c.step), call_site(*tl, c.loc_id).c_str());
      ImGui::Text("took %s from this rank's arrival", format_duration(c.dur).c_str());
      if (c.ranks_seen > 1) {
        if (c.wait > 0) {
          ImGui::TextColored(ImColor(palette::kTooltipWait.r, palette::kTooltipWait.g, palette::kTooltipWait.b).Value,
                             "waited %s for rank %lld, the last of %d ranks to arrive", format_duration(c.wait).c_str(),
                             static_cast<long long>(c.last_rank), c.ranks_seen);
        } else {
          ImGui::Text("arrived last of %d ranks: no wait", c.ranks_seen);
        }
        ImGui::Text("transfer %s", format_duration(c.dur - c.wait).c_str());
      } else {
        ImGui::TextDisabled("the wait needs the other ranks' stores: open them together (tc-viewer run.rank*.tcdb)");
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
    case TrackKind::kNvtxMarks:
    case TrackKind::kNvtxRanges:
    case TrackKind::kNvtxStartEnd: {
      const Lane& lane = tl->lanes[static_cast<size_t>(e.lane)];
      const NvtxStartEnd* se = t->kind == TrackKind::kNvtxStartEnd ? &tl->nvtx_start_ends[t->ref[i]] : nullptr;
      const int64_t loc_id = se ? se->loc_id : t->ref[i];
      const Location* loc = tl->location(loc_id);
      const NvtxSite* site = tl->nvtx_site(loc_id);
      palette::Rgb c = site_colour(*tl, loc_id);
      ImGui::TextColored(ImColor(c.r, c.g, c.b).Value, "%s", loc ? loc->name.c_str() : "?");
      const char* what = t->kind == TrackKind::kNvtxMarks ? "mark" : se ? "start/end range" : "range";
      ImGui::Text("NVTX %s, domain %s", what, site ? tl->nvtx_domains[static_cast<size_t>(site->domain)].label().c_str() : "?");
      if (site && site->category) {
        if (!site->category_name.empty()) ImGui::Text("category %s (%lld)", site->category_name.c_str(), static_cast<long long>(*site->category));
        else ImGui::Text("category %lld", static_cast<long long>(*site->category));
      }
      const int64_t utid = se ? se->utid : lane.utid;
      const std::optional<double> real = tl->nvtx_real_payload(utid, loc_id, t->ts[i]);
      const int64_t payload = se ? se->payload : t->arg.empty() ? 0 : t->arg[i];
      if (real) ImGui::Text("payload %g", *real);
      else ImGui::Text("payload %lld", static_cast<long long>(payload));
      if (t->kind == TrackKind::kNvtxRanges) ImGui::Text("depth %d in its domain on this thread", t->depth);
      if (t->is_cut(i)) {
        ImGui::TextColored(ImColor(palette::kTooltipCut.r, palette::kTooltipCut.g, palette::kTooltipCut.b).Value, "cut: never ended (its thread or process ended first); %s to the %s's end",
                           format_duration(dur).c_str(), lane.process_end > 0 ? "process" : "run");
      } else if (t->kind != TrackKind::kNvtxMarks) {
        ImGui::Text("took %s", format_duration(dur).c_str());
      }
      if (se) {
        ImGui::Text("range id %lld", static_cast<long long>(se->range_id));
        if (!se->cut && se->end_utid != se->utid) {
          std::string ended = "thread utid " + std::to_string(se->end_utid);
          for (const Lane& other : tl->lanes) {
            if (other.utid == se->end_utid) ended = other.name;
          }
          ImGui::Text("ended on %s", ended.c_str());
        }
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
