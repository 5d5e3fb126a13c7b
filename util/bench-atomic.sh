#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Atomic latency over ddtx and libfabric's shm provider, side by side, in one run: fabtests'
# fi_rdm_atomic (built by util/fabtests.sh) for one datatype and a few ops, server and client in
# a network and PID namespace of their own (as util/fabtests.sh runs them), usec per operation.
#   util/bench-atomic.sh [-b BUILD] [-I ITERATIONS] [-z DATATYPE] [-o "OPS"]
# Take the exclusive CPU lock around it on a shared host: flock -x /tmp/ddtx-cpu.lock ...
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

build=build iters=10000 dtype=uint64 ops="sum read write cswap"
while getopts "b:I:z:o:h" opt; do
  case $opt in
    b) build=$OPTARG ;;
    I) iters=$OPTARG ;;
    z) dtype=$OPTARG ;;
    o) ops=$OPTARG ;;
    *) sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
bin=${DDTX_FABTESTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ddtx-fabtests-1.17.0}/install/bin
[ -x "$bin/fi_rdm_atomic" ] || { echo "no $bin/fi_rdm_atomic: run util/fabtests.sh once"; exit 1; }
[ -f "$build/prov/ddtx/libddtx-fi.so" ] || { echo "no $build/prov/ddtx/libddtx-fi.so"; exit 1; }

# run PROV OP: the client's usec/xfer of fi_rdm_atomic (empty if it failed)
run() {
  local prov=$1 op=$2
  FI_PROVIDER_PATH=$DDTX_ROOT/$build/prov/ddtx FI_PROVIDER=$prov \
    unshare --net --pid --fork --mount --mount-proc --kill-child /bin/sh -c '
      ip link set lo up && mount -t tmpfs -o mode=1777 tmpfs /dev/shm || exit 1
      timeout 120 "$0" -p "$1" -o "$2" -z "$3" -I "$4" -s 127.0.0.1 >/dev/null 2>&1 &
      sleep 0.5
      timeout 120 "$0" -p "$1" -o "$2" -z "$3" -I "$4" -s 127.0.0.1 127.0.0.1 2>/dev/null
      wait' "$bin/fi_rdm_atomic" "$prov" "$op" "$dtype" "$iters" |
    awk '/_lat/ { print $7 }' | tail -1
}

echo "fi_rdm_atomic -z $dtype -I $iters: usec per operation (client), $(git rev-parse --short HEAD)"
printf "%-8s %10s %10s %8s\n" op ddtx shm ddtx/shm
for op in $ops; do
  d=$(run ddtx "$op") s=$(run shm "$op")
  ratio=$(awk -v d="$d" -v s="$s" 'BEGIN { if (d > 0 && s > 0) printf "%.2f", d / s; else print "-" }')
  printf "%-8s %10s %10s %8s\n" "$op" "${d:--}" "${s:--}" "$ratio"
done
