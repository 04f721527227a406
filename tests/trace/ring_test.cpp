// The recording rings without a collector: this test plays the consumer and
// reads slots the way profiler/collect does.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <source_location>
#include <string>
#include <thread>
#include <vector>

#include "tc/trace/region.h"
#include "tc/trace/trace.h"

namespace tr = tc::trace;

namespace {

struct Read {
  tr::SlotKind kind;
  uint32_t loc;
  int64_t value, arg;
  uint64_t ts;
  std::string payload;
};

// Consumes every published slot of ring `r`, as the collector would.
std::vector<Read> consume(tr::Region& region, uint32_t r) {
  std::vector<Read> out;
  tr::RingHeader& h = region.ring(r);
  uint64_t mask = region.header().ring_capacity - 1;
  uint64_t from = h.read.load(), to = h.write.load(std::memory_order_acquire);
  const tr::Slot* slots = region.slots(r);
  for (uint64_t i = from; i < to;) {
    const tr::Slot& s = slots[i & mask];
    Read e{static_cast<tr::SlotKind>(s.kind), s.loc, s.value, s.arg, s.ts, {}};
    for (uint32_t k = 0; k < s.extra; ++k) e.payload.append(reinterpret_cast<const char*>(&slots[(i + 1 + k) & mask]), sizeof(tr::Slot));
    if (s.extra) e.payload.resize(static_cast<size_t>(s.arg));
    out.push_back(std::move(e));
    i += 1 + s.extra;
  }
  h.read.store(to, std::memory_order_release);
  return out;
}

class RingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tr::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }
  void TearDown() override { tr::detail::deactivate(); }
  // Regions stay mapped for the life of the process (threads may hold them).
  tr::Region& make(uint32_t rings, uint64_t capacity) {
    std::string err;
    auto r = tr::Region::create_private(rings, capacity, &err);
    EXPECT_TRUE(r) << err;
    tr::Region* raw = r.release();
    static auto* kept = new std::vector<tr::Region*>;  // never destroyed: the regions stay reachable for LeakSanitizer
    kept->push_back(raw);
    tr::detail::activate(raw);
    return *raw;
  }
};

TEST_F(RingTest, OffMeansNothingIsWritten) {
  tr::Region& region = make(2, 64);
  tr::detail::deactivate();
  TC_TRACE_INSTANT("ring.off", 1);
  EXPECT_EQ(region.ring(0).write.load(), 0u);
  EXPECT_EQ(region.ring(0).state.load(), static_cast<uint32_t>(tr::RingState::kFree));
}

TEST_F(RingTest, EventsArriveInOrderWithTheirSiteDefinedFirst) {
  tr::Region& region = make(2, 1024);
  std::thread([&] {
    for (int i = 0; i < 10; ++i) {
      TC_TRACE_RANGE_ARG("ring.range", i);
      TC_TRACE_COUNTER("ring.counter", i * 0.5);
    }
  }).join();
  std::vector<Read> got = consume(region, 0);
  // location defs (range site, counter site) come before their first use.
  ASSERT_GE(got.size(), 2u + 30u);
  uint32_t range_loc = 0, counter_loc = 0;
  int ranges = 0, counters = 0;
  uint64_t last_ts = 0;
  for (const Read& e : got) {
    if (e.kind == tr::SlotKind::kLocationDef) {
      std::string name = e.payload.substr(0, e.payload.find('\0'));
      (name == "ring.range" ? range_loc : counter_loc) = e.loc;
      EXPECT_NE(e.payload.find("ring_test.cpp"), std::string::npos);
      continue;
    }
    EXPECT_GE(e.ts, last_ts);
    last_ts = e.ts;
    if (e.kind == tr::SlotKind::kBegin) {
      EXPECT_EQ(e.loc, range_loc);
      EXPECT_EQ(e.arg, ranges);
    } else if (e.kind == tr::SlotKind::kEnd) {
      EXPECT_EQ(e.loc, range_loc);
      ++ranges;
    } else if (e.kind == tr::SlotKind::kCounter) {
      EXPECT_EQ(e.loc, counter_loc);
      double v;
      std::memcpy(&v, &e.value, sizeof v);
      EXPECT_EQ(v, counters * 0.5);
      ++counters;
    }
  }
  EXPECT_NE(range_loc, 0u);
  EXPECT_NE(counter_loc, 0u);
  EXPECT_EQ(ranges, 10);
  EXPECT_EQ(counters, 10);
  // The thread exited: its ring is retired, for the collector to free.
  EXPECT_EQ(region.ring(0).state.load(), static_cast<uint32_t>(tr::RingState::kRetired));
}

TEST_F(RingTest, StringsSurviveWrappingAroundTheRing) {
  tr::Region& region = make(1, 64);
  std::string long_name(700, 'x');  // 22 payload slots
  for (size_t i = 0; i < long_name.size(); ++i) long_name[i] = static_cast<char>('a' + i % 26);
  std::thread([&] {
    for (int round = 0; round < 20; ++round) {
      std::string text = long_name + std::to_string(round);
      uint32_t id = tr::intern(text);
      EXPECT_NE(id, 0u);
      std::vector<Read> got = consume(region, 0);  // the same thread consumes: no collector needed
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].kind, tr::SlotKind::kStringDef);
      EXPECT_EQ(got[0].loc, id);
      EXPECT_EQ(got[0].payload, text);
    }
    EXPECT_EQ(tr::intern(long_name + "0"), tr::intern(long_name + "0")) << "interning twice gives one id";
  }).join();
}

TEST_F(RingTest, AFullRingWaitsThenCountsWhatItDrops) {
  tr::Region& region = make(1, 64);
  uint64_t before = tr::dropped_events();
  std::thread([&] {
    for (int i = 0; i < 200; ++i) TC_TRACE_INSTANT("ring.full", i);  // nobody consumes
  }).join();
  // The ring is full: the site's definition and as many instants as fit.
  EXPECT_EQ(region.ring(0).write.load(), 64u);
  int kept = 0;
  for (const Read& e : consume(region, 0)) kept += e.kind == tr::SlotKind::kInstant;
  uint64_t dropped = region.ring(0).dropped.load();
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(kept + dropped, 200u) << "every event is either in the ring or counted as dropped";
  EXPECT_EQ(tr::dropped_events() - before, dropped);
}

TEST_F(RingTest, ThreadsBeyondTheRingsAreCountedAsDropped) {
  tr::Region& region = make(1, 64);
  std::thread([&] { TC_TRACE_INSTANT("ring.first", 1); }).join();  // takes the only ring, which stays retired
  std::thread([&] {
    for (int i = 0; i < 2; ++i) TC_TRACE_INSTANT("ring.second", i);
  }).join();
  // Both events, and the definition of their site, found no ring.
  EXPECT_EQ(region.header().dropped_no_ring.load(), 3u);
}

// A collector registered as running, played by a thread of this test: each
// pass bumps the heartbeat and, with `frees`, drains and frees retired rings.
class FakeCollector {
 public:
  FakeCollector(tr::Region& region, bool frees) : region_(region) {
    tr::RegionHeader& h = region.header();
    h.collector_pid.store(static_cast<uint32_t>(getpid()));
    h.collector_state.store(static_cast<uint32_t>(tr::CollectorState::kRunning));
    thread_ = std::thread([this, frees, &h] {
      while (!stop_.load()) {
        h.collector_heartbeat.fetch_add(1);
        for (uint32_t r = 0; frees && r < region_.ring_count(); ++r) {
          if (region_.ring(r).state.load() != static_cast<uint32_t>(tr::RingState::kRetired)) continue;
          consume(region_, r);
          region_.ring(r).state.store(static_cast<uint32_t>(tr::RingState::kFree));
          h.rings_freed.fetch_add(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  ~FakeCollector() {
    stop_ = true;
    thread_.join();
    region_.header().collector_state.store(static_cast<uint32_t>(tr::CollectorState::kStopped));
  }

 private:
  tr::Region& region_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(RingTest, AThreadWaitsForTheRingOfAThreadThatExitedWhileACollectorRuns) {
  // Short-lived threads used to drop their events ("no free ring") while the
  // rings of those that had exited waited for the collector's next pass.
  tr::Region& region = make(1, 64);
  FakeCollector collector(region, /*frees=*/true);
  for (int t = 0; t < 20; ++t) std::thread([] { TC_TRACE_INSTANT("ring.short", 1); }).join();
  EXPECT_EQ(region.header().dropped_no_ring.load(), 0u);
  EXPECT_EQ(region.ring(0).claims.load(), 20u) << "one ring, given back and taken again by each thread";
}

TEST_F(RingTest, AThreadGivesUpWaitingWhenTheCollectorsPassesFreeNoRing) {
  tr::Region& region = make(1, 64);
  std::thread([] { TC_TRACE_INSTANT("ring.first", 1); }).join();  // takes the only ring, which retires
  FakeCollector collector(region, /*frees=*/false);
  std::thread([] { TC_TRACE_INSTANT("ring.second", 1); }).join();  // waits a few passes, then drops
  EXPECT_GT(region.header().dropped_no_ring.load(), 0u);
}

TEST_F(RingTest, AThreadWithoutARingRetriesWhenOneIsFreed) {
  // Once refused, a thread never looked again: a long-lived worker started
  // while the rings were taken recorded nothing for the rest of the run.
  tr::Region& region = make(1, 64);
  std::thread([&] { TC_TRACE_INSTANT("ring.first", 1); }).join();  // takes the only ring, which retires
  std::atomic<int> phase{0};
  std::thread late([&] {
    TC_TRACE_INSTANT("ring.late", 1);  // no free ring: dropped
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    TC_TRACE_INSTANT("ring.late", 2);  // the ring was freed meanwhile
    phase = 3;
  });
  while (phase.load() != 1) std::this_thread::yield();
  EXPECT_GT(region.header().dropped_no_ring.load(), 0u);
  // What the collector does once the retired ring is drained.
  consume(region, 0);
  region.ring(0).state.store(static_cast<uint32_t>(tr::RingState::kFree));
  region.header().rings_freed.fetch_add(1);
  phase = 2;
  while (phase.load() != 3) std::this_thread::yield();
  late.join();
  bool seen = false;
  for (const Read& e : consume(region, 0)) seen = seen || (e.kind == tr::SlotKind::kInstant && e.arg == 2);
  EXPECT_TRUE(seen) << "the late thread's event after the ring was freed";
}

TEST_F(RingTest, NamesAreKeptWholeOrVisiblyCut) {
  // Cut silently before: interned strings at 4,096 bytes, a run-time
  // location's payload at 12,288 bytes (losing the NULs that end its fields),
  // and every name at its first NUL.
  tr::Region& region = make(1, 1 << 14);
  std::string long_text(10000, 'a');
  for (size_t i = 0; i < long_text.size(); ++i) long_text[i] = static_cast<char>('a' + i % 26);
  std::string huge(100000, 'h');
  huge.replace(65500, 3, "\xe2\x82\xac");  // a three-byte character where a cut could land
  std::string long_name(20000, 'n');
  std::thread([&] {
    std::vector<Read> got;
    tr::intern(long_text);
    got = consume(region, 0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].payload, long_text) << "kept whole";

    tr::intern(std::string("a\0b", 3));
    got = consume(region, 0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].payload, "a\\0b") << "a NUL travels as the two characters \\0";

    tr::intern(huge);
    got = consume(region, 0);
    ASSERT_EQ(got.size(), 1u);
    const std::string& cut = got[0].payload;
    EXPECT_LE(cut.size(), 65536u);
    const std::string mark = "\xe2\x80\xa6[cut at ";
    size_t at = cut.rfind(mark);
    ASSERT_NE(at, std::string::npos) << cut.substr(cut.size() - 60);
    EXPECT_EQ(cut.substr(at + mark.size()), std::to_string(at) + " of 100000 bytes]");
    EXPECT_EQ(cut.substr(0, at), huge.substr(0, at)) << "cut at a character boundary, nothing else changed";
    EXPECT_NE(static_cast<unsigned char>(huge[at]) & 0xc0, 0x80) << "not inside a UTF-8 sequence";

    tr::LocationId id = tr::location_id(long_name, std::source_location::current());
    EXPECT_NE(id.value, 0u);
    got = consume(region, 0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].kind, tr::SlotKind::kLocationDef);
    const std::string& p = got[0].payload;
    ASSERT_EQ(std::count(p.begin(), p.end(), '\0'), 3) << "name, file and function each end in a NUL";
    EXPECT_EQ(p.substr(0, p.find('\0')), long_name);
    EXPECT_NE(p.find("ring_test.cpp"), std::string::npos);
  }).join();
}

TEST_F(RingTest, ANameTooLargeForASmallRingIsCutVisiblyToFit) {
  tr::Region& region = make(1, 64);  // half a ring: 31 payload slots, 992 bytes
  std::thread([&] {
    tr::intern(std::string(4000, 's'));
    std::vector<Read> got = consume(region, 0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LE(got[0].payload.size(), 992u);
    EXPECT_NE(got[0].payload.find("of 4000 bytes]"), std::string::npos) << got[0].payload;
  }).join();
  EXPECT_EQ(region.ring(0).dropped.load(), 0u);
}

TEST(RegionTest, SharedMemoryCannotBeResized) {
  // A child's ftruncate(TC_PROFILE_FD, 0) made every access of the launcher
  // to the lost pages raise SIGBUS.
  std::string err;
  auto a = tr::Region::create_shared(2, 128, &err);
  ASSERT_TRUE(a) << err;
  EXPECT_NE(ftruncate(a->fd(), 0), 0);
  EXPECT_NE(ftruncate(a->fd(), 1 << 30), 0);
  EXPECT_EQ(a->ring(1).write.load(), 0u) << "still mapped";
}

TEST(RegionTest, AttachRejectsSomethingElse) {
  std::string err;
  int fd = memfd_create("not-rings", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  EXPECT_EQ(tr::Region::attach(fd, &err), nullptr);
  EXPECT_NE(err.find("tc-profile"), std::string::npos) << err;
  close(fd);
}

TEST(RegionTest, SharedRegionIsSeenThroughAnotherMapping) {
  std::string err;
  auto a = tr::Region::create_shared(2, 128, &err);
  ASSERT_TRUE(a) << err;
  auto b = tr::Region::attach(a->fd(), &err);
  ASSERT_TRUE(b) << err;
  a->ring(1).write.store(7);
  EXPECT_EQ(b->ring(1).write.load(), 7u);
  EXPECT_EQ(b->header().ring_capacity, 128u);
}

}  // namespace
