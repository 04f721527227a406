// tc-test-dist: data-parallel training with tc::dist (tests/dist).
//
//   mpirun -np 2 tc-test-dist --global-batch 16 --steps 20 [--long-rank 1 --long-at 5] [--params FILE]
//                             [--fail-rank R --fail-at S]
//
// Every rank builds the same model (fixed seeds) and trains on its shard of a
// deterministic global batch: rank r takes rows r*b .. (r+1)*b-1, b = G/N.
// Inputs "tokens" are [b, T, 8] with T = 12; with --long-rank R --long-at S,
// rank R's batch at step S has T = 20 (a new shape: only that rank compiles
// again, and the others wait for it at the all-reduce). Each step prints, on
// rank 0, "step S loss L" with L the mean loss over the global batch; --params
// FILE writes every parameter value at the end (rank 0), one per line. With
// --fail-rank R --fail-at S, rank R throws before its step S (main prints
// the error and returns 1) while the others go on into the step's
// collective: a rank that fails.
#include <tc/dist.h>
#include <tc/tc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

float value(int64_t step, int64_t row, int64_t t, int64_t k) {
  return static_cast<float>(((row * 131 + t * 17 + k * 7 + step * 29) % 23)) / 23.0f - 0.5f;
}

int train(int argc, char** argv) {
  int64_t global = 16, steps = 20, long_rank = -1, long_at = -1, fail_rank = -1, fail_at = -1;
  std::string params_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--global-batch") global = std::atoll(argv[i + 1]);
    else if (a == "--steps") steps = std::atoll(argv[i + 1]);
    else if (a == "--long-rank") long_rank = std::atoll(argv[i + 1]);
    else if (a == "--long-at") long_at = std::atoll(argv[i + 1]);
    else if (a == "--params") params_file = argv[i + 1];
    else if (a == "--fail-rank") fail_rank = std::atoll(argv[i + 1]);
    else if (a == "--fail-at") fail_at = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: tc-test-dist [--global-batch G] [--steps N] [--long-rank R --long-at S] [--params FILE]"
                   " [--fail-rank R --fail-at S]\n");
      return 2;
    }
  }
  tc::dist::init();
  const int rank = tc::dist::rank(), world = tc::dist::world_size();
  if (global % world != 0) {
    std::fprintf(stderr, "tc-test-dist: --global-batch %lld does not split over %d ranks\n", static_cast<long long>(global), world);
    return 2;
  }
  const int64_t b = global / world, in = 8, hidden = 16, classes = 4;
  tc::nn::Linear l1(in, hidden, true, 11), l2(hidden, classes, true, 12);
  std::vector<tc::Tensor> params = l1.parameters();
  for (auto& p : l2.parameters()) params.push_back(p);
  tc::dist::broadcast(params);
  tc::optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9});
  for (int64_t step = 0; step < steps; ++step) {
    if (rank == fail_rank && step == fail_at)
      throw std::runtime_error("tc-test-dist: rank " + std::to_string(rank) + " fails at step " + std::to_string(step) + " (--fail-rank)");
    const int64_t T = rank == long_rank && step == long_at ? 20 : 12;
    std::vector<float> xs(static_cast<size_t>(b * T * in));
    std::vector<int32_t> ys(static_cast<size_t>(b));
    for (int64_t r = 0; r < b; ++r) {
      const int64_t row = rank * b + r;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < in; ++k) xs[static_cast<size_t>((r * T + t) * in + k)] = value(step, row, t, k);
      ys[static_cast<size_t>(r)] = static_cast<int32_t>((row * 3 + step) % classes);
    }
    auto x = tc::from_host(xs, {b, T, in}, "tokens");
    auto y = tc::from_host(ys, {b}, "labels");
    auto h = tc::mean(tc::relu(l1(x)), {1});
    auto loss = tc::nn::cross_entropy(l2(h), y);
    auto grads = tc::dist::all_reduce_mean(tc::grad(loss, params));
    opt.step(grads);
    tc::mark_step();
    float global_loss = tc::dist::all_reduce_mean({loss})[0].item();
    if (rank == 0) std::printf("step %lld loss %.7f\n", static_cast<long long>(step), static_cast<double>(global_loss));
  }
  if (rank == 0 && !params_file.empty()) {
    FILE* f = std::fopen(params_file.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "tc-test-dist: cannot write %s\n", params_file.c_str());
      return 1;
    }
    for (const auto& p : params)
      for (float v : p.to_host()) std::fprintf(f, "%.9g\n", static_cast<double>(v));
    std::fclose(f);
  }
  tc::dist::barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return train(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
