#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, docs/RELIABILITY.md) into build-fuzz/
# with clang++ and runs each one on a copy of its seed corpus.
#
#   scripts/fuzz.sh [--long] [--gen-corpus] [target...]
#
#   SECONDS_PER_TARGET (default 30): -max_total_time of each target.
#   RUNS_PER_TARGET: instead, exactly this many executions with a fixed
#                  seed (FUZZ_SEED, default 1): the same inputs every run,
#                  so the test command's pass cannot fail by chance.
#   --long         run until >= 10 million executions per target
#                  (-runs=10000000, no time limit; LONG_RUNS overrides).
#   --gen-corpus   rewrite fuzz/corpus/ with fuzz_gen_corpus, then exit.
#   target...      a subset, e.g. fuzz_frame fuzz_journal (default: all).
#
# Prints executions and crashes per target. A crash makes the script exit
# non-zero; the crashing input stays in build-fuzz/crashes/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(fuzz_frame fuzz_request fuzz_response fuzz_descriptor fuzz_journal fuzz_checkpoint fuzz_checkpoint_meta fuzz_crdt fuzz_wire)
long=0; gen=0; targets=()
for a in "$@"; do
  case "$a" in
    --long) long=1 ;;
    --gen-corpus) gen=1 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    fuzz_*) targets+=("$a") ;;
    *) echo "unknown argument: $a" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
secs=${SECONDS_PER_TARGET:-30}
long_runs=${LONG_RUNS:-10000000}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
nice cmake -S . -B build-fuzz -DTALLY_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTALLY_BUILD_TESTS=OFF -DTALLY_BUILD_BENCH=OFF \
  "${launcher[@]}" >/dev/null
nice cmake --build build-fuzz -j"$(nproc)" >/dev/null

if [ "$gen" = 1 ]; then
  rm -rf fuzz/corpus
  build-fuzz/bin/fuzz_gen_corpus fuzz/corpus
  echo "wrote fuzz/corpus/"
  exit 0
fi

failed=0
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  cp -r "fuzz/corpus/$t" "$work/corpus"
  crashes="build-fuzz/crashes/$t"
  mkdir -p "$crashes"
  before=$(find "$crashes" -type f | wc -l)
  if [ "$long" = 1 ]; then
    limit=(-runs="$long_runs")
  elif [ -n "${RUNS_PER_TARGET:-}" ]; then
    limit=(-runs="$RUNS_PER_TARGET" -seed="${FUZZ_SEED:-1}")
  else
    limit=(-max_total_time="$secs")
  fi
  log="build-fuzz/$t.log"
  start=$(date +%s)
  rc=0
  nice "build-fuzz/bin/$t" "${limit[@]}" -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$work/corpus" >"$log" 2>&1 || rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  ncrash=$(( $(find "$crashes" -type f | wc -l) - before ))
  printf '%-16s executions %-10s exec/s %-8s seconds %-5s crashes %s\n' \
    "$t" "${execs:-?}" "${rate:-?}" "$took" "$ncrash"
  if [ "$rc" != 0 ] || [ "$ncrash" != 0 ]; then
    failed=1
    echo "  $t failed (exit $rc): see $log and $crashes/" >&2
  fi
  rm -rf "$work"
done
exit $failed
