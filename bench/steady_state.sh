#!/usr/bin/env bash
# How a tallyd's cost per operation moves over one long load (docs/PERFORMANCE.md,
# "Steady state"): a fresh tallyd per binary given, one tally-bench run of
# DURATION seconds against it, and at each sample time T (seconds after the
# load started) tallyd's CPU and system calls over WINDOW seconds, divided by
# the operations tally-bench completed in that window (its per-second CSV).
# A short benchmark measures the first seconds of a store; the journals'
# retained history (60 s by default) and the decision index (10 minutes)
# fill for minutes, and what a write costs moves with them.
#
#   bench/steady_state.sh                          # build/bin/tallyd
#   bench/steady_state.sh OLD_TALLYD NEW_TALLYD    # one after the other
#   MODE=static-single RATIO=80:20 DURATION=120 SAMPLES="20 100" bench/steady_state.sh
#
# Environment: MODE (interactive:2:2), RATIO (static modes only), DURATION
# (240), SAMPLES ("20 80 140 200"), WINDOW (5), CONNECTIONS (32), KEYS
# (1000), DURABILITY (periodic), TALLYD_ARGS (extra flags), BUILD_DIR (build).
# Needs perf (apt-get install linux-perf) for the system-call counts.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

BUILD_DIR=${BUILD_DIR:-build}
MODE=${MODE:-interactive:2:2}
RATIO=${RATIO:-}
DURATION=${DURATION:-240}
SAMPLES=${SAMPLES:-"20 80 140 200"}
WINDOW=${WINDOW:-5}
CONNECTIONS=${CONNECTIONS:-32}
KEYS=${KEYS:-1000}
DURABILITY=${DURABILITY:-periodic}
TALLYD_ARGS=${TALLYD_ARGS:-}
bench=$BUILD_DIR/bin/tally-bench
binaries=("$@")
[[ ${#binaries[@]} -eq 0 ]] && binaries=("$BUILD_DIR/bin/tallyd")

command -v perf >/dev/null || {
  echo "steady_state: perf not found (apt-get install linux-perf)" >&2
  exit 1
}
for b in "$bench" "${binaries[@]}"; do
  [[ -x $b ]] || { echo "steady_state: $b is not built (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
last=0
for t in $SAMPLES; do
  (( t > last )) || { echo "steady_state: SAMPLES must rise" >&2; exit 1; }
  (( t + WINDOW < DURATION )) || { echo "steady_state: sample $t + $WINDOW s is past DURATION $DURATION" >&2; exit 1; }
  last=$t
done

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

tmp=$(mktemp -d /tmp/tally-steady-XXXXXX)
tallyd_pid=""
bench_pid=""
cleanup() {
  [[ -n $bench_pid ]] && kill "$bench_pid" 2>/dev/null || true
  [[ -n $tallyd_pid ]] && kill "$tallyd_pid" 2>/dev/null && wait "$tallyd_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

hz=$(getconf CLK_TCK)
ratio=()
[[ -n $RATIO ]] && ratio=(--ratio "$RATIO")
echo "# steady_state: $MODE ${RATIO:+$RATIO }$CONNECTIONS connections, $KEYS keys, durability $DURABILITY, $DURATION s, window $WINDOW s"
for b in "${binaries[@]}"; do
  port=$(free_port)
  rm -rf "$tmp/data"
  # shellcheck disable=SC2086
  "$b" --port "$port" --data-dir "$tmp/data" --durability "$DURABILITY" \
    --log-level warn $TALLYD_ARGS >"$tmp/tallyd.log" 2>&1 &
  tallyd_pid=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  "$bench" run --target "antidote://127.0.0.1:$port" --mode "$MODE" "${ratio[@]}" \
    --connections "$CONNECTIONS" --keys "$KEYS" --dist uniform --duration "$DURATION" \
    --warmup 0 --no-progress --no-verify --csv "$tmp/series.csv" >"$tmp/bench.txt" 2>&1 &
  bench_pid=$!
  started=$(date +%s.%N)
  rows=()
  for t in $SAMPLES; do
    sleep "$(echo "$started + $t - $(date +%s.%N)" | bc)"
    c0=$(cpu_ticks "$tallyd_pid")
    perf stat -x, -e 'syscalls:sys_enter_pwrite64,syscalls:sys_enter_writev,syscalls:sys_enter_write,syscalls:sys_enter_sendto,syscalls:sys_enter_fdatasync' \
      -p "$tallyd_pid" -o "$tmp/sys.$t" -- sleep "$WINDOW" >/dev/null 2>&1
    c1=$(cpu_ticks "$tallyd_pid")
    rows+=("$t $((c1 - c0)) $(du -sm "$tmp/data" | cut -f1)")
  done
  wait "$bench_pid" || { echo "steady_state: tally-bench failed:" >&2; cat "$tmp/bench.txt" >&2; exit 1; }
  bench_pid=""
  kill "$tallyd_pid"; wait "$tallyd_pid" 2>/dev/null || true
  tallyd_pid=""
  echo "## $b"
  grep -m1 -E "^measured" "$tmp/bench.txt" || true
  printf '%8s %10s %10s %10s %9s %9s %9s %8s\n' "t (s)" "ops/s" "CPU us/op" "pwrite/op" "writev/op" "write/op" "send/op" "data MB"
  for row in "${rows[@]}"; do
    read -r t ticks mb <<<"$row"
    # Operations completed in seconds t+1 .. t+WINDOW of the CSV (second 1
    # is the load's first second): reads + updates + transactions.
    ops=$(awk -F, -v a=$((t + 1)) -v b=$((t + WINDOW)) 'NR > 1 && $1 >= a && $1 <= b {s += $2 + $5 + $8} END {print s + 0}' "$tmp/series.csv")
    count() { awk -F, -v e="$1" '$3 == e {print $1}' "$tmp/sys.$t"; }
    awk -v t="$t" -v ops="$ops" -v w="$WINDOW" -v ticks="$ticks" -v hz="$hz" -v mb="$mb" \
        -v pw="$(count syscalls:sys_enter_pwrite64)" -v wv="$(count syscalls:sys_enter_writev)" \
        -v wr="$(count syscalls:sys_enter_write)" -v sd="$(count syscalls:sys_enter_sendto)" \
      'BEGIN { if (ops == 0) { printf "%8s no operations completed in the window\n", t; exit }
               printf "%8d %10.0f %10.1f %10.2f %9.2f %9.2f %9.2f %8d\n", t, ops / w,
                      ticks / hz * 1e6 / ops, pw / ops, wv / ops, wr / ops, sd / ops, mb }'
  done
done
