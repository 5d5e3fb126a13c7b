/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flow control of payload sent before a match (hdr.h, DDTX_CREDIT_BYTES).
 *
 * An eager send completes once its message is in the peer's queue, so a sender that runs ahead
 * of the receives filled the receiver's heap with unexpected payload for as long as it sent:
 * nc_bw -m bw with 256 KiB of 4-byte blocks (four eager messages of 64 KiB each a transfer)
 * moved 0.2-0.3 GB/s against 124-146 us a transfer in ping-pong, 90% of the receiver's page
 * faults in copies of unexpected payload into freshly grown heap (docs/benchmark-results.md).
 * Now each endpoint counts, per peer, the payload it sent that the peer may hold unmatched
 * (spent) and the peer's payload it no longer holds (owed, given back by CREDIT once it reaches
 * DDTX_CREDIT_RETURN).  A send without the credit goes as a rendezvous without payload, which
 * the receiver keeps as a header only.  An FI_INJECT goes eagerly even then, spending credit
 * it may not have: returning -FI_EAGAIN until the peer matched enough would hang a sender that
 * injects many small messages before its peer posts their receives (MPICH sends every message
 * up to inject_size with fi_tinject and retries until it goes), which today's programs rely
 * on; and a copy kept at the sender for a rendezvous would put its registration and layout
 * caches on memory freed at once.  So injected payload is the one thing not bounded.
 *
 * Not enforced at the receiver: a peer whose process restarted on the same address is not
 * told apart from the old one yet, so a count kept for the old process would wrongly drop the
 * new one's messages.
 */
#include <stdlib.h>

#include "proto/proto_internal.h"

/* The table grows out of line: with the growth inlined, credit_of was a call of its own, three
 * a message at 18 instructions each. */
static __attribute__((noinline, cold)) struct ddtx_credit *credit_grow(struct ddtx_proto_ep *pep,
								      ddtx_peer_t peer)
{
	size_t n = pep->ncredits ? pep->ncredits : 16;
	while (n <= peer)
		n *= 2;
	struct ddtx_credit *c = realloc(pep->credits, n * sizeof(*c));
	if (!c)
		return NULL;
	for (size_t i = pep->ncredits; i < n; i++)
		c[i] = (struct ddtx_credit){0, 0};
	pep->credits = c;
	pep->ncredits = n;
	return &pep->credits[peer];
}

static inline struct ddtx_credit *credit_of(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	return peer < pep->ncredits ? &pep->credits[peer] : credit_grow(pep, peer);
}

uint64_t ddtx_credit_left(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	struct ddtx_credit *c = credit_of(pep, peer);
	return c && c->spent < DDTX_CREDIT_BYTES ? DDTX_CREDIT_BYTES - c->spent : 0;
}

void ddtx_credit_spend(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint64_t n)
{
	struct ddtx_credit *c = credit_of(pep, peer);
	if (c)
		c->spent += n;
}

size_t ddtx_credit_charge(const struct ddtx_hdr_base *b, size_t body_len)
{
	switch (b->type) {
	case DDTX_MSG_EAGER:
	case DDTX_MSG_STREAM:
		return body_len;
	case DDTX_MSG_RTS: /* its first chunk; an IPC offer or a list of windows is no payload */
		return b->flags & (DDTX_HDR_IPC | DDTX_HDR_WINDOWS) ? 0 : body_len;
	default:
		return 0;
	}
}

void ddtx_credit_release(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint64_t n)
{
	struct ddtx_credit *c = n ? credit_of(pep, peer) : NULL;
	if (!c)
		return;
	c->owed += n;
	if (c->owed < DDTX_CREDIT_RETURN)
		return;
	struct ddtx_hdr_credit m;
	ddtx_hdr_init(&m.base, DDTX_MSG_CREDIT, 0);
	m.bytes = c->owed;
	c->owed = 0;
	ddtx_ctrl_send(pep, peer, &m, sizeof(m));
}

void ddtx_credit_hold(struct ddtx_proto_ep *pep, struct ddtx_unexp *u, size_t n)
{
	struct ddtx_proto_domain *pd = pep->pd;
	u->charged += n;
	pd->unexp_held += n;
	if (pd->unexp_held > pd->stats.unexp_bytes_max)
		pd->stats.unexp_bytes_max = pd->unexp_held;
}

void ddtx_credit_unhold(struct ddtx_proto_ep *pep, struct ddtx_unexp *u)
{
	pep->pd->unexp_held -= u->charged;
	ddtx_credit_release(pep, u->peer, u->charged);
	u->charged = 0;
}

/* The peer's process is gone: the new one spent nothing; what the old one's unexpected
 * messages hold here is never given back to it. */
void ddtx_credit_drop_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	if (peer < pep->ncredits)
		pep->credits[peer] = (struct ddtx_credit){0, 0};
	struct ddtx_list *q[] = {&pep->unexp_msg, &pep->unexp_tag};
	for (size_t i = 0; i < 2; i++) {
		struct ddtx_list_entry *it, *tmp;
		ddtx_list_foreach_safe(q[i], it, tmp)
		{
			struct ddtx_unexp *u = ddtx_container_of(it, struct ddtx_unexp, entry);
			if (u->peer == peer) {
				pep->pd->unexp_held -= u->charged;
				u->charged = 0;
			}
		}
	}
}

/* A CREDIT from a peer: never more back than we spent on it (a broken peer's is cut). */
void ddtx_recv_on_credit(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_credit *h = buf;
	struct ddtx_credit *c = credit_of(pep, src);
	if (!c)
		return;
	if (len != sizeof(*h) || h->bytes > c->spent) {
		DDTX_WARN(FI_LOG_EP_DATA, "CREDIT from peer %u: %s (%llu bytes back, %llu spent)\n",
			  src, len != sizeof(*h) ? "bad length" : "more than was spent",
			  (unsigned long long)h->bytes, (unsigned long long)c->spent);
		if (len != sizeof(*h))
			return;
	}
	c->spent -= h->bytes < c->spent ? h->bytes : c->spent;
}
