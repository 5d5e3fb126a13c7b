/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs wire's entry points (wire/wire.h), one concept per file:
 *
 *  device.c   : device discovery and selection        domain.c   : caps, protection domain, keys
 *  endpoint.c : CQ, SRQ, DC or RC queue pairs, peers    send.c     : messages
 *  rma.c      : writes, reads, UMR window writes        progress.c : CQ polling, handlers
 *
 * and the helpers they share: mr.c (registrations, region index), mkey.c/umr.c (UMR keys),
 * peer.c, qp.c, post.c, sge.c, blob.c (address blobs), interleave.c.
 */
#include "wire/verbs/verbs.h"

const struct ddtx_wire_impl ddtx_verbs_wire_impl = {
	.name = "verbs",
	.available = ddtx_verbs_available,
	.cleanup_stale = NULL,
	.domain_open = ddtx_verbs_domain_open,
	.domain_close = ddtx_verbs_domain_close,
	.domain_caps = ddtx_verbs_domain_caps,
	.addr_check = ddtx_verbs_addr_check,
	.mr_reg = ddtx_verbs_mr_reg,
	.mr_dereg = ddtx_verbs_mr_dereg,
	.key_check = ddtx_verbs_key_check,
	.ep_open = ddtx_verbs_ep_open,
	.ep_close = ddtx_verbs_ep_close,
	.ep_getname = ddtx_verbs_ep_getname,
	.peer_insert = ddtx_verbs_peer_insert,
	.peer_addr = ddtx_verbs_peer_addr,
	.peer_alive = ddtx_verbs_peer_alive,
	.send = ddtx_verbs_send,
	.send_claim = ddtx_verbs_send_claim,
	.send_commit = ddtx_verbs_send_commit,
	.rma_check = ddtx_verbs_rma_check,
	.write = ddtx_verbs_write,
	.read = ddtx_verbs_read,
	.ep_progress = ddtx_verbs_ep_progress,
	.mkey_create = ddtx_vmkey_create,
	.mkey_destroy = ddtx_vmkey_destroy,
	.mkey_map = ddtx_vmkey_map,
	.mkey_invalidate = ddtx_vmkey_invalidate,
	.write_mkey = ddtx_verbs_write_mkey,
};
