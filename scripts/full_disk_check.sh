#!/usr/bin/env bash
# The full-disk cycle of issue 18 on a real full file system: a 3 MiB tmpfs
# (root only: it mounts one), a tallyd on it, the disk filled up, then freed.
# Checks: writes on the full disk fail with a clear error and change
# nothing; reads keep being served; writes resume without a restart once
# space is freed; a node restarted on the full disk starts and serves reads.
# The CTest suite checks the same with a file size limit instead
# (tests/actors/full_disk_process_test.cpp), which needs no privileges.
#
#   scripts/full_disk_check.sh            # uses build/bin
#   BUILD_DIR=/tmp/build scripts/full_disk_check.sh
set -euo pipefail
bin="${BUILD_DIR:-build}/bin"
[[ -x "$bin/tallyd" && -x "$bin/tally" ]] || { echo "full_disk_check: $bin/tallyd or $bin/tally missing (scripts/setup.sh builds them)" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "full_disk_check: needs root (it mounts a tmpfs)" >&2; exit 2; }
mnt=$(mktemp -d /tmp/tally-full-disk-XXXXXX)
mount -t tmpfs -o size=3m tmpfs "$mnt"
pid=""
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; umount "$mnt"; rmdir "$mnt"; rm -f "$mnt.log"; }
trap cleanup EXIT
fail() { echo "full_disk_check: FAILED: $*" >&2; exit 1; }

start() { # starts tallyd on the tmpfs; sets pid and port
  "$bin/tallyd" --data-dir "$mnt/data" --port 0 --partitions 4 --log-level info 2>"$mnt.log" &
  pid=$!
  port=""
  for _ in $(seq 1 100); do
    port=$(sed -n 's/.*tallyd ready on port \([0-9]*\).*/\1/p' "$mnt.log" | head -n1)
    [[ -n "$port" ]] && return 0
    kill -0 "$pid" 2>/dev/null || fail "tallyd did not start: $(tail -n 3 "$mnt.log")"
    sleep 0.1
  done
  fail "tallyd not ready"
}
t() { "$bin/tally" --port "$port" "$@"; }

start
t inc b before 1 >/dev/null || fail "first write"
dd if=/dev/zero of="$mnt/filler" bs=64k 2>/dev/null || true
echo "disk: $(df -h "$mnt" | tail -n1)"
out=$(t inc b during 1 2>&1) && fail "a write on the full disk was acknowledged"
echo "write on the full disk: $out"
[[ "$out" == *"disk is full"* ]] || fail "unclear error: $out"
[[ $(t read b before) == *"b/before = 1"* ]] || fail "read on the full disk"
rm "$mnt/filler"
t inc b during 1 >/dev/null || fail "writes did not resume after space was freed"
[[ $(t read b during) == *"b/during = 1"* ]] || fail "the refused write left a trace"
echo "after freeing space: writes resume, no restart"
kill "$pid"; wait "$pid" || true; pid=""
dd if=/dev/zero of="$mnt/filler" bs=64k 2>/dev/null || true
start
[[ $(t read b before b during) == *"b/during = 1"* ]] || fail "read after a restart on the full disk"
grep -q "bytes free: reads are served" "$mnt.log" || fail "no warning about the full disk at start"
echo "restart on the full disk: starts, serves reads, warns"
rm "$mnt/filler"
t inc b after 1 >/dev/null || fail "write after freeing space"
echo "full_disk_check: ok"
