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
# the lockfile. Without them that test reports "skipped", not passed.
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

cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"
