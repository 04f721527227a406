// The kernel IR's scalar expressions as C, for every C-like emitter (in the
// way of tinygrad's CStyleLanguage): one renderer and one table of ops
// (c_render.cpp), and a Dialect per language that holds only what differs
// (cpu/codegen_cpp.cpp: C++ for g++; cuda/codegen_cuda.cpp: CUDA C for
// NVRTC). A new elementwise op is one row of that table, plus the helper its
// row calls (tc_<name>) in op_helpers() when the dialects can write it alike,
// else in each dialect's prelude.
//
// The rendered text is the code cache's key: a change here rebuilds every
// cached graph, so keep it deliberate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "../compile.h"

namespace tc::detail::c_render {

struct Dialect {
  const char* name;          // the language, in errors ("C++", "CUDA")
  const char* restrict_kw;   // on the kernels' buffer pointers
  const char* arena_suffix;  // after an arena offset in a buffer's address ("" or "LL")
  // Non-finite literals: float NaN and +infinity, then double ones (-x is
  // written "(-x)").
  const char* f32_nan;
  const char* f32_inf;
  const char* f64_nan;
  const char* f64_inf;
  // A float function of the C math library is libm_prefix + name +
  // libm_suffix: "std::" + "tanh" + "", or "" + "tanh" + "f".
  const char* libm_prefix;
  const char* libm_suffix;
  const char* fn_qualifier;  // on the prelude's helpers ("inline", or CUDA's "TC_D")
};

// The C type of a dtype: float, int32_t, uint8_t.
const char* ctype(DType d);
// A constant of type dt, exactly (floats with 9 significant digits).
std::string literal(const Dialect& d, DType dt, double v);
// A double constant, exactly (17 significant digits).
std::string literal_d(const Dialect& d, double v);
// Expression i of kernel k: loop variables are i<dim>, buffers p<buf>, a
// reduction's accumulator `acc`, the error flag `err`.
std::string expr(const Dialect& d, const Kernel& k, int i);
// A dynamic program's size (compile.h SymInt) as an int64 expression of
// tc_s, and a real form as a double expression; a constant as a literal.
std::string size(const SymInt& v);
std::string real(const Dialect& d, const SymReal& v);
// An extent as a kernel reads it: v, its value where the program was planned
// (the emitters' choices of threads and blocks follow it), and for a dynamic
// program's symbolic one the int64 expression of tc_s that the code computes.
struct Extent {
  int64_t v = 1;
  std::string sym;
  bool fixed() const { return sym.empty(); }
  std::string str() const { return sym.empty() ? std::to_string(v) + "LL" : sym; }
  Extent operator*(const Extent& o) const;
};
// Kernel field f (M, N, K, dim) or element d of a per-dim field (loop,
// batch, the strides) of `sym` (null: a static kernel) whose planned value is v.
Extent ext(const std::shared_ptr<const KernelSyms>& sym, const SymInt KernelSyms::*f, int64_t v);
Extent at(const std::shared_ptr<const KernelSyms>& sym, const std::vector<SymInt> KernelSyms::*f, std::size_t d, int64_t v);
// Loop d's extent.
Extent loop_x(const Kernel& k, std::size_t d);

// What a dynamic program's kernel declares first: tc_s (the symbolic size)
// and tc_off (the arena offsets), read from the pointer table at run time;
// "" for a static program.
std::string sizes_prologue(const Program& p);
// Buffer b's address in the pointer table `b` (inputs, outputs, the arena).
std::string ptr(const Dialect& d, const Program& p, int b);
// Declares p<buf> for every buffer the kernel reads or writes, one a line.
void declare(const Dialect& d, std::ostream& os, const Program& p, const Kernel& k);

// The prelude's helpers that every dialect writes alike, in its spelling:
// the random numbers (bit-identical to compiler/src/random.h: eager and
// compiled runs draw the same numbers) ...
std::string random_helpers(const Dialect& d);
// ... and helpers of kOps rows (relu, sigmoid, rsqrt, not, add, sub, mul).
std::string op_helpers(const Dialect& d);

}  // namespace tc::detail::c_render
