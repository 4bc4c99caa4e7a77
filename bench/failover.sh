#!/usr/bin/env bash
# Failover time of a replicated cluster (docs/REPLICATION.md, "Failover
# time"): a local 3-node cluster with n_val 3 (`tally cluster local --nodes 3
# --n-val 3`); KILLS times, a node picked at random (SEED, printed) is killed
# with SIGKILL, and a client on a surviving node retries one static
# transaction that increments 512 keys (every partition of the ring, with
# near certainty) until it commits. The failover time of that kill is the
# time from the kill to that first commit: the slowest partition's failover.
# Then the node is restarted and the cluster settles (every partition has a
# primary again) before the next kill. Prints every kill's time, then p50,
# p90 and p99 over the kills.
#
#   bench/failover.sh                       # 20 kills
#   KILLS=5 SEED=7 bench/failover.sh
#   BASE_PORT=39000 BUILD_DIR=build
#   KEEP=1 bench/failover.sh                # keep the data dirs and logs
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
KILLS=${KILLS:-20}
SEED=${SEED:-$RANDOM}
BASE_PORT=${BASE_PORT:-39000}
NODES=3

if [[ ! -x $BUILD_DIR/bin/tallyd || ! -x $BUILD_DIR/bin/tally ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target tallyd tally -j"$(nproc 2>/dev/null || echo 2)"
fi
bin=$(cd "$BUILD_DIR/bin" && pwd)
tmp=$(mktemp -d /tmp/tally-failover-XXXXXX)
echo "failover: seed $SEED, $KILLS kills, data in $tmp" >&2
RANDOM=$SEED

cluster_pid=""
declare -a restarted=() # pids of nodes restarted by hand
cleanup() {
  [[ -n $cluster_pid ]] && kill -TERM "$cluster_pid" 2>/dev/null || true
  for p in "${restarted[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  pkill -KILL -f -- "--data-dir $tmp/" 2>/dev/null || true
  wait 2>/dev/null || true
  if [[ -n ${KEEP:-} ]]; then echo "failover: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin/tally" cluster local --nodes "$NODES" --n-val 3 --data-dir "$tmp" \
  --base-port "$BASE_PORT" >"$tmp/cluster.out" 2>"$tmp/cluster.log" &
cluster_pid=$!

# True when node i's status lists every node serving exactly what it owns
# (no handoff under way: a node killed while it hands a partition off
# leaves it without a primary until it is back, see docs/REPLICATION.md),
# a primary for every partition, and 3 current copies of each (a copy
# opened empty after a join counts once it has caught up).
settled_on() {
  local s
  s=$("$bin/tally" --admin-socket "$tmp/node$1/admin.sock" cluster status 2>/dev/null) || return 1
  awk -v n="$NODES" -F' [|] ' '
    /^cluster:/ { match($0, /ring size [0-9]+/); ring = substr($0, RSTART + 10, RLENGTH - 10) + 0 }
    /^tally@/ && NF >= 5 { m++; if ($4 != $5 || $3 != "up") bad = 1 }
    /^tally@/ && NF == 2 { split($2, l, " "); led += l[1] }
    /^no reachable copy/ { bad = 1 }
    /^handoff in progress/ { bad = 1 }
    /^copies: every partition has/ { full = 1 }
    END { exit !(ring > 0 && m == n && led == ring && full && !bad) }' <<<"$s"
}
settled() {
  local i
  for ((i = 0; i < NODES; i++)); do settled_on "$i" || return 1; done
}
wait_settled() {
  for _ in $(seq 600); do
    settled && return 0
    sleep 0.1
  done
  echo "failover: the cluster did not settle (log $tmp/cluster.log)" >&2
  return 1
}

for _ in $(seq 600); do
  grep -q '^local Tally cluster' "$tmp/cluster.out" 2>/dev/null && break
  sleep 0.1
done
wait_settled

txn=()
for ((k = 0; k < 512; k++)); do txn+=(inc fo "k$k" 1); done

declare -a pids cmds
for ((i = 0; i < NODES; i++)); do
  pids[i]=$(grep "node$i " "$tmp/cluster.out" | grep -o 'pid [0-9]*' | cut -d' ' -f2)
  cmds[i]=$(grep "tally: starting node$i: " "$tmp/cluster.log" | head -1 | sed "s/^tally: starting node$i: //")
done

times=()
for ((n = 1; n <= KILLS; n++)); do
  victim=$((RANDOM % NODES))
  via=$(((victim + 1) % NODES))
  port=$((BASE_PORT + via))
  # Warm: every partition writable before the kill (bounded retries while
  # copies are still being configured after the last restart).
  warm=""
  for _ in $(seq 100); do
    if "$bin/tally" --port "$port" --retries 0 txn "${txn[@]}" >/dev/null 2>&1; then
      warm=1
      break
    fi
    sleep 0.1
  done
  [[ -n $warm ]] || { echo "failover: kill $n: the cluster takes no write before the kill" >&2; exit 1; }
  t0=$(date +%s%N)
  kill -KILL "${pids[victim]}"
  ok=""
  for _ in $(seq 3000); do # bounded: at most ~3000 attempts of <= 300 ms
    if "$bin/tally" --port "$port" --timeout 300 --retries 0 txn "${txn[@]}" >/dev/null 2>&1; then
      ok=1
      break
    fi
  done
  t1=$(date +%s%N)
  [[ -n $ok ]] || { echo "failover: kill $n: no commit after 3000 attempts" >&2; exit 1; }
  ms=$(((t1 - t0) / 1000000))
  times+=("$ms")
  echo "kill $n: node$victim, first commit through node$via after $ms ms" >&2
  # Back, and settled, before the next kill.
  (cd "$tmp/.." && exec ${cmds[victim]} >>"$tmp/node$victim.restart.log" 2>&1) &
  pids[victim]=$!
  restarted+=("${pids[victim]}")
  wait_settled
done

printf '%s\n' "${times[@]}" | python3 -c '
import sys, statistics
t = sorted(int(x) for x in sys.stdin)
def pct(p):
    return t[min(len(t) - 1, max(0, round(p / 100 * len(t) + 0.5) - 1))]
print(f"# failover: {len(t)} kills of 1 node of 3 (n_val 3), kill -> first commit of a "
      f"512-key transaction (every partition)")
print(f"p50 {pct(50)} ms, p90 {pct(90)} ms, p99 {pct(99)} ms, max {t[-1]} ms, "
      f"median {statistics.median(t):.0f} ms")
'
