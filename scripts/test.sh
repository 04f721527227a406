#!/usr/bin/env bash
# Command 2: set up what is missing, then build and run the whole suite three
# ways: recording compiled in, recording compiled out (TC_TRACE=OFF), and
# under AddressSanitizer + UndefinedBehaviorSanitizer; then fuzz the store
# reader and the --fail-on parser (libFuzzer). GUI tests run under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
start=$(date +%s)

run_suite() {  # dir, label, extra ctest arguments
  echo "== tests: $2"
  xvfb-run -a ctest --test-dir "$1" --output-on-failure -j "$jobs" --timeout 900 "${@:3}"
}

scripts/setup.sh build
run_suite build "recording on (TC_TRACE=ON)"

scripts/setup.sh build-notrace -DTC_TRACE=OFF -DTC_BUILD_BENCH=OFF
# The slow tests (a sample trained to its accuracy) run once, in the first suite.
run_suite build-notrace "recording compiled out (TC_TRACE=OFF)" -LE slow

scripts/setup.sh build-asan -DTC_SANITIZE=ON -DTC_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_suite build-asan "AddressSanitizer + UndefinedBehaviorSanitizer" -LE slow

scripts/fuzz.sh build

echo "== all three suites and the fuzzers passed in $(( $(date +%s) - start )) s"
