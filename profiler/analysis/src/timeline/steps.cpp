// The steps track: tc::mark_step() intervals (steps).
#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_step(const store::Reader& r, int64_t* skipped, const std::function<void(int64_t utid, Step&)>& f) {
  auto q = r.query("SELECT utid, ts, dur, step, loc_id FROM steps ORDER BY ts, id");
  while (q.next()) {
    Step s{q.i64(1), q.i64(2), q.i64(3), q.i64(4)};
    if (keep(s.ts, &s.dur, skipped)) f(q.i64(0), s);
  }
  return q.status();
}

namespace detail {

Status read_steps(Load& ld) {
  return rows::each_step(ld.reader, &ld.tl.skipped.events, [&](int64_t utid, Step& s) { ld.add(TrackKind::kSteps, utid, ld.tl.steps, s); });
}

namespace {

palette::Rgb colour(const Timeline& tl, const Track& t, uint32_t i) {
  return tl.steps[t.ref[i]].step % 2 ? palette::kStepOdd : palette::kStepEven;
}

std::string label(const Timeline& tl, const Track& t, uint32_t i) { return "step " + std::to_string(tl.steps[t.ref[i]].step); }

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& c) {
  const Step& s = tl.steps[t.ref[i]];
  c.text("Step %lld", static_cast<long long>(s.step));
  c.text("mark_step() took %s", format_duration(s.dur).c_str());
  c.text("called at %s", call_site(tl, s.loc_id).c_str());
}

uint32_t append(StoreMerge& sm) {
  return append_records(sm.m.steps, sm.t.steps, [&](Step& x) { x.loc_id = sm.loc(x.loc_id); });
}

}  // namespace

using Merge = RecordMerge<&Timeline::steps, TrackKind::kSteps>;
const KindTraits kStepsTraits{"steps", read_steps, 0, colour, label, card, append, Merge::rebase, Merge::sort};

}  // namespace detail
}  // namespace tc::analysis::timeline
