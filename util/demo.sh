#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what is missing (Debian 12), builds ddtx into ./build and runs the demonstration:
# two processes exchange noncontiguous layouts through ddtx, once per scheme, and print the
# scheme ddtx used, the bytes moved, the throughput and the data check.
#   util/demo.sh [scheme...]        (default: pack sgl umr auto)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

util/install-deps.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! ddtx_build build >"$log" 2>&1; then
  cat "$log"
  echo "demo.sh: build failed" >&2
  exit 1
fi
echo "built ./build"

export FI_PROVIDER_PATH="$DDTX_ROOT/build/prov/ddtx"
export IPATH_NO_BACKTRACE=1
echo
echo "\$ FI_PROVIDER_PATH=build/prov/ddtx fi_info -p ddtx | head -6"
info=$(fi_info -p ddtx 2>/dev/null) || { echo "demo.sh: libfabric does not list ddtx" >&2; exit 1; }
printf '%s\n' "$info" | sed -n '1,6p'
echo
build/tests/fabtests/demo/nc_demo "$@"
