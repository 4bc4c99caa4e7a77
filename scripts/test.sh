#!/usr/bin/env bash
# Sets up Tally (scripts/setup.sh) and runs every test suite with CTest.
# Property tests print their seed; replay one with TALLY_TEST_SEED=<seed>.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI builds with -Werror (the project's promise: zero warnings).
if [[ "${CI:-}" == "true" ]]; then export TALLY_WERROR=ON; fi
scripts/setup.sh

# tests/interop/ runs the npm client antidote_ts_client against tallyd: install
# node and npm (Debian's) when missing, then the pinned package (npm ci from
# tests/interop/package-lock.json) when node_modules is missing or older than
# the lockfile. Without them that test fails.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "test: installing nodejs npm"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "test: need root or sudo to install nodejs npm" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm
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
  fuzz_packages=()
  command -v clang++ >/dev/null || fuzz_packages+=(clang)
  dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed" ||
    fuzz_packages+=(libclang-rt-14-dev)
  if ((${#fuzz_packages[@]})); then
    echo "test: installing ${fuzz_packages[*]}"
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then
      command -v sudo >/dev/null || { echo "test: need root or sudo to install ${fuzz_packages[*]}" >&2; exit 1; }
      sudo="sudo"
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${fuzz_packages[@]}"
  fi
  echo "test: fuzzing every decoder, ${fuzz_runs} executions each, seed 1 (scripts/fuzz.sh)"
  RUNS_PER_TARGET=$fuzz_runs FUZZ_SEED=1 scripts/fuzz.sh
fi

cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"
