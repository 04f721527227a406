// The executions track: each run of a compiled graph (executions).
#include "kinds.h"
#include "load.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline::detail {

Status read_executions(Load& ld) {
  auto q = ld.reader.query("SELECT utid, ts, dur, graph_id, step, trigger, nodes FROM executions ORDER BY ts, id");
  while (q.next()) {
    ld.add(TrackKind::kExecutions, q.i64(0), ld.tl.executions,
           Execution{q.i64(1), q.i64(2), q.i64(3), q.i64(4), q.i64(6), std::string(q.text(5))});
  }
  return q.status();
}

namespace {

palette::Rgb colour(const Timeline&, const Track&, uint32_t) { return palette::kExecution; }

std::string label(const Timeline& tl, const Track& t, uint32_t i) { return "execute g" + std::to_string(tl.executions[t.ref[i]].graph_id); }

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) {
  const Execution& x = tl.executions[t.ref[i]];
  card.text("Execution of graph %lld", static_cast<long long>(x.graph_id));
  card.text("took %s in step %lld, %lld nodes (%s)", format_duration(x.dur).c_str(), static_cast<long long>(x.step),
            static_cast<long long>(x.nodes), x.trigger.c_str());
}

uint32_t append(StoreMerge& sm) {
  return append_records(sm.m.executions, sm.t.executions, [](Execution&) {});
}

}  // namespace

using Merge = RecordMerge<&Timeline::executions, TrackKind::kExecutions>;
const KindTraits kExecutionsTraits{"executions", read_executions, 2, colour, label, card, append, Merge::rebase, Merge::sort};

}  // namespace tc::analysis::timeline::detail
