// Test support: run a program, capture its output, or start it and talk to it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tc::test {

inline std::string bin(const std::string& name) { return std::string(TC_BINARY_DIR) + "/bin/" + name; }

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tc-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct Exit {
  int code = -1;    // exit status when exited, else -1
  int signal = 0;   // terminating signal, else 0
  std::string out;  // stdout
  std::string err;  // stderr
  // run() with a time limit: the limit passed and the child's process group
  // was killed; `err` then ends with the process tree as it was.
  bool timed_out = false;
};

// A running child with its stdout and stderr on pipes.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env = {}) {
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      // Its own process group, so that a time limit can kill everything it
      // started (mpirun's ranks), not just it.
      setpgid(0, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      close(out[0]);
      close(err[0]);
      close(out[1]);
      close(err[1]);
      for (const auto& [k, v] : env) {
        if (v.empty()) unsetenv(k.c_str());
        else setenv(k.c_str(), v.c_str(), 1);
      }
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);  // also here, so that it holds before either side goes on
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill_all();
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
    if (err_ >= 0) close(err_);
  }
  pid_t pid() const { return pid_; }

  // Reads stdout up to and including the next newline ("" at end of file).
  std::string read_line() {
    std::string line;
    char c;
    while (read(out_, &c, 1) == 1) {
      line += c;
      if (c == '\n') break;
    }
    captured_out_ += line;
    return line;
  }

  // Reads stdout and stderr together until both close, then reaps the
  // child. With a limit (> 0 s): when it passes, the process tree is written
  // to `err`, the child's process group is killed, and what the pipes still
  // hold is read for at most 5 s more (a process that left the group may
  // keep them open).
  Exit wait(std::chrono::seconds limit = std::chrono::seconds(0)) {
    Exit e;
    e.out = captured_out_;
    using clock = std::chrono::steady_clock;
    clock::time_point deadline = limit.count() > 0 ? clock::now() + limit : clock::time_point::max();
    int fds[2] = {out_, err_};
    std::string* into[2] = {&e.out, &e.err};
    while (fds[0] >= 0 || fds[1] >= 0) {
      pollfd p[2];
      int n = 0, which[2];
      for (int i = 0; i < 2; ++i) {
        if (fds[i] >= 0) p[n] = {fds[i], POLLIN, 0}, which[n++] = i;
      }
      int wait_ms = -1;
      if (deadline != clock::time_point::max()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
        wait_ms = static_cast<int>(left < 0 ? 0 : left);
      }
      int r = poll(p, static_cast<nfds_t>(n), wait_ms);
      if (r < 0) continue;  // EINTR
      if (r == 0) {
        if (e.timed_out) break;  // the extra 5 s after the kill are over too
        e.timed_out = true;
        e.err += process_tree();
        kill_all();
        deadline = clock::now() + std::chrono::seconds(5);
        continue;
      }
      for (int k = 0; k < n; ++k) {
        if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        ssize_t got = read(p[k].fd, buf, sizeof buf);
        if (got > 0) into[which[k]]->append(buf, static_cast<size_t>(got));
        else if (got == 0 || errno != EINTR) fds[which[k]] = -1;
      }
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
    return e;
  }

 private:
  // The child and everything it started (its process group; the child
  // itself too, should the group not have been made).
  void kill_all() const {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
  }
  // `ps` of every process, as a forest with what each waits in.
  static std::string process_tree() {
    std::string s = "\n[test support: the time limit passed; the processes then:]\n";
    if (FILE* f = popen("ps -eo pid,ppid,pgid,stat,wchan:24,etime,args --forest 2>&1", "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      pclose(f);
    }
    return s;
  }
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool reaped_ = false;
  std::string captured_out_;
};

// The limit for a job under mpirun in the tests: a few seconds quiet, under a
// minute under AddressSanitizer on a loaded machine; the tests' ctest limit
// is 300 s.
inline constexpr std::chrono::seconds kMpirunLimit{150};

// Runs argv to completion, reading its stdout and stderr together. With a
// limit, a child that outlives it is killed with everything it started, and
// the Exit says so (timed_out, the process tree at the end of `err`): a test
// of a program that can hang (mpirun) fails with what hung, not a ctest
// timeout that says nothing.
inline Exit run(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env = {},
                std::chrono::seconds limit = std::chrono::seconds(0)) {
  Child c(argv, env);
  return c.wait(limit);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace tc::test
