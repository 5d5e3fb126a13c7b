#!/usr/bin/env bash
# Installs what ddtx needs to build and test on Debian 12. Does nothing for packages already present.
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libfabric-dev libfabric-bin libibverbs-dev python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
