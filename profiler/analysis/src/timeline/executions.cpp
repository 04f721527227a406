// The executions track: each run of a compiled graph (executions).
#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_execution(const store::Reader& r, int64_t* skipped, const std::function<void(int64_t utid, Execution&)>& f) {
  // v1 stores have no execution_id.
  const bool ids = r.has(store::schema::executions, "execution_id");
  auto q = r.query(std::string("SELECT utid, ts, dur, graph_id, step, trigger, nodes, ") + (ids ? "execution_id" : "0") +
                   " FROM executions ORDER BY ts, id");
  while (q.next()) {
    Execution x{q.i64(1), q.i64(2), q.i64(3), q.i64(4), q.i64(6), std::string(q.text(5)), q.i64(7)};
    if (keep(x.ts, &x.dur, skipped)) f(q.i64(0), x);
  }
  return q.status();
}

namespace detail {

Status read_executions(Load& ld) {
  return rows::each_execution(ld.reader, &ld.tl.skipped.events,
                              [&](int64_t utid, Execution& x) { ld.add(TrackKind::kExecutions, utid, ld.tl.executions, std::move(x)); });
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

}  // namespace detail
}  // namespace tc::analysis::timeline
