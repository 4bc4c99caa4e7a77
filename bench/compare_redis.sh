#!/usr/bin/env bash
# Tally vs Redis on the same counter workloads (docs/PERFORMANCE.md, "Load
# benchmarks"). Builds tally-bench and tallyd if needed, then for each
# durability pair starts a local tallyd (temporary data dir, free port) and a
# local redis-server (loopback, free port, AOF, temporary dir), runs
# `tally-bench compare` (alternating rounds, medians) on each workload, and
# reports each server's CPU per operation (utime + stime from /proc over the
# compare, scaled to the measured share of it) next to the throughput ratio.
#
#   bench/compare_redis.sh                   # 3 rounds of 10 s per workload
#   DURATION=5 ROUNDS=1 bench/compare_redis.sh
#   PAIRS="periodic:everysec" WORKLOADS="static" bench/compare_redis.sh
#   BUILD_DIR=/tmp/build bench/compare_redis.sh
#   TALLYD_ARGS="--io-threads 1" bench/compare_redis.sh   # extra tallyd flags
#   FRESH=1 bench/compare_redis.sh           # new servers for every workload
#
# PAIRS: tallyd --durability : redis appendfsync, like for like:
#   periodic:everysec  acknowledged before the sync, synced every second
#   batch:always       acknowledged after the sync that covers it
# WORKLOADS: static (80:20, 32 connections x 1 outstanding), pipelined (the
# same, 32 x 16), interactive (2 reads then 2 updates in a transaction;
# Redis: GET, GET, MULTI/INCRBY/INCRBY/EXEC), multi (static-multi:4:4);
# not run unless named: reads and writes (static with 100:0 and 0:100: the
# two halves of the static mix apart).
# FRESH: 0 (the default) runs every workload of a pair on the same two
# servers, one after the other, so later workloads meet a server that has
# already taken the earlier ones' writes (docs/PERFORMANCE.md, "Steady
# state"); 1 starts both servers afresh, with empty data, for each workload.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-bench-results/load}
PAIRS=${PAIRS:-"periodic:everysec batch:always"}
TALLYD_ARGS=${TALLYD_ARGS:-}
WORKLOADS=${WORKLOADS:-"static pipelined interactive multi"}
FRESH=${FRESH:-0}

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
# utime + stime of a process, in clock ticks.
cpu_ticks() {
  awk '{print $14 + $15}' "/proc/$1/stat"
}

tmp=$(mktemp -d /tmp/tally-compare-redis-XXXXXX)
tallyd_pid=""
redis_pid=""
stop_servers() {
  [[ -n $tallyd_pid ]] && kill "$tallyd_pid" 2>/dev/null && wait "$tallyd_pid" 2>/dev/null || true
  [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  tallyd_pid=""
  redis_pid=""
}
cleanup() {
  stop_servers
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$OUT"
hz=$(getconf CLK_TCK)

start_servers() { # $1 tally durability, $2 redis appendfsync
  rm -rf "$tmp/tally" "$tmp/redis"
  mkdir -p "$tmp/redis"
  tally_port=$(free_port)
  redis_port=$(free_port)
  "$BUILD_DIR/bin/tallyd" --port "$tally_port" --data-dir "$tmp/tally" \
    --durability "$1" --log-level warn $TALLYD_ARGS >"$tmp/tallyd.log" 2>&1 &
  tallyd_pid=$!
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$tmp/redis" \
    --appendonly yes --appendfsync "$2" --save '' --daemonize no \
    >"$tmp/redis.log" 2>&1 &
  redis_pid=$!
  # Wait (bounded) until both accept connections.
  for _ in $(seq 100); do
    if (echo >/dev/tcp/127.0.0.1/"$tally_port") 2>/dev/null \
       && (echo >/dev/tcp/127.0.0.1/"$redis_port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "compare_redis: servers did not start" >&2
  cat "$tmp/tallyd.log" "$tmp/redis.log" >&2
  exit 1
}

# One workload: tally-bench compare, then CPU per operation of each server.
run_workload() { # $1 name, $2 label, rest: tally-bench options
  local name=$1 label=$2
  shift 2
  local A=antidote://127.0.0.1:$tally_port B=redis://127.0.0.1:$redis_port
  echo
  echo "### $label ($pair_label)"
  local ta tb
  ta=$(cpu_ticks "$tallyd_pid")
  tb=$(cpu_ticks "$redis_pid")
  "$bench" compare "$A" "$B" --rounds "$ROUNDS" --duration "$DURATION" \
    --warmup "$WARMUP" --keys 1000 --dist uniform --no-progress "$@" \
    --csv "$OUT/$name-$pair_name.csv" --svg "$OUT/$name-$pair_name.svg" \
    | tee "$tmp/out.txt"
  local da db
  da=$(( $(cpu_ticks "$tallyd_pid") - ta ))
  db=$(( $(cpu_ticks "$redis_pid") - tb ))
  # Operations measured per target: the "measured ... N ops" line after each
  # round header. CPU covers warm-up too; scaled by the measured share.
  awk -v da="$da" -v db="$db" -v hz="$hz" -v dur="$DURATION" -v warm="$WARMUP" '
    /^== round .*, A:/ { t = "A" } /^== round .*, B:/ { t = "B" }
    /^measured / { for (i = 1; i <= NF; ++i) if ($(i+1) ~ /^ops,?$/) ops[t] += $i }
    END {
      share = dur / (dur + warm)
      ca = da / hz * 1e6 * share / (ops["A"] > 0 ? ops["A"] : 1)
      cb = db / hz * 1e6 * share / (ops["B"] > 0 ? ops["B"] : 1)
      printf "server CPU per operation (us)  %10.1f %14.1f %10.3f\n", ca, cb, (cb > 0 ? ca / cb : 0)
    }' "$tmp/out.txt"
}

for pair in $PAIRS; do
  durability=${pair%%:*}
  fsync=${pair##*:}
  pair_name="$durability-$fsync"
  pair_label="tallyd --durability $durability vs redis appendfsync $fsync"
  start_servers "$durability" "$fsync"
  first=1
  for w in $WORKLOADS; do
    if [[ $FRESH == 1 && $first == 0 ]]; then
      stop_servers
      start_servers "$durability" "$fsync"
    fi
    first=0
    case $w in
      static)
        run_workload static "static counter operations, 80:20, 1,000 uniform keys, 32 connections x 1" \
          --connections 32 --ratio 80:20 --mode static-single ;;
      reads)
        run_workload reads "static counter reads only (100:0), 1,000 uniform keys, 32 connections x 1" \
          --connections 32 --ratio 100:0 --mode static-single ;;
      writes)
        run_workload writes "static counter updates only (0:100), 1,000 uniform keys, 32 connections x 1" \
          --connections 32 --ratio 0:100 --mode static-single ;;
      pipelined)
        run_workload pipelined "static counter operations, 80:20, 32 connections x 16 outstanding" \
          --connections 32 --outstanding 16 --ratio 80:20 --mode static-single ;;
      interactive)
        run_workload interactive "interactive transactions (2 reads, 2 updates), 32 connections" \
          --connections 32 --mode interactive:2:2 ;;
      multi)
        run_workload multi "static multi-key transactions (4 reads or 4 updates), 80:20, 32 connections" \
          --connections 32 --ratio 80:20 --mode static-multi:4:4 ;;
      *) echo "compare_redis: unknown workload $w" >&2; exit 2 ;;
    esac
  done
  stop_servers
done
