#include "screenshot.h"

#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <stb/stb_image_write.h>

#include <cstring>

namespace tc::viewer::app {
namespace {

// Framebuffer objects are not in OpenGL 1.1's libGL ABI: fetch them.
struct Fns {
  PFNGLGENFRAMEBUFFERSPROC gen_framebuffers;
  PFNGLBINDFRAMEBUFFERPROC bind_framebuffer;
  PFNGLDELETEFRAMEBUFFERSPROC delete_framebuffers;
  PFNGLGENRENDERBUFFERSPROC gen_renderbuffers;
  PFNGLBINDRENDERBUFFERPROC bind_renderbuffer;
  PFNGLDELETERENDERBUFFERSPROC delete_renderbuffers;
  PFNGLRENDERBUFFERSTORAGEPROC renderbuffer_storage;
  PFNGLFRAMEBUFFERRENDERBUFFERPROC framebuffer_renderbuffer;
  PFNGLCHECKFRAMEBUFFERSTATUSPROC check_framebuffer_status;
};

const Fns* fns() {
  static Fns f{
      reinterpret_cast<PFNGLGENFRAMEBUFFERSPROC>(glfwGetProcAddress("glGenFramebuffers")),
      reinterpret_cast<PFNGLBINDFRAMEBUFFERPROC>(glfwGetProcAddress("glBindFramebuffer")),
      reinterpret_cast<PFNGLDELETEFRAMEBUFFERSPROC>(glfwGetProcAddress("glDeleteFramebuffers")),
      reinterpret_cast<PFNGLGENRENDERBUFFERSPROC>(glfwGetProcAddress("glGenRenderbuffers")),
      reinterpret_cast<PFNGLBINDRENDERBUFFERPROC>(glfwGetProcAddress("glBindRenderbuffer")),
      reinterpret_cast<PFNGLDELETERENDERBUFFERSPROC>(glfwGetProcAddress("glDeleteRenderbuffers")),
      reinterpret_cast<PFNGLRENDERBUFFERSTORAGEPROC>(glfwGetProcAddress("glRenderbufferStorage")),
      reinterpret_cast<PFNGLFRAMEBUFFERRENDERBUFFERPROC>(glfwGetProcAddress("glFramebufferRenderbuffer")),
      reinterpret_cast<PFNGLCHECKFRAMEBUFFERSTATUSPROC>(glfwGetProcAddress("glCheckFramebufferStatus")),
  };
  return &f;
}

}  // namespace

Status Offscreen::create(int width, int height) {
  const Fns* f = fns();
  if (!f->gen_framebuffers || !f->check_framebuffer_status) {
    return {StatusCode::kUnavailable, "OpenGL has no framebuffer objects; cannot render offscreen"};
  }
  width_ = width;
  height_ = height;
  f->gen_renderbuffers(1, &colour_);
  f->bind_renderbuffer(GL_RENDERBUFFER, colour_);
  f->renderbuffer_storage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  f->gen_framebuffers(1, &fbo_);
  f->bind_framebuffer(GL_FRAMEBUFFER, fbo_);
  f->framebuffer_renderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, colour_);
  if (f->check_framebuffer_status(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
    return {StatusCode::kUnavailable, "cannot make a " + std::to_string(width) + "x" + std::to_string(height) +
                                          " offscreen framebuffer; try a smaller --size"};
  }
  return Status::Ok();
}

void Offscreen::bind() const { fns()->bind_framebuffer(GL_FRAMEBUFFER, fbo_); }

std::vector<uint8_t> Offscreen::read() const {
  bind();
  std::vector<uint8_t> rgba(static_cast<size_t>(width_) * height_ * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  // OpenGL's rows run bottom to top.
  const size_t row = static_cast<size_t>(width_) * 4;
  std::vector<uint8_t> tmp(row);
  for (int y = 0; y < height_ / 2; ++y) {
    uint8_t* a = rgba.data() + y * row;
    uint8_t* b = rgba.data() + (height_ - 1 - y) * row;
    std::memcpy(tmp.data(), a, row);
    std::memcpy(a, b, row);
    std::memcpy(b, tmp.data(), row);
  }
  for (size_t i = 3; i < rgba.size(); i += 4) rgba[i] = 255;  // opaque PNG
  return rgba;
}

Offscreen::~Offscreen() {
  if (fbo_) fns()->delete_framebuffers(1, &fbo_);
  if (colour_) fns()->delete_renderbuffers(1, &colour_);
}

Status write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba) {
  if (!stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4)) {
    return {StatusCode::kIoError, path + ": cannot write the PNG; check the directory exists and is writable"};
  }
  return Status::Ok();
}

}  // namespace tc::viewer::app
