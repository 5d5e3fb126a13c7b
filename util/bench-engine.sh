#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# DDT engine benchmarks of issue 3, printed as tables, with JSON (and PNG with --plot):
#   (a) nc_crossover   crossover map: block length 64 B..64 KiB x layout reuse 1..1000, per
#                      scheme (pack, sgl, umr, auto), 1 MiB per transfer; winner and margin
#   (b) nc_crossover   auto / best fixed scheme in every cell of (a) (target <= 1.05), and
#       nc_mix         auto vs every fixed scheme on mixed small/large-block workloads (NAS_MG
#                      faces, SW4Lite, 64 B + 16 KiB), with iov lists and with layout handles
#   (c) nc_layout_cost post time of a layout-cache hit vs a miss, per block (target < 10 ns)
#
#   util/bench-engine.sh [--plot] [--quick] [--build DIR] [--out DIR] [--repeat N] [--only a|b|c]
#     --plot     installs python3-matplotlib (Debian) and draws OUT/crossover.png, OUT/mix.png,
#                OUT/layout_cost.png with util/plot_crossover.py
#     --quick    a smaller map (64,1K,16K,64K x 1,100) and shorter runs, for a first look
#     --build    build directory (default build), configured and built if needed
#     --out      where the JSON and PNG go (default BUILD/bench-engine)
#     --repeat   runs per crossover cell and per mix case (default 3)
#     --stat     min (default) or median over the runs: the minimum is the figure least
#                disturbed by whatever else runs on the machine
#     --only     run one part: a (= crossover, which also gives b's per-cell figures), b (mixes),
#                c (layout cost)
# Benchmarks, not tests: nothing here fails on a timing, only on a build error or wrong data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

plot=0 quick=0 build=build out="" repeat=3 stat=min only=""
while [ $# -gt 0 ]; do
  case $1 in
    --plot) plot=1 ;;
    --quick) quick=1 ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --stat) stat=$2; shift ;;
    --only) only=$2; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench-engine.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out="$build/bench-engine"

if [ $plot = 1 ]; then util/install-deps.sh --plots; else util/install-deps.sh; fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ddtx_build "$build" >"$log" 2>&1 || { cat "$log"; echo "bench-engine.sh: build failed" >&2; exit 1; }
mkdir -p "$out"

export FI_PROVIDER_PATH="$DDTX_ROOT/$build/prov/ddtx"
[ -d "$FI_PROVIDER_PATH" ] || export FI_PROVIDER_PATH="$build/prov/ddtx"
export IPATH_NO_BACKTRACE=1
bin="$build/tests/fabtests/benchmarks"
echo "# ddtx $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs, $(date -u +%FT%TZ)"

run() {
  echo
  echo "\$ $*"
  "$@"
}

status=0
if [ -z "$only" ] || [ "$only" = a ]; then
  if [ $quick = 1 ]; then
    run "$bin/nc_crossover" -b 64,1K,16K,64K -r 1,100 -s 1M -t 0.2 --repeat 1 \
      --json "$out/crossover.json" || status=1
  else
    run "$bin/nc_crossover" -b 64,256,1K,4K,16K,64K -r 1,10,100,1000 -s 1M -t 0.2 \
      --repeat "$repeat" --stat "$stat" --json "$out/crossover.json" || status=1
  fi
fi
if [ -z "$only" ] || [ "$only" = b ]; then
  if [ $quick = 1 ]; then
    run "$bin/nc_mix" --repeat 1 -t 0.3 --json "$out/mix.json" || status=1
  else
    run "$bin/nc_mix" --repeat "$repeat" --stat "$stat" -t 0.4 --json "$out/mix.json" || status=1
    # The same mixes described once through layout handles (one message per layout, MG's x
    # face included); nc_mix falls back to iov lists where the provider has no handles.
    run "$bin/nc_mix" --repeat "$repeat" --stat "$stat" -t 0.4 --handles --no-parts \
      --json "$out/mix_handles.json" || status=1
  fi
fi
if [ -z "$only" ] || [ "$only" = c ]; then
  run "$bin/nc_layout_cost" -n 16,64,256,1024,4096 --repeat "$repeat" \
    --json "$out/layout_cost.json" || status=1
fi

if [ $plot = 1 ] && [ -f "$out/crossover.json" ]; then
  py=/usr/bin/python3   # Debian's, where python3-matplotlib lives (not a pyenv/venv python3)
  [ -x $py ] || py=python3
  args=("$out/crossover.json" -o "$out/crossover.png")
  [ -f "$out/mix.json" ] && args+=(--mix "$out/mix.json" --mix-output "$out/mix.png")
  [ -f "$out/layout_cost.json" ] && args+=(--layout-cost "$out/layout_cost.json"
                                          --layout-cost-output "$out/layout_cost.png")
  echo
  run $py util/plot_crossover.py "${args[@]}"
fi
echo
echo "results in $out/"
exit $status
