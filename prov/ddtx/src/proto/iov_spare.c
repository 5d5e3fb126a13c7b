/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copies of callers' iov lists, kept for the next operation when long.  A send or receive
 * copies the caller's list (the caller may reuse it once the call returns); for a list of
 * thousands of entries that copy is tens of KiB, and malloc hands back pages the heap had just
 * trimmed: a PACK transfer of 4096 8-byte blocks took 768 page-fault samples against 95 for
 * eager messages of 2048 (perf, nc_bw -b 8 --iov-limit), its copies a third of the extra time.
 * As many as an application posts at once: with 4 kept, nc_bw's 64 receives of 8192 8-byte
 * blocks posted for a transfer (64 KiB messages, eager) took 30.8 ms a ping-pong transfer
 * where they take 2.1 with 64 kept, each receive's 128 KiB copy faulting in pages the heap
 * had trimmed.
 */
#include <stdlib.h>

#include "proto/proto_internal.h"

/* Lists shorter than this come from malloc's bins: nothing to gain. */
#define SPARE_MIN_ENTRIES 256

static size_t list_bytes(size_t cap)
{
	return cap * sizeof(struct iovec);
}

struct iovec *ddtx_iov_take(struct ddtx_proto_ep *pep, size_t count, size_t *cap)
{
	if (count >= SPARE_MIN_ENTRIES) {
		for (unsigned i = 0; i < DDTX_IOV_SPARES; i++) {
			struct ddtx_iov_spare *s = &pep->iov_spare[i];
			if (s->v && s->cap >= count) {
				struct iovec *v = s->v;
				*cap = s->cap;
				pep->iov_spare_bytes -= list_bytes(s->cap);
				s->v = NULL;
				return v;
			}
		}
	}
	*cap = count ? count : 1;
	return malloc(list_bytes(*cap));
}

void ddtx_iov_give(struct ddtx_proto_ep *pep, struct iovec *v, size_t cap)
{
	if (!v)
		return;
	if (cap >= SPARE_MIN_ENTRIES) {
		/* into an empty place, else in place of the smallest smaller one, within the bytes */
		struct ddtx_iov_spare *put = NULL;
		for (unsigned i = 0; i < DDTX_IOV_SPARES; i++) {
			struct ddtx_iov_spare *s = &pep->iov_spare[i];
			if (!s->v) {
				put = s;
				break;
			}
			if (s->cap < cap && (!put || s->cap < put->cap))
				put = s;
		}
		size_t freed = put && put->v ? list_bytes(put->cap) : 0;
		if (put && pep->iov_spare_bytes - freed + list_bytes(cap) <= DDTX_IOV_SPARE_BYTES) {
			free(put->v);
			pep->iov_spare_bytes += list_bytes(cap) - freed;
			*put = (struct ddtx_iov_spare){ v, cap };
			return;
		}
	}
	free(v);
}

void ddtx_iov_spares_free(struct ddtx_proto_ep *pep)
{
	for (unsigned i = 0; i < DDTX_IOV_SPARES; i++) {
		free(pep->iov_spare[i].v);
		pep->iov_spare[i].v = NULL;
	}
	pep->iov_spare_bytes = 0;
}
