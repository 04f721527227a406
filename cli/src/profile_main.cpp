// tc-profile: runs a program with recording on and writes a .tcdb store.
//
// The rings live in a memfd this process creates and the program inherits
// (TC_PROFILE_FD), so whatever the program recorded before it crashed or was
// killed is still here to collect. This process is the collector: it drains
// the rings while the program runs, then finalizes the store.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tc/analysis/format.h"
#include "tc/collect/collector.h"
#include "tc/store/writer.h"
#include "tc/trace/region.h"

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;

// Forward signals that someone sent to tc-profile (kill, a job runner). A
// terminal's Ctrl-C already reaches the whole foreground group, the program
// included, so forwarding it too would deliver it twice.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code > 0) return;  // kernel-generated (terminal), not sent by a process
  if (g_child > 0) kill(g_child, sig);
  g_forwarded = sig;
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "tc-profile: %s\n", message.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Run a training program with tc's profiler on and write everything it records to a store.\n"
      "Then read the store with `tc-analyze FILE` (report and fixes) or `tc-viewer FILE` (timeline).\n\n"
      "  tc-profile -o run.tcdb -- ./train --batch 32\n\n"
      "Everything after -- (or after the first word that is not an option here) is the program and its arguments.\n",
      "tc-profile"};
  std::string output = "run.tcdb";
  bool force = false, debug = false, quiet = false;
  uint32_t rings = 64;
  uint64_t ring_slots = 1u << 16;
  app.add_option("-o,--output", output, "Store to write (.tcdb)")->capture_default_str();
  app.add_flag("-f,--force", force, "Overwrite the output if it exists");
  app.add_flag("--debug", debug, "Set TC_DEBUG=1 in the program: the compiler logs each pass, its time and its kernels");
  app.add_flag("-q,--quiet", quiet, "No live status line and no summary");
  app.add_option("--rings", rings, "Recording rings, one per thread that records (threads beyond get their events counted as dropped)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--ring-slots", ring_slots, "Slots of 32 bytes per ring, a power of two")->capture_default_str();
  app.footer(
      "Exit status: the program's own, or 128+N when it died of signal N; 2 for bad usage, 126/127 when the program cannot run.\n"
      "SIGINT, SIGTERM and SIGHUP sent to tc-profile are forwarded to the program.");
  // The program's own arguments are never ours: split at "--", or at the first
  // word that is not one of our options.
  std::vector<std::string> command;
  int ours = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      ours = i;
      for (int j = i + 1; j < argc; ++j) command.emplace_back(argv[j]);
      break;
    }
  }
  if (ours == argc) app.prefix_command();
  try {
    app.parse(ours, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (ours == argc) command = app.remaining();
  if (command.empty()) return fail(2, "no program given; usage: tc-profile [-o FILE] -- PROGRAM [ARGS...]");
  if ((ring_slots & (ring_slots - 1)) != 0 || ring_slots < 64) return fail(2, "--ring-slots must be a power of two, at least 64");

  // Refuse before the program starts: an existing output, an unwritable place.
  std::error_code ec;
  if (std::filesystem::exists(output, ec) && !force) {
    return fail(2, output + " already exists; pass --force to overwrite it, or -o to choose another file");
  }
  auto writer = tc::store::Writer::create(output, {.overwrite = force});
  if (!writer.ok()) return fail(2, writer.status().message());

  std::string error;
  auto region = tc::trace::Region::create_shared(rings, ring_slots, &error);
  if (!region) return fail(1, "cannot create the ring memory: " + error);

  if (debug) setenv("TC_DEBUG", "1", 1);
  tc::collect::RunInfo info = tc::collect::gather_run_info(command, "tc-profile");
  info.cuda = tc::collect::cuda_probe();
  tc::collect::Collector collector(*region, **writer, std::move(info));
  if (tc::Status s = collector.begin(); !s.ok()) return fail(1, s.message());

  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) return fail(1, std::string("pipe: ") + std::strerror(errno));

  struct sigaction sa {};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  auto started = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) return fail(1, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
    close(exec_pipe[0]);
    setenv("TC_PROFILE_FD", std::to_string(region->fd()).c_str(), 1);
    unsetenv("TC_PROFILE");  // one collector: ours
    std::vector<char*> args;
    for (std::string& a : command) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    int err = errno;
    (void)!write(exec_pipe[1], &err, sizeof err);
    _exit(err == ENOENT ? 127 : 126);
  }
  g_child = pid;
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close(exec_pipe[0]);
  bool exec_failed = got == static_cast<ssize_t>(sizeof exec_errno);

  const bool live = !quiet && isatty(STDERR_FILENO);
  auto last_status = started;
  int wait_status = 0;
  tc::Status record_error;
  for (;;) {
    if (record_error.ok()) {
      auto n = collector.drain();
      if (!n.ok()) {
        record_error = n.status();
        std::fprintf(stderr, "%stc-profile: recording stopped: %s\n", live ? "\r\033[K" : "", record_error.message().c_str());
      } else if (*n < ring_slots / 16) {
        // A light trickle (a training loop's few events per step) is drained
        // every 10 ms rather than as it comes: on a 2-core machine every
        // wake-up of this process takes a core from the program's threads.
        // A busy producer (a batch of 1/16 of a ring or more) is drained at once.
        std::this_thread::sleep_for(std::chrono::milliseconds(*n == 0 ? 10 : 5));
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_t r = waitpid(pid, &wait_status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      wait_status = 0;
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (live && now - last_status > std::chrono::milliseconds(250)) {
      last_status = now;
      tc::collect::CollectorStats st = collector.stats();
      std::string compile;
      if (st.steps || st.compilations) {
        compile = " · step " + with_commas(st.steps) + " · " + with_commas(st.compilations) + " compilations (" + with_commas(st.recompilations) +
                   " re) · peak " + tc::analysis::format_bytes(st.peak_live_bytes);
      }
      std::fprintf(stderr, "\r\033[K[tc-profile] %.1f s%s · %s events", std::chrono::duration<double>(now - started).count(), compile.c_str(),
                   with_commas(st.events).c_str());
    }
  }
  if (live) std::fprintf(stderr, "\r\033[K");
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  tc::collect::RunEnd end;
  int exit_status;
  std::string how;
  if (exec_failed) {
    end.exit_code = exec_errno == ENOENT ? 127 : 126;
    exit_status = *end.exit_code;
    how = "could not start: " + command[0] + ": " + std::strerror(exec_errno);
  } else if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    end.exit_signal = sig;
    exit_status = 128 + sig;
    how = std::string("was killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
  } else {
    end.exit_code = WEXITSTATUS(wait_status);
    end.complete = true;
    exit_status = *end.exit_code;
    how = "exited with status " + std::to_string(exit_status);
  }
  if (record_error.ok()) {
    if (tc::Status s = collector.finish(end); !s.ok()) record_error = s;
  }
  tc::collect::CollectorStats st = collector.stats();
  if (!quiet) {
    std::fprintf(stderr, "tc-profile: %s %s after %.2f s\n", command[0].c_str(), how.c_str(), elapsed);
    if (record_error.ok()) {
      std::fprintf(stderr, "tc-profile: wrote %s: %s events from %llu threads in %llu process%s%s\n", output.c_str(),
                   with_commas(st.events).c_str(), static_cast<unsigned long long>(st.threads),
                   static_cast<unsigned long long>(st.processes), st.processes == 1 ? "" : "es",
                   st.dropped ? (", " + with_commas(st.dropped) + " dropped (see the dropped table)").c_str() : "");
      if (!end.complete) std::fprintf(stderr, "tc-profile: the store is marked incomplete: the program did not exit normally\n");
      std::fprintf(stderr, "tc-profile: next: tc-analyze %s\n", output.c_str());
    }
  }
  if (!record_error.ok()) {
    std::fprintf(stderr, "tc-profile: the store %s is incomplete: %s\n", output.c_str(), record_error.message().c_str());
    return exit_status != 0 ? exit_status : 1;
  }
  return exit_status;
}
