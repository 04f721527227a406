// The ranges tracks: tc's ranges (TC_TRACE_RANGE), one track per nesting
// depth, and NVTX push/pop ranges (rows of ranges at an NVTX site), which
// add_nvtx_tracks splits by nesting within their domain. The bulk of a big
// store, read in id chunks by parallel Readers.
#include <algorithm>
#include <thread>

#include "kinds.h"
#include "load.h"
#include "rows.h"
#include "tc/store/schema.h"

namespace tc::analysis::timeline {

Status rows::each_range(const store::Reader& r, std::optional<IdRange> ids, int64_t* skipped, const std::function<void(const Range&)>& f) {
  std::string sql = "SELECT utid, ts, dur, depth, loc_id, arg FROM ranges";
  if (ids) sql += " WHERE id >= " + std::to_string(ids->lo) + " AND id < " + std::to_string(ids->hi);
  auto q = r.query(sql);
  while (q.next()) {
    Range row{q.i64(0), q.i64(1), q.i64(2), q.i64(3), q.i64(4), q.i64(5)};
    if (keep(row.ts, &row.dur, skipped)) f(row);
  }
  return q.status();
}

namespace detail {
namespace {

// domain_of[loc_id]: the NVTX domain of the site, -1 for tc's own (and for ids past its end).
void read_chunk(const store::Reader& reader, int64_t lo, int64_t hi, const std::vector<int32_t>& domain_of, RangeChunk* out) {
  std::pair<int64_t, int64_t> key{-1, -1};
  Pending* cur = nullptr;
  out->status = rows::each_range(reader, rows::IdRange{lo, hi}, &out->skipped, [&](const rows::Range& r) {
    int64_t e = end_of(r.ts, r.dur);
    out->min_ts = std::min(out->min_ts, r.ts);
    if (e != kOpen) out->max_end = std::max(out->max_end, e);
    int32_t domain = r.loc_id >= 0 && static_cast<size_t>(r.loc_id) < domain_of.size() ? domain_of[r.loc_id] : -1;
    if (domain >= 0) {
      out->nvtx[{r.utid, domain}].add_nvtx(r.ts, e, static_cast<uint32_t>(r.loc_id), r.arg, r.dur < 0);
      return;
    }
    std::pair<int64_t, int64_t> k{r.utid, r.depth};
    if (k != key || !cur) {
      key = k;
      cur = &out->tracks[k];
    }
    cur->add(r.ts, e, static_cast<uint32_t>(r.loc_id), r.arg, true);
  });
}

}  // namespace

Status read_ranges(Load& ld, const LoadOptions& options) {
  Timeline& tl = ld.tl;
  const store::Reader& reader = ld.reader;
  std::vector<RangeChunk>& chunks = ld.chunks;
  const std::vector<int32_t>& domain_of = ld.domain_of;
  int64_t lo = 0, hi = -1;
  auto q = reader.query("SELECT min(id), max(id) FROM ranges");
  if (q.next() && !q.is_null(0)) lo = q.i64(0), hi = q.i64(1);
  TC_RETURN_IF_ERROR(q.status());
  int64_t rows = options.ranges ? hi - lo + 1 : 0;
  tl.ranges_loaded = options.ranges;
  int threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  if (rows < 200000) threads = 1;
  if (rows > 0) {
    chunks.resize(threads);
    std::vector<std::thread> workers;
    int64_t per = (rows + threads - 1) / threads;
    for (int i = 0; i < threads; ++i) {
      int64_t a = lo + i * per, b = std::min(hi + 1, a + per);
      if (i == 0) {
        continue;  // read by this thread below, with the caller's Reader
      }
      workers.emplace_back([&, i, a, b] {
        auto own = store::Reader::open(reader.path());
        if (!own.ok()) {
          chunks[i].status = own.status();
          return;
        }
        read_chunk(*own, a, b, domain_of, &chunks[i]);
      });
    }
    read_chunk(reader, lo, std::min(hi + 1, lo + per), domain_of, &chunks[0]);
    for (auto& w : workers) w.join();
    for (const RangeChunk& c : chunks) {
      TC_RETURN_IF_ERROR(c.status);
      tl.skipped.events += c.skipped;
      ld.see(c.min_ts, c.max_end);
      for (const auto& [key, p] : c.nvtx) {
        if (std::find(p.cut.begin(), p.cut.end(), 1) != p.cut.end()) ld.see_cut_end(key.first);
      }
    }
  }
  return Status::Ok();
}

namespace {

palette::Rgb colour(const Timeline&, const Track& t, uint32_t i) { return palette::range_colour(t.ref[i]); }

std::string label(const Timeline& tl, const Track& t, uint32_t i) { return location_label(tl, t.ref[i], t.is_cut(i)); }

void card(const Timeline& tl, const Lane&, const Track& t, uint32_t i, Card& card) { location_card(tl, t, i, card); }

}  // namespace

std::string location_label(const Timeline& tl, int64_t loc_id, bool cut) {
  const Location* loc = tl.location(loc_id);
  std::string name = loc ? loc->name : "?";
  return cut ? name + " (cut)" : name;
}

void location_card(const Timeline& tl, const Track& t, uint32_t i, Card& card) {
  const Location* loc = tl.location(t.ref[i]);
  card.text("%s", loc ? loc->name.c_str() : "?");
  if (t.kind == TrackKind::kRanges) card.text("%s, depth %d", format_duration(t.end[i] - t.ts[i]).c_str(), t.depth);
  card.text("arg %lld", static_cast<long long>(t.arg.empty() ? 0 : t.arg[i]));
  if (loc && !loc->file.empty()) card.text("at %s:%lld in %s", loc->file.c_str(), static_cast<long long>(loc->line), loc->function.c_str());
}

void rebase_location(StoreMerge& sm, const Track&, uint32_t& ref, uint32_t, int64_t, int64_t) { ref = sm.loc(ref); }

const KindTraits kRangesTraits{"ranges", nullptr, -1, colour, label, card, nullptr, rebase_location, nullptr};

}  // namespace detail
}  // namespace tc::analysis::timeline
