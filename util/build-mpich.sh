#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds MPICH 4.0.2 with the ch4:ofi device against Debian's libfabric, from Debian's own source
# package, and installs it under a prefix outside the repository that names the variant.  Does
# nothing when that install already exists (delete the prefix to rebuild).
#
#   util/build-mpich.sh [--dataloop] [--iov-max N] [--ddtx-layouts] [--prefix DIR] [--src DIR]
#                       [--jobs N] [--source-only] [--print-prefix]
#
# Variants and their default prefixes (--prefix overrides; DDTX_MPICH_PREFIX for the first):
#   (default)          yaksa, MPICH's default datatype engine     /opt/ddtx-mpich-yaksa
#   --iov-max N        yaksa, MPICH's ofi iov cap raised to N     /opt/ddtx-mpich-yaksa-iovN
#   --dataloop         the older dataloop engine (shorter build)  /opt/ddtx-mpich-dataloop
#                      (--dataloop --iov-max N: /opt/ddtx-mpich-dataloop-iovN)
#   --ddtx-layouts     yaksa, datatypes handed to ddtx as layout handles
#                                                                 /opt/ddtx-mpich-yaksa-layouts
# Unpacked source /opt/ddtx-mpich-src (env DDTX_MPICH_SRC; util/run-mpi-tests.sh reuses its
# test/mpi), one build directory per variant in it, make -j2.  --source-only fetches and unpacks
# the source package and stops; --print-prefix prints the variant's prefix and stops.
#
# Why the variants: MPICH's ofi netmod hands a provider a noncontiguous message as an iov list only
# when its datatype flattens to at most MPIDI_OFI_IOV_MAX (32) pieces, otherwise it packs.  Building
# those iov lists with dataloop costs as much as packing (MILC's vector of contig(6,float): dataloop
# walks it element by element, perf shows MPII_Segment_manipulate and MPIR_Typerep_to_iov); yaksa is
# what users get.  --iov-max N turns the cap into a compile-time option (-DMPIDI_OFI_IOV_MAX=N,
# the source's define guarded by #ifndef) so layouts of up to N pieces reach ddtx's engine.
# --ddtx-layouts applies util/mpich/ddtx-layouts.patch (every change under
# #ifdef MPIDI_OFI_DDTX_LAYOUTS, so the other variants build the source as it was) and copies
# util/mpich/ofi_ddtx_layouts.c into the ofi netmod: a derived datatype (but overlapping
# elements and transposes ddtx does not take in tiles) goes to ddtx as a layout handle
# (fi_ddtx(3)) instead of an iov list or a packed buffer, whatever its number of pieces;
# MPICH_DDTX_LAYOUTS=0 turns it off at run time.
#
# Debian's mpich package is built for UCX and cannot load libfabric providers, hence this build.
# Options that keep it short on 2 cores: --disable-fortran, --disable-cxx, --disable-romio (no
# MPI-IO), --enable-fast=O2 (no error checking of arguments beyond the cheap ones, -O2),
# --disable-doc, external hwloc.  yaksa's generated pack kernels make its build longer than
# dataloop's.  Linking against Debian's libfabric needs its private link dependencies:
# libpsm-infinipath1-dev, libpsm2-dev, librdmacm-dev (and libibverbs-dev).
set -euo pipefail
DDTX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

PREFIX=""
SRC_ROOT=${DDTX_MPICH_SRC:-/opt/ddtx-mpich-src}
JOBS=2
SOURCE_ONLY=0
PRINT_PREFIX=0
ENGINE=yaksa
IOV_MAX=""
LAYOUTS=""
while [ $# -gt 0 ]; do
  case $1 in
    --dataloop) ENGINE=dataloop; shift ;;
    --yaksa) ENGINE=yaksa; shift ;;
    --iov-max)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "build-mpich.sh: --iov-max needs a positive number" >&2; exit 2; }
      IOV_MAX=$2; shift 2 ;;
    --ddtx-layouts) LAYOUTS=1; shift ;;
    --print-prefix) PRINT_PREFIX=1; shift ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --src) SRC_ROOT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --source-only) SOURCE_ONLY=1; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "build-mpich.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
VARIANT=$ENGINE${IOV_MAX:+-iov$IOV_MAX}${LAYOUTS:+-layouts}
# DDTX_MPICH_PREFIX moves the default variant only (the scripts' other variants have their own).
[ "$VARIANT" = yaksa ] && PREFIX=${PREFIX:-${DDTX_MPICH_PREFIX:-}}
PREFIX=${PREFIX:-/opt/ddtx-mpich-$VARIANT}
if [ "$PRINT_PREFIX" = 1 ]; then echo "$PREFIX"; exit 0; fi

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
  # (apt-get source takes an exact version only, and bookworm has 4.0.2 alone: the directory
  # checked below says whether the archive still gives that one)
  (cd "$SRC_ROOT" && apt-get source -qq mpich)
  SRC=$(find "$SRC_ROOT" -maxdepth 1 -type d -name 'mpich-4.0.2*' | head -n1)
  [ -n "$SRC" ] || { log "no mpich-4.0.2 directory after apt-get source"; exit 1; }
fi
log "source: $SRC"
[ "$SOURCE_ONLY" = 1 ] && exit 0

# --- configure, build, install -----------------------------------------------------------------
# The iov cap becomes overridable: the define is guarded once, in place (the default stays 32
# for builds that do not pass it).
TYPES_H="$SRC/src/mpid/ch4/netmod/ofi/ofi_types.h"
if ! grep -q '^#ifndef MPIDI_OFI_IOV_MAX' "$TYPES_H"; then
  sed -i 's/^#define MPIDI_OFI_IOV_MAX \+(32)$/#ifndef MPIDI_OFI_IOV_MAX\n#define MPIDI_OFI_IOV_MAX (32)\n#endif/' "$TYPES_H"
  grep -q '^#ifndef MPIDI_OFI_IOV_MAX' "$TYPES_H" || { log "could not guard MPIDI_OFI_IOV_MAX in $TYPES_H"; exit 1; }
fi
# The layout handles' code: patched in once (guarded), the netmod's new file kept current.
OFI_DIR="$SRC/src/mpid/ch4/netmod/ofi"
if [ -n "$LAYOUTS" ]; then
  if ! grep -q 'ofi_ddtx_layouts.c' "$OFI_DIR/ofi_datatype.c"; then
    patch -d "$SRC" -p1 -s -N < "$DDTX_ROOT/util/mpich/ddtx-layouts.patch" ||
      { log "util/mpich/ddtx-layouts.patch does not apply to $SRC"; exit 1; }
  fi
  cmp -s "$DDTX_ROOT/util/mpich/ofi_ddtx_layouts.c" "$OFI_DIR/ofi_ddtx_layouts.c" ||
    cp "$DDTX_ROOT/util/mpich/ofi_ddtx_layouts.c" "$OFI_DIR/ofi_ddtx_layouts.c"
fi
# MPICHLIB_CPPFLAGS reach MPICH's own compilation only, not the mpicc wrapper.
LIB_CPPFLAGS="${IOV_MAX:+-DMPIDI_OFI_IOV_MAX=$IOV_MAX}"
LIB_CPPFLAGS+="${LAYOUTS:+ -DMPIDI_OFI_DDTX_LAYOUTS -I$DDTX_ROOT/include}"

BUILD="$SRC_ROOT/build-$VARIANT"
start=$(date +%s)
rm -rf "$BUILD" "$PREFIX"
# The iov cap is read in one place (the ofi netmod's init, ofi_init.c): an --iov-max build starts
# from a copy of the same engine's plain build when that exists, compiles the sources using the
# define again and relinks libmpi, then installs under its own prefix, instead of 10+ minutes of
# everything (configuring again would regenerate yaksa's config header, and with it every
# generated kernel).  The wrappers (mpicc, ...) get the new prefix; mpichversion still shows the
# plain build's configure line.
SEED="$SRC_ROOT/build-$ENGINE"
if [ -n "$IOV_MAX$LAYOUTS" ] && [ -f "$SEED/.ddtx-built" ]; then
  log "starting from $SEED (the sources using MPIDI_OFI_IOV_MAX are compiled again)"
  cp -a "$SEED" "$BUILD"
  rm -f "$BUILD/.ddtx-built"
  while read -r f; do
    base=$(basename "$f" .c)
    find "$BUILD" \( -name "*$base.lo" -o -name "*$base.o" \) -type f -delete
  done < <(grep -rl --include='*.c' 'MPIDI_OFI_IOV_MAX' "$SRC/src")
  # --ddtx-layouts: every object whose dependencies name a file the patch changes (most of
  # libmpi: the ofi netmod's inline headers reach nearly every source)
  if [ -n "$LAYOUTS" ]; then
    log "and every source that includes the ofi netmod's patched files"
    patched='netmod/ofi/(ofi_pre|ofi_impl|ofi_send|ofi_recv)\.h|ofi_(datatype|ddtx_layouts|init)\.c'
    while read -r dep; do
      obj=$(basename "$dep"); obj=${obj%.P*}; dir=$(dirname "$(dirname "$dep")")
      rm -f "$dir/$obj.lo" "$dir/$obj.o" "$dir/.libs/$obj.o"
    done < <(grep -rlE --include='*.P*' "$patched" "$BUILD/src")
  fi
  cd "$BUILD"
  seed_prefix=$(sed -n 's/^prefix = //p' Makefile)
  cppflags="$(sed -n 's/^CPPFLAGS = //p' Makefile) $LIB_CPPFLAGS"
  t_conf=$(date +%s)
  make -j"$JOBS" CPPFLAGS="$cppflags" lib/libmpi.la > "$BUILD/make.out" 2>&1 || { tail -n 60 "$BUILD/make.out"; exit 1; }
  t_make=$(date +%s)
  touch "$BUILD/.ddtx-built"
  log "rebuilt in $((t_make - t_conf)) s; installing"
  make install prefix="$PREFIX" > "$BUILD/install.out" 2>&1 || { tail -n 40 "$BUILD/install.out"; exit 1; }
  # (the plain prefix where it stands alone: make install already wrote the new one in places)
  grep -rlI -- "$seed_prefix" "$PREFIX/bin" "$PREFIX/lib/pkgconfig" 2>/dev/null |
    xargs -r sed -i -E "s#$seed_prefix([/\"' ]|\$)#$PREFIX\1#g"
  end=$(date +%s)
  echo "$VARIANT: from $SEED, make $((t_make - t_conf)) s, install $((end - t_make)) s" \
    > "$PREFIX/.ddtx-mpich-complete"
  log "installed in $PREFIX; total $((end - start)) s"
  exit 0
fi
mkdir -p "$BUILD"
cd "$BUILD"
log "configuring $VARIANT (prefix $PREFIX)"
"$SRC/configure" --prefix="$PREFIX" \
  --with-device=ch4:ofi --with-libfabric=/usr \
  --with-datatype-engine="$ENGINE" \
  --disable-fortran --disable-cxx --disable-romio --disable-doc \
  --enable-fast=O2 --enable-shared --disable-static \
  --with-hwloc=/usr --with-pm=hydra \
  --without-ucx --without-cuda --without-ze \
  CFLAGS="-O2" MPICHLIB_CPPFLAGS="$LIB_CPPFLAGS" > "$BUILD/configure.out" 2>&1 || { tail -n 60 "$BUILD/configure.out"; exit 1; }
t_conf=$(date +%s)
log "configured in $((t_conf - start)) s; make -j$JOBS"
make -j"$JOBS" > "$BUILD/make.out" 2>&1 || { tail -n 60 "$BUILD/make.out"; exit 1; }
t_make=$(date +%s)
touch "$BUILD/.ddtx-built"
log "built in $((t_make - t_conf)) s; installing"
make install > "$BUILD/install.out" 2>&1 || { tail -n 40 "$BUILD/install.out"; exit 1; }
end=$(date +%s)
echo "$VARIANT: configure $((t_conf - start)) s, make $((t_make - t_conf)) s, install $((end - t_make)) s" \
  > "$PREFIX/.ddtx-mpich-complete"
log "installed in $PREFIX; total $((end - start)) s ($(cat "$PREFIX/.ddtx-mpich-complete"))"
"$PREFIX/bin/mpichversion" | head -n 4 || true
