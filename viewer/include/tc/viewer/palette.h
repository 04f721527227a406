// tc/viewer/palette.h: the timeline's colours, one place for the viewer and
// for the tests that look for them in a screenshot. Items are drawn flat (no
// blending), so these exact RGB values appear in the picture.
#pragma once

#include <cstdint>

namespace tc::viewer::palette {

struct Rgb {
  uint8_t r, g, b;
};

inline constexpr Rgb kBackground{24, 26, 31};
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

inline constexpr Rgb range_colour(int64_t loc_id) {
  return kRanges[(static_cast<uint64_t>(loc_id) * 2654435761u >> 3) % (sizeof kRanges / sizeof kRanges[0])];
}

}  // namespace tc::viewer::palette
