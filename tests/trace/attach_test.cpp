// How a process finds its launcher's rings (tracker #29, item 1): the
// inherited descriptor when it is still the run's, else the launcher's
// /proc/PID/fd/N, each accepted only when it is a sealed memfd of this user
// whose header holds TC_PROFILE_KEY. Everything else is refused with a reason.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tc/trace/region.h"

namespace tr = tc::trace;

namespace {

// Sets the launcher's variables for one test and puts them back after.
class LauncherEnv {
 public:
  LauncherEnv(int fd, pid_t pid, const std::string& key) {
    set("TC_PROFILE_FD", std::to_string(fd));
    set("TC_PROFILE_PID", std::to_string(pid));
    set("TC_PROFILE_KEY", key);
  }
  ~LauncherEnv() {
    for (auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1); else unsetenv(name.c_str());
    }
  }
  void set(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value.empty()) unsetenv(name.c_str()); else setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A descriptor number that is free in this process.
int free_fd() {
  int fd = dup(0);
  close(fd);
  return fd;
}

// Why attach_from_environment refuses these variables ("" when it does not).
std::string refused(int fd, pid_t pid, const std::string& key, bool with_pid = true) {
  LauncherEnv env(fd, pid, key);
  if (!with_pid) env.set("TC_PROFILE_PID", "");
  std::string err;
  return tr::Region::attach_from_environment(&err) ? "" : err;
}

std::unique_ptr<tr::Region> a_run() {
  std::string err;
  auto run = tr::Region::create_shared(2, 128, &err);
  EXPECT_TRUE(run) << err;
  return run;
}

TEST(Attach, TheInheritedDescriptorOfTheRunIsUsed) {
  std::string err;
  auto run = tr::Region::create_shared(2, 128, &err);
  ASSERT_TRUE(run) << err;
  ASSERT_EQ(run->key_text().size(), 32u);
  LauncherEnv env(run->fd(), getpid(), run->key_text());
  auto got = tr::Region::attach_from_environment(&err);
  ASSERT_TRUE(got) << err;
  run->ring(1).write.store(5);
  EXPECT_EQ(got->ring(1).write.load(), 5u);
}

TEST(Attach, AClosedDescriptorIsFoundThroughTheLauncher) {
  // The launcher (here this process) holds the memfd at `held`; the number
  // the child was given names nothing in the child.
  std::string err;
  auto run = tr::Region::create_shared(2, 128, &err);
  ASSERT_TRUE(run) << err;
  pid_t child = fork();
  if (child == 0) {
    int n = run->fd();
    close(n);  // what close_fds=True does
    setenv("TC_PROFILE_FD", std::to_string(n).c_str(), 1);
    setenv("TC_PROFILE_PID", std::to_string(getppid()).c_str(), 1);
    setenv("TC_PROFILE_KEY", run->key_text().c_str(), 1);
    auto got = tr::Region::attach_from_environment(&err);
    if (!got) {
      std::fprintf(stderr, "%s\n", err.c_str());
      _exit(1);
    }
    got->ring(0).write.store(9);
    _exit(got->fd() >= 0 ? 0 : 2);  // owned: opened through /proc
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(run->ring(0).write.load(), 9u) << "the child wrote into the run's rings";
}

TEST(Attach, ADescriptorNumberNowNamingAPipeIsNeverUsed) {
  // Python's subprocess reused the number for a pipe: "Illegal seek" before.
  auto run = a_run();
  ASSERT_TRUE(run);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const std::string err = refused(p[0], getpid(), run->key_text());  // /proc/self/fd/N is the pipe too
  EXPECT_NE(err.find("names a pipe"), std::string::npos) << err;
  EXPECT_EQ(err.find("Illegal seek"), std::string::npos) << err;
  close(p[0]);
  close(p[1]);
}

TEST(Attach, AnotherRunsRingsAreRefused) {
  auto ours = a_run(), other = a_run();
  ASSERT_TRUE(ours && other);
  const std::string err = refused(other->fd(), getpid(), ours->key_text());
  EXPECT_NE(err.find("another run"), std::string::npos) << err;
}

TEST(Attach, APlantedFileWithTheRunsHeaderIsRefused) {
  // A copy of the run's header, key included, in a file that is not a sealed memfd.
  auto run = a_run();
  ASSERT_TRUE(run);
  for (bool memfd : {false, true}) {
    int fd = memfd ? memfd_create("planted", MFD_ALLOW_SEALING) : open(testing::TempDir().c_str(), O_TMPFILE | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(tr::Region::bytes_for(2, 128))), 0);
    ASSERT_EQ(pwrite(fd, &run->header(), sizeof(tr::RegionHeader), 0), static_cast<ssize_t>(sizeof(tr::RegionHeader)));
    const std::string err = refused(fd, getpid(), run->key_text());
    EXPECT_NE(err.find("not tc-profile's sealed ring memory"), std::string::npos) << (memfd ? "an unsealed memfd: " : "a file: ") << err;
    close(fd);
  }
}

TEST(Attach, AKeyThatIsNotOneIsRefused) {
  auto run = a_run();
  ASSERT_TRUE(run);
  const std::string err = refused(run->fd(), getpid(), "../../etc/passwd");
  EXPECT_NE(err.find("TC_PROFILE_KEY"), std::string::npos) << err;
}

TEST(Attach, WithoutALauncherPidOnlyTheInheritedDescriptorIsTried) {
  auto run = a_run();
  ASSERT_TRUE(run);
  const std::string err = refused(free_fd(), getpid(), run->key_text(), /*with_pid=*/false);
  EXPECT_NE(err.find("is not open"), std::string::npos) << err;
  EXPECT_NE(err.find("TC_PROFILE_PID"), std::string::npos) << err;
}

TEST(Attach, AFailureIsReportedInOneLineToTheLaunchersFile) {
  char path[] = "/tmp/tc-attach-report-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  LauncherEnv env(0, getpid(), "");
  env.set("TC_PROFILE_REPORT", path);
  EXPECT_TRUE(tr::report_attach_failure("why\twith a tab\nand a newline"));
  char buf[2048] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  ASSERT_GT(n, 0);
  std::string line(buf, static_cast<size_t>(n));
  EXPECT_EQ(line.rfind(std::to_string(getpid()) + "\twhy with a tab and a newline\t", 0), 0u) << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  unlink(path);
  EXPECT_FALSE(tr::report_attach_failure("x")) << "the file is never created";
  // A link is never followed.
  ASSERT_EQ(symlink("/dev/null", path), 0);
  EXPECT_FALSE(tr::report_attach_failure("x"));
  unlink(path);
  close(fd);
}

}  // namespace
