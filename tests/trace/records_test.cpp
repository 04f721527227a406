// The typed record API (tc/trace/records.h), static strings and run-unique
// ids, read back from the ring the way the collector reads it.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tc/trace/records.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"

namespace tr = tc::trace;

namespace {

struct Read {
  tr::SlotKind kind;
  uint32_t loc;
  int64_t value, arg;
  std::string payload;
};

std::vector<Read> consume(tr::Region& region, uint32_t r) {
  std::vector<Read> out;
  tr::RingHeader& h = region.ring(r);
  uint64_t mask = region.header().ring_capacity - 1;
  uint64_t from = h.read.load(), to = h.write.load(std::memory_order_acquire);
  const tr::Slot* slots = region.slots(r);
  for (uint64_t i = from; i < to;) {
    const tr::Slot& s = slots[i & mask];
    Read e{static_cast<tr::SlotKind>(s.kind), s.loc, s.value, s.arg, {}};
    for (uint32_t k = 0; k < s.extra; ++k) e.payload.append(reinterpret_cast<const char*>(&slots[(i + 1 + k) & mask]), sizeof(tr::Slot));
    if (s.extra) e.payload.resize(static_cast<size_t>(s.arg));
    out.push_back(std::move(e));
    i += 1 + s.extra;
  }
  h.read.store(to, std::memory_order_release);
  return out;
}

std::vector<int64_t> fields_of(const Read& r) {
  std::vector<int64_t> f(r.payload.size() / sizeof(int64_t));
  std::memcpy(f.data(), r.payload.data(), f.size() * sizeof(int64_t));
  return f;
}

class Records : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tr::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }
  void TearDown() override { tr::detail::deactivate(); }
  // Regions stay mapped for the life of the process (threads may hold them).
  tr::Region& make() {
    std::string err;
    auto r = tr::Region::create_private(2, 1024, &err);
    EXPECT_TRUE(r) << err;
    tr::Region* raw = r.release();
    static auto* kept = new std::vector<tr::Region*>;  // never destroyed: the regions stay reachable for LeakSanitizer
    kept->push_back(raw);
    tr::detail::activate(raw);
    return *raw;
  }
};

TEST(RecordDeclarations, EveryKindHasItsTableAndWellFormedFields) {
  std::set<std::string_view> tables;
  for (const tr::RecordDecl& r : tr::kRecords) {
    SCOPED_TRACE(r.table);
    EXPECT_EQ(tr::record_decl(static_cast<uint16_t>(r.kind)), &r);
    EXPECT_TRUE(tables.insert(r.table).second) << "two kinds share a table";
    EXPECT_FALSE(r.doc.empty());
    // Every table has a thread column but run_env, whose rows are the run's.
    EXPECT_EQ(r.utid_doc.empty(), r.table == "run_env");
    std::set<std::string_view> names = {"id", "utid"};
    for (const tr::FieldDecl& f : r.fields) {
      EXPECT_TRUE(names.insert(f.name).second) << f.name << " declared twice (or shadows id/utid)";
      EXPECT_FALSE(f.doc.empty()) << f.name;
      EXPECT_EQ(f.doc.find('\n'), std::string_view::npos) << f.name;
    }
  }
  EXPECT_EQ(tr::record_decl(0), nullptr);
  EXPECT_EQ(tr::record_decl(static_cast<uint16_t>(tr::RecordKind::kCount)), nullptr);
  // The struct and its declaration are one list: members in field order.
  EXPECT_EQ(tr::record_decl(static_cast<uint16_t>(tr::rec::Execution::kKind))->fields.back().name, "dynamic_size");
}

TEST_F(Records, EmitWritesOneRecordWithTheFieldsInDeclarationOrder) {
  tr::Region& region = make();
  std::thread([&] {
    tr::StringId pass = tr::intern("cse");
    tr::emit(tr::rec::CompilePass{.graph_id = 7, .ts = tr::Ticks{1000}, .dur = tr::Ticks{250}, .pass = pass, .nodes_after = 42});
    tr::emit(tr::rec::OutOfMemory{.ts = tr::Ticks{5},
                                  .step = 3,
                                  .requested_bytes = 100,
                                  .live_bytes = 200,
                                  .capacity_bytes = 250,
                                  .parameter_bytes = 1,
                                  .gradient_bytes = 2,
                                  .optimizer_state_bytes = 3,
                                  .activation_bytes = 4,
                                  .input_bytes = 5,
                                  .other_bytes = 6,
                                  .batch_size = 0});
    std::vector<Read> got = consume(region, 0);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].kind, tr::SlotKind::kStringDef);
    EXPECT_EQ(got[1].kind, tr::SlotKind::kRecord);
    EXPECT_EQ(got[1].loc, static_cast<uint32_t>(tr::RecordKind::kCompilePass));
    EXPECT_EQ(got[1].value, 5) << "the field count";
    EXPECT_EQ(fields_of(got[1]), (std::vector<int64_t>{7, 1000, 250, pass.value, 42}));
    EXPECT_EQ(got[2].loc, static_cast<uint32_t>(tr::RecordKind::kOutOfMemory));
    EXPECT_EQ(fields_of(got[2]), (std::vector<int64_t>{5, 3, 100, 200, 250, 1, 2, 3, 4, 5, 6, 0}));
  }).join();
}

TEST_F(Records, StaticStringsAreInternedOncePerSession) {
  static constinit tr::StaticString eager{"eager"};
  tr::Region& first = make();
  std::thread([&] {
    tr::StringId a = tr::intern(eager), b = tr::intern(eager);
    EXPECT_NE(a.value, 0u);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, tr::intern("eager")) << "one table of strings";
    std::vector<Read> got = consume(first, 0);
    ASSERT_EQ(got.size(), 1u) << "defined once";
    EXPECT_EQ(got[0].kind, tr::SlotKind::kStringDef);
    EXPECT_EQ(got[0].payload, "eager");
  }).join();
  // A new session has new ids: the cached one is forgotten and defined again in the new region.
  tr::Region& second = make();
  second.header().next_id.store(500);
  std::thread([&] {
    tr::StringId c = tr::intern(eager);
    EXPECT_EQ(c.value, 500u);
    std::vector<Read> got = consume(second, 0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].loc, 500u);
    EXPECT_EQ(got[0].payload, "eager");
  }).join();
}

TEST_F(Records, GraphAndExecutionIdsComeFromTheRegionWhileRecording) {
  tr::Region& region = make();
  // Another process of the run has taken graphs 1..99 and executions 1..9.
  region.header().next_graph_id.store(100);
  region.header().next_execution_id.store(10);
  EXPECT_EQ(tr::new_graph_id(), 100);
  EXPECT_EQ(tr::new_graph_id(), 101);
  EXPECT_EQ(tr::new_execution_id(), 10);
  EXPECT_EQ(region.header().next_graph_id.load(), 102);
  // A scribbled counter is not trusted: ids stay >= 1.
  region.header().next_graph_id.store(-5);
  EXPECT_GE(tr::new_graph_id(), 1);
  // Not recording: a counter of this process.
  tr::detail::deactivate();
  int64_t a = tr::new_graph_id(), b = tr::new_graph_id();
  EXPECT_GE(a, 1);
  EXPECT_GT(b, a);
  EXPECT_EQ(region.header().next_graph_id.load(), -4) << "the region's counter is untouched while off";
}

TEST(RecordIds, WithoutRecordingTheyCountInThisProcess) {  // also with TC_TRACE=OFF
  tr::detail::deactivate();
  int64_t g = tr::new_graph_id(), e = tr::new_execution_id();
  EXPECT_GE(g, 1);
  EXPECT_GE(e, 1);
  EXPECT_EQ(tr::new_graph_id(), g + 1);
  EXPECT_EQ(tr::new_execution_id(), e + 1);
}

TEST(RecordIds, AFreshRegionStartsAtOne) {
  std::string err;
  auto r = tr::Region::create_private(1, 64, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->header().next_graph_id.load(), 1);
  EXPECT_EQ(r->header().next_execution_id.load(), 1);
  EXPECT_EQ(r->header().version, tr::kRegionVersion);
}

}  // namespace
