#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Hardware suite: the provider's functional tests over the verbs wire (FI_DDTX_WIRE=verbs).
#
# Runs whenever `ibv_devices` lists an RDMA device (mlx5, soft-RoCE rxe, ...); otherwise
# reports itself as skipped (exit 77).  Registered in Meson as suite 'hw':
#     meson test -C build --suite hw
# or by hand:
#     tests/fabtests/hw/run_hw.sh BUILD_DIR [verbs=yes|no] [program:subtest ...]
#
# Environment: FI_DDTX_IFACE selects the device[:port]; HW_TIMEOUT (seconds per test, default
# 120); anything else FI_DDTX_* is passed through.
#
# Soft-RoCE on a Linux host with the rdma_rxe module:
#     sudo rdma link add rxe0 type rxe netdev eth0      # then ibv_devices lists rxe0
set -u

build=${1:-}
if [ -z "$build" ] || [ ! -d "$build" ]; then
	echo "usage: $0 BUILD_DIR [verbs=yes|no] [program:subtest ...]" >&2
	exit 2
fi
shift
case "${1:-}" in
verbs=no)
	echo "hw: the provider was built without the verbs wire (-Dverbs=disabled or no rdma-core): skipped"
	exit 77 ;;
verbs=*)
	shift ;;
esac

devices=""
if command -v ibv_devices >/dev/null 2>&1; then
	devices=$(ibv_devices 2>/dev/null | awk 'NR > 2 && NF { print $1 }')
elif [ -d /sys/class/infiniband ]; then
	devices=$(ls /sys/class/infiniband 2>/dev/null)
fi
if [ -z "$devices" ]; then
	echo "hw: no RDMA device (ibv_devices lists none): skipped"
	exit 77
fi
echo "hw: RDMA devices: $(echo $devices)"

fx="$build/tests/fabtests/functional"
if [ ! -x "$fx/ft_msg" ]; then
	echo "hw: functional test programs not built in $fx" >&2
	exit 1
fi

export FI_PROVIDER_PATH="$build/prov/ddtx"
export FI_DDTX_WIRE=verbs
export FI_LOG_LEVEL=${FI_LOG_LEVEL:-warn}
export IPATH_NO_BACKTRACE=1
timeout_s=${HW_TIMEOUT:-120}

# The functional cases that do not depend on shared memory itself (stale_shm and the like
# are shm-specific); all schemes: pack, sgl and umr (umr falls back where there is no UMR).
if [ $# -eq 0 ]; then
	set -- \
	  msg:send_recv msg:sendv_recvv msg:sendmsg_recvmsg msg:sendmsg_recvmsg_pack \
	  msg:sendmsg_recvmsg_sgl msg:sendmsg_recvmsg_umr msg:inject msg:senddata msg:source \
	  msg:directed msg:self msg:order msg:trunc msg:multi_recv_eager msg:multi_recv_rndv \
	  msg:selective msg:delivery_complete msg:msg_1m \
	  tagged:family tagged:queues_posted tagged:queues_unexpected tagged:queues_mixed \
	  tagged:ignore tagged:tag_bits tagged:directed_eager tagged:directed_rndv \
	  tagged:peek_eager tagged:peek_rndv tagged:claim_eager tagged:claim_rndv \
	  tagged:discard_eager tagged:discard_rndv tagged:cancel tagged:trunc \
	  tagged:trunc_pack tagged:trunc_sgl tagged:trunc_umr tagged:flood_unexpected_eager \
	  rma:basic_caller_key rma:basic_prov_key rma:basic_prov_key_offset \
	  rma:basic_caller_key_virt rma:vector_caller_key rma:vector_prov_key \
	  rma:inject_caller_key rma:inject_prov_key rma:writedata_caller_key \
	  rma:writedata_prov_key rma:delivery_complete_caller_key rma:cntr_caller_key \
	  rma:regv_caller_key rma:regv_prov_key_offset rma:order_caller_key \
	  objects:getinfo objects:av_table objects:av_map objects:cq_formats objects:readfrom \
	  objects:cntr objects:close_order objects:thread_safe objects:two_domains \
	  badinput:null_args badinput:iov_limit badinput:zero_length_iov \
	  badinput:rma_bad_caller_key badinput:rma_bad_prov_key badinput:mr_bad \
	  badinput:bad_address \
	  property:prop_auto property:prop_sgl property:prop_umr \
	  multiproc:tagged_16 multiproc:rma_16
fi

pass=0
fail=0
failed=""
for t in "$@"; do
	prog=${t%%:*}
	sub=${t#*:}
	start=$(date +%s)
	FT_PROP_CASES=${FT_PROP_CASES:-60} timeout "$timeout_s" "$fx/ft_$prog" "$sub" \
		>"/tmp/ddtx-hw-$$-$prog-$sub.log" 2>&1
	rc=$?
	end=$(date +%s)
	if [ $rc -eq 0 ] || [ $rc -eq 77 ]; then
		pass=$((pass + 1))
		printf 'hw: %-40s %s (%ss)\n' "$t" "$([ $rc -eq 0 ] && echo ok || echo skip)" \
			$((end - start))
		rm -f "/tmp/ddtx-hw-$$-$prog-$sub.log"
	else
		fail=$((fail + 1))
		failed="$failed $t"
		printf 'hw: %-40s FAIL rc %d (%ss)\n' "$t" $rc $((end - start))
		tail -n 20 "/tmp/ddtx-hw-$$-$prog-$sub.log" | sed 's/^/    /'
		echo "    (full log: /tmp/ddtx-hw-$$-$prog-$sub.log)"
	fi
done
echo "hw: $pass passed, $fail failed over the verbs wire${failed:+:$failed}"
[ $fail -eq 0 ]
