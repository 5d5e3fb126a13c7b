#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The meson test "mpich-layouts": MPICH built with util/build-mpich.sh --ddtx-layouts hands its
# derived datatypes to ddtx as layout handles.  tests/mpi/nc_layouts
# (2 ranks, every byte and gap checked against MPICH's own datatype engine) runs
#   - over ddtx's shm wire: every rank's ddtx statistics must count operations with a handle;
#   - with MPICH_DDTX_LAYOUTS=0: the same bytes through MPICH's iov and pack paths, no handle;
#   - over ddtx's ofi wire on libfabric's tcp core, with handles.
#
#   mpich_layouts.sh PROVIDER_DIR        (FI_PROVIDER_PATH of the ddtx build under test)
#
# Exit 77 (skipped) without that MPICH build (CI does not build MPICH: about 10 minutes).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
prov=${1:?usage: mpich_layouts.sh PROVIDER_DIR}
prefix=$("$root/util/build-mpich.sh" --ddtx-layouts --print-prefix)
if [ ! -x "$prefix/bin/mpicc" ] || [ ! -f "$prefix/.ddtx-mpich-complete" ]; then
  echo "no MPICH in '$prefix' (util/build-mpich.sh --ddtx-layouts): skipped"
  exit 77
fi
work=$(mktemp -d /tmp/ddtx-mpich-layouts.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
"$prefix/bin/mpicc" -O2 -g -o "$work/nc_layouts" "$here/nc_layouts.c" ||
  { echo "FAIL: building nc_layouts with $prefix/bin/mpicc"; exit 1; }

rc=0
# run NAME WANT [VAR=VALUE...]: WANT "handles" (each rank counted the operations nc_layouts
# expects to carry a handle, no more, no fewer) or "none"
run() {
  local name=$1 want=$2 out="$work/$1.txt"
  shift 2
  env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=ddtx FI_PROVIDER_PATH="$prov" FI_DDTX_STATS=1 "$@" \
    timeout 300 "$prefix/bin/mpiexec" -n 2 "$work/nc_layouts" >"$out" 2>&1
  local st=$? ops
  ops=$(sed -n 's/.*layout handles: operations \([0-9]*\).*/\1/p' "$out" | tr '\n' ' ')
  local ok=1 n=0 expect=0
  [ $st = 0 ] && grep -q '^nc_layouts: [0-9]* checks, 0 failed' "$out" || ok=0
  [ "$want" = handles ] &&
    expect=$(sed -n 's/^nc_layouts: handle operations expected per rank: //p' "$out")
  want="$want, ${expect:-?} each"
  for o in $ops; do
    n=$((n + 1))
    [ "$o" = "$expect" ] || ok=0
  done
  [ $n = 2 ] || ok=0 # one ddtx domain per rank
  local res
  res=$(grep '^nc_layouts: [0-9]* checks' "$out" || echo "exit $st")
  echo "$([ $ok = 1 ] && echo OK || echo FAIL) $name: $res; handle operations per rank:" \
    "${ops:-none}(want $want)"
  if [ $ok = 0 ]; then
    rc=1
    tail -30 "$out"
  fi
}
run shm handles
run shm-layouts-off none MPICH_DDTX_LAYOUTS=0
run ofi-tcp handles FI_PROVIDER=ddtx,tcp FI_DDTX_WIRE=ofi FI_DDTX_OFI_PROVIDER=tcp
exit $rc
