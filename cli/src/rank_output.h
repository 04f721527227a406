// tc-profile under an MPI launcher: one store per rank.
//
//   mpirun -np 4 tc-profile -o run.tcdb -- ./train     -> run.rank0.tcdb ... run.rank3.tcdb
//   mpirun -np 4 tc-profile -o /scratch/r%r/run.tcdb    -> %r is the rank
//
// The rank and world size come from the launcher's environment: mpirun's,
// srun's or torchrun's (torchrun --no-python tc-profile -o run.tcdb -- python train.py)
// (tc/trace/launcher.h).
// Outside a launcher, or in a world of 1, the path is used as given (a %r
// becomes 0).
#pragma once

#include <string>

#include "tc/trace/launcher.h"

namespace tc::cli {

using LauncherRank = trace::launcher::Place;

// Any launcher's: mpirun, srun, torchrun (each rank its own tc-profile).
inline LauncherRank launcher_rank() { return trace::launcher::any_place(trace::launcher::from_environment); }

// The output path for this rank: %r replaced by the rank; else, in a world of
// more than one, ".rankR" inserted before a ".tcdb" suffix (or appended).
inline std::string rank_output(const std::string& output, const LauncherRank& r) {
  const std::string rank = std::to_string(r.rank < 0 ? 0 : r.rank);
  if (size_t at = output.find("%r"); at != std::string::npos) {
    std::string out = output;
    for (; at != std::string::npos; at = out.find("%r", at + rank.size())) out.replace(at, 2, rank);
    return out;
  }
  if (r.rank < 0 || r.size <= 1) return output;
  const std::string suffix = ".tcdb";
  if (output.size() > suffix.size() && output.compare(output.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return output.substr(0, output.size() - suffix.size()) + ".rank" + rank + suffix;
  }
  return output + ".rank" + rank;
}

}  // namespace tc::cli
