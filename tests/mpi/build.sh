#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the MPI-level tests and benchmarks of tests/mpi with each MPI stack that is installed
# (they are not part of the Meson build, so a machine without MPI still builds the provider):
#
#   tests/mpi/build.sh [OUTDIR]          default OUTDIR: <repo>/build-mpi-tests
#
#   OUTDIR/consumer_check                 libfabric-level checks (cc + libfabric)
#   OUTDIR/<stack>/{mpi_check,nc_iov,mpi_nc_bench}
#
# Stacks (each skipped when its compiler wrapper is missing):
#   ddtx-mpich  ${DDTX_MPICH_PREFIX:-/opt/ddtx-mpich-yaksa}/bin/mpicc (util/build-mpich.sh;
#               ch4:ofi, yaksa)
#   mpich-<name> every other installed util/build-mpich.sh variant /opt/ddtx-mpich-*/bin/mpicc
#               (mpich-ddtx-mpich-dataloop, mpich-ddtx-mpich-yaksa-iov8192, ...; util/mpi-bench.sh)
#   openmpi     /usr/bin/mpicc.openmpi                           (Debian's Open MPI 4.1)
#   deb-mpich   /usr/bin/mpicc.mpich                             (Debian's MPICH 4.0, ch4:ucx)
# Full paths are used on purpose: Debian's mpich and openmpi both provide "mpicc" alternatives.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/build-mpi-tests}
PREFIX=${DDTX_MPICH_PREFIX:-$("$ROOT/util/build-mpich.sh" --print-prefix)}
mkdir -p "$OUT"

CFLAGS_COMMON=(-O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-stringop-overflow)

cc "${CFLAGS_COMMON[@]}" -I"$ROOT/include" -o "$OUT/consumer_check" "$HERE/repro/consumer_check.c" -lfabric
for src in "$HERE"/repro/*.c; do
  name=$(basename "$src" .c)
  [ "$name" = consumer_check ] && continue
  cc "${CFLAGS_COMMON[@]}" -I"$ROOT/include" -o "$OUT/$name" "$src" -lfabric -lpthread
done

declare -A WRAPPERS=(
  [ddtx-mpich]="$PREFIX/bin/mpicc"
  [openmpi]=/usr/bin/mpicc.openmpi
  [deb-mpich]=/usr/bin/mpicc.mpich
)
STACKS=(ddtx-mpich openmpi deb-mpich)
for p in /opt/ddtx-mpich-* ${DDTX_MPICH_IOV_PREFIX:-} ${DDTX_MPICH_DATALOOP_PREFIX:-}; do
  [ -f "$p/.ddtx-mpich-complete" ] && [ "$p" != "$PREFIX" ] || continue
  name=mpich-$(basename "$p")
  [ -n "${WRAPPERS[$name]:-}" ] && continue
  WRAPPERS[$name]=$p/bin/mpicc
  STACKS+=("$name")
done
for stack in "${STACKS[@]}"; do
  mpicc=${WRAPPERS[$stack]}
  if [ ! -x "$mpicc" ]; then
    echo "tests/mpi/build.sh: $stack: no $mpicc, skipped"
    continue
  fi
  mkdir -p "$OUT/$stack"
  "$mpicc" "${CFLAGS_COMMON[@]}" -pthread -o "$OUT/$stack/mpi_check" "$HERE/mpi_check.c"
  "$mpicc" "${CFLAGS_COMMON[@]}" -o "$OUT/$stack/nc_iov" "$HERE/nc_iov.c"
  "$mpicc" "${CFLAGS_COMMON[@]}" -o "$OUT/$stack/mpi_nc_bench" "$HERE/bench/mpi_nc_bench.c"
done
echo "tests/mpi/build.sh: built into $OUT"
