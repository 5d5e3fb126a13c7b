/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA: fi_write and fi_read families with iov lists on both sides.  Remote segments are application keys
 * (DDTX_KEY_APP), so the remote side cannot be re-keyed: each rma_iov segment is moved by
 * work requests whose local side takes at most max_sge entries of the local list.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_internal.h"

/*
 * Tell the target what landed in its memory: remote CQ data (fi_writedata), and with FI_RMA_EVENT
 * one message per remote segment, so the counters of each MR it touched count it.  The wire moved
 * the bytes without the target's help, so this is the only way it learns of them.
 */
static void rma_notify(struct ddtx_proto_ep *pep, struct ddtx_rma *op)
{
	const struct fi_rma_iov *segs = op->segs ? op->segs : &op->first;
	size_t nsegs = op->segs ? op->nsegs : 1;
	for (size_t i = 0; i < nsegs; i++) {
		uint16_t flags = 0;
		if (op->remote_data && i == 0)
			flags |= DDTX_HDR_CQ_DATA;
		if (op->segs)
			flags |= DDTX_HDR_RMA_EVENT | ((op->cq_flags & FI_READ) ? DDTX_HDR_READ : 0);
		if (i > 0)
			flags |= DDTX_HDR_MORE;
		struct ddtx_hdr_rma_data h;
		ddtx_hdr_init(&h.base, DDTX_MSG_RMA_DATA, flags);
		h.data = op->data;
		h.len = op->total;
		h.key = segs[i].key;
		h.addr = segs[i].addr;
		h.seg_len = segs[i].len;
		ddtx_ctrl_send(pep, op->peer, &h, sizeof(h));
	}
}

static void rma_finish(struct ddtx_proto_ep *pep, struct ddtx_rma *op)
{
	enum ddtx_proto_counter cntr = (op->cq_flags & FI_READ) ? DDTX_CNTR_READ : DDTX_CNTR_WRITE;
	if (op->status) {
		ddtx_complete_tx_err(pep, op->context, op->cq_flags, 0, op->status, cntr);
	} else {
		if (op->remote_data || op->segs)
			rma_notify(pep, op);
		ddtx_count_scheme(pep, FI_DDTX_SCHEME_RMA, op->total);
		ddtx_complete_tx(pep, op->context, op->cq_flags, op->report, cntr);
	}
	ddtx_list_remove(&op->entry);
	free(op->inject_buf);
	free(op->segs);
	free(op);
}

void ddtx_rma_on_complete(struct ddtx_proto_ep *pep, struct ddtx_rma *op, int status)
{
	if (status && !op->status)
		op->status = -status;
	if (--op->writes_pending == 0)
		rma_finish(pep, op);
}

void ddtx_rma_on_remote_data(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf,
			     size_t len)
{
	const struct ddtx_hdr_rma_data *h = buf;
	(void)len;
	const uint16_t f = h->base.flags;
	const uint32_t access = (f & DDTX_HDR_READ) ? DDTX_ACC_REMOTE_READ : DDTX_ACC_REMOTE_WRITE;
	const char *bad = ddtx_check_rma_data(h);
	/* Only an access to a key of this domain, open for that access, produces a completion or
	 * a count: a peer cannot fill the CQ or move counters for memory it never touched. */
	int ret = bad ? -FI_EINVAL
		      : ddtx_wire_key_check(pep->pd->wire, DDTX_KEY_APP, h->key, h->addr,
					    h->seg_len, access);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping RMA_DATA from peer %u: key %#llx at %#llx "
			  "(%llu bytes) is not a remote-%s target here: %s\n", src,
			  (unsigned long long)h->key, (unsigned long long)h->addr,
			  (unsigned long long)h->seg_len, (f & DDTX_HDR_READ) ? "read" : "write",
			  bad ? bad : fi_strerror(-ret));
		return;
	}
	if (f & DDTX_HDR_CQ_DATA) {
		const struct ddtx_proto_completion c = {
			.flags = FI_REMOTE_CQ_DATA | FI_RMA | FI_REMOTE_WRITE, .len = h->len,
			.data = h->data, .src_addr = ddtx_addr_of(pep, src)};
		ddtx_report(pep, DDTX_PROTO_RX, &c);
	}
	if (!(f & DDTX_HDR_MORE))
		ddtx_count(pep, (f & DDTX_HDR_READ) ? DDTX_CNTR_REMOTE_READ : DDTX_CNTR_REMOTE_WRITE,
			   false);
	if (f & DDTX_HDR_RMA_EVENT)
		ddtx_mr_count_event(pep->pd, h->key, access);
}

/* Post the work requests of every rma_iov segment; the op finishes with its last completion. */
static void rma_post(struct ddtx_proto_ep *pep, struct ddtx_rma *op, const struct iovec *iov,
		     size_t count, const struct fi_rma_iov *rma_iov, size_t rma_count, bool write)
{
	const struct ddtx_wire_caps *caps = pep->caps;
	struct iovec pieces[caps->max_sge];
	struct ddtx_iov_cursor cur;
	ddtx_iov_cursor_init(&cur, iov, count);
	/* One extra reference while posting, so an early completion cannot finish the op. */
	op->writes_pending = 1;
	/* A bad segment fails the whole operation before any segment moves. */
	for (size_t i = 0; i < rma_count && !op->status; i++) {
		int ret = ddtx_wire_rma_check(pep->wire, op->peer, DDTX_KEY_APP, rma_iov[i].key,
					      rma_iov[i].addr, rma_iov[i].len, write);
		if (ret)
			op->status = -ret;
	}
	for (size_t i = 0; i < rma_count && !op->status; i++) {
		uint64_t done = 0;
		while (done < rma_iov[i].len) {
			size_t want = DDTX_MIN(rma_iov[i].len - done, caps->max_rma_size);
			size_t n;
			size_t got = ddtx_iov_cursor_take(&cur, want, caps->max_sge, pieces, &n);
			int ret = write ? ddtx_wire_write(pep->wire, op->peer, pieces, n,
							  DDTX_KEY_APP, rma_iov[i].key,
							  rma_iov[i].addr + done, got, op)
					: ddtx_wire_read(pep->wire, op->peer, pieces, n,
							 DDTX_KEY_APP, rma_iov[i].key,
							 rma_iov[i].addr + done, got, op);
			if (ret) {
				op->status = -ret;
				break;
			}
			op->writes_pending++;
			done += got;
		}
	}
	ddtx_rma_on_complete(pep, op, 0);
}

ssize_t ddtx_proto_rma(struct ddtx_proto_ep *pep, const struct fi_msg_rma *msg, uint64_t flags,
			  bool write)
{
	if (!msg)
		return -FI_EINVAL;
	ddtx_proto_domain_progress(pep->pd); /* keys of unmapped MRs revoked before anything moves */
	size_t limit = pep->attr.tx_iov_limit;
	int ret = ddtx_iov_check(msg->msg_iov, msg->iov_count, limit, NULL);
	if (ret || msg->rma_iov_count > pep->attr.rma_iov_limit ||
	    (msg->rma_iov_count && !msg->rma_iov)) {
		DDTX_WARN(FI_LOG_EP_DATA, "rma: invalid iov or rma_iov list\n");
		return -FI_EINVAL;
	}
	size_t total = ddtx_iov_total(msg->msg_iov, msg->iov_count), rtotal = 0;
	for (size_t i = 0; i < msg->rma_iov_count; i++)
		rtotal += msg->rma_iov[i].len;
	if (total != rtotal) {
		DDTX_WARN(FI_LOG_EP_DATA, "rma: local %zu bytes but remote %zu bytes\n", total,
			  rtotal);
		return -FI_EINVAL;
	}
	if ((flags & FI_INJECT) && (!write || total > pep->attr.inject_size))
		return -FI_EINVAL;
	ddtx_peer_t peer;
	struct ddtx_rma *op = NULL;
	if (!pep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if ((ret = ddtx_peer_of(pep, msg->addr, &peer)))
		goto out;
	op = calloc(1, sizeof(*op));
	if (!op) {
		ret = -FI_ENOMEM;
		goto out;
	}
	op->kind = DDTX_WR_RMA;
	op->peer = peer;
	op->context = msg->context;
	op->cq_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
	op->report = !(flags & DDTX_PROTO_NO_COMPLETION) &&
		     (!pep->attr.tx_selective || (flags & FI_COMPLETION));
	op->remote_data = write && (flags & FI_REMOTE_CQ_DATA);
	op->data = msg->data;
	op->total = total;
	if (msg->rma_iov_count)
		op->first = msg->rma_iov[0];
	if (pep->attr.rma_event && msg->rma_iov_count) {
		op->segs = malloc(msg->rma_iov_count * sizeof(*op->segs));
		if (!op->segs) {
			free(op);
			ret = -FI_ENOMEM;
			goto out;
		}
		memcpy(op->segs, msg->rma_iov, msg->rma_iov_count * sizeof(*op->segs));
		op->nsegs = msg->rma_iov_count;
	}
	ddtx_list_push_back(&pep->rma_active, &op->entry);

	const struct iovec *iov = msg->msg_iov;
	size_t count = msg->iov_count;
	struct iovec copy;
	if (flags & FI_INJECT) {
		/* The caller may reuse its buffer at once: keep a private copy. */
		op->inject_buf = malloc(DDTX_MAX(total, (size_t)1));
		if (!op->inject_buf) {
			ddtx_list_remove(&op->entry);
			free(op->segs);
			free(op);
			ret = -FI_ENOMEM;
			goto out;
		}
		ddtx_iov_gather(iov, count, 0, op->inject_buf, total);
		copy.iov_base = op->inject_buf;
		copy.iov_len = total;
		iov = &copy;
		count = 1;
	}
	rma_post(pep, op, iov, count, msg->rma_iov, msg->rma_iov_count, write);
out:
	return ret;
}
