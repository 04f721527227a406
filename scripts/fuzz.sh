#!/usr/bin/env bash
# Fuzzes the store reader + analysis, the --fail-on parser, the collector
# over scribbled ring memory, tc-viewer's timeline model over damaged stores,
# and the three framework log importers (torch.compile's trace, the JAX and
# PyTorch/XLA logs) with libFuzzer (clang, ASan + UBSan) for a CI-sized run.
# Seeds are real stores recorded by the normal build in $1 (default: build)
# and the logs of tests/fixtures/frameworks. FUZZ_SECONDS per target
# (default 25: seven targets). FUZZ_SEED is libFuzzer's seed: 1 by default,
# so that CI's run repeats itself (a gate that fails only when the code
# changed); 0 picks a new one each run, for exploring: FUZZ_SEED=0
# FUZZ_SECONDS=600 scripts/fuzz.sh before a change to an input reader lands.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${FUZZ_SECONDS:-25}
seed=${FUZZ_SEED:-1}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DTC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz fuzz_store fuzz_fail_on fuzz_rings fuzz_timeline fuzz_torch_trace fuzz_jax_log fuzz_xla_log
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/store" "$corpus/fail_on" "$corpus/rings" "$corpus/torch" "$corpus/jax" "$corpus/xla"
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
# Importer seeds: the real logs of the fixtures (their first 8 KiB), and
# records whose times lie in the targets' run (store time 1 s to 1.1 s; the
# trace's wall clock 1796149600 s at 1 s).
fixtures=tests/fixtures/frameworks
for f in "$fixtures"/torch-*/trace.log; do head -c 8192 "$f" >"$corpus/torch/$(basename "$(dirname "$f")")"; done
for f in "$fixtures"/jax-*/jax-*.log; do head -c 8192 "$f" >"$corpus/jax/$(basename "$(dirname "$f")")"; done
for f in "$fixtures"/torch_xla-*/xla-*.log; do head -c 8192 "$f" >"$corpus/xla/$(basename "$(dirname "$f")")"; done
{ head -c 4096 "$fixtures/torch_xla-2.9.0-dynamic-padding/xla-7074.log"; printf '\n====\n'
  head -c 4096 "$fixtures/torch_xla-2.9.0-dynamic-padding/pt_xla_debug.txt"; } >"$corpus/xla/with-debug"
printf '%s\n' 'V1201 18:30:02.000000 7 x.py:1] {"compilation_metrics": {"compile_id": "0/1", "co_name": "f", "co_filename": "x.py", "co_firstlineno": 1, "start_time_us": 1796149600010000, "duration_us": 5000, "recompile_reason": "tensor '"'"'x'"'"' size mismatch at index 1. expected 3, actual 4"}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0}' \
  'V1201 18:30:02.000000 7 x.py:1] {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0, "has_payload": "x"}' \
  '	Graph break in user code at x.py:9' '	Graph Break Reason: Tensor.item()' >"$corpus/torch/run"
printf '%s\n' '{"k":"start","ts":1000000001,"pid":7,"jax":"0.10.2"}' '{"k":"fun","i":0,"name":"step","file":"x.py","line":3}' \
  '{"k":"dur","ts":1000100000,"event":"/jax/core/compile/backend_compile_duration","s":0.00005,"fun":"jit(step)"}' \
  '{"k":"call","f":0,"ts":1000200000,"end":1000300000}' '{"k":"eval","ts":1000400000,"dur":10,"kind":"item","file":"x.py","line":4}' >"$corpus/jax/run"
printf '%s\n' '{"k":"start","ts":1000000001,"pid":7,"torch_xla":"2.9.0"}' '{"k":"input","ts":1000000100,"file":"x.py","line":3,"name":"x","shape":[8,3]}' \
  '{"k":"sync","ts":1000100000,"end":1000200000,"file":"x.py","line":5,"compiles":1,"compile_ns":50000}' \
  '{"k":"input","ts":1000300100,"file":"x.py","line":3,"name":"x","shape":[8,4]}' \
  '{"k":"eval","ts":1000400000,"dur":10,"kind":"item","file":"x.py","line":6,"compiles":1,"compile_ns":5}' >"$corpus/xla/run"
# One target: its whole output goes to a log; on success the final stats are
# shown, on failure the report (the sanitizer's or the target's own line) and
# the input that caused it, kept under build-fuzz/crashes/ to reproduce with
# `build-fuzz/bin/TARGET FILE`.
mkdir -p build-fuzz/crashes
fuzz() {
  local name=$1 title=$2; shift 2
  echo "== fuzz: ${title} (${seconds} s, seed ${seed})"
  local log="build-fuzz/crashes/${name}.log" rc=0
  "build-fuzz/bin/${name}" -max_total_time="$seconds" -seed="$seed" -print_final_stats=1 \
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
# The importers' memory is bounded (docs/frameworks.md#limits-of-the-import): 1 GB is far above it (ASan keeps 256 MB of freed memory).
fuzz fuzz_torch_trace "torch.compile trace importer" -max_len=8192 -timeout=20 -rss_limit_mb=1024 "$corpus/torch"
fuzz fuzz_jax_log "JAX log importer" -max_len=8192 -timeout=20 -rss_limit_mb=1024 "$corpus/jax"
fuzz fuzz_xla_log "PyTorch/XLA log importer" -max_len=8192 -timeout=20 -rss_limit_mb=1024 "$corpus/xla"
echo "== fuzz: no crash, no sanitizer report"
