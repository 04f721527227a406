// The instants track: tc's instants; an NVTX site's instants are its marks.
#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_instant(const store::Reader& r, int64_t* skipped, const std::function<void(const Instant&)>& f) {
  auto q = r.query("SELECT utid, ts, loc_id, arg FROM instants");
  while (q.next()) {
    Instant i{q.i64(0), q.i64(1), q.i64(2), q.i64(3)};
    if (keep(i.ts, nullptr, skipped)) f(i);
  }
  return q.status();
}

namespace detail {

Status read_instants(Load& ld) {
  Timeline& tl = ld.tl;
  return rows::each_instant(ld.reader, &tl.skipped.events, [&](const rows::Instant& i) {
    ld.see(i.ts, i.ts + 1);
    if (const NvtxSite* site = tl.nvtx_site(i.loc_id)) {
      ld.nvtx_pending[{i.utid, site->domain}].marks.add(i.ts, i.ts + 1, static_cast<uint32_t>(i.loc_id), i.arg, true);
    } else {
      ld.pending[i.utid][static_cast<size_t>(TrackKind::kInstants)].add(i.ts, i.ts + 1, static_cast<uint32_t>(i.loc_id), i.arg, true);
    }
  });
}

namespace {

palette::Rgb colour(const Timeline&, const Track&, uint32_t) { return palette::kInstant; }

std::string label(const Timeline& tl, const Track& t, uint32_t i) { return location_label(tl, t.ref[i], t.is_cut(i)); }

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) { location_card(tl, t, i, card); }


}  // namespace

const KindTraits kInstantsTraits{"instants", read_instants, 6, colour, label, card, nullptr, rebase_location, nullptr, Marker::kTriangle};

}  // namespace detail
}  // namespace tc::analysis::timeline
