#!/usr/bin/env bash
# Installs tc from a build tree into a fresh prefix, builds a project outside
# the tree against it with find_package(tc CONFIG REQUIRED), runs it, and
# checks that it recorded a store with TC_PROFILE.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
TC_PROFILE="$work/run.tcdb" TC_PROFILE_QUIET=1 "$work/consumer/consumer"
"$build/bin/tc-analyze" "$work/run.tcdb" | grep -q "consumer.step" || { echo "the consumer's store has no consumer.step ranges"; exit 1; }
echo "installed tc works from another project"
