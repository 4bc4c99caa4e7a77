#!/usr/bin/env bash
# tally-bench's counter, set and register workloads against one local tallyd
# (docs/BENCH.md, "Sets and registers"): ROUNDS rounds, each running the
# three types in turn (interleaved, so a noisy machine hits all three alike),
# each type in its own bucket. Prints every run's table; the medians are
# read off them.
#
#   bench/type_workloads.sh                  # 3 rounds of 3 s per type
#   DURATION=5 ROUNDS=5 BUILD_DIR=/tmp/build bench/type_workloads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18391}
for b in tallyd tally-bench; do
  [[ -x $BUILD_DIR/bin/$b ]] || { echo "type_workloads: $BUILD_DIR/bin/$b is not built" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/tally-type-workloads.XXXXXX)
"$BUILD_DIR/bin/tallyd" --data-dir "$dir/data" --port "$PORT" >"$dir/log" 2>&1 &
node=$!
trap 'kill $node 2>/dev/null; wait $node 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
  grep -q ready "$dir/log" && break
  kill -0 $node 2>/dev/null || { cat "$dir/log" >&2; exit 1; }
  sleep 0.1
done
grep -q ready "$dir/log" || { echo "type_workloads: tallyd not ready after 10 s" >&2; exit 1; }
for round in $(seq 1 "$ROUNDS"); do
  for type in counter set register; do
    echo "== round $round, --type $type"
    "$BUILD_DIR/bin/tally-bench" run --target "antidote://127.0.0.1:$PORT" --type "$type" \
      --bucket "b-$type" --connections 4 --outstanding 4 --keys 1000 --buckets 16 \
      --duration "$DURATION" --no-progress
  done
done
