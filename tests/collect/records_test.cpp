// The collector stores records by their declarations (tc/trace/records.h):
// field types become column values, and a record whose field count is not its
// declaration's is dropped and counted, never stored with shifted columns.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
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

class CollectRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tr::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
    std::string tmpl = (std::filesystem::temp_directory_path() / "tc_collect_test.XXXXXX").string();
    ASSERT_TRUE(::mkdtemp(tmpl.data()));
    dir_ = tmpl;
    std::string err;
    auto r = tr::Region::create_private(4, 4096, &err);
    ASSERT_TRUE(r) << err;
    region_ = r.release();  // stays mapped: the recording thread's ring points into it
    static auto* kept = new std::vector<tr::Region*>;  // never destroyed: reachable for LeakSanitizer
    kept->push_back(region_);
    tr::detail::activate(region_);
  }
  void TearDown() override {
    tr::detail::deactivate();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  // Collects what was recorded into a store and opens it.
  tc::store::Reader collect() {
    const std::string path = dir_ + "/run.tcdb";
    auto w = tc::store::Writer::create(path);
    EXPECT_TRUE(w.ok()) << w.status().message();
    {
      tc::collect::Collector c(*region_, **w, tc::collect::gather_run_info({"test"}, "in-process"));
      EXPECT_TRUE(c.begin().ok());
      tc::Status s = c.finish({.exit_code = 0, .exit_signal = std::nullopt, .complete = true});
      EXPECT_TRUE(s.ok()) << s.message();
    }
    auto r = tc::store::Reader::open(path);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return std::move(r).value();
  }
  std::string dir_;
  tr::Region* region_ = nullptr;
};

TEST_F(CollectRecords, AWrongFieldCountIsDroppedAndCountedNotStoredShifted) {
  std::thread([] {
    tr::emit(tr::rec::Execution{.ts = tr::Ticks{tr::now()},
                                .dur = tr::Ticks{10},
                                .graph_id = 3,
                                .step = 0,
                                .trigger = tr::intern("mark_step"),
                                .nodes = 10,
                                .execution_id = 77,
                                .dynamic_size = 0});
    // A compilation short of fields (as a producer built against other declarations
    // would send it), twice, and an execution with one field too many.
    tr::record(tr::RecordKind::kCompilation, {int64_t(tr::now()), 5, 9});
    tr::record(tr::RecordKind::kCompilation, {int64_t(tr::now()), 5, 9});
    tr::record(tr::RecordKind::kExecution, {int64_t(tr::now()), 10, 4, 0, 0, 10, 78, 0, 99});
  }).join();
  tc::store::Reader r = collect();
  EXPECT_EQ(*r.scalar_i64("SELECT count(*) FROM compilations"), 0) << "a short record is not padded with NULL";
  EXPECT_EQ(*r.scalar_i64("SELECT count(*) FROM executions"), 1);
  EXPECT_EQ(*r.scalar_i64("SELECT execution_id FROM executions WHERE graph_id = 3"), 77);
  auto q = r.query("SELECT count, reason, utid IS NOT NULL, upid IS NOT NULL FROM dropped WHERE reason LIKE 'record of kind%' ORDER BY reason");
  ASSERT_TRUE(q.next()) << q.status().message();
  EXPECT_EQ(q.text(1), "record of kind compilations with 3 fields, expected 18");
  EXPECT_EQ(q.i64(0), 2);
  EXPECT_EQ(q.i64(2) + q.i64(3), 2) << "it names the thread and process that sent it";
  ASSERT_TRUE(q.next());
  EXPECT_EQ(q.text(1), "record of kind executions with 9 fields, expected 8");
  EXPECT_EQ(q.i64(0), 1);
  EXPECT_FALSE(q.next());
  EXPECT_EQ(*r.scalar_i64("SELECT complete FROM run"), 0) << "a dropped record makes the run incomplete";
  EXPECT_EQ(*r.scalar_i64("SELECT dropped_count FROM run"), 3);
}

TEST_F(CollectRecords, FieldTypesBecomeTheirColumns) {
  std::thread([] {
    uint64_t t0 = tr::now();
    tr::emit(tr::rec::OutOfMemory{.ts = tr::Ticks{t0},
                                  .step = 2,
                                  .requested_bytes = 100,
                                  .live_bytes = 200,
                                  .capacity_bytes = 250,
                                  .parameter_bytes = 1,
                                  .gradient_bytes = 2,
                                  .optimizer_state_bytes = 3,
                                  .activation_bytes = 4,
                                  .input_bytes = 5,
                                  .other_bytes = 185,
                                  .batch_size = 0});
    tr::emit(tr::rec::MemoryPlan{.graph_id = 4,
                                 .peak_bytes = 10,
                                 .parameter_bytes = 1,
                                 .gradient_bytes = 1,
                                 .optimizer_state_bytes = 1,
                                 .activation_bytes = 1,
                                 .input_bytes = 1,
                                 .workspace_bytes = 1,
                                 .batch_bytes = 4,
                                 .batch_size = 32,
                                 .capacity_bytes = 100});
    tr::emit(tr::rec::Log{.ts = tr::Ticks{tr::now()}, .level = tr::intern("debug"), .message = tr::StringId{}});
  }).join();
  tc::store::Reader r = collect();
  EXPECT_EQ(*r.scalar_i64("SELECT count(*) FROM out_of_memory WHERE batch_size IS NULL AND step = 2 AND other_bytes = 185"), 1)
      << "an IntOrNull 0 is NULL";
  EXPECT_EQ(*r.scalar_i64("SELECT batch_size FROM memory_plans WHERE graph_id = 4"), 32);
  EXPECT_EQ(*r.scalar_i64("SELECT count(*) FROM logs WHERE level = 'debug' AND message IS NULL"), 1) << "StringId{} is NULL";
  EXPECT_GT(*r.scalar_i64("SELECT ts FROM out_of_memory"), 0) << "ticks converted to CLOCK_MONOTONIC ns";
  EXPECT_EQ(*r.scalar_i64("SELECT complete FROM run"), 1);
  EXPECT_EQ(*r.scalar_i64("SELECT count(*) FROM dropped"), 0);
}

}  // namespace
