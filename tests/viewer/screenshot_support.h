// Test support: tc-viewer --screenshot run under the current display or a
// fresh Xvfb, and the PNG it wrote as counts of its colours.
#pragma once

#include <stb/stb_image.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "tc/viewer/model.h"

namespace tc::viewer {


struct ViewerRun {
  int exit_code = -1;
  std::string output;
};

// The viewer, run under the current display or a fresh Xvfb.
inline std::string viewer_command() {
  // Under AddressSanitizer the OpenGL stack (Mesa under Xvfb) leaks a few
  // blocks at exit that are not ours; leak checking is off for the viewer's
  // process only, memory errors are still caught.
  std::string viewer = "ASAN_OPTIONS=detect_leaks=0 " + std::string(TC_BINARY_DIR) + "/bin/tc-viewer";
  const char* display = std::getenv("DISPLAY");
  if (display && *display) return viewer;
  return "xvfb-run -a env " + viewer;
}

inline bool have_display() {
  const char* display = std::getenv("DISPLAY");
  return (display && *display) || std::system("command -v xvfb-run > /dev/null 2>&1") == 0;
}

inline ViewerRun run_once(const std::string& args) {
  ViewerRun r;
  FILE* p = ::popen((viewer_command() + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Once in a CI run the shared Xvfb refused a connection ("Failed to open
// display :99") while the GUI tests ran in parallel; that is the test
// machine, not the viewer, so such a run is tried again (at most twice).
inline ViewerRun run(const std::string& args) {
  ViewerRun r = run_once(args);
  for (int again = 0; again < 2 && r.output.find("Failed to open display") != std::string::npos; ++again) r = run_once(args);
  return r;
}

struct Image {
  int w = 0, h = 0;
  std::map<uint32_t, int> colours;  // 0xRRGGBB -> pixels
  int count(palette::Rgb c) const {
    auto it = colours.find((uint32_t{c.r} << 16) | (uint32_t{c.g} << 8) | c.b);
    return it == colours.end() ? 0 : it->second;
  }
};

inline Image load_png(const std::string& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &channels, 3);
  if (!data) return img;
  for (int i = 0; i < img.w * img.h; ++i) {
    const unsigned char* p = data + 3 * i;
    ++img.colours[(uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2]];
  }
  stbi_image_free(data);
  return img;
}

}  // namespace tc::viewer
