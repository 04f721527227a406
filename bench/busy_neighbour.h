// bench/busy_neighbour.h: a process that spins on one core, for the
// benchmarks' "beside a busy neighbour" rows (the contention tables).
#pragma once

#include <csignal>
#include <cstdint>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tc_bench {

// A forked child that keeps one core busy (`while true`), the way a data
// loader worker or a logger does, until stop_busy_neighbour(); -1 if fork failed.
inline pid_t start_busy_neighbour() {
  pid_t pid = ::fork();
  if (pid == 0) {
    volatile uint64_t n = 0;
    for (;;) n = n + 1;
  }
  return pid;
}

inline void stop_busy_neighbour(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace tc_bench
