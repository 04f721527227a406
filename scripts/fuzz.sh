#!/usr/bin/env bash
# Fuzzes the store reader + analysis, the --fail-on parser, the collector
# over scribbled ring memory, and tc-viewer's timeline model over damaged
# stores with libFuzzer (clang, ASan + UBSan) for a CI-sized run. Seeds are real stores recorded by
# the normal build in $1 (default: build). FUZZ_SECONDS per target (default 45).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${FUZZ_SECONDS:-45}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DTC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz fuzz_store fuzz_fail_on fuzz_rings fuzz_timeline
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/store" "$corpus/fail_on" "$corpus/rings"
"$build/bin/tc-profile" -q -o "$corpus/store/train.tcdb" -- "$build/bin/tc-test-train" --steps 2 >/dev/null
"$build/bin/tc-profile" -q -o "$corpus/store/recorder.tcdb" -- "$build/bin/tc-test-recorder" --events 60 --threads 2 --end abort >/dev/null 2>&1 || true
# Timeline seeds: the stores above, and the viewer's demo store (NVTX,
# kernels, memory, collectives) as one rank and as a store of two ranks
# (two processes, two ranks rows: the job merge).
mkdir -p "$corpus/timeline"
cp "$corpus/store/"*.tcdb "$corpus/timeline/"
if [ -x "$build/bin/tc-bench-viewer" ]; then
  "$build/bin/tc-bench-viewer" --write-only "$corpus/timeline/demo.tcdb" --events 400 --threads 2 >/dev/null
  if command -v python3 >/dev/null; then
    python3 - "$corpus/timeline/demo.tcdb" "$corpus/timeline/ranks.tcdb" <<'PY'
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
db.execute("INSERT INTO processes (upid, pid, name, start_ts, end_ts) SELECT 2, pid + 1, name, start_ts, end_ts FROM processes WHERE upid = 1")
db.execute("INSERT INTO threads (utid, upid, tid, name) VALUES (99, 2, 4242, 'rank1')")
db.execute("UPDATE ranges SET utid = 99 WHERE id % 3 = 0")
db.execute("DELETE FROM ranks")
first = db.execute("SELECT min(utid) FROM threads WHERE upid = 1").fetchone()[0]
db.execute("INSERT INTO ranks (utid, rank, world_size, host, job, clock_offset_ns, clock_error_ns) VALUES (?, 0, 2, 'a', 'j', 0, 10), (99, 1, 2, 'b', 'j', 5000, 10)", (first,))
db.commit()
PY
  fi
fi
printf 'recompilations>2' >"$corpus/fail_on/a"
printf 'compile_share>=0.2, explicit_evaluations>0' >"$corpus/fail_on/b"
printf 'steps!=1e3' >"$corpus/fail_on/c"
# Ring seeds: a pass; ring 0's write counter pushed far ahead between passes;
# a slot kind changed; the header's ring count and capacity scribbled.
printf '\x80' >"$corpus/rings/a"
printf '\x80\x07\x80\x00\xff\xff\xff\xff\xff\xff\x00\x01\x80' >"$corpus/rings/b"
printf '\x01\x4c\x03\x63\x00\x80' >"$corpus/rings/c"
printf '\x0b\x0c\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x40\x80\x80' >"$corpus/rings/d"
# One target: its whole output goes to a log; on success the final stats are
# shown, on failure the report (the sanitizer's or the target's own line) and
# the input that caused it, kept under build-fuzz/crashes/ to reproduce with
# `build-fuzz/bin/TARGET FILE`.
mkdir -p build-fuzz/crashes
fuzz() {
  local name=$1 title=$2; shift 2
  echo "== fuzz: ${title} (${seconds} s)"
  local log="build-fuzz/crashes/${name}.log" rc=0
  "build-fuzz/bin/${name}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/${name}-" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: ${name} failed (exit ${rc}); its report:"
    grep -n -A40 -E '^==[0-9]+==ERROR|^fuzz_[a-z]+: |runtime error|Test unit written|ERROR: libFuzzer|SUMMARY:' "$log" | head -120 || tail -60 "$log"
    for f in "build-fuzz/crashes/${name}-"*; do
      [ -f "$f" ] && { echo "input $f ($(wc -c <"$f") bytes):"; od -An -tx1 -v "$f" | head -40; }
    done
    exit "$rc"
  fi
  tail -4 "$log"
}
fuzz fuzz_store "store reader + analysis" -max_len=400000 -timeout=20 "$corpus/store"
fuzz fuzz_fail_on "--fail-on parser" -max_len=256 "$corpus/fail_on"
fuzz fuzz_rings "collector over scribbled ring memory" -max_len=1024 -len_control=0 -timeout=20 "$corpus/rings"
fuzz fuzz_timeline "tc-viewer's timeline model over damaged stores" -max_len=400000 -timeout=20 -rss_limit_mb=2048 "$corpus/timeline"
echo "== fuzz: no crash, no sanitizer report"
