#!/usr/bin/env bash
# Fuzzes the store reader + analysis, the --fail-on parser, and the collector
# over scribbled ring memory with libFuzzer (clang, ASan + UBSan) for a
# CI-sized run. Seeds are real stores recorded by
# the normal build in $1 (default: build). FUZZ_SECONDS per target (default 45).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${FUZZ_SECONDS:-45}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DTC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz fuzz_store fuzz_fail_on fuzz_rings
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/store" "$corpus/fail_on" "$corpus/rings"
"$build/bin/tc-profile" -q -o "$corpus/store/train.tcdb" -- "$build/bin/tc-test-train" --steps 2 >/dev/null
"$build/bin/tc-profile" -q -o "$corpus/store/recorder.tcdb" -- "$build/bin/tc-test-recorder" --events 60 --threads 2 --end abort >/dev/null 2>&1 || true
printf 'recompilations>2' >"$corpus/fail_on/a"
printf 'compile_share>=0.2, explicit_evaluations>0' >"$corpus/fail_on/b"
printf 'steps!=1e3' >"$corpus/fail_on/c"
# Ring seeds: a pass; ring 0's write counter pushed far ahead between passes;
# a slot kind changed; the header's ring count and capacity scribbled.
printf '\x80' >"$corpus/rings/a"
printf '\x80\x07\x80\x00\xff\xff\xff\xff\xff\xff\x00\x01\x80' >"$corpus/rings/b"
printf '\x01\x4c\x03\x63\x00\x80' >"$corpus/rings/c"
printf '\x0b\x0c\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x40\x80\x80' >"$corpus/rings/d"
echo "== fuzz: store reader + analysis (${seconds} s)"
build-fuzz/bin/fuzz_store -max_total_time="$seconds" -max_len=400000 -timeout=20 -print_final_stats=1 "$corpus/store" 2>&1 | tail -4
echo "== fuzz: --fail-on parser (${seconds} s)"
build-fuzz/bin/fuzz_fail_on -max_total_time="$seconds" -max_len=256 -print_final_stats=1 "$corpus/fail_on" 2>&1 | tail -4
echo "== fuzz: collector over scribbled ring memory (${seconds} s)"
build-fuzz/bin/fuzz_rings -max_total_time="$seconds" -max_len=1024 -len_control=0 -timeout=20 -print_final_stats=1 "$corpus/rings" 2>&1 | tail -4
echo "== fuzz: no crash, no sanitizer report"
