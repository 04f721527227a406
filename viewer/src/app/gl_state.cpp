// Draw-list callbacks that switch blending off around opaque fills: a
// software renderer (llvmpipe under Xvfb) then skips reading the destination,
// which is a third of a zoomed-out frame's cost.
#include <GL/gl.h>
#include <imgui.h>

#include "app.h"

namespace tc::viewer::app {

void begin_opaque(ImDrawList* dl) {
  dl->AddCallback([](const ImDrawList*, const ImDrawCmd*) { glDisable(GL_BLEND); }, nullptr);
}

void end_opaque(ImDrawList* dl) {
  dl->AddCallback([](const ImDrawList*, const ImDrawCmd*) { glEnable(GL_BLEND); }, nullptr);
}

}  // namespace tc::viewer::app
