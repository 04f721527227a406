// The collectives track: tc::dist collectives, as transfers and waits.
#include <algorithm>
#include <limits>
#include <map>

#include "kinds.h"
#include "load.h"
#include "tc/analysis/timeline/job.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline::detail {

Status read_collectives(Load& ld) {
  if (!ld.reader.has(store::schema::collectives, "seq")) return Status::Ok();
  auto q = ld.reader.query("SELECT utid, ts, dur, step, seq, op, bytes, tensors, loc_id FROM collectives ORDER BY ts, id");
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
    ld.add(TrackKind::kCollectives, c.utid, ld.tl.collectives, std::move(c), 1, true);
  }
  return q.status();
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

// Each collective is once in the transfers (depth 0), maybe again in the waits: shifted once.
void rebase(StoreMerge& sm, const Track& tr, uint32_t& r, uint32_t base, int64_t offset, int64_t rank) {
  r += base;
  if (tr.depth == 0) sm.m.collectives[r].ts += offset;
  sm.m.collectives[r].rank = rank;
}

}  // namespace

using Merge = RecordMerge<&Timeline::collectives, TrackKind::kCollectives>;
const KindTraits kCollectivesTraits{"collectives", read_collectives, 4, colour, label, card, Merge::append_located, rebase, Merge::sort};

}  // namespace tc::analysis::timeline::detail

namespace tc::analysis::timeline {

void settle_collectives(Timeline* tl) {
  std::map<int64_t, std::vector<uint32_t>> by_seq;
  for (uint32_t i = 0; i < tl->collectives.size(); ++i) by_seq[tl->collectives[i].seq].push_back(i);
  for (const auto& [seq, at] : by_seq) {
    uint32_t last = at.front();
    for (uint32_t i : at)
      if (tl->collectives[i].ts > tl->collectives[last].ts) last = i;
    for (uint32_t i : at) {
      Collective& c = tl->collectives[i];
      c.ranks_seen = static_cast<int>(at.size());
      c.last_rank = at.size() > 1 ? tl->collectives[last].rank : -1;
      c.wait = at.size() > 1 ? std::clamp<int64_t>(tl->collectives[last].ts - c.ts, 0, c.dur) : 0;
    }
  }
  // Two rows per thread: the transfers, then the waits. In one row a long
  // wait and the short collectives before it in its pixel column would merge
  // into one item of the first one's colour, and the wait would not show
  // when zoomed out.
  tl->event_count = 0;
  for (Lane& lane : tl->lanes) {
    auto first = std::find_if(lane.tracks.begin(), lane.tracks.end(), [](const Track& t) { return t.kind == TrackKind::kCollectives; });
    if (first != lane.tracks.end()) {
      std::vector<uint32_t> refs;
      for (const Track& t : lane.tracks)
        if (t.kind == TrackKind::kCollectives) refs.insert(refs.end(), t.ref.begin(), t.ref.end());
      std::sort(refs.begin(), refs.end());  // the records are sorted by ts
      refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
      Track rows[2];
      rows[0].name = "collectives";
      rows[1].name = "waiting";
      for (int k = 0; k < 2; ++k) rows[k].kind = TrackKind::kCollectives, rows[k].depth = k;
      for (uint32_t r : refs) {
        const Collective& c = tl->collectives[r];
        const int64_t end = c.ts + std::max<int64_t>(c.dur, 1), w = std::min(c.wait, end - c.ts - 1);
        auto add = [&](Track& t, int64_t a, int64_t b, int64_t arg) { t.ts.push_back(a), t.end.push_back(b), t.ref.push_back(r), t.arg.push_back(arg); };
        add(rows[0], c.ts + std::max<int64_t>(w, 0), end, 1);
        if (w > 0) add(rows[1], c.ts, c.ts + w, 0);
      }
      for (Track& t : rows) {
        if (std::is_sorted(t.end.begin(), t.end.end())) continue;
        t.max_end.resize(t.end.size());
        int64_t mx = std::numeric_limits<int64_t>::min();
        for (size_t i = 0; i < t.end.size(); ++i) t.max_end[i] = mx = std::max(mx, t.end[i]);
      }
      const size_t at = static_cast<size_t>(first - lane.tracks.begin());
      std::erase_if(lane.tracks, [](const Track& t) { return t.kind == TrackKind::kCollectives; });
      lane.tracks.insert(lane.tracks.begin() + static_cast<std::ptrdiff_t>(at), std::move(rows[0]));
      if (rows[1].size() > 0) lane.tracks.insert(lane.tracks.begin() + static_cast<std::ptrdiff_t>(at) + 1, std::move(rows[1]));
    }
    for (const Track& t : lane.tracks) tl->event_count += static_cast<int64_t>(t.size());
  }
}

}  // namespace tc::analysis::timeline
