// The in-process collector: TC_PROFILE=path.tcdb (no launcher).
//
// Before main() the program starts a collector process that shares the rings
// with it (a sealed memfd) and writes the store; the program only records.
// The collector outlives the program: when the program ends without exiting
// (SIGKILL, a crash, _exit) it still holds the ring memory, drains what was
// recorded and finalizes the store, marked incomplete. That is tc-profile's
// guarantee without tc-profile: one Collector, two places.
//
// Before, a thread in the program drained private rings: a killed program
// lost everything it had not committed (0 of 100k events stored after 2.1 s
// idle before SIGKILL; 999,999 of 1M, commits only every 200k rows), and the
// store said complete = 0, dropped = 0 with no word of what was lost.
//
// Hazards, and what answers them:
// - The collector is forked twice, so that it is not the program's child: a
//   program that waits for all its children (wait() until ECHILD) would wait
//   for it forever, since it exits only after the program.
// - It learns that the program ended from its end of a socketpair (EOF when
//   the program's last descriptor closes) and from a pidfd; the program's
//   end is close-on-exec and closed in its fork()ed children.
// - It ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT: a Ctrl-C or a kill of the
//   process group meant for the program must not take the store with it.
//   (SIGKILL of the group still does; commits twice a second bound that loss.)
// - It keeps the program's stdout and stderr open until the store is
//   finalized, so that whoever reads the program's output to its end (a
//   shell's $(...), a test) also waits for the store.
// - The exit status of a program that is not one's child: read from
//   /proc/PID/stat while it is a zombie, if it still is one; else unknown,
//   and the store says so.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tc/collect/collector.h"
#include "tc/store/output.h"
#include "tc/store/writer.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace tc::collect {
namespace {

std::vector<std::string> own_command() {
  std::vector<std::string> argv;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

bool quiet() { return std::getenv("TC_PROFILE_QUIET") != nullptr; }

void send_all(int fd, const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    ssize_t n = ::send(fd, text.data() + at, text.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

// A line up to '\n' (without it); nullopt at end of file.
std::optional<std::string> read_line(int fd) {
  std::string line;
  for (;;) {
    char c;
    ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line += c;
  }
}

void close_other_fds(std::initializer_list<int> keep) {
  std::vector<int> open;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long fd = std::strtol(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0') open.push_back(static_cast<int>(fd));
    }
    ::closedir(d);
  }
  for (int fd : open) {
    if (fd <= 2) continue;
    bool kept = false;
    for (int k : keep) kept = kept || k == fd;
    if (!kept) ::close(fd);  // the directory's own descriptor is already closed: EBADF, harmless
  }
}

// How the program ended, when it is not our child: its wait status from
// /proc/PID/stat (field 52) while it is a zombie. Waits for it to become one
// (the socket closes a little before); unknown if it was reaped already.
RunEnd program_end(pid_t program, int pidfd, std::string* unknown) {
  RunEnd end;
  if (pidfd >= 0) {
    pollfd pf{pidfd, POLLIN, 0};
    ::poll(&pf, 1, 1000);
  }
  std::ifstream in("/proc/" + std::to_string(program) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  if (paren != std::string::npos) {
    std::istringstream fields(stat.substr(paren + 1));
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    // f[0] is field 3 (the state); field 52 (exit_code) is f[49].
    if (f.size() >= 50 && (f[0] == "Z" || f[0] == "X")) {
      int status = std::atoi(f[49].c_str());
      if (WIFEXITED(status)) {
        end.exit_code = WEXITSTATUS(status);
        end.complete = true;  // as under tc-profile: it exited, and its rings were drained
        return end;
      }
      if (WIFSIGNALED(status)) {
        end.exit_signal = WTERMSIG(status);
        return end;
      }
    }
  }
  *unknown =
      "unknown: the program ended without finishing its recording (killed, crashed or exec'd) and its exit status could not be read; "
      "everything it had recorded was collected";
  return end;
}

std::string describe(const RunEnd& end) {
  if (end.exit_signal) return std::string("was killed by signal ") + std::to_string(*end.exit_signal) + " (" + strsignal(*end.exit_signal) + ")";
  if (end.exit_code) return "exited with status " + std::to_string(*end.exit_code) + " without running its exit handlers";
  return "ended without exiting";
}

// The collector process. Never returns.
[[noreturn]] void collector_main(const std::string& path, trace::Region& region, int sock, pid_t program) {
  ::prctl(PR_SET_NAME, "tc-collector");
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(sig, SIG_IGN);
  if (int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC); null >= 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  close_other_fds({sock, region.fd()});
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, program, 0));

  // The store is built beside PATH under a hidden name and renamed over it at
  // the end, as tc-profile does: a failed run never leaves half a store over a
  // good one. (If the collector itself is SIGKILLed, the store is left under
  // the hidden name, valid up to its last commit.)
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  const std::string temp = store::temp_beside(path);
  auto named = [&](std::string message) {
    for (size_t i = 0; (i = message.find(temp, i)) != std::string::npos; i += path.size()) message.replace(i, temp.size(), path);
    return message;
  };
  auto writer = store::Writer::create(temp, {.overwrite = false});
  if (!writer.ok()) {
    send_all(sock, "E" + named(writer.status().message()) + "\n");
    ::_exit(1);
  }
  RunInfo info = gather_run_info(own_command(), "in-process");
  info.cuda = cuda_probe();
  auto c = std::make_unique<Collector>(region, **writer, std::move(info));
  if (Status s = c->begin(); !s.ok()) {
    c.reset();
    writer->reset();
    store::remove_store_files(temp);
    send_all(sock, "E" + named(s.message()) + "\n");
    ::_exit(1);
  }
  send_all(sock, "R\n");

  // Finishes the store and moves it to PATH. Returns "" or the one-line error.
  uint64_t events = 0;
  auto end_run = [&](const RunEnd& end) -> std::string {
    Status s = c->finish(end);
    events = c->stats().events;
    c.reset();
    writer->reset();  // closed before it moves: the -wal belongs to the name it opened
    if (s.ok()) {
      if (std::string why = store::install(temp, path); !why.empty()) return "the store is complete but " + why + "; it is in " + temp;
      return "";
    }
    if (::access(temp.c_str(), F_OK) != 0) return named(s.message());
    if (existed) return s.message() + "; " + path + " was not replaced; what was recorded is in " + temp;
    if (std::string why = store::install(temp, path); !why.empty()) {
      return s.message() + "; what was recorded is in " + temp + " (" + why + ")";
    }
    return named(s.message()) + "; " + path + " holds what was recorded until then, marked incomplete";
  };

  const uint64_t busy = region.capacity() / 16;
  for (;;) {
    uint64_t n = *c->drain();  // never an error: a store failure waits for finish()
    pollfd fds[2] = {{sock, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int r = ::poll(fds, pidfd >= 0 ? 2 : 1, n == 0 ? 5 : n < busy ? 2 : 0);
    if (r <= 0) continue;
    bool gone = pidfd >= 0 && fds[1].revents != 0;
    if (fds[0].revents != 0) {
      char cmd = 0;
      ssize_t got = ::recv(sock, &cmd, 1, MSG_DONTWAIT);
      if (got == 1 && cmd == 'F') {
        (void)c->flush();
        send_all(sock, "f");
        continue;
      }
      if (got == 1 && cmd == 'X') {
        RunEnd end;
        end.complete = true;
        std::string error = end_run(end);
        send_all(sock, error.empty() ? "D" + std::to_string(events) + "\n" : "E" + error + "\n");
        ::_exit(0);
      }
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) gone = true;
    }
    if (!gone) continue;
    std::string unknown;
    RunEnd end = program_end(program, pidfd, &unknown);
    if (!unknown.empty()) c->note_incomplete(unknown);
    std::string error = end_run(end);
    if (!error.empty()) {
      std::fprintf(stderr, "tc: recording to %s ended with an error: %s\n", path.c_str(), error.c_str());
    } else if (!quiet()) {
      std::fprintf(stderr, "tc: the program %s; wrote %llu events to %s, marked incomplete (tc-analyze %s)\n", describe(end).c_str(),
                   static_cast<unsigned long long>(events), path.c_str(), path.c_str());
    }
    ::_exit(0);
  }
}

class InProcess {
 public:
  bool start(const char* path) {
    // Never replace a device, a FIFO or a directory with a store (as root,
    // TC_PROFILE=/dev/null once turned /dev/null into a regular file).
    if (std::string kind = store::not_a_regular_file(path); !kind.empty()) {
      std::fprintf(stderr, "tc: cannot record to %s: it is %s, not a store; set TC_PROFILE to a store's path (FILE.tcdb)\n", path, kind.c_str());
      return false;
    }
    std::string error;
    region_ = trace::Region::create_shared(64, 1u << 16, &error, /*inheritable=*/false);
    if (!region_) {
      std::fprintf(stderr, "tc: cannot record to %s: %s; unset TC_PROFILE or fix the cause\n", path, error.c_str());
      return false;
    }
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      std::fprintf(stderr, "tc: cannot record to %s: socketpair: %s\n", path, std::strerror(errno));
      return false;
    }
    const pid_t program = ::getpid();
    pid_t mid = ::fork();
    if (mid < 0) {
      std::fprintf(stderr, "tc: cannot record to %s: fork: %s\n", path, std::strerror(errno));
      ::close(sv[0]);
      ::close(sv[1]);
      return false;
    }
    if (mid == 0) {
      ::close(sv[0]);
      pid_t c = ::fork();
      if (c != 0) ::_exit(c < 0 ? 1 : 0);
      collector_main(path, *region_, sv[1], program);
    }
    ::close(sv[1]);
    int status = 0;
    while (::waitpid(mid, &status, 0) < 0 && errno == EINTR) {
    }
    std::optional<std::string> ready = read_line(sv[0]);
    if (!ready || *ready != "R") {
      std::fprintf(stderr, "tc: cannot record: %s\n",
                   ready && !ready->empty() ? ready->substr(1).c_str() : "the collector process did not start");
      ::close(sv[0]);
      return false;
    }
    sock_ = sv[0];
    owner_ = program;
    path_ = path;
    ::pthread_atfork(nullptr, nullptr, [] { instance().forked(); });
    trace::detail::activate(region_.get());
    std::atexit([] { instance().stop(); });
    return true;
  }

  void flush() {
    std::lock_guard lock(mu_);
    if (!mine() || stopping_) return;
    send_all(sock_, "F");
    char c;
    while (::recv(sock_, &c, 1, 0) < 0 && errno == EINTR) {
    }
  }

  void stop() {
    std::lock_guard lock(mu_);
    if (!mine() || stopping_) return;
    stopping_ = true;
    trace::detail::deactivate();
    send_all(sock_, "X");
    std::optional<std::string> reply = read_line(sock_);
    if (!reply) {
      std::fprintf(stderr, "tc: the collector process for %s ended early; the store holds what it had committed\n", path_.c_str());
    } else if (reply->starts_with("E")) {
      std::fprintf(stderr, "tc: recording to %s ended with an error: %s\n", path_.c_str(), reply->substr(1).c_str());
    } else if (!quiet()) {
      std::fprintf(stderr, "tc: wrote %s events to %s (tc-analyze %s)\n", reply->substr(1).c_str(), path_.c_str(), path_.c_str());
    }
    // The region stays mapped: threads that outlive exit() may still touch it.
    (void)region_.release();
  }

  static InProcess& instance() {
    static InProcess* p = new InProcess;  // leaked: used from atexit
    return *p;
  }

 private:
  bool mine() const { return sock_ >= 0 && ::getpid() == owner_; }
  // In a fork()ed child: the collector belongs to the parent. (Async-signal-safe.)
  void forked() {
    if (sock_ >= 0) ::close(sock_);
    sock_ = -1;
  }

  std::unique_ptr<trace::Region> region_;
  int sock_ = -1;
  pid_t owner_ = 0;
  std::string path_;
  std::mutex mu_;
  bool stopping_ = false;
};

[[maybe_unused]] const bool g_hooks_installed = [] {
  trace::detail::set_in_process_hooks([](const char* path) { return InProcess::instance().start(path); },
                                      [] { InProcess::instance().flush(); });
  trace::start_from_environment();
  return true;
}();

}  // namespace

}  // namespace tc::collect
