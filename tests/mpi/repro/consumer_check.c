/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * consumer_check: checks, at the libfabric level, what MPICH 4.0.2 ch4:ofi and Open MPI 4.1's ofi
 * MTL require of a provider they have no settings for, making the calls the way they make them
 * (provider selection, hints, object set-up, the operations and flags they use).
 *
 *   FI_PROVIDER_PATH=... consumer_check [-p PROV] [mpich|ompi|all]
 *
 * PROV defaults to $FI_PROVIDER, then "ddtx".  One process, two endpoints in one domain (the
 * "ranks"); every check prints "PASS" or "FAIL" with what was seen; the exit status is the
 * number of failures (capped at 100).
 *
 * Build: cc -O2 -o consumer_check consumer_check.c -lfabric   (tests/mpi/build.sh does it)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#if __has_include(<rdma/fi_ddtx.h>)
#include <rdma/fi_ddtx.h>
#define HAVE_DDTX_H 1
#elif __has_include("../../../include/rdma/fi_ddtx.h")
#include "../../../include/rdma/fi_ddtx.h"
#define HAVE_DDTX_H 1
#endif

static int failures;
static const char *prov_name;

static void result(int ok, const char *id, const char *fmt, ...)
{
	va_list ap;
	printf("%s %-4s ", ok ? "PASS" : "FAIL", id);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static void note(const char *fmt, ...)
{
	va_list ap;
	printf("     ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------------------------------
 * Two "ranks": endpoints in one domain, each with its own CQ and RMA counter, sharing one AV.
 * Completions are collected from both CQs while waiting for one context, so manual progress of
 * the peer is always driven (as two MPI processes polling would drive it).
 */
#define MAXEV 256
struct ev {
	int used;
	int err;                     /* 0 or positive FI_E* */
	struct fi_cq_tagged_entry e;
	size_t olen;                 /* err: bytes dropped */
};

struct rank {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	fi_addr_t addr;              /* as inserted in the shared AV */
	struct ev evs[MAXEV];
};

struct world {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct rank r[2];
};

static void poll_one(struct rank *rk)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t n = fi_cq_read(rk->cq, e, 8);
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++) {
			int j;
			for (j = 0; j < MAXEV && rk->evs[j].used; j++)
				;
			if (j == MAXEV) {
				fprintf(stderr, "consumer_check: event table full\n");
				exit(100);
			}
			rk->evs[j].used = 1;
			rk->evs[j].err = 0;
			rk->evs[j].e = e[i];
		}
	} else if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry ee;
		memset(&ee, 0, sizeof(ee));
		if (fi_cq_readerr(rk->cq, &ee, 0) == 1) {
			int j;
			for (j = 0; j < MAXEV && rk->evs[j].used; j++)
				;
			if (j == MAXEV)
				exit(100);
			rk->evs[j].used = 1;
			rk->evs[j].err = ee.err;
			rk->evs[j].olen = ee.olen;
			rk->evs[j].e.op_context = ee.op_context;
			rk->evs[j].e.flags = ee.flags;
			rk->evs[j].e.len = ee.len;
			rk->evs[j].e.buf = ee.buf;
			rk->evs[j].e.data = ee.data;
			rk->evs[j].e.tag = ee.tag;
		}
	}
}

static void progress(struct world *w)
{
	poll_one(&w->r[0]);
	poll_one(&w->r[1]);
	for (int k = 0; k < 2; k++)
		if (w->r[k].cntr)
			fi_cntr_read(w->r[k].cntr);
}

/* Wait (up to tmo seconds) for a completion of ctx on rank rk; returns 1 and the event. */
static int wait_ctx(struct world *w, int rk, void *ctx, struct ev *out, double tmo)
{
	double t0 = now();
	for (;;) {
		progress(w);
		for (int j = 0; j < MAXEV; j++) {
			struct ev *e = &w->r[rk].evs[j];
			if (e->used && e->e.op_context == ctx) {
				if (out)
					*out = *e;
				e->used = 0;
				return 1;
			}
		}
		if (now() - t0 > tmo)
			return 0;
	}
}

/* Progress for a while and count completions (any context) left on rank rk. */
static int drain_count(struct world *w, int rk, double secs)
{
	double t0 = now();
	while (now() - t0 < secs)
		progress(w);
	int n = 0;
	for (int j = 0; j < MAXEV; j++)
		if (w->r[rk].evs[j].used)
			n++;
	return n;
}

static void clear_events(struct world *w)
{
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < MAXEV; j++)
			w->r[k].evs[j].used = 0;
}

static struct fi_info *find_prov(struct fi_info *list)
{
	for (struct fi_info *p = list; p; p = p->next)
		if (p->fabric_attr && p->fabric_attr->prov_name &&
		    !strcmp(p->fabric_attr->prov_name, prov_name))
			return p;
	return NULL;
}

static int setup_world(struct world *w, struct fi_info *info, enum fi_av_type avt,
		       enum fi_cq_format fmt, uint64_t cq_bind_flags, int want_cntr)
{
	int ret;
	memset(w, 0, sizeof(*w));
	w->info = info;
	ret = fi_fabric(info->fabric_attr, &w->fabric, NULL);
	if (ret)
		return ret;
	ret = fi_domain(w->fabric, info, &w->domain, NULL);
	if (ret)
		return ret;
	struct fi_av_attr av_attr = { .type = avt, .count = 2 };
	ret = fi_av_open(w->domain, &av_attr, &w->av, NULL);
	if (ret)
		return ret;
	char names[2][256];
	size_t lens[2];
	for (int k = 0; k < 2; k++) {
		struct rank *rk = &w->r[k];
		struct fi_cq_attr cq_attr = { .format = fmt };
		ret = fi_cq_open(w->domain, &cq_attr, &rk->cq, NULL);
		if (ret)
			return ret;
		if (want_cntr) {
			struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP,
						   .wait_obj = FI_WAIT_UNSPEC };
			ret = fi_cntr_open(w->domain, &ca, &rk->cntr, NULL);
			if (ret)
				return ret;
		}
		ret = fi_endpoint(w->domain, info, &rk->ep, NULL);
		if (ret)
			return ret;
		ret = fi_ep_bind(rk->ep, &w->av->fid, 0);
		if (ret)
			return ret;
		ret = fi_ep_bind(rk->ep, &rk->cq->fid, cq_bind_flags);
		if (ret)
			return ret;
		if (want_cntr) {
			ret = fi_ep_bind(rk->ep, &rk->cntr->fid, FI_READ | FI_WRITE);
			if (ret)
				return ret;
		}
		ret = fi_enable(rk->ep);
		if (ret)
			return ret;
		lens[k] = sizeof(names[k]);
		ret = fi_getname(&rk->ep->fid, names[k], &lens[k]);
		if (ret)
			return ret;
	}
	for (int k = 0; k < 2; k++) {
		ret = fi_av_insert(w->av, names[k], 1, &w->r[k].addr, 0, NULL);
		if (ret != 1)
			return ret < 0 ? ret : -FI_EOTHER;
	}
	return 0;
}

static void teardown_world(struct world *w)
{
	for (int k = 0; k < 2; k++) {
		if (w->r[k].ep)
			fi_close(&w->r[k].ep->fid);
		if (w->r[k].cq)
			fi_close(&w->r[k].cq->fid);
		if (w->r[k].cntr)
			fi_close(&w->r[k].cntr->fid);
	}
	if (w->av)
		fi_close(&w->av->fid);
	if (w->domain)
		fi_close(&w->domain->fid);
	if (w->fabric)
		fi_close(&w->fabric->fid);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

/* =============================================================================================
 * MPICH 4.0.2 ch4:ofi (no capability set for this provider: the "default" set)
 */
/* Default set: 20 context bits, 0 source bits, 31 tag bits; protocol bits above them
 * (SYNC_SEND_ACK 1<<51, SYNC_SEND 2<<51, DYNPROC 4<<51, HUGE 8<<51); receives always ignore
 * the protocol mask 7<<52. */
#define MPICH_CTX_SHIFT 31
#define MPICH_PROTO_SHIFT 51
#define MPICH_PROTO_MASK (7ULL << 52)
#define MPICH_TAG_MASK 0x7FFFFFFFULL
#define MPICH_TAG_FORMAT (MPICH_PROTO_MASK | MPICH_TAG_MASK)

static uint64_t mpich_tag(uint64_t ctx, uint64_t tag) { return (ctx << MPICH_CTX_SHIFT) | tag; }

static void check_mpich(void)
{
	struct fi_info *list = NULL, *prov, *hints, *final = NULL;
	int ret;
	uint32_t ver = fi_version();

	printf("== MPICH 4.0.2 ch4:ofi requirements (provider %s, API %u.%u) ==\n", prov_name,
	       FI_MAJOR(ver), FI_MINOR(ver));

	/* M1: selection with NULL hints and MPICH's score (minimal: RDM; optimal: tagged with cq
	 * data, MSG|MULTI_RECV, RMA). */
	ret = fi_getinfo(ver, NULL, NULL, 0, NULL, &list);
	prov = ret ? NULL : find_prov(list);
	if (!prov) {
		result(0, "M1", "fi_getinfo(NULL hints) lists %s (ret %d)", prov_name, ret);
		fi_freeinfo(list);
		return;
	}
	int tagged_ok = (prov->caps & FI_TAGGED) && prov->domain_attr->cq_data_size >= 4;
	int am_ok = (prov->caps & (FI_MSG | FI_MULTI_RECV)) == (FI_MSG | FI_MULTI_RECV);
	int rma_ok = !!(prov->caps & FI_RMA);
	int rdm_ok = prov->ep_attr->type == FI_EP_RDM;
	result(tagged_ok && am_ok && rma_ok && rdm_ok, "M1",
	       "selection: FI_TAGGED+cq_data_size %zu (>=4) %d, FI_MSG|FI_MULTI_RECV %d, FI_RMA %d, RDM %d",
	       prov->domain_attr->cq_data_size, tagged_ok, am_ok, rma_ok, rdm_ok);
	note("max_ep_tx_ctx %zu (scalable endpoints %s), atomics %s, progress data %d control %d",
	     prov->domain_attr->max_ep_tx_ctx,
	     prov->domain_attr->max_ep_tx_ctx > 1 ? "possible" : "off",
	     (prov->caps & FI_ATOMIC) ? "yes" : "no (MPICH uses active messages)",
	     prov->domain_attr->data_progress, prov->domain_attr->control_progress);

	/* M2: MPICH's hints, first try (optimal); it relaxes msg_order, then mr_mode. */
	hints = fi_allocinfo();
	hints->mode = FI_CONTEXT | FI_ASYNC_IOV | FI_RX_CQ_DATA | FI_CONTEXT2;
	hints->caps = prov->caps | FI_DIRECTED_RECV;
	hints->domain_attr->cq_data_size = 4;
	hints->addr_format = FI_FORMAT_UNSPEC;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	hints->domain_attr->av_type = FI_AV_TABLE;
	hints->domain_attr->mr_mode = 0;
#ifdef FI_RESTRICTED_COMP
	hints->domain_attr->mode = FI_RESTRICTED_COMP;
#endif
	hints->tx_attr->op_flags = FI_COMPLETION | FI_DELIVERY_COMPLETE;
	hints->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR |
				    FI_ORDER_WAW;
	hints->tx_attr->comp_order = FI_ORDER_NONE;
	hints->rx_attr->op_flags = FI_COMPLETION;
	hints->rx_attr->total_buffered_recv = 0;
	hints->ep_attr->type = FI_EP_RDM;
	hints->ep_attr->mem_tag_format = MPICH_TAG_FORMAT;
	hints->fabric_attr->prov_name = strdup(prov_name);
	int tries = 1;
	ret = fi_getinfo(ver, NULL, NULL, 0, hints, &final);
	if (ret || !final) {
		hints->tx_attr->msg_order = prov->tx_attr->msg_order;
		tries++;
		ret = fi_getinfo(ver, NULL, NULL, 0, hints, &final);
	}
	if (ret || !final) {
		hints->domain_attr->mr_mode = prov->domain_attr->mr_mode;
		tries++;
		ret = fi_getinfo(ver, NULL, NULL, 0, hints, &final);
	}
	result(!ret && final && tries == 1, "M2",
	       "fi_getinfo with MPICH's hints (mode CONTEXT|ASYNC_IOV|RX_CQ_DATA|CONTEXT2, "
	       "DELIVERY_COMPLETE, mr_mode 0, AV_TABLE, manual progress): %s after %d tr%s",
	       ret ? fi_strerror(-ret) : "ok", tries, tries == 1 ? "y" : "ies");
	fi_freeinfo(list);
	if (!final) {
		fi_freeinfo(hints);
		return;
	}
	result(final->domain_attr->threading == FI_THREAD_DOMAIN, "M3",
	       "returned threading is exactly FI_THREAD_DOMAIN (got %s)",
	       fi_tostr(&final->domain_attr->threading, FI_TYPE_THREADING));
	uint64_t known = FI_CONTEXT | FI_ASYNC_IOV | FI_RX_CQ_DATA | FI_CONTEXT2;
	result((final->mode & ~known) == 0, "M4",
	       "mode bits required are within FI_CONTEXT|FI_CONTEXT2|FI_ASYNC_IOV|FI_RX_CQ_DATA "
	       "(mode 0x%" PRIx64 ")", final->mode);
	result(final->domain_attr->mr_mode == 0 || !(final->domain_attr->mr_mode & FI_MR_LOCAL),
	       "M5", "mr_mode 0 accepted, no FI_MR_LOCAL (returned mr_mode 0x%x, key size %zu)",
	       final->domain_attr->mr_mode, final->domain_attr->mr_key_size);
	result(final->ep_attr->max_msg_size >= 16384 && final->tx_attr->iov_limit >= 1 &&
	       final->domain_attr->cq_data_size >= 4, "M6",
	       "limits: max_msg_size %zu (>=16 KiB), inject_size %zu, iov %zu/%zu (MPICH caps at 32), "
	       "rma_iov %zu, cq_data_size %zu",
	       final->ep_attr->max_msg_size, final->tx_attr->inject_size, final->tx_attr->iov_limit,
	       final->rx_attr->iov_limit, final->tx_attr->rma_iov_limit,
	       final->domain_attr->cq_data_size);
	int tag_bits = __builtin_popcountll(final->ep_attr->mem_tag_format);
	note("returned mem_tag_format 0x%016" PRIx64 " (%d bits), caps %s",
	     final->ep_attr->mem_tag_format, tag_bits, fi_tostr(&final->caps, FI_TYPE_CAPS));

	/* Objects as MPICH opens them. */
	struct world W, *w = &W;
	memset(w, 0, sizeof(*w));
	ret = fi_fabric(final->fabric_attr, &w->fabric, NULL);
	if (!ret)
		ret = fi_domain(w->fabric, final, &w->domain, NULL);
	if (ret) {
		result(0, "M7", "fi_fabric/fi_domain: %s", fi_strerror(-ret));
		goto out;
	}
	{
		char av_name[128];
		struct fid_av *nav = NULL;
		snprintf(av_name, sizeof(av_name), "FI_NAMED_AV_%d\n", 0);
		struct fi_av_attr a = { .type = FI_AV_TABLE, .rx_ctx_bits = 0, .count = 2,
					.name = av_name, .flags = FI_READ, .map_addr = 0 };
		ret = fi_av_open(w->domain, &a, &nav, NULL);
		result(ret != 0, "M7", "opening the named AV \"FI_NAMED_AV_0\\n\" read-only fails cleanly "
		       "(ret %d%s)", ret, ret == 0 ? a.map_addr ? "" : ", map_addr NULL: MPICH would crash" : "");
		if (ret == 0)
			fi_close(&nav->fid);
	}
	fi_close(&w->domain->fid);
	fi_close(&w->fabric->fid);

	ret = setup_world(w, final, FI_AV_TABLE, FI_CQ_FORMAT_TAGGED,
			  FI_SEND | FI_RECV | FI_SELECTIVE_COMPLETION, 1);
	result(ret == 0, "M8", "AV table, tagged CQ, counter (EVENTS_COMP, WAIT_UNSPEC), endpoint "
	       "bound with FI_SEND|FI_RECV|FI_SELECTIVE_COMPLETION and FI_READ|FI_WRITE: %s",
	       ret ? fi_strerror(-ret) : "ok");
	if (ret)
		goto out_w;
	struct rank *r0 = &w->r[0], *r1 = &w->r[1];

	/* M9: FI_OPT_MIN_MULTI_RECV and 1 MiB multi-receive buffers, NULL descriptors; AM-style
	 * untagged messages land in them with FI_MULTI_RECV on the last completion. */
	{
		size_t optlen = 16384;
		ret = fi_setopt(&r1->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &optlen,
				sizeof(optlen));
		int ok = ret == 0;
		const size_t bufsz = 1 << 20;
		unsigned char *mbuf[2];
		struct iovec miov[2];
		struct fi_msg mmsg[2];
		struct fi_context2 mctx[2];
		for (int i = 0; i < 2 && ok; i++) {
			mbuf[i] = malloc(bufsz);
			memset(mbuf[i], 0, bufsz);
			miov[i] = (struct iovec){ mbuf[i], bufsz };
			mmsg[i] = (struct fi_msg){ .msg_iov = &miov[i], .desc = NULL, .iov_count = 1,
						   .addr = FI_ADDR_UNSPEC, .context = &mctx[i] };
			ret = fi_recvmsg(r1->ep, &mmsg[i], FI_MULTI_RECV | FI_COMPLETION);
			ok = ret == 0;
		}
		/* 100 messages of 12 KiB: fills the first buffer past its 16 KiB threshold. */
		const int nmsg = 100;
		const size_t msz = 12288;
		unsigned char *sbuf = malloc(msz);
		int got = 0, released = 0, data_ok = 1;
		struct fi_context2 sctx;
		for (int i = 0; i < nmsg && ok; i++) {
			fill(sbuf, msz, i);
			memcpy(sbuf, &i, sizeof(i));
			struct iovec iov = { sbuf, msz };
			struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = r1->addr,
					    .context = &sctx, .data = 0 };
			do {
				ret = fi_sendmsg(r0->ep, &m, FI_COMPLETION);
				if (ret == -FI_EAGAIN)
					progress(w);
			} while (ret == -FI_EAGAIN);
			if (ret) {
				ok = 0;
				break;
			}
			struct ev e;
			if (!wait_ctx(w, 0, &sctx, &e, 10)) {
				ok = 0;
				break;
			}
			/* receiver: completions of either buffer */
			double t0 = now();
			int have = 0;
			while (!have && now() - t0 < 10) {
				progress(w);
				for (int j = 0; j < MAXEV; j++) {
					struct ev *x = &r1->evs[j];
					if (!x->used)
						continue;
					if (x->e.op_context == &mctx[0] || x->e.op_context == &mctx[1]) {
						if (x->e.flags & FI_RECV) {
							int idx;
							memcpy(&idx, x->e.buf, sizeof(idx));
							unsigned char *chk = malloc(msz);
							fill(chk, msz, idx);
							memcpy(chk, &idx, sizeof(idx));
							if (x->e.len != msz || idx != got ||
							    memcmp(chk, x->e.buf, msz))
								data_ok = 0;
							free(chk);
							got++;
							have = 1;
						}
						if (x->e.flags & FI_MULTI_RECV) {
							released++;
							/* repost, as MPICH does */
							int b = x->e.op_context == &mctx[0] ? 0 : 1;
							fi_recvmsg(r1->ep, &mmsg[b],
								   FI_MULTI_RECV | FI_COMPLETION);
						}
						x->used = 0;
					}
				}
			}
			if (!have) {
				ok = 0;
				break;
			}
		}
		result(ok && got == nmsg && data_ok && released >= 1, "M9",
		       "FI_OPT_MIN_MULTI_RECV 16 KiB, two 1 MiB FI_MULTI_RECV buffers (NULL desc): "
		       "%d/%d messages of 12 KiB received in order with right data, %d buffer "
		       "release(s) flagged FI_MULTI_RECV", got, nmsg, released);
		/* Cancel the reposted buffers so they do not catch later traffic (untagged only). */
		for (int i = 0; i < 2; i++)
			fi_cancel(&r1->ep->fid, &mctx[i]);
		drain_count(w, 1, 0.05);
		clear_events(w);
		free(sbuf);
		for (int i = 0; i < 2; i++)
			free(mbuf[i]);
	}

	/* M10: tagged with 4-byte remote CQ data and MPICH's tag layout (context bits 31..50,
	 * protocol bits 52..55), receives with ANY_TAG-style ignore masks and directed addresses. */
	{
		int ok = 1, checked = 0;
		uint64_t ctxs[] = { 0, 1, 0xFFFFF };
		uint64_t tags[] = { 0, 1, 0x7FFFFFFF, 0x12345678 };
		uint64_t protos[] = { 0, 2ULL << MPICH_PROTO_SHIFT, 4ULL << MPICH_PROTO_SHIFT,
				      8ULL << MPICH_PROTO_SHIFT };
		char sb[64], rb[64];
		for (unsigned a = 0; a < 3; a++)
			for (unsigned b = 0; b < 4; b++)
				for (unsigned c = 0; c < 4; c++) {
					uint64_t rt = mpich_tag(ctxs[a], tags[b]);
					uint64_t t = rt | protos[c];
					uint32_t data = 0xC0DE0000u + a * 16 + b * 4 + c;
					struct fi_context2 rc, sc;
					int any_tag = (b + c) & 1;
					uint64_t ign = MPICH_PROTO_MASK | (any_tag ? MPICH_TAG_MASK : 0);
					fill((unsigned char *)sb, sizeof(sb), (unsigned)t);
					memset(rb, 0, sizeof(rb));
					ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL,
						       (a & 1) ? FI_ADDR_UNSPEC : r0->addr,
						       any_tag ? rt & ~MPICH_TAG_MASK : rt, ign, &rc);
					if (!ret)
						ret = fi_tsenddata(r0->ep, sb, sizeof(sb), NULL, data, r1->addr,
								   t, &sc);
					struct ev e;
					if (ret || !wait_ctx(w, 1, &rc, &e, 5) || !wait_ctx(w, 0, &sc, NULL, 5) ||
					    e.err || e.e.tag != t || !(e.e.flags & FI_REMOTE_CQ_DATA) ||
					    (uint32_t)e.e.data != data || memcmp(sb, rb, sizeof(sb))) {
						if (ok)
							note("first failure: tag 0x%016" PRIx64 " ret %d err %d "
							     "got tag 0x%" PRIx64 " data 0x%" PRIx64 " flags 0x%" PRIx64,
							     t, ret, e.err, e.e.tag, e.e.data, e.e.flags);
						ok = 0;
					}
					checked++;
				}
		/* a message for another context must not match */
		struct fi_context2 rc2, sc2;
		ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, mpich_tag(5, 0),
			       MPICH_PROTO_MASK | MPICH_TAG_MASK, &rc2);
		ret |= fi_tsenddata(r0->ep, sb, sizeof(sb), NULL, 1, r1->addr, mpich_tag(6, 7), &sc2);
		int wrong = drain_count(w, 1, 0.05);
		int ok2 = !ret && wrong == 0;
		struct fi_context2 rc3;
		ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, mpich_tag(6, 7),
			       MPICH_PROTO_MASK, &rc3);
		ok2 = ok2 && !ret && wait_ctx(w, 1, &rc3, NULL, 5);
		fi_cancel(&r1->ep->fid, &rc2);
		drain_count(w, 1, 0.02);
		clear_events(w);
		result(ok && ok2, "M10",
		       "%d tagged sends with 4-byte FI_REMOTE_CQ_DATA over MPICH's 56-bit tag layout "
		       "(ignore masks, directed and FI_ADDR_UNSPEC receives); other-context tag not "
		       "matched: %s", checked, ok2 ? "yes" : "NO");
	}

	/* M11: selective completion: fi_tinject and sends without FI_COMPLETION give no send-side
	 * completion; with FI_COMPLETION they do. */
	{
		char sb[256] = "x", rb[256];
		struct fi_context2 rc[3], sc[2];
		int ok = 1;
		for (int i = 0; i < 3; i++)
			ok &= fi_trecv(r1->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, 100 + i, 0, &rc[i]) == 0;
		ok &= fi_tinjectdata(r0->ep, sb, 16, 7, r1->addr, 100) == 0;
		struct iovec iov = { sb, 100 };
		struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = r1->addr,
					   .tag = 101, .context = &sc[0], .data = 3 };
		ok &= fi_tsendmsg(r0->ep, &m, FI_REMOTE_CQ_DATA) == 0;
		m.tag = 102;
		m.context = &sc[1];
		ok &= fi_tsendmsg(r0->ep, &m, FI_COMPLETION | FI_REMOTE_CQ_DATA) == 0;
		for (int i = 0; i < 3; i++)
			ok &= wait_ctx(w, 1, &rc[i], NULL, 5);
		int c1 = wait_ctx(w, 0, &sc[1], NULL, 5);
		int extra = drain_count(w, 0, 0.05);
		result(ok && c1 && extra == 0, "M11",
		       "FI_SELECTIVE_COMPLETION: inject and a send without FI_COMPLETION report nothing "
		       "(%d extra), a send with FI_COMPLETION completes (%d)", extra, c1);
		clear_events(w);
	}

	/* M12: probe: FI_PEEK with nothing there answers FI_ENOMSG (return code or error
	 * completion), FI_PEEK finds a message with its length/tag/data, FI_PEEK|FI_CLAIM then
	 * FI_CLAIM receives it; a peek must not consume. */
	{
		char sb[4096], rb[4096];
		struct fi_context2 pc;
		struct fi_msg_tagged pm = { .msg_iov = NULL, .desc = NULL, .iov_count = 0,
					    .addr = FI_ADDR_UNSPEC, .tag = mpich_tag(9, 1), .ignore = 0,
					    .context = &pc, .data = 0 };
		ret = fi_trecvmsg(r1->ep, &pm, FI_PEEK | FI_COMPLETION);
		struct ev e;
		int notfound = 0;
		const char *how = "";
		if (ret == -FI_ENOMSG) {
			notfound = 1;
			how = "returned -FI_ENOMSG";
		} else if (ret == 0 && wait_ctx(w, 1, &pc, &e, 5) && e.err == FI_ENOMSG) {
			notfound = 1;
			how = "error completion FI_ENOMSG";
		} else {
			how = ret ? fi_strerror(-ret) : "something else";
		}
		result(notfound, "M12", "FI_PEEK without a match: %s", how);

		/* peek a rendezvous-sized and an eager message */
		size_t sizes[2] = { 100, 4096 };
		int ok = 1;
		for (int s = 0; s < 2; s++) {
			struct fi_context2 sc;
			fill((unsigned char *)sb, sizes[s], s + 1);
			ok &= fi_tsenddata(r0->ep, sb, sizes[s], NULL, 42, r1->addr, mpich_tag(9, 2 + s), &sc) == 0;
			int found = 0;
			double t0 = now();
			while (!found && now() - t0 < 5) {
				pm.tag = mpich_tag(9, 2 + s);
				pm.addr = r0->addr;
				ret = fi_trecvmsg(r1->ep, &pm, FI_PEEK | FI_COMPLETION);
				if (ret == -FI_ENOMSG) {
					progress(w);
					continue;
				}
				if (ret || !wait_ctx(w, 1, &pc, &e, 5)) {
					ok = 0;
					break;
				}
				if (e.err == FI_ENOMSG)
					continue;
				found = 1;
				ok &= !e.err && e.e.len == sizes[s] && e.e.tag == mpich_tag(9, 2 + s) &&
				      e.e.data == 42;
			}
			ok &= found;
			/* peek again: still there (not consumed); then claim */
			struct fi_context2 cc;
			pm.context = &cc;
			ret = fi_trecvmsg(r1->ep, &pm, FI_PEEK | FI_CLAIM | FI_COMPLETION);
			ok &= ret == 0 && wait_ctx(w, 1, &cc, &e, 5) && !e.err && e.e.len == sizes[s];
			/* after a claim, a plain receive with the same tag must not get it */
			struct fi_context2 other;
			char ob[8];
			ok &= fi_trecv(r1->ep, ob, sizeof(ob), NULL, FI_ADDR_UNSPEC, mpich_tag(9, 2 + s), 0, &other) == 0;
			int stolen = drain_count(w, 1, 0.02);
			ok &= stolen == 0;
			struct iovec riov = { rb, sizeof(rb) };
			struct fi_msg_tagged cm = { .msg_iov = &riov, .iov_count = 1, .addr = r0->addr,
						    .tag = mpich_tag(9, 2 + s), .ignore = 0,
						    .context = &cc };
			memset(rb, 0, sizeof(rb));
			ret = fi_trecvmsg(r1->ep, &cm, FI_CLAIM | FI_COMPLETION);
			ok &= ret == 0 && wait_ctx(w, 1, &cc, &e, 5) && !e.err &&
			      e.e.len == sizes[s] && !memcmp(sb, rb, sizes[s]);
			ok &= wait_ctx(w, 0, &sc, NULL, 5);
			fi_cancel(&r1->ep->fid, &other);
			drain_count(w, 1, 0.02);
			clear_events(w);
			pm.context = &pc;
		}
		result(ok, "M13", "FI_PEEK finds a message (len, tag, data), FI_PEEK|FI_CLAIM then "
		       "FI_CLAIM receives it; other receives do not take a claimed message");
	}

	/* M14: fi_cancel of a posted tagged receive gives an FI_ECANCELED error completion; a
	 * truncated receive gives FI_ETRUNC. */
	{
		char rb[64], sb[128];
		struct fi_context2 rc, sc;
		struct ev e;
		ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, 777, 0, &rc);
		int c = fi_cancel(&r1->ep->fid, &rc);
		int got = !ret && wait_ctx(w, 1, &rc, &e, 5);
		result(got && e.err == FI_ECANCELED, "M14", "fi_cancel -> error completion FI_ECANCELED "
		       "(cancel ret %d, err %d)", c, got ? e.err : -1);
		ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, 778, 0, &rc);
		ret |= fi_tsend(r0->ep, sb, sizeof(sb), NULL, r1->addr, 778, &sc);
		got = !ret && wait_ctx(w, 1, &rc, &e, 5);
		wait_ctx(w, 0, &sc, NULL, 5);
		result(got && e.err == FI_ETRUNC, "M15", "truncated receive -> FI_ETRUNC (err %d, olen %zu)",
		       got ? e.err : -1, got ? e.olen : 0);
		clear_events(w);
	}

	/* M16: MRs as MPICH makes them: mr_mode 0, caller keys with bit 63 (collective keys),
	 * NULL descriptors, offsets as remote addresses; writes with FI_DELIVERY_COMPLETE counted
	 * by the counter; fi_cntr_wait. */
	{
		const size_t wsz = 1 << 20;
		unsigned char *win = calloc(1, wsz), *src = malloc(wsz), *dst = calloc(1, wsz);
		struct fid_mr *mr = NULL;
		uint64_t key = (1ULL << 63) | (3ULL << 32) | 17;
		int vaddr = !!(final->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
		int provkey = !!(final->domain_attr->mr_mode & FI_MR_PROV_KEY);
		ret = fi_mr_reg(w->domain, win, wsz, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, key, 0, &mr, NULL);
		uint64_t got_key = ret ? 0 : fi_mr_key(mr);
		result(!ret && (provkey || got_key == key), "M16",
		       "fi_mr_reg with caller key 0x%016" PRIx64 " (bit 63): %s, fi_mr_key 0x%016" PRIx64,
		       key, ret ? fi_strerror(-ret) : "ok", got_key);
		if (!ret) {
			fill(src, wsz, 5);
			uint64_t base = vaddr ? (uint64_t)(uintptr_t)win : 0;
			uint64_t before = fi_cntr_read(r0->cntr);
			int ok = 1;
			/* put 4 KiB at offset 8192, then 512 KiB at offset 65536 */
			size_t offs[2] = { 8192, 65536 }, lens[2] = { 4096, 512 * 1024 };
			for (int i = 0; i < 2; i++) {
				struct iovec iov = { src + offs[i], lens[i] };
				struct fi_rma_iov riov = { base + offs[i], lens[i], got_key };
				struct fi_msg_rma m = { .msg_iov = &iov, .desc = NULL, .iov_count = 1,
							.addr = r1->addr, .rma_iov = &riov,
							.rma_iov_count = 1, .context = NULL };
				ret = fi_writemsg(r0->ep, &m, FI_DELIVERY_COMPLETE);
				ok &= ret == 0;
			}
			/* MPICH waits on the counter while progressing */
			double t0 = now();
			while (fi_cntr_read(r0->cntr) < before + 2 && now() - t0 < 10)
				progress(w);
			ret = fi_cntr_wait(r0->cntr, before + 2, 1000);
			ok &= ret == 0;
			for (int i = 0; i < 2; i++)
				ok &= !memcmp(win + offs[i], src + offs[i], lens[i]);
			ok &= win[8191] == 0 && win[8192 + 4096] == 0;
			/* get it back */
			struct iovec iov = { dst, 4096 };
			struct fi_rma_iov riov = { base + 8192, 4096, got_key };
			struct fi_msg_rma m = { .msg_iov = &iov, .iov_count = 1, .addr = r1->addr,
						.rma_iov = &riov, .rma_iov_count = 1 };
			ok &= fi_readmsg(r0->ep, &m, 0) == 0;
			t0 = now();
			while (fi_cntr_read(r0->cntr) < before + 3 && now() - t0 < 10)
				progress(w);
			ok &= fi_cntr_read(r0->cntr) == before + 3 && !memcmp(dst, src + 8192, 4096);
			int cqe = drain_count(w, 0, 0.02);
			result(ok && cqe == 0, "M17",
			       "fi_writemsg(FI_DELIVERY_COMPLETE)/fi_readmsg with NULL desc and %s remote "
			       "addresses: data right, counter %" PRIu64 " (fi_cntr_wait ok), no CQ entries "
			       "without FI_COMPLETION (%d)", vaddr ? "virtual" : "offset",
			       fi_cntr_read(r0->cntr), cqe);
			fi_close(&mr->fid);
		}
		clear_events(w);
		/* M18: dynamic windows: [MPI_BOTTOM, UINTPTR_MAX) and [base, UINTPTR_MAX) must fail. */
		struct fid_mr *dmr = NULL;
		int r_bottom = fi_mr_reg(w->domain, NULL, UINTPTR_MAX, FI_REMOTE_READ | FI_REMOTE_WRITE,
					 0, 99, 0, &dmr, NULL);
		if (!r_bottom)
			fi_close(&dmr->fid);
		int r_base = fi_mr_reg(w->domain, win, UINTPTR_MAX - (uintptr_t)win,
				       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 100, 0, &dmr, NULL);
		if (!r_base)
			fi_close(&dmr->fid);
		result(r_bottom < 0 && r_base < 0, "M18",
		       "registering [NULL, UINTPTR_MAX) and [base, UINTPTR_MAX) fails cleanly (%s / %s)",
		       r_bottom ? fi_strerror(-r_bottom) : "SUCCEEDED", r_base ? fi_strerror(-r_base) : "SUCCEEDED");
		free(win);
		free(src);
		free(dst);
	}

	/* M19: MPICH's NOPACK path: a noncontiguous send of up to 32 pieces goes out as one
	 * fi_tsendmsg iov list; the receive is an iov list too.  Eager and rendezvous sizes. */
	{
		int ok = 1;
		size_t blens[] = { 8, 64, 1024, 4096, 16384 };
		int counts[] = { 2, 7, 32 };
		for (unsigned bi = 0; bi < 5; bi++)
			for (unsigned ci = 0; ci < 3; ci++) {
				size_t bl = blens[bi];
				int n = counts[ci];
				size_t stride = 2 * bl + 8;
				unsigned char *s = malloc(stride * n), *r = malloc(stride * n + 64);
				memset(r, 0xEE, stride * n + 64);
				fill(s, stride * n, bi * 3 + ci);
				struct iovec siov[32], riov[32];
				/* receive side uses a different layout (stride + 16) */
				size_t rstride = bl + 16;
				for (int i = 0; i < n; i++) {
					siov[i] = (struct iovec){ s + i * stride, bl };
					riov[i] = (struct iovec){ r + i * rstride, bl };
				}
				struct fi_context2 rc, sc;
				struct fi_msg_tagged rm = { .msg_iov = riov, .iov_count = n, .addr = r0->addr,
							    .tag = 500, .context = &rc };
				struct fi_msg_tagged sm = { .msg_iov = siov, .iov_count = n, .addr = r1->addr,
							    .tag = 500, .context = &sc, .data = 1 };
				ret = fi_trecvmsg(r1->ep, &rm, FI_COMPLETION);
				if (!ret)
					ret = fi_tsendmsg(r0->ep, &sm, FI_COMPLETION | FI_REMOTE_CQ_DATA |
							  FI_DELIVERY_COMPLETE);
				struct ev e;
				int good = !ret && wait_ctx(w, 1, &rc, &e, 10) && !e.err &&
					   e.e.len == bl * n && wait_ctx(w, 0, &sc, NULL, 10);
				for (int i = 0; good && i < n; i++)
					good = !memcmp(r + i * rstride, s + i * stride, bl) &&
					       r[i * rstride + bl] == 0xEE;
				if (!good && ok)
					note("first failure: %d x %zu B (ret %d)", n, bl, ret);
				ok &= good;
				free(s);
				free(r);
			}
		char stats[160] = "statistics extension not available";
#ifdef HAVE_DDTX_H
		struct fi_ddtx_ops *ops = NULL;
		if (!fi_open_ops(&w->domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&ops, NULL) && ops) {
			struct fi_ddtx_stats st;
			ops->stats(w->domain, &st);
			snprintf(stats, sizeof(stats), "ddtx iov_entries_max %" PRIu64 ", eager %" PRIu64
				 " pack %" PRIu64 " sgl %" PRIu64 " umr %" PRIu64, st.iov_entries_max,
				 st.ops[FI_DDTX_SCHEME_EAGER], st.ops[FI_DDTX_SCHEME_PACK],
				 st.ops[FI_DDTX_SCHEME_SGL], st.ops[FI_DDTX_SCHEME_UMR]);
		}
#endif
		result(ok, "M19", "fi_tsendmsg/fi_trecvmsg iov lists of 2, 7, 32 pieces of 8 B..16 KiB "
		       "(different layouts each side, FI_DELIVERY_COMPLETE): data right; %s", stats);
		clear_events(w);
	}

	/* M20: large tagged messages (MPICH's rendezvous sizes) with FI_DELIVERY_COMPLETE. */
	{
		size_t sz = 8 << 20;
		unsigned char *s = malloc(sz), *r = calloc(1, sz);
		fill(s, sz, 77);
		struct fi_context2 rc, sc;
		ret = fi_trecv(r1->ep, r, sz, NULL, r0->addr, 900, 0, &rc);
		struct iovec iov = { s, sz };
		struct fi_msg_tagged sm = { .msg_iov = &iov, .iov_count = 1, .addr = r1->addr,
					    .tag = 900, .context = &sc };
		ret |= fi_tsendmsg(r0->ep, &sm, FI_COMPLETION | FI_DELIVERY_COMPLETE);
		struct ev e;
		int ok = !ret && wait_ctx(w, 1, &rc, &e, 20) && !e.err && wait_ctx(w, 0, &sc, NULL, 20) &&
			 !memcmp(s, r, sz);
		result(ok, "M20", "8 MiB tagged message with FI_DELIVERY_COMPLETE");
		free(s);
		free(r);
	}

out_w:
	teardown_world(w);
out:
	fi_freeinfo(final);
	fi_freeinfo(hints);
}

/* =============================================================================================
 * Open MPI 4.1 ofi MTL (and what its ofi BTL would need)
 */
static void check_ompi(void)
{
	uint32_t ver = FI_VERSION(1, 5);
	printf("== Open MPI 4.1 ofi MTL requirements (provider %s, API 1.5) ==\n", prov_name);
	for (int mt = 0; mt < 2; mt++) {
		struct fi_info *hints = fi_allocinfo(), *list = NULL, *prov;
		hints->mode = FI_CONTEXT | FI_CONTEXT2;
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
		hints->tx_attr->msg_order = FI_ORDER_SAS;
		hints->rx_attr->msg_order = FI_ORDER_SAS;
		hints->rx_attr->op_flags = FI_COMPLETION;
		hints->tx_attr->op_flags = FI_COMPLETION;
		hints->domain_attr->threading = mt ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
		hints->domain_attr->cq_data_size = sizeof(int);
		hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
		hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
		hints->domain_attr->av_type = FI_AV_MAP;
		hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
		int ret = fi_getinfo(ver, NULL, NULL, 0, hints, &list);
		prov = ret ? NULL : find_prov(list);
		if (!prov) {
			result(0, mt ? "O2" : "O1", "fi_getinfo(API 1.5, OMPI MTL hints, %s) lists %s: %s",
			       mt ? "FI_THREAD_SAFE" : "FI_THREAD_DOMAIN", prov_name,
			       ret ? fi_strerror(-ret) : "not in list");
			fi_freeinfo(hints);
			fi_freeinfo(list);
			continue;
		}
		uint64_t need = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
		int lead0 = prov->ep_attr->mem_tag_format ? __builtin_clzll(prov->ep_attr->mem_tag_format) : 64;
		if (!mt) {
			char avt[64];
			snprintf(avt, sizeof(avt), "%s", fi_tostr(&prov->domain_attr->av_type, FI_TYPE_AV_TYPE));
			result((prov->caps & need) == need && prov->domain_attr->av_type == FI_AV_MAP,
			       "O1", "fi_getinfo(API 1.5, caps TAGGED|LOCAL_COMM|REMOTE_COMM|DIRECTED_RECV, "
			       "AV_MAP, FI_THREAD_DOMAIN): caps ok %d, av_type %s, threading %s",
			       (prov->caps & need) == need, avt,
			       fi_tostr(&prov->domain_attr->threading, FI_TYPE_THREADING));
			result(lead0 == 0 && prov->domain_attr->cq_data_size >= 4 &&
			       (prov->caps & FI_DIRECTED_RECV), "O3",
			       "mem_tag_format 0x%016" PRIx64 " (%d leading zero bits: the MTL loses that "
			       "many CID bits), cq_data_size %zu -> ofi_tag_full mode (source rank in CQ data)",
			       prov->ep_attr->mem_tag_format, lead0, prov->domain_attr->cq_data_size);
			note("returned mr_mode 0x%x, mode 0x%" PRIx64 ", inject %zu, max_msg %zu",
			     prov->domain_attr->mr_mode, prov->mode, prov->tx_attr->inject_size,
			     prov->ep_attr->max_msg_size);
		} else {
			result(prov->domain_attr->threading == FI_THREAD_SAFE, "O2",
			       "MPI_THREAD_MULTIPLE hints (FI_THREAD_SAFE): threading %s",
			       fi_tostr(&prov->domain_attr->threading, FI_TYPE_THREADING));
		}
		if (mt) {
			fi_freeinfo(hints);
			fi_freeinfo(list);
			continue;
		}
		/* Objects and the operations of the MTL: AV map, 64-bit tags with the MTL's full
		 * layout, source rank in CQ data, directed receives, probe, cancel. */
		struct fi_info *info = fi_dupinfo(prov);
		fi_freeinfo(list);
		fi_freeinfo(hints);
		struct world W, *w = &W;
		ret = setup_world(w, info, FI_AV_MAP, FI_CQ_FORMAT_TAGGED, FI_SEND | FI_RECV, 0);
		result(ret == 0, "O4", "fabric, domain, AV_MAP, tagged CQ, endpoint: %s",
		       ret ? fi_strerror(-ret) : "ok");
		if (ret) {
			teardown_world(w);
			fi_freeinfo(info);
			continue;
		}
		struct rank *r0 = &w->r[0], *r1 = &w->r[1];
		int ok = 1, n = 0;
		uint64_t tags[] = { 0, 1, 0x8000000000000000ULL, 0xFFFFFFFFFFFFFFFFULL,
				    0x0123456789ABCDEFULL, 0x7FFFFFFFFFFFFFFFULL };
		for (unsigned i = 0; i < 6; i++) {
			char sb[32], rb[32];
			fill((unsigned char *)sb, sizeof(sb), i);
			struct fi_context2 rc, sc;
			struct ev e;
			ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL, r0->addr, tags[i], 0, &rc);
			ret |= fi_tsenddata(r0->ep, sb, sizeof(sb), NULL, 1 /* rank */, r1->addr, tags[i], &sc);
			int good = !ret && wait_ctx(w, 1, &rc, &e, 5) && !e.err && e.e.tag == tags[i] &&
				   (e.e.flags & FI_REMOTE_CQ_DATA) && e.e.data == 1 &&
				   !memcmp(sb, rb, sizeof(sb)) && wait_ctx(w, 0, &sc, NULL, 5);
			ok &= good;
			n++;
		}
		/* all-ones ignore mask matches anything */
		{
			char sb[8] = "abc", rb[8];
			struct fi_context2 rc, sc;
			ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, 0, ~0ULL, &rc);
			ret |= fi_tsenddata(r0->ep, sb, sizeof(sb), NULL, 1, r1->addr, 0xDEADBEEFCAFEF00DULL, &sc);
			struct ev e;
			ok &= !ret && wait_ctx(w, 1, &rc, &e, 5) && e.e.tag == 0xDEADBEEFCAFEF00DULL &&
			      wait_ctx(w, 0, &sc, NULL, 5);
		}
		result(ok, "O5", "%d tagged messages using all 64 tag bits (bit 63 included), source "
		       "rank in 4-byte CQ data, directed receives on AV_MAP addresses, all-ones ignore", n);
		/* probe and cancel as the MTL uses them */
		{
			char rb[8];
			struct fi_context2 pc, rc;
			struct fi_msg_tagged pm = { .addr = FI_ADDR_UNSPEC, .tag = 4242, .context = &pc };
			ret = fi_trecvmsg(r1->ep, &pm, FI_PEEK | FI_COMPLETION);
			struct ev e;
			int nf = ret == -FI_ENOMSG || (!ret && wait_ctx(w, 1, &pc, &e, 5) && e.err == FI_ENOMSG);
			ret = fi_trecv(r1->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, 4243, 0, &rc);
			fi_cancel(&r1->ep->fid, &rc);
			int cn = !ret && wait_ctx(w, 1, &rc, &e, 5) && e.err == FI_ECANCELED;
			result(nf && cn, "O6", "FI_PEEK without a match -> FI_ENOMSG (%d), fi_cancel -> "
			       "FI_ECANCELED (%d)", nf, cn);
		}
		teardown_world(w);
		fi_freeinfo(info);
	}
	/* O7: the ofi BTL (one-sided) would need FI_RMA | FI_ATOMIC. */
	{
		struct fi_info *hints = fi_allocinfo(), *list = NULL;
		hints->caps = FI_RMA | FI_ATOMIC;
		hints->ep_attr->type = FI_EP_RDM;
		hints->fabric_attr->prov_name = strdup(prov_name);
		int ret = fi_getinfo(ver, NULL, NULL, 0, hints, &list);
		printf("INFO O7   Open MPI's ofi BTL (FI_RMA|FI_ATOMIC): %s (not required: the osc "
		       "component falls back to point-to-point)\n",
		       ret ? "not offered" : "offered");
		fi_freeinfo(list);
		fi_freeinfo(hints);
	}
}

int main(int argc, char **argv)
{
	const char *what = "all";
	prov_name = getenv("FI_PROVIDER");
	if (!prov_name || !*prov_name)
		prov_name = "ddtx";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-p") && i + 1 < argc)
			prov_name = argv[++i];
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: consumer_check [-p PROV] [mpich|ompi|all]\n");
			return 0;
		} else
			what = argv[i];
	}
	if (!strcmp(what, "mpich") || !strcmp(what, "all"))
		check_mpich();
	if (!strcmp(what, "ompi") || !strcmp(what, "all"))
		check_ompi();
	printf("consumer_check: %d failure(s)\n", failures);
	return failures > 100 ? 100 : failures;
}
