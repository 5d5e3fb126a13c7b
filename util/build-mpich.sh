#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds MPICH 4.0.2 with the ch4:ofi device against Debian's libfabric, from Debian's own source
# package, and installs it under a fixed prefix outside the repository.  Does nothing when that
# install already exists (delete the prefix to rebuild).
#
#   util/build-mpich.sh [--prefix DIR] [--src DIR] [--jobs N] [--source-only]
#
# Defaults: prefix /opt/ddtx-mpich (env DDTX_MPICH_PREFIX), unpacked source /opt/ddtx-mpich-src
# (env DDTX_MPICH_SRC; util/run-mpi-tests.sh reuses its test/mpi), make -j2.
# --source-only fetches and unpacks the source package and stops.
#
# Debian's mpich package is built for UCX and cannot load libfabric providers, hence this build.
# Options that keep it short on 2 cores: --with-datatype-engine=dataloop (no generated yaksa
# kernels), --disable-fortran, --disable-cxx, --disable-romio (no MPI-IO), --enable-fast=O2 (no
# error checking of arguments beyond the cheap ones, -O2), --disable-doc, external hwloc.
# Linking against Debian's libfabric needs its private link dependencies: libpsm-infinipath1-dev,
# libpsm2-dev, librdmacm-dev (and libibverbs-dev).
set -euo pipefail

PREFIX=${DDTX_MPICH_PREFIX:-/opt/ddtx-mpich}
SRC_ROOT=${DDTX_MPICH_SRC:-/opt/ddtx-mpich-src}
JOBS=2
SOURCE_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) PREFIX=$2; shift 2 ;;
    --src) SRC_ROOT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --source-only) SOURCE_ONLY=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "build-mpich.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "build-mpich.sh: $*"; }

if [ "$SOURCE_ONLY" = 0 ] && [ -x "$PREFIX/bin/mpicc" ] && [ -f "$PREFIX/.ddtx-mpich-complete" ]; then
  log "MPICH already installed in $PREFIX (remove it to rebuild)"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

# --- packages --------------------------------------------------------------------------------
pkgs=(build-essential dpkg-dev pkg-config python3 libfabric-dev libpsm-infinipath1-dev libpsm2-dev
      librdmacm-dev libibverbs-dev libhwloc-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# --- deb-src entry for bookworm (apt-get source needs one) -------------------------------------
SRCLIST=/etc/apt/sources.list.d/ddtx-bookworm-src.sources
need_update=0
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  log "adding $SRCLIST"
  $SUDO tee "$SRCLIST" >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  need_update=1
fi
if [ ${#missing[@]} -gt 0 ] || [ "$need_update" = 1 ]; then
  $SUDO apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- source ------------------------------------------------------------------------------------
mkdir -p "$SRC_ROOT"
SRC=$(find "$SRC_ROOT" -maxdepth 1 -type d -name 'mpich-4.0.2*' | head -n1)
if [ -z "$SRC" ] || [ ! -x "$SRC/configure" ]; then
  log "fetching Debian's mpich source package into $SRC_ROOT"
  (cd "$SRC_ROOT" && apt-get source -qq mpich=4.0.2\* 2>&1 || apt-get source -qq mpich)
  SRC=$(find "$SRC_ROOT" -maxdepth 1 -type d -name 'mpich-4.0.2*' | head -n1)
  [ -n "$SRC" ] || { log "no mpich-4.0.2 directory after apt-get source"; exit 1; }
fi
log "source: $SRC"
[ "$SOURCE_ONLY" = 1 ] && exit 0

# --- configure, build, install -----------------------------------------------------------------
BUILD="$SRC_ROOT/build"
start=$(date +%s)
rm -rf "$BUILD" "$PREFIX"
mkdir -p "$BUILD"
cd "$BUILD"
log "configuring (prefix $PREFIX)"
"$SRC/configure" --prefix="$PREFIX" \
  --with-device=ch4:ofi --with-libfabric=/usr \
  --with-datatype-engine=dataloop \
  --disable-fortran --disable-cxx --disable-romio --disable-doc \
  --enable-fast=O2 --enable-shared --disable-static \
  --with-hwloc=/usr --with-pm=hydra \
  --without-ucx --without-cuda --without-ze \
  CFLAGS="-O2" > "$BUILD/configure.out" 2>&1 || { tail -n 60 "$BUILD/configure.out"; exit 1; }
t_conf=$(date +%s)
log "configured in $((t_conf - start)) s; make -j$JOBS"
make -j"$JOBS" > "$BUILD/make.out" 2>&1 || { tail -n 60 "$BUILD/make.out"; exit 1; }
t_make=$(date +%s)
log "built in $((t_make - t_conf)) s; installing"
make install > "$BUILD/install.out" 2>&1 || { tail -n 40 "$BUILD/install.out"; exit 1; }
end=$(date +%s)
echo "configure $((t_conf - start)) s, make $((t_make - t_conf)) s, install $((end - t_make)) s" \
  > "$PREFIX/.ddtx-mpich-complete"
log "installed in $PREFIX; total $((end - start)) s ($(cat "$PREFIX/.ddtx-mpich-complete"))"
"$PREFIX/bin/mpichversion" | head -n 4 || true
