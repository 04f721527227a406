// Where a launcher says a process sits in its job (tc/trace/launcher.h):
// mpirun's and PMI's ranks for tc::dist (place), and torchrun's and Slurm's
// too for naming a store (any_place; tracker #29, item 2).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>

#include "tc/trace/launcher.h"

namespace launcher = tc::trace::launcher;

namespace {

using Env = std::map<std::string, std::string, std::less<>>;

auto getter(const Env& env) {
  return [&env](std::string_view name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

TEST(Launcher, TorchrunsRankWorldAndRunIdNameTheRank) {
  const Env env{{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"}, {"TORCHELASTIC_RUN_ID", "abc"}};
  launcher::Place p = launcher::any_place(getter(env));
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.size, 4);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.job, "torchrun:abc");
  // tc::dist needs MPI: torchrun's variables alone are no MPI world.
  EXPECT_EQ(launcher::place(getter(env)).rank, -1);
  for (std::string_view v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "SLURM_NTASKS"})
    EXPECT_TRUE(launcher::is_variable(v)) << v << " is recorded in run_env";
}

TEST(Launcher, SlurmsProcidIsTheRankWithoutMpiAndMpiComesFirst) {
  const Env slurm{{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "8"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "0"}};
  launcher::Place p = launcher::any_place(getter(slurm));
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.size, 8);
  EXPECT_EQ(p.job, "42.0");
  Env both = slurm;
  both["PMI_RANK"] = "5";
  both["PMI_SIZE"] = "8";
  both["RANK"] = "1";
  EXPECT_EQ(launcher::any_place(getter(both)).rank, 5) << "MPI's rank first";
  Env torch_in_slurm = slurm;
  torch_in_slurm["RANK"] = "1";
  torch_in_slurm["WORLD_SIZE"] = "2";
  torch_in_slurm["TORCHELASTIC_RUN_ID"] = "none";
  launcher::Place t = launcher::any_place(getter(torch_in_slurm));
  EXPECT_EQ(t.rank, 1) << "torchrun's rank before Slurm's task";
  EXPECT_EQ(t.job, "42.0") << "the allocation's job names it";
}

// A batch script's shell has the allocation's SLURM_PROCID 0 and SLURM_NTASKS,
// but no step: a tc-profile there wraps the whole job (tc-profile -- torchrun
// ..., or srun), and its store keeps the name it was given.
TEST(Launcher, ABatchScriptIsNoRank) {
  const Env batch{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "42"}};
  EXPECT_EQ(launcher::any_place(getter(batch)).rank, -1);
  const Env past{{"RANK", "4"}, {"WORLD_SIZE", "4"}};
  EXPECT_EQ(launcher::any_place(getter(past)).rank, -1) << "rank 4 of 4 is no rank";
}

TEST(Launcher, ValuesThatAreNotRanksAreAbsent) {
  const Env env{{"RANK", "-1"}, {"WORLD_SIZE", "x"}, {"SLURM_PROCID", "99999999999"}};
  EXPECT_EQ(launcher::any_place(getter(env)).rank, -1);
  const Env no_world{{"RANK", "0"}, {"WORLD_SIZE", "two"}};
  EXPECT_EQ(launcher::any_place(getter(no_world)).size, 0) << "unknown, not negative";
}

}  // namespace
