// The collector against ring memory the program wrote over (tracker #12,
// item 2): each corruption below once crashed, hung or misled tc-profile. Now
// the collector survives, keeps every event read before the corruption,
// abandons the ring, records why in the dropped table, and marks the run
// incomplete. Each test records real events first, lets the collector read
// them, then corrupts the memory the way a wild write would.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "collect_test_util.h"

namespace {

using namespace tc::collect::testing;
namespace tr = tc::trace;

class CorruptRing : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tr::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
    region_ = &recording_region(2, 1024);
    auto w = tc::store::Writer::create(dir_.path("run.tcdb"));
    ASSERT_TRUE(w.ok()) << w.status().message();
    writer_ = std::move(*w);
    collector_ = std::make_unique<tc::collect::Collector>(*region_, *writer_, tc::collect::gather_run_info({"test"}, "test"));
    ASSERT_TRUE(collector_->begin().ok());
    // This thread's events go to ring 0, which stays active for the test.
    record(100);
    ASSERT_TRUE(collector_->drain().ok());
    ASSERT_EQ(region_->ring(0).read.load(), region_->ring(0).write.load()) << "the collector read the first 100 events";
  }
  void TearDown() override { tr::detail::deactivate(); }

  static void record(int n) {
    for (int i = 0; i < n; ++i) TC_TRACE_INSTANT("corrupt.instant", i);
  }
  tr::RingHeader& ring0() { return region_->ring(0); }

  // Finishes the run and opens the store.
  tc::store::Reader finish() {
    EXPECT_TRUE(collector_->drain().ok());
    tc::Status s = collector_->finish(exited());
    EXPECT_TRUE(s.ok()) << s.message();
    collector_.reset();
    writer_.reset();
    auto r = tc::store::Reader::open(dir_.path("run.tcdb"));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return std::move(r).value();
  }

  // The ring was abandoned with a reason matching `like`, the first 100
  // events are in the store, and the run says it is incomplete.
  void expect_abandoned(const tc::store::Reader& r, const std::string& like, int64_t kept = 100) {
    EXPECT_EQ(count(r, "SELECT count(*) FROM instants"), kept);
    EXPECT_EQ(count(r, "SELECT count(*) FROM dropped WHERE reason LIKE 'ring 0 abandoned: " + like + "%' AND count > 0"), 1)
        << "reasons: " << reasons(r);
    EXPECT_EQ(count(r, "SELECT complete FROM run"), 0);
    EXPECT_GT(count(r, "SELECT dropped_count FROM run"), 0);
    EXPECT_EQ(count(r, "SELECT event_count FROM run"), kept);
    EXPECT_EQ(ring0().state.load(), static_cast<uint32_t>(tr::RingState::kAbandoned));
  }
  static std::string reasons(const tc::store::Reader& r) {
    std::string out;
    for (auto q = r.query("SELECT count, reason FROM dropped"); q.next();) out += std::to_string(q.i64(0)) + " " + std::string(q.text(1)) + "; ";
    return out;
  }

  ScratchDir dir_;
  tr::Region* region_ = nullptr;
  std::unique_ptr<tc::store::Writer> writer_;
  std::unique_ptr<tc::collect::Collector> collector_;
};

TEST_F(CorruptRing, GeometryInTheHeaderIsNeverReadAgain) {
  // ring_count re-read on every pass indexed past the collector's own vector
  // (SIGSEGV, then a free() of a garbage pointer); a changed capacity moved
  // every ring header.
  tr::RegionHeader& h = region_->header();
  h.ring_count = 0xffffffffu;
  h.ring_capacity = uint64_t{1} << 40;
  h.total_bytes = 1;
  h.clock = 77;
  record(100);
  tc::store::Reader r = finish();
  EXPECT_EQ(count(r, "SELECT count(*) FROM instants"), 200);
  EXPECT_EQ(count(r, "SELECT complete FROM run"), 1);
  EXPECT_EQ(count(r, "SELECT count(*) FROM dropped"), 0) << reasons(r);
  EXPECT_EQ(count(r, "SELECT count(*) FROM run WHERE clock = 'monotonic'"), 1) << "the clock the region was made with";
}

TEST_F(CorruptRing, AWriteCounterFarAheadIsAbandonedNotLoopedOver) {
  // One pass once walked 2^40 slots, writing garbage rows until the store
  // reached 16.8 GB.
  ring0().write.fetch_add(uint64_t{1} << 40);
  expect_abandoned(finish(), "its write counter is % slots past the read position");
}

TEST_F(CorruptRing, AWriteCounterGoingBackwardsIsAbandoned) {
  ring0().write.store(5);
  expect_abandoned(finish(), "its write counter went backwards");
}

TEST_F(CorruptRing, AHugePayloadLengthIsAbandonedAndWhatCameBeforeIsKept) {
  // The length once sized a memcpy past the payload buffer.
  record(50);  // valid, published before the bad slot, read in the same pass
  append(*region_, 0, slot(tr::SlotKind::kStringDef, 999, 0, int64_t{1} << 40, 1), "x", 1);
  expect_abandoned(finish(), "payload length 1099511627776 does not match its 1 slots", 150);
}

TEST_F(CorruptRing, ALocationWithoutItsNulsIsAbandoned) {
  // Its three strings were found by strlen, past the end of the payload.
  std::string x(64, 'x');
  append(*region_, 0, slot(tr::SlotKind::kLocationDef, 999, 1, 64, 2), x, 2);
  expect_abandoned(finish(), "a location definition at position % lacks its three NUL-ended strings");
}

TEST_F(CorruptRing, AStringWithoutANulIsStoredByItsLength) {
  // Strings travel with their length: no NUL needed, and none read past it.
  std::string text(40, 'q');
  append(*region_, 0, slot(tr::SlotKind::kStringDef, 999, 0, 40, 2), text, 2);
  tc::store::Reader r = finish();
  auto q = r.query("SELECT value FROM strings WHERE id = 999");
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.text(0), text);
  EXPECT_EQ(count(r, "SELECT complete FROM run"), 1) << reasons(r);
}

TEST_F(CorruptRing, AnImpossibleSlotKindIsAbandoned) {
  record(10);
  append(*region_, 0, slot(static_cast<tr::SlotKind>(77), 1, 0, 0));
  expect_abandoned(finish(), "slot kind 77 at position % is not one tc writes there", 110);
}

TEST_F(CorruptRing, APayloadCountBeyondThePublishedSlotsIsAbandoned) {
  append(*region_, 0, slot(tr::SlotKind::kRecord, 1, 0, 32 * 500, 500));  // 500 payload slots, none published
  expect_abandoned(finish(), "a record''s 500 payload slots run past the 0 published after it");
}

TEST_F(CorruptRing, AnImpossibleRingStateIsAbandoned) {
  ring0().state.store(99);
  expect_abandoned(finish(), "its state reads 99");
}

TEST_F(CorruptRing, TheProducerOfAnAbandonedRingDropsInsteadOfWaiting) {
  // The collector is alive (this process), so a full ring would make the
  // producer wait for it for ever, were the ring not marked abandoned.
  ring0().write.fetch_add(uint64_t{1} << 40);
  ASSERT_TRUE(collector_->drain().ok());
  ASSERT_EQ(ring0().state.load(), static_cast<uint32_t>(tr::RingState::kAbandoned));
  uint64_t before = tr::dropped_events();
  record(5000);  // ring 0 holds 1024 slots
  EXPECT_GT(tr::dropped_events(), before);
  EXPECT_GT(ring0().dropped_by[static_cast<uint32_t>(tr::DropReason::kAbandoned)].load(), 0u);
  expect_abandoned(finish(), "its write counter");
}

TEST_F(CorruptRing, ScribbledDropCountersSaturateInsteadOfGoingNegative) {
  // Two counters near 2^64 once summed to -2 in run.dropped_count.
  ring0().dropped.store(UINT64_MAX - 1);
  ring0().dropped_by[1].store(UINT64_MAX - 1);
  region_->header().dropped_no_ring.store(UINT64_MAX - 5);
  tc::store::Reader r = finish();
  EXPECT_EQ(count(r, "SELECT dropped_count FROM run"), INT64_MAX);
  EXPECT_EQ(count(r, "SELECT count(*) FROM dropped WHERE count < 0"), 0) << reasons(r);
  EXPECT_EQ(count(r, "SELECT max(count) FROM dropped"), INT64_MAX);
  EXPECT_EQ(count(r, "SELECT complete FROM run"), 0);
}

TEST_F(CorruptRing, PerReasonDropCountsWithoutATotalStillMarkTheRunIncomplete) {
  // Found by fuzz_rings: the per-reason counters were written as dropped rows
  // but run.dropped_count summed only the ring's total (0 here), so the store
  // said complete = 1 with three reasons in `dropped`.
  ring0().dropped.store(0);
  ring0().dropped_by[static_cast<uint32_t>(tr::DropReason::kNoCollector)].store(7);
  ring0().dropped_by[static_cast<uint32_t>(tr::DropReason::kAbandoned)].store(5);
  tc::store::Reader r = finish();
  EXPECT_EQ(count(r, "SELECT dropped_count FROM run"), 12) << reasons(r);
  EXPECT_EQ(count(r, "SELECT sum(count) FROM dropped"), 12) << reasons(r);
  EXPECT_EQ(count(r, "SELECT complete FROM run"), 0);
}

TEST_F(CorruptRing, ATotalAboveItsReasonsIsStoredAsDroppedWithoutAReason) {
  ring0().dropped.store(9);
  ring0().dropped_by[static_cast<uint32_t>(tr::DropReason::kCollectorGone)].store(4);
  tc::store::Reader r = finish();
  EXPECT_EQ(count(r, "SELECT dropped_count FROM run"), 9) << reasons(r);
  EXPECT_EQ(count(r, "SELECT count FROM dropped WHERE reason LIKE 'ring full after%'"), 4) << reasons(r);
  EXPECT_EQ(count(r, "SELECT count FROM dropped WHERE reason LIKE '%without a reason'"), 5) << reasons(r);
  EXPECT_EQ(count(r, "SELECT complete FROM run"), 0);
}

}  // namespace
