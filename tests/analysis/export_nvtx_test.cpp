// The Chrome export of NVTX (schema v3): a store written row by row with
// nested push/pop ranges on three threads, a named domain, a cut range,
// marks, start/end ranges (one ending on another thread, one cut), a category
// name, a colour and a real payload; the export must hold exactly those
// events, and tc's own ranges and instants as before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "../support/downgrade.h"
#include "../support/json.h"
#include "../support/process.h"
#include "tc/analysis/export.h"
#include "tc/store/writer.h"

namespace ta = tc::analysis;
namespace schema = tc::store::schema;
using tc::test::JsonValue;
using tc::test::TempDir;

namespace {

constexpr int64_t kMs = 1'000'000;  // ns

void ok(const tc::Status& s) { ASSERT_TRUE(s.ok()) << s.message(); }

enum Loc : int64_t { kTrainStep = 1, kLogFlush, kForward, kBackward, kLoadBatch, kEpoch, kCheckpoint, kPrefetch, kSave };

// Process 1 (pid 100) ends at 900 ms, the run at 1000 ms. Threads 1-3 are
// process 1's; thread 4 is process 2's (pid 200, end unknown), whose range 42
// is not process 1's range 42.
void write_nvtx_store(const std::string& path) {
  auto created = tc::store::Writer::create(path, {.overwrite = true});
  ASSERT_TRUE(created.ok()) << created.status().message();
  tc::store::Writer& w = **created;
  ok(w.row(schema::run).i64(1).text("0.1.0").text("[\"./train\"]").text("/work").text("host").text("tc-profile").text("monotonic")
         .i64(0).i64(1000 * kMs).i64(0).null().i64(9).i64(0).i64(0).i64(0).text("none").null().text("tc").null().insert());
  struct L { int64_t id; const char* name; const char* file; const char* fn; };
  for (const L& l : {L{kTrainStep, "train.step", "train.cpp", "main"}, L{kLogFlush, "log.flush", "train.cpp", "main"},
                     L{kForward, "forward", "nvtx", ""}, L{kBackward, "backward", "nvtx", ""}, L{kLoadBatch, "load batch", "nvtx", "data"},
                     L{kEpoch, "epoch", "nvtx", "data"}, L{kCheckpoint, "checkpoint", "nvtx", ""}, L{kPrefetch, "prefetch", "nvtx", "data"},
                     L{kSave, "save", "nvtx", ""}}) {
    ok(w.row(schema::locations).i64(l.id).text(l.name).text(l.file).text(l.fn).i64(l.id < kForward ? 10 : 0).insert());
  }
  ok(w.row(schema::processes).i64(1).i64(100).text("python").i64(0).i64(900 * kMs).insert());
  ok(w.row(schema::processes).i64(2).i64(200).text("python").i64(0).null().insert());
  ok(w.row(schema::threads).i64(1).i64(1).i64(100).text("main").insert());
  ok(w.row(schema::threads).i64(2).i64(1).i64(101).text("worker").insert());  // named by nvtxNameOsThread
  ok(w.row(schema::threads).i64(3).i64(1).i64(102).null().insert());
  ok(w.row(schema::threads).i64(4).i64(2).i64(200).null().insert());
  // Sites: id, utid, loc_id, domain, category, color, message_type.
  auto site = [&](int64_t utid, int64_t loc, const char* domain, int64_t category, int64_t color) {
    auto r = w.row(schema::nvtx_sites);
    r.null().i64(utid).i64(loc);
    if (domain) r.text(domain); else r.null();
    if (category) r.i64(category); else r.null();
    if (color) r.i64(color); else r.null();
    ok(r.text("ascii").insert());
  };
  site(1, kForward, nullptr, 1, 0xFF76B900);
  site(1, kBackward, nullptr, 2, 0);
  site(2, kLoadBatch, "data", 0, 0xFF123456);
  site(1, kEpoch, "data", 1, 0);
  site(1, kCheckpoint, nullptr, 0, 0x80FF0000);
  site(2, kPrefetch, "data", 0, 0);
  site(2, kSave, nullptr, 0, 0);
  // Category 1 of the default domain has a name in each process (a site takes
  // its own process's); "data"'s category 1 is named only in process 2.
  ok(w.row(schema::nvtx_categories).null().i64(1).null().i64(1).text("compute").insert());
  ok(w.row(schema::nvtx_categories).null().i64(4).null().i64(1).text("rank 1 compute").insert());
  ok(w.row(schema::nvtx_categories).null().i64(4).text("data").i64(1).text("other process").insert());
  // Ranges: id, utid, ts, dur, depth, loc_id, arg. tc's own range holds NVTX ranges on thread 1.
  auto range = [&](int64_t utid, int64_t ts, int64_t dur, int64_t depth, int64_t loc, int64_t arg) {
    ok(w.row(schema::ranges).null().i64(utid).i64(ts).i64(dur).i64(depth).i64(loc).i64(arg).insert());
  };
  range(1, 0, 100 * kMs, 0, kTrainStep, 3);
  range(1, 10 * kMs, 40 * kMs, 1, kForward, 7);
  range(1, 20 * kMs, 10 * kMs, 2, kBackward, 0);
  range(2, 5 * kMs, 10 * kMs, 0, kLoadBatch, 3);
  range(2, 6 * kMs, 2 * kMs, 1, kLoadBatch, 4);
  range(3, 200 * kMs, -1, 0, kForward, 0);  // cut: still open when process 1 ended
  // Instants: id, utid, ts, loc_id, arg.
  ok(w.row(schema::instants).null().i64(1).i64(60 * kMs).i64(kCheckpoint).i64(5).insert());
  ok(w.row(schema::instants).null().i64(2).i64(70 * kMs).i64(kPrefetch).i64(0).insert());
  ok(w.row(schema::instants).null().i64(1).i64(80 * kMs).i64(kLogFlush).i64(2).insert());
  ok(w.row(schema::nvtx_real_payloads).null().i64(2).i64(70 * kMs).i64(kPrefetch).f64(2.5).insert());
  // Start/end: 42 starts on thread 1 and ends on thread 3; 43 never ends.
  ok(w.row(schema::nvtx_range_starts).null().i64(1).i64(1 * kMs).i64(42).i64(kEpoch).i64(11).insert());
  ok(w.row(schema::nvtx_range_ends).null().i64(4).i64(300 * kMs).i64(42).insert());  // process 2's 42
  ok(w.row(schema::nvtx_range_ends).null().i64(3).i64(500 * kMs).i64(42).insert());
  ok(w.row(schema::nvtx_range_starts).null().i64(2).i64(600 * kMs).i64(43).i64(kSave).i64(0).insert());
  ok(w.finalize());
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string show(const JsonValue& v) {
  switch (v.type) {
    case JsonValue::kNull: return "null";
    case JsonValue::kBool: return v.b ? "true" : "false";
    case JsonValue::kNumber: return number(v.n);
    case JsonValue::kString: return "'" + v.s + "'";
    case JsonValue::kArray: return "[array]";
    case JsonValue::kObject: {
      std::string out = "{";
      for (const auto& [k, x] : v.o) out += (out.size() > 1 ? " " : "") + k + "=" + show(x);
      return out + "}";
    }
  }
  return "?";
}

// One line per event: every field but the metadata ones, in a fixed order.
std::string line(const JsonValue& e) {
  std::string out = e["ph"].s + " " + (e.has("cat") ? e["cat"].s : "-") + " '" + e["name"].s + "' pid " + show(e["pid"]);
  if (e.has("tid")) out += " tid " + show(e["tid"]);
  if (e.has("ts")) out += " ts " + show(e["ts"]);
  if (e.has("dur")) out += " dur " + show(e["dur"]);
  if (e.has("s")) out += " s " + e["s"].s;
  if (e.has("id2")) out += " id2 " + show(e["id2"]);
  if (e.has("args")) out += " " + show(e["args"]);
  return out;
}

std::vector<std::string> events_of(const JsonValue& trace, const std::set<std::string>& phases) {
  std::vector<std::string> out;
  for (const JsonValue& e : trace["traceEvents"].a) {
    if (phases.count(e["ph"].s)) out.push_back(line(e));
  }
  std::sort(out.begin(), out.end());
  return out;
}

JsonValue export_of(const std::string& store, const std::string& out) {
  auto r = tc::store::Reader::open(store);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  tc::Status s = ta::export_chrome(*r, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return tc::test::parse_json(tc::test::read_file(out));
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ExportNvtx, RangesMarksAndStartEndRangesAreExactlyTheEventsWritten) {
  TempDir dir;
  write_nvtx_store(dir.file("run.tcdb"));
  JsonValue trace;
  ASSERT_NO_THROW(trace = export_of(dir.file("run.tcdb"), dir.file("trace.json")));
  // Push/pop ranges as complete events; tc's own range as before. The cut one
  // lasts to its process's end (900 ms), not the run's (1000 ms).
  EXPECT_EQ(events_of(trace, {"X"}),
            sorted({
                "X nvtx 'backward' pid 1 tid 1 ts 20000 dur 10000 {category=2 color=null depth=2 domain=null payload=0}",
                "X nvtx 'forward' pid 1 tid 1 ts 10000 dur 40000 {category='compute' color='#76B900' depth=1 domain=null payload=7}",
                "X nvtx 'forward' pid 1 tid 3 ts 200000 dur 700000 {category='compute' color='#76B900' cut=true depth=0 domain=null payload=0}",
                "X nvtx:data 'load batch' pid 1 tid 2 ts 5000 dur 10000 {category=null color='#123456' depth=0 domain='data' payload=3}",
                "X nvtx:data 'load batch' pid 1 tid 2 ts 6000 dur 2000 {category=null color='#123456' depth=1 domain='data' payload=4}",
                "X range 'train.step' pid 1 tid 1 ts 0 dur 100000 {arg=3}",
            }));
  // Marks as thread-scoped instants with the same args (but no depth); the real payload wins.
  EXPECT_EQ(events_of(trace, {"i"}),
            sorted({
                "i instant 'log.flush' pid 1 tid 1 ts 80000 s t {arg=2}",
                "i nvtx 'checkpoint' pid 1 tid 1 ts 60000 s t {category=null color='#FF0000' domain=null payload=5}",
                "i nvtx:data 'prefetch' pid 1 tid 2 ts 70000 s t {category=null color=null domain='data' payload=2.5}",
            }));
  // Start/end ranges as async events with a process-scoped id: 42 ends on
  // thread 3 at 500 ms (process 2's end of its own 42 at 300 ms is not it);
  // 43 is cut at process 1's end. "data"'s category 1 takes process 2's name, the only one.
  EXPECT_EQ(events_of(trace, {"b", "e"}),
            sorted({
                "b nvtx:data 'epoch' pid 1 tid 1 ts 1000 id2 {local='0x2a'} {category='other process' color=null domain='data' payload=11 range_id=42}",
                "e nvtx:data 'epoch' pid 1 tid 3 ts 500000 id2 {local='0x2a'} {}",
                "b nvtx 'save' pid 1 tid 2 ts 600000 id2 {local='0x2b'} {category=null color=null domain=null payload=0 range_id=43}",
                "e nvtx 'save' pid 1 tid 2 ts 900000 id2 {local='0x2b'} {cut=true}",
            }));
  // Thread names (nvtxNameOsThread's included) as metadata; an unnamed thread by its OS id.
  std::vector<std::string> names;
  for (const JsonValue& e : trace["traceEvents"].a) {
    if (e["ph"].s == "M" && e["name"].s == "thread_name") names.push_back(show(e["tid"]) + " " + e["args"]["name"].s);
  }
  EXPECT_EQ(sorted(names), sorted({"1 main", "2 worker", "3 thread 102", "4 thread 200"}));
}

// Stores of v1 and v2 have no NVTX tables: the same rows export as tc's own
// ranges and instants, and start/end ranges are not there to export.
TEST(ExportNvtx, OlderStoresExportWithoutNvtx) {
  for (int version : {1, 2}) {
    TempDir dir;
    write_nvtx_store(dir.file("run.tcdb"));
    ASSERT_EQ(tc::test::downgrade_store(dir.file("run.tcdb"), version), "");
    ASSERT_EQ(tc::store::Reader::open(dir.file("run.tcdb"))->schema_version(), version);
    JsonValue trace;
    ASSERT_NO_THROW(trace = export_of(dir.file("run.tcdb"), dir.file("trace.json")));
    std::vector<std::string> x = events_of(trace, {"X"}), i = events_of(trace, {"i"});
    EXPECT_EQ(x.size(), 6u) << version;
    for (const std::string& e : x) EXPECT_EQ(e.rfind("X range ", 0), 0u) << version << ": " << e;
    EXPECT_NE(std::find(x.begin(), x.end(), "X range 'forward' pid 1 tid 3 ts 200000 dur 800000 {arg=0 unfinished=true}"), x.end())
        << "tc's rule for an unfinished range: the run's end";
    EXPECT_EQ(i.size(), 3u) << version;
    for (const std::string& e : i) EXPECT_EQ(e.rfind("i instant ", 0), 0u) << version << ": " << e;
    EXPECT_TRUE(events_of(trace, {"b", "e"}).empty()) << version;
  }
}

}  // namespace
