// The collectives track: tc::dist collectives, as transfers and waits.
#include <map>

#include "kinds.h"
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

namespace {

palette::Rgb colour(const Timeline&, const Track& t, uint32_t i) {
  return !t.arg.empty() && t.arg[i] == 0 ? palette::kCollectiveWait : palette::kCollective;
}

std::string label(const Timeline& tl, const Track& t, uint32_t i) {
  const Collective& c = tl.collectives[t.ref[i]];
  return (!t.arg.empty() && t.arg[i] == 0 ? "wait " : "") + c.op + " #" + std::to_string(c.seq);
}

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) {
  const Collective& c = tl.collectives[t.ref[i]];
  card.coloured(palette::kCollective, "Collective %s, #%lld", c.op.c_str(), static_cast<long long>(c.seq));
  card.text("%lld bytes in %lld tensors, step %lld, called at %s", static_cast<long long>(c.bytes), static_cast<long long>(c.tensors),
            static_cast<long long>(c.step), call_site(tl, c.loc_id).c_str());
  card.text("took %s from this rank's arrival", format_duration(c.dur).c_str());
  if (c.ranks_seen > 1) {
    if (c.wait > 0) {
      card.coloured(palette::kTooltipWait, "waited %s for rank %lld, the last of %d ranks to arrive", format_duration(c.wait).c_str(),
                    static_cast<long long>(c.last_rank), c.ranks_seen);
    } else {
      card.text("arrived last of %d ranks: no wait", c.ranks_seen);
    }
    card.text("transfer %s", format_duration(c.dur - c.wait).c_str());
  } else {
    card.disabled("the wait needs the other ranks' stores: open them together (tc-viewer run.rank*.tcdb)");
  }
}

}  // namespace

const KindTraits kCollectivesTraits{"collectives", colour, label, card};

}  // namespace tc::analysis::timeline::detail
