#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A remote-shell stand-in for MPI launchers on the two "hosts" of util/hosts.sh: Hydra's
# "-launcher rsh -launcher-exec" and Open MPI's "--mca plm_rsh_agent" call it the way they call
# ssh, with the host's address (or name) and a command line, which it runs on that host:
#
#   launch.sh [-x|-n|...] HOST COMMAND...      (inside "util/hosts.sh run")
#
# HOST is a host's address (127.1.0.1), host name (ddtx-host-a) or letter (A) from DDTX_HOSTS.
# Launchers pass the remote command as words meant for a remote shell (Hydra quotes the proxy's
# path), so they are joined and given to sh -c, as sshd would.
set -u
here=$(cd "$(dirname "$0")" && pwd)
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done   # ssh options (-x): nothing to do
[ $# -ge 2 ] || { echo "launch.sh: usage: launch.sh HOST COMMAND..." >&2; exit 2; }
host=${1#*@}
shift
letter=""
IFS=';' read -ra entries <<<"${DDTX_HOSTS:?launch.sh: not inside util/hosts.sh run}"
for e in "${entries[@]}"; do
  IFS=: read -r l _net _shm name _dev addr <<<"$e"
  if [ "$host" = "$l" ] || [ "$host" = "$name" ] || [ "$host" = "$addr" ]; then letter=$l; fi
done
[ -n "$letter" ] || { echo "launch.sh: no host '$host' in DDTX_HOSTS" >&2; exit 2; }
exec "$here/../../../util/hosts.sh" on "$letter" sh -c "$*"
