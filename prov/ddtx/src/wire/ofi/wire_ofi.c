/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire's entry points (wire/wire.h) over a core libfabric provider, one concept per
 * file (ofi.h lists them).  Service names on a node (name.c): a bound endpoint's address is
 * computed from (node, service); no multi-entry keys (max_mkey_entries 0).
 */
#include "wire/ofi/ofi.h"

const struct ddtx_wire_impl ddtx_ofi_wire_impl = {
	.name = "ofi",
	.available = ddtx_ofi_available,
	.cleanup_stale = NULL,
	.domain_open = ddtx_ofi_domain_open,
	.domain_close = ddtx_ofi_domain_close,
	.domain_caps = ddtx_ofi_domain_caps,
	.domain_stats = ddtx_ofi_domain_stats,
	.addr_check = ddtx_ofi_addr_check,
	.mr_reg = ddtx_ofi_mr_reg,
	.mr_dereg = ddtx_ofi_mr_dereg,
	.key_check = ddtx_ofi_key_check,
	.ep_open = ddtx_ofi_ep_open,
	.ep_close = ddtx_ofi_ep_close,
	.ep_getname = ddtx_ofi_ep_getname,
	.ep_bind = ddtx_ofi_ep_bind,
	.name_resolve = ddtx_ofi_name_resolve,
	.peer_insert = ddtx_ofi_peer_insert,
	.peer_addr = ddtx_ofi_peer_addr,
	.peer_alive = ddtx_ofi_peer_alive,
	.peer_revive = ddtx_ofi_peer_revive,
	.peer_send_size = ddtx_ofi_peer_send_size,
	.send = ddtx_ofi_send,
	.send_claim = ddtx_ofi_send_claim,
	.send_commit = ddtx_ofi_send_commit,
	.rma_check = ddtx_ofi_rma_check,
	.write = ddtx_ofi_write,
	.read = ddtx_ofi_read,
	.ep_progress = ddtx_ofi_ep_progress,
	.send_mark = ddtx_ofi_send_mark,
	.sent = ddtx_ofi_sent,
};
