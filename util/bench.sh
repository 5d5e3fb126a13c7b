#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds ddtx into ./build (installing what is missing) and runs the noncontiguous benchmark
# with the issue's configurations: 32 MiB as 64 B and as 4 KiB blocks, stride 2 x block, against
# ddtx (pack, sgl, umr, auto), libfabric's shm and tcp with application packing, and bare
# process_vm_writev.  Results: the printed tables and build/nc_bw.json.
#   util/bench.sh [--plot] [nc_bw options...]    (options replace the defaults; see nc_bw --help)
#   --plot   also installs python3-matplotlib and draws build/nc_bw.png
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

plot=0
args=()
for arg in "$@"; do
  if [ "$arg" = --plot ]; then plot=1; else args+=("$arg"); fi
done
[ ${#args[@]} -eq 0 ] && args=(-b 64,4K -s 32M)

if [ $plot = 1 ]; then util/install-deps.sh --plots; else util/install-deps.sh; fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ddtx_build build >"$log" 2>&1 || { cat "$log"; echo "bench.sh: build failed" >&2; exit 1; }

export FI_PROVIDER_PATH="$DDTX_ROOT/build/prov/ddtx"
export IPATH_NO_BACKTRACE=1
echo "\$ build/tests/fabtests/benchmarks/nc_bw ${args[*]} --json build/nc_bw.json"
build/tests/fabtests/benchmarks/nc_bw "${args[@]}" --json build/nc_bw.json
if [ $plot = 1 ]; then
  py=/usr/bin/python3   # Debian's, where python3-matplotlib lives (not a pyenv/venv python3)
  [ -x $py ] || py=python3
  $py util/plot_bench.py build/nc_bw.json -o build/nc_bw.png
fi
exit 0
