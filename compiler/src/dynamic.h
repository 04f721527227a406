// Symbolic dimensions (private): how one build serves every size of a dim.
//
// A family is the lowered graphs of one shape-erased signature that differ
// only in one size s (one or more input dims that move together): every
// node's dims, slice bounds and size-dependent fills (a mean's 1/n) are
// fitted as forms of s from two or more graphs seen at different sizes, and
// a later graph belongs to the family only when every one of its values is
// the fit's at its s (matches()). The compiled program of a family is made
// by running passes and schedule on the family at four sizes and unifying
// the four programs (unify()): a structure that differs between them, or an
// integer that is no polynomial of degree <= 2 in s, leaves the graph static.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compile.h"

namespace tc::detail {

// A lowered graph's node values as forms of s.
struct Family {
  struct Fit {
    std::vector<SymInt> shape, ints;
    SymReal scalar, scalar2;
  };
  CGraph base;                               // one member; instantiate() rewrites its values
  std::vector<Fit> nodes;
  std::vector<std::pair<int, int>> dims;     // (input slot, dim) carrying s; dims[0] defines s
  bool collectives = false;
  // Whether dim `dim` of input `slot` is a form of s (not a constant).
  bool symbolic_input(int slot, int64_t dim) const;
};

// Fits a family from graphs of one shape-erased signature at distinct sizes
// `sizes` (>= 2 graphs, each size >= 2) whose inputs differ only in `dims`.
// False, with the reason in *why, when a value is no affine form of s (or a
// reciprocal of one with a small numerator, for fills).
bool fit_family(const std::vector<const CGraph*>& graphs, const std::vector<int64_t>& sizes,
                const std::vector<std::pair<int, int>>& dims, Family* out, std::string* why);
// The family's graph at size s.
CGraph instantiate(const Family& f, int64_t s);
// s of `g` when it is the family's graph at that size (every node dim then
// at least 1), else 0.
int64_t family_size(const Family& f, const CGraph& g);

// Unifies programs scheduled from the family at sizes[k] (programs[0] the
// planned one): sets its kernels' and buffers' symbolic fields. False, with
// the reason, when they differ in anything but such values.
bool unify(std::vector<Program>& programs, const std::vector<int64_t>& sizes, std::string* why);
// A program's buffer bytes at size s.
int64_t bytes_at(const Program& p, int buf, int64_t s);

}  // namespace tc::detail
