#!/usr/bin/env bash
# The cost of TLS on the client port (docs/SECURITY.md, "The client port"):
# one tallyd serving both its plain port and --client-tls-port (the test
# certificates of tests/cluster/tls/), and tally-bench compare alternating
# TLS (antidotes://, A) and plain (antidote://, B) rounds on the same node:
# pipelined (4 connections x 16 outstanding) and one request at a time
# (4 x 1). Prints each comparison's medians and the ratio TLS/plain (A/B).
# --durability none, so the transport is what differs.
#
#   ROUNDS=3 DURATION=3 BASE_PORT=12700 bench/client_tls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3}
BASE_PORT=${BASE_PORT:-12700}
bin=$BUILD_DIR/bin
for b in tallyd tally-bench; do
  [[ -x $bin/$b ]] || { echo "client_tls: $bin/$b missing (scripts/setup.sh builds it)" >&2; exit 2; }
done
tls=tests/cluster/tls
work=$(mktemp -d /tmp/tally-client-tls-bench.XXXXXX)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

plain=$BASE_PORT tlsp=$((BASE_PORT + 1))
"$bin/tallyd" --data-dir "$work/d" --port "$plain" --cluster-port $((BASE_PORT + 2)) \
  --client-tls-port "$tlsp" --client-tls-cert $tls/client-port-node.pem \
  --client-tls-key $tls/client-port-node-key.pem --partitions 16 --durability none \
  2>"$work/tallyd.log" &
pid=$!
for _ in $(seq 300); do # ready: both ports answer
  grep -q "tallyd ready on port" "$work/tallyd.log" && break
  sleep 0.1
done
grep -q "tallyd ready on port" "$work/tallyd.log" || { cat "$work/tallyd.log" >&2; exit 1; }

for outstanding in 16 1; do
  echo "== 4 connections x $outstanding outstanding, static-single 80:20, $ROUNDS rounds of ${DURATION} s"
  "$bin/tally-bench" compare "antidotes://127.0.0.1:$tlsp" "antidote://127.0.0.1:$plain" \
    --tls-ca $tls/client-port-ca.pem --rounds "$ROUNDS" --duration "$DURATION" --warmup 1 \
    --no-progress --mode static-single --ratio 80:20 --keys 1000 --connections 4 \
    --outstanding "$outstanding" \
    >"$work/compare-$outstanding.txt"
  grep -E "^(== round|measured|median of|figure|throughput|read p50|read p99 ms)" "$work/compare-$outstanding.txt"
done
