// tc/analysis/timeline/palette.h: the timeline's colours, one place for the viewer and
// for the tests that look for them in a screenshot. Items are drawn flat (no
// blending), so these exact RGB values appear in the picture.
#pragma once

#include <cstdint>

namespace tc::analysis::timeline::palette {

struct Rgb {
  uint8_t r, g, b;
};

inline constexpr Rgb kBackground{23, 26, 31};          // the window's clear colour: where nothing is drawn
inline constexpr Rgb kLaneHeader{44, 48, 58};
inline constexpr Rgb kCompileFirst{66, 133, 244};       // blue: first compilation of a structure
inline constexpr Rgb kCompileShape{234, 67, 53};        // red: recompilation after a shape change
inline constexpr Rgb kCompileStructure{171, 71, 188};   // purple: recompilation after a structure change
inline constexpr Rgb kCompileOther{140, 140, 140};
inline constexpr Rgb kExecution{52, 168, 83};           // green
inline constexpr Rgb kEvaluation{251, 188, 5};          // amber markers: explicit evaluations
inline constexpr Rgb kStepEven{84, 98, 122};
inline constexpr Rgb kStepOdd{110, 126, 152};
inline constexpr Rgb kInstant{230, 230, 230};
inline constexpr Rgb kMemory{0, 172, 193};              // cyan: live bytes
inline constexpr Rgb kCapacity{255, 82, 82};            // capacity line
inline constexpr Rgb kOutOfMemory{255, 23, 68};         // the out-of-memory point
inline constexpr Rgb kSelection{255, 255, 255};
inline constexpr Rgb kTooltipEvaluation{255, 190, 30};  // title of an explicit evaluation's tooltip
inline constexpr Rgb kRanges[] = {{95, 125, 160}, {120, 144, 100}, {160, 120, 90}, {130, 110, 160},
                                  {90, 140, 140}, {150, 100, 120}, {140, 140, 90}, {100, 120, 150}};

inline constexpr Rgb kNvtxGroup{36, 40, 50};           // background of an NVTX domain's label row
inline constexpr Rgb kNvtxGroupLabel{160, 210, 110};    // its text: the domain's name, or NVTX
inline constexpr Rgb kCutHatch{20, 20, 20};             // hatching over a range cut by its thread's end
inline constexpr Rgb kTooltipCut{255, 140, 90};         // the "cut" line of a range's tooltip

inline constexpr Rgb kCollective{38, 166, 154};         // teal: a collective's transfer (after the last rank arrived)
inline constexpr Rgb kCollectiveWait{236, 122, 170};    // pink: a rank waiting in a collective for the last one
inline constexpr Rgb kTooltipWait{255, 160, 205};       // the "waited ... for rank R" line of a collective's tooltip
inline constexpr Rgb kRankGroup{52, 58, 74};            // background of a rank's header row
inline constexpr Rgb kRankGroupLabel{130, 190, 255};    // its text: rank R, host, pid, clock offset

// An NVTX colour (0xAARRGGBB; the alpha is not used: items are drawn flat).
inline constexpr Rgb from_argb(uint32_t argb) {
  return {static_cast<uint8_t>(argb >> 16), static_cast<uint8_t>(argb >> 8), static_cast<uint8_t>(argb)};
}

// An item that stands for several events: its first event's colour, darker.
inline constexpr Rgb merged(Rgb c) {
  return {static_cast<uint8_t>(c.r * 0.75f), static_cast<uint8_t>(c.g * 0.75f), static_cast<uint8_t>(c.b * 0.75f)};
}

inline constexpr Rgb range_colour(int64_t loc_id) {
  return kRanges[(static_cast<uint64_t>(loc_id) * 2654435761u >> 3) % (sizeof kRanges / sizeof kRanges[0])];
}

}  // namespace tc::analysis::timeline::palette
