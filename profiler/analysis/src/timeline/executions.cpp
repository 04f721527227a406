// The executions track: each run of a compiled graph (executions).
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

}  // namespace tc::analysis::timeline::detail
