#!/usr/bin/env bash
# Command 1: set up what is missing, build what the demo runs (ninja demo), train the text classifier on
# Debian's fortunes under tc-profile with dynamic padding (the trap), and print
# tc-analyze's report. The store stays in demo/ for tc-viewer.
set -euo pipefail
cd "$(dirname "$0")/.."
TC_BUILD_TARGETS=demo scripts/setup.sh build   # only what the demo runs (ninja demo)
mkdir -p demo
store=demo/text_classifier.tcdb
build/bin/tc-profile --force -o "$store" -- \
  build/bin/tc-sample-text-classifier --padding longest --steps 60 --log-every 20
echo
build/bin/tc-analyze "$store" || true   # findings are the point; a --fail-on gate is for CI
echo
echo "The store is $store. Next:"
echo "  build/bin/tc-viewer $store                     # the timeline (needs a display)"
echo "  build/bin/tc-analyze recompiles $store         # every compilation and what changed"
echo "  build/bin/tc-profile -o demo/bucketed.tcdb -- build/bin/tc-sample-text-classifier --padding bucket --steps 60"
echo "  build/bin/tc-analyze diff $store demo/bucketed.tcdb   # did the fix work?"
