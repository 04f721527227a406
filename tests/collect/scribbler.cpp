// tc-test-scribbler: a program that writes over the ring memory it shares
// with tc-profile, the way a wild pointer would. Run under tc-profile only.
//
// It records 3000 instants on a thread, waits until the collector has read
// them, tries to truncate the memory (prints "truncate refused" or
// "truncate succeeded"), scribbles the header's geometry and every ring's
// write counter, records 1000 more events on a new thread, prints
// "scribbled" and exits 0.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "tc/trace/region.h"
#include "tc/trace/trace.h"

namespace tr = tc::trace;

int main() {
  const char* fd_text = std::getenv("TC_PROFILE_FD");
  if (fd_text == nullptr) {
    std::fprintf(stderr, "tc-test-scribbler: run me under tc-profile\n");
    return 2;
  }
  std::thread([] {
    for (int i = 0; i < 3000; ++i) TC_TRACE_INSTANT("scribble.before", i);
  }).join();
  std::string err;
  int fd = std::atoi(fd_text);
  auto region = tr::Region::attach(fd, &err);
  if (!region) {
    std::fprintf(stderr, "tc-test-scribbler: %s\n", err.c_str());
    return 2;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (bool drained = false; !drained && std::chrono::steady_clock::now() < deadline;) {
    drained = true;
    for (uint32_t r = 0; r < region->ring_count(); ++r) {
      drained = drained && region->ring(r).state.load() == static_cast<uint32_t>(tr::RingState::kFree);
    }
    if (!drained) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("truncate %s\n", ftruncate(fd, 0) == 0 ? "succeeded" : "refused");
  tr::RegionHeader& h = region->header();
  h.ring_count = 0xffffffffu;
  h.ring_capacity = uint64_t{1} << 40;
  for (uint32_t r = 0; r < region->ring_count(); ++r) region->ring(r).write.fetch_add(uint64_t{1} << 40);
  std::thread([] {
    for (int i = 0; i < 1000; ++i) TC_TRACE_INSTANT("scribble.after", i);
  }).join();
  std::printf("scribbled\n");
  std::fflush(stdout);
  return 0;
}
