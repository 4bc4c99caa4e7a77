#!/usr/bin/env bash
# The cost of TLS on node links (docs/SECURITY.md, "Node links"): a 2-node
# cluster with plain node links (--insecure-cluster-links) against the same
# with --tls-cert/--tls-key/--tls-ca (the test certificates of
# tests/cluster/tls/) and with the default, TLS from a cluster secret
# (--cluster-secret-file), the load through node 0 only, so about half of
# the requests go over the node link. Rounds alternate the modes; the
# medians and their ratios to plain are printed.
#
#   ROUNDS=3 DURATION=5 BASE_PORT=37400 bench/node_link_tls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
BASE_PORT=${BASE_PORT:-37400}
bin=$BUILD_DIR/bin
for b in tallyd tally tally-bench; do
  [[ -x $bin/$b ]] || { echo "node_link_tls: $bin/$b missing (scripts/setup.sh builds it)" >&2; exit 2; }
done
tls=tests/cluster/tls
work=$(mktemp -d /tmp/tally-tls-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

run_once() { # mode round: prints ops/s
  local mode=$1 r=$2 flags=() base=$((BASE_PORT + 10 * $2 + 3 * $3))
  local d=$work/$mode$r
  mkdir -p "$d"
  case $mode in
    plain) flags=(--insecure-cluster-links) ;;
    tls) flags=(--tls-cert $tls/node.pem --tls-key $tls/node-key.pem --tls-ca $tls/tally-ca.pem) ;;
    secret) openssl rand -hex 32 >"$d/secret"; chmod 600 "$d/secret"
            flags=(--cluster-secret-file "$d/secret") ;;
  esac
  pids=()
  "$bin/tallyd" --data-dir "$d/n0" --port "$base" --cluster-port $((base + 1000)) --partitions 16 \
    --durability batch --log-level error "${flags[@]}" 2>"$d.log" &
  pids+=($!)
  sleep 1
  "$bin/tallyd" --data-dir "$d/n1" --port $((base + 1)) --cluster-port $((base + 1001)) --partitions 16 \
    --durability batch --log-level error --join 127.0.0.1:$((base + 1000)) "${flags[@]}" 2>>"$d.log" &
  pids+=($!)
  for _ in $(seq 300); do # both members serve what they own
    s=$("$bin/tally" --admin-socket "$d/n0/admin.sock" cluster status 2>/dev/null || true)
    [[ $s == *"2 member(s)"* && $s != *"handoff in progress"* ]] && break
    sleep 0.1
  done
  "$bin/tally-bench" run --target antidote://127.0.0.1:$base --duration "$DURATION" --warmup 1 \
    --no-progress --mode static-single --ratio 80:20 --keys 1000 --connections 4 --outstanding 16 \
    | sed -n 's/.* ops, \([0-9.]*\) ops\/s.*/\1/p' | head -n1
  for p in "${pids[@]}"; do kill "$p"; done
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
}

plain=() tlsr=() secretr=()
for r in $(seq 1 "$ROUNDS"); do
  plain+=("$(run_once plain "$r" 0)")
  tlsr+=("$(run_once tls "$r" 1)")
  secretr+=("$(run_once secret "$r" 2)")
  echo "round $r: plain ${plain[-1]} ops/s, tls ${tlsr[-1]} ops/s, secret ${secretr[-1]} ops/s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
mp=$(median "${plain[@]}") mt=$(median "${tlsr[@]}") ms=$(median "${secretr[@]}")
echo "median: plain $mp ops/s, tls $mt ops/s ($(ratio "$mt" "$mp")x), secret $ms ops/s ($(ratio "$ms" "$mp")x)"
