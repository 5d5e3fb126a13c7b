/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics as an active message.  The wires move bytes, not operations (the shm wire writes with
 * process_vm_writev, which is not atomic against anything), so the initiator sends the operation
 * (DDTX_MSG_ATOMIC: op, datatype, target segments, operands) and the target executes it with the
 * engine's executor and answers (DDTX_MSG_ATOMIC_RESP: status, old values when fetching).  The
 * target applies each request whole, under its domain lock, in the order its ring delivers them,
 * so atomics from any number of initiators on the same memory of a domain are atomic with respect
 * to each other (not to plain RMA or the target's own stores, as fi_atomic(3) allows).  The
 * initiator completes on the answer, so every atomic completes as FI_DELIVERY_COMPLETE would.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/atomic_exec.h"
#include "proto/proto_internal.h"

_Static_assert((int)DDTX_PROTO_ATOMIC_WRITE == (int)DDTX_ATOMIC_WRITE &&
		       (int)DDTX_PROTO_ATOMIC_FETCH == (int)DDTX_ATOMIC_FETCH &&
		       (int)DDTX_PROTO_ATOMIC_COMPARE == (int)DDTX_ATOMIC_COMPARE,
	       "proto.h and the executor number the atomic families alike");

/* The most elements one operation carries: the protocol's limit, and a request with one segment
 * and both operands must fit one message of the wire. */
static size_t max_count(const struct ddtx_wire_caps *caps, size_t size)
{
	const size_t overhead = sizeof(struct ddtx_hdr_atomic) + sizeof(struct ddtx_atomic_seg);
	size_t room = caps->max_send_size > overhead ? caps->max_send_size - overhead : 0;
	return DDTX_MIN((size_t)DDTX_ATOMIC_MAX_BYTES, room / 2) / size;
}

int ddtx_proto_atomic_valid(struct ddtx_proto_domain *pd, enum ddtx_proto_atomic_kind kind,
			    uint32_t datatype, uint32_t op, size_t *count, size_t *size)
{
	if (!ddtx_atomic_valid((enum ddtx_atomic_kind)kind, datatype, op))
		return -FI_EOPNOTSUPP;
	size_t sz = ddtx_atomic_type_size(datatype);
	size_t n = max_count(ddtx_wire_domain_caps(pd->wire), sz);
	if (!n)
		return -FI_EOPNOTSUPP; /* a wire whose messages cannot carry one element */
	if (count)
		*count = n;
	if (size)
		*size = sz;
	return 0;
}

static size_t ioc_total(const struct fi_ioc *ioc, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += ioc[i].count;
	return total;
}

/* An ioc list must have its counts (each below the protocol limit, so no sum overflows) and an
 * address wherever it has elements. */
static bool ioc_ok(const struct fi_ioc *ioc, size_t n, size_t limit)
{
	if (n && !ioc)
		return false;
	if (n > limit)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ioc[i].count > DDTX_ATOMIC_MAX_BYTES || (ioc[i].count && !ioc[i].addr))
			return false;
	return true;
}

static size_t ioc_gather(const struct fi_ioc *ioc, size_t n, size_t size, uint8_t *dst)
{
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(dst + off, ioc[i].addr, ioc[i].count * size);
		off += ioc[i].count * size;
	}
	return off;
}

ssize_t ddtx_proto_atomic(struct ddtx_proto_ep *pep, enum ddtx_proto_atomic_kind kind,
			  const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
			  size_t compare_count, struct fi_ioc *resultv, size_t result_count,
			  uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	ddtx_proto_domain_progress(pep->pd);
	if (!ddtx_atomic_valid((enum ddtx_atomic_kind)kind, msg->datatype, msg->op)) {
		DDTX_INFO(FI_LOG_EP_DATA, "atomic: op %d on datatype %d not offered\n", msg->op,
			  msg->datatype);
		return -FI_EOPNOTSUPP;
	}
	const size_t size = ddtx_atomic_type_size(msg->datatype);
	const bool operand = ddtx_atomic_has_operand(msg->op);
	const bool compare = kind == DDTX_PROTO_ATOMIC_COMPARE;
	const bool fetch = kind != DDTX_PROTO_ATOMIC_WRITE;
	const size_t limit = pep->attr.tx_iov_limit;
	/* FI_ATOMIC_READ takes no operand: its buffer list is not looked at. */
	if ((operand && !ioc_ok(msg->msg_iov, msg->iov_count, limit)) ||
	    (compare && !ioc_ok(comparev, compare_count, limit)) ||
	    (fetch && !ioc_ok(resultv, result_count, limit)) ||
	    !msg->rma_iov_count || msg->rma_iov_count > pep->attr.rma_iov_limit || !msg->rma_iov) {
		DDTX_WARN(FI_LOG_EP_DATA, "atomic: invalid ioc or rma_ioc list\n");
		return -FI_EINVAL;
	}
	size_t count = 0;
	for (size_t i = 0; i < msg->rma_iov_count; i++) {
		if (!msg->rma_iov[i].count || msg->rma_iov[i].count > DDTX_ATOMIC_MAX_BYTES)
			return -FI_EINVAL;
		count += msg->rma_iov[i].count;
	}
	if (operand && ioc_total(msg->msg_iov, msg->iov_count) != count) {
		DDTX_WARN(FI_LOG_EP_DATA, "atomic: %zu operand elements for %zu target elements\n",
			  ioc_total(msg->msg_iov, msg->iov_count), count);
		return -FI_EINVAL;
	}
	if ((compare && ioc_total(comparev, compare_count) != count) ||
	    (fetch && ioc_total(resultv, result_count) != count)) {
		DDTX_WARN(FI_LOG_EP_DATA, "atomic: compare or result list does not hold %zu "
			  "elements\n", count);
		return -FI_EINVAL;
	}
	const size_t bytes = count * size;
	size_t len = sizeof(struct ddtx_hdr_atomic) +
		     msg->rma_iov_count * sizeof(struct ddtx_atomic_seg) + (operand ? bytes : 0) +
		     (compare ? bytes : 0);
	if (count > max_count(pep->caps, size) || len > pep->caps->max_send_size) {
		DDTX_WARN(FI_LOG_EP_DATA, "atomic: %zu elements in %zu segments exceed one request "
			  "(fi_atomicvalid's count)\n", count, msg->rma_iov_count);
		return -FI_EINVAL;
	}
	if ((flags & FI_INJECT) && (fetch || bytes > pep->attr.inject_size))
		return -FI_EINVAL;
	if (!pep->enabled)
		return -FI_EOPBADSTATE;
	ddtx_peer_t peer;
	int ret = ddtx_peer_of(pep, msg->addr, &peer);
	if (ret)
		return ret;

	struct ddtx_atomic_op *op = calloc(1, sizeof(*op) + (fetch ? result_count : 0) *
							      sizeof(struct iovec));
	uint8_t *req = malloc(len);
	if (!op || !req || !(op->id = ddtx_optable_add(&pep->atomics, op))) {
		free(op);
		free(req);
		return -FI_ENOMEM;
	}
	op->peer = peer;
	op->context = msg->context;
	op->cq_flags = FI_ATOMIC | (fetch ? FI_READ : FI_WRITE);
	op->cntr = fetch ? DDTX_CNTR_READ : DDTX_CNTR_WRITE;
	op->report = !(flags & DDTX_PROTO_NO_COMPLETION) &&
		     (!pep->attr.tx_selective || (flags & FI_COMPLETION));
	if (fetch) {
		op->result_len = bytes;
		op->result_count = result_count;
		for (size_t i = 0; i < result_count; i++)
			op->result[i] = (struct iovec){resultv[i].addr, resultv[i].count * size};
	}

	struct ddtx_hdr_atomic *h = (void *)req;
	ddtx_hdr_init(&h->base, DDTX_MSG_ATOMIC, 0);
	h->tx_id = op->id;
	h->kind = (uint8_t)kind;
	h->op = (uint8_t)msg->op;
	h->datatype = (uint8_t)msg->datatype;
	h->reserved2 = 0;
	h->count = count;
	h->nseg = (uint32_t)msg->rma_iov_count;
	h->reserved3 = 0;
	struct ddtx_atomic_seg *seg = (void *)(h + 1);
	for (size_t i = 0; i < msg->rma_iov_count; i++)
		seg[i] = (struct ddtx_atomic_seg){.addr = msg->rma_iov[i].addr,
						  .count = msg->rma_iov[i].count,
						  .key = msg->rma_iov[i].key};
	uint8_t *p = (uint8_t *)(seg + msg->rma_iov_count);
	if (operand)
		p += ioc_gather(msg->msg_iov, msg->iov_count, size, p);
	if (compare)
		ioc_gather(comparev, compare_count, size, p);
	ddtx_list_push_back(&pep->atomic_active, &op->entry);
	/* Queued behind earlier control messages if the ring is full: the request is copied. */
	ddtx_ctrl_send(pep, peer, req, len);
	free(req);
	return 0;
}

static void atomic_free(struct ddtx_proto_ep *pep, struct ddtx_atomic_op *op)
{
	ddtx_list_remove(&op->entry);
	ddtx_optable_remove(&pep->atomics, op->id);
	free(op);
}

void ddtx_atomic_on_resp(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_atomic_resp *h = buf;
	struct ddtx_atomic_op *op = ddtx_optable_get(&pep->atomics, h->tx_id);
	if (!op || op->peer != src) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping stale ATOMIC_RESP from peer %u\n", src);
		return;
	}
	int err = ddtx_hdr_status_err(h->status);
	if (!err && (h->len != op->result_len || len - sizeof(*h) != op->result_len)) {
		/* Old values we did not ask for, or short of them: nothing partial is delivered. */
		DDTX_WARN(FI_LOG_EP_DATA, "ATOMIC_RESP from peer %u: %llu bytes of old values in a "
			  "%zu-byte message for %zu expected\n", src, (unsigned long long)h->len,
			  len, op->result_len);
		err = FI_EIO;
	}
	if (err) {
		ddtx_complete_tx_err(pep, op->context, op->cq_flags, 0, err, op->cntr);
	} else {
		ddtx_iov_scatter(op->result, op->result_count, 0, h + 1, op->result_len);
		ddtx_complete_tx(pep, op->context, op->cq_flags, op->report, op->cntr);
	}
	atomic_free(pep, op);
}

void ddtx_atomic_fail_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer, int err)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pep->atomic_active, it, tmp)
	{
		struct ddtx_atomic_op *op = ddtx_container_of(it, struct ddtx_atomic_op, entry);
		if (op->peer == peer) {
			ddtx_complete_tx_err(pep, op->context, op->cq_flags, 0, err, op->cntr);
			atomic_free(pep, op);
		}
	}
}

void ddtx_atomic_free_all(struct ddtx_proto_ep *pep)
{
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(&pep->atomic_active)))
		free(ddtx_container_of(it, struct ddtx_atomic_op, entry));
}

/* ---- the target ---- */

static void answer(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint32_t tx_id, int status,
		   const void *old, size_t len)
{
	struct ddtx_hdr_atomic_resp *h = malloc(sizeof(*h) + len);
	if (!h) {
		/* Still answer, or the initiator waits for ever. */
		struct ddtx_hdr_atomic_resp small;
		ddtx_hdr_init(&small.base, DDTX_MSG_ATOMIC_RESP, 0);
		small.tx_id = tx_id;
		small.status = -FI_ENOMEM;
		small.len = 0;
		ddtx_ctrl_send(pep, peer, &small, sizeof(small));
		return;
	}
	ddtx_hdr_init(&h->base, DDTX_MSG_ATOMIC_RESP, 0);
	h->tx_id = tx_id;
	h->status = status;
	h->len = status ? 0 : len;
	if (!status && len)
		memcpy(h + 1, old, len);
	ddtx_ctrl_send(pep, peer, h, sizeof(*h) + h->len);
	free(h);
}

/* The rights an op needs on the target's key: it writes unless it only reads, it reads if it
 * returns old values. */
static uint32_t access_of(const struct ddtx_hdr_atomic *h)
{
	if (h->op == FI_ATOMIC_READ)
		return DDTX_ACC_REMOTE_READ;
	return DDTX_ACC_REMOTE_WRITE | (h->kind != DDTX_ATOMIC_WRITE ? DDTX_ACC_REMOTE_READ : 0);
}

void ddtx_atomic_on_req(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_atomic *h = buf;
	const char *bad = ddtx_check_atomic(h, len);
	if (bad) {
		DDTX_WARN(FI_LOG_EP_DATA, "refusing ATOMIC from peer %u: bad %s\n", src, bad);
		if (h->tx_id)
			answer(pep, src, h->tx_id, -FI_EINVAL, NULL, 0);
		return;
	}
	const size_t size = ddtx_atomic_type_size(h->datatype);
	const size_t bytes = h->count * size;
	const uint32_t access = access_of(h);
	const struct ddtx_atomic_seg *seg = (const void *)(h + 1);
	const uint8_t *operand = (const uint8_t *)(seg + h->nseg);
	const uint8_t *cmp = ddtx_atomic_has_compare(h->op) ? operand + bytes : NULL;
	if (!ddtx_atomic_has_operand(h->op))
		cmp = operand = NULL;
	/* Every segment is checked before any is touched: a refused request changes nothing. */
	int ret = 0;
	for (uint32_t i = 0; i < h->nseg && !ret; i++) {
		const struct iovec *iov;
		size_t n, off;
		ret = ddtx_mr_local(pep->pd, seg[i].key, seg[i].addr, seg[i].count * size, access,
				    &iov, &n, &off);
		if (ret)
			DDTX_INFO(FI_LOG_EP_DATA, "ATOMIC from peer %u: key %#llx at %#llx (%llu "
				  "elements) refused: %s\n", src, (unsigned long long)seg[i].key,
				  (unsigned long long)seg[i].addr,
				  (unsigned long long)seg[i].count, fi_strerror(-ret));
	}
	if (ret) {
		answer(pep, src, h->tx_id, ret, NULL, 0);
		return;
	}
	/* Gather, apply, scatter: an MR of several pieces may split an element between two. */
	uint8_t target[DDTX_ATOMIC_MAX_BYTES], old[DDTX_ATOMIC_MAX_BYTES];
	size_t done = 0;
	for (uint32_t i = 0; i < h->nseg; i++) {
		const struct iovec *iov;
		size_t n, off, seg_bytes = seg[i].count * size;
		ddtx_mr_local(pep->pd, seg[i].key, seg[i].addr, seg_bytes, access, &iov, &n, &off);
		ddtx_iov_gather(iov, n, off, target, seg_bytes);
		ddtx_atomic_apply(h->op, h->datatype, target, operand ? operand + done : NULL,
				  cmp ? cmp + done : NULL, old + done, seg[i].count);
		if (access & DDTX_ACC_REMOTE_WRITE)
			ddtx_iov_scatter(iov, n, off, target, seg_bytes);
		ddtx_mr_count_event(pep->pd, seg[i].key, access);
		done += seg_bytes;
	}
	ddtx_count(pep, (access & DDTX_ACC_REMOTE_WRITE) ? DDTX_CNTR_REMOTE_WRITE
							 : DDTX_CNTR_REMOTE_READ, false);
	answer(pep, src, h->tx_id, 0, old, h->kind != DDTX_ATOMIC_WRITE ? bytes : 0);
}
