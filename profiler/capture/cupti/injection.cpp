// libtc_cupti.so: tc's CUDA injection library.
//
// tc-profile sets CUDA_INJECTION64_PATH to this library for the program it
// starts (the mechanism Nsight Systems uses). The CUDA driver dlopen()s it
// when the program initializes CUDA and calls InitializeInjection once; we
// then enable CUPTI's activity records for kernels, memcpys, memsets and
// external correlations. Any CUDA program is recorded this way, whether or
// not it links tc: a PyTorch training run on a GPU, or tc's own CUDA backend,
// which pushes each execution's id as CUPTI's external correlation id around
// its launches (cuda_backend.cpp), so that tc's kernels join their execution.
//
// CUPTI fills buffers we hand it and hands them back, full, or when
// flushed, on its own thread or inside a flush; buffer_completed only queues
// them (it never calls CUPTI or waits on the rings while CUPTI waits on it).
// tc's drain thread asks for completed buffers every 200 ms (a plain flush:
// records still in flight stay with CUPTI), translates each queued buffer
// (activity.h) and emits its rows as gpu_activity records into the same
// shared-memory rings as tc's own events (this library carries its own copy
// of the recording layer, attached through TC_PROFILE_FD), so tc-profile's
// collector drains them into the store like any other record. At the
// process's exit the drain thread forces the last flush, empties the queue
// and writes one gpu_capture record: 'recorded' with the counts, records
// CUPTI lost and records it could not read. When capture cannot start (no
// driver, no device, no CUPTI) the record is 'unavailable' with the call that
// failed, stderr has one line, and the program runs on unrecorded.
//
// Only InitializeInjection is exported; everything else, the recording layer
// included, is hidden (see CMakeLists.txt), so it never meets the copy
// inside a program that links tc.
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "activity.h"
#include "emit.h"
#include "tc/trace/records.h"
#include "tc/trace/trace.h"

namespace cp = tc::capture::cupti;
namespace tr = tc::trace;

namespace {

constexpr std::size_t kBufferBytes = 8u << 20;  // CUPTI's suggestion is 1-10 MB
constexpr auto kDrainPeriod = std::chrono::milliseconds(200);

struct Api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) timestamp_callback = nullptr;  // CUPTI 12.x and later
};

struct Session {
  Api api;
  std::string library;
  pid_t pid = 0;                  // the process that started capture (a forked child does nothing)
  cp::Translator* translator = nullptr;  // drain thread only (and start(), before it runs)
  cp::ClockMap* clock = nullptr;
  cp::Emitter* emitter = nullptr;
  int64_t records = 0;
  std::atomic<int64_t> dropped{0};
  std::mutex mu;                  // guards the queue and stop
  std::condition_variable cv;
  std::deque<std::pair<uint8_t*, size_t>> queue;  // completed buffers and their valid bytes
  bool stop = false;
  std::thread drain;
  bool ended = false;
};

Session* g = nullptr;  // never freed: CUPTI may call back until the process is gone

uint64_t CUPTIAPI cupti_timestamp() { return tr::monotonic_ns(); }
uint64_t cupti_now() {
  uint64_t t = 0;
  if (g && g->api.timestamp && g->api.timestamp(&t) == CUPTI_SUCCESS) return t;
  return tr::monotonic_ns();
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  if (g && g->api.result_string && g->api.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

void capture_record(const char* status, const std::string& detail) {
  const cp::Counts c = g && g->translator ? g->translator->counts() : cp::Counts{};
  tr::emit(tr::rec::GpuCapture{
      .ts = tr::Ticks(tr::now()),
      .status = tr::intern(status),
      .detail = tr::intern(detail),
      .records = g ? g->records : 0,
      .dropped = c.dropped,
      .buffers = c.buffers,
      .other_records = c.other_records,
      .unreadable = c.unreadable,
  });
}

void unavailable(const std::string& detail) {
  capture_record("unavailable", detail);
  tr::flush();
  std::fprintf(stderr, "tc: CUPTI did not start (%s); this process's GPU activity is not recorded\n", detail.c_str());
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(::operator new(kBufferBytes, std::align_val_t(8), std::nothrow));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void free_buffer(uint8_t* buffer) { ::operator delete(buffer, std::align_val_t(8)); }

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (!g || ::getpid() != g->pid) {  // a forked child: the parent's buffers are not ours to record
    free_buffer(buffer);
    return;
  }
  size_t dropped = 0;
  if (g->api.dropped && g->api.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS) g->dropped += static_cast<int64_t>(dropped);
  std::lock_guard<std::mutex> lock(g->mu);
  g->queue.emplace_back(buffer, valid);
  g->cv.notify_all();
}

// Translates and emits the queued buffers (the drain thread).
void drain_queue() {
  for (;;) {
    std::pair<uint8_t*, size_t> b;
    {
      std::lock_guard<std::mutex> lock(g->mu);
      if (g->queue.empty()) return;
      b = g->queue.front();
      g->queue.pop_front();
    }
    g->clock->refresh();
    g->translator->buffer(b.first, b.second);
    g->records += g->emitter->emit(g->translator->rows());
    free_buffer(b.first);
  }
}

void drain_loop() {
  tr::set_thread_name("tc-cupti-drain");
  for (;;) {
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(g->mu);
      g->cv.wait_for(lock, kDrainPeriod, [] { return g->stop; });
      stopping = g->stop;
    }
    // A plain flush hands back the buffers whose records are complete; the
    // last one is forced (at exit nothing more will complete).
    g->api.flush_all(stopping ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    drain_queue();
    if (stopping) break;
  }
  g->translator->add_dropped(static_cast<size_t>(g->dropped.exchange(0)));
  // Written here, not in the exit handler: the exiting thread's
  // thread-locals (its ring) are gone before atexit handlers run.
  capture_record("recorded", g->library);
  tr::flush();
}

void end_session() {
  if (!g || g->ended || ::getpid() != g->pid) return;
  g->ended = true;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    g->stop = true;
  }
  g->cv.notify_all();
  if (g->drain.joinable()) g->drain.join();
}

template <class F> bool load(void* h, const char* name, F* out, std::string* why) {
  *out = reinterpret_cast<F>(::dlsym(h, name));
  if (!*out && why->empty()) *why = std::string(name) + " is missing from the CUPTI library";
  return *out != nullptr;
}

int start() {
  tr::start_from_environment();  // normally done when the library was loaded
  if (!tr::enabled()) {
    if (std::getenv("TC_PROFILE_FD") == nullptr)
      std::fprintf(stderr, "tc: libtc_cupti.so was loaded outside tc-profile; GPU activity is not recorded (run the program under tc-profile)\n");
    return 1;
  }
  if (g) return 1;  // once per process
  g = new Session;
  g->pid = ::getpid();
  std::string why;
  void* h = cp::open_cupti(&why, &g->library);
  if (!h) {
    unavailable(why);
    return 1;
  }
  Api& a = g->api;
  bool ok = load(h, "cuptiActivityRegisterCallbacks", &a.register_callbacks, &why) &
            load(h, "cuptiActivityEnable", &a.enable, &why) & load(h, "cuptiActivityDisable", &a.disable, &why) &
            load(h, "cuptiActivityFlushAll", &a.flush_all, &why) &
            load(h, "cuptiActivityGetNumDroppedRecords", &a.dropped, &why) &
            load(h, "cuptiGetResultString", &a.result_string, &why) & load(h, "cuptiGetTimestamp", &a.timestamp, &why);
  cp::NextRecordFn next = cp::load_next_record(&why);
  if (!ok || !next) {
    unavailable(why);
    return 1;
  }
  a.timestamp_callback = reinterpret_cast<decltype(a.timestamp_callback)>(::dlsym(h, "cuptiActivityRegisterTimestampCallback"));
  // CLOCK_MONOTONIC as CUPTI's clock (the store's; CUPTI's default is
  // CLOCK_REALTIME, which steps); before any kind is enabled.
  if (a.timestamp_callback && a.timestamp_callback(cupti_timestamp) != CUPTI_SUCCESS) a.timestamp_callback = nullptr;  // CUPTI's own clock, mapped
  g->translator = new cp::Translator(next);
  g->clock = new cp::ClockMap(cupti_now);
  g->emitter = new cp::Emitter(g->clock);
  if (CUptiResult r = a.register_callbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    unavailable("cuptiActivityRegisterCallbacks: " + result_text(r));
    return 1;
  }
  const std::pair<CUpti_ActivityKind, const char*> kinds[] = {
      {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION"},
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
      {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
  };
  for (size_t i = 0; i < std::size(kinds); ++i) {
    if (CUptiResult r = a.enable(kinds[i].first); r != CUPTI_SUCCESS) {
      for (size_t j = 0; j < i; ++j) a.disable(kinds[j].first);  // all or nothing
      unavailable(std::string("cuptiActivityEnable(") + kinds[i].second + "): " + result_text(r));
      return 1;
    }
  }
  // A child forked after CUDA started (a data loader's workers) has no drain
  // thread and no usable CUPTI: it must neither join the parent's thread nor
  // record at its exit (buffer_completed and end_session check the pid). The
  // handle is dropped, not joined or detached: the thread does not exist in
  // the child. Registered before the thread starts.
  pthread_atfork(nullptr, nullptr, [] {
    if (!g) return;
    g->ended = true;
    new (&g->drain) std::thread();
  });
  g->drain = std::thread(drain_loop);
  std::atexit(end_session);
  return 1;
}

}  // namespace

// The CUDA driver's entry point for CUDA_INJECTION64_PATH; 1 = initialized
// (also when capture could not start: the program runs on either way).
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) { return start(); }
