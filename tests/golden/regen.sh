#!/usr/bin/env bash
# Rewrites every tests/golden/*/expected.{json,txt} from what tc-analyze now
# prints, then shows what changed. Usage: tests/golden/regen.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
ninja -C "$build" tc_golden_test tc-analyze
TC_GOLDEN_REGEN=1 "$build/bin/tc_golden_test" --gtest_brief=1
git status --short tests/golden
git diff --stat tests/golden
