// Offscreen rendering for --screenshot: a framebuffer object of the requested
// size (independent of the screen, so it works under a small Xvfb screen),
// read back with glReadPixels and written as PNG with stb_image_write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tc/store/status.h"

namespace tc::viewer::app {

class Offscreen {
 public:
  // Needs a current OpenGL context.
  Status create(int width, int height);
  void bind() const;  // render into it
  // RGBA rows top to bottom.
  std::vector<uint8_t> read() const;
  ~Offscreen();

 private:
  unsigned fbo_ = 0, colour_ = 0;
  int width_ = 0, height_ = 0;
};

Status write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba);

}  // namespace tc::viewer::app
