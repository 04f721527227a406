// The OpenGL the windows need besides ImGui's: draw-list callbacks around
// opaque fills, and the texture of the timeline's rows.
//
// Opaque fills are drawn with blending off (a software renderer, llvmpipe
// under Xvfb, then skips reading the destination) and, where they are flat
// colour, with a program that only passes the vertex colour on: ImGui's
// program samples its font texture for every pixel, a rectangle's included,
// and on llvmpipe that sampling is most of a pixel's cost. The result is the
// same: ImGui's fills sample the atlas' white texel.
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cstdint>

#include "app.h"

namespace tc::viewer::app {
namespace {

// Entry points beyond OpenGL 1.1 (libGL's ABI), fetched once.
struct Gl {
  PFNGLCREATESHADERPROC create_shader;
  PFNGLSHADERSOURCEPROC shader_source;
  PFNGLCOMPILESHADERPROC compile_shader;
  PFNGLGETSHADERIVPROC get_shaderiv;
  PFNGLDELETESHADERPROC delete_shader;
  PFNGLCREATEPROGRAMPROC create_program;
  PFNGLATTACHSHADERPROC attach_shader;
  PFNGLBINDATTRIBLOCATIONPROC bind_attrib_location;
  PFNGLBINDFRAGDATALOCATIONPROC bind_frag_data_location;
  PFNGLLINKPROGRAMPROC link_program;
  PFNGLGETPROGRAMIVPROC get_programiv;
  PFNGLDELETEPROGRAMPROC delete_program;
  PFNGLGETATTRIBLOCATIONPROC get_attrib_location;
  PFNGLGETUNIFORMLOCATIONPROC get_uniform_location;
  PFNGLGETUNIFORMFVPROC get_uniformfv;
  PFNGLUNIFORMMATRIX4FVPROC uniform_matrix4fv;
  PFNGLUSEPROGRAMPROC use_program;
  bool ok() const {
    return create_shader && shader_source && compile_shader && get_shaderiv && delete_shader && create_program &&
           attach_shader && bind_attrib_location && bind_frag_data_location && link_program && get_programiv &&
           delete_program && get_attrib_location && get_uniform_location && get_uniformfv && uniform_matrix4fv &&
           use_program;
  }
};

template <class F>
F proc(const char* name) {
  return reinterpret_cast<F>(glfwGetProcAddress(name));
}

const Gl& gl() {
  static const Gl g{
      proc<PFNGLCREATESHADERPROC>("glCreateShader"),
      proc<PFNGLSHADERSOURCEPROC>("glShaderSource"),
      proc<PFNGLCOMPILESHADERPROC>("glCompileShader"),
      proc<PFNGLGETSHADERIVPROC>("glGetShaderiv"),
      proc<PFNGLDELETESHADERPROC>("glDeleteShader"),
      proc<PFNGLCREATEPROGRAMPROC>("glCreateProgram"),
      proc<PFNGLATTACHSHADERPROC>("glAttachShader"),
      proc<PFNGLBINDATTRIBLOCATIONPROC>("glBindAttribLocation"),
      proc<PFNGLBINDFRAGDATALOCATIONPROC>("glBindFragDataLocation"),
      proc<PFNGLLINKPROGRAMPROC>("glLinkProgram"),
      proc<PFNGLGETPROGRAMIVPROC>("glGetProgramiv"),
      proc<PFNGLDELETEPROGRAMPROC>("glDeleteProgram"),
      proc<PFNGLGETATTRIBLOCATIONPROC>("glGetAttribLocation"),
      proc<PFNGLGETUNIFORMLOCATIONPROC>("glGetUniformLocation"),
      proc<PFNGLGETUNIFORMFVPROC>("glGetUniformfv"),
      proc<PFNGLUNIFORMMATRIX4FVPROC>("glUniformMatrix4fv"),
      proc<PFNGLUSEPROGRAMPROC>("glUseProgram"),
  };
  return g;
}

// The flat-colour program, made on first use with the vertex attributes at
// the locations ImGui's program has them (the vertex array is ImGui's).
struct Flat {
  GLuint program = 0;
  GLint proj = -1;
  bool failed = false;
  GLint imgui_program = 0;  // the program to go back to
};
Flat g_flat;

GLuint compile(const Gl& f, GLenum kind, const char* source) {
  GLuint s = f.create_shader(kind);
  f.shader_source(s, 1, &source, nullptr);
  f.compile_shader(s);
  GLint ok = 0;
  f.get_shaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    f.delete_shader(s);
    return 0;
  }
  return s;
}

bool make_flat(const Gl& f, GLuint imgui_program) {
  // GLSL 1.50, as the viewer initializes ImGui's OpenGL 3 backend.
  static const char* vs =
      "#version 150\n"
      "uniform mat4 ProjMtx;\n"
      "in vec2 Position;\nin vec2 UV;\nin vec4 Color;\nout vec4 Frag_Color;\n"
      "void main() { Frag_Color = Color; gl_Position = ProjMtx * vec4(Position.xy, 0, 1); }\n";
  static const char* fs =
      "#version 150\n"
      "in vec4 Frag_Color;\nout vec4 Out_Color;\n"
      "void main() { Out_Color = Frag_Color; }\n";
  GLuint v = compile(f, GL_VERTEX_SHADER, vs), p = compile(f, GL_FRAGMENT_SHADER, fs);
  if (!v || !p) return false;
  GLuint program = f.create_program();
  f.attach_shader(program, v);
  f.attach_shader(program, p);
  for (const char* name : {"Position", "UV", "Color"}) {
    GLint at = f.get_attrib_location(imgui_program, name);
    if (at >= 0) f.bind_attrib_location(program, static_cast<GLuint>(at), name);
  }
  f.bind_frag_data_location(program, 0, "Out_Color");
  f.link_program(program);
  f.delete_shader(v);
  f.delete_shader(p);
  GLint ok = 0;
  f.get_programiv(program, GL_LINK_STATUS, &ok);
  if (!ok) {
    f.delete_program(program);
    return false;
  }
  g_flat.program = program;
  g_flat.proj = f.get_uniform_location(program, "ProjMtx");
  return true;
}

// In a draw callback: ImGui's program is bound; use the flat one with its projection.
void use_flat() {
  GLint current = 0;
  glGetIntegerv(GL_CURRENT_PROGRAM, &current);
  if (g_flat.failed || current == 0) return;
  const Gl& f = gl();
  if (!g_flat.program && (!f.ok() || !make_flat(f, static_cast<GLuint>(current)))) {
    g_flat.failed = true;  // ImGui's program draws them: the same picture, slower
    return;
  }
  if (static_cast<GLuint>(current) == g_flat.program) return;
  g_flat.imgui_program = current;
  float proj[16];
  f.get_uniformfv(static_cast<GLuint>(current), f.get_uniform_location(static_cast<GLuint>(current), "ProjMtx"), proj);
  f.use_program(g_flat.program);
  f.uniform_matrix4fv(g_flat.proj, 1, GL_FALSE, proj);
}

void use_imgui() {
  if (!g_flat.program || !g_flat.imgui_program) return;
  gl().use_program(static_cast<GLuint>(g_flat.imgui_program));
  g_flat.imgui_program = 0;
}

}  // namespace

void begin_opaque(ImDrawList* dl) {
  dl->AddCallback(
      [](const ImDrawList*, const ImDrawCmd*) {
        glDisable(GL_BLEND);
        use_flat();
      },
      nullptr);
}

void opaque_textured(ImDrawList* dl) {
  dl->AddCallback([](const ImDrawList*, const ImDrawCmd*) { use_imgui(); }, nullptr);
}

void end_opaque(ImDrawList* dl) {
  dl->AddCallback(
      [](const ImDrawList*, const ImDrawCmd*) {
        use_imgui();
        glEnable(GL_BLEND);
      },
      nullptr);
}

void release_gl_state() {
  if (g_flat.program) gl().delete_program(g_flat.program);
  g_flat = {};
}

void* RowTexture::update(const Prepared& f) {
  const int rows = std::max(1, f.rows());
  if (!id_) {
    GLuint id = 0;
    glGenTextures(1, &id);
    id_ = id;
    glBindTexture(GL_TEXTURE_2D, id_);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    generation_ = 0;
  }
  if (generation_ == f.generation && generation_ != 0) return reinterpret_cast<void*>(static_cast<intptr_t>(id_));
  glBindTexture(GL_TEXTURE_2D, id_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  if (f.columns > width_ || rows > height_) {  // grows only: a narrower frame uses part of it
    width_ = std::max(width_, f.columns);
    height_ = std::max(height_, rows);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width_, height_, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  }
  if (f.rows() > 0) {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, f.columns, f.rows(), GL_RGBA, GL_UNSIGNED_BYTE, f.pixels.data());
  }
  generation_ = f.generation;
  return reinterpret_cast<void*>(static_cast<intptr_t>(id_));
}

void RowTexture::release() {
  if (id_) {
    GLuint id = id_;
    glDeleteTextures(1, &id);
  }
  id_ = 0;
  width_ = height_ = 0;
  generation_ = 0;
}

}  // namespace tc::viewer::app
