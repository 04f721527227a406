// Collectives inside a graph (private). tc::dist::all_reduce_mean is lazy:
// it appends one Op::AllReduce node (its tensors packed flat, in order) and a
// slice + reshape per tensor, so the step's graph contains the collective,
// as XLA's all-reduce sits in the HLO. Where it runs:
//
//   eager executor   execute_node(AllReduce): pack, all_reduce_mean_inplace()
//   compiled graph   a Kernel::Collective at its place in the kernel order:
//                    the generated code packs its inputs into its buffer and
//                    calls tc_host_api::all_reduce_mean (a function pointer
//                    the backend hands the object at load, like the pool),
//                    which lands in host_all_reduce_mean() below
//
// Both end in all_reduce_mean_inplace (dist.cpp), so compiled and eager do
// the same arithmetic and record the same `collectives` rows.
#pragma once

#include <cstdint>
#include <exception>
#include <source_location>
#include <vector>

extern "C" {
// What generated code sees (declared again, identically, in its source;
// `version` guards the layout). all_reduce_mean(ordinal, data, n) averages
// data[0, n) over the ranks in place for the graph's `ordinal`-th collective
// (attrs.ints[0] of its node); it returns 0, or 1 after a failure that the
// runtime rethrows when run() returns.
struct tc_host_api {
  int32_t version;  // kHostApiVersion
  int32_t reserved;
  int (*all_reduce_mean)(int64_t ordinal, float* data, int64_t n);
};
}

namespace tc::detail {

inline constexpr int32_t kHostApiVersion = 1;

// dist.cpp: the element-wise mean over the ranks of data[0, n), in place:
// one MPI_Allreduce (sum) then * 1/world (nothing moves in a world of 1),
// recorded as one row of `collectives` (this rank's arrival, its wait, the
// bytes, `tensors`, the call site `where`). Throws tc::Error.
void all_reduce_mean_inplace(float* data, int64_t n, int64_t tensors, const std::source_location& where);

// The host callbacks of compiled code (compiler.cpp); never null.
const tc_host_api* host_api();

// The call sites of a running compiled graph's collectives, by ordinal: set
// by the executor on its thread around Executable::run(), read by the
// callback. A failure inside the callback is kept here and rethrown by
// rethrow_collective_failure() after run() returns.
struct CollectiveSite {
  std::source_location where;
  int64_t tensors = 0;
};
class CollectiveScope {
 public:
  explicit CollectiveScope(const std::vector<CollectiveSite>* sites);
  ~CollectiveScope();
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;
  // Throws what a collective of this run threw, if one did.
  void rethrow_collective_failure();

  // For the callback: the innermost scope of this thread (nullptr: none).
  static CollectiveScope* current();
  const std::vector<CollectiveSite>* sites;
  std::exception_ptr failure;

 private:
  CollectiveScope* saved_;
};

}  // namespace tc::detail
