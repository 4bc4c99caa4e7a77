#!/usr/bin/env bash
# A/B of two tallyd binaries on one workload (docs/PERFORMANCE.md, "The
# request path"): alternating rounds, OLD then NEW, each on a fresh data
# directory and port, 2 s of unmeasured warm-up, then one measured
# `tally-bench run`. Per round: throughput, tallyd's CPU per operation
# (utime + stime from /proc/PID/stat, in 10 ms ticks, per measured
# operation: per transaction for interactive workloads), and from perf's
# syscall tracepoints the system calls per operation and LMDB's page writes
# per operation (pwrite64 + writev: tallyd writes files only through LMDB),
# and tallyd's peak resident memory (VmHWM from /proc/PID/status, read just
# before it is stopped).
# The perf window also covers tally-bench's exactly-once read-back after
# the measured run (the same for both binaries). Needs `perf` with
# tracepoints (no hardware counters needed).
#
#   bench/ab_tallyd.sh OLD_TALLYD NEW_TALLYD MODE [ROUNDS [SECONDS]]
#   e.g. bench/ab_tallyd.sh /work/wt-integ/build/bin/tallyd build/bin/tallyd \
#          interactive:2:2 3 10
#
# Environment: TALLY_BENCH (default build/bin/tally-bench), TALLYD_ARGS
# (default "--durability periodic"), OLD_ARGS and NEW_ARGS (more flags for
# one side only: the same binary twice with OLD_ARGS="--journal-tail off"
# is an A/B of one setting), CONNECTIONS (32), KEYS (1000), PORT (first
# port, default 18400). Static modes run --ratio 80:20.
set -euo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ] || [ $# -lt 3 ]; then
  sed -n 2,24p "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 3 ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ] || exit 2
  exit 0
fi
old=$1 new=$2 mode=$3 rounds=${4:-3} dur=${5:-10}
bench=${TALLY_BENCH:-build/bin/tally-bench}
args=${TALLYD_ARGS:---durability periodic}
port=${PORT:-18400}
extra=()
case $mode in static-*) extra=(--ratio 80:20) ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/tally-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT

run_one() { # $1 binary, $2 port, $3 label, $4 flags for this side
  local d="$work/data.$2" pid ps_pid t1 t2 out n sc pw wv hwm
  mkdir -p "$d"
  # shellcheck disable=SC2086
  "$1" --port "$2" --data-dir "$d" $args $4 --log-level warn >"$d.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && break; sleep 0.1; done
  "$bench" run --target "antidote://127.0.0.1:$2" --mode "$mode" "${extra[@]}" \
    --connections "${CONNECTIONS:-32}" --keys "${KEYS:-1000}" --dist uniform \
    --duration 2 --no-progress --no-verify >/dev/null 2>&1
  t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  perf stat -x, -o "$d.perf" -p "$pid" \
    -e raw_syscalls:sys_enter,syscalls:sys_enter_pwrite64,syscalls:sys_enter_writev &
  ps_pid=$!
  out=$("$bench" run --target "antidote://127.0.0.1:$2" --mode "$mode" "${extra[@]}" \
    --connections "${CONNECTIONS:-32}" --keys "${KEYS:-1000}" --dist uniform \
    --duration "$dur" --no-progress 2>&1)
  t2=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  kill -INT "$ps_pid"; wait "$ps_pid" 2>/dev/null || true
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  n=$(grep -m1 -oE 's: [0-9]+ ops' <<<"$out" | awk '{print $2}')
  sc=$(grep 'raw_syscalls:sys_enter' "$d.perf" | cut -d, -f1)
  pw=$(grep 'sys_enter_pwrite64' "$d.perf" | cut -d, -f1)
  wv=$(grep 'sys_enter_writev' "$d.perf" | cut -d, -f1)
  awk -v b="$3" -v ops="$(grep -m1 -oE '[0-9.]+ ops/s' <<<"$out" | awk '{print $1}')" \
      -v n="$n" -v t="$((t2 - t1))" -v sc="$sc" -v w="$((pw + wv))" -v hwm="$hwm" \
      -v err="$(grep -m1 -oE '^errors: .*' <<<"$out")" \
      -v eo="$(grep -m1 -oE 'relative error [0-9.]+' <<<"$out")" \
      'BEGIN { printf "%-3s %9.1f ops/s  %6.1f us CPU/op  %5.1f syscalls/op  %5.2f LMDB writes/op  %4.0f MiB peak RSS  %s, %s\n",
               b, ops, t * 10000 / n, sc / n, w / n, hwm / 1024, err, eo }'
}

for _ in $(seq "$rounds"); do
  port=$((port + 1)); run_one "$old" "$port" old "${OLD_ARGS:-}"
  port=$((port + 1)); run_one "$new" "$port" new "${NEW_ARGS:-}"
done
