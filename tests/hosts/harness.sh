#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# util/hosts.sh checked on its own: the two hosts have their own names and /dev/shm, TCP crosses
# the link with libfabric's own tcp provider (fi_pingpong, Debian's libfabric-bin), a link taken
# down stops it, and nothing (namespace, link, mount) is left behind afterwards.  77 where
# namespaces cannot be made (not root).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
hosts=$root/util/hosts.sh
command -v fi_pingpong >/dev/null || { echo "fi_pingpong missing (libfabric-bin)"; exit 77; }

f=$(mktemp)
export HOSTS_DESC_OUT=$f
"$hosts" run bash -c '
set -u
h=$0
dev() { tr ";" "\n" <<<"$DDTX_HOSTS" | grep "^$1:" | cut -d: -f5; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$("$h" on A hostname)" != "$("$h" on B hostname)" ] || fail "both hosts have one name"
"$h" on A touch /dev/shm/ddtx-hosts-probe || fail "cannot write host A /dev/shm"
"$h" on A test -e /dev/shm/ddtx-hosts-probe || fail "host A does not see its own file"
! "$h" on B test -e /dev/shm/ddtx-hosts-probe || fail "host B sees host A /dev/shm"
! test -e /dev/shm/ddtx-hosts-probe || fail "the machine sees host A /dev/shm"
echo "names and /dev/shm apart: ok"
# libfabric tcp across the link (server on B, client on A)
# (the tcp provider names its domains after interfaces: -d picks the veth end, so the server
# listens on 127.1.0.2 and not on the loopback address)
timeout 60 "$h" on B fi_pingpong -p tcp -e rdm -d "$(dev B)" -I 50 -S 4096 -c >/tmp/pp.$$ 2>&1 &
srv=$!
sleep 1
timeout 60 "$h" on A fi_pingpong -p tcp -e rdm -d "$(dev A)" -I 50 -S 4096 -c "$DDTX_HOST_B_ADDR" ||
  fail "fi_pingpong client on A"
wait $srv || { cat /tmp/pp.$$; fail "fi_pingpong server on B"; }
rm -f /tmp/pp.$$
echo "fi_pingpong -p tcp -e rdm from A to B: ok"
# a link taken down stops traffic: a TCP connect times out
"$h" link B down || fail "link down"
timeout 30 "$h" on B fi_pingpong -p tcp -e rdm -d "$(dev B)" -I 10 -S 64 >/dev/null 2>&1 &
srv=$!
sleep 1
! timeout 5 "$h" on A fi_pingpong -p tcp -e rdm -d "$(dev A)" -I 10 -S 64 "$DDTX_HOST_B_ADDR" \
  >/dev/null 2>&1 || fail "traffic crossed a link that is down"
kill $srv 2>/dev/null; wait $srv 2>/dev/null
echo "link down stops traffic: ok"
echo "$DDTX_HOSTS" >"$HOSTS_DESC_OUT"
' "$hosts"
rc=$?
[ $rc -eq 0 ] || exit $rc
hosts_desc=$(cat "$f" 2>/dev/null); rm -f "$f"
for e in ${hosts_desc//;/ }; do
  ns=$(cut -d: -f2 <<<"$e"); ns=${ns##*/}; dev=$(cut -d: -f5 <<<"$e"); shm=$(cut -d: -f3 <<<"$e")
  ip netns list | grep -qw "$ns" && { echo "FAIL: namespace $ns left behind"; exit 1; }
  ip link show "$dev" >/dev/null 2>&1 && { echo "FAIL: link $dev left behind"; exit 1; }
  [ -e "$shm" ] && { echo "FAIL: $shm left behind"; exit 1; }
done
[ -n "$hosts_desc" ] || { echo "FAIL: no host description came back"; exit 1; }
echo "nothing left behind: ok"
# ... also when the command fails or the harness is interrupted
left() { ip netns list 2>/dev/null | grep -q "^ddtx$1-" || ip link show "ddtx$1a" >/dev/null 2>&1; }
"$hosts" run false && { echo "FAIL: a failing command's status was lost"; exit 1; }
"$hosts" run sleep 60 &
pid=$!
sleep 2
left $pid || { echo "FAIL: no namespaces while a run is going on"; exit 1; }
kill -TERM $pid
wait $pid
sleep 0.5
left $pid && { echo "FAIL: namespaces of an interrupted run left behind"; exit 1; }
echo "failed and interrupted runs clean up: ok"
