// The CPU backend's code cache against a hostile or broken cache directory:
// planted objects and sources, links, a directory others can write, a
// shared fallback, leftovers of killed builds. Each case runs tc-test-compile
// (a small training loop) in its own process with TC_CACHE_DIR set.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.h"

using tc::test::bin;
using tc::test::TempDir;
namespace fs = std::filesystem;

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// tc-test-compile's environment: this cache, compiled, no recording, g++
// unless `more` says otherwise (later entries win).
Env train_env(const std::string& cache, Env more = {}) {
  Env env{{"TC_CACHE_DIR", cache}, {"TC_EAGER", ""}, {"TC_PROFILE", ""}, {"TC_PROFILE_FD", ""}, {"TC_CXX", ""}};
  env.insert(env.end(), more.begin(), more.end());
  return env;
}
const std::vector<std::string> kTrain = {bin("tc-test-compile"), "--batches", "4,4"};

tc::test::Exit train(const std::string& cache, Env more = {}) { return tc::test::run(kTrain, train_env(cache, std::move(more))); }

// The cache's entries with this extension (tc_<key>.<ext>).
std::vector<fs::path> entries(const std::string& dir, const std::string& ext) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ext && e.path().filename().string().rfind("tc_", 0) == 0) out.push_back(e.path());
  return out;
}

// A shared object whose constructor creates `marker`: what a hostile user plants.
std::string planted_object(const TempDir& dir, const std::string& marker) {
  std::string src = dir.file("evil.cpp"), so = dir.file("evil.so");
  std::ofstream(src) << "#include <cstdio>\n__attribute__((constructor)) static void own() { std::FILE* f = std::fopen(\"" << marker
                     << "\", \"w\"); if (f) std::fclose(f); }\nextern \"C\" int tc_run(void* const*) { return 0; }\n";
  auto e = tc::test::run({"g++", "-shared", "-fPIC", "-o", so, src});
  EXPECT_EQ(e.code, 0) << e.err;
  return so;
}

TEST(CodeCache, PlantedObjectIsNeverLoadedAndIsRebuilt) {
  TempDir dir;
  std::string cache = dir.file("cache");
  auto first = train(cache);
  ASSERT_EQ(first.code, 0) << first.err;
  auto sos = entries(cache, ".so");
  ASSERT_FALSE(sos.empty());
  std::string marker = dir.file("owned");
  std::string evil = planted_object(dir, marker);
  for (const auto& so : sos) fs::copy_file(evil, so, fs::copy_options::overwrite_existing);
  auto second = train(cache);
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_FALSE(fs::exists(marker)) << "the planted object's constructor ran";
  EXPECT_NE(second.err.find("does not match its build record"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("rebuilding it"), std::string::npos) << second.err;
  EXPECT_EQ(second.out, first.out) << "the rebuilt code trains as before";
  // The rebuilt entry is whole again: a third run loads it without a word.
  auto third = train(cache);
  EXPECT_EQ(third.code, 0) << third.err;
  EXPECT_EQ(third.err.find("code cache"), std::string::npos) << third.err;
  EXPECT_EQ(third.out, first.out);
}

TEST(CodeCache, PlantedSourceIsNeverCompiled) {
  TempDir dir;
  std::string cache = dir.file("cache");
  auto first = train(cache);
  ASSERT_EQ(first.code, 0) << first.err;
  std::string marker = dir.file("owned");
  // Remove the objects; leave sources that would run code if they were built.
  for (const auto& so : entries(cache, ".so")) fs::remove(so);
  for (const auto& cpp : entries(cache, ".cpp"))
    std::ofstream(cpp, std::ios::trunc) << "#include <cstdio>\n__attribute__((constructor)) static void own() { std::fopen(\"" << marker
                                        << "\", \"w\"); }\nextern \"C\" int tc_run(void* const*) { return 0; }\n";
  auto second = train(cache);
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_FALSE(fs::exists(marker)) << "the planted source was compiled and loaded";
  EXPECT_EQ(second.out, first.out);
  for (const auto& cpp : entries(cache, ".cpp"))
    EXPECT_NE(tc::test::read_file(cpp.string()).find("extern \"C\" int tc_run("), std::string::npos) << "the real source is kept at " << cpp;
}

TEST(CodeCache, LogIsNeverWrittenThroughALink) {
  TempDir dir;
  std::string cache = dir.file("cache");
  auto first = train(cache);
  ASSERT_EQ(first.code, 0) << first.err;
  std::string victim = dir.file("victim");
  std::ofstream(victim) << "precious\n";
  for (const auto& so : entries(cache, ".so")) fs::remove(so);
  for (const auto& log : entries(cache, ".log")) {
    fs::remove(log);
    fs::create_symlink(victim, log);
  }
  auto second = train(cache);
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(tc::test::read_file(victim), "precious\n") << "the build wrote through a planted link";
  for (const auto& log : entries(cache, ".log")) EXPECT_FALSE(fs::is_symlink(log)) << log;
}

TEST(CodeCache, DirectoryOthersCanWriteIsRefusedInOneLine) {
  TempDir dir;
  std::string cache = dir.file("cache");
  fs::create_directories(cache);
  ::chmod(cache.c_str(), 0777);
  auto e = train(cache);
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.err.find("is writable by others (mode 0777)"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("chmod go-w"), std::string::npos) << e.err;
  EXPECT_TRUE(entries(cache, ".so").empty()) << "nothing is built into a directory tc refused";
  if (::geteuid() == 0) {
    // Root: a directory of another user is refused too.
    ::chmod(cache.c_str(), 0700);
    ASSERT_EQ(::chown(cache.c_str(), 65534, 65534), 0);
    auto o = train(cache);
    EXPECT_NE(o.code, 0);
    EXPECT_NE(o.err.find("belongs to uid 65534"), std::string::npos) << o.err;
  }
}

TEST(CodeCache, WithoutHomeTheCacheIsTheUsersOwnNeverTmp) {
  TempDir dir;
  std::string xdg = dir.file("xdg");
  auto e = tc::test::run({bin("tc-test-compile"), "--batches", "4"},
                         {{"TC_CACHE_DIR", ""}, {"HOME", ""}, {"XDG_CACHE_HOME", xdg}, {"TC_EAGER", ""}, {"TC_PROFILE", ""}});
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_FALSE(entries(xdg + "/tc", ".so").empty()) << "built code goes to $XDG_CACHE_HOME/tc";
  struct stat st;
  ASSERT_EQ(::stat((xdg + "/tc").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "a cache directory tc creates is the user's alone";
}

TEST(CodeCache, UnwritableCacheSaysSoInOneLine) {
  auto e = train("/dev/null/tc-cache");
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.err.find("tc: the code cache /dev/null/tc-cache: cannot create /dev/null/tc-cache: Not a directory"), std::string::npos) << e.err;
  EXPECT_EQ(e.err.find("sh:"), std::string::npos) << e.err;
  EXPECT_EQ(e.err.find("kept at"), std::string::npos) << "no source was kept anywhere: " << e.err;
}

TEST(CodeCache, LeftoversOfAKilledBuildAreRemoved) {
  TempDir dir;
  std::string cache = dir.file("cache");
  fs::create_directories(cache);
  ::chmod(cache.c_str(), 0700);
  // A process that is gone: its build directory is what a kill leaves behind.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  waitpid(gone, nullptr, 0);
  std::string stale = cache + "/tc-build-" + std::to_string(gone) + "-abcdef";
  fs::create_directories(stale);
  std::ofstream(stale + "/part0.o") << "half";
  auto e = train(cache);
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_FALSE(fs::exists(stale)) << "the dead build's directory is still there";
  for (const auto& entry : fs::directory_iterator(cache)) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(name.rfind("tc-build-", 0), std::string::npos) << name;
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  }
}

// A compiler that notes the build directory of each of its runs, then is g++.
std::string noting_compiler(const TempDir& dir, const std::string& log) {
  const std::string path = dir.file("noting-g++");
  std::ofstream(path) << "#!/bin/sh\n[ \"$1\" = -dumpfullversion ] || echo \"$PWD\" >> " << log << "\nexec g++ \"$@\"\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

size_t distinct_lines(const std::string& path) {
  std::ifstream in(path);
  std::set<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines.size();
}

// Two processes that need the same graphs at once (the ranks of a job on one
// machine) build each of them once: the second waits on the key's lock and
// loads what the first moved in. Before the lock, both built, and one rank's
// object was renamed over the other's while that one loaded it: "does not
// load: ... changed while it was being loaded".
TEST(CodeCache, TwoProcessesNeedingOneGraphBuildItOnce) {
  TempDir dir;
  const std::string alone_log = dir.file("alone.log"), both_log = dir.file("both.log");
  auto alone = train(dir.file("alone"), {{"TC_CXX", noting_compiler(dir, alone_log)}});
  ASSERT_EQ(alone.code, 0) << alone.err;
  const size_t builds = distinct_lines(alone_log);
  ASSERT_GT(builds, 0u) << "the compiler never ran";

  const Env both = train_env(dir.file("both"), {{"TC_CXX", noting_compiler(dir, both_log)}});
  tc::test::Child a(kTrain, both), b(kTrain, both);
  tc::test::Exit ea = a.wait(std::chrono::seconds(120)), eb = b.wait(std::chrono::seconds(120));
  EXPECT_EQ(ea.code, 0) << ea.err;
  EXPECT_EQ(eb.code, 0) << eb.err;
  EXPECT_EQ(ea.err.find("code cache"), std::string::npos) << ea.err;
  EXPECT_EQ(eb.err.find("code cache"), std::string::npos) << eb.err;
  EXPECT_EQ(ea.out, alone.out) << "the same training";
  EXPECT_EQ(eb.out, alone.out);
  EXPECT_EQ(distinct_lines(both_log), builds) << "builds (one build directory each) of two processes, against one process alone";
}

}  // namespace
