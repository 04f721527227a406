// Framework logs for end-to-end tests: the importers refuse records whose
// times lie outside the run, so a test "program" moves a fixture's times
// into its own run before writing it where the framework would.
#pragma once

#include <string>

namespace tc::test {

// `log` with each "KEY": N (each KEY of `keys`, "a|b") moved by the time
// `now` reads (a shell command) less `last`, the log's last time: times the
// run may hold (the importers refuse the others). The program sleeps over the
// log's span first, so that all of it lies after the run's start.
inline std::string moved_into_the_run(const std::string& log, const std::string& keys, const std::string& now, const std::string& last,
                               const std::string& span_s) {
  return "{ sleep " + span_s + "; awk -v now=\"$(" + now + ")\" '{ out = \"\"; while (match($0, /\"(" + keys + ")\": ?[0-9]+/)) { " +
         "k = substr($0, RSTART, RLENGTH); sub(/[0-9]+$/, \"\", k); v = substr($0, RSTART + length(k), RLENGTH - length(k)); " +
         "out = out substr($0, 1, RSTART - 1) k sprintf(\"%.0f\", v + now - " + last + "); $0 = substr($0, RSTART + RLENGTH) } print out $0 }' '" +
         log + "'; }";
}

// The torch.compile fixture with its times in the run: a shell command that
// writes it to standard output (its compilations run from 1796149794.464 s
// to 1796149797.976 s of the wall clock, in microseconds).
inline std::string torch_fixture_in_the_run(const std::string& fixture) {
  return moved_into_the_run(fixture, "start_time_us", "date +%s%6N", "1796149798000000", "3.7");
}

}  // namespace tc::test
