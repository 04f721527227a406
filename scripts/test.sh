#!/usr/bin/env bash
# Command 2: set up what is missing, then build and run the whole suite three
# ways: recording compiled in, recording compiled out (TC_TRACE=OFF), and
# under AddressSanitizer + UndefinedBehaviorSanitizer; then fuzz the store
# reader and the --fail-on parser (libFuzzer). GUI tests run under Xvfb. The
# Python-peer tests run in the first suite only (an uninstrumented python
# cannot load AddressSanitizer's libtc_nvtx).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
start=$(date +%s)

# Each phase's seconds, for the summary at the end (where CI's time goes).
phases=()
phase_start=$start
phase_done() {
  local now
  now=$(date +%s)
  phases+=("$1 $((now - phase_start)) s")
  phase_start=$now
}

run_suite() {  # dir, label, extra ctest arguments
  echo "== tests: $2"
  xvfb-run -a ctest --test-dir "$1" --output-on-failure -j "$jobs" --timeout 900 "${@:3}"
  phase_done "tests ($2)"
}

# Python peers of the NVTX and framework tests (label "python"), in venvs of
# the tests' own, never dependencies of tc: torch (torch.cuda.nvtx runs on a
# CPU-only machine), the nvtx package and jax[cpu] (it installs beside torch
# without a conflict: pip check is clean) in .tc-test-venv; torch-xla 2.9
# with the torch it pins (2.9) in .tc-test-venv-xla. They download while the
# first build compiles; the build waits for nothing of theirs.
python3 -m venv --help >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq python3-venv; }
install_peers() {
  local venv=.tc-test-venv xla=.tc-test-venv-xla pip_args=(-q --disable-pip-version-check)
  if ! "$venv/bin/python" -c "import torch, nvtx" 2>/dev/null; then
    echo "== installing the tests' Python peers (torch, nvtx) into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install "${pip_args[@]}" torch nvtx numpy
  fi
  if ! "$venv/bin/python" -c "import transformers, tokenizers, accelerate" 2>/dev/null; then
    echo "== installing the tests' Python peers transformers, tokenizers and accelerate into $venv"
    "$venv/bin/pip" install "${pip_args[@]}" transformers tokenizers accelerate
  fi
  if ! "$venv/bin/python" -c "import jax" 2>/dev/null; then
    echo "== installing the tests' Python peer jax[cpu] into $venv"
    "$venv/bin/pip" install "${pip_args[@]}" "jax[cpu]"
  fi
  if ! PJRT_DEVICE=CPU "$xla/bin/python" -c "import torch_xla" 2>/dev/null; then
    echo "== installing the tests' Python peers torch-xla 2.9 and its torch 2.9 into $xla"
    python3 -m venv "$xla"
    "$xla/bin/pip" install "${pip_args[@]}" "torch==2.9.*" "torch-xla==2.9.*"
  fi
}
peers_log=$(mktemp)
install_peers > "$peers_log" 2>&1 &
peers=$!

scripts/setup.sh build
phase_done "setup and build"

if ! wait "$peers"; then
  cat "$peers_log"
  echo "test.sh: installing the tests' Python peers failed (above); check the network, or remove .tc-test-venv* and run again" >&2
  exit 1
fi
cat "$peers_log"
rm -f "$peers_log"
phase_done "waiting for the Python peers"
export TC_REQUIRE_PYTHON_PEERS=1

run_suite build "recording on (TC_TRACE=ON)"

# The second and third builds are for what they check, not for debugging:
# no debug info where recording is compiled out (-O2, as users build it), and
# ASan's own advice, -O1 with line tables only (stack traces keep file:line).
# On 2 cores that halves the ASan build (analysis_test.cpp: 37 s -> 16 s) and
# takes a third off the other (12 s -> 7.5 s). The tests' own code is at -O1
# in all three (TC_TEST_CXX_FLAGS; ASan's flags already are).
notrace_flags="-O2 -DNDEBUG"
asan_flags="-O1 -g1 -DNDEBUG"
# Only what compiling recording out can change is built and run again: the
# programs and the test executables that link the recording layer. The tests
# of the store, the importers, the analysis and the viewer (and tc-viewer)
# are the same code as in the first build (TC_TESTS_WITHOUT_TRACE=OFF,
# TC_BUILD_VIEWER=OFF).
scripts/setup.sh build-notrace -DTC_TRACE=OFF -DTC_BUILD_BENCH=OFF -DTC_TESTS_WITHOUT_TRACE=OFF -DTC_BUILD_VIEWER=OFF -DTC_TEST_CXX_FLAGS=-O1 \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$notrace_flags" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$notrace_flags"
phase_done "build-notrace"
# The slow tests (a sample trained to its accuracy) run once, in the first suite.
run_suite build-notrace "recording compiled out (TC_TRACE=OFF)" -LE 'slow|python'

scripts/setup.sh build-asan -DTC_SANITIZE=ON -DTC_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTC_TEST_CXX_FLAGS= \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$asan_flags" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$asan_flags"
phase_done "build-asan"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_suite build-asan "AddressSanitizer + UndefinedBehaviorSanitizer" -LE 'slow|python'

scripts/fuzz.sh build
phase_done "fuzzers"

printf '== %s\n' "${phases[@]}"
echo "== all three suites and the fuzzers passed in $(( $(date +%s) - start )) s"
