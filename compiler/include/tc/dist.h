// tc/dist.h: data-parallel training over MPI.
//
// Each rank (process) trains a replica of the model on its own shard of the
// batch; before the optimizer step, the ranks average their gradients.
//
//   #include <tc/tc.h>
//   #include <tc/dist.h>
//
//   int main(int argc, char** argv) {
//     tc::dist::init();                                  // reads the MPI launcher's environment
//     int rank = tc::dist::rank(), world = tc::dist::world_size();
//     Model model;                                       // same seeds: equal parameters on every rank
//     tc::dist::broadcast(model.parameters());           // or make sure of it: rank 0's values everywhere
//     for (int step = 0; step < steps; ++step) {
//       auto [x, y] = shard(batch(step), rank, world);   // this rank's part of the global batch
//       auto loss = loss_of(model(x), y);
//       auto grads = tc::dist::all_reduce_mean(tc::grad(loss, model.parameters()));
//       opt.step(grads);
//       tc::mark_step();
//     }
//   }
//
//   mpirun -np 2 tc-profile -o run.tcdb -- ./train        # run.rank0.tcdb, run.rank1.tcdb
//   tc-analyze run.rank0.tcdb run.rank1.tcdb              # which rank made the others wait
//
// Contract:
// - init() decides the world once per process: under mpirun (Open MPI's
//   OMPI_COMM_WORLD_SIZE, or PMI_SIZE) with more than one rank it loads
//   libtc_mpi.so (installed beside tc; TC_MPI_LIBRARY names another) and
//   starts MPI; otherwise the program is a world of 1 and needs no MPI at
//   run time. MPI is finalized at exit; a rank that exits with a non-zero
//   status (an error it returned from main) aborts the job instead
//   (MPI_Abort with that status, after one line on stderr), so that no
//   rank waits forever for it in a collective. A second init() is a no-op.
//   It measures this rank's clock offset to rank 0 (the minimum-error
//   ping-pong of a few round trips) and records rank, world size, host, job
//   and offset in the store (table `ranks`), so that stores of one job line up.
//   Failure to start MPI throws tc::Error with one line saying what to do.
// - rank(), world_size(): after init(); before it, 0 and 1.
// - all_reduce_mean(ts): the element-wise mean over the ranks of each tensor,
//   in order; f32 tensors only, of equal shapes on every rank. It is lazy, an
//   op of the step's graph: it returns pending tensors (same names and
//   categories) that are views of one packed buffer, and nothing runs until
//   the cut. The step then compiles to one graph that holds the collective
//   (its signature counts it; no graph is cut for it): the gradients are
//   computed, packed into that buffer, travel through one MPI_Allreduce at
//   the collective's place in the kernel order, and the optimizer update
//   reads the mean. In eager mode (TC_EAGER=1), and when every tensor of ts
//   is already materialized (a loss read after mark_step(): there is no
//   graph to be part of), the collective runs at the call and the results
//   are materialized, with the same arithmetic (the sum over the ranks, times
//   1/world). Reading one result early (item(), to_host()) is an explicit
//   evaluation that runs the collective then; the cut runs it again for the
//   results still pending, so read them after mark_step().
//   Each run is one row of `collectives` (bytes, tensors, the call site and
//   the collective's sequence number, equal on every rank), whose ts is the
//   rank's arrival and whose dur includes the wait for the others; in a
//   compiled graph it lies inside the graph's execution. With a world of 1
//   the values come back unchanged (and the row is still recorded). The
//   results carry no gradient (tc::grad through them throws).
// - broadcast(ts): rank 0's values of ts, assigned in place on every rank
//   (a cut: pending values of ts first run as one graph, trigger "collective").
// - barrier(): waits for every rank (recorded in `collectives`).
// - A collective that fails throws tc::Error naming the MPI call.
#pragma once

#include <vector>

#include "tc/tensor.h"

namespace tc::dist {

void init(TC_HERE);
int rank();
int world_size();
std::vector<Tensor> all_reduce_mean(const std::vector<Tensor>& tensors, TC_HERE);
void broadcast(const std::vector<Tensor>& tensors, TC_HERE);
void barrier(TC_HERE);

}  // namespace tc::dist
