#!/usr/bin/env bash
# Counts 3-node shutdowns that hang (docs/NODE.md, "Shutdown"): each round
# starts `tally cluster local --nodes 3` on a fresh data dir, runs 3 s of the
# 80:20 load spread over the nodes, sends SIGTERM to `tally` (which gives
# every node 10 s to stop, then kills it and says so), and counts the
# nodes that did not stop in time.
#
#   bench/cluster_shutdown.sh          # 10 rounds
#   ROUNDS=20 BASE_PORT=12800 bench/cluster_shutdown.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-10}
BASE_PORT=${BASE_PORT:-12800}
for bin in tally tallyd tally-bench; do
  [[ -x $BUILD_DIR/bin/$bin ]] || { echo "cluster_shutdown: build first (scripts/setup.sh)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/tally-shutdown.XXXXXX)
trap 'rm -rf "$work"' EXIT
targets="antidote://127.0.0.1:$BASE_PORT,127.0.0.1:$((BASE_PORT + 1)),127.0.0.1:$((BASE_PORT + 2))"
hung=0
for round in $(seq 1 "$ROUNDS"); do
  rm -rf "$work/d"
  "$BUILD_DIR/bin/tally" cluster local --nodes 3 --base-port "$BASE_PORT" \
    --data-dir "$work/d" > "$work/log" 2>&1 &
  pid=$!
  ready=0
  for _ in $(seq 1 200); do # up to 20 s for 3 members, all up
    if "$BUILD_DIR/bin/tally" --admin-socket "$work/d/node2/admin.sock" cluster status 2>/dev/null \
         | grep -q "3 member"; then ready=1; break; fi
    sleep 0.1
  done
  if ((ready == 0)); then
    kill -TERM "$pid"; wait "$pid" || true
    echo "round $round: the cluster did not form (ports in use?)" >&2; exit 1
  fi
  "$BUILD_DIR/bin/tally-bench" run --target "$targets" --duration 3 --connections 4 \
    --outstanding 16 --no-progress --no-verify > /dev/null 2>&1 || true
  kill -TERM "$pid"
  wait "$pid" || true
  n=$(grep -c "did not stop" "$work/log" || true)
  hung=$((hung + n))
  echo "round $round: $n node(s) did not stop within 10 s"
done
echo "nodes that hung on SIGTERM: $hung in $ROUNDS rounds of 3 nodes"
