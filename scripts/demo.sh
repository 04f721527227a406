#!/usr/bin/env bash
# Command 1: set up what is missing, build, record a run under tc-profile and
# print its analysis. The store stays in demo/ for tc-analyze and tc-viewer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
mkdir -p demo
build/bin/tc-profile --force -o demo/demo.tcdb -- build/bin/tc-test-recorder --events 300000 --threads 4 --end exit
echo
build/bin/tc-analyze demo/demo.tcdb
echo
echo "The store is demo/demo.tcdb: query it with sqlite3 (schema in docs/schema.md) or read it again with build/bin/tc-analyze."
