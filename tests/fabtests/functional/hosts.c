/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A wire per peer (FI_DDTX_WIRE=multi), on one machine or with ranks on two hosts
 * (util/hosts.sh run; ft_hosts.c puts the first half of the ranks on host A, the rest on B):
 *  - wire_per_peer_4: every ordered pair exchanges an eager and a rendezvous tagged message
 *    (iov lists, every byte and gap checked) and an RMA write and read; then each rank's
 *    statistics must say that its same-host peers were reached through shm and the others
 *    through the fabric wire, and that each wire carried messages and RMA exactly when it had
 *    peers;
 *  - all_to_all_4: the same exchange and RMA over whichever single wire FI_DDTX_WIRE names (no
 *    statistics check): over the ofi wire on tcp;ofi_rxm, every rank sending to every other at
 *    once hung there (messages above rxm's eager size lost their receive completions);
 *  - peer_host_gone: rank 2 (host B) takes its host's link down while rank 0 (host A) is sending
 *    it a large message: rank 0 gets an error completion within a bound, and its exchange with
 *    rank 1 (host A) goes on;
 *  - peer_killed_3: the same with rank 2 dying instead (it exits without closing anything, on
 *    one host or two): a wire that hears of it (the ofi wire over FI_EP_MSG: the kernel shuts
 *    the connection) gives rank 0 its error within PEER_KILLED_BOUND_S;
 *  - connect_race_2: two ranks whose first operation is a send to each other at the same
 *    moment (over FI_EP_MSG both ask for a connection at once: one must win on both sides),
 *    every byte checked, repeated on fresh endpoints;
 *  - connreq_hostile_2: over FI_EP_MSG, rank 1 connects to rank 0's listening endpoint with
 *    libfabric's tcp directly, with connection data that is no valid request (none, short,
 *    random, another core's blob, uid 0, trailing bytes): each is refused, and rank 1's real
 *    message through ddtx arrives intact afterwards.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "fx.h"

#define TMO 60000
#define EAGER_LEN 1000
#define RNDV_LEN 300000
#define RMA_SLOT (64 * 1024)

static uint64_t seed_of(int src, int dst, int kind) { return 0x5000u + 64u * src + 4u * dst + kind; }

/* Does rank me reach peer p through the local (shm) wire? */
static bool expect_local(const struct ft_ctx *ctx, int me, int p)
{
	const char *lw = getenv("FI_DDTX_LOCAL_WIRE");
	if (lw && !strcmp(lw, "none"))
		return false;
	return ft_host_of(me, ctx->size) == ft_host_of(p, ctx->size);
}

static void exchange(struct ft_ctx *ctx, struct fx *fx)
{
	int n = ctx->size, me = ctx->rank, np = 2 * (n - 1);
	struct fx_layout *snd = calloc((size_t)np, sizeof(*snd));
	struct fx_layout *rcv = calloc((size_t)np, sizeof(*rcv));
	uint64_t rng = 0x91 + (uint64_t)me;
	int i = 0;

	for (int d = 1; d < n; d++) {
		int src = (me + n - d) % n;
		for (int k = 0; k < 2; k++, i++) {
			fx_layout_make(&rcv[i], k ? RNDV_LEN : EAGER_LEN, k ? 24 : 5, 32, &rng);
			fx_layout_canary(&rcv[i], 3);
			struct fi_msg_tagged mt = {.msg_iov = rcv[i].iov, .desc = rcv[i].desc,
						   .iov_count = rcv[i].count, .addr = fx->peers[src],
						   .tag = (uint64_t)(src * 2 + k), .context = &rcv[i]};
			FX_OK(fx, fi_trecvmsg(fx->ep, &mt, FI_COMPLETION));
		}
	}
	fx_pbarrier(ctx, fx);
	i = 0;
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		for (int k = 0; k < 2; k++, i++) {
			fx_layout_make(&snd[i], k ? RNDV_LEN : EAGER_LEN, k ? 17 : 3, 32, &rng);
			fx_layout_data(&snd[i], seed_of(me, dst, k));
			struct fi_msg_tagged mt = {.msg_iov = snd[i].iov, .desc = snd[i].desc,
						   .iov_count = snd[i].count, .addr = fx->peers[dst],
						   .tag = (uint64_t)(me * 2 + k), .context = &snd[i]};
			FX_OK(fx, fi_tsendmsg(fx->ep, &mt, FI_COMPLETION));
		}
	}
	fx_wait(fx, (size_t)(2 * np), NULL, TMO);
	i = 0;
	for (int d = 1; d < n; d++) {
		int src = (me + n - d) % n;
		for (int k = 0; k < 2; k++, i++) {
			char what[80];
			snprintf(what, sizeof(what), "rank %d: %s message from rank %d", me,
				 k ? "rendezvous" : "eager", src);
			fx_layout_check(&rcv[i], seed_of(src, me, k), rcv[i].total, 3, what);
		}
	}
	for (i = 0; i < np; i++) {
		fx_layout_free(&snd[i]);
		fx_layout_free(&rcv[i]);
	}
	free(snd);
	free(rcv);
}

/* Write my slot into every peer's region, read it back, check both. */
static void rma(struct ft_ctx *ctx, struct fx *fx)
{
	int n = ctx->size, me = ctx->rank;
	uint8_t *region = fx_alloc((size_t)RMA_SLOT * n), *src = fx_alloc(RMA_SLOT);
	uint8_t *back = fx_alloc((size_t)RMA_SLOT * n);
	struct fx_rkey mine, *all = malloc((size_t)n * sizeof(*all));
	struct fid_mr *mr = fx_mr_reg(fx, region, (size_t)RMA_SLOT * n,
				      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, &mine);

	fx_fill(region, (size_t)RMA_SLOT * n, 7, 0);
	fx_fill(src, RMA_SLOT, 200 + (uint64_t)me, 0);
	ft_allgather(ctx, &mine, sizeof(mine), all);
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		FX_OK(fx, fi_write(fx->ep, src, RMA_SLOT, NULL, fx->peers[dst],
				   fx_raddr(&all[dst], (uint64_t)me * RMA_SLOT), all[dst].key, NULL));
	}
	fx_wait(fx, (size_t)(n - 1), NULL, TMO);
	fx_pbarrier(ctx, fx);
	for (int s = 0; s < n; s++)
		if (s != me)
			FX_CHECK_PATTERN(region + (size_t)s * RMA_SLOT, RMA_SLOT, 200 + (uint64_t)s,
					 0, "rank %d: slot written by rank %d", me, s);
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		FX_OK(fx, fi_read(fx->ep, back + (size_t)dst * RMA_SLOT, RMA_SLOT, NULL,
				  fx->peers[dst], fx_raddr(&all[dst], (uint64_t)me * RMA_SLOT),
				  all[dst].key, NULL));
	}
	fx_wait(fx, (size_t)(n - 1), NULL, TMO);
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		FX_CHECK_PATTERN(back + (size_t)dst * RMA_SLOT, RMA_SLOT, 200 + (uint64_t)me, 0,
				 "rank %d: read back from rank %d", me, dst);
	}
	fx_pbarrier(ctx, fx);
	fi_close(&mr->fid);
	free(region);
	free(src);
	free(back);
	free(all);
}

static int t_wire_per_peer(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_RMA | FI_READ |
				    FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
			    .mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR};
	fx_open(ctx, &o, &fx);
	int n = ctx->size, me = ctx->rank;
	exchange(ctx, &fx);
	rma(ctx, &fx);

	struct fi_ddtx_stats st;
	uint64_t want_local = 0, want_fabric = 0;
	fx_stats(&fx, &st);
	for (int p = 0; p < n; p++)
		if (p != me)
			*(expect_local(ctx, me, p) ? &want_local : &want_fabric) += 1;
	FT_CHECK(st.nwires == 2, "rank %d: %u wires in the statistics: not a wire per peer "
		 "(FI_DDTX_WIRE=multi)", me, st.nwires);
	FT_CHECK(!strcmp(st.wires[0].name, "shm"), "rank %d: local wire is %s", me,
		 st.wires[0].name);
	for (int w = 0; w < 2; w++) {
		uint64_t want = w ? want_fabric : want_local;
		printf("rank %d (host %s): %s wire %-5s peers %llu msgs %llu bytes %llu rma %llu "
		       "bytes %llu\n", me, getenv("DDTX_TEST_HOST") ? getenv("DDTX_TEST_HOST") : "-", w ? "fabric" : "local",
		       st.wires[w].name, (unsigned long long)st.wires[w].peers,
		       (unsigned long long)st.wires[w].msgs,
		       (unsigned long long)st.wires[w].msg_bytes,
		       (unsigned long long)st.wires[w].rma_ops,
		       (unsigned long long)st.wires[w].rma_bytes);
		FT_CHECK(st.wires[w].peers == want, "rank %d: wire %s reached %llu peers, expected "
			 "%llu", me, st.wires[w].name, (unsigned long long)st.wires[w].peers,
			 (unsigned long long)want);
		/* each peer got one eager and one rendezvous message from me (the rendezvous
		 * data moves by whichever scheme; its RTS is a message) and RMA of 2 slots */
		FT_CHECK((st.wires[w].msgs >= 2 * want) && (!want == !st.wires[w].msgs),
			 "rank %d: wire %s carried %llu messages for %llu peers", me,
			 st.wires[w].name, (unsigned long long)st.wires[w].msgs,
			 (unsigned long long)want);
		FT_CHECK(st.wires[w].rma_bytes >= 2 * RMA_SLOT * want &&
			 (!want == !st.wires[w].rma_ops),
			 "rank %d: wire %s carried %llu RMA bytes for %llu peers", me,
			 st.wires[w].name, (unsigned long long)st.wires[w].rma_bytes,
			 (unsigned long long)want);
	}
	fflush(stdout);
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

static int t_all_to_all(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_RMA | FI_READ |
				    FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
			    .mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR};
	fx_open(ctx, &o, &fx);
	exchange(ctx, &fx);
	rma(ctx, &fx);
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- a peer host that disappears --------------------------------------------------------- */

#define GONE_LEN (8u << 20)
#define GONE_BOUND_S 60
#define PEER_KILLED_BOUND_S 10

/* arg NULL: rank 2's host vanishes (link down); non-NULL: rank 2 dies. */
static int t_peer_host_gone(struct ft_ctx *ctx, void *arg)
{
	bool killed = arg != NULL;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED};
	int me = ctx->rank;

	if (!killed && (ft_host_of(0, 3) < 0 || ft_host_of(0, 3) == ft_host_of(2, 3)))
		return FT_SKIP;                  /* needs ranks 0, 1 on one host, 2 on another */
	fx_open(ctx, &o, &fx);
	uint8_t *buf = fx_alloc(GONE_LEN);
	if (me == 2) {
		/* Receive the first message, then vanish from the network mid-way. */
		struct fx_comp c;
		FX_OK(&fx, fi_trecv(fx.ep, buf, GONE_LEN, NULL, fx.peers[0], 1, 0, NULL));
		fx_pbarrier(ctx, &fx);
		fx_wait(&fx, 1, &c, TMO);
		FX_CHECK_PATTERN(buf, GONE_LEN, 11, 0, "rank 2: first message from rank 0");
		FX_OK(&fx, fi_trecv(fx.ep, buf, GONE_LEN, NULL, fx.peers[0], 2, 0, NULL));
		if (killed) {
			fx_sh->flag[0] = 1;
			while (!fx_sh->flag[2])      /* until rank 0 has posted the second send */
				usleep(1000);
			_exit(0);                    /* no fi_close: the kernel closes its sockets */
		}
		char cmd[160];
		snprintf(cmd, sizeof(cmd), "ip link set dev %s down", getenv("DDTX_TEST_HOST_DEV"));
		FT_CHECK(system(cmd) == 0, "rank 2: %s failed", cmd);
		fx_sh->flag[0] = 1;                  /* link down */
		while (!fx_sh->flag[1])              /* until rank 0 has its error */
			usleep(1000);                /* no progress: this host is gone */
		_exit(0);                            /* without a goodbye to anyone */
	}
	fx_fill(buf, GONE_LEN, 11, 0);
	fx_pbarrier(ctx, &fx);
	if (me == 0) {
		struct fx_comp c;
		struct fi_cq_err_entry err;
		FX_OK(&fx, fi_tsend(fx.ep, buf, GONE_LEN, NULL, fx.peers[2], 1, NULL));
		fx_wait(&fx, 1, &c, TMO);
		while (!fx_sh->flag[0])
			fx_progress(&fx);
		double t0 = ft_now();
		FX_OK(&fx, fi_tsend(fx.ep, buf, GONE_LEN, NULL, fx.peers[2], 2, NULL));
		fx_sh->flag[2] = 1;
		int r = fx_wait_any(&fx, &c, &err,
				    (killed ? PEER_KILLED_BOUND_S : GONE_BOUND_S) * 1000);
		fx_sh->flag[1] = 1;
		FT_CHECK(r == -FI_EAVAIL, "rank 0: a send to a %s gave %s after %.1f s instead of an "
			 "error", killed ? "peer that died" : "host that is gone",
			 r == 1 ? "success" : "nothing", ft_now() - t0);
		printf("rank 0: send to the %s failed after %.1f s: %s\n",
		       killed ? "dead peer" : "vanished host", ft_now() - t0, fi_strerror(err.err));
	}
	/* Ranks 0 and 1 (one host) still talk. */
	int peer = 1 - me;
	uint8_t *rb = fx_alloc(RNDV_LEN);
	struct fx_comp c[2];
	while (!fx_sh->flag[1])
		fx_progress(&fx);
	FX_OK(&fx, fi_trecv(fx.ep, rb, RNDV_LEN, NULL, fx.peers[peer], 3, 0, NULL));
	fx_fill(buf, RNDV_LEN, 20 + (uint64_t)me, 0);
	FX_OK(&fx, fi_tsend(fx.ep, buf, RNDV_LEN, NULL, fx.peers[peer], 3, NULL));
	fx_wait(&fx, 2, c, TMO);
	FX_CHECK_PATTERN(rb, RNDV_LEN, 20 + (uint64_t)peer, 0, "rank %d: message from rank %d "
			 "after the other host vanished", me, peer);
	printf("rank %d: exchange with rank %d (same host) still works\n", me, peer);
	/* Closing with the vanished peer's operations finished in error must not hang. */
	fx_close(&fx);
	return 0;
}

/* ---- both ranks connect at once ------------------------------------------------------------ */

#define RACE_ROUNDS 10

/*
 * Fresh endpoints each round, receives posted, then (a barrier without progress, so neither
 * side reads its connection events before both have sent) an eager and a rendezvous message
 * each way at once.  Over FI_EP_MSG both sides ask for a connection; the log shows the rounds
 * where the requests crossed (ofi_msg_race.sh counts them), the bytes show the race's outcome.
 */
static int t_connect_race(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED};
	int me = ctx->rank, peer = 1 - me;

	for (int round = 0; round < RACE_ROUNDS; round++) {
		struct fx fx;
		struct fx_comp c[4];
		uint8_t *sb = fx_alloc(RNDV_LEN), *rb = fx_alloc(RNDV_LEN);
		uint8_t *se = fx_alloc(EAGER_LEN), *re = fx_alloc(EAGER_LEN);

		fx_open(ctx, &o, &fx);
		fx_fill(se, EAGER_LEN, seed_of(me, peer, 0) + (uint64_t)round, 0);
		fx_fill(sb, RNDV_LEN, seed_of(me, peer, 1) + (uint64_t)round, 0);
		FX_OK(&fx, fi_trecv(fx.ep, re, EAGER_LEN, NULL, fx.peers[peer], 1, 0, NULL));
		FX_OK(&fx, fi_trecv(fx.ep, rb, RNDV_LEN, NULL, fx.peers[peer], 2, 0, NULL));
		fx_pbarrier(ctx, NULL);
		FX_OK(&fx, fi_tsend(fx.ep, se, EAGER_LEN, NULL, fx.peers[peer], 1, NULL));
		FX_OK(&fx, fi_tsend(fx.ep, sb, RNDV_LEN, NULL, fx.peers[peer], 2, NULL));
		fx_wait(&fx, 4, c, TMO);
		FX_CHECK_PATTERN(re, EAGER_LEN, seed_of(peer, me, 0) + (uint64_t)round, 0,
				 "rank %d round %d: eager message", me, round);
		FX_CHECK_PATTERN(rb, RNDV_LEN, seed_of(peer, me, 1) + (uint64_t)round, 0,
				 "rank %d round %d: rendezvous message", me, round);
		fx_pbarrier(ctx, &fx);
		fx_close(&fx);
		free(sb);
		free(rb);
		free(se);
		free(re);
	}
	printf("rank %d: %d rounds of sends crossing at the first contact\n", me, RACE_ROUNDS);
	return 0;
}

/* ---- hostile connection requests --------------------------------------------------------- */

/* The ofi wire's blob (wire/ofi/blob.h): core_len at byte 5, core_id at 8, uid at 12, the core
 * address from byte 20. */
#define BLOB_LEN 64
#define BLOB_CORE_LEN 5
#define BLOB_CORE_ID 8
#define BLOB_UID 12
#define BLOB_CORE_ADDR 20

/* Connect to addr with libfabric's tcp (FI_EP_MSG) directly, data as the request's; 1 if the
 * connection was made, 0 if refused or shut, within 10 s (the target progresses meanwhile). */
static int raw_connect(struct fid_fabric *fab, struct fid_domain *dom, struct fi_info *info,
		       const void *addr, const void *data, size_t len)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE };
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int made = -1;

	FT_CHECK(fi_eq_open(fab, &eq_attr, &eq, NULL) == 0, "raw fi_eq_open");
	FT_CHECK(fi_cq_open(dom, &cq_attr, &cq, NULL) == 0, "raw fi_cq_open");
	FT_CHECK(fi_endpoint(dom, info, &ep, NULL) == 0, "raw fi_endpoint");
	FT_CHECK(fi_ep_bind(ep, &eq->fid, 0) == 0 && fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)
		 == 0 && fi_enable(ep) == 0, "raw endpoint bind/enable");
	FT_CHECK(fi_connect(ep, addr, data, len) == 0, "raw fi_connect");
	double t0 = ft_now();
	while (made < 0 && ft_now() - t0 < 10) {
		struct fi_eq_cm_entry e;
		uint32_t ev;
		ssize_t r = fi_eq_read(eq, &ev, &e, sizeof(e), 0);

		if (r == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };
			(void)fi_eq_readerr(eq, &err, 0);
			made = 0;
		} else if (r > 0) {
			made = ev == FI_CONNECTED;
		} else {
			usleep(1000);
		}
	}
	FT_CHECK(made >= 0, "no answer to a connection request in 10 s");
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&eq->fid);
	return made;
}

static int t_connreq_hostile(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED};
	uint8_t *buf = fx_alloc(EAGER_LEN);

	fx_open(ctx, &o, &fx);
	if (strcmp(fx.info->fabric_attr->prov_name, "tcp;ddtx")) {
		fx_close(&fx);
		return FT_SKIP;                  /* the ofi wire over tcp's FI_EP_MSG only */
	}
	if (ctx->rank == 0) {
		size_t len = BLOB_LEN;
		FT_CHECK(fi_getname(&fx.ep->fid, fx_shmem, &len) == 0 && len == BLOB_LEN,
			 "rank 0: fi_getname");
		FX_OK(&fx, fi_trecv(fx.ep, buf, EAGER_LEN, NULL, fx.peers[1], 7, 0, NULL));
		fx_pbarrier(ctx, &fx);
		struct fx_comp c;
		fx_wait(&fx, 1, &c, TMO);        /* progress: the hostile requests are handled */
		FX_CHECK_PATTERN(buf, EAGER_LEN, seed_of(1, 0, 7), 0,
				 "rank 0: the real message after the hostile requests");
		printf("rank 0: the real message arrived after the refused requests\n");
	} else {
		fx_pbarrier(ctx, &fx);
		uint8_t blob[BLOB_LEN], data[BLOB_LEN + 8];
		memcpy(blob, fx_shmem, BLOB_LEN);
		struct fi_info *hints = fi_allocinfo(), *info;
		hints->ep_attr->type = FI_EP_MSG;
		hints->caps = FI_MSG;
		hints->fabric_attr->prov_name = strdup("tcp");
		hints->addr_format = blob[BLOB_CORE_LEN] == sizeof(struct sockaddr_in6) ?
				     FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
		FT_CHECK(fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, hints, &info) == 0,
			 "rank 1: tcp FI_EP_MSG fi_getinfo");
		struct fid_fabric *fab;
		struct fid_domain *dom;
		FT_CHECK(fi_fabric(info->fabric_attr, &fab, NULL) == 0 &&
			 fi_domain(fab, info, &dom, NULL) == 0, "rank 1: raw tcp fabric/domain");
		const uint8_t *addr = blob + BLOB_CORE_ADDR;
		struct { const char *what; size_t len; } cases[] = {
			{"no data", 0}, {"a short blob", BLOB_LEN - 1}, {"random bytes", BLOB_LEN},
			{"another core's blob", BLOB_LEN}, {"uid 0", BLOB_LEN},
			{"bytes after the blob", BLOB_LEN + 8},
		};
		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			memcpy(data, blob, BLOB_LEN);   /* rank 0's own blob, altered below */
			memset(data + BLOB_LEN, 0, 8);
			if (k == 2)
				for (size_t i = 0; i < BLOB_LEN; i++)
					data[i] = (uint8_t)(0x9e3779b9u * (i + 1) >> 13);
			if (k == 3)
				data[BLOB_CORE_ID] ^= 0x5a;
			if (k == 4)
				memset(data + BLOB_UID, 0, 8);
			if (k == 5)
				data[BLOB_LEN + 3] = 1;
			int made = raw_connect(fab, dom, info, addr, data, cases[k].len);
			FT_CHECK(!made, "rank 1: a connection request with %s was accepted",
				 cases[k].what);
			printf("rank 1: a request with %s refused\n", cases[k].what);
		}
		fi_close(&dom->fid);
		fi_close(&fab->fid);
		fi_freeinfo(info);
		fi_freeinfo(hints);
		fx_fill(buf, EAGER_LEN, seed_of(1, 0, 7), 0);
		FX_OK(&fx, fi_tsend(fx.ep, buf, EAGER_LEN, NULL, fx.peers[0], 7, NULL));
		struct fx_comp c;
		fx_wait(&fx, 1, &c, TMO);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	free(buf);
	return 0;
}

/* ---- the shm wire cannot cross hosts ------------------------------------------------------ */

/*
 * With the shm wire alone, a rank on another host is unreachable: its region is in another
 * /dev/shm.  The send fails (at the post or as an error completion); nothing arrives.  Shows
 * that the hosts are apart for ddtx, so the wire-per-peer tests cannot pass over shm by accident.
 */
static int t_shm_isolated(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED};
	uint8_t buf[4096];

	if (ft_host_of(0, 2) < 0 || ft_host_of(0, 2) == ft_host_of(1, 2))
		return FT_SKIP;
	fx_open(ctx, &o, &fx);
	if (ctx->rank == 1) {
		FX_OK(&fx, fi_trecv(fx.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, NULL));
		fx_pbarrier(ctx, &fx);
		fx_expect_none(&fx, 3000);
	} else {
		struct fx_comp c;
		struct fi_cq_err_entry err;
		memset(buf, 0x5a, sizeof(buf));
		fx_pbarrier(ctx, &fx);
		ssize_t r = FX_POST(&fx, fi_tsend(fx.ep, buf, sizeof(buf), NULL, fx.peers[1], 1,
						  NULL));
		if (r == 0) {
			int w = fx_wait_any(&fx, &c, &err, 30000);
			FT_CHECK(w == -FI_EAVAIL, "rank 0: a send over shm to another host gave %s",
				 w == 1 ? "success" : "nothing in 30 s");
			r = -err.err;
		}
		printf("rank 0: shm send to the other host refused: %s\n",
		       fi_strerror((int)-r));
	}
	fx_pbarrier(ctx, NULL);
	fx_close(&fx);
	return 0;
}

static const struct fx_test tests[] = {
	{"shm_isolated", 2, 60, t_shm_isolated, NULL},
	{"wire_per_peer_4", 4, 120, t_wire_per_peer, NULL},
	{"all_to_all_4", 4, 120, t_all_to_all, NULL},
	{"peer_host_gone", 3, 150, t_peer_host_gone, NULL},
	{"peer_killed_3", 3, 60, t_peer_host_gone, "killed"},
	{"connect_race_2", 2, 60, t_connect_race, NULL},
	{"connreq_hostile_2", 2, 90, t_connreq_hostile, NULL},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
