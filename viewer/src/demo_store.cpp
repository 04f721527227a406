#include "tc/viewer/demo_store.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "tc/store/writer.h"

namespace tc::viewer {
namespace {

namespace schema = store::schema;

enum Loc : int64_t {
  kStepRange = 1, kForward, kBackward, kOptimizer, kDataLoad, kLive, kCapacity, kLogInstant,
  kItemSite, kToHostSite, kMarkStepSite, kLossSite,
  // NVTX sites (file 'nvtx', function = the domain).
  kNvtxTrainStep, kNvtxForward, kNvtxBackward, kNvtxCheckpoint, kNvtxEpoch, kNvtxLoadBatch, kNvtxDecode, kNvtxQueue,
  kNvtxPrefetch,
};

// NVTX colours the demo's program gives (0xAARRGGBB); the others take the palette's.
constexpr int64_t kNvtxGreen = 0xFF76B900, kNvtxOrange = 0xFFE8710A, kNvtxBlue = 0xFF1E88E5, kNvtxRed = 0xFFD50000;

// Writes the store part by part, in this order (row ids follow it).
struct Demo {
  store::Writer& w;
  const DemoStoreOptions& o;
  int threads = 1, steps = 4;
  int64_t t_start = 0, t_end = 0;
  int64_t events = 0;  // written so far
  const int64_t capacity = 16LL << 30;

  Status write_run();
  Status write_steps();
  Status write_out_of_memory();
  Status write_nvtx();
  Status write_user_ranges();
};

// The run, its rank, the locations, the process and its threads.
Status Demo::write_run() {
  TC_RETURN_IF_ERROR(w.row(schema::run)
                         .i64(1).text("0.1.0").text("[\"./train\",\"--steps\",\"" + std::to_string(steps) + "\"]")
                         .text("/work").text("demo").text("tc-profile").text("monotonic")
                         .i64(t_start).i64(t_end).i64(1'700'000'000'000'000'000).i64(0).null().i64(1)
                         .i64(0).i64(0).text("no device").null().text("tc").null()
                         .insert());
  if (o.rank >= 0) {
    TC_RETURN_IF_ERROR(w.row(schema::ranks).null().i64(1).i64(o.rank).i64(o.world_size).text("demo").text("demo-job").i64(o.clock_offset_ns)
                           .i64(1000).insert());
  }
  struct L { int64_t id; const char* name; const char* file; const char* fn; int64_t line; };
  const L locs[] = {
      {kStepRange, "train.step", "train.cpp", "main", 30},
      {kForward, "model.forward", "model.cpp", "forward", 12},
      {kBackward, "model.backward", "model.cpp", "backward", 40},
      {kOptimizer, "optim.update", "optim.cpp", "step", 8},
      {kDataLoad, "data.load", "data.cpp", "next_batch", 21},
      {kLive, "memory.live_bytes", "allocator.cpp", "allocate", 77},
      {kCapacity, "memory.capacity_bytes", "allocator.cpp", "init", 20},
      {kLogInstant, "log.flush", "train.cpp", "log", 55},
      {kItemSite, "item", "train.cpp", "main", 42},
      {kToHostSite, "to_host", "eval.cpp", "evaluate", 17},
      {kMarkStepSite, "mark_step", "train.cpp", "main", 48},
      {kLossSite, "cross_entropy", "train.cpp", "main", 39},
      {kNvtxTrainStep, "train_step", "nvtx", "", 0},
      {kNvtxForward, "forward", "nvtx", "", 0},
      {kNvtxBackward, "backward", "nvtx", "", 0},
      {kNvtxCheckpoint, "checkpoint", "nvtx", "", 0},
      {kNvtxEpoch, "epoch", "nvtx", "", 0},
      {kNvtxLoadBatch, "load batch", "nvtx", "data", 0},
      {kNvtxDecode, "decode", "nvtx", "data", 0},
      {kNvtxQueue, "queue depth", "nvtx", "data", 0},
      {kNvtxPrefetch, "prefetch", "nvtx", "data", 0},
  };
  for (const L& l : locs) {
    TC_RETURN_IF_ERROR(w.row(schema::locations).i64(l.id).text(l.name).text(l.file).text(l.fn).i64(l.line).insert());
  }
  const int64_t pid = 4242 + std::max<int64_t>(o.rank, 0) * 100;
  TC_RETURN_IF_ERROR(w.row(schema::processes).i64(1).i64(pid).text("train").i64(t_start).i64(t_end).insert());
  for (int t = 0; t < threads; ++t) {
    TC_RETURN_IF_ERROR(w.row(schema::threads).i64(t + 1).i64(1).i64(pid + t)
                           .text(t == 0 ? "main" : "loader " + std::to_string(t)).insert());
  }
  return Status::Ok();
}

// Steps on thread 1: compile on the first step and whenever the sequence
// length changes, execute every step, item() every 5th, to_host() every 8th.
Status Demo::write_steps() {
  TC_RETURN_IF_ERROR(w.row(schema::counters).null().i64(1).i64(t_start).i64(kCapacity).f64(double(capacity)).insert());
  ++events;
  int64_t seq = 128, graph = 0;
  for (int s = 0; s < steps; ++s) {
    int64_t ts = t_start + s * o.step_ns;
    int64_t new_seq = s < steps / 3 ? 128 : s < 2 * steps / 3 ? 256 : 512;
    bool structure = s == steps / 2;
    int64_t compile_ns = 0;
    if (s == 0 || new_seq != seq || structure) {
      ++graph;
      compile_ns = o.step_ns * 3 / 5;
      const char* reason = s == 0 ? "first" : structure ? "structure_change" : "shape_change";
      TC_RETURN_IF_ERROR(w.row(schema::compilations).null().i64(1).i64(ts + 100'000).i64(compile_ns).i64(graph)
                             .i64(s).text("a1b2c3d4e5f6" + std::to_string(graph)).text("feedbeef").text(reason)
                             .text("mark_step").i64(kMarkStepSite).i64(420).i64(260).i64(31)
                             .i64(compile_ns / 5).i64(compile_ns / 5).i64(compile_ns / 2).text("built")
                             .text(structure ? "nodes 260 -> 274; first differing op: dropout at model.cpp:19" : "")
                             .text("/tmp/tc/graph" + std::to_string(graph) + ".cpp")
                             .insert());
      ++events;
      if (std::string_view(reason) == "shape_change") {
        TC_RETURN_IF_ERROR(w.row(schema::compilation_inputs).null().i64(1).i64(graph).text("input_ids").i64(1)
                               .i64(seq).i64(new_seq).insert());
        TC_RETURN_IF_ERROR(w.row(schema::compilation_inputs).null().i64(1).i64(graph).text("labels").i64(1)
                               .i64(seq).i64(new_seq).insert());
      }
      int64_t peak = (4LL << 30) + new_seq * (16LL << 20);
      TC_RETURN_IF_ERROR(w.row(schema::memory_plans).null().i64(1).i64(graph).i64(peak).i64(1LL << 30)
                             .i64(1LL << 30).i64(2LL << 30).i64(new_seq * (14LL << 20)).i64(new_seq * (1LL << 20))
                             .i64(new_seq * (1LL << 20)).i64(new_seq * (16LL << 20)).i64(32).i64(capacity).insert());
      seq = new_seq;
      // Three kernels per graph: the attention product (model.cpp:42) holds most of the time.
      const char* kinds[] = {"matmul", "elementwise", "reduce"};
      const char* ops[] = {"matmul", "add,relu", "sum"};
      const char* sites[] = {"model.cpp:42", "model.cpp:43", "model.cpp:44;train.cpp:88"};
      for (int k = 0; k < 3; ++k) {
        TC_RETURN_IF_ERROR(w.row(schema::kernels).null().i64(1).i64(graph).i64(k).text(kinds[k]).text(ops[k])
                               .text(k == 0 ? "32x128x128x64" : "32x128x128").i64(4 << 20).i64(1 << 20)
                               .i64(k == 0 ? 2LL * 32 * 128 * 128 * 64 : 32 * 128 * 128).text(sites[k]).insert());
      }
    }
    int64_t exec_ts = ts + 200'000 + compile_ns;
    int64_t exec_ns = o.step_ns / 4;
    int64_t step_dur = exec_ts + exec_ns - ts + 100'000;
    TC_RETURN_IF_ERROR(w.row(schema::steps).null().i64(1).i64(ts).i64(step_dur).i64(s).i64(kMarkStepSite).insert());
    if (o.rank >= 0) {
      const int64_t arrive = ts + step_dur + o.rank * 100'000, last = ts + step_dur + (o.world_size - 1) * 100'000;
      TC_RETURN_IF_ERROR(w.row(schema::collectives).null().i64(1).i64(arrive).i64(last + 500'000 - arrive).i64(s).i64(s + 1)
                             .text("all_reduce_mean").i64(1 << 20).i64(4).i64(kMarkStepSite).insert());
      ++events;
    }
    TC_RETURN_IF_ERROR(w.row(schema::executions).null().i64(1).i64(exec_ts).i64(exec_ns).i64(graph).i64(s)
                           .text("mark_step").i64(260).i64(s + 1).null().insert());
    events += 2;
    {
      const int64_t share[] = {6, 2, 1};  // ninths of the execution
      int64_t at = exec_ts;
      for (int k = 0; k < 3; ++k) {
        int64_t d = exec_ns * share[k] / 9;
        TC_RETURN_IF_ERROR(w.row(schema::kernel_executions).null().i64(1).i64(s + 1).i64(graph).i64(k).i64(at).i64(d).insert());
        at += d;
        ++events;
      }
    }
    int64_t ev_ts = ts + step_dur + 300'000;
    if (s % 5 == 4) {
      TC_RETURN_IF_ERROR(w.row(schema::explicit_evaluations).null().i64(1).i64(ev_ts).i64(o.step_ns / 10).i64(s)
                             .text("item").i64(kItemSite).i64(37).i64(0).insert());
      ++events;
      ev_ts += o.step_ns / 10 + 100'000;
    }
    if (s % 8 == 7) {
      TC_RETURN_IF_ERROR(w.row(schema::explicit_evaluations).null().i64(1).i64(ev_ts).i64(o.step_ns / 12).i64(s)
                             .text("to_host").i64(kToHostSite).i64(12).i64(0).insert());
      ++events;
    }
    // Memory: parameters and optimizer state, then activations that grow with
    // the sequence length through the execution and are freed after it.
    double base = 4.0 * (1LL << 30);
    double act = double(seq) * (12LL << 20);
    for (int k = 0; k <= 8; ++k) {
      double v = base + act * std::sin(3.14159265 * k / 8);
      TC_RETURN_IF_ERROR(w.row(schema::counters).null().i64(1).i64(exec_ts + k * exec_ns / 8).i64(kLive).f64(v).insert());
      ++events;
    }
    TC_RETURN_IF_ERROR(w.row(schema::instants).null().i64(1).i64(ts + step_dur).i64(kLogInstant).i64(s).insert());
    ++events;
  }
  return Status::Ok();
}

// One allocation that did not fit, in the last step.
Status Demo::write_out_of_memory() {
  int64_t ts = t_end - o.step_ns / 3;
  TC_RETURN_IF_ERROR(w.row(schema::counters).null().i64(1).i64(ts).i64(kLive).f64(double(capacity) * 0.97).insert());
  TC_RETURN_IF_ERROR(w.row(schema::out_of_memory).null().i64(1).i64(ts + 1000).i64(steps - 1).i64(2LL << 30)
                         .i64(capacity * 97 / 100).i64(capacity).i64(1LL << 30).i64(1LL << 30).i64(2LL << 30)
                         .i64(capacity * 97 / 100 - (5LL << 30)).i64(1LL << 30).i64(0).i64(64).insert());
  events += 2;
  return Status::Ok();
}

// NVTX, as tc-profile records a program that calls NVTX itself: on the
// main thread (default domain) train_step holding forward and backward,
// a checkpoint mark every 10 steps and an epoch start/end range every 10
// steps that the loader thread ends; on the loader thread (domain "data")
// load batch holding decode, a queue-depth mark with a real payload, and a
// prefetch left open when the process ended (cut).
Status Demo::write_nvtx() {
  const int loader = threads > 1 ? 2 : 1;
  struct Site { int64_t loc; int utid; const char* domain; int64_t category, color; };
  const Site sites[] = {
      {kNvtxTrainStep, 1, nullptr, 1, kNvtxGreen}, {kNvtxForward, 1, nullptr, 1, 0}, {kNvtxBackward, 1, nullptr, 1, kNvtxOrange},
      {kNvtxCheckpoint, 1, nullptr, 0, kNvtxRed}, {kNvtxEpoch, 1, nullptr, 0, 0}, {kNvtxLoadBatch, loader, "data", 2, kNvtxBlue},
      {kNvtxDecode, loader, "data", 2, 0}, {kNvtxQueue, loader, "data", 0, 0}, {kNvtxPrefetch, loader, "data", 0, 0},
  };
  for (const Site& site : sites) {
    auto r = w.row(schema::nvtx_sites);
    r.null().i64(site.utid).i64(site.loc);
    if (site.domain) r.text(site.domain); else r.null();
    if (site.category) r.i64(site.category); else r.null();
    if (site.color) r.i64(site.color); else r.null();
    TC_RETURN_IF_ERROR(r.text("ascii").insert());
  }
  TC_RETURN_IF_ERROR(w.row(schema::nvtx_categories).null().i64(1).null().i64(1).text("compute").insert());
  TC_RETURN_IF_ERROR(w.row(schema::nvtx_categories).null().i64(loader).text("data").i64(2).text("input").insert());
  auto range = [&](int utid, int64_t ts, int64_t dur, int64_t depth, int64_t loc, int64_t payload) {
    ++events;
    return w.row(schema::ranges).null().i64(utid).i64(ts).i64(dur).i64(depth).i64(loc).i64(payload).insert();
  };
  for (int s = 0; s < steps; ++s) {
    const int64_t ts = t_start + s * o.step_ns, half = o.step_ns * 2 / 5;
    TC_RETURN_IF_ERROR(range(1, ts + 50'000, o.step_ns * 9 / 10, 0, kNvtxTrainStep, s));
    TC_RETURN_IF_ERROR(range(1, ts + 100'000, half, 1, kNvtxForward, 0));
    TC_RETURN_IF_ERROR(range(1, ts + 200'000 + half, half, 1, kNvtxBackward, 0));
    if (s % 10 == 9) {
      TC_RETURN_IF_ERROR(w.row(schema::instants).null().i64(1).i64(ts + o.step_ns * 19 / 20).i64(kNvtxCheckpoint).i64(s + 1).insert());
      ++events;
    }
    if (s % 10 == 0) {
      TC_RETURN_IF_ERROR(w.row(schema::nvtx_range_starts).null().i64(1).i64(ts).i64(s / 10 + 1).i64(kNvtxEpoch).i64(s / 10).insert());
      ++events;
      if (s + 10 < steps) {  // the loader ends it; the last epoch stays open (cut)
        TC_RETURN_IF_ERROR(w.row(schema::nvtx_range_ends).null().i64(loader).i64(ts + 10 * o.step_ns - 1000).i64(s / 10 + 1).insert());
      }
    }
    const int64_t lt = ts + o.step_ns / 10;
    if (s + 1 < steps) {
      TC_RETURN_IF_ERROR(range(loader, lt, o.step_ns / 2, 0, kNvtxLoadBatch, s + 1));
      TC_RETURN_IF_ERROR(range(loader, lt + o.step_ns / 8, o.step_ns / 4, 1, kNvtxDecode, 0));
    } else {
      TC_RETURN_IF_ERROR(range(loader, lt, -1, 0, kNvtxPrefetch, s + 1));  // still open when the process ended
    }
    TC_RETURN_IF_ERROR(w.row(schema::instants).null().i64(loader).i64(lt + o.step_ns / 2 + 1000).i64(kNvtxQueue).i64(0).insert());
    TC_RETURN_IF_ERROR(w.row(schema::nvtx_real_payloads).null().i64(loader).i64(lt + o.step_ns / 2 + 1000).i64(kNvtxQueue)
                           .f64(0.5 + 0.25 * (s % 7)).insert());
    ++events;
  }
  return Status::Ok();
}

// User ranges: units of one depth-0 range holding three depth-1 ranges that
// each hold two depth-2 ranges (ten ranges a unit), spread over the run.
Status Demo::write_user_ranges() {
  const int64_t per_thread = std::max<int64_t>(10, o.range_events / threads);
  const int64_t units = per_thread / 10;
  const int64_t unit_ns = std::max<int64_t>(40, (t_end - t_start) / std::max<int64_t>(units, 1));
  auto r = w.row(schema::ranges);
  const int64_t kinds[] = {kDataLoad, kForward, kBackward, kOptimizer};
  for (int t = 0; t < threads; ++t) {
    for (int64_t u = 0; u < units; ++u) {
      int64_t ts = t_start + u * unit_ns + t * (unit_ns / 7);
      int64_t d0 = unit_ns * 9 / 10;
      TC_RETURN_IF_ERROR(r.null().i64(t + 1).i64(ts).i64(d0).i64(0).i64(kStepRange).i64(u).insert());
      for (int c = 0; c < 3; ++c) {
        int64_t c_ts = ts + 1 + c * (d0 / 3), c_dur = d0 / 3 - 2;
        TC_RETURN_IF_ERROR(r.null().i64(t + 1).i64(c_ts).i64(c_dur).i64(1).i64(kinds[(c + u) % 4]).i64(c).insert());
        for (int g = 0; g < 2; ++g) {
          int64_t g_ts = c_ts + 1 + g * (c_dur / 2), g_dur = std::max<int64_t>(1, c_dur / 2 - 2);
          TC_RETURN_IF_ERROR(r.null().i64(t + 1).i64(g_ts).i64(g_dur).i64(2).i64(kinds[(c + g + 1) % 4]).i64(g).insert());
        }
      }
      events += 10;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<int64_t> write_demo_store(const std::string& path, const DemoStoreOptions& o) {
  store::WriterOptions wo;
  wo.overwrite = true;
  wo.rows_per_transaction = 1'000'000;
  auto created = store::Writer::create(path, wo);
  if (!created.ok()) return created.status();
  Demo d{**created, o};
  d.threads = std::max(1, o.threads);
  d.steps = std::max(4, o.steps);
  d.t_start = 1'000'000'000 - o.clock_offset_ns;
  d.t_end = d.t_start + d.steps * o.step_ns;
  TC_RETURN_IF_ERROR(d.write_run());
  TC_RETURN_IF_ERROR(d.write_steps());
  if (o.out_of_memory) TC_RETURN_IF_ERROR(d.write_out_of_memory());
  TC_RETURN_IF_ERROR(d.write_nvtx());
  TC_RETURN_IF_ERROR(d.write_user_ranges());
  TC_RETURN_IF_ERROR(d.w.finalize());
  return d.events;
}

}  // namespace tc::viewer
