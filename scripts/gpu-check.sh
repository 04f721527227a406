#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU (issue #18), in one run of
# under 8 minutes:
#   1. the op table and the dynamic rows (symbolic sizes, issue #31) on cuda
#      against eager (OpTableOnBackend/cuda, DynamicOnBackend/cuda, not skipped);
#   2. the op table's ops, MLP (SGD, AdamW) and Transformer steps compiled on
#      the GPU against eager (tests/cuda with TC_CUDA_TEST_BACKEND=cuda), the
#      NVRTC/ptxas check and the CUPTI translation tests;
#   3. a profiled run (tc-profile, TC_DEVICE=cuda) whose kernel_executions
#      join their executions and kernels, and whose CUPTI rows (gpu_activity,
#      through libtc_cupti.so) join them too; a PyTorch program's GPU kernels
#      recorded the same way;
#   3c. a JAX run's memory (XLA's memory_analysis(), the device's capacity);
#   3d. DDP over NCCL under one tc-profile over torchrun: steps and
#      all-reduces per rank, the straggler with two GPUs;
#   3e. a torch run's memory (torch.cuda's allocator peak per step, the
#      snapshot TC_TORCH_MEMORY_SNAPSHOT asks for);
#   4. a benchmark: the MLP step of tc-bench-compiler on the GPU against
#      PyTorch eager and torch.compile on the same GPU.
# Every check runs (a failure does not hide the next); the summary lists
# each PASS/FAIL and the script exits 1 when any failed, 2 when it cannot
# start (no GPU, no build).
#
# The GPU image has nvcc, cmake, ninja, torch and JAX but not Debian's -dev
# libraries tc builds against (SQLite, OpenBLAS, CLI11, GoogleTest), and no
# network. Bring them: on the Debian machine that develops tc,
#   scripts/gpu-check.sh --prepare            # copies them into build-gpu-deps/ (~40 MB)
# and carry build-gpu-deps to the GPU machine with the tree; there,
#   scripts/gpu-check.sh                      # uses them when the system lacks them
#
# Written on a machine without a GPU: it has not run on one yet.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
deps=${TC_GPU_DEPS:-build-gpu-deps}
build=${TC_GPU_BUILD:-build-gpu}
start=$(date +%s)

die() { echo "gpu-check: $*" >&2; exit 2; }

if [ "${1:-}" = "--prepare" ]; then
  # The same layout as /usr, so the CMake configs (relative to their own
  # location) find their headers and libraries there.
  out=${2:-$deps}
  u=$out/usr
  a=/usr/lib/x86_64-linux-gnu
  rm -rf "$out"
  mkdir -p "$u/include/x86_64-linux-gnu" "$u/lib/x86_64-linux-gnu/cmake" "$u/share/cmake"
  need() { for f in "$@"; do [ -e "$f" ] || die "--prepare: $f is missing here (scripts/setup.sh installs it)"; done; }
  need /usr/include/sqlite3.h /usr/include/CLI /usr/include/gtest /usr/include/gmock /usr/include/x86_64-linux-gnu/openblas-pthread \
    $a/libsqlite3.so.0 $a/libgtest.a $a/cmake/GTest /usr/share/cmake/CLI11 $a/openblas-pthread/libopenblas.so.0 \
    $a/libgfortran.so.5 $a/libquadmath.so.0
  cp -a /usr/include/sqlite3.h /usr/include/sqlite3ext.h /usr/include/CLI /usr/include/gtest /usr/include/gmock "$u/include/"
  cp -a /usr/include/x86_64-linux-gnu/openblas-pthread "$u/include/x86_64-linux-gnu/"
  cp -L $a/libsqlite3.so.0 "$u/lib/x86_64-linux-gnu/libsqlite3.so.0"
  ln -s libsqlite3.so.0 "$u/lib/x86_64-linux-gnu/libsqlite3.so"
  cp -a $a/libgtest.a $a/libgtest_main.a $a/libgmock.a $a/libgmock_main.a "$u/lib/x86_64-linux-gnu/"
  cp -a $a/cmake/GTest "$u/lib/x86_64-linux-gnu/cmake/"
  cp -a /usr/share/cmake/CLI11 "$u/share/cmake/"
  cp -L $a/openblas-pthread/libopenblas.so.0 "$u/lib/x86_64-linux-gnu/libopenblas.so.0"
  ln -s libopenblas.so.0 "$u/lib/x86_64-linux-gnu/libopenblas.so"
  cp -L $a/libgfortran.so.5 $a/libquadmath.so.0 "$u/lib/x86_64-linux-gnu/"
  echo "gpu-check: prepared $out ($(du -sh "$out" | cut -f1)); carry it to the GPU machine with the tree"
  exit 0
fi

# ---- the machine
command -v nvidia-smi >/dev/null || die "no nvidia-smi: this is not a GPU machine"
nvidia-smi -L | grep -q GPU || die "nvidia-smi lists no GPU"
echo "== $(nvidia-smi -L | head -1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"

# ---- configure and build (no viewer, no samples)
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DTC_BUILD_VIEWER=OFF -DTC_BUILD_SAMPLES=OFF -DTC_BUILD_BENCH=ON)
if [ ! -e /usr/include/sqlite3.h ] || [ ! -e /usr/include/CLI/CLI.hpp ] || [ ! -e /usr/include/gtest/gtest.h ] ||
   [ ! -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ]; then
  [ -d "$deps/usr/include" ] || die "the system lacks SQLite/CLI11/GoogleTest/OpenBLAS headers and there is no $deps (run scripts/gpu-check.sh --prepare on the dev machine and carry $deps)"
  d=$(cd "$deps/usr" && pwd)
  l=$d/lib/x86_64-linux-gnu
  cmake_args+=(-DSQLite3_INCLUDE_DIR="$d/include" -DSQLite3_LIBRARY="$l/libsqlite3.so"
               -DCLI11_DIR="$d/share/cmake/CLI11" -DGTest_DIR="$l/cmake/GTest"
               -DTC_CBLAS_INCLUDE="$d/include/x86_64-linux-gnu/openblas-pthread" -DTC_BLAS_LIBRARY="$l/libopenblas.so")
  export LD_LIBRARY_PATH="$l${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
echo "== configure ($build)"
cmake -S . -B "$build" "${cmake_args[@]}" > "$build.configure.log" 2>&1 || { tail -30 "$build.configure.log"; die "cmake failed (log: $build.configure.log)"; }
grep -q "CUDA parts enabled" "$build.configure.log" || { grep "tc:" "$build.configure.log"; die "CMake found no CUDA toolkit"; }
targets=(tc_compiler_tests tc_cuda_tests tc_cuda_nvrtc_test tc-test-compile tc-profile tc-analyze tc-bench-compiler)
grep -q "tc_cupti_test" "$build/build.ninja" 2>/dev/null && targets+=(tc_cupti_test tc_cupti_e2e_test tc_cupti_injection tc-test-cupti)
echo "== build: ${targets[*]}"
timeout 300 ninja -C "$build" "${targets[@]}" > "$build.build.log" 2>&1 || { tail -40 "$build.build.log"; die "build failed (log: $build.build.log)"; }
echo "   built in $(( $(date +%s) - start )) s"

bin=$build/bin
export TC_CACHE_DIR=$PWD/$build/tc-cache
mkdir -p "$TC_CACHE_DIR" && chmod 700 "$TC_CACHE_DIR"
unset TC_EAGER TC_PROFILE TC_PROFILE_FD
results=()
failed=0
# check NAME TIMEOUT COMMAND...: runs it, keeps its output in $build/NAME.log.
# With NOSKIP=1 a gtest run that skipped anything fails: on a GPU nothing may.
check() {
  local name=$1 limit=$2
  shift 2
  local t0 rc
  t0=$(date +%s)
  timeout "$limit" "$@" > "$build/$name.log" 2>&1
  rc=$?
  if [ $rc = 0 ] && [ "${NOSKIP:-0}" = 1 ] && grep -q "SKIPPED \]" "$build/$name.log"; then rc=99; fi
  if [ $rc = 0 ]; then
    results+=("PASS  $name ($(( $(date +%s) - t0 )) s)")
  else
    results+=("FAIL  $name (exit $rc$([ $rc = 99 ] && echo ': a test was skipped'); $build/$name.log)")
    failed=1
    echo "---- $name failed (exit $rc), last lines:"
    tail -25 "$build/$name.log"
  fi
}

echo "== 1. the op table and the dynamic rows on cuda against eager"
NOSKIP=1 check op_table_cuda 120 env TC_DEVICE=cuda "$bin/tc_compiler_tests" --gtest_filter='Backends/OpTableOnBackend.EveryRowMatchesReference/cuda'
NOSKIP=1 check dynamic_cuda 120 env TC_TIERED=0 "$bin/tc_compiler_tests" --gtest_filter='Backends/DynamicOnBackend.*/cuda'

echo "== 2. tests/cuda on the GPU: the table's ops, MLP and Transformer steps against eager"
NOSKIP=1 check cuda_tests_on_gpu 180 env TC_CUDA_TEST_BACKEND=cuda "$bin/tc_cuda_tests" --gtest_filter='CudaEmulated.*:CudaBackend.*'
check cuda_emulated 180 "$bin/tc_cuda_tests"
check nvrtc_sm90 120 "$bin/tc_cuda_nvrtc_test"
[ -x "$bin/tc_cupti_test" ] && check cupti_translation 60 "$bin/tc_cupti_test"
[ -x "$bin/tc_cupti_e2e_test" ] && check cupti_e2e 60 "$bin/tc_cupti_e2e_test"

echo "== 3. a profiled run on the GPU: kernels joined to executions"
rm -f "$build/gpu-run.tcdb"
check profiled_run 180 env TC_DEVICE=cuda "$bin/tc-profile" -o "$build/gpu-run.tcdb" -- "$bin/tc-test-compile" --batches 16,16,16,16 --momentum 0
if [ -f "$build/gpu-run.tcdb" ]; then
  check kernels_joined 60 python3 - "$build/gpu-run.tcdb" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
device = db.execute("select value from run_env where name = 'TC_DEVICE'").fetchall()
print("run_env TC_DEVICE:", device)
total = db.execute("select count(*) from kernel_executions").fetchone()[0]
joined = db.execute("""select count(*) from kernel_executions ke
    join executions e on e.execution_id = ke.execution_id
    join kernels k on k.graph_id = ke.graph_id and k.kernel = ke.kernel""").fetchone()[0]
inside = db.execute("""select count(*) from kernel_executions ke join executions e on e.execution_id = ke.execution_id
    where ke.ts >= e.ts and ke.ts + ke.dur <= e.ts + e.dur""").fetchone()[0]
print(f"kernel_executions {total}, joined to executions and kernels {joined}, inside their execution {inside}")
sys.exit(0 if total > 0 and joined == total and inside == total else 1)
EOF
  check analyze_kernels 60 "$bin/tc-analyze" kernels "$build/gpu-run.tcdb"
  # CUPTI (libtc_cupti.so through CUDA_INJECTION64_PATH): it ran, lost
  # nothing, and tc's kernels in gpu_activity join their execution and kernel.
  check cupti_joined 60 python3 - "$build/gpu-run.tcdb" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("run.cupti:", db.execute("select cupti from run").fetchone())
cap = db.execute("select status, detail, records, dropped from gpu_capture").fetchall()
print("gpu_capture:", cap)
tc = db.execute("select count(*) from gpu_activity where graph_id is not null").fetchone()[0]
joined = db.execute("""select count(*) from gpu_activity g join executions e on e.execution_id = g.execution_id
    join kernels k on k.graph_id = g.graph_id and k.kernel = g.kernel""").fetchone()[0]
copies = db.execute("select kind, count(*), sum(bytes) from gpu_activity where kind <> 'kernel' group by kind").fetchall()
print(f"tc kernels in gpu_activity {tc}, joined {joined}; copies {copies}")
ok = cap and all(c[0] == "recorded" and c[3] == 0 for c in cap) and tc > 0 and joined == tc and copies
sys.exit(0 if ok else 1)
EOF
fi

echo "== 3b. a PyTorch program under tc-profile: its GPU kernels and copies in gpu_activity"
rm -f "$build/torch-run.tcdb"
check torch_profiled 180 "$bin/tc-profile" -o "$build/torch-run.tcdb" -- python3 -c "
import torch
x = torch.randn(256, 256, device='cuda')
for _ in range(20): x = torch.relu(x @ x) / 256
print(float(x.sum()))"
if [ -f "$build/torch-run.tcdb" ]; then
  check torch_gpu_kernels 60 python3 - "$build/torch-run.tcdb" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("gpu_capture:", db.execute("select status, detail, records, dropped from gpu_capture").fetchall())
rows = db.execute("select name, count(*), sum(dur) from gpu_activity where kind = 'kernel' group by name order by 3 desc").fetchall()
for r in rows[:10]: print(r)
n = sum(r[1] for r in rows)
print("kernels:", n)
sys.exit(0 if n >= 20 else 1)
EOF
  check torch_analyze_kernels 60 "$bin/tc-analyze" kernels "$build/torch-run.tcdb"
fi

echo "== 3c. JAX's memory on the GPU (issue #30): XLA's memory_analysis() per executable, the capacity from memory_stats()"
check jax_memory_profiled 180 "$bin/tc-profile" -o "$build/jax-memory.tcdb" -- python3 tests/python/jax_memory.py --batch 16
if [ -f "$build/jax-memory.tcdb" ]; then
  check jax_memory_store 60 python3 - "$build/jax-memory.tcdb" "$bin/tc-analyze" <<'EOF'
import json, sqlite3, subprocess, sys
import jax
db = sqlite3.connect(sys.argv[1])
limit = (jax.devices()[0].memory_stats() or {}).get("bytes_limit", 0)
caps = {r[0] for r in db.execute("SELECT capacity_bytes FROM memory_plans")}
points = db.execute("SELECT batch_size, ran FROM framework_memory ORDER BY batch_size").fetchall()
print("device", jax.devices()[0], "bytes_limit", limit, "capacities", caps, "points", points)
assert limit > 0 and caps == {limit}, "memory_plans.capacity_bytes is not the device's bytes_limit"
assert points == [(16, 1), (32, 0), (128, 0)], points
report = json.loads(subprocess.run([sys.argv[2], sys.argv[1], "--json"], check=True, stdout=subprocess.PIPE).stdout)
assert any(f["kind"] == "memory.headroom" for f in report["findings"]), "no memory.headroom"
EOF
fi

echo "== 3d. DDP over NCCL (issue #29): the hook's all-reduce arrivals per rank, one tc-profile over torchrun"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
ranks=$(( gpus >= 2 ? 2 : 1 ))  # NCCL refuses two ranks on one GPU
rm -f "$build"/ddp.tcdb "$build"/ddp.rank*.tcdb
check ddp_nccl_profiled 240 "$bin/tc-profile" -o "$build/ddp.tcdb" -- python3 -m torch.distributed.run --standalone --nproc_per_node $ranks \
  samples/python/torchrun_ddp.py --device cuda --backend aot_eager --steps 6 --long-at 3 --long-rank $((ranks - 1))
check ddp_nccl_store 60 python3 - "$build" $ranks "$bin/tc-analyze" <<'EOF'
import glob, json, sqlite3, subprocess, sys
build, ranks, analyze = sys.argv[1], int(sys.argv[2]), sys.argv[3]
stores = sorted(glob.glob(build + "/ddp.rank*.tcdb")) if ranks > 1 else [build + "/ddp.tcdb"]
assert len(stores) == ranks, stores
for s in stores:
    db = sqlite3.connect(s)
    steps = db.execute("SELECT count(*) FROM steps").fetchone()[0]
    colls = db.execute("SELECT count(*) FROM collectives").fetchone()[0]
    print(s, "steps", steps, "collectives", colls)
    assert steps == 6 and colls == 6, "one all-reduce (one bucket) per step over NCCL"
report = json.loads(subprocess.run([analyze] + stores + ["--json"], check=True, stdout=subprocess.PIPE).stdout)
print("findings", [f["kind"] for f in report["findings"]])
if ranks > 1:
    assert any(f["kind"] == "distributed.straggler" and f["evidence"]["rank"] == 1 for f in report["findings"]), "no straggler"
EOF

echo "== 3e. torch's memory on the GPU (issue #30): torch.cuda's peak allocated bytes per step, the device's capacity"
rm -f "$build/torch-mem.tcdb"
rm -f "$build/torch-mem.snapshot"
check torch_memory_profiled 180 env TC_TORCH_MEMORY_SNAPSHOT="$build/torch-mem.snapshot" "$bin/tc-profile" -o "$build/torch-mem.tcdb" -- \
  python3 tests/python/torch_memory.py --device cuda --batch 64
check torch_memory_snapshot 10 test -s "$build/torch-mem.snapshot"
check torch_memory_cuda 60 python3 - "$build/torch-mem.tcdb" "$bin/tc-analyze" <<'EOF'
import json, subprocess, sys
report = json.loads(subprocess.run([sys.argv[2], sys.argv[1], "--json"], check=True, stdout=subprocess.PIPE).stdout)
s = report["summary"]
print("memory_source", s["memory_source"], "peak", s["peak_bytes"], "capacity", s["capacity_bytes"])
assert s["memory_source"] == "torch_cuda_allocator", "the hook did not read torch.cuda's allocator"
assert s["peak_bytes"] > 0 and s["capacity_bytes"] > 1 << 30, "no peak, or not the GPU's memory as capacity"
head = [f for f in report["findings"] if f["kind"] == "memory.headroom"]
assert head and head[0]["evidence"].get("batch_size") == 64, head
print("headroom", head[0]["suggestion"])
EOF

echo "== 4. benchmark: MLP training step, tc on the GPU vs PyTorch eager and torch.compile"
check bench_tc 120 env TC_DEVICE=cuda "$bin/tc-bench-compiler" --child tc --model mlp --steps 50
# tc-bench-compiler's MLP in torch (bench/torch_peer.py: 128 x 784 -> 512 -> 512 -> 10, SGD lr 0.01) on the GPU, eager then torch.compile.
check bench_torch 240 bash -c 'set -o pipefail; for mode in eager compile; do flag=; [ $mode = compile ] && flag=--compile
  python3 bench/torch_peer.py --model mlp --steps 50 --device cuda $flag | sed "s/^RESULT/RESULT torch $mode:/" || exit; done'
echo "   tc:    $(grep RESULT "$build/bench_tc.log" 2>/dev/null || echo '(no result)')"
grep RESULT "$build/bench_torch.log" 2>/dev/null | sed 's/^/   /'

echo "== summary ($(( $(date +%s) - start )) s)"
printf '  %s\n' "${results[@]}"
if [ $failed != 0 ]; then
  echo "gpu-check: FAILED (logs in $build/)" >&2
  exit 1
fi
echo "gpu-check: all checks passed"
