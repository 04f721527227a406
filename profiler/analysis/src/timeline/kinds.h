// What the model says about each kind of track, one kind per file
// (src/timeline/<kind>.cpp): its name, an event's colour, its label and its
// hover card. kinds.cpp holds the table, in TrackKind order. Private to the
// model.
#pragma once

#include <cstdarg>
#include <string>
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

struct KindTraits {
  const char* name;  // track_kind_name
  palette::Rgb (*colour)(const Timeline& tl, const Track& t, uint32_t i);
  std::string (*label)(const Timeline& tl, const Track& t, uint32_t i);
  void (*card)(const Timeline& tl, const Lane& lane, const Track& t, uint32_t i, Card& card);
};

extern const KindTraits kStepsTraits, kCompilationsTraits, kExecutionsTraits, kEvaluationsTraits, kInstantsTraits, kRangesTraits,
    kKernelsTraits, kNvtxMarksTraits, kNvtxRangesTraits, kNvtxStartEndTraits, kCollectivesTraits;
const KindTraits& traits(TrackKind kind);

// Shared by tc's ranges and instants: the location's name, arg and call site.
void location_card(const Timeline& tl, const Track& t, uint32_t i, Card& card);
std::string location_label(const Timeline& tl, int64_t loc_id, bool cut);

}  // namespace tc::analysis::timeline::detail
