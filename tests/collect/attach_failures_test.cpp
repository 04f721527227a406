// The file where processes that could not attach name themselves is written
// by the program's processes: read_attach_failures trusts none of it.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/process.h"
#include "tc/collect/collector.h"

namespace tc::collect {
namespace {

TEST(AttachFailures, LinesAreNamedMalformedOnesAndTheRestCounted) {
  tc::test::TempDir dir;
  const std::string path = dir.file("failures");
  {
    std::ofstream f(path, std::ios::binary);
    f << "123\twhy\x01 it failed\tpython worker.py\n";
    f << "not a pid\twhy\tcmd\n";   // malformed
    f << "0\twhy\tcmd\n";           // no such pid
    f << "5\t\tcmd\n";              // no reason
    f << "77\t" << std::string(5000, 'w') << "\t" << std::string(5000, 'c') << "\n";
    for (size_t i = 0; i < kMaxNamedAttachFailures + 10; ++i) f << 1000 + i << "\tw\tc\n";
    f << "9\tcut short";  // a writer killed mid-line
  }
  AttachFailures got = read_attach_failures(path);
  ASSERT_EQ(got.named.size(), kMaxNamedAttachFailures);
  EXPECT_EQ(got.named[0].pid, 123);
  EXPECT_EQ(got.named[0].why, "why  it failed");
  EXPECT_EQ(got.named[0].command, "python worker.py");
  EXPECT_EQ(got.named[1].pid, 77);
  EXPECT_EQ(got.named[1].why.size(), 512u);
  EXPECT_EQ(got.named[1].command.size(), 512u);
  // 3 malformed + 12 past the limit (the long line and 62 short ones were named) + the cut line.
  EXPECT_EQ(got.unnamed, 3u + (kMaxNamedAttachFailures + 10 - (kMaxNamedAttachFailures - 2)) + 1u);
}

TEST(AttachFailures, AMissingFileOrALinkIsNothing) {
  tc::test::TempDir dir;
  EXPECT_TRUE(read_attach_failures(dir.file("none")).named.empty());
  {
    std::ofstream(dir.file("real")) << "1\tw\tc\n";
  }
  ASSERT_EQ(symlink(dir.file("real").c_str(), dir.file("link").c_str()), 0);
  AttachFailures got = read_attach_failures(dir.file("link"));
  EXPECT_TRUE(got.named.empty());
  EXPECT_EQ(got.unnamed, 0u);
}

}  // namespace
}  // namespace tc::collect
