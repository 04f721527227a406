// The steps track: tc::mark_step() intervals (steps).
#include "load.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline::detail {

Status read_steps(Load& ld) {
  Timeline& tl = ld.tl;
  const store::Reader& reader = ld.reader;
  auto& pending = ld.pending;
  auto see = [&](int64_t ts, int64_t end) { ld.see(ts, end); };
  auto q = reader.query("SELECT utid, ts, dur, step, loc_id FROM steps ORDER BY ts, id");
  while (q.next()) {
    Step s{q.i64(1), q.i64(2), q.i64(3), q.i64(4)};
    see(s.ts, end_of(s.ts, s.dur));
    pending[q.i64(0)].steps.add(s.ts, end_of(s.ts, s.dur), static_cast<uint32_t>(tl.steps.size()), 0, false);
    tl.steps.push_back(s);
  }
  TC_RETURN_IF_ERROR(q.status());
  return Status::Ok();
}

}  // namespace tc::analysis::timeline::detail
