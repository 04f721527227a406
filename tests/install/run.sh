#!/usr/bin/env bash
# Installs tc from a build tree into a fresh prefix, builds a project outside
# the tree against it with find_package(tc CONFIG REQUIRED), runs it, and
# checks that it recorded a store with TC_PROFILE.
set -euo pipefail
build=$1
trace=$2  # ON or OFF: whether recording is compiled in
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# Every tool the build is configured to make is installed (a tool left in
# bin/ by an earlier configuration does not count: the cache says).
tools=(tc-profile tc-analyze)
if grep -q '^TC_BUILD_VIEWER:BOOL=ON$' "$build/CMakeCache.txt"; then tools+=(tc-viewer); fi
for tool in "${tools[@]}"; do
  if [ ! -x "$work/prefix/bin/$tool" ]; then echo "cmake --install did not install $tool"; exit 1; fi
done
cmake -S "$src/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
TC_PROFILE="$work/run.tcdb" TC_PROFILE_QUIET=1 "$work/consumer/consumer"
if [ "$trace" = ON ]; then
  "$build/bin/tc-analyze" "$work/run.tcdb" --json | grep -q '"steps":60' || { echo "the consumer's store does not hold its 60 steps"; exit 1; }
else
  # Recording compiled out: the store is still written, and valid.
  "$build/bin/tc-analyze" export "$work/run.tcdb" -o "$work/trace.json"
fi
echo "installed tc works from another project"
