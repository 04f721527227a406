// libFuzzer target: the program can write anything into the ring memory it
// shares with the collector, so a mutated region must give a valid store
// (possibly marked incomplete, with the reason in `dropped`), never a crash,
// a hang or a sanitizer report.
//
// Input: a list of operations on a copy of a region recorded by real
// producers (strings, locations, ranges, instants, counters, records, a
// thread name, on two threads): a byte >= 0x80 runs a collector pass; any
// other byte n starts a patch of (n % 32) + 1 bytes at the next two bytes'
// offset (little-endian, modulo the region's size). Patches between passes
// make counters move, slots change under a ring already read, and so on.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tc/collect/collector.h"
#include "tc/store/reader.h"
#include "tc/store/writer.h"
#include "tc/trace/records.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"

namespace tr = tc::trace;

namespace {

constexpr uint32_t kRings = 4;
constexpr uint64_t kCapacity = 256;

struct Fixture {
  tr::Region* region = nullptr;
  std::vector<unsigned char> baseline;
  std::string path;
};

void record_baseline() {
  std::thread([] {
    tr::set_thread_name("fuzz-main");
    for (int i = 0; i < 20; ++i) {
      TC_TRACE_RANGE_ARG("fuzz.range", i);
      TC_TRACE_INSTANT("fuzz.instant", tr::intern("name-" + std::to_string(i % 3)).value);
      TC_TRACE_COUNTER("fuzz.counter", i * 0.25);
    }
    tr::instant_at(tr::location_id("fuzz.runtime", __FILE__, __LINE__, __func__), 7);
    // A record of each declared kind with its declared field count, and one short.
    for (uint16_t k = 0; k < 64; ++k) {
      const tr::RecordDecl* d = tr::record_decl(k);
      if (d == nullptr) continue;
      std::vector<int64_t> fields(d->fields.size(), 1);
      tr::record(static_cast<tr::RecordKind>(k), fields);
    }
    tr::record(static_cast<tr::RecordKind>(1), {1, 2});
  }).join();
  std::thread([] {
    TC_TRACE_RANGE("fuzz.outer");
    TC_TRACE_RANGE("fuzz.inner");  // left open: the thread "dies" inside after the snapshot
    TC_TRACE_INSTANT("fuzz.other", 3);
  }).join();
}

Fixture& fixture() {
  static Fixture* f = [] {
    auto* fx = new Fixture;
    std::string err;
    // CLOCK_MONOTONIC: a TSC region costs each Collector a 10 ms calibration.
    auto r = tr::Region::create_private(kRings, kCapacity, &err, tr::ClockKind::kMonotonic);
    if (!r) {
      std::fprintf(stderr, "fuzz_rings: %s\n", err.c_str());
      std::abort();
    }
    fx->region = r.release();
    tr::detail::activate(fx->region);
    if (tr::kCompiledIn) record_baseline();
    tr::detail::deactivate();
    const size_t bytes = tr::Region::bytes_for(kRings, kCapacity);
    fx->baseline.resize(bytes);
    std::memcpy(fx->baseline.data(), &fx->region->header(), bytes);
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    fx->path = std::string(dir) + "/tc-fuzz-rings-" + std::to_string(getpid()) + ".tcdb";
    return fx;
  }();
  return *f;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_rings: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& fx = fixture();
  unsigned char* base = reinterpret_cast<unsigned char*>(&fx.region->header());
  const size_t bytes = fx.baseline.size();
  std::memcpy(base, fx.baseline.data(), bytes);

  auto writer = tc::store::Writer::create(fx.path, {.overwrite = true});
  if (!writer.ok()) fail(writer.status().message());
  {
    tc::collect::Collector c(*fx.region, **writer, tc::collect::gather_run_info({"fuzz"}, "fuzz"));
    if (tc::Status s = c.begin(); !s.ok()) fail(s.message());
    size_t i = 0;
    int passes = 0;
    while (i < size) {
      uint8_t op = data[i++];
      if (op >= 0x80) {
        if (++passes <= 64) (void)c.drain();
        continue;
      }
      if (i + 2 > size) break;
      size_t at = (data[i] | size_t{data[i + 1]} << 8) % bytes;
      i += 2;
      size_t n = std::min<size_t>({size_t{op % 32u} + 1, size - i, bytes - at});
      std::memcpy(base + at, data + i, n);
      i += n;
    }
    tc::Status s = c.finish({.exit_code = 0, .exit_signal = std::nullopt, .complete = true});
    if (!s.ok()) fail("finish: " + s.message());
  }
  writer->reset();

  auto r = tc::store::Reader::open(fx.path);
  if (!r.ok()) fail("the store does not open: " + r.status().message());
  auto runs = r->scalar_i64("SELECT count(*) FROM run");
  if (!runs.ok() || *runs != 1) fail("not one run row");
  auto events = r->scalar_i64("SELECT event_count FROM run");
  auto rows = r->scalar_i64("SELECT (SELECT count(*) FROM ranges) + (SELECT count(*) FROM instants) + (SELECT count(*) FROM counters)");
  if (!events.ok() || !rows.ok() || *events != *rows) fail("run.event_count is not the events stored");
  auto dropped = r->scalar_i64("SELECT dropped_count FROM run");
  if (!dropped.ok() || *dropped < 0) fail("negative dropped_count");
  // The documented invariant: dropped_count is the sum of dropped.count
  // (saturating: with a count of 2^40 or more, only "huge" is checked).
  auto sum = r->scalar_i64("SELECT coalesce(sum(count), 0) FROM dropped WHERE count < 1099511627776");
  auto huge = r->scalar_i64("SELECT count(*) FROM dropped WHERE count >= 1099511627776");
  if (!sum.ok() || !huge.ok()) fail("the dropped table does not read");
  if (*huge == 0 && *dropped != *sum)
    fail("run.dropped_count " + std::to_string(*dropped) + " is not the sum of dropped.count " + std::to_string(*sum));
  if (*huge > 0 && *dropped < (int64_t{1} << 40)) fail("a huge dropped.count but a small run.dropped_count");
  auto complete = r->scalar_i64("SELECT complete FROM run");
  auto reasons = r->scalar_i64("SELECT count(*) FROM dropped");
  if (!complete.ok() || !reasons.ok() || (*complete == 1 && (*dropped != 0 || *reasons != 0))) fail("complete although something was dropped");
  return 0;
}
