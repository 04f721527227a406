#include "tc/trace/region.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <new>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace tc::trace {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t ring_stride(uint64_t capacity) { return align_up(sizeof(RingHeader) + capacity * sizeof(Slot), 64); }

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void init_header(void* base, uint32_t rings, uint64_t capacity, uint64_t bytes, ClockKind clock = preferred_clock()) {
  auto* h = new (base) RegionHeader{};
  h->magic = kRegionMagic;
  h->version = kRegionVersion;
  h->ring_count = rings;
  h->ring_capacity = capacity;
  h->total_bytes = bytes;
  h->clock = static_cast<uint32_t>(clock);
  h->next_id.store(1, std::memory_order_relaxed);  // 0 means "no id"
  h->next_graph_id.store(1, std::memory_order_relaxed);
  h->next_execution_id.store(1, std::memory_order_relaxed);
  auto* first = static_cast<char*>(base) + align_up(sizeof(RegionHeader), 64);
  for (uint32_t i = 0; i < rings; ++i) new (first + i * ring_stride(capacity)) RingHeader{};
}

bool valid_shape(uint32_t rings, uint64_t capacity) {
  return rings > 0 && rings <= 4096 && capacity >= 64 && (capacity & (capacity - 1)) == 0 && capacity <= (1ull << 26);
}

}  // namespace

uint64_t Region::bytes_for(uint32_t rings, uint64_t capacity) {
  return align_up(sizeof(RegionHeader), 64) + rings * ring_stride(capacity);
}

Region::Region(void* base, uint64_t bytes, int fd, uint32_t rings, uint64_t capacity, ClockKind clock)
    : base_(base), bytes_(bytes), fd_(fd), header_(static_cast<RegionHeader*>(base)), rings_(rings), capacity_(capacity), clock_(clock) {}

Region::~Region() {
  munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

RingHeader& Region::ring(uint32_t i) const {
  auto* first = static_cast<char*>(base_) + align_up(sizeof(RegionHeader), 64);
  return *reinterpret_cast<RingHeader*>(first + i * ring_stride(capacity_));
}

Slot* Region::slots(uint32_t i) const { return reinterpret_cast<Slot*>(&ring(i) + 1); }

std::unique_ptr<Region> Region::create_shared(uint32_t rings, uint64_t capacity, std::string* error, bool inheritable) {
  if (!valid_shape(rings, capacity)) {
    *error = "bad ring shape (rings 1..4096, capacity a power of two 64..2^26)";
    return nullptr;
  }
  uint64_t bytes = bytes_for(rings, capacity);
  // Without MFD_CLOEXEC the program tc-profile starts inherits it.
  int fd = memfd_create("tc-profile-rings", MFD_ALLOW_SEALING | (inheritable ? 0 : MFD_CLOEXEC));
  if (fd < 0) {
    *error = errno_text("memfd_create");
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    *error = errno_text("ftruncate of the ring memory");
    close(fd);
    return nullptr;
  }
  // A program that truncated the memfd made every mapping of the lost pages
  // raise SIGBUS in the collector (seen: tc-profile killed by SIGBUS after the
  // child's ftruncate(TC_PROFILE_FD, 0)). Sealed, the size can never change;
  // F_SEAL_SEAL keeps a child from adding a write seal that would stop the
  // next process from mapping it.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    *error = errno_text("sealing the ring memory");
    close(fd);
    return nullptr;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = errno_text("mmap of the ring memory");
    close(fd);
    return nullptr;
  }
  init_header(base, rings, capacity, bytes);
  return std::unique_ptr<Region>(new Region(base, bytes, fd, rings, capacity, static_cast<ClockKind>(static_cast<RegionHeader*>(base)->clock)));
}

std::unique_ptr<Region> Region::create_private(uint32_t rings, uint64_t capacity, std::string* error) {
  return create_private(rings, capacity, error, preferred_clock());
}

std::unique_ptr<Region> Region::create_private(uint32_t rings, uint64_t capacity, std::string* error, ClockKind clock) {
  if (!valid_shape(rings, capacity)) {
    *error = "bad ring shape (rings 1..4096, capacity a power of two 64..2^26)";
    return nullptr;
  }
  uint64_t bytes = bytes_for(rings, capacity);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    *error = errno_text("mmap of the ring memory");
    return nullptr;
  }
  init_header(base, rings, capacity, bytes, clock);
  return std::unique_ptr<Region>(new Region(base, bytes, -1, rings, capacity, static_cast<ClockKind>(static_cast<RegionHeader*>(base)->clock)));
}

std::unique_ptr<Region> Region::attach(int fd, std::string* error) {
  RegionHeader probe{};
  if (pread(fd, &probe, sizeof(probe), 0) != static_cast<ssize_t>(sizeof(probe))) {
    *error = errno_text("reading the ring memory header");
    return nullptr;
  }
  if (probe.magic != kRegionMagic || probe.version != kRegionVersion) {
    *error = "TC_PROFILE_FD does not name tc ring memory of this version (was tc-profile from another tc build?)";
    return nullptr;
  }
  struct stat st {};
  if (!valid_shape(probe.ring_count, probe.ring_capacity) || probe.total_bytes != bytes_for(probe.ring_count, probe.ring_capacity) ||
      probe.clock > static_cast<uint32_t>(ClockKind::kTsc) || fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < probe.total_bytes) {
    *error = "ring memory header is inconsistent";
    return nullptr;
  }
  void* base = mmap(nullptr, probe.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = errno_text("mmap of the ring memory");
    return nullptr;
  }
  // The descriptor stays open (not owned): children of the program inherit it too.
  return std::unique_ptr<Region>(
      new Region(base, probe.total_bytes, -1, probe.ring_count, probe.ring_capacity, static_cast<ClockKind>(probe.clock)));
}

ClockKind preferred_clock() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u) {
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if (d & (1u << 8)) return ClockKind::kTsc;  // invariant TSC: constant rate, runs in all states
  }
#endif
  return ClockKind::kMonotonic;
}

uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

uint64_t read_clock(ClockKind kind) {
#if defined(__x86_64__)
  if (kind == ClockKind::kTsc) return __rdtsc();
#endif
  return monotonic_ns();
}

}  // namespace tc::trace
