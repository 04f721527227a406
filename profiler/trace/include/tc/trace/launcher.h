// tc/trace/launcher.h: where a launcher says a process sits in its job.
//
//   auto p = tc::trace::launcher::place(tc::trace::launcher::from_environment);
//   if (p.rank >= 0) ...   // under mpirun: rank p.rank of p.size, job p.job
//   auto q = tc::trace::launcher::any_place(tc::trace::launcher::from_environment);
//   // also torchrun's and Slurm's own ranks (no MPI)
//
// The variables, in the order they are trusted: Open MPI's
// OMPI_COMM_WORLD_RANK/SIZE, else PMI_RANK/PMI_SIZE (MPICH, Slurm's PMI); the
// job from PMIX_NAMESPACE, OMPI_MCA_orte_ess_jobid or SLURM_JOB_ID, the last
// with its SLURM_STEP_ID as Slurm writes them ("1234.0"): two srun steps of
// one allocation are two jobs, whose ranks 0 are two processes. any_place()
// then takes torchrun's RANK/WORLD_SIZE (job TORCHELASTIC_RUN_ID when no
// other names one; torchrun's default is "none") and, last, Slurm's
// SLURM_PROCID of SLURM_STEP_NUM_TASKS, a job step's tasks (srun's; a batch
// script's own shell has the allocation's SLURM_NTASKS, and a tc-profile
// there wraps the whole job, so it is no rank): ranks that are not MPI's, so tc::dist (which
// needs MPI) reads place() only. One list for every reader: tc-profile
// (naming its store per rank, recording them in run_env: any_place), tc::dist
// (the world size: place), and the analysis (a store's rank from its
// run_env: any_place). Standard library only.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tc::trace::launcher {

inline constexpr std::string_view kJobVariables[] = {"PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "SLURM_JOB_ID"};
// Every variable tc records in run_env besides TC_*.
inline constexpr std::string_view kVariables[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",      "PMI_SIZE",
                                                  "PMIX_NAMESPACE",       "OMPI_MCA_orte_ess_jobid", "SLURM_JOB_ID",  "SLURM_STEP_ID",
                                                  "SLURM_PROCID",         "SLURM_NTASKS",            "SLURM_STEP_NUM_TASKS", "RANK",
                                                  "LOCAL_RANK",           "WORLD_SIZE",           "TORCHELASTIC_RUN_ID"};

inline bool is_variable(std::string_view name) {
  for (std::string_view v : kVariables)
    if (v == name) return true;
  return false;
}

struct Place {
  int rank = -1;    // -1: no launcher
  int size = 0;     // 0: unknown
  std::string job;  // "" when unknown; Slurm's "JOB.STEP" when SLURM_STEP_ID is set
  int local_rank = -1;  // torchrun's LOCAL_RANK (any_place); -1 when not given
};

namespace detail {
// A value that is not a number in [0, 2^24) counts as absent (-1).
template <class Get>
int number(Get& get, std::string_view name) {
  const char* v = get(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end && *end == '\0' && n >= 0 && n < (1 << 24) ? static_cast<int>(n) : -1;
}
}  // namespace detail

// A getter for place(): the process's environment.
inline const char* from_environment(std::string_view name) { return std::getenv(std::string(name).c_str()); }

// `get(name)` gives a variable's value or nullptr (the environment, or a
// store's run_env). A value that is not a number in [0, 2^24) counts as absent.
template <class Get>
Place place(Get&& get) {
  auto number = [&](std::string_view name) { return detail::number(get, name); };
  Place p;
  if (int rank = number("OMPI_COMM_WORLD_RANK"); rank >= 0) {
    p.rank = rank;
    p.size = number("OMPI_COMM_WORLD_SIZE");
  } else if (int pmi = number("PMI_RANK"); pmi >= 0) {
    p.rank = pmi;
    p.size = number("PMI_SIZE");
  }
  if (p.size < 0) p.size = 0;
  for (std::string_view v : kJobVariables) {
    if (const char* s = get(v); s && *s) {
      p.job = s;
      const char* step = v == "SLURM_JOB_ID" ? get("SLURM_STEP_ID") : nullptr;
      if (step && *step) p.job += "." + std::string(step);
      break;
    }
  }
  return p;
}

// place(), else torchrun's rank (RANK, WORLD_SIZE, LOCAL_RANK; the job from
// TORCHELASTIC_RUN_ID when no MPI or Slurm variable names one), else Slurm's
// (SLURM_PROCID of SLURM_STEP_NUM_TASKS): the rank a store is, whatever
// started it. A rank at or past its world's size is none.
template <class Get>
Place any_place(Get&& get) {
  Place p = place(get);
  if (p.rank >= 0) return p;
  if (int rank = detail::number(get, "RANK"); rank >= 0) {
    p.rank = rank;
    p.size = std::max(0, detail::number(get, "WORLD_SIZE"));
    p.local_rank = detail::number(get, "LOCAL_RANK");
    if (const char* run = get("TORCHELASTIC_RUN_ID"); p.job.empty() && run && *run) p.job = std::string("torchrun:") + run;
  } else if (int procid = detail::number(get, "SLURM_PROCID"), tasks = detail::number(get, "SLURM_STEP_NUM_TASKS"); procid >= 0 && tasks > 0) {
    p.rank = procid;
    p.size = tasks;
  }
  if (p.size > 0 && p.rank >= p.size) return Place{};
  return p;
}

}  // namespace tc::trace::launcher
