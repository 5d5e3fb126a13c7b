#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs a functional test program over the ofi wire on a core's FI_EP_MSG endpoints and checks,
# from ddtx's info-level log, that the traffic went that way: every rank's wire domain says
# FI_EP_MSG, connections came up, and with --race that at least one connection request crossed
# the peer's own (the simultaneous connect, decided on both sides).  The program's own exit
# status (every byte checked) is the first condition; 77 passes through.
#
#   ofi_msg_check.sh [--race] PROG ARG...
race=0
[ "${1:-}" = --race ] && { race=1; shift; }
log=$(mktemp /tmp/ddtx-ofimsg.XXXXXX) || exit 1
trap 'rm -f "$log"' EXIT
FI_LOG_LEVEL=info FI_DDTX_WIRE=ofi FI_DDTX_OFI_EP_TYPE=msg "$@" >"$log" 2>&1
rc=$?
grep -v '^libfabric' "$log"
[ $rc -eq 77 ] && exit 77
if [ $rc -ne 0 ]; then
  echo "FAIL: the program exited with $rc"
  grep 'ddtx.*ofi:' "$log" | tail -20
  exit 1
fi
domains=$(grep -c 'ofi: domain over [^ ]* ([^,]*, FI_EP_MSG)' "$log")
rdm=$(grep -c 'ofi: domain over .*FI_EP_RDM' "$log")
ups=$(grep -c 'ofi: connection with peer [0-9]* up' "$log")
races=$(grep -c 'ofi: simultaneous connect with peer' "$log")
echo "wire domains over FI_EP_MSG: $domains (FI_EP_RDM: $rdm), connections up: $ups," \
     "simultaneous connects seen: $races"
[ "$domains" -gt 0 ] && [ "$rdm" -eq 0 ] ||
  { echo "FAIL: not every domain over FI_EP_MSG"; exit 1; }
[ "$ups" -gt 0 ] || { echo "FAIL: no connection came up"; exit 1; }
[ $race -eq 0 ] || [ "$races" -gt 0 ] || { echo "FAIL: no simultaneous connect happened"; exit 1; }
echo "PASS: the traffic went over FI_EP_MSG connections"
