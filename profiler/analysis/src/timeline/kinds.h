// What the model says about each kind of track, one kind per file
// (src/timeline/<kind>.cpp): its name, an event's colour, its label and its
// hover card. kinds.cpp holds the table, in TrackKind order. Private to the
// model.
#pragma once

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "tc/analysis/timeline/timeline.h"

namespace tc::analysis::timeline::detail {

// An event's hover card being written.
class Card {
 public:
  explicit Card(std::vector<CardLine>* lines) : lines_(lines) {}
  void text(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void disabled(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void coloured(palette::Rgb c, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  void coloured(float r, float g, float b, const char* fmt, ...) __attribute__((format(printf, 5, 6)));

 private:
  CardLine& add(CardLine::Style style, const char* fmt, va_list args);
  std::vector<CardLine>* lines_;
};

// One store's part of a job's timeline (timeline/job.h), being merged into m.
struct StoreMerge {
  static constexpr uint32_t kUnknownLoc = 0x3fffffff;  // a location m does not know (location() gives nullptr)
  Timeline& m;   // the job's
  Timeline& t;   // the store's; its records are moved out
  size_t store;  // its index among the job's stores
  std::vector<uint32_t> loc_map;  // the store's loc_id -> m's
  uint32_t loc(int64_t id) const { return id >= 0 && static_cast<size_t>(id) < loc_map.size() ? loc_map[id] : kUnknownLoc; }
  int64_t utid(int64_t u) const { return u + (static_cast<int64_t>(store) << 40); }
};

// Sorts m's records by ts (stable) and points the refs of the tracks of `kind` at their new places.
template <typename T>
void sort_records(std::vector<T>* v, Timeline* m, TrackKind kind) {
  std::vector<uint32_t> order(v->size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return (*v)[a].ts < (*v)[b].ts; });
  std::vector<uint32_t> where(v->size());
  std::vector<T> out;
  out.reserve(v->size());
  for (size_t i = 0; i < order.size(); ++i) {
    where[order[i]] = static_cast<uint32_t>(i);
    out.push_back(std::move((*v)[order[i]]));
  }
  v->swap(out);
  for (Lane& lane : m->lanes) {
    for (Track& t : lane.tracks) {
      if (t.kind != kind) continue;
      for (uint32_t& r : t.ref) r = where[r];
    }
  }
}

// Appends src's records to dst with f applied to each; returns where they start.
template <typename T, typename F>
uint32_t append_records(std::vector<T>& dst, std::vector<T>& src, F&& f) {
  const uint32_t base = static_cast<uint32_t>(dst.size());
  for (T& x : src) f(x), dst.push_back(std::move(x));
  return base;
}

// A ref onto m's records (base + ref), the record shifted onto rank 0's clock.
template <typename T>
T& rebase_record(std::vector<T>& records, uint32_t& ref, uint32_t base, int64_t offset) {
  ref += base;
  records[ref].ts += offset;
  return records[ref];
}

// The merge of a kind whose records are Timeline::*Records, sorted by ts.
template <auto Records, TrackKind Kind>
struct RecordMerge {
  // Records with a location and a thread (and a rank, for rebase_ranked).
  static uint32_t append_located(StoreMerge& sm) {
    return append_records(sm.m.*Records, sm.t.*Records, [&](auto& x) { x.loc_id = sm.loc(x.loc_id), x.utid = sm.utid(x.utid); });
  }
  static void rebase(StoreMerge& sm, const Track&, uint32_t& r, uint32_t base, int64_t offset, int64_t) {
    rebase_record(sm.m.*Records, r, base, offset);
  }
  static void rebase_ranked(StoreMerge& sm, const Track&, uint32_t& r, uint32_t base, int64_t offset, int64_t rank) {
    rebase_record(sm.m.*Records, r, base, offset).rank = rank;
  }
  static void sort(Timeline& m) { sort_records(&(m.*Records), &m, Kind); }
};

struct Load;

struct KindTraits {
  const char* name;  // track_kind_name
  // Its reader (load_timeline calls each, after the NVTX sites; null: read
  // with NVTX or the ranges), and its row among a lane's tracks of tc's own
  // (-1: ranges by depth and NVTX by domain come after those).
  Status (*read)(Load& ld);
  int row;
  palette::Rgb (*colour)(const Timeline& tl, const Track& t, uint32_t i);
  std::string (*label)(const Timeline& tl, const Track& t, uint32_t i);
  void (*card)(const Timeline& tl, const Lane& lane, const Track& t, uint32_t i, Card& card);
  // The merge across a job's ranks. append: moves the store's records of the
  // kind into m's (their locations and threads made m's), once per store,
  // and returns where they start; null for a kind whose refs are locations.
  uint32_t (*append)(StoreMerge& sm);
  // Points ref (of track tr, a lane of rank `rank` on its clock + offset) at
  // m's record: base + ref, shifted by offset once, or m's location.
  void (*rebase)(StoreMerge& sm, const Track& tr, uint32_t& ref, uint32_t base, int64_t offset, int64_t rank);
  // After every store: m's records sorted by ts (null: none).
  void (*sort)(Timeline& m);
  Marker marker = Marker::kNone;
};

// TrackKind's values are 0 .. kKinds - 1 (kCollectives is the last).
constexpr int kKinds = static_cast<int>(TrackKind::kCollectives) + 1;

extern const KindTraits kStepsTraits, kCompilationsTraits, kExecutionsTraits, kEvaluationsTraits, kInstantsTraits, kRangesTraits,
    kKernelsTraits, kNvtxMarksTraits, kNvtxRangesTraits, kNvtxStartEndTraits, kCollectivesTraits;
const KindTraits& traits(TrackKind kind);

// Rebase of a kind whose refs are locations.
void rebase_location(StoreMerge& sm, const Track& tr, uint32_t& ref, uint32_t base, int64_t offset, int64_t rank);

// Shared by tc's ranges and instants: the location's name, arg and call site.
void location_card(const Timeline& tl, const Track& t, uint32_t i, Card& card);
std::string location_label(const Timeline& tl, int64_t loc_id, bool cut);

}  // namespace tc::analysis::timeline::detail
