// tc-profile: runs a program with recording on and writes a .tcdb store.
//
// The rings live in a memfd this process creates and the program inherits
// (TC_PROFILE_FD), so whatever the program recorded before it crashed or was
// killed is still here to collect. This process is the collector: it drains
// the rings while the program runs, then finalizes the store, written beside
// the output under a temporary name and renamed over it at the end.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.h"
#include "tc/analysis/format.h"
#include "tc/collect/collector.h"
#include "tc/store/writer.h"
#include "tc/trace/region.h"

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_early = 0;  // a signal that came before the program was started

// Forward signals that someone sent to tc-profile (kill, a job runner). A
// terminal's Ctrl-C (or Ctrl-\, a hangup, a resize) already reaches the whole
// foreground group, the program included, so forwarding it too would deliver
// it twice.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code > 0) return;  // kernel-generated (terminal), not sent by a process
  if (g_child > 0) kill(g_child, sig);
  else g_early = sig;
}

// Which signals tc-profile passes on to the program: every one it can catch,
// except these.
bool forwards(int sig) {
  switch (sig) {
    case SIGKILL:
    case SIGSTOP:
      return false;  // cannot be caught; see docs/cli.md for what a SIGKILL of tc-profile does
    case SIGCHLD:
      return false;  // news about our own child: it means nothing to the program
    case SIGPIPE:
    case SIGXFSZ:
      // Raised by tc-profile's own writes (stderr into a closed pipe, the store
      // past `ulimit -f`): ignored here, so the write fails with EPIPE or EFBIG
      // and is reported; the program's own writes get its own signals.
      return false;
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
    case SIGABRT:
      return false;  // a fault of tc-profile itself must crash it (with a core), not be passed on
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
    case SIGCONT:
      // Job control: a terminal stops and continues the whole foreground group,
      // the program included. Caught, they would keep tc-profile from stopping
      // (and a background write would loop on SIGTTOU).
      return false;
    default:
      return true;
  }
}

// The standard signals and the real-time ones; glibc keeps 32 and 33 for itself.
std::vector<int> catchable_signals() {
  std::vector<int> sigs;
  for (int sig = 1; sig < 32; ++sig) sigs.push_back(sig);
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) sigs.push_back(sig);
  return sigs;
}

// The dispositions tc-profile found at start, restored in the program before
// exec: it runs with what it would have had without tc-profile.
struct SavedSignal {
  int sig;
  struct sigaction action;
};

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "tc-profile: %s\n", tc::analysis::printable(message).c_str());
  return code;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t i = 0; (i = s.find(from, i)) != std::string::npos; i += to.size()) s.replace(i, from.size(), to);
  return s;
}

bool lexists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The file execvp would run for `program`, or "" when there is none.
std::string find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t i = 0; i <= dirs.size();) {
    size_t j = dirs.find(':', i);
    if (j == std::string::npos) j = dirs.size();
    std::string dir = dirs.substr(i, j - i);
    std::string file = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (::access(file.c_str(), X_OK) == 0) return file;
    i = j + 1;
  }
  return "";
}

// Why `output` cannot be the store, checked before the program starts (empty
// when it can): tc-profile replaces only a regular file, and only with --force.
std::string refuse_output(const std::string& output, bool force, const std::string& program, bool* exists) {
  *exists = false;
  if (output.empty()) return "the output path is empty; give the store to write, e.g. -o run.tcdb";
  struct stat st{};
  if (::stat(output.c_str(), &st) == 0) {
    *exists = true;
    if (!S_ISREG(st.st_mode)) {
      return output + " is " + file_kind(st.st_mode) + "; tc-profile writes its store only to a regular file, even with --force; choose another path with -o";
    }
    if (!force) return output + " already exists; pass --force to overwrite it, or -o to choose another file";
    struct stat prog{};
    std::string file = find_program(program);
    if (!file.empty() && ::stat(file.c_str(), &prog) == 0 && prog.st_dev == st.st_dev && prog.st_ino == st.st_ino) {
      return output + " is the program to profile (" + program + "); choose another file with -o";
    }
  }
  std::string dir = std::filesystem::path(output).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat dst{};
  if (::stat(dir.c_str(), &dst) != 0) {
    if (errno == ENOTDIR) return output + ": a part of " + dir + " is not a directory; choose another path";
    return output + ": directory " + dir + " does not exist; create it or choose another path";
  }
  if (!S_ISDIR(dst.st_mode)) return output + ": " + dir + " is not a directory; choose another path";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return output + ": cannot write in directory " + dir + " (" + std::strerror(errno) + "); choose a writable one";
  }
  return "";
}

// The store is written to a hidden file beside the output and renamed over
// it only when it is finished, so a failed run never leaves half a store over
// a good one. The same directory keeps the rename atomic.
std::string temp_beside(const std::string& output) {
  std::filesystem::path p(output);
  std::string dir = p.parent_path().string();
  std::string base = (dir.empty() ? "" : dir + "/") + "." + p.filename().string() + ".tc-tmp-" + std::to_string(::getpid());
  for (int n = 0;; ++n) {
    std::string candidate = n == 0 ? base : base + "-" + std::to_string(n);
    if (!lexists(candidate) && !lexists(candidate + "-wal")) return candidate;
  }
}

// Removes the temporary store (and its side files) unless it was kept or moved.
struct TempStore {
  std::string path;
  bool keep = false;
  ~TempStore() {
    if (keep || path.empty()) return;
    for (const char* suffix : {"", "-wal", "-shm", "-journal", "-reserve"}) ::unlink((path + suffix).c_str());
  }
};

// Moves a closed store from `temp` to `output`: side files an old store left
// at `output` first (SQLite would replay an old -wal into the new file), then
// the -wal the writer had to leave, if any, then the file itself.
std::string install(const std::string& temp, const std::string& output) {
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (::unlink((output + suffix).c_str()) != 0 && errno != ENOENT) {
      return "cannot remove " + output + suffix + " (" + std::strerror(errno) + ")";
    }
  }
  ::unlink((temp + "-shm").c_str());  // rebuilt by the next reader
  if (lexists(temp + "-wal") && ::rename((temp + "-wal").c_str(), (output + "-wal").c_str()) != 0) {
    return "cannot move " + temp + "-wal to " + output + "-wal (" + std::strerror(errno) + ")";
  }
  if (::rename(temp.c_str(), output.c_str()) != 0) return "cannot move " + temp + " to " + output + " (" + std::strerror(errno) + ")";
  return "";
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
  app.add_option("-o,--output", output, "Store to write (.tcdb); an existing one is replaced only with --force, and only when it is a regular file")
      ->capture_default_str();
  app.add_flag("-f,--force", force, "Overwrite the output if it exists (a regular file only)");
  app.add_flag("--debug", debug, "Set TC_DEBUG=1 in the program: the compiler logs each pass, its time and its kernels");
  app.add_flag("-q,--quiet", quiet, "No live status line and no summary");
  app.add_option("--rings", rings, "Recording rings, one per thread that records (threads beyond get their events counted as dropped)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--ring-slots", ring_slots, "Slots of 32 bytes per ring, a power of two")->capture_default_str();
  app.footer(
      "Exit status: the program's own, or 128+N when it died of signal N; 2 for bad usage, 126/127 when the program cannot run; "
      "1 when recording failed (a full disk) and the program exited 0.\n"
      "Every signal sent to tc-profile that it can catch is forwarded to the program (not SIGCHLD, SIGPIPE, SIGXFSZ, job control or "
      "tc-profile's own faults); if tc-profile is killed, the program gets SIGTERM.\n"
      "The store is written beside FILE as .FILE.tc-tmp-PID and renamed to FILE at the end.");
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
    return tc::cli::parse_error("tc-profile", app, e);
  }
  if (ours == argc) command = app.remaining();
  if (command.empty()) return fail(2, "no program given; usage: tc-profile [-o FILE] -- PROGRAM [ARGS...]");
  if ((ring_slots & (ring_slots - 1)) != 0 || ring_slots < 64) return fail(2, "--ring-slots must be a power of two, at least 64");

  // Signals first: the store's first write may already pass `ulimit -f`.
  std::vector<SavedSignal> saved;
  {
    struct sigaction forward {};
    forward.sa_sigaction = forward_signal;
    forward.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&forward.sa_mask);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    for (int sig : catchable_signals()) {
      const bool ignored_here = sig == SIGPIPE || sig == SIGXFSZ;
      if (!ignored_here && !forwards(sig)) continue;
      SavedSignal old{sig, {}};
      if (sigaction(sig, nullptr, &old.action) != 0) continue;
      // A signal tc-profile was started with ignored (nohup's SIGHUP) stays
      // ignored, in the program too, as it would be without tc-profile.
      if (!ignored_here && old.action.sa_handler == SIG_IGN && !(old.action.sa_flags & SA_SIGINFO)) continue;
      if (sigaction(sig, ignored_here ? &ignore : &forward, nullptr) == 0) saved.push_back(old);
    }
  }

  // Refuse before the program starts: an empty path, an existing output (or
  // one that is not a regular file, even with --force), an unwritable place.
  bool existed = false;
  if (std::string why = refuse_output(output, force, command[0], &existed); !why.empty()) return fail(2, why);
  TempStore temp{temp_beside(output)};
  // The writer's messages name the file it writes; the user knows the output.
  auto about_output = [&](const std::string& message) { return replace_all(message, temp.path, output); };
  auto writer = tc::store::Writer::create(temp.path, {.overwrite = false});
  if (!writer.ok()) return fail(2, about_output(writer.status().message()));

  std::string error;
  auto region = tc::trace::Region::create_shared(rings, ring_slots, &error);
  if (!region) return fail(1, "cannot create the ring memory: " + error);

  if (debug) setenv("TC_DEBUG", "1", 1);
  tc::collect::RunInfo info = tc::collect::gather_run_info(command, "tc-profile");
  info.cuda = tc::collect::cuda_probe();
  auto collector = std::make_unique<tc::collect::Collector>(*region, **writer, std::move(info));
  if (tc::Status s = collector->begin(); !s.ok()) return fail(1, about_output(s.message()));

  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) return fail(1, std::string("pipe: ") + std::strerror(errno));

  if (!quiet && isatty(STDERR_FILENO)) {
    // If tc-profile itself is killed (kill -9), this is where the store is.
    std::fprintf(stderr, "tc-profile: recording into %s; it becomes %s when the program ends\n",
                 tc::analysis::printable(temp.path).c_str(), tc::analysis::printable(output).c_str());
  }

  // All signals are blocked across fork: none reaches a handler in the child
  // before it restores its dispositions, and one that comes meanwhile is
  // forwarded once g_child is set.
  sigset_t all, before;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &before);
  const pid_t launcher = getpid();
  auto started = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    return fail(1, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    for (const SavedSignal& s : saved) sigaction(s.sig, &s.action, nullptr);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    // If tc-profile dies first (kill -9), the program is sent SIGTERM rather
    // than left running unrecorded. Checked after prctl: tc-profile may be
    // gone already.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != launcher) _exit(128 + SIGTERM);
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
  if (g_early) kill(pid, g_early);
  sigprocmask(SIG_SETMASK, &before, nullptr);
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close(exec_pipe[0]);
  bool exec_failed = got == static_cast<ssize_t>(sizeof exec_errno);

  const bool live = !quiet && isatty(STDERR_FILENO);
  auto last_status = started, last_commit = started;
  int wait_status = 0;
  tc::Status record_error;
  for (;;) {
    if (record_error.ok()) {
      auto n = collector->drain();
      auto now = std::chrono::steady_clock::now();
      if (n.ok() && now - last_commit > std::chrono::seconds(1)) {
        // What a killed tc-profile leaves is what was committed: at most a second behind.
        last_commit = now;
        if (tc::Status s = (*writer)->commit(); !s.ok()) n = s;
      }
      if (!n.ok()) {
        record_error = n.status();
        if (live) std::fprintf(stderr, "\r\033[Ktc-profile: recording stopped: %s\n", tc::analysis::printable(about_output(record_error.message())).c_str());
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
      tc::collect::CollectorStats st = collector->stats();
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
    if (tc::Status s = collector->finish(end); !s.ok()) record_error = s;
  }
  tc::collect::CollectorStats st = collector->stats();
  // Closed before it moves: SQLite's -wal and -shm belong to the name it opened.
  collector.reset();
  writer->reset();

  if (record_error.ok()) {
    if (std::string why = install(temp.path, output); !why.empty()) {
      temp.keep = true;
      return fail(exit_status != 0 ? exit_status : 1, "the store is complete but " + why + "; it is in " + temp.path);
    }
    temp.keep = true;  // it is the output now
    if (!quiet) {
      std::fprintf(stderr, "tc-profile: %s %s after %.2f s\n", tc::analysis::printable(command[0]).c_str(), how.c_str(), elapsed);
      std::fprintf(stderr, "tc-profile: wrote %s: %s events from %llu threads in %llu process%s%s\n", tc::analysis::printable(output).c_str(),
                   with_commas(st.events).c_str(), static_cast<unsigned long long>(st.threads),
                   static_cast<unsigned long long>(st.processes), st.processes == 1 ? "" : "es",
                   st.dropped ? (", " + with_commas(st.dropped) + " dropped (see the dropped table)").c_str() : "");
      if (!end.complete) std::fprintf(stderr, "tc-profile: the store is marked incomplete: the program did not exit normally\n");
      std::fprintf(stderr, "tc-profile: next: tc-analyze %s\n", tc::analysis::printable(output).c_str());
    }
    return exit_status;
  }

  // Recording failed (a full disk, `ulimit -f`): one line says what and where
  // the data is. A store that replaces nothing goes to the output, marked
  // incomplete; an existing store is not replaced by a partial one.
  if (!quiet) std::fprintf(stderr, "tc-profile: %s %s after %.2f s\n", tc::analysis::printable(command[0]).c_str(), how.c_str(), elapsed);
  const int code = exit_status != 0 ? exit_status : 1;
  if (!lexists(temp.path)) return fail(code, "recording failed: " + about_output(record_error.message()));
  temp.keep = true;
  if (existed) {
    return fail(code, "recording failed: " + record_error.message() + "; " + output + " was not replaced; what was recorded is in " + temp.path);
  }
  if (std::string why = install(temp.path, output); !why.empty()) {
    return fail(code, "recording failed: " + record_error.message() + "; what was recorded is in " + temp.path + " (" + why + ")");
  }
  return fail(code, "recording failed: " + about_output(record_error.message()) + "; " + output +
                        " holds what was recorded until then, marked incomplete");
}
