/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Object semantics: fi_getinfo answers, AV table and map (insert/remove/lookup/straddr and use,
 * garbage addresses refused at insert),
 * named AV refusal, CQ formats (entry layout and stride), readfrom (also FI_ADDR_NOTAVAIL),
 * sread/sreadfrom with timeouts and wake-ups, fi_cq_signal, progress under a CQ that does not
 * empty, counters (add/set/err/wait),
 * close order (-FI_EBUSY), fi_enable without AV or CQ, FI_THREAD_SAFE with 4 threads per rank
 * sending and receiving concurrently on one endpoint, FI_THREAD_DOMAIN.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fx.h"

#define TMO 20000

static struct fi_info *getinfo_or_die(const struct fx_opts *o)
{
	struct fi_info *info = NULL;
	int ret = fx_getinfo(o, &info);
	FT_CHECK(ret == 0 && info, "fi_getinfo: %s", fi_strerror(-ret));
	return info;
}

/* ---- fi_getinfo ----------------------------------------------------------------------- */

static int t_getinfo(struct ft_ctx *ctx, void *arg)
{
	const uint64_t want = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
			      FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV;
	struct fx_opts o = {.caps = want};
	struct fi_info *info = getinfo_or_die(&o);
	FT_CHECK((info->caps & want) == want, "caps 0x%llx lack 0x%llx",
		 (unsigned long long)info->caps, (unsigned long long)(want & ~info->caps));
	FT_CHECK(info->ep_attr->type == FI_EP_RDM, "ep type %d", info->ep_attr->type);
	FT_CHECK(info->tx_attr->iov_limit >= 1024, "tx iov_limit %zu", info->tx_attr->iov_limit);
	FT_CHECK(info->rx_attr->iov_limit >= 1024, "rx iov_limit %zu", info->rx_attr->iov_limit);
	FT_CHECK(info->tx_attr->rma_iov_limit >= 1024, "rma_iov_limit %zu",
		 info->tx_attr->rma_iov_limit);
	FT_CHECK(info->tx_attr->inject_size >= 4096, "inject_size %zu", info->tx_attr->inject_size);
	FT_CHECK(info->domain_attr->cq_data_size >= 8, "cq_data_size %zu",
		 info->domain_attr->cq_data_size);
	FT_CHECK(info->ep_attr->max_msg_size >= (256u << 20), "max_msg_size %zu",
		 info->ep_attr->max_msg_size);
	FT_CHECK(!strcmp(info->fabric_attr->prov_name, "ddtx"), "prov_name %s",
		 info->fabric_attr->prov_name);
	fi_freeinfo(info);

	/* NULL hints list ddtx */
	struct fi_info *all = NULL, *p;
	FT_CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &all) == 0, "NULL hints");
	bool found = false;
	for (p = all; p; p = p->next)
		if (p->fabric_attr->prov_name && !strcmp(p->fabric_attr->prov_name, "ddtx"))
			found = true;
	fi_freeinfo(all);
	FT_CHECK(found, "fi_getinfo(NULL hints) does not list ddtx");

	/* hinted values are echoed */
	static const enum fi_threading th[] = {FI_THREAD_DOMAIN, FI_THREAD_SAFE};
	for (int i = 0; i < 2; i++) {
		struct fx_opts t = {.threading = th[i], .av_type = i ? FI_AV_MAP : FI_AV_TABLE};
		info = getinfo_or_die(&t);
		FT_CHECK(info->domain_attr->threading == th[i], "threading %d, hinted %d",
			 info->domain_attr->threading, th[i]);
		FT_CHECK(info->domain_attr->av_type == t.av_type, "av_type %d, hinted %d",
			 info->domain_attr->av_type, t.av_type);
		fi_freeinfo(info);
	}

	/* what it cannot provide: -FI_ENODATA */
	struct fi_info *h;
	struct fx_opts base = {0};
	h = fx_hints(&base);
	h->caps |= FI_TRIGGER;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	FT_CHECK(ret == -FI_ENODATA, "FI_TRIGGER: %d (%s), want -FI_ENODATA", ret, fi_strerror(-ret));
	fi_freeinfo(h);
	h = fx_hints(&base);
	h->ep_attr->type = FI_EP_MSG;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	FT_CHECK(ret == -FI_ENODATA, "FI_EP_MSG: %d (%s), want -FI_ENODATA", ret, fi_strerror(-ret));
	fi_freeinfo(h);
	h = fx_hints(&base);
	h->tx_attr->iov_limit = 1u << 20;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	FT_CHECK(ret == -FI_ENODATA, "iov_limit 1M: %d (%s), want -FI_ENODATA", ret,
		 fi_strerror(-ret));
	fi_freeinfo(h);
	h = fx_hints(&base);
	h->domain_attr->cq_data_size = 16;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	FT_CHECK(ret == -FI_ENODATA, "cq_data_size 16: %d (%s), want -FI_ENODATA", ret,
		 fi_strerror(-ret));
	fi_freeinfo(h);
	return 0;
}

/* ---- AV table / map ----------------------------------------------------------------------- */

static int t_av(struct ft_ctx *ctx, void *arg)
{
	enum fi_av_type type = (enum fi_av_type)(intptr_t)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED, .av_type = type};
	fx_open(ctx, &o, &fx);
	FT_CHECK(fx.info->domain_attr->av_type == type, "av_type %d", fx.info->domain_attr->av_type);
	uint8_t name[FT_XCHG_MAX] = {0};
	size_t nlen = sizeof(name);
	FT_CHECK(fi_getname(&fx.ep->fid, name, &nlen) == 0, "fi_getname");
	FT_CHECK(nlen > 0 && nlen <= FT_XCHG_MAX, "name length %zu", nlen);
	/* fi_getname with a short buffer reports the size */
	size_t small = 1;
	uint8_t tiny[1];
	int ret = fi_getname(&fx.ep->fid, tiny, &small);
	FT_CHECK(ret == -FI_ETOOSMALL && small == nlen, "fi_getname(1 byte): %d, len %zu", ret,
		 small);
	uint8_t *names = malloc((size_t)ctx->size * FT_XCHG_MAX);
	ft_allgather(ctx, name, FT_XCHG_MAX, names);

	if (ctx->rank == 0) {
		/* a second AV of the same type: batch insert, lookup, straddr, remove */
		struct fi_av_attr aa = {.type = type};
		struct fid_av *av;
		FT_CHECK(fi_av_open(fx.domain, &aa, &av, NULL) == 0, "fi_av_open");
		uint8_t *batch = malloc((size_t)ctx->size * nlen);
		for (int r = 0; r < ctx->size; r++)
			memcpy(batch + (size_t)r * nlen, names + (size_t)r * FT_XCHG_MAX, nlen);
		fi_addr_t fa[8];
		ret = fi_av_insert(av, batch, (size_t)ctx->size, fa, 0, NULL);
		FT_CHECK(ret == ctx->size, "fi_av_insert of %d: %d", ctx->size, ret);
		for (int r = 0; r < ctx->size; r++) {
			if (type == FI_AV_TABLE)
				FT_CHECK(fa[r] == (fi_addr_t)r, "AV table: fi_addr %llu for index %d",
					 (unsigned long long)fa[r], r);
			for (int q = 0; q < r; q++)
				FT_CHECK(fa[q] != fa[r], "duplicate fi_addr");
			uint8_t back[FT_XCHG_MAX];
			size_t blen = sizeof(back);
			ret = fi_av_lookup(av, fa[r], back, &blen);
			FT_CHECK(ret == 0, "fi_av_lookup: %s", fi_strerror(-ret));
			FT_CHECK(blen == nlen && !memcmp(back, batch + (size_t)r * nlen, nlen),
				 "fi_av_lookup returned another address (len %zu)", blen);
			/* short buffer: size reported */
			size_t one = 1;
			ret = fi_av_lookup(av, fa[r], back, &one);
			FT_CHECK(one == nlen, "fi_av_lookup with a short buffer: len %zu ret %d", one,
				 ret);
			char str[256] = "";
			size_t slen = sizeof(str);
			const char *s = fi_av_straddr(av, back, str, &slen);
			FT_CHECK(s && strlen(s) > 0 && slen > 0, "fi_av_straddr");
		}
		/* two endpoints' strings differ */
		char s0[256], s1[256];
		size_t l0 = sizeof(s0), l1 = sizeof(s1);
		fi_av_straddr(av, batch, s0, &l0);
		fi_av_straddr(av, batch + nlen, s1, &l1);
		FT_CHECK(strcmp(s0, s1), "straddr of two endpoints equal: %s", s0);
		ret = fi_av_remove(av, &fa[1], 1, 0);
		FT_CHECK(ret == 0, "fi_av_remove: %s", fi_strerror(-ret));
		uint8_t back[FT_XCHG_MAX];
		size_t blen = sizeof(back);
		ret = fi_av_lookup(av, fa[1], back, &blen);
		FT_CHECK(ret < 0, "fi_av_lookup of a removed address succeeded");
		blen = sizeof(back);
		FT_CHECK(fi_av_lookup(av, fa[2], back, &blen) == 0, "others still there");
		/* insert with NULL fi_addr is allowed for a table */
		if (type == FI_AV_TABLE) {
			ret = fi_av_insert(av, batch, 1, NULL, 0, NULL);
			FT_CHECK(ret == 1, "fi_av_insert(fi_addr NULL): %d", ret);
		}
		FT_CHECK(fi_close(&av->fid) == 0, "closing the second AV");
		free(batch);

		/* on the bound AV: remove rank 2, sends to it fail; rank 1 still reachable;
		 * reinsert rank 2 and reach it under its new fi_addr */
		ret = fi_av_remove(fx.av, &fx.peers[2], 1, 0);
		FT_CHECK(ret == 0, "fi_av_remove(bound AV): %s", fi_strerror(-ret));
		uint8_t msg[100];
		fx_fill(msg, 100, 1, 0);
		ret = (int)fi_tsend(fx.ep, msg, 100, NULL, fx.peers[2], 2, msg);
		if (ret == 0) {
			struct fi_cq_err_entry e;
			fx_wait_err(&fx, &e, TMO);
		} else {
			FT_CHECK(ret < 0, "send to a removed address");
		}
		FX_OK(&fx, fi_tsend(fx.ep, msg, 100, NULL, fx.peers[1], 1, msg));
		fx_wait(&fx, 1, NULL, TMO);
		fi_addr_t again;
		ret = fi_av_insert(fx.av, names + 2 * FT_XCHG_MAX, 1, &again, 0, NULL);
		FT_CHECK(ret == 1, "re-insert: %d", ret);
		FX_OK(&fx, fi_tsend(fx.ep, msg, 100, NULL, again, 2, msg));
		fx_wait(&fx, 1, NULL, TMO);
	} else {
		struct fx_rbuf r;
		fx_rbuf_init(&r, 100);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, 100, NULL, FI_ADDR_UNSPEC, (uint64_t)ctx->rank, 0,
				    &r));
		struct fx_comp c;
		fx_wait(&fx, 1, &c, TMO);
		fx_rbuf_check(&r, 1, 100, "message through the AV");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	fx_expect_none(&fx, 50); /* rank 2 got only one message */
	free(names);
	fx_close(&fx);
	return 0;
}

/*
 * fi_av_insert of a batch mixing real and garbage addresses (fi_av(3), synchronous): the return
 * value counts only the real ones, each garbage entry gets FI_ADDR_NOTAVAIL and, with
 * FI_SYNC_ERR, -FI_EINVAL in the error array; the real ones are usable at once.  A refused
 * entry keeps its table index (a hole), so with FI_AV_TABLE the i-th address of a call is at
 * base + i even when fi_addr is NULL.  The garbage is wire-agnostic: random bytes, zeros, a
 * flipped magic (byte 0) and a changed version (byte 4), as both wires lay out their blobs.
 */
#define AVG_N 6
static void avg_blobs(uint8_t *batch, size_t nlen, const uint8_t *self, const uint8_t *peer,
		      bool *good)
{
	uint64_t rng = 0x6A7BA6E;
	for (int i = 0; i < AVG_N; i++) {
		uint8_t *b = batch + (size_t)i * nlen;
		good[i] = false;
		switch (i) {
		case 0: /* random bytes */
			for (size_t k = 0; k < nlen; k++)
				b[k] = (uint8_t)ft_rand(&rng);
			break;
		case 1:
			memcpy(b, peer, nlen);
			good[i] = true;
			break;
		case 2: /* zeros */
			memset(b, 0, nlen);
			break;
		case 3:
			memcpy(b, self, nlen);
			good[i] = true;
			break;
		case 4: /* magic flipped */
			memcpy(b, peer, nlen);
			b[0] ^= 0xff;
			break;
		default: /* version changed */
			memcpy(b, peer, nlen);
			b[4] ^= 0x7f;
			break;
		}
	}
}

static int t_av_garbage(struct ft_ctx *ctx, void *arg)
{
	enum fi_av_type type = (enum fi_av_type)(intptr_t)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED, .av_type = type};
	fx_open(ctx, &o, &fx);
	if (ctx->rank == 0) {
		uint8_t self[FT_XCHG_MAX], peer[FT_XCHG_MAX];
		size_t nlen = sizeof(self), plen = sizeof(peer);
		int ret;
		FT_CHECK(fi_getname(&fx.ep->fid, self, &nlen) == 0, "fi_getname");
		FT_CHECK(fi_av_lookup(fx.av, fx.peers[1], peer, &plen) == 0 && plen == nlen,
			 "fi_av_lookup of the peer");
		uint8_t *batch = malloc(AVG_N * nlen);
		bool good[AVG_N];
		avg_blobs(batch, nlen, self, peer, good);

		/* one garbage address alone: 0 inserted, FI_ADDR_NOTAVAIL */
		fi_addr_t one = 0;
		ret = fi_av_insert(fx.av, batch, 1, &one, 0, NULL);
		FT_CHECK(ret == 0 && one == FI_ADDR_NOTAVAIL,
			 "fi_av_insert of random bytes: %d, fi_addr %llu", ret,
			 (unsigned long long)one);
		/* FI_SYNC_ERR needs its array */
		ret = fi_av_insert(fx.av, batch, 1, &one, FI_SYNC_ERR, NULL);
		FT_CHECK(ret == -FI_EINVAL, "FI_SYNC_ERR with a NULL context: %d", ret);

		/* The bound AV: the real addresses leave it first, so the batch inserts them anew
		 * (an address already present would keep its old fi_addr). */
		fi_addr_t old[2] = {fx.peers[0], fx.peers[1]};
		FT_CHECK(fi_av_remove(fx.av, old, 2, 0) == 0, "fi_av_remove");
		fi_addr_t fa[AVG_N];
		int err[AVG_N];
		for (int i = 0; i < AVG_N; i++) {
			fa[i] = (fi_addr_t)0x5A5A;
			err[i] = 0x5A5A;
		}
		ret = fi_av_insert(fx.av, batch, AVG_N, fa, FI_SYNC_ERR, err);
		FT_CHECK(ret == 2, "fi_av_insert of 2 real and %d garbage addresses returned %d",
			 AVG_N - 2, ret);
		for (int i = 0; i < AVG_N; i++) {
			if (good[i]) {
				FT_CHECK(err[i] == 0 && fa[i] != FI_ADDR_NOTAVAIL,
					 "real address %d: error %d, fi_addr %llu", i, err[i],
					 (unsigned long long)fa[i]);
			} else {
				FT_CHECK(err[i] == -FI_EINVAL && fa[i] == FI_ADDR_NOTAVAIL,
					 "garbage address %d: error %d (want %d), fi_addr %llu", i,
					 err[i], -FI_EINVAL, (unsigned long long)fa[i]);
			}
		}
		if (type == FI_AV_TABLE)
			FT_CHECK(fa[3] == fa[1] + 2, "table indices not positional: %llu, %llu",
				 (unsigned long long)fa[1], (unsigned long long)fa[3]);
		uint8_t back[FT_XCHG_MAX];
		size_t blen = sizeof(back);
		FT_CHECK(fi_av_lookup(fx.av, fa[1], back, &blen) == 0 && blen == nlen &&
			 !memcmp(back, peer, nlen), "fi_av_lookup of the re-inserted peer");

		/* The real entries work: a message to the peer and one to ourselves. */
		struct fx_rbuf r;
		fx_rbuf_init(&r, 3000);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, 3000, NULL, FI_ADDR_UNSPEC, 0xA0, 0, &r));
		uint8_t m1[3000], m0[3000];
		fx_fill(m1, sizeof(m1), 0xA1, 0);
		fx_fill(m0, sizeof(m0), 0xA0, 0);
		FX_OK(&fx, fi_tsend(fx.ep, m1, sizeof(m1), NULL, fa[1], 0xA1, m1));
		FX_OK(&fx, fi_tsend(fx.ep, m0, sizeof(m0), NULL, fa[3], 0xA0, m0));
		fx_wait(&fx, 3, NULL, TMO);
		fx_rbuf_check(&r, 0xA0, 3000, "message to ourselves through a re-inserted address");
		fx_rbuf_free(&r);

		/* A second AV, fi_addr NULL (table only) or given, FI_SYNC_ERR. */
		struct fi_av_attr aa = {.type = type};
		struct fid_av *av;
		FT_CHECK(fi_av_open(fx.domain, &aa, &av, NULL) == 0, "fi_av_open");
		for (int i = 0; i < AVG_N; i++)
			err[i] = 0x5A5A;
		ret = fi_av_insert(av, batch, AVG_N, type == FI_AV_TABLE ? NULL : fa, FI_SYNC_ERR,
				   err);
		FT_CHECK(ret == 2, "second AV: fi_av_insert returned %d", ret);
		for (int i = 0; i < AVG_N; i++) {
			FT_CHECK(err[i] == (good[i] ? 0 : -FI_EINVAL), "second AV: error %d of %d",
				 i, err[i]);
			fi_addr_t at = type == FI_AV_TABLE ? (fi_addr_t)i : fa[i];
			blen = sizeof(back);
			ret = at == FI_ADDR_NOTAVAIL ? -FI_EINVAL : fi_av_lookup(av, at, back, &blen);
			FT_CHECK(good[i] ? ret == 0 && !memcmp(back, batch + (size_t)i * nlen, nlen)
					 : ret < 0,
				 "second AV: fi_av_lookup of entry %d: %d", i, ret);
		}
		/* without FI_SYNC_ERR: the count and fi_addr alone */
		fi_addr_t fb[AVG_N];
		ret = fi_av_insert(av, batch, AVG_N, fb, 0, NULL);
		FT_CHECK(ret == 2, "second AV, no FI_SYNC_ERR: %d", ret);
		for (int i = 0; i < AVG_N; i++)
			FT_CHECK((fb[i] == FI_ADDR_NOTAVAIL) == !good[i], "second AV: fi_addr %d", i);
		FT_CHECK(fi_close(&av->fid) == 0, "closing the second AV");
		free(batch);
	} else {
		struct fx_rbuf r;
		fx_rbuf_init(&r, 3000);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, 3000, NULL, FI_ADDR_UNSPEC, 0xA1, 0, &r));
		fx_wait(&fx, 1, NULL, TMO);
		fx_rbuf_check(&r, 0xA1, 3000, "message through a re-inserted address");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

static int t_named_av(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &(struct fx_opts){0}, &fx);
	static const uint64_t flags[] = {0, FI_READ};
	for (int i = 0; i < 2; i++) {
		struct fi_av_attr aa = {.type = FI_AV_TABLE, .name = "FI_NAMED_AV_0", .flags = flags[i]};
		struct fid_av *av = NULL;
		int ret = fi_av_open(fx.domain, &aa, &av, NULL);
		FT_CHECK(ret != 0, "fi_av_open of a named AV (flags 0x%llx) succeeded",
			 (unsigned long long)flags[i]);
	}
	fx_close(&fx);
	return 0;
}

/* ---- CQ formats --------------------------------------------------------------------------- */

static int t_cq_formats(struct ft_ctx *ctx, void *arg)
{
	static const enum fi_cq_format fmts[] = {FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
						  FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED};
	static const char *names[] = {"context", "msg", "data", "tagged"};
	for (int f = 0; f < 4; f++) {
		struct fx fx;
		struct fx_opts o = {.caps = FI_MSG | FI_TAGGED, .cq_format = fmts[f]};
		fx_open(ctx, &o, &fx);
		const size_t len[2] = {777, 40000};
		const uint64_t tag[2] = {0x1111, 0x2222};
		const uint64_t data[2] = {0xAAAA, 0xBBBB};
		union {
			struct fi_cq_entry c[2];
			struct fi_cq_msg_entry m[2];
			struct fi_cq_data_entry d[2];
			struct fi_cq_tagged_entry t[2];
		} e;
		memset(&e, 0xff, sizeof(e));
		uint8_t *b[2];
		struct fx_rbuf r[2];
		if (ctx->rank == 0) {
			for (int i = 0; i < 2; i++) {
				b[i] = fx_alloc(len[i]);
				fx_fill(b[i], len[i], 10 + i, 0);
				FX_OK(&fx, fi_tsenddata(fx.ep, b[i], len[i], NULL, data[i],
							fx.peers[1], tag[i], b[i]));
			}
		} else {
			for (int i = 0; i < 2; i++) {
				fx_rbuf_init(&r[i], len[i]);
				FX_OK(&fx, fi_trecv(fx.ep, r[i].buf, len[i], NULL, FI_ADDR_UNSPEC,
						    tag[i], 0, &r[i]));
			}
		}
		/* read both entries with as few calls as possible into a 2-entry array */
		size_t got = 0;
		double t0 = ft_now();
		while (got < 2) {
			ssize_t n;
			switch (fmts[f]) {
			case FI_CQ_FORMAT_CONTEXT: n = fi_cq_read(fx.cq, &e.c[got], 2 - got); break;
			case FI_CQ_FORMAT_MSG: n = fi_cq_read(fx.cq, &e.m[got], 2 - got); break;
			case FI_CQ_FORMAT_DATA: n = fi_cq_read(fx.cq, &e.d[got], 2 - got); break;
			default: n = fi_cq_read(fx.cq, &e.t[got], 2 - got); break;
			}
			if (n > 0)
				got += (size_t)n;
			else
				FT_CHECK(n == -FI_EAGAIN, "%s: fi_cq_read: %zd", names[f], n);
			FT_CHECK(ft_now() - t0 < 20, "%s: timed out", names[f]);
		}
		for (int i = 0; i < 2; i++) {
			void *want_ctx = ctx->rank == 0 ? (void *)b[i] : (void *)&r[i];
			void *c = fmts[f] == FI_CQ_FORMAT_CONTEXT ? e.c[i].op_context
				  : fmts[f] == FI_CQ_FORMAT_MSG   ? e.m[i].op_context
				  : fmts[f] == FI_CQ_FORMAT_DATA  ? e.d[i].op_context
								  : e.t[i].op_context;
			/* eager and rendezvous may complete in either order */
			if (c != want_ctx) {
				void *other = ctx->rank == 0 ? (void *)b[1 - i] : (void *)&r[1 - i];
				FT_CHECK(c == other, "%s format: entry %d context %p, want %p (stride?)",
					 names[f], i, c, want_ctx);
			}
			int k = c == want_ctx ? i : 1 - i;
			if (fmts[f] == FI_CQ_FORMAT_CONTEXT)
				continue;
			uint64_t flags = fmts[f] == FI_CQ_FORMAT_MSG ? e.m[i].flags
					 : fmts[f] == FI_CQ_FORMAT_DATA ? e.d[i].flags
									: e.t[i].flags;
			size_t l = fmts[f] == FI_CQ_FORMAT_MSG ? e.m[i].len
				   : fmts[f] == FI_CQ_FORMAT_DATA ? e.d[i].len
								  : e.t[i].len;
			uint64_t want_flags = ctx->rank == 0 ? (FI_SEND | FI_TAGGED)
							     : (FI_RECV | FI_TAGGED);
			FT_CHECK((flags & want_flags) == want_flags, "%s format: flags 0x%llx", names[f],
				 (unsigned long long)flags);
			if (ctx->rank == 1) {
				FT_CHECK(l == len[k], "%s format: len %zu want %zu", names[f], l, len[k]);
				if (fmts[f] != FI_CQ_FORMAT_MSG) {
					uint64_t d = fmts[f] == FI_CQ_FORMAT_DATA ? e.d[i].data
										  : e.t[i].data;
					FT_CHECK(d == data[k] && (flags & FI_REMOTE_CQ_DATA),
						 "%s format: data 0x%llx", names[f],
						 (unsigned long long)d);
				}
				if (fmts[f] == FI_CQ_FORMAT_TAGGED)
					FT_CHECK(e.t[i].tag == tag[k], "tagged format: tag 0x%llx",
						 (unsigned long long)e.t[i].tag);
			}
		}
		if (ctx->rank == 0) {
			free(b[0]);
			free(b[1]);
		} else {
			fx_rbuf_check(&r[0], 10, len[0], "cq format");
			fx_rbuf_check(&r[1], 11, len[1], "cq format");
			fx_rbuf_free(&r[0]);
			fx_rbuf_free(&r[1]);
		}
		fx_pbarrier(ctx, &fx);
		fx_close(&fx);
	}
	return 0;
}

/* ---- fi_cq_readfrom: FI_ADDR_NOTAVAIL for a sender not in the AV ------------------------- */

static int t_readfrom(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_SOURCE};
	fx_open(ctx, &o, &fx);
	if (ctx->rank == 0) {
		FT_CHECK(fi_av_remove(fx.av, &fx.peers[2], 1, 0) == 0, "fi_av_remove");
		struct fx_rbuf r[2];
		for (int i = 0; i < 2; i++) {
			fx_rbuf_init(&r[i], 64);
			FX_OK(&fx, fi_recv(fx.ep, r[i].buf, 64, NULL, FI_ADDR_UNSPEC, &r[i]));
		}
		fx_pbarrier(ctx, &fx);
		struct fx_comp c[2];
		fx_wait(&fx, 2, c, TMO);
		for (int i = 0; i < 2; i++) {
			uint8_t first = ((struct fx_rbuf *)c[i].op_context)->buf[0];
			int from = first == ft_pattern(21, 0) ? 1 : 2;
			fx_rbuf_check(c[i].op_context, 20 + (uint64_t)from, 64, "readfrom payload");
			if (from == 1)
				FT_CHECK(c[i].src == fx.peers[1], "src_addr %llu want %llu",
					 (unsigned long long)c[i].src,
					 (unsigned long long)fx.peers[1]);
			else
				FT_CHECK(c[i].src == FI_ADDR_NOTAVAIL,
					 "sender not in the AV: src_addr %llu, want FI_ADDR_NOTAVAIL",
					 (unsigned long long)c[i].src);
		}
		fx_rbuf_free(&r[0]);
		fx_rbuf_free(&r[1]);
	} else {
		fx_pbarrier(ctx, &fx);
		uint8_t b[64];
		fx_fill(b, 64, 20 + (uint64_t)ctx->rank, 0);
		FX_OK(&fx, fi_send(fx.ep, b, 64, NULL, fx.peers[0], b));
		fx_wait(&fx, 1, NULL, TMO);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- fi_cq_sread / sreadfrom -------------------------------------------------------------- */

static int t_sread(struct ft_ctx *ctx, void *arg)
{
	enum fi_wait_obj wo = (enum fi_wait_obj)(intptr_t)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_SOURCE, .wait_obj = wo};
	fx_open(ctx, &o, &fx);
	if (ctx->rank == 1) {
		struct fi_cq_tagged_entry e;
		double t0 = ft_now();
		ssize_t n = fi_cq_sread(fx.cq, &e, 1, NULL, 300);
		double dt = ft_now() - t0;
		FT_CHECK(n == -FI_EAGAIN, "fi_cq_sread on an empty CQ returned %zd (%s)", n,
			 fi_strerror((int)-n));
		FT_CHECK(dt >= 0.28 && dt < 2.0, "fi_cq_sread(300 ms) returned after %.3f s", dt);
		fi_addr_t src;
		t0 = ft_now();
		n = fi_cq_sreadfrom(fx.cq, &e, 1, &src, NULL, 100);
		dt = ft_now() - t0;
		FT_CHECK(n == -FI_EAGAIN && dt >= 0.09 && dt < 2.0,
			 "fi_cq_sreadfrom(100 ms): %zd after %.3f s", n, dt);
		struct fx_rbuf r;
		fx_rbuf_init(&r, 50000);
		FX_OK(&fx, fi_recv(fx.ep, r.buf, 50000, NULL, FI_ADDR_UNSPEC, &r));
		fx_pbarrier(ctx, &fx);
		/* the sender waits 200 ms; sread must return when the message is in */
		t0 = ft_now();
		n = fi_cq_sreadfrom(fx.cq, &e, 1, &src, NULL, 10000);
		dt = ft_now() - t0;
		FT_CHECK(n == 1, "fi_cq_sreadfrom: %zd (%s)", n, fi_strerror((int)-n));
		FT_CHECK(dt < 3.0, "fi_cq_sreadfrom returned after %.3f s", dt);
		FT_CHECK(e.op_context == &r && e.len == 50000, "sread entry ctx %p len %zu",
			 e.op_context, e.len);
		FT_CHECK(src == fx.peers[0], "sreadfrom src %llu", (unsigned long long)src);
		fx_rbuf_check(&r, 31, 50000, "message read with sread");
		fx_rbuf_free(&r);
		/* infinite timeout (-1) also returns on a completion */
		fx_pbarrier(ctx, &fx);
		fx_rbuf_init(&r, 10);
		FX_OK(&fx, fi_recv(fx.ep, r.buf, 10, NULL, FI_ADDR_UNSPEC, &r));
		fx_pbarrier(ctx, &fx);
		n = fi_cq_sread(fx.cq, &e, 1, NULL, -1);
		FT_CHECK(n == 1 && e.op_context == &r, "sread(-1): %zd", n);
		fx_rbuf_free(&r);
	} else {
		uint8_t *b = fx_alloc(50000);
		fx_fill(b, 50000, 31, 0);
		fx_pbarrier(ctx, &fx);
		usleep(200000);
		FX_OK(&fx, fi_send(fx.ep, b, 50000, NULL, fx.peers[1], b));
		/* rendezvous: the receiver's sread must drive it; wait with sread here too */
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_sread(fx.cq, &e, 1, NULL, 10000);
		FT_CHECK(n == 1 && e.op_context == b, "sender sread: %zd", n);
		fx_pbarrier(ctx, &fx);
		fx_pbarrier(ctx, &fx);
		usleep(100000);
		FX_OK(&fx, fi_send(fx.ep, b, 10, NULL, fx.peers[1], b));
		n = fi_cq_sread(fx.cq, &e, 1, NULL, 10000);
		FT_CHECK(n == 1, "sender sread: %zd", n);
		free(b);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- fi_cq_signal wakes a thread blocked in fi_cq_sread ----------------------------------- */

struct sig_arg {
	struct fid_cq *cq;
	ssize_t ret;
	double dt;
};
static void *sread_thread(void *p)
{
	struct sig_arg *a = p;
	struct fi_cq_tagged_entry e;
	double t0 = ft_now();
	a->ret = fi_cq_sread(a->cq, &e, 1, NULL, 10000);
	a->dt = ft_now() - t0;
	return NULL;
}

/* ---- a CQ that does not empty still progresses ------------------------------------------ */

/*
 * fi_cq_read returns waiting completions without progressing first (core/cq.c), but not for
 * long.  Rank 0 holds CQ_FILL send completions, waits (making no call) until rank 1 has sent
 * it a message, then reads its CQ one entry at a time and, for the first CQ_MORE reads, posts
 * one more send after each: its CQ does not empty while it posts.  The CQ is a FIFO, so the
 * receive completion's place among the send completions says when progress found the
 * message: it must come before the last send's, not only once the CQ ran dry.  CQ_FILL +
 * CQ_MORE stay below a shm ring's 64 slots: on the shm wire a post never finds the way to
 * rank 1 full (which progresses too).
 */
#define CQ_FILL 8
#define CQ_MORE 32
static int t_cq_never_empty(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED};
	fx_open(ctx, &o, &fx);
	uint64_t in = 0, out = 0x5eed, warm = 0;
	if (ctx->rank == 0) {
		/* a first message both ways: whatever a route needs (a connection) is set up */
		FX_OK(&fx, fi_trecv(fx.ep, &warm, sizeof warm, NULL, fx.peers[1], 6, 0, &warm));
		fx_wait(&fx, 1, NULL, TMO);
		FX_OK(&fx, fi_trecv(fx.ep, &in, sizeof in, NULL, fx.peers[1], 7, 0, &in));
		for (int i = 0; i < CQ_FILL; i++)
			FX_OK(&fx, fi_tsend(fx.ep, &out, sizeof out, NULL, fx.peers[1], 9, &out));
		atomic_store(&fx_sh->flag[0], 1);
		while (!atomic_load(&fx_sh->flag[1]))
			; /* no call into the provider: rank 1's message waits for our progress */
		size_t reads = 0, sends = 0, at = 0, owed = 0;
		/* a post that had to wait took completions into the stash (FX_POST) */
		const size_t total = CQ_FILL + CQ_MORE - fx.stash_count;
		double t0 = ft_now();
		for (;;) {
			struct fi_cq_tagged_entry e;
			ssize_t n = fi_cq_read(fx.cq, &e, 1);
			if (n == 1 && e.op_context == &in) {
				at = sends + 1;
			} else if (n == 1) {
				FT_CHECK(e.op_context == &out, "completion of context %p",
					 e.op_context);
				sends++;
			} else {
				FT_CHECK(n == -FI_EAGAIN, "fi_cq_read: %zd (%s)", n,
					 fi_strerror((int)-n));
				if (at && sends == total)
					break;
			}
			if (n == 1 && ++reads <= CQ_MORE)
				owed++;
			/* the ofi wire's ring to rank 1 has 16 slots: a post may wait for credits */
			while (owed) {
				ssize_t r = fi_tsend(fx.ep, &out, sizeof out, NULL, fx.peers[1], 9, &out);
				if (r == -FI_EAGAIN)
					break;
				FT_CHECK(r == 0, "fi_tsend: %zd (%s)", r, fi_strerror((int)-r));
				owed--;
			}
			FT_CHECK(ft_now() - t0 < 60, "%zu of %zu send completions after 60 s", sends,
				 total);
		}
		FT_CHECK(in == 0xabc, "received %#llx", (unsigned long long)in);
		FT_CHECK(at <= sends, "the receive completion came after all %zu send completions: "
			 "no progress while the CQ held completions", sends);
		printf("rank 0: the receive completion after %zu of %zu send completions\n", at - 1,
		       sends);
	} else {
		warm = 1;
		FX_OK(&fx, fi_tsend(fx.ep, &warm, sizeof warm, NULL, fx.peers[0], 6, &warm));
		fx_wait(&fx, 1, NULL, TMO);
		while (!atomic_load(&fx_sh->flag[0]))
			fx_progress(&fx);
		in = 0xabc;
		FX_OK(&fx, fi_tsend(fx.ep, &in, sizeof in, NULL, fx.peers[0], 7, &in));
		atomic_store(&fx_sh->flag[1], 1);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

static int t_cq_signal(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.wait_obj = FI_WAIT_UNSPEC, .threading = FI_THREAD_SAFE};
	fx_open(ctx, &o, &fx);
	struct sig_arg a = {.cq = fx.cq};
	pthread_t th;
	pthread_create(&th, NULL, sread_thread, &a);
	usleep(300000);
	int ret = fi_cq_signal(fx.cq);
	FT_CHECK(ret == 0, "fi_cq_signal: %s", fi_strerror(-ret));
	pthread_join(th, NULL);
	FT_CHECK(a.ret < 0 && a.ret != -FI_EAVAIL, "signalled sread returned %zd", a.ret);
	FT_CHECK(a.dt < 3.0, "fi_cq_sread returned %.3f s after start, fi_cq_signal came at 0.3 s",
		 a.dt);
	fx_close(&fx);
	return 0;
}

/* ---- counters ----------------------------------------------------------------------------- */

struct add_arg {
	struct fid_cntr *c;
};
static void *add_later(void *p)
{
	struct add_arg *a = p;
	usleep(200000);
	fi_cntr_add(a->c, 10);
	return NULL;
}

static int t_cntr(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.threading = FI_THREAD_SAFE};
	fx_open(ctx, &o, &fx);
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
	struct fid_cntr *c;
	FT_CHECK(fi_cntr_open(fx.domain, &ca, &c, NULL) == 0, "fi_cntr_open");
	FT_CHECK(fi_cntr_read(c) == 0 && fi_cntr_readerr(c) == 0, "counter not zero at open");
	FT_CHECK(fi_cntr_add(c, 5) == 0 && fi_cntr_read(c) == 5, "add 5 -> %llu",
		 (unsigned long long)fi_cntr_read(c));
	FT_CHECK(fi_cntr_set(c, 2) == 0 && fi_cntr_read(c) == 2, "set 2 -> %llu",
		 (unsigned long long)fi_cntr_read(c));
	FT_CHECK(fi_cntr_adderr(c, 3) == 0 && fi_cntr_readerr(c) == 3, "adderr 3 -> %llu",
		 (unsigned long long)fi_cntr_readerr(c));
	FT_CHECK(fi_cntr_seterr(c, 0) == 0 && fi_cntr_readerr(c) == 0, "seterr 0");
	FT_CHECK(fi_cntr_read(c) == 2, "error ops changed the value");
	double t0 = ft_now();
	int ret = fi_cntr_wait(c, 2, 1000);
	FT_CHECK(ret == 0 && ft_now() - t0 < 0.5, "wait for a reached value: %d", ret);
	t0 = ft_now();
	ret = fi_cntr_wait(c, 3, 300);
	double dt = ft_now() - t0;
	FT_CHECK(ret == -FI_ETIMEDOUT, "fi_cntr_wait(3, 300 ms) returned %d (%s)", ret,
		 fi_strerror(-ret));
	FT_CHECK(dt >= 0.28 && dt < 2.0, "fi_cntr_wait(300 ms) returned after %.3f s", dt);
	/* another thread adds: the wait returns */
	struct add_arg aa = {c};
	pthread_t th;
	pthread_create(&th, NULL, add_later, &aa);
	t0 = ft_now();
	ret = fi_cntr_wait(c, 12, 10000);
	dt = ft_now() - t0;
	pthread_join(th, NULL);
	FT_CHECK(ret == 0 && dt < 3.0, "fi_cntr_wait woken by an add: %d after %.3f s", ret, dt);
	FT_CHECK(fi_cntr_read(c) == 12, "value %llu", (unsigned long long)fi_cntr_read(c));
	FT_CHECK(fi_close(&c->fid) == 0, "closing the counter");
	fx_close(&fx);
	return 0;
}

/* ---- poll sets ------------------------------------------------------------------------------ */

/* fi_poll returns the CQ while it holds completions and the counter once per change. */
static int t_poll_set(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.cntr = true};
	fx_open(ctx, &o, &fx);
	static int cq_mark, cntr_mark;
	fx.cq->fid.context = &cq_mark;          /* what fi_poll hands back for each object */
	fx.cntr->fid.context = &cntr_mark;
	struct fi_poll_attr pa = {0};
	struct fid_poll *ps;
	void *got[8];
	FT_CHECK(fi_poll_open(fx.domain, &pa, &ps) == 0, "fi_poll_open");
	FT_CHECK(fi_poll_add(ps, &fx.cq->fid, 0) == 0, "fi_poll_add cq");
	FT_CHECK(fi_poll_add(ps, &fx.cntr->fid, 0) == 0, "fi_poll_add cntr");
	int ret = fi_poll_add(ps, &fx.cq->fid, 0);
	FT_CHECK(ret == -FI_EALREADY, "adding the CQ twice: %d", ret);
	FT_CHECK(fi_poll_add(ps, &fx.av->fid, 0) == -FI_EINVAL, "an AV is not pollable");
	FT_CHECK(fi_poll(ps, got, 8) == 0, "events before any operation");

	char sbuf[64] = "poll set", rbuf[64] = {0};
	FX_OK(&fx, fi_recv(fx.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, rbuf));
	FX_OK(&fx, fi_send(fx.ep, sbuf, sizeof(sbuf), NULL, fx.peers[0], sbuf));
	bool saw_cq = false, saw_cntr = false;
	double t0 = ft_now();
	while ((!saw_cq || !saw_cntr) && ft_now() - t0 < 10) {
		int n = fi_poll(ps, got, 8);
		FT_CHECK(n >= 0 && n <= 2, "fi_poll returned %d", n);
		for (int i = 0; i < n; i++) {
			FT_CHECK(got[i] == &cq_mark || got[i] == &cntr_mark, "unknown context %p",
				 got[i]);
			saw_cq |= got[i] == &cq_mark;
			saw_cntr |= got[i] == &cntr_mark;
		}
	}
	FT_CHECK(saw_cq && saw_cntr, "fi_poll never reported the CQ (%d) or the counter (%d)",
		 saw_cq, saw_cntr);
	/* Drain the CQ: then neither object has anything new to report. */
	struct fi_cq_tagged_entry e[4];
	int drained = 0;
	t0 = ft_now();
	while (drained < 2 && ft_now() - t0 < 10) {
		ssize_t r = fi_cq_read(fx.cq, e, 4);
		if (r > 0)
			drained += (int)r;
	}
	FT_CHECK(drained == 2 && !strcmp(rbuf, "poll set"), "completions %d, data '%s'", drained,
		 rbuf);
	int n = fi_poll(ps, got, 8);
	FT_CHECK(n == 0, "fi_poll after draining returned %d", n);
	ret = fi_close(&fx.cq->fid);
	FT_CHECK(ret == -FI_EBUSY, "closing a CQ in a poll set: %d", ret);
	FT_CHECK(fi_poll_del(ps, &fx.cq->fid, 0) == 0, "fi_poll_del cq");
	FT_CHECK(fi_poll_del(ps, &fx.cq->fid, 0) == -FI_ENOENT, "deleting the CQ twice");
	FT_CHECK(fi_close(&ps->fid) == 0, "closing the poll set");
	fx.cq->fid.context = NULL;
	fx.cntr->fid.context = NULL;
	fx_close(&fx);
	return 0;
}

/* ---- close order --------------------------------------------------------------------------- */

static int t_close_order(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.cntr = true};
	fx_open(ctx, &o, &fx);
	uint8_t *mem = fx_alloc(4096);
	struct fid_mr *mr = fx_mr_reg(&fx, mem, 4096, FI_REMOTE_WRITE, 0x77 + (uint64_t)ctx->rank,
				      NULL);
	int ret;
	ret = fi_close(&fx.domain->fid);
	FT_CHECK(ret == -FI_EBUSY, "closing the domain with objects open: %d (%s), want -FI_EBUSY",
		 ret, fi_strerror(-ret));
	ret = fi_close(&fx.fabric->fid);
	FT_CHECK(ret == -FI_EBUSY, "closing the fabric with a domain open: %d (%s)", ret,
		 fi_strerror(-ret));
	ret = fi_close(&fx.av->fid);
	FT_CHECK(ret == -FI_EBUSY, "closing an AV bound to an endpoint: %d (%s)", ret,
		 fi_strerror(-ret));
	ret = fi_close(&fx.cq->fid);
	FT_CHECK(ret == -FI_EBUSY, "closing a CQ bound to an endpoint: %d (%s)", ret,
		 fi_strerror(-ret));
	ret = fi_close(&fx.cntr->fid);
	FT_CHECK(ret == -FI_EBUSY, "closing a counter bound to an endpoint: %d (%s)", ret,
		 fi_strerror(-ret));
	/* everything still works */
	if (ctx->rank == 0) {
		uint8_t b[3000];
		fx_fill(b, sizeof(b), 41, 0);
		FX_OK(&fx, fi_send(fx.ep, b, sizeof(b), NULL, fx.peers[1], b));
		fx_wait(&fx, 1, NULL, TMO);
	} else {
		struct fx_rbuf r;
		fx_rbuf_init(&r, 3000);
		FX_OK(&fx, fi_recv(fx.ep, r.buf, 3000, NULL, FI_ADDR_UNSPEC, &r));
		fx_wait(&fx, 1, NULL, TMO);
		fx_rbuf_check(&r, 41, 3000, "message after refused closes");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	/* the endpoint goes: the domain still has the MR */
	FT_CHECK(fi_close(&fx.ep->fid) == 0, "closing the endpoint");
	fx.ep = NULL;
	ret = fi_close(&fx.domain->fid);
	FT_CHECK(ret == -FI_EBUSY, "closing the domain with an MR, CQ, AV open: %d", ret);
	FT_CHECK(fi_close(&mr->fid) == 0, "closing the MR");
	free(mem);
	fx_close(&fx); /* cntr, cq, av, domain, fabric: all must return 0 */
	return 0;
}

/* ---- fi_enable without AV or CQ ----------------------------------------------------------- */

static int t_enable_unbound(struct ft_ctx *ctx, void *arg)
{
	struct fi_info *info = getinfo_or_die(&(struct fx_opts){0});
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	FT_CHECK(fi_fabric(info->fabric_attr, &fab, NULL) == 0, "fi_fabric");
	FT_CHECK(fi_domain(fab, info, &dom, NULL) == 0, "fi_domain");
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_cq_attr qa = {.format = FI_CQ_FORMAT_TAGGED};
	FT_CHECK(fi_av_open(dom, &aa, &av, NULL) == 0, "fi_av_open");
	FT_CHECK(fi_cq_open(dom, &qa, &cq, NULL) == 0, "fi_cq_open");

	FT_CHECK(fi_endpoint(dom, info, &ep, NULL) == 0, "fi_endpoint");
	int ret = fi_enable(ep);
	FT_CHECK(ret < 0, "fi_enable with nothing bound succeeded");
	FT_CHECK(fi_ep_bind(ep, &av->fid, 0) == 0, "bind av");
	ret = fi_enable(ep);
	FT_CHECK(ret < 0, "fi_enable without a CQ succeeded");
	FT_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
	ret = fi_enable(ep);
	FT_CHECK(ret == 0, "fi_enable with AV and CQ: %s", fi_strerror(-ret));
	FT_CHECK(fi_close(&ep->fid) == 0, "close ep");

	FT_CHECK(fi_endpoint(dom, info, &ep, NULL) == 0, "fi_endpoint");
	FT_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
	ret = fi_enable(ep);
	FT_CHECK(ret < 0, "fi_enable without an AV succeeded");
	FT_CHECK(fi_close(&ep->fid) == 0, "close ep");

	FT_CHECK(fi_close(&cq->fid) == 0 && fi_close(&av->fid) == 0 && fi_close(&dom->fid) == 0 &&
			 fi_close(&fab->fid) == 0,
		 "closing");
	fi_freeinfo(info);
	return 0;
}

/* ---- FI_THREAD_SAFE: 4 threads per rank on one endpoint ----------------------------------- */

#define NTHREADS 4
#define PER_THREAD 150
struct op {
	_Atomic int done;
	size_t len;
	uint8_t *buf;
	struct fx_rbuf r;
};
struct tsafe {
	struct fx *fx;
	int rank;
	int tid;
	struct op *ops; /* NTHREADS * PER_THREAD */
	pthread_mutex_t *cq_lock; /* not used: the CQ is read concurrently on purpose */
};

static size_t op_len(int tid, int i)
{
	uint64_t s = 0x51 + (uint64_t)tid * 1000 + (uint64_t)i;
	ft_rand(&s);
	return (i % 5 == 0) ? fx_rand_size(&s, 16385, 300000) : fx_rand_size(&s, 0, 16384);
}

static void reap(struct fx *fx)
{
	/* any thread may reap any completion */
	struct fi_cq_tagged_entry e[8];
	ssize_t n = fi_cq_read(fx->cq, e, 8);
	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};
		if (fi_cq_readerr(fx->cq, &err, 0) == 1)
			FT_CHECK(0, "error completion: %d (%s)", err.err, fi_strerror(err.err));
		return;
	}
	FT_CHECK(n > 0, "fi_cq_read: %zd", n);
	for (ssize_t i = 0; i < n; i++)
		atomic_store(&((struct op *)e[i].op_context)->done, 1);
}

static void *tsafe_thread(void *p)
{
	struct tsafe *t = p;
	struct fx *fx = t->fx;
	struct op *mine = t->ops + t->tid * PER_THREAD;
	for (int i = 0; i < PER_THREAD; i++) {
		struct op *op = &mine[i];
		op->len = op_len(t->tid, i);
		uint64_t tag = ((uint64_t)t->tid << 32) | (uint64_t)i;
		ssize_t ret;
		if (t->rank == 0) {
			op->buf = fx_alloc(op->len);
			fx_fill(op->buf, op->len, tag, 0);
			while ((ret = fi_tsend(fx->ep, op->buf, op->len, NULL, fx->peers[1], tag,
					       op)) == -FI_EAGAIN)
				reap(fx);
		} else {
			fx_rbuf_init(&op->r, op->len);
			while ((ret = fi_trecv(fx->ep, op->r.buf, op->len, NULL, FI_ADDR_UNSPEC, tag,
					       0, op)) == -FI_EAGAIN)
				reap(fx);
		}
		FT_CHECK(ret == 0, "thread %d op %d: %s", t->tid, i, fi_strerror((int)-ret));
		if (i % 7 == 0)
			reap(fx);
	}
	double t0 = ft_now();
	for (int i = 0; i < PER_THREAD; i++) {
		while (!atomic_load(&mine[i].done)) {
			reap(fx);
			FT_CHECK(ft_now() - t0 < 60, "thread %d: op %d never completed", t->tid, i);
		}
		if (t->rank == 1) {
			uint64_t tag = ((uint64_t)t->tid << 32) | (uint64_t)i;
			char what[64];
			snprintf(what, sizeof(what), "thread %d message %d", t->tid, i);
			fx_rbuf_check(&mine[i].r, tag, mine[i].len, what);
			fx_rbuf_free(&mine[i].r);
		} else {
			free(mine[i].buf);
		}
	}
	return NULL;
}

static int t_thread_safe(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED, .threading = FI_THREAD_SAFE};
	fx_open(ctx, &o, &fx);
	FT_CHECK(fx.info->domain_attr->threading == FI_THREAD_SAFE, "threading %d",
		 fx.info->domain_attr->threading);
	struct op *ops = calloc(NTHREADS * PER_THREAD, sizeof(*ops));
	struct tsafe ts[NTHREADS];
	pthread_t th[NTHREADS];
	fx_pbarrier(ctx, &fx);
	for (int i = 0; i < NTHREADS; i++) {
		ts[i] = (struct tsafe){.fx = &fx, .rank = ctx->rank, .tid = i, .ops = ops};
		pthread_create(&th[i], NULL, tsafe_thread, &ts[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	free(ops);
	/* fx_pbarrier would read the CQ: nothing may be left */
	fx_pbarrier(ctx, &fx);
	FT_CHECK(fx.stash_count == 0, "completions left over");
	fx_close(&fx);
	return 0;
}


/* ---- FI_THREAD_SAFE: 4 threads writing and reading concurrently through one endpoint ------- */

struct trma {
	struct fx *fx;
	int tid;
	struct fx_rkey rk;
	_Atomic int *done; /* per op */
};
#define RMA_OPS 200
#define RMA_SLOT 8192
static void reap_flag(struct fx *fx)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t n = fi_cq_read(fx->cq, e, 8);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};
		if (fi_cq_readerr(fx->cq, &err, 0) == 1)
			FT_CHECK(0, "error completion: %d (%s)", err.err, fi_strerror(err.err));
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		atomic_store((_Atomic int *)e[i].op_context, 1);
}
static void *trma_thread(void *p)
{
	struct trma *t = p;
	struct fx *fx = t->fx;
	uint8_t *src = fx_alloc(RMA_SLOT), *dst = fx_alloc(RMA_SLOT * RMA_OPS);
	for (int i = 0; i < RMA_OPS; i++) {
		size_t len = 1 + (size_t)((i * 37 + t->tid * 11) % RMA_SLOT);
		uint64_t off = ((uint64_t)t->tid * RMA_OPS + (uint64_t)i) * RMA_SLOT;
		fx_fill(src, len, 0x7000 + off, 0);
		ssize_t r;
		atomic_store(&t->done[i], 0);
		while ((r = fi_write(fx->ep, src, len, NULL, fx->peers[1], t->rk.base + off,
				     t->rk.key, (void *)&t->done[i])) == -FI_EAGAIN)
			reap_flag(fx);
		FT_CHECK(r == 0, "thread %d write %d: %s", t->tid, i, fi_strerror((int)-r));
		double t0 = ft_now();
		while (!atomic_load(&t->done[i])) { /* the source is reused: wait */
			reap_flag(fx);
			FT_CHECK(ft_now() - t0 < 30, "thread %d write %d never completed", t->tid, i);
		}
		/* read it back into a private slot */
		atomic_store(&t->done[i], 0);
		while ((r = fi_read(fx->ep, dst + (size_t)i * RMA_SLOT, len, NULL, fx->peers[1],
				    t->rk.base + off, t->rk.key, (void *)&t->done[i])) == -FI_EAGAIN)
			reap_flag(fx);
		FT_CHECK(r == 0, "thread %d read %d: %s", t->tid, i, fi_strerror((int)-r));
	}
	double t0 = ft_now();
	for (int i = 0; i < RMA_OPS; i++) {
		while (!atomic_load(&t->done[i])) {
			reap_flag(fx);
			FT_CHECK(ft_now() - t0 < 30, "thread %d read %d never completed", t->tid, i);
		}
		size_t len = 1 + (size_t)((i * 37 + t->tid * 11) % RMA_SLOT);
		uint64_t off = ((uint64_t)t->tid * RMA_OPS + (uint64_t)i) * RMA_SLOT;
		FX_CHECK_PATTERN(dst + (size_t)i * RMA_SLOT, len, 0x7000 + off, 0,
				 "thread %d: read back %d", t->tid, i);
	}
	free(src);
	free(dst);
	return NULL;
}

static int t_thread_safe_rma(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
				    FI_REMOTE_WRITE,
			    .threading = FI_THREAD_SAFE,
			    .mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR};
	fx_open(ctx, &o, &fx);
	size_t rlen = (size_t)NTHREADS * RMA_OPS * RMA_SLOT;
	uint8_t *region = NULL;
	struct fid_mr *mr = NULL;
	struct fx_rkey mine = {0}, all[2];
	if (ctx->rank == 1) {
		region = fx_alloc(rlen);
		memset(region, 0, rlen);
		mr = fx_mr_reg(&fx, region, rlen, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, &mine);
	}
	ft_allgather(ctx, &mine, sizeof(mine), all);
	if (ctx->rank == 0) {
		struct trma t[NTHREADS];
		pthread_t th[NTHREADS];
		_Atomic int *done = calloc(NTHREADS * RMA_OPS, sizeof(*done));
		for (int i = 0; i < NTHREADS; i++) {
			t[i] = (struct trma){.fx = &fx, .tid = i, .rk = all[1], .done = done + i * RMA_OPS};
			pthread_create(&th[i], NULL, trma_thread, &t[i]);
		}
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(th[i], NULL);
		free(done);
	}
	fx_pbarrier(ctx, &fx);
	if (ctx->rank == 1) {
		for (int tid = 0; tid < NTHREADS; tid++)
			for (int i = 0; i < RMA_OPS; i++) {
				size_t len = 1 + (size_t)((i * 37 + tid * 11) % RMA_SLOT);
				uint64_t off = ((uint64_t)tid * RMA_OPS + (uint64_t)i) * RMA_SLOT;
				FX_CHECK_PATTERN(region + off, len, 0x7000 + off, 0,
						 "target slot of thread %d write %d", tid, i);
			}
		fi_close(&mr->fid);
		free(region);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}


/* ---- two fabrics/domains in one process, talking to each other and across processes ------- */

static int t_two_domains(struct ft_ctx *ctx, void *arg)
{
	struct fx a, b;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED};
	fx_open(ctx, &o, &a);
	fx_open(ctx, &o, &b);
	int next = (ctx->rank + 1) % ctx->size, prev = (ctx->rank + ctx->size - 1) % ctx->size;
	/* a's AV learns the b endpoints of this process and of the next one */
	uint8_t blob[256];
	size_t bl = sizeof(blob);
	fi_addr_t own_b, next_b;
	FT_CHECK(fi_getname(&b.ep->fid, blob, &bl) == 0, "getname");
	FT_CHECK(fi_av_insert(a.av, blob, 1, &own_b, 0, NULL) == 1, "insert own b");
	bl = sizeof(blob);
	FT_CHECK(fi_av_lookup(b.av, b.peers[next], blob, &bl) == 0, "lookup");
	FT_CHECK(fi_av_insert(a.av, blob, 1, &next_b, 0, NULL) == 1, "insert next b");
	const size_t n[2] = {5000, 200000}; /* eager to own b, rendezvous to next b */
	uint8_t *m1 = fx_alloc(n[0]), *m2 = fx_alloc(n[1]);
	fx_fill(m1, n[0], 10 + (uint64_t)ctx->rank, 0);
	fx_fill(m2, n[1], 20 + (uint64_t)ctx->rank, 0);
	struct fx_rbuf r1, r2;
	fx_rbuf_init(&r1, n[0]);
	fx_rbuf_init(&r2, n[1]);
	FX_OK(&b, fi_trecv(b.ep, r1.buf, n[0], NULL, FI_ADDR_UNSPEC, 1, 0, &r1));
	FX_OK(&b, fi_trecv(b.ep, r2.buf, n[1], NULL, FI_ADDR_UNSPEC, 2, 0, &r2));
	fx_pbarrier(ctx, &b);
	FX_OK(&a, fi_tsend(a.ep, m1, n[0], NULL, own_b, 1, m1));
	FX_OK(&a, fi_tsend(a.ep, m2, n[1], NULL, next_b, 2, m2));
	/* each domain progresses only through its own CQ: poll both */
	int ga = 0, gb = 0;
	double t0 = ft_now();
	while (ga < 2 || gb < 2) {
		struct fx_comp c;
		struct fi_cq_err_entry e;
		int w = fx_wait_any(&a, &c, &e, 1);
		FT_CHECK(w != -FI_EAVAIL, "domain a error %d", e.err);
		ga += w == 1;
		w = fx_wait_any(&b, &c, &e, 1);
		FT_CHECK(w != -FI_EAVAIL, "domain b error %d", e.err);
		gb += w == 1;
		FT_CHECK(ft_now() - t0 < 20, "two domains: %d/2 sends, %d/2 receives after 20 s", ga,
			 gb);
	}
	fx_rbuf_check(&r1, 10 + (uint64_t)ctx->rank, n[0], "from the other domain of this process");
	fx_rbuf_check(&r2, 20 + (uint64_t)prev, n[1], "from the first domain of the previous rank");
	fx_pbarrier(ctx, NULL);
	fx_rbuf_free(&r1);
	fx_rbuf_free(&r2);
	free(m1);
	free(m2);
	fx_close(&b);
	fx_close(&a);
	return 0;
}

static int t_thread_domain(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED, .threading = FI_THREAD_DOMAIN};
	fx_open(ctx, &o, &fx);
	FT_CHECK(fx.info->domain_attr->threading == FI_THREAD_DOMAIN, "threading %d",
		 fx.info->domain_attr->threading);
	if (ctx->rank == 0) {
		uint8_t b[20000];
		fx_fill(b, sizeof(b), 3, 0);
		FX_OK(&fx, fi_tsend(fx.ep, b, sizeof(b), NULL, fx.peers[1], 9, b));
		fx_wait(&fx, 1, NULL, TMO);
	} else {
		struct fx_rbuf r;
		fx_rbuf_init(&r, 20000);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, 20000, NULL, FI_ADDR_UNSPEC, 9, 0, &r));
		fx_wait(&fx, 1, NULL, TMO);
		fx_rbuf_check(&r, 3, 20000, "FI_THREAD_DOMAIN message");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

#define I(x) ((void *)(intptr_t)(x))

/* ---- addresses from fi_getinfo(node, service): no out-of-band exchange ------------------- */

/* An endpoint opened from an fi_info of fi_getinfo(node, service, flags). */
struct named_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static int named_getinfo(const char *node, const char *service, uint64_t flags,
			 struct fi_info **info)
{
	struct fi_info *h = fx_hints(&(struct fx_opts){.caps = FI_MSG | FI_TAGGED});
	int ret = fi_getinfo(FI_VERSION(1, 17), node, service, flags, h, info);
	fi_freeinfo(h);
	return ret;
}

/* Open fabric, domain, AV, CQ and endpoint from info (taken over); the endpoint's error. */
static int named_open(struct fi_info *info, struct named_ep *n)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	memset(n, 0, sizeof(*n));
	n->info = info;
	FT_CHECK(fi_fabric(info->fabric_attr, &n->fabric, NULL) == 0, "fi_fabric");
	FT_CHECK(fi_domain(n->fabric, info, &n->domain, NULL) == 0, "fi_domain");
	FT_CHECK(fi_av_open(n->domain, &av_attr, &n->av, NULL) == 0, "fi_av_open");
	FT_CHECK(fi_cq_open(n->domain, &cq_attr, &n->cq, NULL) == 0, "fi_cq_open");
	ret = fi_endpoint(n->domain, info, &n->ep, NULL);
	if (ret) {
		n->ep = NULL;
		return ret;
	}
	FT_CHECK(fi_ep_bind(n->ep, &n->av->fid, 0) == 0, "fi_ep_bind(av)");
	FT_CHECK(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) == 0, "fi_ep_bind(cq)");
	FT_CHECK(fi_enable(n->ep) == 0, "fi_enable");
	return 0;
}

static void named_close(struct named_ep *n)
{
	if (n->ep)
		FT_CHECK(fi_close(&n->ep->fid) == 0, "close ep");
	FT_CHECK(fi_close(&n->cq->fid) == 0, "close cq");
	FT_CHECK(fi_close(&n->av->fid) == 0, "close av");
	FT_CHECK(fi_close(&n->domain->fid) == 0, "close domain");
	FT_CHECK(fi_close(&n->fabric->fid) == 0, "close fabric");
	fi_freeinfo(n->info);
}

static void named_wait(struct named_ep *n, struct fi_cq_tagged_entry *c)
{
	struct fi_cq_err_entry err;
	int ret = ft_wait(n->cq, 1, c, &err, TMO);
	FT_CHECK(ret == 1, "completion: %d (%s)", ret,
		 ret == -FI_EAVAIL ? fi_strerror(err.err) : fi_strerror(-ret));
}

/* A service unique to this test run (meson runs tests in parallel). */
static void test_service(char *svc, size_t len, const char *what)
{
	snprintf(svc, len, "fx%d-%s", (int)getppid(), what);
}

static void named_getname(struct named_ep *n, uint8_t *addr, size_t *len)
{
	*len = FT_XCHG_MAX;
	FT_CHECK(fi_getname(&n->ep->fid, addr, len) == 0, "fi_getname");
}

/*
 * fabtests' flow: the server asks fi_getinfo(NULL, svc, FI_SOURCE) and opens an endpoint from
 * it; the client asks fi_getinfo("127.0.0.1", svc, 0), inserts dest_addr, sends its own name in
 * the first message; the server inserts that and answers.  The client starts first: its insert
 * waits for the server to bind.
 */
static int t_addr_service(struct ft_ctx *ctx, void *arg)
{
	char svc[32];
	struct fi_info *info = NULL;
	struct named_ep n;
	struct fi_cq_tagged_entry c;
	uint8_t mine[FT_XCHG_MAX], buf[FT_XCHG_MAX], names[2 * FT_XCHG_MAX] = {0};
	size_t mlen;
	int ret;

	(void)arg;
	test_service(svc, sizeof(svc), "svc");
	if (ctx->rank == 0) {
		usleep(300 * 1000); /* the client is already waiting in fi_av_insert */
		ret = named_getinfo(NULL, svc, FI_SOURCE, &info);
		FT_CHECK(ret == 0, "server fi_getinfo: %s", fi_strerror(-ret));
		FT_CHECK(info->src_addr && info->src_addrlen && !info->dest_addr,
			 "server: src_addr %p/%zu dest_addr %p", info->src_addr, info->src_addrlen,
			 info->dest_addr);
		FT_CHECK(named_open(info, &n) == 0, "server fi_endpoint");
		named_getname(&n, mine, &mlen);
		FT_CHECK(fi_trecv(n.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, buf) == 0,
			 "fi_trecv");
		named_wait(&n, &c);
		FT_CHECK(c.len > 0 && c.len <= sizeof(buf), "client name of %zu bytes", c.len);
		fi_addr_t client;
		FT_CHECK(fi_av_insert(n.av, buf, 1, &client, 0, NULL) == 1,
			 "server: inserting the client's name");
		static const char pong[] = "pong from the server";
		FT_CHECK(fi_tsend(n.ep, pong, sizeof(pong), NULL, client, 2, NULL) == 0, "tsend");
		named_wait(&n, &c);
	} else {
		ret = named_getinfo("127.0.0.1", svc, 0, &info);
		FT_CHECK(ret == 0, "client fi_getinfo: %s", fi_strerror(-ret));
		FT_CHECK(info->dest_addr && info->dest_addrlen && info->src_addr,
			 "client: dest_addr %p/%zu", info->dest_addr, info->dest_addrlen);
		FT_CHECK(named_open(info, &n) == 0, "client fi_endpoint");
		char str[128];
		size_t slen = sizeof(str);
		FT_CHECK(fi_av_straddr(n.av, info->dest_addr, str, &slen) && strstr(str, svc),
			 "fi_av_straddr of dest_addr: %s", str);
		fi_addr_t server;
		ret = fi_av_insert(n.av, info->dest_addr, 1, &server, 0, NULL);
		FT_CHECK(ret == 1, "client: fi_av_insert(dest_addr): %d", ret);
		named_getname(&n, mine, &mlen);
		FT_CHECK(fi_tsend(n.ep, mine, mlen, NULL, server, 1, NULL) == 0, "tsend");
		named_wait(&n, &c);
		FT_CHECK(fi_trecv(n.ep, buf, sizeof(buf), NULL, server, 2, 0, buf) == 0, "trecv");
		named_wait(&n, &c);
		FT_CHECK(!strcmp((char *)buf, "pong from the server"), "reply: %.40s", buf);
		/* The AV holds the server's concrete address (what its fi_getname says). */
		size_t blen = sizeof(buf);
		FT_CHECK(fi_av_lookup(n.av, server, buf, &blen) == 0, "fi_av_lookup");
		memcpy(mine, buf, blen);
		mlen = blen;
	}
	/* rank 0 contributes its own name, rank 1 what its AV resolved: the same bytes */
	ft_allgather(ctx, mine, FT_XCHG_MAX, names);
	FT_CHECK(!memcmp(names, names + FT_XCHG_MAX, mlen),
		 "the client's AV resolved another address than the server's fi_getname");
	ft_barrier(ctx);
	named_close(&n);
	return 0;
}

/* One binder per service; a closed endpoint releases it; fi_setname and fi_av_insertsvc. */
static int t_addr_inuse(struct ft_ctx *ctx, void *arg)
{
	char svc[32], svc2[32];
	struct fi_info *info, *info2;
	struct named_ep a, b;
	uint8_t name[FT_XCHG_MAX], got[FT_XCHG_MAX];
	size_t len, glen;
	fi_addr_t fa;
	int ret;

	(void)ctx, (void)arg;
	test_service(svc, sizeof(svc), "inuse");
	test_service(svc2, sizeof(svc2), "set");
	FT_CHECK(named_getinfo(NULL, svc, FI_SOURCE, &info) == 0, "fi_getinfo");
	FT_CHECK(named_getinfo("localhost", svc, FI_SOURCE, &info2) == 0, "fi_getinfo(2)");
	FT_CHECK(named_open(fi_dupinfo(info), &a) == 0, "first binder");
	ret = named_open(info2, &b);
	FT_CHECK(ret == -FI_EADDRINUSE, "second binder of %s: %d (%s)", svc, ret,
		 fi_strerror(-ret));
	/* fi_av_insertsvc reaches the binder */
	named_getname(&a, name, &len);
	FT_CHECK(fi_av_insertsvc(b.av, "localhost", svc, &fa, 0, NULL) == 1, "fi_av_insertsvc");
	glen = sizeof(got);
	FT_CHECK(fi_av_lookup(b.av, fa, got, &glen) == 0 && glen == len && !memcmp(got, name, len),
		 "fi_av_insertsvc resolved another address");
	FT_CHECK(fi_av_insertsvc(b.av, "192.0.2.1", svc, &fa, 0, NULL) < 0,
		 "fi_av_insertsvc of another host succeeded");
	named_close(&a);
	named_close(&b);
	/* released at close: the same service binds again */
	FT_CHECK(named_open(info, &a) == 0, "binding again after close");
	/* fi_setname binds a service name; a held one is refused */
	FT_CHECK(named_getinfo(NULL, NULL, 0, &info2) == 0, "fi_getinfo(no service)");
	FT_CHECK(named_open(info2, &b) == 0, "unbound endpoint");
	FT_CHECK(named_getinfo(NULL, svc2, FI_SOURCE, &info2) == 0, "fi_getinfo(svc2)");
	FT_CHECK(fi_setname(&b.ep->fid, info2->src_addr, info2->src_addrlen) == 0, "fi_setname");
	fi_freeinfo(info2);
	FT_CHECK(named_getinfo(NULL, svc, FI_SOURCE, &info2) == 0, "fi_getinfo(svc)");
	ret = fi_setname(&b.ep->fid, info2->src_addr, info2->src_addrlen);
	FT_CHECK(ret == -FI_EADDRINUSE, "fi_setname of a held service: %d", ret);
	fi_freeinfo(info2);
	uint8_t junk[48] = {1};
	FT_CHECK(fi_setname(&b.ep->fid, junk, sizeof(junk)) == -FI_EINVAL, "fi_setname(junk)");
	FT_CHECK(fi_av_insertsvc(a.av, NULL, svc2, &fa, 0, NULL) == 1, "insertsvc(svc2)");
	named_getname(&b, name, &len);
	glen = sizeof(got);
	FT_CHECK(fi_av_lookup(a.av, fa, got, &glen) == 0 && !memcmp(got, name, len),
		 "svc2 resolves to the fi_setname endpoint");
	/* a send through the resolved address arrives */
	FT_CHECK(fi_trecv(b.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, 5, 0, NULL) == 0, "trecv");
	FT_CHECK(fi_tsend(a.ep, "hi", 3, NULL, fa, 5, NULL) == 0, "tsend");
	struct fi_cq_tagged_entry c;
	named_wait(&a, &c);
	named_wait(&b, &c);
	FT_CHECK(c.len == 3 && !strcmp((char *)got, "hi"), "message through fi_av_insertsvc");
	named_close(&a);
	named_close(&b);
	return 0;
}

/* A binder that dies without closing leaves a stale name: it resolves to nothing and the
 * next binder takes it over.  Run with FI_DDTX_RESOLVE_MS small. */
static int t_addr_stale(struct ft_ctx *ctx, void *arg)
{
	char svc[32];
	struct fi_info *info;
	struct named_ep a, b;
	fi_addr_t fa;
	int status = -1;

	(void)ctx, (void)arg;
	test_service(svc, sizeof(svc), "stale");
	pid_t pid = fork();
	FT_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		if (named_getinfo(NULL, svc, FI_SOURCE, &info) || named_open(info, &a))
			_exit(1);
		_exit(0); /* a crash: nothing closed, the name file stays */
	}
	FT_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
		 "the binder child failed");
	FT_CHECK(named_getinfo(NULL, NULL, 0, &info) == 0, "fi_getinfo");
	FT_CHECK(named_open(info, &b) == 0, "client");
	double t0 = ft_now();
	int ret = fi_av_insertsvc(b.av, "127.0.0.1", svc, &fa, 0, NULL);
	FT_CHECK(ret == 0, "a stale name resolved: %d", ret);
	FT_CHECK(ft_now() - t0 < 5, "resolving a stale name took %.1f s", ft_now() - t0);
	FT_CHECK(named_getinfo(NULL, svc, FI_SOURCE, &info) == 0, "fi_getinfo(svc)");
	FT_CHECK(named_open(info, &a) == 0, "binding over a stale name");
	FT_CHECK(fi_av_insertsvc(b.av, "127.0.0.1", svc, &fa, 0, NULL) == 1, "resolve again");
	uint8_t got[8] = {0};
	struct fi_cq_tagged_entry c;
	FT_CHECK(fi_trecv(a.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, 5, 0, NULL) == 0, "trecv");
	FT_CHECK(fi_tsend(b.ep, "new", 4, NULL, fa, 5, NULL) == 0, "tsend");
	named_wait(&b, &c);
	named_wait(&a, &c);
	FT_CHECK(!strcmp((char *)got, "new"), "message to the new binder");
	named_close(&a);
	named_close(&b);
	return 0;
}

/*
 * FI_DDTX_STATS=1 (set by the meson test): a program that exits without closing its domain
 * still gets its statistics, printed once at provider cleanup.  The program is a child that
 * exits through exit() (libfabric's destructor runs the provider cleanup).
 */
static int t_stats_at_exit(struct ft_ctx *ctx, void *arg)
{
	char path[] = "/tmp/ddtx-stats-XXXXXX";
	int fd = mkstemp(path);
	int status = -1;

	(void)ctx, (void)arg;
	FT_CHECK(fd >= 0, "mkstemp");
	pid_t pid = fork();
	FT_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct fi_info *info;
		struct fid_fabric *fabric;
		struct fid_domain *dom[2];
		dup2(fd, 2);
		if (named_getinfo(NULL, NULL, 0, &info) || fi_fabric(info->fabric_attr, &fabric, NULL) ||
		    fi_domain(fabric, info, &dom[0], NULL) || fi_domain(fabric, info, &dom[1], NULL))
			_exit(3);
		fi_close(&dom[1]->fid); /* reported at close, not again at exit */
		exit(0);                /* dom[0] left open */
	}
	FT_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
		 "child status 0x%x", status);
	char buf[65536];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	FT_CHECK(n > 0, "no output");
	buf[n] = '\0';
	int at_exit = 0, reports = 0;
	for (char *p = buf; (p = strstr(p, "was not closed (reported at exit)")); p++)
		at_exit++;
	for (char *p = buf; (p = strstr(p, "ddtx stats (domain ")); p++)
		reports++;
	FT_CHECK(at_exit == 1 && reports == 2, "reports: %d at exit, %d in all:\n%s", at_exit,
		 reports, buf);
	return 0;
}

static const struct fx_test tests[] = {
	{"getinfo", 1, 30, t_getinfo, NULL},
	{"av_table", 3, 30, t_av, I(FI_AV_TABLE)},
	{"av_map", 3, 30, t_av, I(FI_AV_MAP)},
	{"av_named", 1, 30, t_named_av, NULL},
	{"av_insert_garbage_table", 2, 30, t_av_garbage, I(FI_AV_TABLE)},
	{"av_insert_garbage_map", 2, 30, t_av_garbage, I(FI_AV_MAP)},
	{"cq_formats", 2, 60, t_cq_formats, NULL},
	{"readfrom", 3, 30, t_readfrom, NULL},
	{"sread_unspec", 2, 30, t_sread, I(FI_WAIT_UNSPEC)},
	{"sread_yield", 2, 30, t_sread, I(FI_WAIT_YIELD)},
	{"cq_signal", 1, 30, t_cq_signal, NULL},
	{"cq_never_empty", 2, 60, t_cq_never_empty, NULL},
	{"cntr", 1, 30, t_cntr, NULL},
	{"poll_set", 1, 30, t_poll_set, NULL},
	{"close_order", 2, 30, t_close_order, NULL},
	{"enable_unbound", 1, 30, t_enable_unbound, NULL},
	{"thread_safe", 2, 120, t_thread_safe, NULL},
	{"thread_safe_rma", 2, 120, t_thread_safe_rma, NULL},
	{"thread_domain", 2, 30, t_thread_domain, NULL},
	{"two_domains", 3, 30, t_two_domains, NULL},
	{"addr_service", 2, 30, t_addr_service, NULL},
	{"addr_inuse", 1, 30, t_addr_inuse, NULL},
	{"addr_stale", 1, 30, t_addr_stale, NULL},
	{"stats_at_exit", 1, 30, t_stats_at_exit, NULL},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
