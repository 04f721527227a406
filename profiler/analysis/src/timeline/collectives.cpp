// The collectives track: tc::dist collectives, as transfers and waits.
#include <map>

#include "load.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline::detail {

Status read_collectives(Load& ld) {
  Timeline& tl = ld.tl;
  const store::Reader& reader = ld.reader;
  auto& pending = ld.pending;
  auto see = [&](int64_t ts, int64_t end) { ld.see(ts, end); };
  if (reader.has(store::schema::collectives, "seq")) {
    auto q = reader.query("SELECT utid, ts, dur, step, seq, op, bytes, tensors, loc_id FROM collectives ORDER BY ts, id");
    while (q.next()) {
      Collective c;
      c.utid = q.i64(0);
      c.ts = q.i64(1);
      c.dur = std::max<int64_t>(q.i64(2), 0);
      c.step = q.i64(3);
      c.seq = q.i64(4);
      c.op = q.text(5);
      c.bytes = q.i64(6);
      c.tensors = q.i64(7);
      c.loc_id = q.i64(8);
      see(c.ts, end_of(c.ts, c.dur));
      pending[c.utid].collectives.add(c.ts, end_of(c.ts, c.dur), static_cast<uint32_t>(tl.collectives.size()), 1, true);
      tl.collectives.push_back(std::move(c));
    }
    TC_RETURN_IF_ERROR(q.status());
  }
  return Status::Ok();
}

}  // namespace tc::analysis::timeline::detail
