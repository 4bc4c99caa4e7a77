#!/usr/bin/env bash
# Sets up Tally and runs its main job on the embedded defaults.
# Until tallyd lands (issue: "A tallyd node"), the main job is tally-demo:
# exactly-once counters through a Forgetful Bloom Filter under client
# retries, Bloom-clock causality checks, and key placement on the ring.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/bin/tally-demo "$@"
