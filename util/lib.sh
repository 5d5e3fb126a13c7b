# SPDX-License-Identifier: BSD-2-Clause
# Shared by util/demo.sh, util/run-tests.sh and util/bench.sh; source it, do not run it.

# Repository root (this file lives in util/).
DDTX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ddtx_build DIR [meson options...]: configure DIR once (again only if it is not a usable build
# directory), then build it.  Returns non-zero if configuring or building fails.
ddtx_build() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    rm -rf "$dir"
    meson setup "$dir" "$DDTX_ROOT" "$@" || return 1
  fi
  meson compile -C "$dir" || return 1
}

# ddtx_apt_ensure PKG...: install from Debian's archive those of PKG not installed yet (with sudo
# when not root).  Returns non-zero if apt-get fails.
ddtx_apt_ensure() {
  local need=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing ${need[*]}"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# ddtx_mpi_prereqs OUT BUILD BIN MPICH PKG...: what the MPI scripts need, each step doing nothing
# when already done: Debian's packages (install-deps.sh's and PKG...), MPICH built by
# build-mpich.sh (when MPICH is "mpich"), the provider in BUILD and the MPI test programs in BIN.
# Logs go to OUT/build-*.log; on failure their tail is printed and it returns non-zero.
ddtx_mpi_prereqs() {
  local out=$1 build=$2 bin=$3 mpich=$4
  shift 4
  util/install-deps.sh >/dev/null || { echo "install-deps.sh failed"; return 1; }
  ddtx_apt_ensure "$@" || return 1
  if [ "$mpich" = mpich ]; then
    util/build-mpich.sh >"$out/build-mpich.log" 2>&1 ||
      { tail -20 "$out/build-mpich.log"; echo "MPICH build failed"; return 1; }
    tail -1 "$out/build-mpich.log" | sed 's/^/  /'
  fi
  ddtx_build "$build" >"$out/build-provider.log" 2>&1 || { tail -20 "$out/build-provider.log"; return 1; }
  tests/mpi/build.sh "$bin" >"$out/build-tests.log" 2>&1 || { tail -20 "$out/build-tests.log"; return 1; }
}

# ddtx_core_bounce [-c A,B]: one line saying how fast memory moves between two CPUs right now
# (tests/fabtests/benchmarks/core_bounce.c, built here with cc).  This host switches between
# two regimes that move every two-process figure by 2.5-5x: benchmark scripts print it around
# their runs so that a table can be read against its regime.
ddtx_core_bounce() {
  local src=$DDTX_ROOT/tests/fabtests/benchmarks/core_bounce.c
  local bin=$DDTX_ROOT/build-tools/core_bounce
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    mkdir -p "${bin%/*}" && cc -O2 -pthread -o "$bin" "$src" 2>/dev/null ||
      { echo "core_bounce: could not be built"; return 0; }
  fi
  "$bin" "$@" || true
}
