/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory (FI_HMEM_CUDA) moved by host staging: a send copies its device segments into a
 * host bounce buffer (cuMemcpyDtoH) and sends the bounce buffer, packed; a receive lands in a
 * host bounce buffer and is copied into its device segments (cuMemcpyHtoD) before its
 * completion is reported.  The operation underneath is an ordinary host-memory one (any wire,
 * any scheme), its context the stage; the stage is found again in ddtx_report, the one place
 * every completion passes, which restores the caller's context and swallows the completion
 * the caller did not ask for (the stage always asks for one, so that it is freed).
 *
 * Staging is what works on every wire.  It costs two copies through host memory; the IPC,
 * copy-engine and pack-kernel schemes of fi_ddtx(7) that avoid them are not built yet.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/gpu_kernels.h"
#include "hmem/hmem.h"
#include "proto/proto_internal.h"

struct ddtx_stage {
	struct ddtx_list_entry entry;    /* ddtx_proto_ep.stages */
	void *context;                   /* the caller's */
	bool report;                     /* did the caller ask for a completion? */
	bool rx;
	struct iovec *iov;               /* the caller's segments (device and host) */
	size_t count;
	struct ddtx_hmem_attr *attr;     /* memory of each segment */
	struct iovec bounce;             /* host memory the operation underneath uses */
};

bool ddtx_proto_hmem_offered(void)
{
	return ddtx_hmem_cuda_device_count() > 0;
}

const char *ddtx_proto_hmem_describe(void)
{
	return ddtx_gpu_kernels_describe();
}

static void stage_free(struct ddtx_stage *s)
{
	free(s->bounce.iov_base);
	free(s->iov);
	free(s->attr);
	free(s);
}

/*
 * Which of iov's segments are device memory: 0 when none is (or CUDA is absent: the common
 * case costs one test), 1 when some are, -FI_EINVAL when some are but the domain was opened
 * without FI_HMEM.  attr (count entries) is filled when 1 is returned.
 */
static int classify(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
		    struct ddtx_hmem_attr **attr)
{
	struct ddtx_hmem_attr *a = NULL;
	bool device = false;

	*attr = NULL;
	if (!ddtx_hmem_cuda_available())
		return 0;
	for (size_t i = 0; i < count; i++) {
		struct ddtx_hmem_attr one;
		if (!iov[i].iov_len)
			continue;
		ddtx_hmem_detect(iov[i].iov_base, &one);
		if (one.iface == DDTX_HMEM_SYSTEM && !a)
			continue;
		if (!a && !(a = calloc(count, sizeof(*a))))
			return -FI_ENOMEM;
		a[i] = one;
		device |= one.iface != DDTX_HMEM_SYSTEM;
	}
	if (!device) {
		free(a);
		return 0;
	}
	if (!pep->pd->hmem) {
		DDTX_WARN(FI_LOG_EP_DATA, "device memory in a data call of a domain opened without "
			  "FI_HMEM\n");
		free(a);
		return -FI_EINVAL;
	}
	*attr = a;
	return 1;
}

/* Copy between the caller's segments and the bounce buffer (to_bounce: send side), up to len. */
static int stage_copy(struct ddtx_stage *s, size_t len, bool to_bounce)
{
	uint8_t *b = s->bounce.iov_base;

	for (size_t i = 0; i < s->count && len; i++) {
		size_t n = s->iov[i].iov_len < len ? s->iov[i].iov_len : len;
		void *seg = s->iov[i].iov_base;
		int ret = 0;
		if (!n)
			continue;
		if (s->attr[i].iface == DDTX_HMEM_SYSTEM) {
			if (to_bounce)
				memcpy(b, seg, n);
			else
				memcpy(seg, b, n);
		} else if (to_bounce) {
			ret = ddtx_hmem_copy(s->attr[i].device, b, seg, n, DDTX_HMEM_TO_HOST);
		} else {
			ret = ddtx_hmem_copy(s->attr[i].device, seg, b, n, DDTX_HMEM_TO_DEVICE);
		}
		if (ret)
			return ret;
		b += n;
		len -= n;
	}
	return 0;
}

int ddtx_stage_begin(struct ddtx_proto_ep *pep, bool rx, const struct iovec **iov,
		     size_t *count, void **context, uint64_t *flags, bool report,
		     struct ddtx_stage **out)
{
	struct ddtx_hmem_attr *attr;
	int ret = classify(pep, *iov, *count, &attr);

	*out = NULL;
	if (ret <= 0)
		return ret;
	if (*flags & (FI_MULTI_RECV | FI_CLAIM | FI_DISCARD | FI_PEEK)) {
		DDTX_WARN(FI_LOG_EP_DATA, "device memory with FI_MULTI_RECV, FI_PEEK, FI_CLAIM or "
			  "FI_DISCARD is not supported\n");
		free(attr);
		return -FI_EOPNOTSUPP;
	}
	struct ddtx_stage *s = calloc(1, sizeof(*s));
	size_t total = ddtx_iov_total(*iov, *count);
	if (!s || !(s->iov = malloc(*count * sizeof(**iov))) ||
	    !(s->bounce.iov_base = malloc(total ? total : 1))) {
		if (s)
			free(s->iov);
		free(s);
		free(attr);
		return -FI_ENOMEM;
	}
	memcpy(s->iov, *iov, *count * sizeof(**iov));
	s->count = *count;
	s->attr = attr;
	s->bounce.iov_len = total;
	s->context = *context;
	s->report = report;
	s->rx = rx;
	if (!rx && (ret = stage_copy(s, total, true))) {
		stage_free(s);
		return ret;
	}
	*iov = &s->bounce;
	*count = 1;
	*context = s;
	*flags = (*flags & ~(uint64_t)DDTX_PROTO_NO_COMPLETION) | FI_COMPLETION;
	struct fi_ddtx_stats *st = &pep->pd->stats;
	if (rx)
		st->hmem_rx_staged++;
	else {
		st->hmem_tx_staged++;
		st->hmem_staged_bytes += total;
	}
	ddtx_list_push_back(&pep->stages, &s->entry);
	*out = s;
	return 0;
}

void ddtx_stage_abort(struct ddtx_proto_ep *pep, struct ddtx_stage *s)
{
	if (!s)
		return;
	ddtx_list_remove(&s->entry);
	stage_free(s);
}

bool ddtx_stage_complete(struct ddtx_proto_ep *pep, struct ddtx_proto_completion *c)
{
	struct ddtx_list_entry *it, *tmp;
	struct ddtx_stage *s = NULL;

	ddtx_list_foreach_safe(&pep->stages, it, tmp)
	{
		struct ddtx_stage *x = ddtx_container_of(it, struct ddtx_stage, entry);
		if (x == c->context) {
			s = x;
			break;
		}
	}
	if (!s)
		return true;
	if (s->rx && c->len) {
		int ret = stage_copy(s, c->len, false);
		if (ret) {
			pep->pd->stats.hmem_copy_errors++;
			c->err = -ret;
			c->len = 0;
		} else {
			pep->pd->stats.hmem_staged_bytes += c->len;
		}
	}
	c->buf = NULL; /* FI_MULTI_RECV is refused: no buffer to name */
	c->context = s->context;
	bool pass = s->report || c->err;
	ddtx_list_remove(&s->entry);
	stage_free(s);
	return pass;
}

void *ddtx_stage_find(struct ddtx_proto_ep *pep, void *context)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&pep->stages, it, tmp)
	{
		struct ddtx_stage *s = ddtx_container_of(it, struct ddtx_stage, entry);
		if (s->context == context && s->rx)
			return s;
	}
	return context;
}

void ddtx_stage_free_all(struct ddtx_proto_ep *pep)
{
	struct ddtx_list_entry *it;

	while ((it = ddtx_list_pop_front(&pep->stages)))
		stage_free(ddtx_container_of(it, struct ddtx_stage, entry));
}
