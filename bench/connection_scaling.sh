#!/usr/bin/env bash
# Throughput, p99 and server memory as the number of client connections
# grows (docs/PERFORMANCE.md, "Connections"): one tallyd (temporary data
# dir, free port), and for each count a `tally-bench run` of static 80:20
# counter operations on 1,000 keys, one outstanding request per connection;
# tallyd's resident memory (VmRSS) is read at the end of each run.
#
#   bench/connection_scaling.sh                  # 1 32 256 1000, 10 s each
#   COUNTS="1 32" DURATION=5 bench/connection_scaling.sh
#   DURABILITY=batch bench/connection_scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
COUNTS=${COUNTS:-"1 32 256 1000"}
DURABILITY=${DURABILITY:-periodic}
if [[ ! -x $BUILD_DIR/bin/tally-bench || ! -x $BUILD_DIR/bin/tallyd ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target tally-bench tallyd -j"$(nproc 2>/dev/null || echo 2)"
fi
tmp=$(mktemp -d /tmp/tally-conn-scaling-XXXXXX)
pid=""
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The client opens one thread and one socket per connection.
ulimit -n 65536 2>/dev/null || true
"$BUILD_DIR/bin/tallyd" --port "$port" --data-dir "$tmp/data" --durability "$DURABILITY" \
  --max-connections 4096 --log-level warn >"$tmp/tallyd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
  sleep 0.1
done
printf '%-12s %12s %10s %10s %12s\n' connections "ops/s" "p50 ms" "p99 ms" "tallyd RSS"
for n in $COUNTS; do
  out=$("$BUILD_DIR/bin/tally-bench" run --target "antidote://127.0.0.1:$port" \
        --duration "$DURATION" --warmup "$WARMUP" --keys 1000 --connections "$n" \
        --ratio 80:20 --mode static-single --no-progress 2>&1)
  rss=$(awk '/VmRSS/ {print $2 " " $3}' "/proc/$pid/status")
  rate=$(awk '/^measured/ {for (i = 1; i <= NF; ++i) if ($i == "ops/s,") print $(i-1)}' <<<"$out")
  # The read row (80% of operations): p50 and p99 columns.
  read -r p50 p99 < <(awk '$1 == "read" {print $4, $6}' <<<"$out")
  printf '%-12s %12s %10s %10s %12s\n' "$n" "$rate" "$p50" "$p99" "$rss"
done
