#!/usr/bin/env bash
# Tally vs Redis on the same counter workloads (docs/PERFORMANCE.md, "Load
# benchmarks"). Builds tally-bench and tallyd if needed, starts a local tallyd
# (temporary data dir, free port, --durability batch) and a local
# redis-server (loopback, free port, AOF with fsync every second, temporary
# dir), runs `tally-bench compare` on two workloads, then stops both.
#
#   bench/compare_redis.sh                   # 3 rounds of 10 s per workload
#   DURATION=5 ROUNDS=1 bench/compare_redis.sh
#   BUILD_DIR=/tmp/build bench/compare_redis.sh
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-bench-results/load}

command -v redis-server >/dev/null || {
  echo "compare_redis: redis-server not found (apt-get install redis-server)" >&2
  exit 1
}
if [[ ! -x $BUILD_DIR/bin/tally-bench || ! -x $BUILD_DIR/bin/tallyd ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target tally-bench tallyd -j"$(nproc 2>/dev/null || echo 2)"
fi
bench=$BUILD_DIR/bin/tally-bench

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

tmp=$(mktemp -d /tmp/tally-compare-redis-XXXXXX)
tallyd_pid=""
redis_pid=""
cleanup() {
  [[ -n $tallyd_pid ]] && kill "$tallyd_pid" 2>/dev/null && wait "$tallyd_pid" 2>/dev/null || true
  [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

tally_port=$(free_port)
redis_port=$(free_port)
mkdir -p "$tmp/redis" "$OUT"
"$BUILD_DIR/bin/tallyd" --port "$tally_port" --data-dir "$tmp/tally" \
  --durability batch --log-level warn >"$tmp/tallyd.log" 2>&1 &
tallyd_pid=$!
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$tmp/redis" \
  --appendonly yes --appendfsync everysec --save '' --daemonize no \
  >"$tmp/redis.log" 2>&1 &
redis_pid=$!

# Wait (bounded) until both accept connections.
for _ in $(seq 100); do
  if (echo >/dev/tcp/127.0.0.1/"$tally_port") 2>/dev/null \
     && (echo >/dev/tcp/127.0.0.1/"$redis_port") 2>/dev/null; then
    break
  fi
  sleep 0.1
done

A=antidote://127.0.0.1:$tally_port
B=redis://127.0.0.1:$redis_port
common=(--rounds "$ROUNDS" --duration "$DURATION" --warmup "$WARMUP"
        --keys 1000 --dist uniform --connections 32 --no-progress)

echo "### static counter operations, 80:20, 1,000 uniform keys, 32 connections"
"$bench" compare "$A" "$B" "${common[@]}" --ratio 80:20 --mode static-single \
  --csv "$OUT/static.csv" --svg "$OUT/static.svg"

echo
echo "### interactive transactions (2 reads, 2 updates), 32 connections"
"$bench" compare "$A" "$B" "${common[@]}" --mode interactive:2:2 \
  --csv "$OUT/interactive.csv" --svg "$OUT/interactive.svg"
