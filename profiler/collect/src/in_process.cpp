// The in-process collector: TC_PROFILE=path.tcdb (no launcher). A thread
// drains this process's rings into the store; at exit the store is finalized.
// Same rings and same Collector as tc-profile: one code path, two places.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "tc/collect/collector.h"
#include "tc/store/writer.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"

namespace tc::collect {
namespace {

std::vector<std::string> own_command() {
  std::vector<std::string> argv;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

class InProcess {
 public:
  bool start(const char* path) {
    std::string error;
    region_ = trace::Region::create_private(64, 1u << 16, &error);
    if (!region_) {
      std::fprintf(stderr, "tc: cannot record to %s: %s; unset TC_PROFILE or fix the cause\n", path, error.c_str());
      return false;
    }
    auto writer = store::Writer::create(path, {.overwrite = true});
    if (!writer.ok()) {
      std::fprintf(stderr, "tc: cannot record: %s\n", writer.status().message().c_str());
      return false;
    }
    writer_ = std::move(*writer);
    path_ = path;
    RunInfo info = gather_run_info(own_command(), "in-process");
    info.cuda = cuda_probe();
    collector_ = std::make_unique<Collector>(*region_, *writer_, std::move(info));
    if (Status s = collector_->begin(); !s.ok()) {
      std::fprintf(stderr, "tc: cannot record: %s\n", s.message().c_str());
      return false;
    }
    trace::detail::activate(region_.get());
    thread_ = std::thread([this] { loop(); });
    std::atexit([] { instance().stop(); });
    return true;
  }

  void flush() {
    std::unique_lock lock(mu_);
    uint64_t target = passes_ + 2;  // a whole pass that started after this call
    wake_ = true;
    cv_.notify_all();
    done_cv_.wait(lock, [&] { return passes_ >= target || stopped_; });
  }

  void stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      cv_.notify_all();
    }
    trace::detail::deactivate();
    if (thread_.joinable()) thread_.join();
    // Static destructors may still record; the region stays mapped on purpose.
    RunEnd end;
    end.complete = true;
    if (Status s = collector_->finish(end); !s.ok()) {
      std::fprintf(stderr, "tc: recording to %s ended with an error: %s\n", path_.c_str(), s.message().c_str());
    } else if (std::getenv("TC_PROFILE_QUIET") == nullptr) {
      CollectorStats st = collector_->stats();
      std::fprintf(stderr, "tc: wrote %llu events to %s (tc-analyze %s)\n", static_cast<unsigned long long>(st.events), path_.c_str(),
                   path_.c_str());
    }
    region_.release();  // threads that outlive exit() may still touch it
    writer_.reset();
  }

  static InProcess& instance() {
    static InProcess* p = new InProcess;  // leaked: used from atexit
    return *p;
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      auto n = collector_->drain();
      lock.lock();
      if (!n.ok()) {
        std::fprintf(stderr, "tc: recording to %s stopped: %s\n", path_.c_str(), n.status().message().c_str());
        trace::detail::deactivate();
        stopped_ = true;
        done_cv_.notify_all();
        return;
      }
      ++passes_;
      done_cv_.notify_all();
      if (*n == 0 && !wake_) cv_.wait_for(lock, std::chrono::milliseconds(2));
      wake_ = false;
    }
    stopped_ = true;
    done_cv_.notify_all();
  }

  std::unique_ptr<trace::Region> region_;
  std::unique_ptr<store::Writer> writer_;
  std::unique_ptr<Collector> collector_;
  std::string path_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  uint64_t passes_ = 0;
  bool stopping_ = false, stopped_ = false, wake_ = false;
};

[[maybe_unused]] const bool g_hooks_installed = [] {
  trace::detail::set_in_process_hooks([](const char* path) { return InProcess::instance().start(path); },
                                      [] { InProcess::instance().flush(); });
  trace::start_from_environment();
  return true;
}();

}  // namespace

}  // namespace tc::collect
