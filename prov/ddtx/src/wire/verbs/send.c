/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Messages: a send (or a claimed buffer) is copied into a registered send buffer and posted as
 * SEND with immediate data; the receiver finds the sender by the uid in the header (the first
 * message to a peer carries our whole address blob).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/iov_check.h"
#include "wire/verbs/verbs.h"

int ddtx_verbs_send(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const void *hdr,
		      size_t hdr_len, const struct iovec *iov, size_t count)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vpeer *p;
	struct ddtx_vbuf *b;
	size_t total = hdr_len;
	uint8_t *dst;

	if (!ep || !(p = ddtx_vpeer_get(ep, peer)) || (hdr_len && !hdr) ||
	    ddtx_iov_check(iov, count, ep->dom->caps.max_sge, &total))
		return -FI_EINVAL;
	if (total > ep->dom->caps.max_send_size)
		return -FI_EMSGSIZE;
	if (p->state == DDTX_VCONN_DEAD)
		return -FI_EIO;
	b = ddtx_vslab_get(&ep->tx);
	if (!b)
		return -FI_EAGAIN;
	dst = b->data + DDTX_VERBS_PAYLOAD_OFF;
	if (hdr_len)
		memcpy(dst, hdr, hdr_len);
	dst += hdr_len;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len)
			memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	ddtx_vpost_hdr(ep, p, DDTX_VMSG_DATA, b, total);
	ddtx_vpost_enqueue(ep, peer, &b->item);
	return 0;
}

int ddtx_verbs_send_claim(struct ddtx_wire_ep *wep, ddtx_peer_t peer, size_t min_len,
			    struct ddtx_wire_send_buf *buf)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vpeer *p;
	struct ddtx_vbuf *b;

	if (!ep || !buf || !(p = ddtx_vpeer_get(ep, peer)))
		return -FI_EINVAL;
	if (p->state == DDTX_VCONN_DEAD)
		return -FI_EIO;
	if (min_len > ep->dom->caps.max_send_size)
		return -FI_EMSGSIZE;
	b = ddtx_vslab_get(&ep->tx);
	if (!b)
		return -FI_EAGAIN;
	buf->data = b->data + DDTX_VERBS_PAYLOAD_OFF;
	buf->cap = ep->dom->caps.max_send_size;
	buf->wire_priv = b;
	buf->wire_pos = peer;
	return 0;
}

void ddtx_verbs_send_commit(struct ddtx_wire_ep *wep, struct ddtx_wire_send_buf *buf,
			      size_t len)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vbuf *b = buf->wire_priv;
	ddtx_peer_t peer = (ddtx_peer_t)buf->wire_pos;

	/* The header is written now, so messages go out with headers in commit order. */
	ddtx_vpost_hdr(ep, ep->peers[peer], DDTX_VMSG_DATA, b, DDTX_MIN(len, buf->cap));
	ddtx_vpost_enqueue(ep, peer, &b->item);
}
