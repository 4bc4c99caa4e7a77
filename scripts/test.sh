#!/usr/bin/env bash
# Sets up Tally (scripts/setup.sh) and runs every test suite with CTest.
# Property tests print their seed; replay one with TALLY_TEST_SEED=<seed>.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/apt_install.sh
. scripts/apt_install.sh
# CI builds with -Werror (the project's promise: zero warnings).
if [[ "${CI:-}" == "true" ]]; then export TALLY_WERROR=ON; fi
scripts/setup.sh

# tests/interop/ runs the npm client antidote_ts_client against tallyd: install
# node and npm (Debian's) when missing, then the pinned package (npm ci from
# tests/interop/package-lock.json) when node_modules is missing or older than
# the lockfile. Without them that test fails.
# node and npm may come from elsewhere than Debian's packages: installed
# only when the commands are missing.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  install_debian_packages test nodejs npm
fi
interop=tests/interop
if [[ ! -f $interop/node_modules/.package-lock.json ||
      $interop/package-lock.json -nt $interop/node_modules/.package-lock.json ||
      $interop/package.json -nt $interop/node_modules/.package-lock.json ]]; then
  echo "test: npm ci in $interop"
  (cd "$interop" && npm ci --no-audit --no-fund)
fi

# A short, deterministic run of every libFuzzer target (fuzz/,
# docs/RELIABILITY.md "Fuzzers") on its seed corpus, with
# a fixed seed (50,000 executions), so the same inputs every time (longer, random runs are
# scripts/fuzz.sh by hand). clang++ and its libFuzzer runtime are installed
# when missing. A crash or sanitizer report fails the run.
# TALLY_TEST_FUZZ_RUNS=0 leaves it out (local runs); CI always runs it.
fuzz_runs=${TALLY_TEST_FUZZ_RUNS:-50000}
if [[ "${CI:-}" == "true" && $fuzz_runs -lt 50000 ]]; then fuzz_runs=50000; fi
if [[ $fuzz_runs -gt 0 ]]; then
  command -v clang++ >/dev/null || install_debian_packages test clang
  install_debian_packages test libclang-rt-14-dev
  echo "test: fuzzing every decoder, ${fuzz_runs} executions each, seed 1 (scripts/fuzz.sh)"
  RUNS_PER_TARGET=$fuzz_runs FUZZ_SEED=1 scripts/fuzz.sh
fi

cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"
