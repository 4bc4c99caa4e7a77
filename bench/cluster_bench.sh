#!/usr/bin/env bash
# One node vs a local 3-node cluster, and single- vs cross-node transactions
# (docs/PERFORMANCE.md, "Cluster"). Every run gets fresh nodes on a fresh
# data dir under /tmp: a plain `tallyd` for "1 node", `tally cluster local
# --nodes 3` for "3 nodes" (tally-bench's connections spread over the three:
# connection i uses node i mod 3). The configurations alternate run by run
# (the order is reversed every other round) so that the machine's noise hits
# all of them; the script prints the medians over the rounds and the ratios,
# then stops every node it started.
#
#   bench/cluster_bench.sh                     # 5 rounds of 5 s (+1 s warmup)
#   ROUNDS=3 DURATION=3 bench/cluster_bench.sh
#   ONLY=a bench/cluster_bench.sh              # part a only (b: part b only)
#   ONLY=c bench/cluster_bench.sh              # part c: 3 nodes, n_val 1 vs 3
#                                              # (docs/REPLICATION.md)
#   RATIO=0:100 ONLY=c bench/cluster_bench.sh  # parts a and c at another
#                                              # read:update ratio (80:20)
#   BASE_PORT=12000 BUILD_DIR=build OUT=bench-results/cluster
#
# Besides tally-bench's figures, each run reports the servers' CPU per
# operation: the utime + stime of every tallyd of the run (/proc/PID/stat)
# over the whole tally-bench run, warm-up and exactly-once read-back
# included, divided by the measured operations; so it is a little above
# the cost of one operation, alike for every configuration.
#
# Ports: client ports BASE_PORT..BASE_PORT+899 (one block of 4 per run),
# cluster ports 1000 above (tally cluster local's rule). Below the kernel's
# ephemeral range (32768-60999 here), where any outgoing connection of a
# test or benchmark running beside this one can take a port first.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
BASE_PORT=${BASE_PORT:-12000}
OUT=${OUT:-bench-results/cluster}
ONLY=${ONLY:-ab}
NODES=3

if [[ ! -x $BUILD_DIR/bin/tally-bench || ! -x $BUILD_DIR/bin/tallyd
      || ! -x $BUILD_DIR/bin/tally ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target tally-bench tallyd tally \
    -j"$(nproc 2>/dev/null || echo 2)"
fi
bin=$BUILD_DIR/bin
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
tmp=$(mktemp -d /tmp/tally-cluster-bench-XXXXXX)
results=$OUT/results.tsv
: >"$results"

node_pid=""   # the tallyd or the `tally cluster local` of the current run
node_dir=""
# The pids of the tallyd processes started for this run: the plain tallyd,
# or the children of `tally cluster local`.
node_pids() {
  [[ -z $node_pid ]] && return 0
  if [[ $(cat "/proc/$node_pid/comm" 2>/dev/null) == tallyd ]]; then
    echo "$node_pid"
  else
    pgrep -P "$node_pid" -x tallyd || true
  fi
}

# cpu_ticks PID...: their utime + stime, in clock ticks.
cpu_ticks() {
  local t=0 p f
  for p in "$@"; do
    f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
    t=$((t + ${f% *} + ${f#* }))
  done
  echo "$t"
}

stop_nodes() {
  [[ -z $node_pid ]] && return 0
  kill -TERM "$node_pid" 2>/dev/null || true
  # tally cluster local gives its nodes 10 s, then SIGKILL: bounded.
  for _ in $(seq 300); do
    kill -0 "$node_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$node_pid" 2>/dev/null; then
    echo "cluster_bench: pid $node_pid did not stop in 30 s; SIGKILL" >&2
    kill -KILL "$node_pid" 2>/dev/null || true
  fi
  wait "$node_pid" 2>/dev/null || true
  # Any tallyd of this run's data dir still alive (only ours: the dir is
  # ours) is reported and killed by pid.
  local left
  left=$(pgrep -f -- "--data-dir $node_dir" || true)
  if [[ -n $left ]]; then
    echo "cluster_bench: tallyd left running after stop: $left; SIGKILL" >&2
    for p in $left; do kill -KILL "$p" 2>/dev/null || true; done
  fi
  node_pid=""
}
cleanup() {
  stop_nodes
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_port() { # port: bounded wait until it accepts connections
  for _ in $(seq 300); do
    (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# True when every node's `cluster status` lists all nodes, each serving
# exactly what it owns, the owned partitions add up to the ring size, and
# every node reports the same epoch.
ring_settled() { # dir (the nodes' data dirs are dir/node<i>; admin via their sockets)
  local epochs="" i s
  for ((i = 0; i < NODES; i++)); do
    s=$("$bin/tally" --admin-socket "$1/node$i/admin.sock" cluster status 2>/dev/null) || return 1
    awk -v n="$NODES" -F' [|] ' '
      /^cluster:/ { match($0, /ring size [0-9]+/); ring = substr($0, RSTART + 10, RLENGTH - 10) + 0 }
      /^tally@/ && NF >= 5 { m++; split($4, o, " "); split($5, v, " ");
                  if ($4 != $5) bad = 1; owned += o[1] }
      /^replication:/ { replicated = 1 }
      /^tally@/ && NF == 2 { split($2, l, " "); led += l[1] }
      /^no reachable copy/ { bad = 1 }
      END { exit !(m == n && !bad && owned == ring && ring > 0 \
                   && (!replicated || led == ring)) }' <<<"$s" || return 1
    epochs+="$(grep -o 'epoch [0-9]*' <<<"$s") "
  done
  [[ $(tr ' ' '\n' <<<"$epochs" | grep -v '^epoch$' | grep . | sort -u | wc -l) -eq 1 ]]
}

# start_nodes topology base dir: starts 1 tallyd or a 3-node cluster; sets
# node_pid and target.
start_nodes() {
  local topo=$1 base=$2 dir=$3
  node_dir=$dir
  mkdir -p "$dir"
  if [[ $topo == 1 ]]; then
    "$bin/tallyd" --port "$base" --data-dir "$dir/node0" --durability batch \
      --log-level warn >"$dir.log" 2>&1 &
    node_pid=$!
    wait_port "$base" || { echo "cluster_bench: tallyd did not start" >&2; return 1; }
    target=antidote://127.0.0.1:$base
  else
    local nval=1
    [[ $topo == 3r ]] && nval=3
    "$bin/tally" cluster local --nodes "$NODES" --data-dir "$dir" --n-val "$nval" \
      --base-port "$base" --durability batch >"$dir.out" 2>"$dir.log" &
    node_pid=$!
    local ok=""
    for _ in $(seq 600); do
      if grep -q '^local Tally cluster' "$dir.out" 2>/dev/null && ring_settled "$dir"; then
        ok=1
        break
      fi
      kill -0 "$node_pid" 2>/dev/null || break
      sleep 0.1
    done
    [[ -n $ok ]] || { echo "cluster_bench: the cluster did not settle (log $dir.log)" >&2; return 1; }
    target=antidote://127.0.0.1:$base
    for ((i = 1; i < NODES; i++)); do target+=",127.0.0.1:$((base + i))"; done
  fi
}

# Configurations: name, topology (1 node or 3), tally-bench options.
a_opts="--mode static-single --ratio ${RATIO:-80:20} --keys 1000 --connections 4 --outstanding 16"
# Update-only; 64 buckets keep every node-side FBF far from its false
# positive regime (docs/BENCH.md), so the exactly-once check stays exact.
b_common="--ratio 0:100 --keys 1000 --buckets 64 --connections 3"
configs=()
if [[ $ONLY == *a* ]]; then
  configs+=("a.1node|1|$a_opts" "a.3nodes|3|$a_opts")
fi
if [[ $ONLY == *c* ]]; then
  # Replication's cost: the same cluster with one copy and with three.
  configs+=("c.3nodes.nval1|3|$a_opts" "c.3nodes.nval3|3r|$a_opts")
fi
if [[ $ONLY == *b* ]]; then
  for topo in 1 3; do
    for k in 1 16; do
      for m in static-single static-multi:1:3; do
        configs+=("b.${topo}node.k$k.$m|$topo|$b_common --outstanding $k --mode $m")
      done
    done
  done
fi

run_no=0
failures=0
for ((round = 1; round <= ROUNDS; round++)); do
  order=("${configs[@]}")
  if ((round % 2 == 0)); then # reversed every other round
    order=()
    for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[$i]}"); done
  fi
  for c in "${order[@]}"; do
    IFS='|' read -r name topo opts <<<"$c"
    base=$((BASE_PORT + (run_no * 4) % 900))
    run_no=$((run_no + 1))
    dir=$tmp/r$round-$name
    echo "== round $round/$ROUNDS $name ($topo node(s), ports $base..)" >&2
    if ! start_nodes "$topo" "$base" "$dir"; then
      failures=$((failures + 1))
      cp "$dir.log" "$OUT/r$round-$name.nodes.log" 2>/dev/null || true
      stop_nodes
      continue
    fi
    txt=$OUT/r$round-$name.txt
    rc=0
    pids=$(node_pids)
    # shellcheck disable=SC2086
    ticks0=$(cpu_ticks $pids)
    # shellcheck disable=SC2086
    timeout 120 "$bin/tally-bench" run --target "$target" --duration "$DURATION" \
      --warmup "$WARMUP" --no-progress $opts >"$txt" 2>&1 || rc=$?
    # shellcheck disable=SC2086
    ticks=$(($(cpu_ticks $pids) - ticks0))
    stop_nodes
    stuck=$(grep -c 'did not stop within' "$dir.log" 2>/dev/null || true)
    if [[ $rc -ne 0 ]]; then
      failures=$((failures + 1))
      echo "cluster_bench: $name round $round: tally-bench exit $rc ($txt)" >&2
      cp "$dir.log" "$OUT/r$round-$name.nodes.log" 2>/dev/null || true
    fi
    [[ ${stuck:-0} -gt 0 ]] && {
      echo "cluster_bench: $name round $round: $stuck node(s) did not stop on SIGTERM within 10 s" >&2
      cp "$dir.log" "$OUT/r$round-$name.nodes.log"
    }
    # One line per run: the figures tally-bench printed.
    awk -v name="$name" -v round="$round" -v rc="$rc" -v stuck="${stuck:-0}" \
        -v ticks="$ticks" -v hz="$(getconf CLK_TCK)" '
      /^measured/ { ops = $4; tput = $6; errs = $8 }
      /^read /    { rt = $3; r50 = $4; r99 = $6 }
      /^update /  { ut = $3; u50 = $4; u99 = $6 }
      /^exactly-once: expected/ { gsub(",", ""); eo = ($4 == $6) ? "exact" : "OFF" }
      END { printf "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, round,
            tput, rt, r50, r99, ut, u50, u99, errs, eo, rc, stuck,
            (ops > 0 ? sprintf("%.1f", ticks * 1e6 / hz / ops) : "") }' "$txt" >>"$results"
    rm -rf "$dir"
  done
done

echo
echo "# tally cluster bench: $ROUNDS rounds x ${DURATION} s (+${WARMUP} s warmup), durability batch, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
RATIO=${RATIO:-80:20} python3 - "$results" <<'EOF'
import os, sys, statistics as st
mix = os.environ["RATIO"]
rows = {}
meta = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    name = f[0]
    def num(x):
        try: return float(x)
        except ValueError: return None
    rows.setdefault(name, []).append([num(x) for x in f[2:10]] + [num(f[13])])
    m = meta.setdefault(name, {"runs": 0, "eo_off": 0, "failed": 0, "stuck": 0})
    m["runs"] += 1
    m["eo_off"] += f[10] != "exact"
    m["failed"] += f[11] != "0"
    m["stuck"] += int(f[12] or 0)
def med(name, i):
    v = [r[i] for r in rows.get(name, []) if r[i] is not None]
    return st.median(v) if v else None
def fmt(x, d=3):
    return "-" if x is None else (f"{x:.0f}" if abs(x) >= 100 else f"{x:.{d}f}")
def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"
def health(names):
    out = []
    for n in names:
        m = meta.get(n)
        if m:
            out.append(f"{n}: {m['runs']} runs, {m['failed']} failed, "
                       f"{m['eo_off']} exactly-once not exact, {m['stuck']} node(s) stuck on SIGTERM")
    return out
figs = [("throughput ops/s", 0), ("read ops/s", 1), ("read p50 ms", 2), ("read p99 ms", 3),
        ("update ops/s", 4), ("update p50 ms", 5), ("update p99 ms", 6), ("errors", 7),
        ("server CPU us/op", 8)]
if "a.1node" in rows:
    print(f"\n## a. {mix} static-single, 1000 keys, 4 connections x 16 outstanding (medians)")
    print(f"| figure | 1 node | 3 nodes | 3 nodes / 1 node |\n| --- | ---: | ---: | ---: |")
    for label, i in figs:
        a, b = med("a.1node", i), med("a.3nodes", i)
        print(f"| {label} | {fmt(a)} | {fmt(b)} | {ratio(b, a)} |")
    for h in health(["a.1node", "a.3nodes"]): print("  " + h)
if "c.3nodes.nval1" in rows:
    print(f"\n## c. 3 nodes, one copy vs three (n_val 3, w 2), {mix} static-single, 1000 keys, 4 x 16 (medians)")
    print(f"| figure | n_val 1 | n_val 3 | n_val 3 / n_val 1 |\n| --- | ---: | ---: | ---: |")
    for label, i in figs:
        a, b = med("c.3nodes.nval1", i), med("c.3nodes.nval3", i)
        print(f"| {label} | {fmt(a)} | {fmt(b)} | {ratio(b, a)} |")
    for h in health(["c.3nodes.nval1", "c.3nodes.nval3"]): print("  " + h)
if any(n.startswith("b.") for n in rows):
    print("\n## b. update-only (0:100), 1000 keys in 64 buckets, 3 connections (medians)")
    print("single = static-single (1 key, 1 partition, one-step commit); "
          "multi = static-multi:1:3 (3 keys, 2PC)")
    print("| nodes | outstanding | single ops/s | multi ops/s | multi/single ops/s "
          "| single p50 ms | multi p50 ms | multi/single p50 | single p99 ms | multi p99 ms | multi/single p99 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    names = []
    for topo in (1, 3):
        for k in (1, 16):
            s, m = f"b.{topo}node.k{k}.static-single", f"b.{topo}node.k{k}.static-multi:1:3"
            names += [s, m]
            t1, t2 = med(s, 0), med(m, 0)
            p1, p2 = med(s, 5), med(m, 5)
            q1, q2 = med(s, 6), med(m, 6)
            print(f"| {topo} | {k} | {fmt(t1)} | {fmt(t2)} | {ratio(t2, t1)} | {fmt(p1)} | {fmt(p2)} "
                  f"| {ratio(p2, p1)} | {fmt(q1)} | {fmt(q2)} | {ratio(q2, q1)} |")
    print("\n3 nodes / 1 node, same mode and outstanding (medians):")
    print("| mode | outstanding | ops/s | p50 | p99 |\n| --- | ---: | ---: | ---: | ---: |")
    for m in ("static-single", "static-multi:1:3"):
        for k in (1, 16):
            a, b = f"b.1node.k{k}.{m}", f"b.3node.k{k}.{m}"
            print(f"| {m} | {k} | {ratio(med(b, 0), med(a, 0))} | {ratio(med(b, 5), med(a, 5))} "
                  f"| {ratio(med(b, 6), med(a, 6))} |")
    for h in health(names): print("  " + h)
EOF
echo
echo "raw: $OUT (one tally-bench report per run, results.tsv); failed runs: $failures"
