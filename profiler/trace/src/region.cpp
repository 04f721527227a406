#include "tc/trace/region.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <new>
#include <string_view>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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

// 128 random bits: getrandom, else /dev/urandom (a kernel before 3.17).
bool random_key(uint64_t key[2]) {
  if (getrandom(key, 2 * sizeof(uint64_t), 0) == static_cast<ssize_t>(2 * sizeof(uint64_t))) return true;
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::read(fd, key, 2 * sizeof(uint64_t)) == static_cast<ssize_t>(2 * sizeof(uint64_t));
  ::close(fd);
  return ok && (key[0] | key[1]) != 0;
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
  uint64_t key[2] = {0, 0};
  if (!random_key(key)) {
    *error = errno_text("getrandom (and /dev/urandom) for the ring memory's key");
    munmap(base, bytes);
    close(fd);
    return nullptr;
  }
  std::memcpy(static_cast<RegionHeader*>(base)->key, key, sizeof key);
  auto region = std::unique_ptr<Region>(new Region(base, bytes, fd, rings, capacity, static_cast<ClockKind>(static_cast<RegionHeader*>(base)->clock)));
  std::memcpy(region->key_, key, sizeof key);
  return region;
}

std::string Region::key_text() const {
  if (key_[0] == 0 && key_[1] == 0) return "";
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(key_[0]), static_cast<unsigned long long>(key_[1]));
  return text;
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

namespace {

// 32 hex digits into two words; false when they are not.
bool parse_key(const char* text, uint64_t key[2]) {
  if (std::strlen(text) != 32 || std::strspn(text, "0123456789abcdef") != 32) return false;
  for (int i = 0; i < 2; ++i) {
    char word[17];
    std::memcpy(word, text + 16 * i, 16);
    word[16] = '\0';
    key[i] = std::strtoull(word, nullptr, 16);
  }
  return true;
}

const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a file";
}

// Why `fd` is not the run's ring memory, or "" when it is: a memfd of this
// user, sealed as create_shared() seals it (a planted file or another
// program's memfd is not), whose header holds `key` when one is given. An fd
// number a launcher closed or reused (a pipe: "Illegal seek") is refused here.
std::string not_the_runs(int fd, const uint64_t* key) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return std::string("is not open (") + std::strerror(errno) + ")";
  if (!S_ISREG(st.st_mode)) return std::string("names ") + file_kind(st.st_mode) + ", not the ring memory";
  if (st.st_uid != geteuid()) return "belongs to another user";
  constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals) return "names a file that is not tc-profile's sealed ring memory";
  RegionHeader probe{};
  if (pread(fd, &probe, sizeof probe, 0) != static_cast<ssize_t>(sizeof probe) || probe.magic != kRegionMagic || probe.version != kRegionVersion)
    return "names memory that is not tc ring memory of this version";
  if (key != nullptr && (probe.key[0] != key[0] || probe.key[1] != key[1])) return "names the ring memory of another run (its key differs)";
  return "";
}

// One field of a report line: no tabs, newlines or control bytes, at most `max` bytes.
std::string report_field(std::string_view text, size_t max) {
  std::string out(text.substr(0, max));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::unique_ptr<Region> Region::attach_from_environment(std::string* error) {
  const char* fd_text = std::getenv("TC_PROFILE_FD");
  char* end = nullptr;
  const long fd = fd_text ? std::strtol(fd_text, &end, 10) : -1;
  if (fd_text == nullptr || end == fd_text || *end != '\0' || fd < 0 || fd > 1 << 30) {
    *error = "TC_PROFILE_FD is not a descriptor number";
    return nullptr;
  }
  const char* key_text = std::getenv("TC_PROFILE_KEY");
  uint64_t key[2] = {0, 0};
  const bool keyed = key_text != nullptr && *key_text != '\0';
  if (keyed && !parse_key(key_text, key)) {
    *error = "TC_PROFILE_KEY is not 32 hex digits";
    return nullptr;
  }
  std::string why = not_the_runs(static_cast<int>(fd), keyed ? key : nullptr);
  if (why.empty()) return attach(static_cast<int>(fd), error);  // inherited: not owned, children inherit it too
  std::string tried = "descriptor " + std::to_string(fd) + " " + why;
  const char* pid_text = std::getenv("TC_PROFILE_PID");
  char* pid_end = nullptr;
  const long pid = pid_text ? std::strtol(pid_text, &pid_end, 10) : 0;
  if (!keyed || pid_text == nullptr || pid_end == pid_text || *pid_end != '\0' || pid <= 0) {
    *error = tried + "; no TC_PROFILE_PID and TC_PROFILE_KEY to find the launcher's";
    return nullptr;
  }
  // The launcher's own descriptor. The kernel allows it only to a process
  // that may ptrace-read the launcher (its user, and the launcher dumpable);
  // the key then tells the run's memory from whatever else that number names.
  const std::string proc = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int own = ::open(proc.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (own < 0) {
    const int e = errno;
    *error = tried + "; " + proc + ": " + std::strerror(e) +
             (e == ENOENT ? " (the launcher has ended, or this process runs in another pid namespace)"
                          : e == EACCES || e == EPERM ? " (not allowed: another user's launcher, or one that is not dumpable)" : "");
    return nullptr;
  }
  why = not_the_runs(own, key);
  if (!why.empty()) {
    ::close(own);
    *error = tried + "; " + proc + " " + why;
    return nullptr;
  }
  std::unique_ptr<Region> region = attach(own, error);
  if (!region) {
    ::close(own);
    return nullptr;
  }
  region->fd_ = own;  // owned, close-on-exec: a child finds the launcher's the same way
  return region;
}

bool report_attach_failure(const std::string& why) {
  const char* path = std::getenv("TC_PROFILE_REPORT");
  if (path == nullptr || *path == '\0') return false;
  // Never created and never followed: only the file the launcher made.
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    ::close(fd);
    return false;
  }
  char command[512];
  ssize_t n = 0;
  if (int c = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC); c >= 0) {
    n = ::read(c, command, sizeof command);
    ::close(c);
  }
  std::string cmd(command, n > 0 ? static_cast<size_t>(n) : 0);
  for (char& ch : cmd)
    if (ch == '\0') ch = ' ';
  // One write of at most ~1 KiB with O_APPEND: lines of several processes never interleave.
  const std::string line = std::to_string(getpid()) + "\t" + report_field(why, 480) + "\t" + report_field(cmd, 400) + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return ok;
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
