#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Where a one-way contiguous message goes on one host: fabtests' fi_rdm_tagged_pingpong of one
# size, each provider column with cma_time.so preloaded into both processes (it times each
# process_vm_readv/writev), and per run: the one-way time, the mean kernel copy (both
# processes' calls), the time outside the copy (one-way minus the copies a one-way makes:
# calls per transfer times their mean), and the share of copies over 20 us (this host's
# virtual machine stalls about 1% of them, for any provider).
#   util/cma-time.sh [-c COLUMN]... [-r RUNS] [-S SIZE] [-I ITERATIONS]
# COLUMN as util/bench-fabtests.sh: shm, or ddtx:BUILD[,VAR=VALUE...] (default -c shm -c
# ddtx:build); SIZE default 98304, ITERATIONS 5000, RUNS 3 (the columns round-robin).
# cma_time.so comes from the first ddtx column's build (tests/fabtests/benchmarks).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

cols=() runs=3 size=98304 iters=5000
while getopts "c:r:S:I:h" opt; do
  case $opt in
    c) cols+=("$OPTARG") ;;
    r) runs=$OPTARG ;;
    S) size=$OPTARG ;;
    I) iters=$OPTARG ;;
    *) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
[ ${#cols[@]} -gt 0 ] || cols=(shm ddtx:build)
cache=${DDTX_FABTESTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ddtx-fabtests-1.17.0}
prog=$cache/install/bin/fi_rdm_tagged_pingpong
[ -x "$prog" ] || { echo "no $prog: run util/fabtests.sh once to build fabtests" >&2; exit 1; }
lib=""
for c in "${cols[@]}"; do
  if [[ $c == ddtx:* ]]; then
    b=${c#ddtx:}; b=${b%%,*}; [[ $b == /* ]] || b=$DDTX_ROOT/$b
    lib=$b/tests/fabtests/benchmarks/cma_time.so
    break
  fi
done
[ -n "$lib" ] || lib=$DDTX_ROOT/build/tests/fabtests/benchmarks/cma_time.so
[ -f "$lib" ] || { echo "no $lib: build the project (meson compile)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_one COLUMN: one ping-pong in namespaces of its own; prints its line of the table
run_one() {
  local col=$1 prov=$1 env=()
  if [[ $col == ddtx:* ]]; then
    local b vars=()
    IFS=, read -ra vars <<< "${col#ddtx:}"
    b=${vars[0]}; [[ $b == /* ]] || b=$DDTX_ROOT/$b
    prov=ddtx
    env=(FI_PROVIDER_PATH="$b/prov/ddtx" "${vars[@]:1}")
  fi
  rm -f "$tmp"/cma.*
  local out
  out=$(env "${env[@]}" FI_PROVIDER="$prov" LD_PRELOAD="$lib" CMA_TIME="$tmp/cma" \
    timeout 300 unshare --pid --fork --mount-proc --kill-child --net /bin/sh -c '
      ip link set lo up && mount -t tmpfs -o mode=1777,size=50% tmpfs /dev/shm
      "$1" -p "$2" -S "$3" -I "$4" -s 127.0.0.1 > /dev/null 2>&1 &
      s=$!; sleep 1
      "$1" -p "$2" -S "$3" -I "$4" -s 127.0.0.1 127.0.0.1; c=$?
      wait $s; exit $c' sh "$prog" "$prov" "$size" "$iters" 2>&1 | tail -n 1)
  local usec
  usec=$(awk '{ print $6 }' <<< "$out")
  cat "$tmp"/cma.* 2>/dev/null | awk -v col="$col" -v us="$usec" -v n="$iters" '
    { calls += $2; ns += $2 * $4; spikes += $6 }
    END {
      if (!calls || us == "") { printf "%-40s no result\n", col; exit }
      mean = ns / calls / 1000
      # a round trip is two one-way messages: the copies of one are half of all calls
      per = calls / (2 * n)
      printf "%-40s %8.2f %8.2f %8.2f %8.2f %7.1f%%\n", col, us, mean, per,
             us - per * mean, 100 * spikes / calls
    }'
}

echo "fi_rdm_tagged_pingpong -S $size -I $iters: one-way us; the kernel copies' mean (us) and"
echo "count per one-way; the rest of a one-way (us); the copies over 20 us"
for ((r = 1; r <= runs; r++)); do
  echo "round $r: $(ddtx_core_bounce)"
  printf '%-40s %8s %8s %8s %8s %8s\n' column one-way copy copies rest over20us
  for c in "${cols[@]}"; do run_one "$c"; done
done
