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
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cli_support.h"
#include "rank_output.h"
#include "tc/analysis/format.h"
#include "tc/collect/collector.h"
#include "tc/import/frameworks.h"
#include "tc/import/import.h"
#include "tc/store/output.h"
#include "tc/store/reader.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"
#include "tc/trace/python_command.h"
#include "tc/trace/region.h"

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_early = 0;  // a signal that came before the program was started
volatile sig_atomic_t g_reaped = 0;  // the program has ended and been reaped
volatile sig_atomic_t g_stopped_by = 0;  // SIGINT, SIGTERM or SIGHUP after the program ended

// The signals that end tc-profile once the program has ended (the rest are
// ignored then: there is no one to forward them to).
bool stops_after_the_program(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

// Whether the program has ended: reaped, or a zombie not reaped yet (a
// signal to it would be lost; waitid's WNOWAIT leaves it for the main loop).
bool program_ended() {
  if (g_reaped) return true;
  if (g_child <= 0) return false;
  siginfo_t si{};
  if (waitid(P_PID, static_cast<id_t>(g_child), &si, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return si.si_pid != 0;
}

// Forward signals that someone sent to tc-profile (kill, a job runner). A
// terminal's Ctrl-C (or Ctrl-\, a hangup, a resize) already reaches the whole
// foreground group, the program included, so forwarding it too would deliver
// it twice. Once the program has ended, SIGINT, SIGTERM and SIGHUP (from
// anyone, the terminal too) stop the frameworks' import instead: tc-profile
// then writes what it has and ends by that signal.
void forward_signal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;  // the main loop reads errno after waitpid
  if (program_ended()) {
    if (stops_after_the_program(sig)) {
      g_stopped_by = sig;
      tc::import::request_stop();
    }
  } else if (info == nullptr || info->si_code <= 0) {  // not kernel-generated (the terminal's)
    if (g_child > 0) kill(g_child, sig);
    else g_early = sig;
  }
  errno = saved_errno;
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

// "; 40 steps; imported from jax: 12 compilations, 11 explicit evaluations":
// what the store holds besides tc's own events ("" when nothing).
std::string imported(const std::string& store) {
  using tc::analysis::counted;
  auto r = tc::store::Reader::open(store);
  if (!r.ok()) return "";
  std::string out;
  if (auto steps = r->scalar_i64("SELECT count(*) FROM steps"); steps.ok() && *steps > 0) out += "; " + counted(*steps, "step", "steps");
  if (!r->has(tc::store::schema::framework_imports, "framework")) return out;
  for (auto q = r->query("SELECT framework, sum(compilations), sum(explicit_evaluations) FROM framework_imports GROUP BY framework ORDER BY min(id)");
       q.next();) {
    out += "; imported from " + tc::analysis::printable(q.text(0)) + ": " + counted(q.i64(1), "compilation", "compilations");
    if (q.i64(2) > 0) out += ", " + counted(q.i64(2), "explicit evaluation", "explicit evaluations");
  }
  return out;
}

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
// hook's JAX log), removed with everything in it when tc-profile ends. Its
// name holds tc-profile's pid: a tc-profile killed by SIGKILL cannot remove
// its own, so the next one removes those of ended tc-profiles (sweep()).
struct FrameworkLogs {
  std::string dir;
  ~FrameworkLogs() {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  bool make() {
    const char* tmp = std::getenv("TMPDIR");
    const std::string parent = tmp && *tmp ? tmp : "/tmp";
    sweep(parent);
    std::string t = parent + "/tc-profile-" + std::to_string(::getpid()) + "-XXXXXX";
    if (::mkdtemp(t.data()) == nullptr) return false;
    dir = t;
    return true;
  }
  // Removes PARENT/tc-profile-PID-XXXXXX directories of this user whose
  // tc-profile has ended (no process PID). A reused pid keeps its directory
  // (for a later sweep); remove_all removes links, never what they name.
  static void sweep(const std::string& parent) {
    std::error_code ec;
    std::filesystem::directory_iterator it(parent, ec), end;
    for (int seen = 0; !ec && it != end && seen < 4096; it.increment(ec), ++seen) {
      const std::string name = it->path().filename().string();
      if (name.rfind("tc-profile-", 0) != 0) continue;
      const size_t dash = name.find('-', 11);
      if (dash == std::string::npos || dash == 11 || name.size() != dash + 7) continue;
      const std::string pid_text = name.substr(11, dash - 11);
      if (pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
      struct stat st{};
      if (pid <= 0 || ::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
      if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask): kept
      std::error_code rm;
      std::filesystem::remove_all(it->path(), rm);
    }
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

// ---------------------------------------------------------------- options

struct Options {
  std::string output = "run.tcdb";
  bool force = false, debug = false, quiet = false;
  uint32_t rings = 64;
  uint64_t ring_slots = 1u << 16;
  std::string step_range;
  bool no_nvtx = false, no_cupti = false, no_python_hooks = false, no_framework_logs = false;
  std::vector<std::string> command;  // the program and its arguments
};

// --no-framework-logs' help: what each framework of the table gives.
std::string framework_logs_help() {
  std::string help =
      "Do not collect the frameworks' logs. By default tc-profile gives each a private directory (removed at the end) and "
      "imports it into the store when the program ends:";
  for (const tc::import::Framework& f : tc::import::frameworks()) {
    help += std::string(" ") + f.title + ": " + f.imports + " (" + f.variable;
    if (f.hook) help += ", written by the Python hook";
    if (f.user_dir) help += std::string("; a ") + f.variable + " you set is used and kept";
    help += std::string("; ") + f.docs + ").";
  }
  return help;
}

// Parses tc-profile's own arguments; the exit status when it must stop here (--help, bad usage).
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{
      "Run a training program with tc's profiler on and write everything it records to a store.\n"
      "Then read the store with `tc-analyze FILE` (report and fixes) or `tc-viewer FILE` (timeline).\n\n"
      "  tc-profile -o run.tcdb -- ./train --batch 32\n\n"
      "Everything after -- (or after the first word that is not an option here) is the program and its arguments.\n",
      "tc-profile"};
  app.add_option("-o,--output", o.output,
                 "Store to write (.tcdb); an existing one is replaced only with --force, and only when it is a regular file. "
                 "Under mpirun, srun or torchrun each rank writes its own: run.tcdb becomes run.rank0.tcdb, run.rank1.tcdb, ...; "
                 "one tc-profile over a whole job (-- torchrun ...) writes the same, divided by each process's rank when the job ends; "
                 "%r in the path is the rank")
      ->capture_default_str();
  app.add_flag("-f,--force", o.force, "Overwrite the output if it exists (a regular file only)");
  app.add_flag("--debug", o.debug, "Set TC_DEBUG=1 in the program: the compiler logs each pass, its time and its kernels");
  app.add_flag("-q,--quiet", o.quiet, "No live status line and no summary");
  app.add_option("--rings", o.rings, "Recording rings, one per thread that records (threads beyond get their events counted as dropped)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--ring-slots", o.ring_slots, "Slots of 32 bytes per ring, a power of two")->capture_default_str();
  app.add_option("--step-range", o.step_range,
                 "Take the run's steps from this NVTX (or tc) range's occurrences, for a program that does not call tc::mark_step(), "
                 "e.g. --step-range train_step");
  app.add_flag("--no-python-hooks", o.no_python_hooks,
               "Do not put tc's Python start-up hook on the program's PYTHONPATH (by default it marks each optimizer.step() of a "
               "PyTorch program as a step, records a JAX program's compilations, cache misses, jitted calls and forced evaluations, and "
               "runs any sitecustomize it hides)");
  app.add_flag("--no-framework-logs", o.no_framework_logs, framework_logs_help());
  app.add_flag("--no-nvtx", o.no_nvtx, "Do not capture the program's NVTX ranges and marks (by default tc-profile sets NVTX_INJECTION64_PATH to libtc_nvtx.so)");
  app.add_flag("--no-cupti", o.no_cupti,
               "Do not record the program's GPU kernels, copies and sets (by default tc-profile sets CUDA_INJECTION64_PATH to "
               "libtc_cupti.so, which the CUDA driver loads when the program starts CUDA: CUPTI's activity goes to the gpu_activity "
               "table, for any CUDA program; TC_CUPTI_LIBRARY names libcupti.so if it is not on the library path)");
  app.footer(
      "Exit status: the program's own, or 128+N when it died of signal N; 2 for bad usage, 126/127 when the program cannot run; "
      "1 when recording failed (a full disk) or another process wrote the output meanwhile (it is not replaced without --force), and the "
      "program exited 0.\n"
      "Every signal sent to tc-profile that it can catch is forwarded to the program (not SIGCHLD, SIGPIPE, SIGXFSZ, job control or "
      "tc-profile's own faults); if tc-profile is killed, the program gets SIGTERM. Once the program has ended, SIGINT, SIGTERM or SIGHUP "
      "stops the import of the frameworks' logs: the store keeps what was read, marked incomplete, and tc-profile ends by that signal.\n"
      "The store is written beside FILE as .FILE.tc-tmp-PID and renamed to FILE at the end.");
  // The program's own arguments are never ours: split at "--", or at the first
  // word that is not one of our options.
  int ours = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      ours = i;
      for (int j = i + 1; j < argc; ++j) o.command.emplace_back(argv[j]);
      break;
    }
  }
  if (ours == argc) app.prefix_command();
  try {
    app.parse(ours, argv);
  } catch (const CLI::ParseError& e) {
    return tc::cli::parse_error("tc-profile", app, e);
  }
  if (ours == argc) o.command = app.remaining();
  if (o.command.empty()) return fail(2, "no program given; usage: tc-profile [-o FILE] -- PROGRAM [ARGS...]");
  if ((o.ring_slots & (o.ring_slots - 1)) != 0 || o.ring_slots < 64) return fail(2, "--ring-slots must be a power of two, at least 64");
  return std::nullopt;
}

// Every signal tc-profile forwards is caught from here on (SIGPIPE and
// SIGXFSZ are ignored); returns the dispositions it found, for the program.
std::vector<SavedSignal> forward_signals() {
  std::vector<SavedSignal> saved;
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
  return saved;
}

// ---------------------------------------------------------------- environment

// What the program's environment gets beyond tc-profile's own: each variable
// set, or unset (nullopt), in the program only.
struct ProgramEnv {
  std::vector<std::pair<std::string, std::optional<std::string>>> vars;
  void set(std::string name, std::string value) { vars.emplace_back(std::move(name), std::move(value)); }
  void unset(std::string name) { vars.emplace_back(std::move(name), std::nullopt); }
  void apply() const {
    for (const auto& [name, value] : vars) {
      if (value) setenv(name.c_str(), value->c_str(), 1); else unsetenv(name.c_str());
    }
  }
};

bool set_nonempty(const char* variable) {
  const char* v = std::getenv(variable);
  return v && *v;
}

// A framework's log directory for this run (tc/import/frameworks.h): the
// user's (a variable they set, for a framework that allows it), or one made
// in the private directory, or none (said unless quiet). Sets the program's
// environment to match.
std::string framework_log(const tc::import::Framework& f, bool collect, bool quiet, FrameworkLogs& logs, ProgramEnv& env) {
  if (collect && f.user_dir && set_nonempty(f.variable)) return std::getenv(f.variable);  // used and kept as it is
  std::string dir = collect ? logs.sub(f.subdir) : std::string();
  if (collect && dir.empty() && !quiet)
    std::fprintf(stderr, "tc-profile: cannot make a directory for %s (%s); it is not collected\n", f.log, std::strerror(errno));
  if (dir.empty()) {
    if (!f.user_dir) env.unset(f.variable);  // the hook's switch: off
    return dir;
  }
  env.set(f.variable, dir);
  // Its own debug output into the directory, unless the user asked for theirs.
  if (std::none_of(f.debug_unless.begin(), f.debug_unless.end(), set_nonempty)) {
    for (std::string_view kv : f.debug_env) {
      const size_t eq = kv.find('=');
      env.set(std::string(kv.substr(0, eq)), replace_all(std::string(kv.substr(eq + 1)), "{dir}", dir));
    }
  }
  return dir;
}

using FrameworkImports = std::vector<std::pair<const tc::import::Framework*, std::string>>;  // framework, log directory

// NVTX and GPU activity (our injection libraries, unless the user attached a
// tool of their own), the frameworks' logs (`imports`: the collector imports
// them at the end) and tc's Python hook: what the program gets, and what the
// run row says about it.
ProgramEnv program_environment(const Options& o, tc::collect::RunInfo& info, FrameworkLogs& logs, FrameworkImports& imports) {
  ProgramEnv env;
  // libtc_cupti is built only with the CUDA toolkit: without it there is nothing to say.
  std::string nvtx_library = choose_injection("NVTX_INJECTION64_PATH", "libtc_nvtx.so", "NVTX is not captured", o.no_nvtx, true,
                                              o.quiet, &info.nvtx);
  std::string cupti_library = choose_injection("CUDA_INJECTION64_PATH", "libtc_cupti.so", "GPU activity is not recorded", o.no_cupti,
                                               false, o.quiet, &info.cupti);
  if (!nvtx_library.empty()) env.set("NVTX_INJECTION64_PATH", nvtx_library);
  if (!cupti_library.empty()) env.set("CUDA_INJECTION64_PATH", cupti_library);
  const std::string hook_dir = o.no_python_hooks ? std::string() : python_hook_dir();
  for (const tc::import::Framework& f : tc::import::frameworks()) {
    const bool collect = !o.no_framework_logs && (!f.hook || !hook_dir.empty());
    if (std::string dir = framework_log(f, collect, o.quiet, logs, env); !dir.empty()) imports.emplace_back(&f, dir);
  }
  if (const char flag = hook_dir.empty() ? 0 : tc::trace::python_flag_without_hook(o.command); flag && !o.quiet) {
    std::fprintf(stderr, "tc-profile: %s, so tc's Python hook does not load: no optimizer steps and no JAX or PyTorch/XLA "
                 "log; drop -%c (or take the steps from an NVTX range with --step-range NAME)\n",
                 tc::trace::python_flag_words(flag).c_str(), flag);
  }
  std::string python_path = hook_dir;
  if (const char* pp = std::getenv("PYTHONPATH"); !hook_dir.empty() && pp && *pp) python_path += std::string(":") + pp;
  if (!python_path.empty()) env.set("PYTHONPATH", python_path);
  return env;
}

// ---------------------------------------------------------------- run

// One run of the program under the collector: the store, the rings, the
// program, and how it ended.
struct Session {
  Options o;
  std::vector<SavedSignal> saved;
  bool existed = false;  // the output was there before (replaced only by a complete store)
  TempStore temp;
  std::unique_ptr<tc::store::Writer> writer;
  std::unique_ptr<tc::trace::Region> region;
  std::unique_ptr<tc::collect::Collector> collector;
  FrameworkLogs framework_logs;
  std::string attach_report;  // TC_PROFILE_REPORT: where a process that cannot attach names itself ("": nowhere)
  ProgramEnv env;
  pid_t pid = -1;
  int pidfd = -1;
  bool exec_failed = false;
  int exec_errno = 0;
  int wait_status = 0;
  tc::Status record_error;
  std::chrono::steady_clock::time_point started, ended;
  uint64_t end_ts = 0;  // CLOCK_MONOTONIC ns when the program ended (the run row's end)

  // The writer's messages name the file it writes; the user knows the output.
  std::string about_output(const std::string& message) const { return replace_all(message, temp.path, o.output); }

  // Refuses before the program starts (an empty path, an existing output, or
  // one that is not a regular file even with --force, an unwritable place),
  // then makes the store, the rings and the collector.
  std::optional<int> prepare() {
    o.output = tc::cli::rank_output(o.output, tc::cli::launcher_rank());  // under mpirun: one store per rank
    if (std::string why = refuse_output(o.output, o.force, o.command[0], &existed); !why.empty()) return fail(2, why);
    temp.path = tc::store::temp_beside(o.output);
    auto created = tc::store::Writer::create(temp.path, {.overwrite = false});
    if (!created.ok()) return fail(2, about_output(created.status().message()));
    writer = std::move(*created);
    std::string error;
    region = tc::trace::Region::create_shared(o.rings, o.ring_slots, &error);
    if (!region) return fail(1, "cannot create the ring memory: " + error);
    if (o.debug) setenv("TC_DEBUG", "1", 1);
    tc::collect::RunInfo info = tc::collect::gather_run_info(o.command, "tc-profile");
    info.cuda = tc::collect::cuda_probe();
    info.step_range = o.step_range;
    FrameworkImports imports;
    env = program_environment(o, info, framework_logs, imports);
    collector = std::make_unique<tc::collect::Collector>(*region, *writer, std::move(info));
    for (const auto& [f, dir] : imports) collector->import_logs(*f, dir);
    make_attach_report();
    if (tc::Status s = collector->begin(); !s.ok()) return fail(1, about_output(s.message()));
    return std::nullopt;
  }

  // The file in the private directory where a process of the tree that
  // cannot attach to the rings names itself (trace/region.h); finish() reads it.
  void make_attach_report() {
    const std::string dir = framework_logs.sub("attach");
    if (dir.empty()) return;
    const std::string path = dir + "/failures";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ::close(fd);
    attach_report = path;
    collector->attach_reports(path);
  }

  // Starts the program with the rings and `env`; false (and the exit status
  // in *code) when tc-profile cannot even try.
  bool start(int* code) {
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
      *code = fail(1, std::string("pipe: ") + std::strerror(errno));
      return false;
    }
    if (!o.quiet && isatty(STDERR_FILENO)) {
      // If tc-profile itself is killed (kill -9), this is where the store is.
      std::fprintf(stderr, "tc-profile: recording into %s; it becomes %s when the program ends\n",
                   tc::analysis::printable(temp.path).c_str(), tc::analysis::printable(o.output).c_str());
    }
    // All signals are blocked across fork: none reaches a handler in the child
    // before it restores its dispositions, and one that comes meanwhile is
    // forwarded once g_child is set.
    sigset_t all, before;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &before);
    const pid_t launcher = getpid();
    started = std::chrono::steady_clock::now();
    pid = fork();
    if (pid < 0) {
      sigprocmask(SIG_SETMASK, &before, nullptr);
      *code = fail(1, std::string("fork: ") + std::strerror(errno));
      return false;
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
      // A launcher in between may close or reuse the descriptor; the program
      // then opens ours through /proc and checks the key (trace/region.h).
      setenv("TC_PROFILE_FD", std::to_string(region->fd()).c_str(), 1);
      setenv("TC_PROFILE_PID", std::to_string(launcher).c_str(), 1);
      setenv("TC_PROFILE_KEY", region->key_text().c_str(), 1);
      if (!attach_report.empty()) setenv("TC_PROFILE_REPORT", attach_report.c_str(), 1); else unsetenv("TC_PROFILE_REPORT");
      unsetenv("TC_PROFILE");  // one collector: ours
      env.apply();
      std::vector<char*> args;
      for (std::string& a : o.command) args.push_back(a.data());
      args.push_back(nullptr);
      execvp(args[0], args.data());
      int err = errno;
      (void)!write(exec_pipe[1], &err, sizeof err);
      _exit(err == ENOENT ? 127 : 126);
    }
    g_child = pid;
    pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // not reaped yet: a valid pid
    if (g_early) kill(pid, g_early);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    close(exec_pipe[1]);
    ssize_t got;
    do {
      got = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
    } while (got < 0 && errno == EINTR);
    close(exec_pipe[0]);
    exec_failed = got == static_cast<ssize_t>(sizeof exec_errno);
    return true;
  }

  // Drains the rings until the program ends, with the live status line.
  void collect() {
    const bool live = !o.quiet && isatty(STDERR_FILENO);
    auto last_status = started, last_commit = started;
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
          if (tc::Status s = writer->commit(); !s.ok() && live && !said_store_failed) {
            said_store_failed = true;
            std::fprintf(stderr, "\r\033[Ktc-profile: the store failed: %s; events are counted until the program ends\n",
                         tc::analysis::printable(about_output(s.message())).c_str());
          }
        }
        if (!n.ok()) {
          record_error = n.status();
          if (live) std::fprintf(stderr, "\r\033[Ktc-profile: recording stopped: %s\n", tc::analysis::printable(about_output(record_error.message())).c_str());
        } else if (*n < o.ring_slots / 16) {
          // A light trickle (a training loop's few events per step) is drained
          // every 10 ms rather than as it comes: on a 2-core machine every
          // wake-up of this process takes a core from the program's threads.
          // A busy producer (a batch of 1/16 of a ring or more) is drained at once.
          wait_for_program(pidfd, *n == 0 ? 10 : 5);
        }
      } else {
        wait_for_program(pidfd, 20);
      }
      // The run ends when the program does, not after the imports: the
      // clocks are read before the waitpid that finds it gone.
      auto now = std::chrono::steady_clock::now();
      const uint64_t now_ts = tc::trace::monotonic_ns();
      pid_t r = waitpid(pid, &wait_status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) {
        if (r != pid) wait_status = 0;
        g_reaped = 1;
        ended = now;
        end_ts = now_ts;
        break;
      }
      if (live && now - last_status > std::chrono::milliseconds(250)) {
        last_status = now;
        print_status(now);
      }
    }
    if (pidfd >= 0) close(pidfd);
    if (live) std::fprintf(stderr, "\r\033[K");
  }

  void print_status(std::chrono::steady_clock::time_point now) const {
    tc::collect::CollectorStats st = collector->stats();
    std::string compile;
    if (st.steps || st.compilations) {
      compile = " · step " + with_commas(st.steps) + " · " + with_commas(st.compilations) + " compilations (" + with_commas(st.recompilations) +
                " re) · peak " + tc::analysis::format_bytes(st.peak_live_bytes);
    }
    std::fprintf(stderr, "\r\033[K[tc-profile] %.1f s%s · %s events", std::chrono::duration<double>(now - started).count(), compile.c_str(),
                 with_commas(st.events).c_str());
  }

  // How the program ended: the run row's end, tc-profile's exit status and a phrase.
  tc::collect::RunEnd program_end(int* exit_status, std::string* how) const {
    tc::collect::RunEnd end;
    if (exec_failed) {
      end.exit_code = exec_errno == ENOENT ? 127 : 126;
      *exit_status = *end.exit_code;
      *how = "could not start: " + o.command[0] + ": " + std::strerror(exec_errno);
    } else if (WIFSIGNALED(wait_status)) {
      int sig = WTERMSIG(wait_status);
      end.exit_signal = sig;
      *exit_status = 128 + sig;
      *how = std::string("was killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
    } else {
      end.exit_code = WEXITSTATUS(wait_status);
      end.complete = true;
      *exit_status = *end.exit_code;
      *how = "exited with status " + std::to_string(*exit_status);
    }
    return end;
  }

  // Finishes the store and puts it in place; tc-profile's exit status.
  int finish() {
    const double elapsed = std::chrono::duration<double>(ended - started).count();
    int exit_status = 0;
    std::string how;
    tc::collect::RunEnd end = program_end(&exit_status, &how);
    end.end_ts = end_ts;
    tc::collect::CollectorStats st;
    try {
      if (record_error.ok()) {
        if (tc::Status s = collector->finish(end); !s.ok()) record_error = s;
      }
      st = collector->stats();
    } catch (const std::exception& e) {
      record_error = failure("finishing the store", e);
    }
    const auto places = collector ? collector->process_places() : std::map<int64_t, tc::trace::launcher::Place>{};
    // Closed before it moves: SQLite's -wal and -shm belong to the name it opened.
    collector.reset();
    writer.reset();
    say_import_cut(st.import_cut);
    const std::string& output = o.output;
    if (record_error.ok()) {
      if (std::optional<int> code = install_rank_stores(places, exit_status)) {
        if (!o.quiet) {
          std::fprintf(stderr, "tc-profile: %s %s after %.2f s\n", tc::analysis::printable(o.command[0]).c_str(), how.c_str(), elapsed);
          if (!end.complete) std::fprintf(stderr, "tc-profile: the stores are marked incomplete: the program did not exit normally\n");
        }
        return *code;
      }
      if (std::string why = tc::store::install(temp.path, output, o.force); !why.empty()) {
        temp.keep = true;
        return fail(exit_status != 0 ? exit_status : 1, "the store is complete but " + why + "; it is in " + temp.path);
      }
      temp.keep = true;  // it is the output now
      if (!o.quiet) {
        std::fprintf(stderr, "tc-profile: %s %s after %.2f s\n", tc::analysis::printable(o.command[0]).c_str(), how.c_str(), elapsed);
        std::fprintf(stderr, "tc-profile: wrote %s: %s tc events from %llu thread%s in %llu process%s%s%s\n",
                     tc::analysis::printable(output).c_str(), with_commas(st.events).c_str(), static_cast<unsigned long long>(st.threads),
                     st.threads == 1 ? "" : "s", static_cast<unsigned long long>(st.processes), st.processes == 1 ? "" : "es",
                     st.dropped ? (", " + with_commas(st.dropped) + " dropped (see the dropped table)").c_str() : "", imported(output).c_str());
        if (!end.complete) std::fprintf(stderr, "tc-profile: the store is marked incomplete: the program did not exit normally\n");
        std::fprintf(stderr, "tc-profile: next: tc-analyze %s\n", tc::analysis::printable(output).c_str());
      }
      return exit_status;
    }
    if (!o.quiet) std::fprintf(stderr, "tc-profile: %s %s after %.2f s\n", tc::analysis::printable(o.command[0]).c_str(), how.c_str(), elapsed);
    return recording_failed(exit_status != 0 ? exit_status : 1);
  }

  // One tc-profile over a whole job (-- torchrun ..., -- mpirun ...): a store
  // per rank, run.rank0.tcdb ..., as each rank's own tc-profile writes them
  // (collect::split_by_rank). nullopt when the processes named no ranks, or
  // when splitting failed (then the one store holds every rank, and a line
  // says why); else tc-profile's exit status.
  static tc::cli::LauncherRank rank_place(int rank, int world) {
    tc::cli::LauncherRank place;
    place.rank = rank;
    place.size = world;
    return place;
  }

  std::optional<int> install_rank_stores(const std::map<int64_t, tc::trace::launcher::Place>& places, int exit_status) {
    std::map<int, std::pair<std::string, std::string>> paths;  // rank -> temp, output
    int world = 0;
    for (const auto& [upid, place] : places) world = std::max(world, place.size);
    auto split = tc::collect::split_by_rank(temp.path, places, [&](int rank) {
      const std::string out = tc::cli::rank_output(o.output, rank_place(rank, world));
      paths[rank] = {tc::store::temp_beside(out), out};
      return paths[rank].first;
    });
    if (!split.ok()) {
      std::fprintf(stderr, "tc-profile: could not write a store per rank (%s); %s holds every rank\n",
                   tc::analysis::printable(split.status().message()).c_str(), tc::analysis::printable(o.output).c_str());
      return std::nullopt;
    }
    if (split->empty()) return std::nullopt;
    std::string failed;
    for (const tc::collect::RankStore& r : *split) {
      const std::string& out = paths[r.rank].second;
      if (std::string why = tc::store::install(r.path, out, o.force); !why.empty()) {
        failed += "; rank " + std::to_string(r.rank) + "'s store is complete but " + why + "; it is in " + r.path;
      } else if (!o.quiet) {
        std::fprintf(stderr, "tc-profile: wrote %s: rank %d%s\n", tc::analysis::printable(out).c_str(), r.rank, imported(out).c_str());
      }
    }
    if (!failed.empty()) return fail(exit_status != 0 ? exit_status : 1, failed.substr(2));
    if (!o.quiet) {
      std::string pattern = tc::cli::rank_output(o.output, rank_place(0, world));
      if (const size_t at = pattern.rfind(".rank0"); at != std::string::npos && o.output.find("%r") == std::string::npos) pattern.replace(at, 6, ".rank*");
      std::fprintf(stderr, "tc-profile: one store per rank of the job's %d (processes of no rank, such as torchrun's agent, are in rank %d's); next: tc-analyze %s\n",
                   world, split->front().rank, tc::analysis::printable(pattern).c_str());
    }
    return exit_status;
  }

  // An exception out of tc's own code (std::bad_alloc) while `doing`: the
  // store keeps what was committed and is marked incomplete by its run row.
  static tc::Status failure(const char* doing, const std::exception& e) {
    const bool oom = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    return {tc::StatusCode::kInternal, std::string("tc-profile ") + (oom ? "ran out of memory" : "failed (" + std::string(e.what()) + ")") +
                                           " while " + doing};
  }

  // One line for an import that was cut: by a SIGINT, SIGTERM or SIGHUP
  // after the program ended, or by an exception (`why`, "" when none).
  void say_import_cut(const std::string& why) const {
    if (const int sig = g_stopped_by) {
      const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
      std::fprintf(stderr, "tc-profile: %s after the program ended: %s; tc-profile ends by the signal\n", name,
                   why.empty() ? "the store is written"
                               : "the import of the frameworks' logs stopped there, the store keeps what it read and is marked incomplete");
    } else if (!why.empty()) {
      std::fprintf(stderr, "tc-profile: %s; the store is marked incomplete\n", tc::analysis::printable(why).c_str());
    }
  }

  // Recording failed (a full disk, `ulimit -f`): one line says what and where
  // the data is. A store that replaces nothing goes to the output, marked
  // incomplete; an existing store is not replaced by a partial one.
  int recording_failed(int code) {
    const std::string& output = o.output;
    if (!lexists(temp.path)) return fail(code, "recording failed: " + about_output(record_error.message()));
    temp.keep = true;
    if (existed) {
      return fail(code, "recording failed: " + record_error.message() + "; " + output + " was not replaced; what was recorded is in " + temp.path);
    }
    if (std::string why = tc::store::install(temp.path, output, o.force); !why.empty()) {
      return fail(code, "recording failed: " + record_error.message() + "; what was recorded is in " + temp.path + " (" + why + ")");
    }
    return fail(code, "recording failed: " + about_output(record_error.message()) + "; " + output +
                          " holds what was recorded until then, marked incomplete");
  }
};

}  // namespace

namespace {

// One run; its temporary files (the store unless it was kept, the frameworks'
// private directory) are gone when it returns, on every path: an exception
// of tc's own (std::bad_alloc) is caught here, not left to std::terminate.
int profile(int argc, char** argv) {
  Session run;
  try {
    if (std::optional<int> code = parse_options(argc, argv, run.o)) return *code;
    // Signals first: the store's first write may already pass `ulimit -f`.
    run.saved = forward_signals();
    if (std::optional<int> code = run.prepare()) return *code;
    if (int code = 0; !run.start(&code)) return code;
  } catch (const std::exception& e) {
    return fail(1, Session::failure("starting", e).message());
  }
  try {
    run.collect();
  } catch (const std::exception& e) {
    // The program is sent SIGTERM when tc-profile exits (PR_SET_PDEATHSIG);
    // what was committed is kept as after a failed recording.
    run.record_error = Session::failure("recording", e);
    run.collector.reset();
    run.writer.reset();
    return run.recording_failed(1);
  }
  return run.finish();
}

}  // namespace

int main(int argc, char** argv) {
  int code = 1;
  try {
    code = profile(argc, argv);
  } catch (...) {
    // Out of memory even for the message: the files are gone already (unwound).
    static const char kLine[] = "tc-profile: ran out of memory while ending; the store was not kept\n";
    (void)!write(STDERR_FILENO, kLine, sizeof kLine - 1);
  }
  if (const int sig = g_stopped_by) {
    // Ends the way the signal asked, now that the store is written: the
    // parent (a shell, a job runner) sees it (a shell says 128+N).
    std::fflush(stderr);
    signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    raise(sig);
    return 128 + sig;
  }
  return code;
}
