#!/usr/bin/env bash
# Interoperability test: the npm AntidoteDB client antidote_ts_client (written
# outside this project) against the real tallyd binary.
#
#   tests/interop/run_test.sh PATH/TO/tallyd
#
# Starts tallyd on a free 127.0.0.1 port (--port 0; the port is read from its
# "tallyd ready on port N" line, then checked to accept connections) with a
# temp data dir, runs antidote_ts_client_test.js against it, stops tallyd,
# then runs the package's own mocha suite (dist/test.js) against the same
# node, removes the data dir and exits with the tests' code.
#
# A missing node or npm package fails the test (it does not skip): `npm ci`
# in tests/interop installs the package (scripts/test.sh does that before
# ctest, and installs node/npm when they are missing).
#
# Environment: TALLY_INTEROP_DURABILITY (none), TALLY_INTEROP_PARTITIONS (64),
# TALLY_INTEROP_TIMEOUT_MS (30000, the JS test's overall bound).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
tallyd="${1:-}"
if [[ -z "$tallyd" || ! -x "$tallyd" ]]; then
  echo "interop: usage: $0 PATH/TO/tallyd (got '${tallyd}', not an executable)" >&2
  exit 2
fi

if ! command -v node >/dev/null 2>&1; then
  echo "interop: FAIL: node is not installed (scripts/test.sh installs nodejs and npm)" >&2
  exit 1
fi
if [[ ! -f "$here/node_modules/antidote_ts_client/package.json" ||
      ! -x "$here/node_modules/.bin/mocha" ]]; then
  echo "interop: FAIL: npm packages antidote_ts_client and mocha are not installed;" \
       "run 'npm ci' in $here (scripts/test.sh does it)" >&2
  exit 1
fi
installed=$(node -p "require('$here/node_modules/antidote_ts_client/package.json').version")
echo "interop: node $(node --version), antidote_ts_client $installed"

work=$(mktemp -d "${TMPDIR:-/tmp}/tally-interop.XXXXXX") || exit 1
log="$work/tallyd.log"
pid=""

# Stops tallyd (SIGTERM, SIGKILL after 10 s); sets tallyd_rc to its exit code.
tallyd_rc=0
stop_tallyd() {
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "interop: tallyd ignored SIGTERM for 10 s, killing it" >&2
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  tallyd_rc=$?
  echo "interop: tallyd stopped (exit code $tallyd_rc)"
  pid=""
}
cleanup() {
  stop_tallyd
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$tallyd" --data-dir "$work/data" --port 0 --bind 127.0.0.1 \
  --durability "${TALLY_INTEROP_DURABILITY:-none}" \
  --partitions "${TALLY_INTEROP_PARTITIONS:-64}" 2>"$log" &
pid=$!

# Wait (at most 15 s) for the ready line, then for the port to accept.
port=""
for _ in $(seq 150); do
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"; rc=$?; pid=""
    echo "interop: FAIL: tallyd exited with code $rc before it was ready; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
  port=$(sed -n 's/.*tallyd ready on port \([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
  if [[ -n "$port" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    break
  fi
  port=""
  sleep 0.1
done
if [[ -z "$port" ]]; then
  echo "interop: FAIL: tallyd did not accept connections within 15 s; its log:" >&2
  cat "$log" >&2
  exit 1
fi
echo "interop: tallyd pid $pid on 127.0.0.1:$port (data dir $work/data)"

runner=()
command -v timeout >/dev/null 2>&1 && runner=(timeout 90)
"${runner[@]}" node "$here/antidote_ts_client_test.js" "$port" 127.0.0.1
rc=$?
# 77 would read as "skipped"; 124 is timeout's.
if [[ $rc -eq 124 ]]; then echo "interop: FAIL: the JS test did not finish within 90 s" >&2; fi
if [[ $rc -eq 77 ]]; then rc=1; fi

# Then the client's own mocha suite (dist/test.js in the npm package, 25
# tests), run as its authors run it with only host and port adapted: it
# hard-codes localhost:8087. All 25 must pass, "can do big batch-reads"
# (one ~166 MB frame, within tallyd's default --max-frame-size and
# --max-request-memory: docs/SECURITY.md) included; a failure names the
# failing tests.
suite_tests=25
if [[ $rc -eq 0 ]]; then
  sed -e "s/antidote_1.connect(8087, \"localhost\")/antidote_1.connect($port, \"127.0.0.1\")/" \
      -e 's#require("./antidote")#require("antidote_ts_client/dist/antidote")#' \
      "$here/node_modules/antidote_ts_client/dist/test.js" > "$work/ts_suite_test.js"
  if ! grep -q "connect($port, \"127.0.0.1\")" "$work/ts_suite_test.js"; then
    echo "interop: FAIL: could not point the client's suite at port $port" >&2
    rc=1
  else
    echo "interop: antidote_ts_client's own mocha suite against 127.0.0.1:$port"
    # The suite bounds each test to 60 s itself; this bounds the whole run.
    # (Its big batch, write and read, took 220 s on the 2-core VM at a load
    # average of 15-23, tallyd using 24 s of CPU of it: docs/SECURITY.md.)
    suite_runner=()
    command -v timeout >/dev/null 2>&1 && suite_runner=(timeout 240)
    NODE_PATH="$here/node_modules" "${suite_runner[@]}" "$here/node_modules/.bin/mocha" \
      --reporter spec "$work/ts_suite_test.js" > "$work/ts_suite.log" 2>&1
    passing=$(sed -n 's/^ *\([0-9][0-9]*\) passing.*/\1/p' "$work/ts_suite.log" | head -n1)
    failing=$(sed -n 's/^ *\([0-9][0-9]*\) failing.*/\1/p' "$work/ts_suite.log" | head -n1)
    sed -n '/passing/,$p' "$work/ts_suite.log" | grep -E '^ *[0-9]+ (passing|failing)|^ *[0-9]+\) |Error' | head -n 20
    echo "interop: antidote_ts_client suite: ${passing:-0} passing, ${failing:-0} failing (need all $suite_tests)"
    if [[ -z "$passing" || $passing -ne $suite_tests || -n "$failing" ]]; then
      # Mocha's spec reporter lists a failed test as "  N) its name".
      names=$(sed -n '/passing/q; s/^ *[0-9][0-9]*) \(.*\)$/\1/p' "$work/ts_suite.log" | paste -sd ';' -)
      echo "interop: FAIL: the client's suite passed ${passing:-0} of $suite_tests tests;" \
           "failing: ${names:-(none named: the suite did not finish)}; its log:" >&2
      cat "$work/ts_suite.log" >&2
      rc=1
    fi
  fi
fi

# A clean shutdown exits 0 (docs/NODE.md); anything else means tallyd crashed
# during the test or did not shut down cleanly.
stop_tallyd
if [[ $tallyd_rc -ne 0 ]]; then
  echo "interop: FAIL: tallyd exited with code $tallyd_rc (crashed, or SIGTERM did not stop it cleanly)" >&2
  rc=1
fi
if [[ $rc -ne 0 ]]; then
  echo "interop: tallyd log:" >&2
  cat "$log" >&2
fi
exit "$rc"
