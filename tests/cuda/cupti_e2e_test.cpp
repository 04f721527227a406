// CUPTI capture end to end, without a GPU (issue #18): what can run here runs.
// - tc-profile hands the CUDA driver tc's injection library
//   (CUDA_INJECTION64_PATH = libtc_cupti.so), or leaves a user's alone;
// - InitializeInjection, called as the driver calls it, records in one
//   gpu_capture row why CUPTI could not start (no driver here) and says so in
//   one line; the program runs on;
// - buffers of real CUPTI activity structs go through the library's
//   translation and emission into the rings and reach gpu_activity with
//   their names, bytes, execution, graph and kernel, on the store's clock.
// What needs a GPU (the driver loading the library, CUPTI's own buffers) is
// scripts/gpu-check.sh's.
#include <gtest/gtest.h>

#include <string>

#include "support/json.h"
#include "support/process.h"
#include "tc/store/reader.h"
#include "tc/trace/trace.h"

using tc::test::bin;
using tc::test::Exit;
using tc::test::TempDir;

namespace {

std::string lib(const std::string& name) { return std::string(TC_BINARY_DIR) + "/lib/" + name; }

std::string text(const tc::store::Reader& r, const std::string& sql) {
  auto q = r.query(sql);
  return q.next() && !q.is_null(0) ? std::string(q.text(0)) : "<null>";
}
int64_t scalar(const tc::store::Reader& r, const std::string& sql) {
  auto v = r.scalar_i64(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
  return v.ok() ? *v : -1;
}

class CuptiCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tc::trace::kCompiledIn) GTEST_SKIP() << "recording is compiled out (TC_TRACE=OFF)";
  }
  TempDir dir;
  std::string out = dir.file("run.tcdb");
};

TEST_F(CuptiCapture, TcProfileHandsTheDriverItsInjectionLibrary) {
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-cupti"), "init"});
  ASSERT_EQ(e.code, 0) << e.err;
  // The path the driver would load, and the library's answer.
  EXPECT_EQ(e.out.substr(0, e.out.find('\n')), std::filesystem::canonical(lib("libtc_cupti.so")).string());
  EXPECT_NE(e.out.find("InitializeInjection 1\n"), std::string::npos) << e.out;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(text(*r, "SELECT cupti FROM run"), "tc");
  EXPECT_EQ(scalar(*r, "SELECT complete FROM run"), 1);
  ASSERT_EQ(scalar(*r, "SELECT count(*) FROM gpu_capture"), 1);
  // No driver (this machine, CI): CUPTI cannot enable activity; the row
  // names the call that failed and the program was told in one line. With a
  // driver it may record (a GPU) or not (no device): either is one row.
  const std::string status = text(*r, "SELECT status FROM gpu_capture");
  if (text(*r, "SELECT cuda FROM run").find("no NVIDIA driver") != std::string::npos) {
    EXPECT_EQ(status, "unavailable");
  }
  if (status == "unavailable") {
    const std::string detail = text(*r, "SELECT detail FROM gpu_capture");
    EXPECT_NE(detail.find("cupti"), std::string::npos) << detail;
    EXPECT_EQ(scalar(*r, "SELECT records FROM gpu_capture"), 0);
    EXPECT_EQ(e.err, "tc: CUPTI did not start (" + detail + "); this process's GPU activity is not recorded\n");
    // tc-analyze kernels says why there is no GPU table.
    Exit k = tc::test::run({bin("tc-analyze"), "kernels", out});
    ASSERT_EQ(k.code, 0) << k.err;
    EXPECT_NE(k.out.find("GPU (CUPTI): not recorded: " + detail + "\n"), std::string::npos) << k.out;
    Exit rep = tc::test::run({bin("tc-analyze"), "--json", out});
    EXPECT_EQ(tc::test::parse_json(rep.out)["summary"]["gpu_capture"].s, "unavailable") << rep.out;
    EXPECT_EQ(tc::test::parse_json(rep.out)["summary"]["gpu_capture_detail"].s, detail) << rep.out;
  } else {
    EXPECT_EQ(status, "recorded");
  }
}

TEST_F(CuptiCapture, NoCuptiLeavesTheDriverAlone) {
  Exit e = tc::test::run({bin("tc-profile"), "-q", "--no-cupti", "-o", out, "--", bin("tc-test-cupti"), "init"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "<unset>\n");
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(text(*r, "SELECT cupti FROM run"), "off");
  EXPECT_EQ(scalar(*r, "SELECT count(*) FROM gpu_capture"), 0);
}

// A user's own injection library (another profiler) is theirs: tc-profile
// says so and does not replace it.
TEST_F(CuptiCapture, AUsersInjectionLibraryIsLeftAlone) {
  const std::string theirs = std::string(TC_BINARY_DIR) + "/lib/../lib/libtc_cupti.so";
  Exit e = tc::test::run({bin("tc-profile"), "-o", out, "--", bin("tc-test-cupti"), "init"}, {{"CUDA_INJECTION64_PATH", theirs}});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out.substr(0, e.out.find('\n')), theirs);
  EXPECT_NE(e.err.find("tc-profile: CUDA_INJECTION64_PATH is already set (" + theirs + "); leaving it alone"), std::string::npos)
      << e.err;
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(text(*r, "SELECT cupti FROM run"), "user: " + theirs);
}

TEST_F(CuptiCapture, OutsideTcProfileTheLibrarySaysItRecordsNothing) {
  Exit e = tc::test::run({bin("tc-test-cupti"), "init"}, {{"CUDA_INJECTION64_PATH", lib("libtc_cupti.so")}});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("InitializeInjection 1\n"), std::string::npos) << e.out;
  EXPECT_EQ(e.err,
            "tc: libtc_cupti.so was loaded outside tc-profile; GPU activity is not recorded (run the program under tc-profile)\n");
}

TEST_F(CuptiCapture, ActivityReachesTheStoreJoinedAndOnTheStoresClock) {
  Exit e = tc::test::run({bin("tc-profile"), "-q", "-o", out, "--", bin("tc-test-cupti"), "feed"});
  ASSERT_EQ(e.code, 0) << e.err;
  unsigned long long lo = 0, hi = 0;
  long long emitted = 0;
  ASSERT_EQ(std::sscanf(e.out.c_str(), "window %llu %llu\nemitted %lld", &lo, &hi, &emitted), 3) << e.out;
  EXPECT_EQ(emitted, 3);
  auto r = tc::store::Reader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(scalar(*r, "SELECT dropped_count FROM run"), 0);
  auto q = r->query(
      "SELECT kind, name, bytes, execution_id, graph_id, kernel, blocks, threads, stream, ts, dur FROM gpu_activity ORDER BY ts");
  struct Want {
    const char* kind;
    const char* name;  // nullptr: NULL
    int64_t bytes, execution, graph, kernel, blocks, threads, start_ms, dur_ms;
  };
  const Want want[] = {
      {"kernel", "tc_g3_k1", 0, 77, 3, 1, 64, 128, 0, 2},
      {"kernel", "ampere_sgemm_128x64_nn", 0, 77, -1, -1, 64, 128, 2, 3},  // cuBLAS's, inside execution 77
      {"memcpy_htod", nullptr, 4096, -1, -1, 0, 0, 0, 5, 1},
  };
  int i = 0;
  while (q.next()) {
    ASSERT_LT(i, 3);
    const Want& w = want[i++];
    SCOPED_TRACE(w.kind);
    EXPECT_EQ(q.text(0), w.kind);
    EXPECT_EQ(q.is_null(1) ? std::string("<null>") : std::string(q.text(1)), w.name ? w.name : "<null>");
    EXPECT_EQ(q.i64(2), w.bytes);
    EXPECT_EQ(q.is_null(3) ? -1 : q.i64(3), w.execution);
    EXPECT_EQ(q.is_null(4) ? -1 : q.i64(4), w.graph);
    if (w.kind == std::string("kernel")) {
      EXPECT_EQ(q.i64(5), w.kernel);
    }
    EXPECT_EQ(q.i64(6), w.blocks);
    EXPECT_EQ(q.i64(7), w.threads);
    // On CLOCK_MONOTONIC (the store's): where the program put it, to within
    // the clock map's error (the tightest of five paired readings: a few us;
    // 0.5 ms leaves room for a loaded machine).
    const double start = static_cast<double>(lo) + w.start_ms * 1e6;
    EXPECT_NEAR(static_cast<double>(q.i64(9)), start, 5e5);
    EXPECT_NEAR(static_cast<double>(q.i64(10)), w.dur_ms * 1e6, 2e5);
    EXPECT_LE(static_cast<unsigned long long>(q.i64(9) + q.i64(10)), hi + 500'000);
  }
  EXPECT_EQ(i, 3);

  // One tc-analyze kernels for CPU and GPU: the GPU's kernels by name (tc's
  // with graph and kernel), its copies with bytes.
  Exit k = tc::test::run({bin("tc-analyze"), "kernels", "--json", out});
  ASSERT_EQ(k.code, 0) << k.err;
  tc::test::JsonValue j = tc::test::parse_json(k.out);
  const tc::test::JsonValue& gpu = j["gpu"];
  EXPECT_EQ(gpu["status"].s, "");  // fed, not captured: no gpu_capture row
  EXPECT_NEAR(gpu["kernel_s"].n, 5e-3, 2e-4);
  ASSERT_EQ(gpu["kernels"].a.size(), 2u);
  EXPECT_EQ(gpu["kernels"].a[0]["name"].s, "ampere_sgemm_128x64_nn");  // the longest first
  EXPECT_NEAR(gpu["kernels"].a[0]["share"].n, 0.6, 0.02);
  EXPECT_EQ(gpu["kernels"].a[1]["name"].s, "tc_g3_k1");
  EXPECT_EQ(gpu["kernels"].a[1]["graph_id"].n, 3);
  EXPECT_EQ(gpu["kernels"].a[1]["kernel"].n, 1);
  ASSERT_EQ(gpu["copies"].a.size(), 1u);
  EXPECT_EQ(gpu["copies"].a[0]["kind"].s, "memcpy_htod");
  EXPECT_EQ(gpu["copies"].a[0]["bytes"].n, 4096);
  Exit t = tc::test::run({bin("tc-analyze"), "kernels", out});
  ASSERT_EQ(t.code, 0) << t.err;
  // (times to within the clock map's error: 1.0 ms may print as 1000 us)
  EXPECT_NE(t.out.find("GPU (CUPTI): kernels "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find(" on the device, copies and sets 4.0 KiB in "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("memcpy_htod"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("tc_g3_k1 (g3 k1)"), std::string::npos) << t.out;

  // The report: a run with only GPU activity recorded something (exit 0),
  // and its summary names the GPU's heaviest kernel.
  Exit rep = tc::test::run({bin("tc-analyze"), "--json", out});
  ASSERT_EQ(rep.code, 0) << rep.err;
  tc::test::JsonValue sum = tc::test::parse_json(rep.out)["summary"];
  EXPECT_EQ(sum["gpu_top_kernel"].s, "ampere_sgemm_128x64_nn");
  EXPECT_NEAR(sum["gpu_top_kernel_share"].n, 0.6, 0.02);
  EXPECT_EQ(sum["gpu_copy_bytes"].n, 4096);
  EXPECT_NEAR(sum["gpu_kernel_s"].n, 5e-3, 2e-4);
  Exit text_report = tc::test::run({bin("tc-analyze"), out});
  EXPECT_EQ(text_report.code, 0) << text_report.err;
  EXPECT_NE(text_report.out.find("  gpu       kernels "), std::string::npos) << text_report.out;
  EXPECT_NE(text_report.out.find("ampere_sgemm_128x64_nn holds 60%; copies and sets 4.0 KiB"), std::string::npos) << text_report.out;
}

}  // namespace
