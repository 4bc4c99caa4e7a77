#!/usr/bin/env bash
# Builds CAF 0.17.6 (Debian's source package actor-framework, the version
# libcaf-dev installs) with ThreadSanitizer into a private prefix, for
# `scripts/sanitize.sh --tsan` (docs/RELIABILITY.md, "TSan").
#
#   scripts/build-caf-tsan.sh DIR
#
# DIR/src     the source, fetched with `apt-get source` from Debian's mirror
# DIR/build   CAF's build tree (libcaf_core, libcaf_io, libcaf_openssl only)
# DIR/prefix  the install: include/caf, lib/libcaf_{core,io,openssl}.so
#
# Idempotent: when DIR/prefix/tally-caf-tsan.stamp names this version and
# these flags, it does nothing. The fetch uses apt's own settings pointed at
# files under DIR (a deb-src list of its own, MIRROR overrides the mirror), so
# it needs no deb-src line in /etc/apt and changes nothing outside DIR.
#
# Why: Debian's libcaf_core is not built with -fsanitize=thread, so TSan does
# not see the synchronization of CAF's mailboxes and reports every message
# hand-off between actors as a race. CAF itself built with -fsanitize=thread
# (-g -O1) lets TSan see it.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
here=$(cd "$(dirname "$0")" && pwd)

src_pkg=actor-framework
version=0.17.6-2.1
upstream=0.17.6
mirror=${MIRROR:-http://deb.debian.org/debian}
flags="-fsanitize=thread -g -O1 -fno-omit-frame-pointer"
# Debian's patch (0.17.6-1) builds CAF as C++14; Tally includes its headers as
# C++17, exactly as with the packaged library.
std=-std=c++14
stamp_text="$src_pkg $version $std $flags"
prefix="$dir/prefix"
stamp="$prefix/tally-caf-tsan.stamp"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] &&
   [ -f "$prefix/lib/libcaf_core.so" ] && [ -f "$prefix/lib/libcaf_io.so" ] &&
   [ -f "$prefix/lib/libcaf_openssl.so" ]; then
  echo "build-caf-tsan: up to date in $prefix"
  exit 0
fi

die() { echo "build-caf-tsan: $*" >&2; exit 1; }
for tool in apt-get dpkg-source cmake g++ sha256sum; do
  command -v "$tool" >/dev/null || die "$tool not found (Debian: apt-get install dpkg-dev cmake g++)"
done

# --- fetch: apt-get source with a private source list and state --------------
src="$dir/src"
srcdir="$src/$src_pkg-$upstream"
if [ ! -f "$srcdir/.tally-unpacked" ]; then
  apt="$dir/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main" \
    >"$apt/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
            -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
            -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
            -o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1")
  echo "build-caf-tsan: fetching $src_pkg $version source from $mirror"
  apt-get -q "${apt_opts[@]}" update >"$dir/fetch.log" 2>&1 ||
    { cat "$dir/fetch.log" >&2; die "apt-get update of the deb-src list ($mirror) failed, log above"; }
  # apt-get update only warns when the mirror cannot be reached.
  compgen -G "$apt/lists/*_Sources*" >/dev/null ||
    { cat "$dir/fetch.log" >&2; die "could not download the source index from $mirror (log above): is it reachable? (MIRROR overrides it)"; }
  rm -rf "$srcdir"
  # apt-get source verifies every file against the .dsc's checksums and runs
  # dpkg-source -x, which applies Debian's patches (debian/patches).
  if (cd "$src" && apt-get -q "${apt_opts[@]}" source "$src_pkg=$version") >>"$dir/fetch.log" 2>&1; then
    [ -d "$srcdir/debian/patches" ] || die "apt-get source unpacked no debian/patches in $srcdir"
    echo "build-caf-tsan: unpacked with Debian's patches: $(tr '\n' ' ' <"$srcdir/debian/patches/series")"
  else
    # Seen on this machine's mirror: the .dsc and the upstream tarball are
    # served, the 5.8 kB debian.tar.xz (Debian's patches) answers 404. Then
    # fall back to the upstream tarball, checked against the .dsc's SHA-256,
    # plus the one Debian change that reaches the installed headers
    # (caf/io/network/receive_buffer.hpp includes <limits>; diff of
    # /usr/include/caf against the tarball). Debian's other two patches
    # (upstream PR #1135; -std=c++14 in CMakeLists.txt, set here by $std)
    # cannot be applied without that archive: say so, loudly.
    orig="$src/${src_pkg}_$upstream.orig.tar.gz"
    dsc="$src/${src_pkg}_$version.dsc"
    [ -f "$orig" ] && [ -f "$dsc" ] ||
      { cat "$dir/fetch.log" >&2; die "apt-get source $src_pkg=$version failed, log above (is $mirror reachable?)"; }
    want=$(awk -v f="${src_pkg}_$upstream.orig.tar.gz" '/^Checksums-Sha256:/{s=1;next} /^[A-Z]/{s=0} s && $3==f {print $1}' "$dsc")
    have=$(sha256sum "$orig" | cut -d' ' -f1)
    [ -n "$want" ] && [ "$want" = "$have" ] || die "$orig: SHA-256 $have, the .dsc says '$want'"
    echo "build-caf-tsan: WARNING: Debian's debian.tar.xz could not be fetched (fetch.log);" \
         "building the verified upstream tarball plus Debian's <limits> header fix" >&2
    tar -xzf "$orig" -C "$src"
    patch -d "$srcdir" -p1 <"$here/caf-tsan-receive-buffer-limits.patch" >/dev/null
  fi
  touch "$srcdir/.tally-unpacked"
fi

# --- build: only the three libraries Tally links --------------------------
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
build="$dir/build"
rm -rf "$prefix"
echo "build-caf-tsan: building libcaf_core, libcaf_io, libcaf_openssl ($flags) in $build"
nice cmake -S "$srcdir" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_CXX_FLAGS="$std $flags" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes -DCAF_NO_PYTHON=yes \
  -DCAF_NO_OPENCL=yes -DCAF_NO_BENCHMARKS=yes -DCAF_NO_SUMMARY=yes -DCAF_BUILD_STATIC=no \
  "${launcher[@]}" >"$dir/configure.log" 2>&1 ||
  { tail -40 "$dir/configure.log" >&2; die "CAF configure failed, see $dir/configure.log"; }
nice cmake --build "$build" -j2 --target libcaf_core_shared libcaf_io_shared libcaf_openssl_shared \
  >"$dir/build.log" 2>&1 ||
  { tail -40 "$dir/build.log" >&2; die "CAF build failed, see $dir/build.log"; }
cmake --install "$build" >"$dir/install.log" 2>&1 ||
  { tail -20 "$dir/install.log" >&2; die "CAF install failed, see $dir/install.log"; }
for lib in core io openssl; do
  # (grep -c, not -q: with pipefail, -q's early exit fails nm with SIGPIPE)
  nm -D "$prefix/lib/libcaf_$lib.so" | grep -c __tsan_ >/dev/null ||
    die "$prefix/lib/libcaf_$lib.so has no __tsan_ symbols: not built with -fsanitize=thread"
done
echo "$stamp_text" >"$stamp"
echo "build-caf-tsan: installed in $prefix"
