// The explicit evaluations track: where the program forced a value
// (explicit_evaluations).
#include "kinds.h"
#include "load.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline::detail {

Status read_evaluations(Load& ld) {
  Timeline& tl = ld.tl;
  const store::Reader& reader = ld.reader;
  auto& pending = ld.pending;
  auto see = [&](int64_t ts, int64_t end) { ld.see(ts, end); };
  auto q = reader.query(
      "SELECT id, utid, ts, dur, step, kind, loc_id, nodes, graph_id FROM explicit_evaluations ORDER BY ts, id");
  while (q.next()) {
    Evaluation e;
    e.id = q.i64(0);
    e.utid = q.i64(1);
    e.ts = q.i64(2);
    e.dur = q.i64(3);
    e.step = q.i64(4);
    e.kind = q.text(5);
    e.loc_id = q.i64(6);
    e.nodes = q.i64(7);
    e.graph_id = q.i64(8);
    see(e.ts, end_of(e.ts, e.dur));
    pending[e.utid].evaluations.add(e.ts, end_of(e.ts, e.dur), static_cast<uint32_t>(tl.evaluations.size()), 0,
                                    false);
    tl.evaluations.push_back(std::move(e));
  }
  TC_RETURN_IF_ERROR(q.status());
  return Status::Ok();
}

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

uint32_t append(StoreMerge& sm) {
  return append_records(sm.m.evaluations, sm.t.evaluations, [&](Evaluation& x) { x.loc_id = sm.loc(x.loc_id), x.utid = sm.utid(x.utid); });
}

void rebase(StoreMerge& sm, const Track&, uint32_t& r, uint32_t base, int64_t offset, int64_t rank) {
  r += base;
  sm.m.evaluations[r].ts += offset;
  sm.m.evaluations[r].rank = rank;
}

void sort(Timeline& m) { sort_records(&m.evaluations, &m, TrackKind::kEvaluations); }

}  // namespace

const KindTraits kEvaluationsTraits{"explicit evaluations", colour, label, card, append, rebase, sort, Marker::kTriangle};

}  // namespace tc::analysis::timeline::detail
