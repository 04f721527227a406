// The explicit evaluations track: where the program forced a value
// (explicit_evaluations).
#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_evaluation(const store::Reader& r, int64_t* skipped, const std::function<void(Evaluation&)>& f) {
  auto q = r.query("SELECT id, utid, ts, dur, step, kind, loc_id, nodes, graph_id FROM explicit_evaluations ORDER BY ts, id");
  while (q.next()) {
    Evaluation e{.id = q.i64(0), .utid = q.i64(1), .ts = q.i64(2), .dur = q.i64(3), .step = q.i64(4), .loc_id = q.i64(6),
                 .nodes = q.i64(7), .graph_id = q.i64(8), .kind = std::string(q.text(5))};
    if (keep(e.ts, &e.dur, skipped)) f(e);
  }
  return q.status();
}

namespace detail {

namespace {

palette::Rgb colour(const Timeline&, const Track&, uint32_t) { return palette::kEvaluation; }

std::string label(const Timeline& tl, const Track& t, uint32_t i) {
  const Evaluation& e = tl.evaluations[t.ref[i]];
  return e.kind + " " + call_site(tl, e.loc_id);
}

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) {
  const Evaluation& v = tl.evaluations[t.ref[i]];
  const Location* loc = tl.location(v.loc_id);
  card.coloured(palette::kTooltipEvaluation, "Explicit evaluation: %s()", v.kind.c_str());
  if (loc) card.text("at %s:%lld in %s", loc->file.c_str(), static_cast<long long>(loc->line), loc->function.c_str());
  card.text("cost %s in step %lld; cut a subgraph of %lld nodes", format_duration(v.dur).c_str(), static_cast<long long>(v.step),
            static_cast<long long>(v.nodes));
  card.disabled("It cuts the step's graph; log less often, or after mark_step().");
}

}  // namespace

using Merge = RecordMerge<&Timeline::evaluations, TrackKind::kEvaluations>;
const KindTraits kEvaluationsTraits{"explicit evaluations", read_rows<rows::each_evaluation, &Timeline::evaluations, TrackKind::kEvaluations>,
                                    5, colour, label, card, Merge::append_located, Merge::rebase_ranked, Merge::sort, Marker::kTriangle};

}  // namespace detail
}  // namespace tc::analysis::timeline
