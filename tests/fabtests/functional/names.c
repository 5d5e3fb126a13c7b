/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Names across hosts (util/hosts.sh run; rank 0 on host A is the client, rank 1 on host B the
 * server), as upstream fabtests use them: the server asks fi_getinfo(its address, service,
 * FI_SOURCE) and opens its endpoint from it; the client asks fi_getinfo(the server's address,
 * service, 0) with the src_addr of fi_getinfo(its address, NULL, FI_SOURCE) in the hints, and
 * inserts dest_addr.  No address travels out of band except the client's, which the server
 * needs to answer (fabtests send it in a message).
 *  - across: dest_addr is the 64-byte name fi_av_straddr prints as fi_ddtx://svc/S@<addr>;
 *    inserted, it resolves to exactly the server's fi_getname; an eager and a rendezvous
 *    message reach the server and its answer comes back, every byte checked;
 *  - rebind: three servers one after the other on the same service (a new process each time
 *    would do the same; here a new fabric each round), the client resolving the name afresh
 *    each round in one domain: it reaches every new server, never a stale address;
 *  - no_node: as across, but the server asks fi_getinfo(NULL, service, FI_SOURCE), as an
 *    upstream fabtests server started without -s does: its name must still be the address the
 *    client resolves (over FI_EP_MSG the core's answer is the wildcard 0.0.0.0, and the client
 *    dropped every answer of the server's until the wire put the interface's address there);
 *  - restart: as rebind, but the client keeps one endpoint (and AV entry) for the three servers,
 *    as a long-lived client of a server that is restarted does: the new server is the same
 *    fi_addr.  The sends that meet the old server's end may fail (-FI_EIO, nothing else); sent
 *    again they reach the new server, every byte checked, each message exactly once (nothing
 *    of the client's is left at the server after the exchange), and its answer comes back.
 *    Without the wire starting the peer afresh every later send failed too;
 *  - reuse_port: as upstream fi_rdm_multi_client, one server endpoint and clients one after the
 *    other, the second bound to the port the first had (the kernel hands ports out again: that
 *    test hung about once in 250 runs between the hosts).  The second client's address must not
 *    be the first one's, and the server must reach it: an endpoint bound to a node alone took
 *    a uid computed from its core address, so the two were equal and the server's AV gave back
 *    the first client's fi_addr, whose state (its ring) led the answer astray.  Over the ofi
 *    wire only (its address names the core's port; a multi wire's does not).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fx.h"

#define SVC "9330"
#define TMO 30000
#define EAGER 1000
#define RNDV 200000
#define REPLY 3000

struct names_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fi_allocinfo();

	FT_CHECK(h, "fi_allocinfo");
	h->caps = FI_MSG | FI_TAGGED;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("ddtx");
	return h;
}

static void open_domain(struct names_ep *n)
{
	FT_CHECK(fi_fabric(n->info->fabric_attr, &n->fabric, NULL) == 0, "fi_fabric");
	FT_CHECK(fi_domain(n->fabric, n->info, &n->domain, NULL) == 0, "fi_domain");
}

static void open_ep(struct names_ep *n)
{
	struct fi_av_attr av = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .size = 64};
	int ret;

	FT_CHECK(fi_av_open(n->domain, &av, &n->av, NULL) == 0, "fi_av_open");
	FT_CHECK(fi_cq_open(n->domain, &cq, &n->cq, NULL) == 0, "fi_cq_open");
	ret = fi_endpoint(n->domain, n->info, &n->ep, NULL);
	FT_CHECK(ret == 0, "fi_endpoint: %s", fi_strerror(-ret));
	FT_CHECK(fi_ep_bind(n->ep, &n->av->fid, 0) == 0, "bind av");
	FT_CHECK(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
	FT_CHECK(fi_enable(n->ep) == 0, "fi_enable");
}

static void close_ep(struct names_ep *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->cq->fid);
	fi_close(&n->av->fid);
}

static void close_domain(struct names_ep *n)
{
	fi_close(&n->domain->fid);
	fi_close(&n->fabric->fid);
	fi_freeinfo(n->info);
}

/* The server's info: its own address (NULL: none, the core's default) and the service,
 * FI_SOURCE. */
static void server_info(struct names_ep *n, const char *me)
{
	struct fi_info *h = hints_new();
	int ret = fi_getinfo(FI_VERSION(1, 14), me, SVC, FI_SOURCE, h, &n->info);

	FT_CHECK(ret == 0, "server fi_getinfo(%s, %s, FI_SOURCE): %s", me ? me : "NULL", SVC,
		 fi_strerror(-ret));
	FT_CHECK(n->info->src_addr && n->info->src_addrlen == 64 && !n->info->dest_addr,
		 "server: src_addr of %zu bytes", n->info->src_addrlen);
	fi_freeinfo(h);
}

/* The client's info, as fabtests ask for it: the source from its address (and port, if
 * port), then the server. */
static void client_info(struct names_ep *n, const char *me, const char *port, const char *server)
{
	struct fi_info *h = hints_new(), *src = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 14), me, port, FI_SOURCE, h, &src);

	FT_CHECK(ret == 0 && src->src_addr, "client fi_getinfo(%s, %s, FI_SOURCE): %s", me,
		 port ? port : "NULL", fi_strerror(-ret));
	h->src_addr = malloc(src->src_addrlen);
	memcpy(h->src_addr, src->src_addr, src->src_addrlen);
	h->src_addrlen = src->src_addrlen;
	fi_freeinfo(src);
	ret = fi_getinfo(FI_VERSION(1, 14), server, SVC, 0, h, &n->info);
	FT_CHECK(ret == 0, "client fi_getinfo(%s, %s): %s", server, SVC, fi_strerror(-ret));
	FT_CHECK(n->info->dest_addr && n->info->dest_addrlen == 64,
		 "client: dest_addr of %zu bytes", n->info->dest_addrlen);
	fi_freeinfo(h);
}

/* Client side of one round: resolve, compare with the server's fi_getname, exchange. */
static void client_round(struct ft_ctx *ctx, struct names_ep *n, const char *server, int round)
{
	uint8_t mine[64], all[2][64], got[64];
	size_t len = sizeof(mine), glen = sizeof(got);
	char str[128], want[128];
	size_t slen = sizeof(str);
	fi_addr_t srv;

	FT_CHECK(fi_av_insert(n->av, n->info->dest_addr, 1, &srv, 0, NULL) == 1,
		 "round %d: the server's name did not resolve", round);
	FT_CHECK(fi_av_straddr(n->av, n->info->dest_addr, str, &slen) == str, "fi_av_straddr");
	snprintf(want, sizeof(want), "fi_ddtx://svc/%s@%s", SVC, server);
	FT_CHECK(!strcmp(str, want), "fi_av_straddr: %s, not %s", str, want);
	FT_CHECK(fi_getname(&n->ep->fid, mine, &len) == 0 && len == 64, "fi_getname");
	ft_allgather(ctx, mine, sizeof(mine), all);
	FT_CHECK(fi_av_lookup(n->av, srv, got, &glen) == 0 && glen == 64, "fi_av_lookup");
	FT_CHECK(!memcmp(got, all[1], 64), "round %d: the name resolved to another address than "
		 "the server's fi_getname", round);

	uint8_t *eager = fx_alloc(EAGER), *rndv = fx_alloc(RNDV), *reply = fx_alloc(REPLY);
	struct fi_cq_tagged_entry c[3];
	struct fi_cq_err_entry err = {0};
	uint64_t seed = 0x4e00u + 16u * (unsigned)round;

	memset(reply, 0, REPLY);
	FT_CHECK(fi_trecv(n->ep, reply, REPLY, NULL, srv, 3, 0, reply) == 0, "trecv");
	ft_barrier(ctx);
	fx_fill(eager, EAGER, seed + 1, 0);
	fx_fill(rndv, RNDV, seed + 2, 0);
	FT_CHECK(FT_POST(n->cq, fi_tsend(n->ep, eager, EAGER, NULL, srv, 1, eager)) == 0, "tsend");
	FT_CHECK(FT_POST(n->cq, fi_tsend(n->ep, rndv, RNDV, NULL, srv, 2, rndv)) == 0, "tsend");
	FT_CHECK(ft_wait(n->cq, 3, c, &err, TMO) == 3, "round %d: client completions (error %d)",
		 round, err.err);
	FX_CHECK_PATTERN(reply, REPLY, seed + 3, 0, "round %d: the server's answer", round);
	free(eager);
	free(rndv);
	free(reply);
	ft_barrier(ctx);
}

/*
 * The client's exchange with a server that may have replaced the one it last spoke to (restart):
 * each message sent again while it fails, at most ATTEMPTS times; only -FI_EIO is accepted as a
 * failure, and only from round 1 on.  FI_DELIVERY_COMPLETE: a send completes when the server
 * has the message, so the client knows which ones to send again (a send completed when it left,
 * as by default, may have met the old server's end after its completion).  Returns the
 * failures seen.
 */
#define ATTEMPTS 8
static int client_sends_retried(struct names_ep *n, fi_addr_t srv, int round, uint8_t *msgs[2],
				const size_t lens[2], bool *reply_done)
{
	bool done[2] = {false, false};
	int failures = 0;

	for (int a = 0; a < ATTEMPTS && !(done[0] && done[1]); a++) {
		int posted = 0;
		for (int i = 0; i < 2; i++)
			if (!done[i]) {
				struct iovec v = {msgs[i], lens[i]};
				struct fi_msg_tagged m = {.msg_iov = &v, .iov_count = 1,
							  .addr = srv, .tag = (uint64_t)i + 1,
							  .context = msgs[i]};
				FT_CHECK(FT_POST(n->cq, fi_tsendmsg(n->ep, &m, FI_COMPLETION |
								    FI_DELIVERY_COMPLETE)) == 0,
					 "round %d: tsend", round);
				posted++;
			}
		double deadline = ft_now() + TMO / 1000.0;
		while (posted) {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err = {0};
			ssize_t r = fi_cq_read(n->cq, &e, 1);
			FT_CHECK(ft_now() < deadline, "round %d: a send neither completed nor failed",
				 round);
			if (r == -FI_EAGAIN)
				continue;
			void *ctx = e.op_context;
			if (r == -FI_EAVAIL) {
				FT_CHECK(fi_cq_readerr(n->cq, &err, 0) == 1, "fi_cq_readerr");
				ctx = err.op_context;
				FT_CHECK(round > 0 && err.err == FI_EIO && ctx != msgs[0] + lens[0],
					 "round %d: %s failed: %s", round,
					 ctx == msgs[0] ? "the eager send" : ctx == msgs[1] ?
					 "the rendezvous send" : "the answer's receive",
					 fi_strerror(err.err));
				failures++;
			} else {
				FT_CHECK(r == 1, "round %d: fi_cq_read: %s", round,
					 fi_strerror((int)-r));
			}
			if (ctx == msgs[0] || ctx == msgs[1]) {
				done[ctx == msgs[1]] = r == 1;
				posted--;
			} else {
				*reply_done = true;
			}
		}
		if (!(done[0] && done[1]))
			usleep(20000); /* the failed sends' ends come back from the core */
	}
	FT_CHECK(done[0] && done[1], "round %d: sends still failing after %d attempts", round,
		 ATTEMPTS);
	return failures;
}

static uint64_t peer_restarts(struct names_ep *n)
{
	struct fi_ddtx_ops *ops = NULL;
	struct fi_ddtx_stats st = {0};
	FT_CHECK(fi_open_ops(&n->domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&ops, NULL) == 0 &&
		 ops && ops->stats(n->domain, &st) == 0, "the domain's statistics");
	return st.peer_restarts;
}

/* Client side of a restart round: one endpoint throughout, sends tried again; the peer started
 * afresh exactly once where sends failed. */
static void client_restart_round(struct ft_ctx *ctx, struct names_ep *n, int round)
{
	uint64_t restarts = peer_restarts(n);
	uint8_t mine[64], all[2][64];
	size_t len = sizeof(mine);
	fi_addr_t srv;
	FT_CHECK(fi_av_insert(n->av, n->info->dest_addr, 1, &srv, 0, NULL) == 1,
		 "round %d: the server's name did not resolve", round);
	FT_CHECK(fi_getname(&n->ep->fid, mine, &len) == 0 && len == 64, "fi_getname");
	ft_allgather(ctx, mine, sizeof(mine), all); /* the server learns ours */
	size_t lens[2] = {EAGER, RNDV};
	uint8_t *msgs[2] = {fx_alloc(EAGER), fx_alloc(RNDV)}, *reply = fx_alloc(REPLY);
	uint64_t seed = 0x4e00u + 16u * (unsigned)round;
	bool reply_done = false;

	memset(reply, 0, REPLY);
	/* The answer's receive, posted once: the context one past the eager buffer names it. */
	FT_CHECK(fi_trecv(n->ep, reply, REPLY, NULL, srv, 3, 0, msgs[0] + EAGER) == 0, "trecv");
	ft_barrier(ctx);
	fx_fill(msgs[0], EAGER, seed + 1, 0);
	fx_fill(msgs[1], RNDV, seed + 2, 0);
	int failures = client_sends_retried(n, srv, round, msgs, lens, &reply_done);
	if (!reply_done) {
		struct fi_cq_tagged_entry c;
		struct fi_cq_err_entry err = {0};
		FT_CHECK(ft_wait(n->cq, 1, &c, &err, TMO) == 1, "round %d: the answer (error %d)",
			 round, err.err);
	}
	FX_CHECK_PATTERN(reply, REPLY, seed + 3, 0, "round %d: the server's answer", round);
	restarts = peer_restarts(n) - restarts;
	FT_CHECK(restarts == (failures ? 1 : 0), "round %d: %d failed send(s), the peer started "
		 "afresh %llu times", round, failures, (unsigned long long)restarts);
	printf("round %d: %d send(s) failed and went again; the server's peer started afresh %llu "
	       "time(s)\n", round, failures, (unsigned long long)restarts);
	free(msgs[0]);
	free(msgs[1]);
	free(reply);
	ft_barrier(ctx);
}

/* Server side of one round: learn the client's address, check its messages, answer.
 * Returns the client's fi_addr. */
static fi_addr_t server_round(struct ft_ctx *ctx, struct names_ep *n, int round)
{
	uint8_t mine[64], all[2][64];
	size_t len = sizeof(mine);
	fi_addr_t cli;

	FT_CHECK(fi_getname(&n->ep->fid, mine, &len) == 0 && len == 64, "fi_getname");
	ft_allgather(ctx, mine, sizeof(mine), all);
	FT_CHECK(fi_av_insert(n->av, all[0], 1, &cli, 0, NULL) == 1, "insert the client");

	uint8_t *eager = fx_alloc(EAGER), *rndv = fx_alloc(RNDV), *reply = fx_alloc(REPLY);
	struct fi_cq_tagged_entry c[3];
	struct fi_cq_err_entry err = {0};
	uint64_t seed = 0x4e00u + 16u * (unsigned)round;

	FT_CHECK(fi_trecv(n->ep, eager, EAGER, NULL, cli, 1, 0, eager) == 0, "trecv");
	FT_CHECK(fi_trecv(n->ep, rndv, RNDV, NULL, cli, 2, 0, rndv) == 0, "trecv");
	ft_barrier(ctx);
	FT_CHECK(ft_wait(n->cq, 2, c, &err, TMO) == 2, "round %d: server receives (error %d)",
		 round, err.err);
	FX_CHECK_PATTERN(eager, EAGER, seed + 1, 0, "round %d: eager message", round);
	FX_CHECK_PATTERN(rndv, RNDV, seed + 2, 0, "round %d: rendezvous message", round);
	fx_fill(reply, REPLY, seed + 3, 0);
	FT_CHECK(FT_POST(n->cq, fi_tsend(n->ep, reply, REPLY, NULL, cli, 3, reply)) == 0, "tsend");
	FT_CHECK(ft_wait(n->cq, 1, c, &err, TMO) == 1, "round %d: answer sent", round);
	/* Nothing else of the client's is here: a message sent twice would be (the client's
	 * second copy follows its first on the pair's order, and both were in before the
	 * answer went). */
	struct fi_msg_tagged peek = {.addr = cli, .ignore = ~0ull, .context = n};
	FT_CHECK(fi_trecvmsg(n->ep, &peek, FI_PEEK) == 0, "fi_trecvmsg(FI_PEEK)");
	FT_CHECK(ft_wait(n->cq, 1, c, &err, TMO) == -FI_EAVAIL && err.err == FI_ENOMSG,
		 "round %d: a message of the client's is left over at the server", round);
	free(eager);
	free(rndv);
	free(reply);
	ft_barrier(ctx);
	return cli;
}

/* The hosts' addresses (ft_host_enter sets DDTX_TEST_HOST_ADDR): [0] client, [1] server. */
static void addresses(struct ft_ctx *ctx, char addr[2][32])
{
	char mine[32] = {0};
	const char *a = getenv("DDTX_TEST_HOST_ADDR");

	FT_CHECK(a && ctx->size == 2, "run under util/hosts.sh with 2 ranks");
	snprintf(mine, sizeof(mine), "%s", a);
	ft_allgather(ctx, mine, sizeof(mine), addr);
	FT_CHECK(strcmp(addr[0], addr[1]), "both ranks on one host");
}

enum names_mode { NAMES_ACROSS, NAMES_REBIND, NAMES_NO_NODE, NAMES_REUSE_PORT, NAMES_RESTART };

/* The TCP port of an ofi wire address over a sockaddr_in core (blob.h: "DOFI", core_len at 5,
 * the core address at 20); 0 for any other address. */
static unsigned ofi_port(const uint8_t blob[64])
{
	struct sockaddr_in sin;

	if (memcmp(blob, "DOFI", 4) || blob[5] != sizeof(sin))
		return 0;
	memcpy(&sin, blob + 20, sizeof(sin));
	return sin.sin_family == AF_INET ? ntohs(sin.sin_port) : 0;
}

static int t_reuse_port(struct ft_ctx *ctx, char addr[2][32])
{
	struct names_ep n = {0};
	uint8_t first[64], again[64];
	size_t len = sizeof(first);
	char port[16] = "";
	int skip = 0;

	if (ctx->rank == 0) {
		client_info(&n, addr[0], NULL, addr[1]);
		open_domain(&n);
		open_ep(&n);
		FT_CHECK(fi_getname(&n.ep->fid, first, &len) == 0, "fi_getname");
		unsigned p = ofi_port(first);
		skip = p == 0;
		snprintf(port, sizeof(port), "%u", p);
	}
	int skips[2];
	ft_allgather(ctx, &skip, sizeof(skip), skips);
	if (skips[0]) {
		if (ctx->rank == 0) {
			close_ep(&n);
			close_domain(&n);
		}
		return FT_SKIP;
	}
	if (ctx->rank == 0) {
		client_round(ctx, &n, addr[1], 0);
		close_ep(&n);
		close_domain(&n);
		/* the next client, bound to the port the first one left */
		memset(&n, 0, sizeof(n));
		client_info(&n, addr[0], port, addr[1]);
		open_domain(&n);
		open_ep(&n);
		len = sizeof(again);
		FT_CHECK(fi_getname(&n.ep->fid, again, &len) == 0, "fi_getname");
		FT_CHECK(!memcmp(first + 20, again + 20, 44), "the second client is not at port %s",
			 port);
		FT_CHECK(memcmp(first, again, 64), "the second client at port %s has the first "
			 "one's address", port);
		client_round(ctx, &n, addr[1], 1);
		close_ep(&n);
		close_domain(&n);
	} else {
		server_info(&n, addr[1]);
		open_domain(&n);
		open_ep(&n);
		fi_addr_t a = server_round(ctx, &n, 0), b = server_round(ctx, &n, 1);
		FT_CHECK(a != b, "the server's AV gave the second client the first one's fi_addr");
		close_ep(&n);
		close_domain(&n);
	}
	return 0;
}

static int t_names(struct ft_ctx *ctx, void *arg)
{
	enum names_mode mode = (enum names_mode)(uintptr_t)arg;
	int rounds = mode == NAMES_REBIND || mode == NAMES_RESTART ? 3 : 1;
	char addr[2][32];
	struct names_ep n = {0};

	if (!getenv("DDTX_HOSTS"))
		return FT_SKIP;
	addresses(ctx, addr);
	if (mode == NAMES_REUSE_PORT)
		return t_reuse_port(ctx, addr);
	if (ctx->rank == 0) {
		client_info(&n, addr[0], NULL, addr[1]);
		open_domain(&n);
		if (mode == NAMES_RESTART)
			open_ep(&n);
		for (int r = 0; r < rounds; r++) {
			if (mode != NAMES_RESTART)
				open_ep(&n);
			if (mode == NAMES_RESTART)
				client_restart_round(ctx, &n, r);
			else
				client_round(ctx, &n, addr[1], r);
			if (mode != NAMES_RESTART)
				close_ep(&n);
			ft_barrier(ctx); /* the server closes */
		}
		if (mode == NAMES_RESTART)
			close_ep(&n);
		close_domain(&n);
	} else {
		for (int r = 0; r < rounds; r++) {
			memset(&n, 0, sizeof(n));
			server_info(&n, mode == NAMES_NO_NODE ? NULL : addr[1]);
			open_domain(&n);
			open_ep(&n);
			server_round(ctx, &n, r);
			close_ep(&n);
			close_domain(&n);
			ft_barrier(ctx);
		}
	}
	return 0;
}

static const struct fx_test tests[] = {
	{"across", 2, 60, t_names, (void *)NAMES_ACROSS},
	{"rebind", 2, 90, t_names, (void *)NAMES_REBIND},
	{"no_node", 2, 60, t_names, (void *)NAMES_NO_NODE},
	{"reuse_port", 2, 60, t_names, (void *)NAMES_REUSE_PORT},
	{"restart", 2, 90, t_names, (void *)NAMES_RESTART},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
