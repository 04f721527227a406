// CUPTI activity translation (profiler/capture/cupti/activity.h) on
// buffers of real CUPTI activity structs from cupti.h, walked by libcupti's
// own cuptiActivityGetNextRecord (it needs no GPU).
#include <gtest/gtest.h>

#include <cupti.h>

#include <cstring>
#include <vector>

#include "activity.h"
#include "cupti_records.h"

namespace {

namespace cp = tc::capture::cupti;

using tc::test::cupti::Buffer;
using tc::test::cupti::external;
using tc::test::cupti::kernel;

cp::NextRecordFn next() {
  std::string why;
  cp::NextRecordFn f = cp::load_next_record(&why);
  if (!f) ADD_FAILURE() << why;
  return f;
}

TEST(CuptiActivity, KernelNames) {
  int64_t g = -1, k = -1;
  EXPECT_TRUE(cp::parse_kernel_name("tc_g12_k3", &g, &k));
  EXPECT_EQ(g, 12);
  EXPECT_EQ(k, 3);
  EXPECT_TRUE(cp::parse_kernel_name("tc_g7_k0_alpha", &g, &k));
  EXPECT_EQ(g, 7);
  EXPECT_EQ(k, 0);
  for (const char* bad : {"", "tc_g", "tc_g1", "tc_g1_k", "tc_gx_k1", "tc_g1_k2x", "ampere_sgemm_128x64_nn",
                          "tc_g99999999999999999999_k1"})
    EXPECT_FALSE(cp::parse_kernel_name(bad, &g, &k)) << bad;
  EXPECT_FALSE(cp::parse_kernel_name(nullptr, &g, &k));
}

// Every kernel is a row; tc's names give graph and kernel, the external
// correlation of tc's kind the execution; cuBLAS's kernels keep their names.
TEST(CuptiActivity, KernelsJoinTheirExecution) {
  cp::NextRecordFn f = next();
  if (!f) return;
  Buffer b;
  b.add(external(10, 501));
  CUpti_ActivityKernel10 k0 = kernel("tc_g4_k0", 10, 1000, 1800);
  k0.gridX = 8;
  k0.gridY = 2;
  k0.gridZ = 1;
  k0.blockX = 256;
  k0.blockY = k0.blockZ = 1;
  k0.deviceId = 1;
  k0.streamId = 7;
  b.add(k0);
  b.add(kernel("tc_g4_k2_alpha", 10, 1900, 1950));
  b.add(kernel("sm90_xmma_gemm_f32f32_tn", 10, 2000, 3000));
  b.add(external(11, 502, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0));  // PyTorch profiler's kind, not tc's
  b.add(kernel("tc_g4_k1", 11, 3100, 3200));
  b.add(external(12, 503));
  b.add(kernel("tc_g5_k3", 12, 4000, 3990));  // an end before the start: no negative duration
  cp::Translator t(f);
  t.buffer(b.bytes.data(), b.used);
  const auto& r = t.rows();
  ASSERT_EQ(r.size(), 5u);
  for (const cp::Row& row : r) EXPECT_STREQ(row.kind, "kernel");
  EXPECT_STREQ(r[0].name, "tc_g4_k0");
  EXPECT_EQ(r[0].execution_id, 501);
  EXPECT_EQ(r[0].graph_id, 4);
  EXPECT_EQ(r[0].kernel, 0);
  EXPECT_EQ(r[0].ts, 1000);
  EXPECT_EQ(r[0].dur, 800);
  EXPECT_EQ(r[0].blocks, 16);
  EXPECT_EQ(r[0].threads, 256);
  EXPECT_EQ(r[0].device, 1);
  EXPECT_EQ(r[0].stream, 7);
  EXPECT_EQ(r[0].correlation, 10);
  EXPECT_EQ(r[1].kernel, 2);
  EXPECT_EQ(r[1].execution_id, 501);  // the same launch's correlation serves every kernel of it
  EXPECT_STREQ(r[2].name, "sm90_xmma_gemm_f32f32_tn");
  EXPECT_EQ(r[2].graph_id, -1);
  EXPECT_EQ(r[2].kernel, -1);
  EXPECT_EQ(r[2].execution_id, 501);  // cuBLAS inside tc's execution
  EXPECT_EQ(r[3].graph_id, 4);
  EXPECT_EQ(r[3].execution_id, -1);
  EXPECT_EQ(r[4].execution_id, 503);
  EXPECT_EQ(r[4].dur, 0);
  EXPECT_EQ(t.counts().kernels, 5);
  EXPECT_EQ(t.counts().foreign_kernels, 1);
  EXPECT_EQ(t.counts().untagged_kernels, 1);
  // The next buffer's rows replace these.
  Buffer c;
  c.add(kernel("tc_g4_k1", 10, 5000, 5100));
  t.buffer(c.bytes.data(), c.used);
  ASSERT_EQ(t.rows().size(), 1u);
  EXPECT_EQ(t.rows()[0].execution_id, 501);  // correlations outlive their buffer
  EXPECT_EQ(t.counts().buffers, 2);
}

TEST(CuptiActivity, MemcpyAndMemsetCarryBytesAndExecution) {
  cp::NextRecordFn f = next();
  if (!f) return;
  Buffer b;
  b.add(external(20, 900));
  CUpti_ActivityMemcpy6 h2d{};
  h2d.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  h2d.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  h2d.bytes = 4096;
  h2d.start = 10;
  h2d.end = 30;
  h2d.correlationId = 20;
  b.add(h2d);
  CUpti_ActivityMemcpy6 d2h = h2d;
  d2h.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  d2h.bytes = 4;
  d2h.correlationId = 21;  // no correlation: execution -1
  b.add(d2h);
  CUpti_ActivityMemset4 ms{};
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  ms.bytes = 256;
  ms.start = 40;
  ms.end = 45;
  ms.correlationId = 20;
  b.add(ms);
  CUpti_ActivityMemcpy6 other = h2d;
  other.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  b.add(other);
  cp::Translator t(f);
  t.buffer(b.bytes.data(), b.used);
  t.add_dropped(7);
  const auto& r = t.rows();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_STREQ(r[0].kind, "memcpy_htod");
  EXPECT_EQ(r[0].name, nullptr);
  EXPECT_EQ(r[0].bytes, 4096);
  EXPECT_EQ(r[0].dur, 20);
  EXPECT_EQ(r[0].execution_id, 900);
  EXPECT_EQ(r[0].blocks, 0);
  EXPECT_STREQ(r[1].kind, "memcpy_dtoh");
  EXPECT_EQ(r[1].execution_id, -1);
  EXPECT_STREQ(r[2].kind, "memset");
  EXPECT_EQ(r[2].bytes, 256);
  EXPECT_EQ(r[2].execution_id, 900);
  EXPECT_STREQ(r[3].kind, "memcpy_dtod");
  EXPECT_EQ(t.counts().transfers, 4);
  EXPECT_EQ(t.counts().kernels, 0);
  EXPECT_EQ(t.counts().dropped, 7);
}

// A kernel CUPTI has no times for (start = end = 0) is no row at tick 0: it
// is counted as unreadable; a whole buffer walked to its end counts nothing.
TEST(CuptiActivity, UntimedRecordsAreCountedNotStored) {
  cp::NextRecordFn f = next();
  if (!f) return;
  Buffer b;
  b.add(kernel("tc_g1_k0", 1, 0, 0));
  b.add(kernel("tc_g1_k1", 1, 100, 200));
  cp::Translator t(f);
  t.buffer(b.bytes.data(), b.used);
  ASSERT_EQ(t.rows().size(), 1u);
  EXPECT_EQ(t.rows()[0].kernel, 1);
  EXPECT_EQ(t.counts().unreadable, 1);
}

// Kinds not translated are counted; an empty buffer is no error.
TEST(CuptiActivity, OtherKindsAreCounted) {
  cp::NextRecordFn f = next();
  if (!f) return;
  Buffer b;
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  b.add(m);
  cp::Translator t(f);
  t.buffer(b.bytes.data(), b.used);
  t.buffer(b.bytes.data(), 0);
  EXPECT_EQ(t.counts().other_records, 1);
  EXPECT_EQ(t.counts().kernels + t.counts().transfers, 0);
}

}  // namespace
