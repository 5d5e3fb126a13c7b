#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Two "hosts" on this machine (../shared/HOSTS.md): each one a network namespace (its own network
# stack, joined to the other by a veth pair carrying 127.1.0.1/30 and 127.1.0.2/30 with
# route_localnet), its own host name (UTS namespace) and its own /dev/shm (a tmpfs of its own,
# mounted over /dev/shm in a mount namespace), so that nothing built on shared memory can reach
# from one host to the other.  Needs root; exits 77 where the namespaces cannot be made.
#
#   util/hosts.sh run CMD [ARG...]    make hosts A and B, run CMD (in this machine's namespaces)
#                                     with DDTX_HOSTS describing them, remove them when CMD ends,
#                                     fails or is interrupted; exit status CMD's
#   util/hosts.sh on A|B CMD [ARG...] inside a run: run CMD on host A or B
#   util/hosts.sh link A|B down|up    inside a run: take a host's veth link down (the host
#                                     "disappears" from the network) or bring it back
#
# DDTX_HOSTS="A:<netns file>:<shm dir>:<host name>:<address>;B:..." is also read by the test
# programs (tests/fabtests/common/ft_hosts.c), whose ranks enter the hosts themselves.
set -u

die77() { echo "hosts.sh: $*; skipping" >&2; exit 77; }

host_field() { # host_field A|B N: field N (1-based after the letter) of the host's entry
  local e
  IFS=';' read -ra e <<<"${DDTX_HOSTS:?hosts.sh: not inside 'hosts.sh run'}"
  for x in "${e[@]}"; do
    [ "${x%%:*}" = "$1" ] && { cut -d: -f$(($2 + 1)) <<<"$x"; return 0; }
  done
  echo "hosts.sh: no host '$1' in DDTX_HOSTS" >&2
  return 1
}

case "${1:-}" in
on)
  h=$2; shift 2
  net=$(host_field "$h" 1) && shm=$(host_field "$h" 2) && name=$(host_field "$h" 3) || exit 2
  # A mount namespace of its own per command, in which the host's tmpfs covers /dev/shm.
  exec nsenter --net="$net" unshare --mount --uts --propagation private \
    sh -c 'mount --bind "$1" /dev/shm && hostname "$2" && shift 2 && exec "$@"' \
    sh "$shm" "$name" "$@"
  ;;
link)
  net=$(host_field "$2" 1) || exit 2
  exec nsenter --net="$net" ip link set "$(host_field "$2" 4)" "$3"
  ;;
run)
  shift
  ;;
*)
  sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac

[ "$(id -u)" -eq 0 ] || die77 "not root"
command -v ip >/dev/null && command -v nsenter >/dev/null && command -v unshare >/dev/null ||
  die77 "ip, nsenter or unshare missing"

# Everything below lives in a private mount namespace: the hosts' tmpfs mounts and netns bind
# mounts vanish with it even if this script is killed; the trap removes the rest.
if [ -z "${DDTX_HOSTS_PRIVATE:-}" ]; then
  unshare --mount --propagation private true 2>/dev/null || die77 "unshare --mount failed"
  DDTX_HOSTS_PRIVATE=1 exec unshare --mount --propagation private "$0" run "$@"
fi

# Names of the namespaces and links: unique on this machine (a run inside a PID namespace of
# its own, as util/fabtests.sh -H makes, has a small $$: it passes a tag instead).
tag=${DDTX_HOSTS_TAG:-ddtx$$}
dir=$(mktemp -d /tmp/ddtx-hosts.XXXXXX) || exit 1
created=()
cleanup() {
  local n
  for n in "${created[@]}"; do ip netns del "$n" 2>/dev/null; done
  ip link del "${tag}a" 2>/dev/null
  umount "$dir"/shm-* 2>/dev/null
  rm -rf "$dir"
}
child=
trap cleanup EXIT
# A signal ends the command too (bash runs a trap only once "wait" returns, hence the
# background command), then the EXIT trap cleans up.
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 130' INT
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 143' TERM

entries=()
for h in A B; do
  l=$(tr A-Z a-z <<<"$h")
  ns=$tag-$h
  ip netns add "$ns" 2>/dev/null || die77 "cannot create network namespaces"
  created+=("$ns")
  mkdir "$dir/shm-$h" && mount -t tmpfs -o mode=1777,size=1g "ddtx-shm-$h" "$dir/shm-$h" ||
    die77 "cannot mount a tmpfs"
  ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.route_localnet=1 || die77 "no route_localnet"
  ip netns exec "$ns" ip link set lo up
done
ip link add "${tag}a" type veth peer name "${tag}b" 2>/dev/null || die77 "cannot create a veth pair"
i=1
for h in A B; do
  l=$(tr A-Z a-z <<<"$h")
  ns=$tag-$h dev=$tag$l addr=127.1.0.$i
  ip link set "$dev" netns "$ns" &&
    ip netns exec "$ns" ip addr add "$addr/30" dev "$dev" &&
    ip netns exec "$ns" sysctl -qw "net.ipv4.conf.$dev.route_localnet=1" &&
    ip netns exec "$ns" ip link set "$dev" up || { echo "hosts.sh: veth set-up failed" >&2; exit 1; }
  entries+=("$h:/run/netns/$ns:$dir/shm-$h:ddtx-host-$l:$dev:$addr")
  i=$((i + 1))
done
DDTX_HOSTS=$(IFS=';'; echo "${entries[*]}")
export DDTX_HOSTS DDTX_HOST_A_ADDR=127.1.0.1 DDTX_HOST_B_ADDR=127.1.0.2
unset DDTX_HOSTS_PRIVATE

"$@" &
child=$!
wait "$child"
