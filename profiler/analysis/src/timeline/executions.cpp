// The executions track: each run of a compiled graph (executions).
#include "kinds.h"
#include "load.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline::detail {

Status read_executions(Load& ld) {
  Timeline& tl = ld.tl;
  const store::Reader& reader = ld.reader;
  auto& pending = ld.pending;
  auto see = [&](int64_t ts, int64_t end) { ld.see(ts, end); };
  auto q = reader.query("SELECT utid, ts, dur, graph_id, step, trigger, nodes FROM executions ORDER BY ts, id");
  while (q.next()) {
    Execution e{q.i64(1), q.i64(2), q.i64(3), q.i64(4), q.i64(6), std::string(q.text(5))};
    see(e.ts, end_of(e.ts, e.dur));
    pending[q.i64(0)].executions.add(e.ts, end_of(e.ts, e.dur), static_cast<uint32_t>(tl.executions.size()), 0,
                                     false);
    tl.executions.push_back(std::move(e));
  }
  TC_RETURN_IF_ERROR(q.status());
  return Status::Ok();
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

void rebase(StoreMerge& sm, const Track&, uint32_t& r, uint32_t base, int64_t offset, int64_t) {
  r += base;
  sm.m.executions[r].ts += offset;
}

void sort(Timeline& m) { sort_records(&m.executions, &m, TrackKind::kExecutions); }

}  // namespace

const KindTraits kExecutionsTraits{"executions", colour, label, card, append, rebase, sort};

}  // namespace tc::analysis::timeline::detail
