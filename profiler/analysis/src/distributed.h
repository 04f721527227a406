// What the job's findings need from each rank's store, on rank 0's clock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tc/analysis/job.h"

namespace tc::analysis {

struct RankData {
  RankIdentity id;
  size_t store = 0;        // index into JobReport::stores
  int64_t start_ts = 0;    // its process's start (else the run's), aligned
  struct Collective {
    int64_t seq = 0, ts = 0, dur = 0, step = 0;
    std::string op;
  };
  struct Compilation {
    int64_t ts = 0, dur = 0, graph_id = 0, step = 0;
    std::string signature, reason, trigger;
    std::string framework = "tc";  // compilations.framework: 'torch.compile' gets torch's own remedies
  };
  struct Input {
    std::string input;
    int64_t dim = 0, old_value = 0, new_value = 0;
    bool dynamic = false;  // the compiler made the dim dynamic in this compilation (torch.compile's automatic dynamic)
  };
  struct Evaluation {
    int64_t ts = 0, dur = 0, step = 0;
    std::string kind, site;  // site: "train.cpp:88"
  };
  struct Span {
    int64_t ts = 0, dur = 0, step = 0;
    bool nested = false;  // executions: run inside an explicit evaluation
  };
  std::vector<Collective> collectives;  // ascending seq
  std::vector<Compilation> compilations;  // ascending ts
  std::map<int64_t, std::vector<Input>> inputs;  // graph_id -> its changed dims
  std::vector<Evaluation> evaluations;  // ascending ts
  std::vector<Span> executions, steps;  // ascending ts
  int64_t max_compile_dur = 0, max_eval_dur = 0, max_exec_dur = 0;
};

// Fills each rank's collective_wait_s, job.collectives, job.collective_wait_s
// and job.straggler_wait_s, and appends distributed.straggler and
// distributed.desync findings. `ranks` is in JobReport::ranks' order.
void add_distributed_findings(const std::vector<RankData>& ranks, JobReport& job);

}  // namespace tc::analysis
