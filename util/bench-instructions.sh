#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The instructions one small message costs, counted by valgrind's callgrind: nc_overhead's loop
# (post a receive, send, read both completions, one endpoint sending to itself) for each
# provider column, side by side.  A count does not move with the host's load, as every timing
# on a shared 2-core host does (a ping-pong by up to 2x between runs): it judges a change to the
# per-message path where a timing cannot; the time it saves still needs a benchmark.
#   util/bench-instructions.sh [-c COLUMN]... [-s SIZES] [-b BLOCKS] [-n ITERATIONS]
# COLUMN: shm (libfabric's), or ddtx:BUILD (the provider and nc_overhead built in BUILD, a path
# relative to the repository root or absolute), or ddtx-handle:BUILD (the same, the lists sent as
# one layout handle, as MPICH's --ddtx-layouts build sends); default -c shm -c ddtx:build.
# SIZES: contiguous messages (default 8,2K); BLOCKS: lists of that many 64 B entries (default
# 32; "" for none).
# Needs valgrind (installed from Debian's archive when missing and root).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

COLS=()
SIZES=8,2K
BLOCKS=32
ITERS=20000
while getopts "c:s:b:n:h" opt; do
  case $opt in
    c) COLS+=("$OPTARG") ;;
    s) SIZES=$OPTARG ;;
    b) BLOCKS=$OPTARG ;;
    n) ITERS=$OPTARG ;;
    *) sed -n '3,14p' "$0"; exit 2 ;;
  esac
done
[ ${#COLS[@]} -gt 0 ] || COLS=(shm ddtx:build)

if ! command -v valgrind >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y valgrind || (apt-get update && apt-get install -y valgrind)) >/dev/null
  else
    echo "bench-instructions.sh: valgrind is needed (apt-get install valgrind)" >&2
    exit 77
  fi
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# build_of COLUMN: the build whose nc_overhead (and provider, for ddtx) the column runs
build_of() {
  local b=build
  [[ $1 == ddtx*:* ]] && b=${1#*:}
  [[ $b == /* ]] || b=$ROOT/$b
  echo "$b"
}

# count COLUMN SIZE BLOCKS: instructions per message of one row
count() {
  local col=$1 b prov=shm out
  b=$(build_of "$col")
  [[ $col == ddtx:* ]] && prov=ddtx
  [[ $col == ddtx-handle:* ]] && prov=ddtx-handle
  [ -x "$b/tests/fabtests/benchmarks/nc_overhead" ] || {
    echo "bench-instructions.sh: no $b/tests/fabtests/benchmarks/nc_overhead" >&2; exit 1; }
  rm -f "$TMP"/cg.*
  # Only the loop is counted (start-up is not); it runs ITERS messages and ITERS/10 to warm up.
  FI_PROVIDER_PATH=$b/prov/ddtx valgrind --tool=callgrind --trace-children=yes \
    --toggle-collect='loop_one*' --callgrind-out-file="$TMP/cg.%p" \
    "$b/tests/fabtests/benchmarks/nc_overhead" -p "$prov" -s "$2" -b "$3" -n "$ITERS" -r 1 \
    > "$TMP/out" 2>&1 || { cat "$TMP/out" >&2; exit 1; }
  out=$(awk '/^(summary|totals):/ { if ($2 > m) m = $2 } END { print m + 0 }' "$TMP"/cg.*)
  awk -v t="$out" -v n="$ITERS" 'BEGIN { printf "%.0f", t / (n + int(n / 10)) }'
}

rows=()
IFS=, read -ra sz <<< "$SIZES"
for s in "${sz[@]}"; do [ -n "$s" ] && rows+=("$s|"); done
IFS=, read -ra bl <<< "$BLOCKS"
for n in "${bl[@]}"; do [ -n "$n" ] && rows+=("|$n"); done

echo "instructions per message (callgrind; nc_overhead: receive posted, send, both completions)"
printf '%-10s' message
for c in "${COLS[@]}"; do printf ' %14s' "$c"; done
for ((j = 1; j < ${#COLS[@]}; j++)); do printf ' %8s' "$j/0"; done
echo
for r in "${rows[@]}"; do
  s=${r%|*} n=${r#*|}
  label=$s
  [ -n "$n" ] && label="${n}x64 B"
  vals=()
  for c in "${COLS[@]}"; do vals+=("$(count "$c" "$s" "$n")"); done
  printf '%-10s' "$label"
  for v in "${vals[@]}"; do printf ' %14s' "$v"; done
  for ((j = 1; j < ${#vals[@]}; j++)); do
    awk -v a="${vals[$j]}" -v b="${vals[0]}" 'BEGIN { printf " %7.2fx", b ? a / b : 0 }'
  done
  echo
done
echo "columns: $(for ((j = 0; j < ${#COLS[@]}; j++)); do printf '%d=%s ' $j "${COLS[$j]}"; done)"
