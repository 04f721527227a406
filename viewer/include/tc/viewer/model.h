// tc/viewer/model.h: the viewer draws the timeline model of profiler/analysis
// (tc/analysis/timeline); its names are the viewer's as well.
#pragma once

#include "tc/analysis/timeline/job.h"
#include "tc/analysis/timeline/palette.h"
#include "tc/analysis/timeline/timeline.h"

namespace tc::viewer {
using namespace tc::analysis::timeline;  // NOLINT(google-build-using-namespace): one model, drawn here
}  // namespace tc::viewer
