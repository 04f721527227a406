// The steps track: tc::mark_step() intervals (steps).
#include "kinds.h"
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

void rebase(StoreMerge& sm, const Track&, uint32_t& r, uint32_t base, int64_t offset, int64_t) {
  r += base;
  sm.m.steps[r].ts += offset;
}

void sort(Timeline& m) { sort_records(&m.steps, &m, TrackKind::kSteps); }

}  // namespace

const KindTraits kStepsTraits{"steps", colour, label, card, append, rebase, sort};

}  // namespace tc::analysis::timeline::detail
