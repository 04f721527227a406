// The compilations track: each graph compiled (compilations), with what
// changed in its inputs (compilation_inputs) for a shape change.
#include <map>

#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_compilation(const store::Reader& r, int64_t* skipped, const std::function<void(Compilation&)>& f) {
  std::map<int64_t, std::vector<InputChange>> inputs;  // graph_id (unique in the run) -> its changes, by id
  auto in = r.query("SELECT graph_id, input, dim, old_value, new_value FROM compilation_inputs ORDER BY id");
  while (in.next()) inputs[in.i64(0)].push_back({std::string(in.text(1)), in.i64(2), in.i64(3), in.i64(4)});
  TC_RETURN_IF_ERROR(in.status());
  auto q = r.query(
      "SELECT id, utid, ts, dur, graph_id, step, loc_id, nodes_before, nodes_after, kernels, reason, trigger, cache, "
      "diff, signature FROM compilations ORDER BY ts, id");
  while (q.next()) {
    const std::string reason(q.text(10));
    Compilation c{.id = q.i64(0), .utid = q.i64(1), .ts = q.i64(2), .dur = q.i64(3), .graph_id = q.i64(4), .step = q.i64(5),
                  .loc_id = q.i64(6), .nodes_before = q.i64(7), .nodes_after = q.i64(8), .kernels = q.i64(9),
                  .reason = parse_compile_reason(reason), .reason_text = reason, .trigger = std::string(q.text(11)),
                  .cache = std::string(q.text(12)), .diff = std::string(q.text(13)), .signature = std::string(q.text(14)), .inputs = {}};
    if (!keep(c.ts, &c.dur, skipped)) continue;
    if (auto it = inputs.find(c.graph_id); it != inputs.end()) c.inputs = it->second;
    f(c);
  }
  return q.status();
}

namespace detail {

namespace {

palette::Rgb colour(const Timeline& tl, const Track& t, uint32_t i) {
  switch (tl.compilations[t.ref[i]].reason) {
    case CompileReason::kFirst: return palette::kCompileFirst;
    case CompileReason::kShapeChange: return palette::kCompileShape;
    case CompileReason::kStructureChange: return palette::kCompileStructure;
    case CompileReason::kOther: return palette::kCompileOther;
  }
  return palette::kCompileOther;
}

std::string label(const Timeline& tl, const Track& t, uint32_t i) {
  const Compilation& c = tl.compilations[t.ref[i]];
  // torch.compile's backward graph, compiled at the first backward(): said, so that its time is no unnamed gap.
  return "compile g" + std::to_string(c.graph_id) + " " + (c.trigger == "backward" ? "backward" : c.reason_text);
}

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) {
  const Compilation& c = tl.compilations[t.ref[i]];
  bool re = c.reason != CompileReason::kFirst;
  card.text("%s%s of graph %lld", c.trigger == "backward" ? "Backward: " : "", re ? "Recompilation" : "Compilation",
            static_cast<long long>(c.graph_id));
  card.text("reason: %s   trigger: %s", c.reason_text.c_str(), c.trigger.c_str());
  for (const InputChange& in : c.inputs) {
    card.coloured(1, 0.45f, 0.4f, "input %s, dim %lld: %lld -> %lld", in.input.c_str(), static_cast<long long>(in.dim),
                  static_cast<long long>(in.old_value), static_cast<long long>(in.new_value));
  }
  if (!c.diff.empty()) card.text("differs: %s", c.diff.c_str());
  card.text("took %s in step %lld (cache: %s)", format_duration(c.dur).c_str(), static_cast<long long>(c.step), c.cache.c_str());
  card.text("nodes %lld -> %lld after passes, %lld kernels", static_cast<long long>(c.nodes_before), static_cast<long long>(c.nodes_after),
            static_cast<long long>(c.kernels));
  card.text("graph cut at %s", call_site(tl, c.loc_id).c_str());
}

}  // namespace

using Merge = RecordMerge<&Timeline::compilations, TrackKind::kCompilations>;
const KindTraits kCompilationsTraits{"compilations", read_rows<rows::each_compilation, &Timeline::compilations, TrackKind::kCompilations>,
                                     1, colour, label, card, Merge::append_located, Merge::rebase_ranked, Merge::sort};

}  // namespace detail
}  // namespace tc::analysis::timeline
