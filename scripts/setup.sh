#!/usr/bin/env bash
# Installs the Debian packages tc needs that are missing (nothing when all are
# there; TC_SETUP_EXTRA_PACKAGES names more), then configures and builds tc into $1 (default: build) with any
# extra CMake arguments that follow: every target, or only those TC_BUILD_TARGETS names (scripts/demo.sh:
# `demo`). Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake ninja-build pkg-config git
  libsqlite3-dev sqlite3 libcli11-dev libgtest-dev libbenchmark-dev
  libopenblas-dev libimgui-dev libglfw3-dev libstb-dev libgl-dev libgl1-mesa-dri libglx-mesa0
  xvfb xauth fortunes clang-14 libclang-rt-14-dev
  openmpi-bin libopenmpi-dev
  libsimdjson-dev nlohmann-json3-dev
)
# Callers may name more (scripts/bench-compiler.sh: the benchmark's peers).
read -r -a extra <<<"${TC_SETUP_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages and not root; run as root or: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=${1:-build}
shift || true
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
read -r -a targets <<<"${TC_BUILD_TARGETS:-}"
ninja -C "$build" "${targets[@]}"
