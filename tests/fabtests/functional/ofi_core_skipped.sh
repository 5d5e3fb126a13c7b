#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A core provider that lacks what the ofi wire needs is skipped with an info-level line saying
# why: libfabric's udp alone (ofi_rxd, which would make it RDM, filtered out) has no FI_RMA.
# Needs fi_info (libfabric-bin) and the udp provider; 77 without them.
command -v fi_info >/dev/null || { echo "no fi_info"; exit 77; }
FI_PROVIDER='^ofi_rxd' fi_info -p udp >/dev/null 2>&1 || { echo "no udp provider"; exit 77; }
log=$(FI_PROVIDER='^ofi_rxd' FI_LOG_LEVEL=info FI_DDTX_WIRE=ofi FI_DDTX_OFI_PROVIDER=udp \
      fi_info -p ddtx 2>&1)
rc=$?
echo "$log" | grep 'ddtx' | grep -v 'fi_param\|variable'
echo "$log" | grep -q 'ofi: core udp domain .* skipped: lacks FI_RMA' ||
  { echo "FAIL: no info line saying why udp was skipped"; exit 1; }
if [ $rc -eq 0 ] && echo "$log" | grep -q 'provider: udp.*;ddtx'; then
  echo "FAIL: a ddtx entry over udp was listed"; exit 1
fi
echo "PASS: udp skipped, with the reason"
