#!/usr/bin/env bash
# Sets up Tally and runs its main job on the embedded defaults: one tallyd
# node with its data in ./data, serving AntidoteDB's protocol on
# 127.0.0.1:8087. Extra arguments go to tallyd (see `tallyd --help`).
# Stop it with Ctrl-C (SIGINT) or SIGTERM: it flushes and exits cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/bin/tallyd --data-dir ./data "$@"
