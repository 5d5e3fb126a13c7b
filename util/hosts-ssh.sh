#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# "ssh" for upstream runfabtests.sh between the two hosts of util/hosts.sh: runfabtests runs
# each server and client command as `ssh -n -o ... HOST "CMD"` when it is given hosts; with this
# script first in PATH (named ssh), HOST "A" or "B" runs CMD on that host (hosts.sh on), inside
# the run util/fabtests.sh -H started.  The environment is kept (ssh would drop it).
set -u
while [ $# -gt 0 ]; do
  case $1 in
    -n) shift ;;
    -o) shift 2 ;;
    *) break ;;
  esac
done
host=${1:?hosts-ssh.sh: no host}
shift
exec "${DDTX_HOSTS_SH:?hosts-ssh.sh: DDTX_HOSTS_SH not set}" on "$host" sh -c "$*"
