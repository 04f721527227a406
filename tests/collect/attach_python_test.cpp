// The launch styles of Python programs (tracker #29, item 1): children started
// by subprocess with its default close_fds=True, by multiprocessing's spawn
// and forkserver (which close every descriptor they do not pass), and in a
// new session (start_new_session=True, setsid) each record every event into
// the one tc-profile over the tree. Before, each printed "tc: cannot record:
// TC_PROFILE_FD=...", and nothing in the store said they had been there.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "collect/attach_test_util.h"
#include "collect/python_sample_util.h"
#include "support/process.h"
#include "tc/store/reader.h"

using tc::test::bin;
using tc::test::TempDir;

namespace {

constexpr const char* kHow = "scripts/test.sh makes .tc-test-venv";

std::string python() { return tc::test::python_sample::python("TC_TEST_PYTHON", ".tc-test-venv"); }

// Each child runs tc-test-recorder (argv[1]) with its own event count; a
// multiprocessing child becomes it with exec, so the recorder has exactly
// the descriptors that start method left.
constexpr const char* kScript = R"(
import multiprocessing, os, subprocess, sys
rec = sys.argv[1]
def become(n):
    os.execv(rec, [rec, "--events", str(n)])
if __name__ == "__main__":
    subprocess.run([rec, "--events", "200"], check=True)
    subprocess.run([rec, "--events", "201"], check=True, start_new_session=True)
    for n, method in ((202, "spawn"), (203, "forkserver")):
        p = multiprocessing.get_context(method).Process(target=become, args=(n,))
        p.start()
        p.join()
        assert p.exitcode == 0, (method, p.exitcode)
)";

TEST(AttachPython, SubprocessSpawnForkserverAndNewSessionsRecordEveryEvent) {
  TC_REQUIRE_PYTHON_PEER(python(), "multiprocessing", {}, kHow);
  TempDir dir;
  const std::string out = dir.file("run.tcdb"), script = dir.file("launch.py");
  {
    std::ofstream(script) << kScript;
  }
  tc::test::attach::expect_every_event_stored({python(), script, bin("tc-test-recorder")}, out, 4);
}

}  // namespace
