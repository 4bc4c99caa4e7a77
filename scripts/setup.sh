#!/usr/bin/env bash
# Sets up Tally on a fresh Debian 12 machine and builds it (Release).
# Idempotent: installs only the Debian packages that are missing, then runs an
# incremental build. Needs root (or sudo) only when something is missing.
#
#   scripts/setup.sh            # build into ./build
#   TALLY_WERROR=ON scripts/setup.sh   # warnings are errors (CI)
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/apt_install.sh
. scripts/apt_install.sh

# Pinned in docs/DEPENDENCIES.md; every one comes from Debian 12's mirror.
packages=(
  g++ cmake make
  libcaf-dev        # C++ Actor Framework 0.17.6 (its OpenSSL module: TLS node links)
  libssl-dev        # OpenSSL 3.0 headers for CAF's OpenSSL module
  liblmdb-dev       # LMDB 0.9.24
  libjemalloc-dev   # jemalloc 5.3 (tallyd's allocator)
  libcereal-dev     # Cereal 1.3.2 (header-only)
  libboost-test-dev # Boost.Test 1.74
  libprotobuf-dev protobuf-compiler # Protocol Buffers 3.21.12 (client protocol)
  libhiredis-dev redis-server # tally-bench's redis:// driver and bench/compare_redis.sh (no service started)
)

install_debian_packages setup "${packages[@]}"

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTALLY_WERROR="${TALLY_WERROR:-OFF}" >/dev/null
cmake --build build -j"$jobs"
echo "setup: built into ./build (binaries in ./build/bin)"
