// tc/tc.h: the whole tc API. Start here.
//
// tc is a training compiler. You write a training step with tensors; tc
// records it as a graph and runs it when you cut the step.
//
//   #include <tc/tc.h>
//
//   tc::nn::Sequential model{tc::nn::Linear(784, 512), tc::nn::ReLU(),
//                            tc::nn::Linear(512, 10)};
//   tc::optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   for (int step = 0; step < steps; ++step) {
//     auto x = tc::from_host(images, {B, 784}, "images");   // input data
//     auto y = tc::from_host(labels, {B}, "labels");        // int32 labels
//     auto loss = tc::nn::cross_entropy(model(x), y);       // builds nodes only
//     opt.step(tc::grad(loss, model.parameters()));         // backward + update, lazily
//     tc::mark_step();                                      // one graph: run it
//     if (step % 10 == 0) std::cout << loss.item() << "\n"; // free after mark_step
//   }
//
// Rules of thumb:
//   - Nothing runs until tc::mark_step() or an explicit evaluation.
//   - loss.item(), t.to_host() or `std::cout << t` on a *pending* tensor cut
//     the graph on the spot (an explicit evaluation, recorded with your file
//     and line). Call them after mark_step() instead.
//   - Shapes are checked when you build the op: tc::ShapeError names the op,
//     both shapes and your line. Other misuse throws tc::Error.
//   - Device memory is accounted by category; past the capacity
//     (TC_DEVICE_MEMORY_LIMIT) you get tc::OutOfMemoryError with the breakdown.
//   - TC_EAGER=1 runs every op at once (the reference executor).
#pragma once

#include "tc/error.h"
#include "tc/memory.h"
#include "tc/nn.h"
#include "tc/optim.h"
#include "tc/tensor.h"
