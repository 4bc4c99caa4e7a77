#!/usr/bin/env bash
# Sets up Tally (scripts/setup.sh) and runs every test suite with CTest.
# Property tests print their seed; replay one with TALLY_TEST_SEED=<seed>.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI builds with -Werror (the project's promise: zero warnings).
if [[ "${CI:-}" == "true" ]]; then export TALLY_WERROR=ON; fi
scripts/setup.sh
cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"
