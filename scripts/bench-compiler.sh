#!/usr/bin/env bash
# Benchmark of the compiled path against its peers, in one harness run:
# tc compiled, tc eager, libtorch 1.13 (Debian's libtorch-dev, OpenBLAS
# pthread), JAX jit, torch 2.15 eager and torch.compile (Inductor) on the CPU
# (pip, in a virtual environment here: peers only, never dependencies of tc). Installs what is missing, builds
# build-bench (Release, with libtorch) and prints the tables docs/performance.md quotes.
# Arguments go to tc-bench-compiler (--rounds, --steps, --model, --seq,
# --neighbour busy for the contention table).
set -euo pipefail
cd "$(dirname "$0")/.."

# setup.sh installs the peers with what else is missing, then builds.
TC_SETUP_EXTRA_PACKAGES="libtorch-dev libopenblas0-pthread python3-venv" \
  bash scripts/setup.sh build-bench -DCMAKE_BUILD_TYPE=Release -DTC_BENCH_PEERS=ON -DTC_BUILD_VIEWER=OFF -DTC_BUILD_TESTS=OFF -DTC_BUILD_SAMPLES=OFF >/dev/null
venv=.tc-bench-venv
if ! "$venv/bin/python" -c "import jax, torch" 2>/dev/null; then
  echo "bench: installing jax[cpu] and torch into $venv (peers only; torch is about 5 GB)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "jax[cpu]" torch numpy
fi

echo "bench: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load average $(cut -d' ' -f1-3 /proc/loadavg)," \
  "jax $("$venv/bin/python" -c 'import jax; print(jax.__version__)'), torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
exec build-bench/bin/tc-bench-compiler --jax-python "$venv/bin/python" --torch-python "$venv/bin/python" "$@"
