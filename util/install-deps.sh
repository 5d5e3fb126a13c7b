#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what ddtx needs to build and test on Debian 12. Does nothing for packages already present.
#   util/install-deps.sh [--plots] [--fuzz] [--fabtests]
#     --plots adds python3-matplotlib for util/plot_bench.py
#     --fuzz  adds clang-14 and libclang-rt-14-dev (libFuzzer) for util/fuzz.sh
#     --fabtests adds autoconf, automake and libtool to build upstream fabtests (util/fabtests.sh)
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libfabric-dev libfabric-bin libibverbs-dev python3 iproute2)
for arg in "$@"; do
  case $arg in
    --plots) pkgs+=(python3-matplotlib) ;;
    --fuzz) pkgs+=(clang-14 libclang-rt-14-dev) ;;
    --fabtests) pkgs+=(autoconf automake libtool make util-linux procps) ;;
    *) echo "install-deps.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "install-deps.sh: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
