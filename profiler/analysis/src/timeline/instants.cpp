// The instants track: tc's instants; an NVTX site's instants are its marks.
#include "kinds.h"
#include "load.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline::detail {

Status read_instants(Load& ld) {
  Timeline& tl = ld.tl;
  const store::Reader& reader = ld.reader;
  auto& pending = ld.pending;
  auto& nvtx_pending = ld.nvtx_pending;
  auto see = [&](int64_t ts, int64_t end) { ld.see(ts, end); };
  auto q = reader.query("SELECT utid, ts, loc_id, arg FROM instants");
  while (q.next()) {
    int64_t ts = q.i64(1), loc = q.i64(2);
    if (!ld.keep(ts)) continue;
    see(ts, ts + 1);
    if (const NvtxSite* site = tl.nvtx_site(loc)) {
      nvtx_pending[{q.i64(0), site->domain}].marks.add(ts, ts + 1, static_cast<uint32_t>(loc), q.i64(3), true);
    } else {
      pending[q.i64(0)][static_cast<size_t>(TrackKind::kInstants)].add(ts, ts + 1, static_cast<uint32_t>(loc), q.i64(3), true);
    }
  }
  TC_RETURN_IF_ERROR(q.status());
  return Status::Ok();
}

namespace {

palette::Rgb colour(const Timeline&, const Track&, uint32_t) { return palette::kInstant; }

std::string label(const Timeline& tl, const Track& t, uint32_t i) { return location_label(tl, t.ref[i], t.is_cut(i)); }

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) { location_card(tl, t, i, card); }


}  // namespace

const KindTraits kInstantsTraits{"instants", read_instants, 6, colour, label, card, nullptr, rebase_location, nullptr, Marker::kTriangle};

}  // namespace tc::analysis::timeline::detail
