/* SPDX-License-Identifier: BSD-2-Clause */
/* The victim / attacker harness of hostile.h. */
#include "hostile.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/settings.h"

/* ---- the victim's owner: records completions, a two-entry AV ---- */

static void owner_cq_write(void *owner, enum ddtx_proto_queue q,
			   const struct ddtx_proto_completion *c)
{
	struct hostile *h = owner;
	if (h->ndone == HOSTILE_MAX_COMPLETIONS) {
		h->dropped_completions++;
		return;
	}
	h->done[h->ndone++] = (struct hostile_completion){q, *c};
}

static void owner_cntr_add(void *owner, enum ddtx_proto_counter cntr, bool error)
{
	struct hostile *h = owner;
	if (!error)
		h->counted[cntr]++;
}

static int owner_av_lookup(void *owner, fi_addr_t addr, const void **blob, size_t *len)
{
	struct hostile *h = owner;
	if (addr > 1)
		return -FI_EINVAL;
	*blob = h->blob[addr];
	*len = h->blob_len;
	return 0;
}

static fi_addr_t owner_av_reverse(void *owner, const void *blob, size_t len)
{
	struct hostile *h = owner;
	for (fi_addr_t a = 0; a < 2; a++)
		if (len == h->blob_len && !memcmp(blob, h->blob[a], len))
			return a;
	return FI_ADDR_NOTAVAIL;
}

static const struct ddtx_proto_owner_ops owner_ops = {
	.cq_write = owner_cq_write,
	.cntr_add = owner_cntr_add,
	.av_lookup = owner_av_lookup,
	.av_reverse = owner_av_reverse,
};

/* ---- attacker and friend: bare wire endpoints ---- */

static void peer_on_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len)
{
	struct hostile_peer *p = arg;
	(void)src;
	if (p->ngot == HOSTILE_MAX_CAPTURED) {
		free(p->got[0].bytes);
		memmove(&p->got[0], &p->got[1], (HOSTILE_MAX_CAPTURED - 1) * sizeof(p->got[0]));
		p->ngot--;
	}
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		return;
	memcpy(copy, buf, len);
	p->got[p->ngot++] = (struct hostile_msg){len, copy};
}

static void peer_on_complete(void *arg, void *wr_context, int status)
{
	(void)arg, (void)wr_context, (void)status;
}

static const struct ddtx_wire_handlers peer_handlers = {
	.on_recv = peer_on_recv,
	.on_complete = peer_on_complete,
};

static int peer_open(struct hostile_peer *p, const void *victim_addr, size_t len,
		     uint8_t *blob_out, size_t *blob_len)
{
	const struct ddtx_wire_params params = {.wire = "shm"};
	int ret = ddtx_wire_domain_open(&params, &p->wd);
	if (!ret)
		ret = ddtx_wire_ep_open(p->wd, &peer_handlers, p, &p->we);
	if (!ret)
		ret = ddtx_wire_peer_insert(p->we, victim_addr, len, &p->victim);
	if (!ret)
		ret = ddtx_wire_ep_getname(p->we, blob_out, blob_len);
	return ret;
}

void hostile_peer_forget(struct hostile_peer *p)
{
	for (size_t i = 0; i < p->ngot; i++)
		free(p->got[i].bytes);
	p->ngot = 0;
}

static void peer_close(struct hostile_peer *p)
{
	hostile_peer_forget(p);
	ddtx_wire_ep_close(p->we);
	ddtx_wire_domain_close(p->wd);
}

int hostile_open(struct hostile *h)
{
	memset(h, 0, sizeof(*h));
	ddtx_rlock_init(&h->lock);
	int ret = ddtx_proto_domain_open(&h->lock, NULL, &h->pd);
	if (ret)
		return ret;
	ret = ddtx_proto_ep_open(h->pd, &owner_ops, h, &h->pep);
	if (ret)
		return ret;
	const struct ddtx_proto_ep_attr attr = {
		.tx_iov_limit = 1024, .rx_iov_limit = 1024, .rma_iov_limit = 1024,
		.inject_size = 64, .directed_recv = false,
	};
	ddtx_proto_ep_enable(h->pep, &attr);
	uint8_t vaddr[64];
	size_t vlen = sizeof(vaddr);
	ret = ddtx_proto_ep_getname(h->pep, vaddr, &vlen);
	if (ret)
		return ret;
	size_t alen = sizeof(h->blob[0]), flen = sizeof(h->blob[1]);
	ret = peer_open(&h->attacker, vaddr, vlen, h->blob[0], &alen);
	if (!ret)
		ret = peer_open(&h->friend, vaddr, vlen, h->blob[1], &flen);
	h->blob_len = alen;
	return ret;
}

void hostile_close(struct hostile *h)
{
	if (h->pep)
		ddtx_proto_ep_close(h->pep);
	if (h->pd)
		ddtx_proto_domain_close(h->pd);
	if (h->attacker.we)
		peer_close(&h->attacker);
	if (h->friend.we)
		peer_close(&h->friend);
	ddtx_rlock_destroy(&h->lock);
}

void hostile_victim_progress(struct hostile *h)
{
	ddtx_rlock_lock(&h->lock);
	ddtx_proto_progress(h->pep);
	ddtx_rlock_unlock(&h->lock);
}

void hostile_peer_progress(struct hostile_peer *p)
{
	ddtx_wire_ep_progress(p->we);
}

const void *hostile_peer_last(const struct hostile_peer *p, unsigned type, size_t *len)
{
	for (size_t i = p->ngot; i-- > 0;) {
		const struct ddtx_hdr_base *b = (const void *)p->got[i].bytes;
		if (p->got[i].len >= sizeof(*b) && b->type == type) {
			if (len)
				*len = p->got[i].len;
			return p->got[i].bytes;
		}
	}
	return NULL;
}

int hostile_send(struct hostile *h, struct hostile_peer *p, const void *msg, size_t len)
{
	for (int tries = 0;; tries++) {
		int ret = ddtx_wire_send(p->we, p->victim, msg, len, NULL, 0);
		if (ret != -FI_EAGAIN || tries == 100000)
			return ret;
		hostile_victim_progress(h);
		sched_yield();
	}
}

size_t hostile_count(const struct hostile *h, void *context, int *last_err)
{
	size_t n = 0;
	for (size_t i = 0; i < h->ndone; i++) {
		if (h->done[i].c.context != context)
			continue;
		n++;
		if (last_err)
			*last_err = h->done[i].c.err;
	}
	return n;
}

long hostile_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}
