// tc-test-shapes: a training loop through libtc.so whose input "tokens"
// changes length as told, so every new length recompiles (shape_change on
// tokens dim 1). The tests run two of these at once under one tc-profile to
// check that two processes' graph ids, executions and findings stay apart.
//
//   tc-test-shapes --lengths 8,12,12
//
// One step per listed length: a [4, length] input, its mean over dim 1 into
// a Linear(1, 1), an SGD step, mark_step(). Prints "pid P step S length L".
#include <tc/tc.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<int64_t> lengths;
  if (argc == 3 && !std::strcmp(argv[1], "--lengths")) {
    std::stringstream ss(argv[2]);
    for (std::string item; std::getline(ss, item, ',');) lengths.push_back(std::stoll(item));
  }
  if (lengths.empty()) {
    std::fprintf(stderr, "usage: tc-test-shapes --lengths 8,12,12\n");
    return 2;
  }
  tc::nn::Linear l(1, 1, true, 1);
  std::vector<tc::Tensor> params = l.parameters();
  tc::optim::SGD opt(params, {.lr = 0.1});
  std::vector<float> ys = {1, 0, 1, 0};
  for (size_t step = 0; step < lengths.size(); ++step) {
    const int64_t n = lengths[step];
    std::vector<float> xs(static_cast<size_t>(4 * n));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 13 + step) % 7) / 7.0f;
    auto x = tc::from_host(std::span<const float>(xs), {4, n}, "tokens");
    auto y = tc::from_host(std::span<const float>(ys), {4, 1}, "labels");
    auto loss = tc::nn::mse_loss(l(tc::mean(x, {1}, true)), y);
    opt.step(tc::grad(loss, params));
    tc::mark_step();
    std::printf("pid %d step %zu length %lld loss %.4f\n", static_cast<int>(getpid()), step, static_cast<long long>(n),
                static_cast<double>(loss.item()));
  }
  return 0;
}
