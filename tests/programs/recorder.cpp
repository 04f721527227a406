// tc-test-recorder: records a known set of events, then ends the way it is
// told. The end-to-end tests run it under tc-profile (and with TC_PROFILE=)
// and check that the store holds exactly what it recorded.
//
//   tc-test-recorder --events N --threads T --end exit|abort|segv|wait
//
// The N events are split over T threads. Thread t records its events
// i = 0, 1, ... in turn as a range (i % 3 == 0), an instant (1) or a counter
// (2), each carrying t * 2^32 + i (the counter as its value), so a test can
// tell exactly which events arrived. Then it prints "recorded N pid P" and
// ends: exit(0), abort(), a segmentation fault, or (wait) it waits for a
// signal, and SIGINT or SIGTERM make it exit 0.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tc/trace/trace.h"

namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

void record(int t, long n) {
  tc::trace::set_thread_name("recorder-" + std::to_string(t));
  for (long i = 0; i < n; ++i) {
    int64_t tag = (int64_t{t} << 32) | i;
    if (i % 3 == 0) {
      TC_TRACE_RANGE_ARG("test.range", tag);
    } else if (i % 3 == 1) {
      TC_TRACE_INSTANT("test.instant", tag);
    } else {
      TC_TRACE_COUNTER("test.counter", tag);
    }
  }
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: tc-test-recorder --events N --threads T --end exit|abort|segv|wait\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  long events = 1000;
  int threads = 1;
  std::string end = "exit";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage();
    if (a == "--events") events = std::atol(argv[++i]);
    else if (a == "--threads") threads = std::atoi(argv[++i]);
    else if (a == "--end") end = argv[++i];
    else usage();
  }
  if (threads < 1 || events < 0 || (end != "exit" && end != "abort" && end != "segv" && end != "wait")) usage();

  signal(SIGINT, on_stop);  // before "recorded" is printed: a test may signal right after
  signal(SIGTERM, on_stop);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    long n = events / threads + (t < events % threads ? 1 : 0);
    pool.emplace_back(record, t, n);
  }
  for (auto& th : pool) th.join();
  std::printf("recorded %ld pid %d\n", events, static_cast<int>(getpid()));
  std::fflush(stdout);

  if (end == "abort") std::abort();
  if (end == "segv") {
    // A real fault the sanitizers cannot see coming: a write to a page with no access.
    void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *static_cast<volatile int*>(page) = 1;
  }
  if (end == "wait") {
    while (!g_stop) pause();
    std::printf("stopped by signal\n");
  }
  return 0;
}
