#!/usr/bin/env bash
# Latency at a fixed load (issue 12: "p99 <= 1 ms at half of Tally's
# peak"; docs/PERFORMANCE.md, "Latency at half load"). Static counter
# operations, 80:20, 1,000 uniform keys, 32 connections, at RATE operations
# per second in total (tally-bench --rate: latency from each operation's
# scheduled start, so a server that stalls shows it). Each round starts
# every target afresh (a temporary data dir, free ports) and loads them one
# after the other: the tallyd binaries given (default: this build's) with
# --durability periodic, then redis-server with appendfsync everysec. Prints
# each round's read p50 / p99 / p99.9 / max (ms) per target, then the
# medians over the rounds.
#
#   bench/latency_at_rate.sh                          # RATE: half the peak
#   RATE=22000 ROUNDS=3 DURATION=30 bench/latency_at_rate.sh
#   bench/latency_at_rate.sh /tmp/tallyd-old build/bin/tallyd   # an A/B
#
# RATE unset: the peak is measured first (this build's tallyd, 5 s, as fast
# as it answers) and RATE is half of it.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) sed -n 2,19p "$0"; exit 0 ;;
esac
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-30}
bench=$BUILD_DIR/bin/tally-bench
tallyds=("$@")
[[ ${#tallyds[@]} -eq 0 ]] && tallyds=("$BUILD_DIR/bin/tallyd")
for b in "$bench" "${tallyds[@]}"; do
  [[ -x $b ]] || { echo "latency_at_rate: $b not found (build it first)" >&2; exit 1; }
done
command -v redis-server >/dev/null || {
  echo "latency_at_rate: redis-server not found (apt-get install redis-server)" >&2
  exit 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
tmp=$(mktemp -d /tmp/tally-latency-XXXXXX)
server_pid=""
stop_server() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT

wait_port() { # $1 port: bounded wait until it accepts
  for _ in $(seq 100); do
    (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "latency_at_rate: no server on port $1" >&2
  cat "$tmp/server.log" >&2
  exit 1
}

start_tallyd() { # $1 binary; sets url
  rm -rf "$tmp/data"
  local port
  port=$(free_port)
  "$1" --port "$port" --data-dir "$tmp/data" --durability periodic --log-level warn \
    >"$tmp/server.log" 2>&1 &
  server_pid=$!
  wait_port "$port"
  url=antidote://127.0.0.1:$port
}

start_redis() { # sets url
  rm -rf "$tmp/redis"
  mkdir -p "$tmp/redis"
  local port
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/redis" --appendonly yes \
    --appendfsync everysec --save '' --daemonize no >"$tmp/server.log" 2>&1 &
  server_pid=$!
  wait_port "$port"
  url=redis://127.0.0.1:$port
}

load() { # $1 url, rest: tally-bench options; prints the read row's figures
  "$bench" run --target "$1" --connections 32 --keys 1000 --dist uniform --ratio 80:20 \
    --no-verify --no-progress "${@:2}" >"$tmp/out.txt" 2>&1 || {
    cat "$tmp/out.txt" >&2
    exit 1
  }
}

if [[ -z ${RATE:-} ]]; then
  start_tallyd "$BUILD_DIR/bin/tallyd"
  load "$url" --duration 5 --warmup 1
  stop_server
  peak=$(awk '/^measured/ { print int($6) }' "$tmp/out.txt")
  RATE=$((peak / 2))
  echo "peak $peak ops/s: RATE $RATE"
fi

names=()
for i in "${!tallyds[@]}"; do names+=("tallyd$((i + 1))"); done
names+=("redis")
echo "static 80:20, 32 connections, $RATE ops/s, $DURATION s per round, $ROUNDS rounds"
printf '%-7s %-8s %9s %9s %9s %9s %12s\n' round target "p50 ms" "p99 ms" "p99.9 ms" "max ms" "ops/s"
results=$tmp/results.txt
: >"$results"
for r in $(seq "$ROUNDS"); do
  for i in "${!names[@]}"; do
    if [[ ${names[$i]} == redis ]]; then start_redis; else start_tallyd "${tallyds[$i]}"; fi
    load "$url" --rate "$RATE" --duration "$DURATION" --warmup 1
    stop_server
    # read row: type ops ops/s p50 p90 p99 p99.9 max
    row=$(awk '/^read / { print $4, $6, $7, $8 }' "$tmp/out.txt")
    got=$(awk '/^measured/ { print $6 }' "$tmp/out.txt")
    echo "${names[$i]} $row" >>"$results"
    # shellcheck disable=SC2086
    printf '%-7s %-8s %9s %9s %9s %9s %12s\n' "$r" "${names[$i]}" $row "$got"
  done
done
echo "medians over $ROUNDS rounds:"
for n in "${names[@]}"; do
  awk -v n="$n" '
    $1 == n { k++; p50[k] = $2; p99[k] = $3; p999[k] = $4; mx[k] = $5 }
    function med(a, m,   i, j, t) {
      for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j)
        if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return a[int((m + 1) / 2)]
    }
    END { printf "%-8s p50 %s  p99 %s  p99.9 %s  max %s\n", n, med(p50, k), med(p99, k), med(p999, k), med(mx, k) }
  ' "$results"
done
for i in "${!tallyds[@]}"; do echo "tallyd$((i + 1)) = ${tallyds[$i]}"; done
