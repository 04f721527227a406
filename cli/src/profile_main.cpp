// tc-profile: runs a program with recording on and writes a .tcdb store.
//
// The rings live in a memfd this process creates and the program inherits
// (TC_PROFILE_FD), so whatever the program recorded before it crashed or was
// killed is still here to collect. This process is the collector: it drains
// the rings while the program runs, then finalizes the store, written beside
// the output under a temporary name and renamed over it at the end.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
#include "rank_output.h"
#include "tc/analysis/format.h"
#include "tc/collect/collector.h"
#include "tc/store/output.h"
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
    if (std::string kind = tc::store::not_a_regular_file(output); !kind.empty()) {
      return output + " is " + kind + "; tc-profile writes its store only to a regular file, even with --force; choose another path with -o";
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

// An injection library as installed with tc-profile (libtc_nvtx.so,
// libtc_cupti.so): PREFIX/lib beside PREFIX/bin (the build tree has the same
// layout). "" when it is not there.
std::string injection_library_path(const char* name) {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  std::filesystem::path lib = exe.parent_path().parent_path() / "lib" / name;
  struct stat st{};
  return ::stat(lib.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? lib.string() : "";
}

// The injection library tc-profile hands the program through `variable`:
// ours (`library` beside tc-profile; `*said` = "tc"), or none when the user
// set the variable already ("user: PATH", left alone, and said so), asked
// for none (`off`: "off") or ours is not installed ("off"; said when
// `say_missing`). Returns the path to set, "" for none.
std::string choose_injection(const char* variable, const char* library, const char* without, bool off, bool say_missing, bool quiet,
                             std::string* said) {
  if (const char* user = std::getenv(variable); user && *user) {
    *said = std::string("user: ") + user;
    if (!quiet) {
      std::fprintf(stderr, "tc-profile: %s is already set (%s); leaving it alone, so %s by tc\n", variable,
                   tc::analysis::printable(user).c_str(), without);
    }
    return "";
  }
  if (off) {
    *said = "off";
    return "";
  }
  std::string path = injection_library_path(library);
  *said = path.empty() ? "off" : "tc";
  if (path.empty() && say_missing && !quiet) {
    std::fprintf(stderr, "tc-profile: %s is not installed beside tc-profile (../lib); %s\n", library, without);
  }
  return path;
}

// tc's Python start-up hook as installed with tc-profile: PREFIX/lib/tc/python
// (its sitecustomize.py). "" when it is not there.
std::string python_hook_dir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  std::filesystem::path dir = exe.parent_path().parent_path() / "lib" / "tc" / "python";
  struct stat st{};
  return ::stat((dir / "sitecustomize.py").c_str(), &st) == 0 && S_ISREG(st.st_mode) ? dir.string() : "";
}

// A private directory for the frameworks' logs (TORCH_TRACE, the Python
// hook's JAX log), removed with everything in it when tc-profile ends.
struct FrameworkLogs {
  std::string dir;
  ~FrameworkLogs() {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  bool make() {
    const char* tmp = std::getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/tc-profile-XXXXXX";
    if (::mkdtemp(t.data()) == nullptr) return false;
    dir = t;
    return true;
  }
  // DIR/name, made; "" when it cannot be.
  std::string sub(const char* name) {
    if (dir.empty() && !make()) return "";
    std::string d = dir + "/" + name;
    return ::mkdir(d.c_str(), 0700) == 0 ? d : "";
  }
};

// Sleeps for `ms`, or less when the program ends first: its pidfd becomes
// readable. tc-profile used to sleep its 10 ms out after the program had gone
// (every run paid them, /bin/true's included). Without pidfds (Linux < 5.3)
// it sleeps.
void wait_for_program(int pidfd, int ms) {
  if (pidfd >= 0) {
    struct pollfd p{pidfd, POLLIN, 0};
    if (poll(&p, 1, ms) >= 0 || errno == EINTR) return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Removes the temporary store (and its side files) unless it was kept or moved.
struct TempStore {
  std::string path;
  bool keep = false;
  ~TempStore() {
    if (keep || path.empty()) return;
    tc::store::remove_store_files(path);
  }
};

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
  app.add_option("-o,--output", output,
                 "Store to write (.tcdb); an existing one is replaced only with --force, and only when it is a regular file. "
                 "Under mpirun each rank writes its own: run.tcdb becomes run.rank0.tcdb, run.rank1.tcdb, ...; %r in the path is the rank")
      ->capture_default_str();
  app.add_flag("-f,--force", force, "Overwrite the output if it exists (a regular file only)");
  app.add_flag("--debug", debug, "Set TC_DEBUG=1 in the program: the compiler logs each pass, its time and its kernels");
  app.add_flag("-q,--quiet", quiet, "No live status line and no summary");
  app.add_option("--rings", rings, "Recording rings, one per thread that records (threads beyond get their events counted as dropped)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--ring-slots", ring_slots, "Slots of 32 bytes per ring, a power of two")->capture_default_str();
  std::string step_range;
  bool no_nvtx = false;
  app.add_option("--step-range", step_range,
                 "Take the run's steps from this NVTX (or tc) range's occurrences, for a program that does not call tc::mark_step(), "
                 "e.g. --step-range train_step");
  bool no_python_hooks = false, no_framework_logs = false;
  app.add_flag("--no-python-hooks", no_python_hooks,
               "Do not put tc's Python start-up hook on the program's PYTHONPATH (by default it marks each optimizer.step() of a "
               "PyTorch program as a step, records a JAX program's compilations, cache misses, jitted calls and forced evaluations, and "
               "runs any sitecustomize it hides)");
  app.add_flag("--no-framework-logs", no_framework_logs,
               "Do not collect torch.compile's log: by default tc-profile sets TORCH_TRACE to a private directory (removed at the end) "
               "and imports its compilations, shape changes and graph breaks into the store; a TORCH_TRACE you set is used and kept. "
               "Nor the JAX log of the Python hook");
  app.add_flag("--no-nvtx", no_nvtx, "Do not capture the program's NVTX ranges and marks (by default tc-profile sets NVTX_INJECTION64_PATH to libtc_nvtx.so)");
  bool no_cupti = false;
  app.add_flag("--no-cupti", no_cupti,
               "Do not record the program's GPU kernels, copies and sets (by default tc-profile sets CUDA_INJECTION64_PATH to "
               "libtc_cupti.so, which the CUDA driver loads when the program starts CUDA: CUPTI's activity goes to the gpu_activity "
               "table, for any CUDA program; TC_CUPTI_LIBRARY names libcupti.so if it is not on the library path)");
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
  output = tc::cli::rank_output(output, tc::cli::launcher_rank());  // under mpirun: one store per rank
  if (std::string why = refuse_output(output, force, command[0], &existed); !why.empty()) return fail(2, why);
  TempStore temp{tc::store::temp_beside(output)};
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
  info.step_range = step_range;
  // NVTX and GPU activity: our injection libraries, unless the user
  // attached a tool of their own. libtc_cupti is built only with the CUDA
  // toolkit: without it there is nothing to say.
  std::string nvtx_library = choose_injection("NVTX_INJECTION64_PATH", "libtc_nvtx.so", "NVTX is not captured", no_nvtx, true,
                                              quiet, &info.nvtx);
  std::string cupti_library = choose_injection("CUDA_INJECTION64_PATH", "libtc_cupti.so", "GPU activity is not recorded", no_cupti,
                                               false, quiet, &info.cupti);
  // Frameworks: torch.compile's structured trace, into the user's TORCH_TRACE
  // when they chose one (left as it is), else into a private directory.
  FrameworkLogs framework_logs;
  std::string torch_trace;
  bool private_torch_trace = false;
  if (!no_framework_logs) {
    if (const char* user = std::getenv("TORCH_TRACE"); user && *user) {
      torch_trace = user;
    } else if (torch_trace = framework_logs.sub("torch_trace"); !torch_trace.empty()) {
      private_torch_trace = true;
    } else if (!quiet) {
      std::fprintf(stderr, "tc-profile: cannot make a directory for torch.compile's log (%s); it is not collected\n", std::strerror(errno));
    }
  }
  const std::string hook_dir = no_python_hooks ? std::string() : python_hook_dir();
  // What the hook writes about JAX (compile stages, cache misses, jitted calls, forced evaluations).
  std::string jax_log;
  if (!hook_dir.empty() && !no_framework_logs) {
    jax_log = framework_logs.sub("jax");
    if (jax_log.empty() && !quiet)
      std::fprintf(stderr, "tc-profile: cannot make a directory for the JAX log (%s); it is not collected\n", std::strerror(errno));
  }
  // PyTorch/XLA: the hook's log and PyTorch/XLA's own debug output (PT_XLA_DEBUG_LEVEL=2 into
  // PT_XLA_DEBUG_FILE), both in one private directory; a PT_XLA_DEBUG_* the user set stands (and
  // then only the hook's log is read).
  std::string xla_log;
  bool xla_debug = false;
  if (!hook_dir.empty() && !no_framework_logs) {
    xla_log = framework_logs.sub("xla");
    if (xla_log.empty() && !quiet)
      std::fprintf(stderr, "tc-profile: cannot make a directory for the PyTorch/XLA log (%s); it is not collected\n", std::strerror(errno));
    const char* level = std::getenv("PT_XLA_DEBUG_LEVEL");
    const char* file = std::getenv("PT_XLA_DEBUG_FILE");
    xla_debug = !xla_log.empty() && !(level && *level) && !(file && *file) && !std::getenv("PT_XLA_DEBUG");
  }
  std::string python_path = hook_dir;
  if (const char* pp = std::getenv("PYTHONPATH"); !hook_dir.empty() && pp && *pp) python_path += std::string(":") + pp;
  auto collector = std::make_unique<tc::collect::Collector>(*region, **writer, std::move(info));
  if (!torch_trace.empty()) collector->import_torch_trace(torch_trace);
  if (!jax_log.empty()) collector->import_jax_log(jax_log);
  if (!xla_log.empty()) collector->import_xla_log(xla_log);
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
    if (!nvtx_library.empty()) setenv("NVTX_INJECTION64_PATH", nvtx_library.c_str(), 1);
    if (!cupti_library.empty()) setenv("CUDA_INJECTION64_PATH", cupti_library.c_str(), 1);
    if (private_torch_trace) setenv("TORCH_TRACE", torch_trace.c_str(), 1);
    if (!jax_log.empty()) setenv("TC_JAX_LOG_DIR", jax_log.c_str(), 1); else unsetenv("TC_JAX_LOG_DIR");
    if (!xla_log.empty()) setenv("TC_XLA_LOG_DIR", xla_log.c_str(), 1); else unsetenv("TC_XLA_LOG_DIR");
    if (xla_debug) {
      setenv("PT_XLA_DEBUG_LEVEL", "2", 1);
      setenv("PT_XLA_DEBUG_FILE", (xla_log + "/pt_xla_debug.txt").c_str(), 1);
    }
    if (!python_path.empty()) setenv("PYTHONPATH", python_path.c_str(), 1);
    std::vector<char*> args;
    for (std::string& a : command) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    int err = errno;
    (void)!write(exec_pipe[1], &err, sizeof err);
    _exit(err == ENOENT ? 127 : 126);
  }
  g_child = pid;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // not reaped yet: a valid pid
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
  bool said_store_failed = false;
  for (;;) {
    if (record_error.ok()) {
      auto n = collector->drain();
      auto now = std::chrono::steady_clock::now();
      if (n.ok() && now - last_commit > std::chrono::seconds(1)) {
        // What a killed tc-profile leaves is what was committed: at most a second behind.
        last_commit = now;
        // A failure here is the store's (a full disk): the collector meets
        // it too, keeps draining and counting, and finish() marks the store.
        // Draining must go on: the program's threads wait for ring space as
        // long as this collector lives. (Stopping here hung tc-profile and
        // its program for good whenever a store filled up more than a second
        // into a run that still recorded.)
        if (tc::Status s = (*writer)->commit(); !s.ok() && live && !said_store_failed) {
          said_store_failed = true;
          std::fprintf(stderr, "\r\033[Ktc-profile: the store failed: %s; events are counted until the program ends\n",
                       tc::analysis::printable(about_output(s.message())).c_str());
        }
      }
      if (!n.ok()) {
        record_error = n.status();
        if (live) std::fprintf(stderr, "\r\033[Ktc-profile: recording stopped: %s\n", tc::analysis::printable(about_output(record_error.message())).c_str());
      } else if (*n < ring_slots / 16) {
        // A light trickle (a training loop's few events per step) is drained
        // every 10 ms rather than as it comes: on a 2-core machine every
        // wake-up of this process takes a core from the program's threads.
        // A busy producer (a batch of 1/16 of a ring or more) is drained at once.
        wait_for_program(pidfd, *n == 0 ? 10 : 5);
      }
    } else {
      wait_for_program(pidfd, 20);
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
  if (pidfd >= 0) close(pidfd);
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
    if (std::string why = tc::store::install(temp.path, output); !why.empty()) {
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
  if (std::string why = tc::store::install(temp.path, output); !why.empty()) {
    return fail(code, "recording failed: " + record_error.message() + "; what was recorded is in " + temp.path + " (" + why + ")");
  }
  return fail(code, "recording failed: " + about_output(record_error.message()) + "; " + output +
                        " holds what was recorded until then, marked incomplete");
}
