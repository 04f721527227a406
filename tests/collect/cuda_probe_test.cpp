// The CUDA probe: what it says, and that it loads the driver library only
// where a driver is (before, the CUDA runtime searched the library paths for
// libcuda.so.1, 42 failed opens, before every program tc-profile started).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tc/collect/collector.h"

namespace {

const char* const kNoNodes[] = {"/nonexistent/tc-cuda-probe-test/nvidiactl", "/nonexistent/tc-cuda-probe-test/dxg"};

bool built_without_cuda() { return tc::collect::cuda_probe(kNoNodes, "libcuda.so.1") == "built without CUDA"; }

TEST(CudaProbe, WithoutADriverNodeItLoadsNothing) {
  if (built_without_cuda()) GTEST_SKIP() << "built without CUDA: the probe says only that";
  // The library name would fail to load; the answer shows it was never tried.
  EXPECT_EQ(tc::collect::cuda_probe(kNoNodes, "libtc-cuda-probe-test-no-such-driver.so.1"),
            "no device: no NVIDIA driver (none of /nonexistent/tc-cuda-probe-test/nvidiactl, /nonexistent/tc-cuda-probe-test/dxg)");
}

TEST(CudaProbe, WithADriverNodeALibraryThatDoesNotLoadEndsTheProbe) {
  if (built_without_cuda()) GTEST_SKIP() << "built without CUDA: the probe says only that";
  std::string node = (std::filesystem::temp_directory_path() / ("tc-cuda-probe-node-" + std::to_string(::getpid()))).string();
  std::FILE* f = std::fopen(node.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  const char* nodes[] = {kNoNodes[0], node.c_str()};
  // Not the runtime's answer (cudaGetDeviceCount ...): the probe stopped at its one load.
  std::string said = tc::collect::cuda_probe(nodes, "libtc-cuda-probe-test-no-such-driver.so.1");
  std::filesystem::remove(node);
  EXPECT_EQ(said.rfind("no device: cannot load libtc-cuda-probe-test-no-such-driver.so.1 (", 0), 0u) << said;
  EXPECT_EQ(said.find('\n'), std::string::npos) << said;
}

TEST(CudaProbe, OnThisMachine) {
  std::string said = tc::collect::cuda_probe();
  ASSERT_FALSE(said.empty());
  if (built_without_cuda()) {
    EXPECT_EQ(said, "built without CUDA");
    return;
  }
  struct stat st{};
  bool driver = false;
  for (const char* node : {"/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg"}) driver = driver || ::stat(node, &st) == 0;
  if (driver) {
    EXPECT_EQ(said.find("no NVIDIA driver"), std::string::npos) << said;
  } else {
    EXPECT_EQ(said, "no device: no NVIDIA driver (none of /proc/driver/nvidia/version, /dev/nvidiactl, /dev/dxg)");
  }
}

}  // namespace
