/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes and reads: the remote (space, key, address) becomes the core's key and address (an
 * internal key by itself, an application key by a KEY_REQ answered once per peer and cached),
 * the local list is cut into work requests of the core's limits (iov_limit entries,
 * max_msg_size bytes), and the operation completes when its last work request does.  Writes ask
 * FI_DELIVERY_COMPLETE: the protocols send "done" after a write's completion and the data must
 * be at the target by then on every core.
 */
#include <stdlib.h>
#include <string.h>

#include "common/iov_check.h"
#include "wire/ofi/ofi.h"

static struct ddtx_ofi_rkey *rkey_find(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, uint64_t key)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&ep->rkeys, it, tmp)
	{
		struct ddtx_ofi_rkey *r = ddtx_container_of(it, struct ddtx_ofi_rkey, entry);
		if (r->peer == peer && r->key == key)
			return r;
	}
	return NULL;
}

static void rkey_drop(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, uint64_t key)
{
	struct ddtx_ofi_rkey *r = rkey_find(ep, peer, key);

	if (r && r->state == DDTX_OFI_RKEY_READY) {
		ddtx_list_remove(&r->entry);
		free(r);
	}
}

static void op_free(struct ddtx_ofi_op *op)
{
	ddtx_list_remove(&op->all);
	for (size_t i = 0; op->wrs && i < op->nchunks; i++) {
		for (size_t j = 0; j < op->wrs[i].nmrs; j++)
			if (op->wrs[i].mrs[j])
				fi_close(&op->wrs[i].mrs[j]->fid);
		free(op->wrs[i].mrs);
	}
	free(op->wrs);
	free(op->chunks);
	free(op->local);
	free(op);
}

/*
 * ddtx promises RMA ordering (RAR, RAW, WAR, WAW) to one target; a core that does not (tcp;
 * ofi_rxm has no FI_ORDER_WAR: a read may see a later write's data) gets the op held until the
 * conflicting ones in flight complete.  The ops of one caller operation (its wr_context: the
 * segments of one fi_writemsg, a scheme's writes of one message) are one operation, which
 * promises no order among its parts: they go out together.  Held one by one, the 16384
 * segments of a write over the shm core (FI_ORDER_SAS only) took 33536 progress rounds.
 * ddtx's own writes and reads (DDTX_KEY_INTERNAL: a scheme's data) owe the caller no order:
 * each completes before the message that depends on it leaves.  They are neither held nor
 * counted.
 */
static bool order_conflict(struct ddtx_ofi_ep *ep, const struct ddtx_ofi_op *op)
{
	const struct ddtx_ofi_peer *p = ep->peers[op->peer];
	uint64_t have = ep->dom->rma_order;

	if (op->space == DDTX_KEY_INTERNAL || op->counted ||
	    (p->inflight_one && p->inflight_ctx == op->wr_context))
		return false;
	if (op->write)
		return (p->reads && !(have & FI_ORDER_WAR)) || (p->writes && !(have & FI_ORDER_WAW));
	return (p->writes && !(have & FI_ORDER_RAW)) || (p->reads && !(have & FI_ORDER_RAR));
}

static void op_count(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op, int delta)
{
	struct ddtx_ofi_peer *p = ep->peers[op->peer];

	if (delta > 0) {
		p->inflight_one = !(p->reads + p->writes) ||
				  (p->inflight_one && p->inflight_ctx == op->wr_context);
		p->inflight_ctx = op->wr_context;
	}
	if (op->write)
		p->writes += (uint32_t)delta;
	else
		p->reads += (uint32_t)delta;
	op->counted = delta > 0;
}

/* Finish op from progress (handlers run only there). */
static void op_finish(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op)
{
	if (op->counted)
		op_count(ep, op, -1);
	if (op->status && op->space == DDTX_KEY_APP)
		rkey_drop(ep, op->peer, op->rkey);
	if (ep->handlers.on_complete)
		ep->handlers.on_complete(ep->handler_arg, op->wr_context, op->status);
	if (op->pending)
		op->reported = true;     /* its work requests still belong to the core */
	else
		op_free(op);
}

static void op_fail_later(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op, int status)
{
	if (!op->status)
		op->status = status;
	ddtx_list_push_back(&ep->done, &op->entry);
}

static int local_descs(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op, struct ddtx_ofi_wr *wr,
		       const struct iovec *iov, size_t n, void **desc)
{
	wr->mrs = calloc(n, sizeof(*wr->mrs));
	if (!wr->mrs)
		return -FI_ENOMEM;
	wr->nmrs = n;
	for (size_t i = 0; i < n; i++) {
		int ret = ddtx_ofi_local_reg(ep->dom, iov[i].iov_base, iov[i].iov_len, !op->write,
					     &wr->mrs[i]);
		if (ret)
			return ret;
		desc[i] = fi_mr_desc(wr->mrs[i]);
	}
	return 0;
}

/* Post the op's remaining work requests; stops at -FI_EAGAIN (resumed from progress). */
static int op_post(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op)
{
	size_t max_sge = ep->dom->caps.max_sge;
	struct iovec iov[max_sge];
	void *desc[max_sge];

	while (op->next_chunk < op->nchunks && !op->status) {
		const struct ddtx_ofi_chunk *c = &op->chunks[op->next_chunk];
		struct ddtx_ofi_wr *wr = &op->wrs[op->next_chunk];
		struct fi_rma_iov rma = {
			.addr = op->core_addr + c->roff, .len = c->bytes, .key = op->core_key,
		};
		struct fi_msg_rma msg = {
			.msg_iov = iov, .desc = NULL, .iov_count = c->n,
			.addr = ep->peers[op->peer]->fi_addr, .rma_iov = &rma, .rma_iov_count = 1,
			.context = &wr->ctx,
		};
		size_t idx = c->first, off = c->first_off, left = c->bytes;
		struct fid_ep *tx;
		ssize_t ret = ddtx_ofi_conn_get(ep, op->peer, &tx);

		for (size_t i = 0; i < c->n; idx++, off = 0) {
			size_t take = DDTX_MIN(op->local[idx].iov_len - off, left);
			if (!take)
				continue;
			iov[i].iov_base = (uint8_t *)op->local[idx].iov_base + off;
			iov[i].iov_len = take;
			left -= take;
			i++;
		}
		if (ep->dom->mr_local && !wr->mrs) {
			int r = local_descs(ep, op, wr, iov, c->n, desc);
			if (r) {
				op->status = r;
				break;
			}
		}
		if (ep->dom->mr_local)
			for (size_t i = 0; i < c->n; i++)
				desc[i] = fi_mr_desc(wr->mrs[i]);
		msg.desc = ep->dom->mr_local ? desc : NULL;
		wr->op = op;
		wr->kind = DDTX_OFI_WR;
		if (!ret)
			ret = op->write ? fi_writemsg(tx, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)
					: fi_readmsg(tx, &msg, FI_COMPLETION);
		if (ret == -FI_EAGAIN)
			return -FI_EAGAIN;
		if (ret) {
			DDTX_WARN(FI_LOG_EP_DATA, "ofi: %s to peer %u: %s\n",
				  op->write ? "fi_writemsg" : "fi_readmsg", op->peer,
				  fi_strerror((int)-ret));
			op->status = (int)ret;
			break;
		}
		op->pending++;
		op->next_chunk++;
	}
	/* All posted (or failed): the op ends with its last completion. */
	if (!op->pending)
		ddtx_list_push_back(&ep->done, &op->entry);
	return 0;
}

/* The core key and address of the op's remote range, or why there are none (yet). */
static int op_resolve(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op)
{
	uint32_t need = op->write ? DDTX_ACC_REMOTE_WRITE : DDTX_ACC_REMOTE_READ;
	struct ddtx_ofi_rkey *r;

	if (op->space == DDTX_KEY_INTERNAL) {
		op->core_key = op->rkey;
		return ddtx_ofi_ikey_core_addr(op->rkey, op->raddr, ep->dom->mr_virt,
					       &op->core_addr);
	}
	r = rkey_find(ep, op->peer, op->rkey);
	if (!r) {
		struct ddtx_ofi_buf *b = ddtx_ofi_tx_get(ep);
		uint8_t *p;

		if (!b)
			return -FI_EAGAIN;       /* asked again from progress */
		r = calloc(1, sizeof(*r));
		if (!r) {
			ddtx_ofi_tx_put(ep, b);
			return -FI_ENOMEM;
		}
		r->peer = op->peer;
		r->key = op->rkey;
		r->state = DDTX_OFI_RKEY_PENDING;
		ddtx_list_push_back(&ep->rkeys, &r->entry);
		p = ddtx_ofi_tx_prepare(ep, b, op->peer, DDTX_OFI_MSG_KEY_REQ);
		for (int i = 0; i < 8; i++)
			p[i] = (uint8_t)(op->rkey >> (8 * i));
		b->len = DDTX_OFI_PAYLOAD_OFF - b->start + DDTX_OFI_KEY_REQ_LEN;
		if (ddtx_ofi_tx_post(ep, b, true)) {
			ddtx_list_remove(&r->entry);
			free(r);
			return -FI_EIO;
		}
		return -FI_EAGAIN;
	}
	if (r->state == DDTX_OFI_RKEY_PENDING)
		return -FI_EAGAIN;
	op->core_key = r->rep.core_key;
	return ddtx_ofi_key_translate(&r->rep, op->raddr, op->len, need, &op->core_addr);
}

/* Into ep->waiting, at the back; its peer's later ops queue behind it. */
static void op_park(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op)
{
	struct ddtx_ofi_peer *p = ep->peers[op->peer];

	if (!op->parked) {
		op->parked = true;
		p->nparked++;
	}
	p->parked_pass = ep->rma_pass;
	ddtx_list_push_back(&ep->waiting, &op->entry);
}

/*
 * Resolve and post, or park in ep->waiting.  behind: ops of the peer that came before this one
 * are parked (from rma(): any of its ops parked; from a resume pass: one parked again in it).
 * Returns true if the core refused a work request (its queue is full).
 */
static bool op_start(struct ddtx_ofi_ep *ep, struct ddtx_ofi_op *op, bool behind)
{
	if ((behind && !op->counted) || order_conflict(ep, op)) {
		op_park(ep, op);
		return false;
	}
	if (!op->resolved) {
		int ret = op_resolve(ep, op);

		if (ret == -FI_EAGAIN) {
			op_park(ep, op);
			return false;
		}
		if (ret) {
			op_fail_later(ep, op, ret);
			return false;
		}
		op->resolved = true;
	}
	if (!op->counted && op->space != DDTX_KEY_INTERNAL)
		op_count(ep, op, 1);
	if (op_post(ep, op) != -FI_EAGAIN)
		return false;
	op_park(ep, op);
	return true;
}

/*
 * The parked ops of one caller operation (same peer and wr_context, consecutive: a peer's ops
 * park in order) are resolved together: if one segment's key is refused, none is posted, so a
 * refused operation writes nothing, as rma_check promises when the key was known in advance.
 * Returns 0 (all resolved: each is marked group_ok), -FI_EAGAIN (an answer is still awaited)
 * or the refusal; *n: the ops of the group.
 */
static int group_resolve(struct ddtx_ofi_ep *ep, struct ddtx_list_entry *first,
			 struct ddtx_list_entry *end, size_t *n)
{
	struct ddtx_ofi_op *head = ddtx_container_of(first, struct ddtx_ofi_op, entry);
	struct ddtx_list_entry *e;
	int ret = 0;

	*n = 0;
	for (e = first; e != end; e = e->next) {
		struct ddtx_ofi_op *op = ddtx_container_of(e, struct ddtx_ofi_op, entry);
		int r;

		if (op->peer != head->peer || op->wr_context != head->wr_context || op->counted)
			break;
		(*n)++;
		/* once an answer is awaited or a key refused, the rest is only counted */
		if (op->resolved || ret)
			continue;
		r = op_resolve(ep, op);
		if (!r)
			op->resolved = true;
		else
			ret = r;
	}
	e = first;
	for (size_t i = 0; !ret && i < *n; i++, e = e->next)
		ddtx_container_of(e, struct ddtx_ofi_op, entry)->group_ok = true;
	return ret;
}

/*
 * A pass over the parked ops, in order.  It stops where the core refuses a work request (its
 * queue is full: the rest would be parked again one by one), and a caller operation whose keys
 * all resolved is not walked again: a 16384-segment write over the shm core walked its parked
 * segments once per progress round, 136 million visits in 2.8 s.
 */
int ddtx_ofi_rma_resume(struct ddtx_ofi_ep *ep)
{
	struct ddtx_list parked;
	int n = 0;

	if (ddtx_list_empty(&ep->waiting))
		return 0;
	ep->rma_pass++;
	ddtx_list_init(&parked);
	ddtx_list_splice_back(&parked, &ep->waiting);
	while (!ddtx_list_empty(&parked)) {
		struct ddtx_list_entry *first = ddtx_list_first(&parked);
		struct ddtx_ofi_op *head = ddtx_container_of(first, struct ddtx_ofi_op, entry);
		size_t run = 1;
		int gret = 0;
		bool full = false;

		if (!head->counted && !head->group_ok && !ep->peers[head->peer]->dead)
			gret = group_resolve(ep, first, &parked.head, &run);
		for (size_t i = 0; i < run && !full; i++) {
			struct ddtx_ofi_op *op = ddtx_container_of(ddtx_list_pop_front(&parked),
								   struct ddtx_ofi_op, entry);
			struct ddtx_ofi_peer *p = ep->peers[op->peer];

			op->parked = false;
			p->nparked--;
			n++;
			if (p->dead && !op->pending)
				op_fail_later(ep, op, -FI_EIO);
			else if (gret == -FI_EAGAIN)
				op_park(ep, op);
			else if (gret)
				op_fail_later(ep, op, gret);
			else
				full = op_start(ep, op, p->parked_pass == ep->rma_pass);
		}
		if (full) {
			/* behind the op just parked again: the order stays */
			ddtx_list_splice_back(&ep->waiting, &parked);
			break;
		}
	}
	return n;
}

static int rma(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
	       size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
	       void *wr_context, bool write)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);
	struct ddtx_ofi_op *op;
	size_t total = 0;
	long n;

	if (!p || (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL) ||
	    ddtx_iov_check(local, lcount, ep->dom->caps.max_sge, &total) || total != len)
		return -FI_EINVAL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -FI_ENOMEM;
	ddtx_list_entry_init(&op->entry);
	op->wr_context = wr_context;
	op->peer = peer;
	op->write = write;
	op->space = space;
	op->rkey = rkey;
	op->raddr = raddr;
	op->len = len;
	op->lcount = lcount;
	ddtx_list_push_back(&ep->ops, &op->all);
	if (p->dead) {
		op_fail_later(ep, op, -FI_EIO);
		return 0;
	}
	if (!len) {
		ddtx_list_push_back(&ep->done, &op->entry);
		return 0;
	}
	op->local = malloc(lcount * sizeof(*local));
	n = ddtx_ofi_chunk_iov(local, lcount, len, ep->dom->caps.max_sge, ep->dom->caps.max_rma_size,
			       NULL, 0);
	if (op->local && n > 0) {
		memcpy(op->local, local, lcount * sizeof(*local));
		op->chunks = calloc((size_t)n, sizeof(*op->chunks));
		op->wrs = calloc((size_t)n, sizeof(*op->wrs));
	}
	if (!op->local || n <= 0 || !op->chunks || !op->wrs) {
		op_free(op);
		return n <= 0 ? -FI_EINVAL : -FI_ENOMEM;
	}
	op->nchunks = (size_t)ddtx_ofi_chunk_iov(local, lcount, len, ep->dom->caps.max_sge,
						 ep->dom->caps.max_rma_size, op->chunks, (size_t)n);
	(void)op_start(ep, op, p->nparked > 0);
	return 0;
}

int ddtx_ofi_write(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		   size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		   size_t len, void *wr_context)
{
	return rma(wep, peer, local, lcount, space, rkey, raddr, len, wr_context, true);
}

int ddtx_ofi_read(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		  size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		  size_t len, void *wr_context)
{
	return rma(wep, peer, local, lcount, space, rkey, raddr, len, wr_context, false);
}

int ddtx_ofi_rma_check(struct ddtx_wire_ep *wep, ddtx_peer_t peer, enum ddtx_key_space space,
		       uint64_t rkey, uint64_t raddr, size_t len, bool write)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);
	struct ddtx_ofi_rkey *r;
	uint64_t addr;

	if (!p)
		return -FI_EINVAL;
	if (p->dead)
		return -FI_EIO;
	if (space == DDTX_KEY_INTERNAL)
		return ddtx_ofi_ikey_core_addr(rkey, raddr, ep->dom->mr_virt, &addr);
	/* As on verbs: a key not yet learnt is checked by the transfer; a learnt one now. */
	r = rkey_find(ep, peer, rkey);
	if (!len || !r || r->state != DDTX_OFI_RKEY_READY)
		return 0;
	return ddtx_ofi_key_translate(&r->rep, raddr, len,
				      write ? DDTX_ACC_REMOTE_WRITE : DDTX_ACC_REMOTE_READ, &addr);
}

void ddtx_ofi_key_rep_in(struct ddtx_ofi_ep *ep, ddtx_peer_t peer,
			 const struct ddtx_ofi_key_rep *rep)
{
	struct ddtx_ofi_rkey *r = rkey_find(ep, peer, rep->key);

	if (!r || r->state != DDTX_OFI_RKEY_PENDING)
		return;                  /* unasked: ignored */
	r->rep = *rep;
	r->state = DDTX_OFI_RKEY_READY;
}

void ddtx_ofi_wr_done(struct ddtx_ofi_ep *ep, struct ddtx_ofi_wr *wr, int status)
{
	struct ddtx_ofi_op *op = wr->op;

	if (status && !op->status)
		op->status = status;
	if (--op->pending)
		return;
	if (op->reported) {
		op_free(op);             /* failed when its peer went: nothing more to say */
		return;
	}
	if (op->parked) {
		if (!op->status)
			return;          /* the rest is posted when the core takes it */
		ddtx_list_remove(&op->entry);
		op->parked = false;
		ep->peers[op->peer]->nparked--;
	}
	op_finish(ep, op);
}

/* Report ops that ended inside a post call (handlers run only from progress). */
int ddtx_ofi_rma_report(struct ddtx_ofi_ep *ep)
{
	int n = 0;

	while (!ddtx_list_empty(&ep->done)) {
		struct ddtx_ofi_op *op = ddtx_container_of(ddtx_list_pop_front(&ep->done),
							   struct ddtx_ofi_op, entry);
		op_finish(ep, op);
		n++;
	}
	return n;
}

void ddtx_ofi_rma_fini(struct ddtx_ofi_ep *ep)
{
	/* Ops still waiting, finished but unreported, or in flight in the closed core endpoint. */
	while (!ddtx_list_empty(&ep->ops))
		op_free(ddtx_container_of(ddtx_list_first(&ep->ops), struct ddtx_ofi_op, all));
	ddtx_list_init(&ep->waiting);
	ddtx_list_init(&ep->done);
	while (!ddtx_list_empty(&ep->rkeys))
		free(ddtx_container_of(ddtx_list_pop_front(&ep->rkeys), struct ddtx_ofi_rkey,
				       entry));
}

bool ddtx_ofi_rma_idle(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	for (const struct ddtx_list_entry *e = ep->ops.head.next; e != &ep->ops.head; e = e->next)
		if (ddtx_container_of(e, struct ddtx_ofi_op, all)->peer == peer)
			return false;
	return true;
}

void ddtx_ofi_rkeys_forget(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&ep->rkeys, it, tmp)
	{
		struct ddtx_ofi_rkey *r = ddtx_container_of(it, struct ddtx_ofi_rkey, entry);

		if (r->peer == peer) {
			ddtx_list_remove(it);
			free(r);
		}
	}
}

void ddtx_ofi_rma_fail_peer(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, int status)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&ep->ops, it, tmp)
	{
		struct ddtx_ofi_op *op = ddtx_container_of(it, struct ddtx_ofi_op, all);

		if (op->peer != peer || op->reported)
			continue;
		if (op->parked) {
			ddtx_list_remove(&op->entry);
			op->parked = false;
			ep->peers[peer]->nparked--;
		}
		if (!op->status)
			op->status = status;
		/* not parked, its entry is on no list or already in ep->done (failed inside a
		 * post call): looking it up there made a peer with thousands of ops quadratic */
		if (!ddtx_list_linked(&op->entry))
			ddtx_list_push_back(&ep->done, &op->entry);
	}
}
