// The CPU backend's thread pool (private): what generated code splits its
// loops and matrix products over, instead of an OpenMP team (#17).
//
// Why not OpenMP: libgomp's workers spin up to 300,000 pauses (milliseconds)
// at the end of every parallel region and every region waits at a barrier
// for the whole team. Beside one busy process on 2 cores, a descheduled
// worker then stalled each of a step's many regions while the others burned
// the core it needed (the Transformer step 2.0x slower in the median, 194 ms
// spikes); OMP_WAIT_POLICY=passive removed the spikes but cost 1.8x on the
// quiet MLP.
//
// What this pool does instead:
// - The calling thread takes part and work is claimed in chunks from one
//   counter, so a region never waits for a worker that has not started: a
//   descheduled worker's share is done by whoever is running. The caller
//   waits only for chunks already claimed.
// - Workers spin for a bounded time after a region (a few microseconds to
//   `spin_max_ns`), then sleep on a futex. The bound adapts per worker: it
//   halves when spinning ended without work and the next region came much
//   later (a gap between steps), and doubles when a region came just after
//   the worker went to sleep.
// - The caller, once only claimed chunks are left, spins briefly and then
//   sleeps on a futex; the runner of the last chunk wakes it.
// - A worker the scheduler keeps on the caller's CPU (stacked beside a busy
//   neighbour) is moved off it through its affinity, within the process's
//   CPUs (TC_POOL_SPREAD=0: never).
// - One region at a time: a second thread calling parallel_for while one
//   runs does its loop alone.
#pragma once

#include <cstdint>

// body(ctx, lo, hi) runs iterations [lo, hi).
extern "C" typedef void (*tc_body_fn)(void* ctx, int64_t lo, int64_t hi);

namespace tc::detail::cpu {

// Runs body over [0, n) on the process's pool and returns when all of it
// ran. chunks_per_thread: how finely [0, n) is cut (1: one piece per thread,
// like a static schedule; 4: finer, for balance); grain: the smallest chunk
// worth splitting off. The pool starts on first use with pool_threads()
// threads and is never destroyed (workers are detached at exit). Generated
// code reaches it through the runtime table (runtime_api.h).
void pool_parallel_for(int64_t n, int64_t grain, int32_t chunks_per_thread, tc_body_fn body, void* ctx);

// The pool's thread count, the caller included, without starting it:
// TC_NUM_THREADS, else OMP_NUM_THREADS (the variable users already set),
// else the CPUs this process may run on.
int pool_threads();

// Counters for tests and benchmarks: regions run in parallel, regions run
// alone (n too small, one thread, or another region running), futex sleeps
// of workers, futex sleeps of callers waiting for claimed chunks, and
// workers moved off the caller's CPU (see pool.cpp, "Stacked threads").
struct PoolStats {
  uint64_t parallel = 0, serial = 0, sleeps = 0, caller_sleeps = 0, spreads = 0;
};
PoolStats pool_stats();

// Tests only: starts the workers and pins each to `cpu` (the calling
// thread's mask untouched), the way the scheduler stacks them beside a busy
// neighbour. Returns false where that affinity cannot be set.
bool pool_pin_workers_for_test(int cpu);

}  // namespace tc::detail::cpu
