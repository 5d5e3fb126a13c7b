/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queue.  Completions are stored in one ring in the order they happened; an error
 * completion occupies a placeholder slot in the ring and its details wait in cq->errors, so
 * fi_cq_read returns -FI_EAVAIL exactly when the topmost completion is an error.  The ring
 * grows instead of dropping completions.  Storage is protected by the domain lock (recursive,
 * because reading first progresses the endpoints, which write into CQs).
 */
#include <stdlib.h>
#include <string.h>

#include "core/cq.h"
#include "core/nosys.h"
#include "core/wait.h"

/* A power of two, doubled as it grows: positions are masked, not taken modulo the capacity (a
 * 64-bit division, tens of cycles, at every completion written and read). */
#define CQ_MIN_CAPACITY 256

/*
 * A read that finds completions waiting returns them without progressing the endpoints first,
 * at most this many reads in a row (the next one progresses: a CQ that does not empty still
 * sees progress).  Why: a rank that waits on its send CQ for a FI_DELIVERY_COMPLETE send finds
 * the peer's reply in that same progress call, then reads its receive CQ; progressing again
 * there put a poll of the core's sockets and the read of its signal (tcp) between the reply's
 * arrival and the next send, on both sides: fi_rdm_tagged_pingpong -U of 11664 B between the
 * namespace hosts took 13.0 / 14.6 us (fastest / median of 8), 11.6 / 12.9 without
 * (docs/benchmark-results.md).
 */
#define CQ_READS_UNPROGRESSED_MAX 8

static int cq_grow(struct ddtx_cq *cq)
{
	size_t cap = cq->capacity ? 2 * cq->capacity : CQ_MIN_CAPACITY;
	struct ddtx_cq_entry *ring = malloc(cap * sizeof(*ring));

	if (!ring)
		return -FI_ENOMEM;
	/* Unwrap the old ring so the new one starts at head 0. */
	for (size_t i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) & (cq->capacity - 1)];
	free(cq->ring);
	cq->ring = ring;
	cq->head = 0;
	cq->capacity = cap;
	return 0;
}

/* A full ring grows (or loses the completion, warned), out of line: with the warning inlined,
 * cq_push was a call of its own, 23 instructions of each of a message's two completions. */
static __attribute__((noinline, cold)) bool cq_make_room(struct ddtx_cq *cq)
{
	if (!cq_grow(cq))
		return true;
	DDTX_WARN(FI_LOG_CQ, "CQ %p: out of memory, completion lost\n", (void *)cq);
	return false;
}

static inline struct ddtx_cq_entry *cq_push(struct ddtx_cq *cq)
{
	if (cq->count == cq->capacity && !cq_make_room(cq))
		return NULL;
	return &cq->ring[(cq->head + cq->count++) & (cq->capacity - 1)];
}

static struct ddtx_cq_entry *cq_head(struct ddtx_cq *cq)
{
	return cq->count ? &cq->ring[cq->head] : NULL;
}

static void cq_pop(struct ddtx_cq *cq)
{
	cq->head = (cq->head + 1) & (cq->capacity - 1);
	cq->count--;
}

void ddtx_cq_write(struct ddtx_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
		   uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	struct ddtx_cq_entry *e;

	if (!cq || !(e = cq_push(cq)))
		return;
	*e = (struct ddtx_cq_entry){
		.op_context = context, .flags = flags, .len = len, .buf = buf,
		.data = data, .tag = tag, .src_addr = src_addr, .error = false,
	};
}

void ddtx_cq_write_err(struct ddtx_cq *cq, void *context, uint64_t flags, size_t len,
		       void *buf, uint64_t data, uint64_t tag, size_t olen, int err,
		       fi_addr_t src_addr)
{
	struct ddtx_cq_err *ce;
	struct ddtx_cq_entry *e;

	if (!cq)
		return;
	ce = calloc(1, sizeof(*ce));
	if (!ce || !(e = cq_push(cq))) {
		DDTX_WARN(FI_LOG_CQ, "CQ %p: out of memory, error completion lost\n", (void *)cq);
		free(ce);
		return;
	}
	*e = (struct ddtx_cq_entry){ .error = true };
	ce->err = (struct fi_cq_err_entry){
		.op_context = context, .flags = flags, .len = len, .buf = buf, .data = data,
		.tag = tag, .olen = olen, .err = err < 0 ? -err : err,
		.prov_errno = err < 0 ? -err : err,
	};
	ce->src_addr = src_addr;
	ddtx_list_push_back(&cq->errors, &ce->entry);
}

static size_t cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return sizeof(struct fi_cq_entry);
	}
}

static void cq_convert(enum fi_cq_format format, const struct ddtx_cq_entry *e, void *out)
{
	switch (format) {
	case FI_CQ_FORMAT_MSG:
		*(struct fi_cq_msg_entry *)out = (struct fi_cq_msg_entry){
			.op_context = e->op_context, .flags = e->flags, .len = e->len,
		};
		break;
	case FI_CQ_FORMAT_DATA:
		*(struct fi_cq_data_entry *)out = (struct fi_cq_data_entry){
			.op_context = e->op_context, .flags = e->flags, .len = e->len,
			.buf = e->buf, .data = e->data,
		};
		break;
	case FI_CQ_FORMAT_TAGGED:
		*(struct fi_cq_tagged_entry *)out = (struct fi_cq_tagged_entry){
			.op_context = e->op_context, .flags = e->flags, .len = e->len,
			.buf = e->buf, .data = e->data, .tag = e->tag,
		};
		break;
	default:
		((struct fi_cq_entry *)out)->op_context = e->op_context;
		break;
	}
}

static ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr)
{
	struct ddtx_cq *cq = ddtx_container_of(fid, struct ddtx_cq, fid);
	size_t esize = cq_entry_size(cq->format), n = 0;
	struct ddtx_cq_entry *e;
	ssize_t ret;

	if (!buf && count) {
		DDTX_WARN(FI_LOG_CQ, "fi_cq_read: NULL buffer\n");
		return -FI_EINVAL;
	}
	ddtx_domain_lock(cq->domain);
	if (!cq->count || cq->reads_unprogressed++ >= CQ_READS_UNPROGRESSED_MAX) {
		cq->reads_unprogressed = 0;
		ddtx_domain_progress_locked(cq->domain);
	}
	while (n < count && (e = cq_head(cq)) && !e->error) {
		cq_convert(cq->format, e, (char *)buf + n * esize);
		if (src_addr)
			src_addr[n] = e->src_addr;
		cq_pop(cq);
		n++;
	}
	if (n)
		ret = (ssize_t)n;
	else if ((e = cq_head(cq)))
		ret = -FI_EAVAIL; /* only an error placeholder stops the loop at n == 0 */
	else
		ret = -FI_EAGAIN;
	ddtx_domain_unlock(cq->domain);
	return ret;
}

static ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
	return cq_readfrom(fid, buf, count, NULL);
}

/* Hand one error out under the err_data rules of fi_cq(3) for the fabric's API version. */
static void cq_copy_err(struct ddtx_cq *cq, struct ddtx_cq_err *ce, struct fi_cq_err_entry *buf)
{
	uint32_t api = cq->domain->fabric->fid.api_version;
	bool user_buf = FI_VERSION_GE(api, FI_VERSION(1, 5)) && buf->err_data_size > 0;
	void *user_data = buf->err_data;
	size_t user_size = buf->err_data_size;

	if (FI_VERSION_LT(api, FI_VERSION(1, 5)) && api != 0) {
		/* Older callers' struct ends before err_data_size. */
		memcpy(buf, &ce->err, offsetof(struct fi_cq_err_entry, err_data_size));
		return;
	}
	*buf = ce->err;
	if (user_buf) {
		size_t n = DDTX_MIN(user_size, ce->err.err_data_size);

		if (n && ce->err.err_data)
			memcpy(user_data, ce->err.err_data, n);
		buf->err_data = user_data;
		buf->err_data_size = n;
	}
	/* else: err_data points into ce, which lives until the next readerr (cq->last_err). */
}

static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct ddtx_cq *cq = ddtx_container_of(fid, struct ddtx_cq, fid);
	struct ddtx_cq_entry *e;
	struct ddtx_list_entry *le;
	ssize_t ret = -FI_EAGAIN;

	if (!buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	ddtx_domain_lock(cq->domain);
	e = cq_head(cq);
	if (e && e->error && (le = ddtx_list_pop_front(&cq->errors))) {
		struct ddtx_cq_err *ce = ddtx_container_of(le, struct ddtx_cq_err, entry);

		cq_pop(cq);
		free(cq->last_err);
		cq->last_err = ce;
		cq_copy_err(cq, ce, buf);
		ret = 1;
	}
	ddtx_domain_unlock(cq->domain);
	return ret;
}

static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr,
			    const void *cond, int timeout)
{
	struct ddtx_cq *cq = ddtx_container_of(fid, struct ddtx_cq, fid);
	uint64_t deadline = timeout >= 0 ? ddtx_now_ms() + (uint64_t)timeout : 0;
	size_t threshold = 1;
	unsigned int spins = 0;
	ssize_t ret;

	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_ENOSYS; /* blocking reads need a wait object */
	if (!buf && count)
		return -FI_EINVAL;
	/* A threshold only changes when to return: read at once when enough are queued. */
	if (cond && cq->wait_cond == FI_CQ_COND_THRESHOLD && count)
		threshold = DDTX_MAX(DDTX_MIN(*(const size_t *)cond, count), (size_t)1);
	for (;;) {
		ddtx_domain_progress(cq->domain);
		ddtx_domain_lock(cq->domain);
		bool ready = cq->count >= threshold || (cq->count && cq->ring[cq->head].error);
		ddtx_domain_unlock(cq->domain);
		if (ready || (timeout >= 0 && ddtx_now_ms() >= deadline))
			break;
		if (atomic_exchange(&cq->signaled, 0))
			return -FI_EAGAIN;
		ddtx_wait_pause(&spins);
	}
	ret = cq_readfrom(fid, buf, count, src_addr);
	return ret;
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count, const void *cond,
			int timeout)
{
	return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fid)
{
	struct ddtx_cq *cq = ddtx_container_of(fid, struct ddtx_cq, fid);

	atomic_store(&cq->signaled, 1);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return ddtx_strerror(prov_errno, buf, len);
}

static int cq_close(struct fid *fid)
{
	struct ddtx_cq *cq = ddtx_container_of(fid, struct ddtx_cq, fid.fid);
	struct ddtx_list_entry *le;

	if (atomic_load(&cq->ref) > 0) {
		DDTX_WARN(FI_LOG_CQ, "CQ still bound to %d endpoints\n", atomic_load(&cq->ref));
		return -FI_EBUSY;
	}
	while ((le = ddtx_list_pop_front(&cq->errors)))
		free(ddtx_container_of(le, struct ddtx_cq_err, entry));
	free(cq->last_err);
	free(cq->ring);
	atomic_fetch_sub(&cq->domain->ref, 1);
	free(cq);
	return 0;
}

static struct fi_ops cq_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = ddtx_nosys_bind,
	.control = ddtx_nosys_control,
	.ops_open = ddtx_nosys_ops_open,
};

struct ddtx_cq *ddtx_cq_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_CQ || fid->ops != &cq_fid_ops)
		return NULL;
	return ddtx_container_of(fid, struct ddtx_cq, fid.fid);
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int cq_check_attr(const struct fi_cq_attr *attr)
{
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
	case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		DDTX_WARN(FI_LOG_CQ, "fi_cq_open: format %d not supported\n", attr->format);
		return -FI_ENOSYS;
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
		break;
	default:
		DDTX_INFO(FI_LOG_CQ, "fi_cq_open: wait object %d not supported\n", attr->wait_obj);
		return -FI_ENOSYS;
	}
	if (attr->wait_cond != FI_CQ_COND_NONE && attr->wait_cond != FI_CQ_COND_THRESHOLD) {
		DDTX_WARN(FI_LOG_CQ, "fi_cq_open: wait condition %d unknown\n", attr->wait_cond);
		return -FI_EINVAL;
	}
	if (attr->flags & ~(uint64_t)FI_AFFINITY) {
		DDTX_WARN(FI_LOG_CQ, "fi_cq_open: unsupported flags 0x%llx\n",
			  (unsigned long long)attr->flags);
		return -FI_EINVAL;
	}
	return 0;
}

int ddtx_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr, struct fid_cq **cqp,
		 void *context)
{
	struct ddtx_domain *domain = ddtx_domain_of(domain_fid);
	struct ddtx_cq *cq;
	int ret;

	if (!domain || !attr || !cqp)
		return -FI_EINVAL;
	ret = cq_check_attr(attr);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->domain = domain;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	/* FI_WAIT_UNSPEC: ddtx's wait is polling progress with sched_yield. */
	cq->wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_YIELD : attr->wait_obj;
	cq->wait_cond = attr->wait_cond;
	cq->size = attr->size ? attr->size : CQ_MIN_CAPACITY;
	ddtx_list_init(&cq->errors);
	atomic_init(&cq->ref, 0);
	atomic_init(&cq->signaled, 0);
	if (cq_grow(cq)) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->fid.fid.fclass = FI_CLASS_CQ;
	cq->fid.fid.context = context;
	cq->fid.fid.ops = &cq_fid_ops;
	cq->fid.ops = &cq_ops;
	atomic_fetch_add(&domain->ref, 1);
	*cqp = &cq->fid;
	return 0;
}
