#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The meson test "hosts-mpich": MPICH ch4:ofi (util/build-mpich.sh) with 4 ranks, 2 on each host of
# util/hosts.sh, over ddtx's wire per peer, every byte checked (tests/mpi/mpi_check) and every
# rank's ddtx statistics asserted (tests/mpi/hosts/across.sh, jobs "mpich" and "mpich-shmmod"):
# once with all traffic through ddtx (MPIR_CVAR_NOLOCAL=1) and once with MPICH's own shared
# memory between the ranks of a host and ddtx between the hosts; each over libfabric's net core
# and over tcp (FI_DDTX_OFI_PROVIDER).
#
#   mpich.sh PROVIDER_DIR        (FI_PROVIDER_PATH of the ddtx build under test)
#
# Exit 77 (skipped) without an installed util/build-mpich.sh build (CI does not build MPICH: about
# 10 minutes on 2 cores) or without root (util/hosts.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
prov=${1:?usage: mpich.sh PROVIDER_DIR}
prefix=${DDTX_MPICH_PREFIX:-$("$root/util/build-mpich.sh" --print-prefix)}
if [ ! -x "$prefix/bin/mpicc" ] || [ ! -f "$prefix/.ddtx-mpich-complete" ]; then
  echo "no MPICH in '$prefix' (util/build-mpich.sh): skipped"
  exit 77
fi
[ "$(id -u)" -eq 0 ] || { echo "not root (util/hosts.sh needs it): skipped"; exit 77; }
work=$(mktemp -d /tmp/ddtx-hosts-mpich.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin/ddtx-mpich"
"$prefix/bin/mpicc" -O2 -g -pthread -o "$work/bin/ddtx-mpich/mpi_check" "$root/tests/mpi/mpi_check.c" ||
  { echo "FAIL: building mpi_check with $prefix/bin/mpicc"; exit 1; }
# the ofi wire over libfabric's net core and over tcp's own RDM endpoint (FI_DDTX_OFI_PROVIDER)
"$root/util/hosts.sh" run bash -c 'rc=0
  for core in net tcp; do
    echo "== ofi wire core $core"
    "$0" --bin "$1" --prov "$2" --out "$3/$core" --mpich "$4" --only mpich,mpich-shmmod --core $core || rc=1
  done
  exit $rc' "$here/across.sh" "$work/bin" "$prov" "$work/out" "$prefix"
rc=$?
# on failure, the jobs' output (the work directory goes away)
[ $rc = 0 ] || [ $rc = 77 ] || for f in "$work"/out/*/hosts-*.txt; do echo "---- $f"; tail -40 "$f"; done
exit $rc
