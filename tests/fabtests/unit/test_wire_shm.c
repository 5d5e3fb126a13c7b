/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the shm wire (wire/wire.h, wire/shm/).  Multi-process tests fork real
 * processes and exchange address blobs and key descriptions through pipes.
 *
 * usage: test_wire_shm [basic|msg|rma|death|stale|mpsc|all]
 * exit status: 0 pass, 1 fail, 77 skip (cross-memory attach not permitted here).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/shm/shm.h"
#include "wire/wire.h"

static const char *g_test = "?";

#define CHECK(cond, ...)                                                                         \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "[%s pid %d] %s:%d: check failed: %s: ", g_test,        \
				(int)getpid(), __FILE__, __LINE__, #cond);                       \
			fprintf(stderr, __VA_ARGS__);                                            \
			fprintf(stderr, "\n");                                                   \
			_exit(1);                                                                \
		}                                                                                \
	} while (0)
#define CHECK_RET(expr, want)                                                                    \
	do {                                                                                     \
		int _r = (expr);                                                                 \
		CHECK(_r == (want), "%s returned %d (%s), expected %d", #expr, _r,              \
		      fi_strerror(-_r), (want));                                                 \
	} while (0)

/* ---- helpers ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}
static size_t rnd_range(size_t lo, size_t hi) /* inclusive */
{
	return lo + (size_t)(rnd() % (hi - lo + 1));
}

static void write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n > 0, "pipe write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n > 0, "pipe read: %s", n ? strerror(errno) : "EOF");
		p += n;
		len -= (size_t)n;
	}
}

static void send_cmd(int fd, char c)
{
	write_all(fd, &c, 1);
}
static char recv_cmd(int fd)
{
	char c;
	read_all(fd, &c, 1);
	return c;
}

struct chan {
	int p2c[2], c2p[2];
	int rd, wr;  /* this side's ends after fork */
};

static pid_t fork_chan(struct chan *ch)
{
	pid_t pid;

	CHECK(pipe(ch->p2c) == 0 && pipe(ch->c2p) == 0, "pipe: %s", strerror(errno));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(ch->p2c[1]);
		close(ch->c2p[0]);
		ch->rd = ch->p2c[0];
		ch->wr = ch->c2p[1];
	} else {
		close(ch->p2c[0]);
		close(ch->c2p[1]);
		ch->rd = ch->c2p[0];
		ch->wr = ch->p2c[1];
	}
	return pid;
}

static void wait_child(pid_t pid, int want_status)
{
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
	if (want_status >= 0)
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == want_status,
		      "child exited with status %#x", st);
}

/* Receive-side bookkeeping for the handlers. */
#define MAX_MSGS 64
struct rx {
	int nrecv;
	ddtx_peer_t src[MAX_MSGS];
	size_t len[MAX_MSGS];
	uint8_t *buf[MAX_MSGS];
	const uint8_t *at[MAX_MSGS];             /* where the message lay in the ring */
	int ncompl;
	void *ctx[MAX_MSGS];
	int status[MAX_MSGS];
	int in_post;                             /* set while a post call runs */
	int cb_in_post;                          /* a callback ran inside a post: a bug */
};

static void on_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len)
{
	struct rx *rx = arg;
	int i = rx->nrecv % MAX_MSGS;

	if (rx->in_post)
		rx->cb_in_post++;
	free(rx->buf[i]);
	rx->buf[i] = malloc(len ? len : 1);
	memcpy(rx->buf[i], buf, len);
	rx->at[i] = buf;
	rx->src[i] = src;
	rx->len[i] = len;
	rx->nrecv++;
}

static void on_complete(void *arg, void *ctx, int status)
{
	struct rx *rx = arg;
	int i = rx->ncompl % MAX_MSGS;

	if (rx->in_post)
		rx->cb_in_post++;
	rx->ctx[i] = ctx;
	rx->status[i] = status;
	rx->ncompl++;
}

static const struct ddtx_wire_handlers handlers = { on_recv, on_complete };

static void open_wire(const struct ddtx_wire_params *params, struct rx *rx,
		      struct ddtx_wire_domain **dom, struct ddtx_wire_ep **ep)
{
	CHECK_RET(ddtx_wire_domain_open(params, dom), 0);
	CHECK_RET(ddtx_wire_ep_open(*dom, &handlers, rx, ep), 0);
}

static void exchange_addr(struct chan *ch, struct ddtx_wire_ep *ep, uint8_t *peer_addr)
{
	uint8_t addr[64];
	size_t len = sizeof(addr);

	CHECK_RET(ddtx_wire_ep_getname(ep, addr, &len), 0);
	CHECK(len == DDTX_SHM_ADDR_LEN, "addr_len %zu", len);
	write_all(ch->wr, addr, len);
	read_all(ch->rd, peer_addr, len);
}

static int progress_until(struct ddtx_wire_ep *ep, int *counter, int want)
{
	for (int spins = 0; *counter < want; spins++) {
		ddtx_wire_ep_progress(ep);
		if (spins > 2000000)
			return -1;
		if (spins > 1000)
			usleep(10);
	}
	return 0;
}

/* Post an RMA and return its completion status (delivered by progress, never by the post). */
static int rma_sync(struct ddtx_wire_ep *ep, struct rx *rx, bool write, ddtx_peer_t peer,
		    const struct iovec *iov, size_t cnt, enum ddtx_key_space space, uint64_t key,
		    uint64_t raddr, size_t len)
{
	static int ctxv;
	int before = rx->ncompl, ret;

	rx->in_post = 1;
	ret = write ? ddtx_wire_write(ep, peer, iov, cnt, space, key, raddr, len, &ctxv)
		    : ddtx_wire_read(ep, peer, iov, cnt, space, key, raddr, len, &ctxv);
	rx->in_post = 0;
	CHECK(ret == 0, "post returned %d (%s)", ret, fi_strerror(-ret));
	CHECK(rx->ncompl == before, "completion delivered inside the post call");
	CHECK(progress_until(ep, &rx->ncompl, before + 1) == 0, "no completion");
	CHECK(rx->ctx[before % MAX_MSGS] == &ctxv, "wrong completion context");
	return rx->status[before % MAX_MSGS];
}

/* Split [buf, buf+len) into n random pieces (n <= len unless len is 0). */
static size_t split(uint8_t *buf, size_t len, size_t n, struct iovec *iov)
{
	if (!len) {
		iov[0].iov_base = buf;
		iov[0].iov_len = 0;
		return 1;
	}
	if (n > len)
		n = len;
	size_t left = len;
	for (size_t i = 0; i < n; i++) {
		size_t take = (i == n - 1) ? left : rnd_range(1, left - (n - 1 - i));
		if (i < n - 1 && take > 2 * len / n + 1)
			take = rnd_range(1, DDTX_MIN(left - (n - 1 - i), 2 * len / n + 1));
		iov[i].iov_base = buf;
		iov[i].iov_len = take;
		buf += take;
		left -= take;
	}
	return n;
}

static void check_cma_permitted(void)
{
	int p[2];
	char c = 0, probe = 42, dst = 0;
	pid_t pid;

	CHECK(pipe(p) == 0, "pipe");
	pid = fork();
	if (pid == 0) {
		_exit(read(p[0], &c, 1) == 1 ? 0 : 1); /* wait for the probe */
	}
	struct iovec l = { &dst, 1 }, r = { &probe, 1 };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	int err = errno;
	CHECK(write(p[1], &c, 1) == 1, "release the child");
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
	if (n != 1 || dst != 42) {
		fprintf(stderr, "SKIP: process_vm_readv not permitted here (%s)\n", strerror(err));
		exit(77);
	}
}

static void region_mode_check(const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	CHECK(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	CHECK((st.st_mode & 07777) == 0600, "%s has mode %o", path, st.st_mode & 07777);
	CHECK(st.st_uid == geteuid(), "%s owned by %u", path, st.st_uid);
}

static bool region_exists(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	return access(path, F_OK) == 0;
}

/* ================================================================================= basic */
static void test_basic(void)
{
	struct ddtx_wire_params params = { 0 };
	struct ddtx_wire_domain *dom;
	struct ddtx_wire_ep *ep1, *ep2;
	const struct ddtx_wire_caps *caps;
	struct rx rx1 = { 0 }, rx2 = { 0 };
	uint8_t a1[64], a2[64], small[8];
	size_t len;
	ddtx_peer_t p2, p2b, pself;
	char dom_name[DDTX_SHM_NAME_MAX], ep_name[DDTX_SHM_NAME_MAX];

	/* caps and defaults */
	CHECK_RET(ddtx_wire_domain_open(NULL, &dom), 0);
	caps = ddtx_wire_domain_caps(dom);
	CHECK(!strcmp(caps->name, "shm"), "name %s", caps->name);
	CHECK(caps->max_sge == 30 && caps->max_mkey_entries == 32, "sge %zu mkey %zu",
	      caps->max_sge, caps->max_mkey_entries);
	CHECK(caps->max_send_size == 131072 + 4096 - DDTX_SHM_SLOT_HDR, "max_send %zu",
	      caps->max_send_size);
	CHECK(caps->inline_size == caps->max_send_size, "inline %zu", caps->inline_size);
	CHECK(caps->max_rma_size >= ((size_t)1 << 40), "max_rma %zu", caps->max_rma_size);
	CHECK(caps->addr_len == DDTX_SHM_ADDR_LEN && caps->addr_len <= 64, "addr_len %zu",
	      caps->addr_len);
	CHECK(!caps->strided_mkeys && !caps->recv_scatter, "flags");
	region_mode_check(ddtx_shm_domain_of(dom)->map.name);
	snprintf(dom_name, sizeof(dom_name), "%s", ddtx_shm_domain_of(dom)->map.name);
	ddtx_wire_domain_close(dom);
	CHECK(!region_exists(dom_name), "domain region not unlinked at close");

	/* params override; tiny key table to test capacity and the segment pool */
	params.max_sge = 7;
	params.max_mkey_entries = 4;
	params.key_slots = 16;
	params.key_segments = 64;
	params.ring_slots = 4;
	params.slot_size = 1024;
	CHECK_RET(ddtx_wire_domain_open(&params, &dom), 0);
	caps = ddtx_wire_domain_caps(dom);
	CHECK(caps->max_sge == 7 && caps->max_mkey_entries == 4, "params not applied");
	CHECK(caps->max_send_size == 1024 - DDTX_SHM_SLOT_HDR, "max_send %zu",
	      caps->max_send_size);

	static uint8_t mem[4096];
	struct iovec iov[80];
	struct ddtx_wire_mr *mrs[20], *mr, *mr2;
	for (int i = 0; i < 80; i++) {
		iov[i].iov_base = mem + i * 16;
		iov[i].iov_len = 8;
	}
	/* limits on entries */
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 5, DDTX_KEY_INTERNAL, NULL, 0, 0, &mr), -FI_EINVAL);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 65, DDTX_KEY_APP, NULL, 0, 0, &mr), -FI_EINVAL);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, NULL, 0, 1u << 9, &mr), -FI_EINVAL);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 4, DDTX_KEY_INTERNAL, NULL, 0, DDTX_ACC_REMOTE_READ,
				   &mr), 0);
	CHECK(mr->len == 32 && mr->space == DDTX_KEY_INTERNAL, "mr fields");
	/* APP space may exceed max_mkey_entries; fill the pool: 60 left */
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 60, DDTX_KEY_APP, NULL, 0, 0, &mr2), 0);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, NULL, 0, 0, &mrs[0]), -FI_ENOSPC);
	CHECK_RET(ddtx_wire_mr_dereg(dom, mr2), 0);
	CHECK_RET(ddtx_wire_mr_dereg(dom, mr), 0);
	/* pool coalescing: 64 single keys cannot exist (16 keys max), so 16 x 4 then one 64 */
	for (int i = 0; i < 16; i++)
		CHECK_RET(ddtx_wire_mr_reg(dom, iov, 4, DDTX_KEY_APP, NULL, 0, 0, &mrs[i]), 0);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 0, DDTX_KEY_APP, NULL, 0, 0, &mrs[16]), -FI_ENOSPC);
	for (int i = 0; i < 16; i += 2)   /* free in an order that needs coalescing */
		CHECK_RET(ddtx_wire_mr_dereg(dom, mrs[i]), 0);
	for (int i = 15; i > 0; i -= 2)
		CHECK_RET(ddtx_wire_mr_dereg(dom, mrs[i]), 0);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 64, DDTX_KEY_APP, NULL, 0, 0, &mr), 0);
	CHECK_RET(ddtx_wire_mr_dereg(dom, mr), 0);

	/* chosen keys are unique, also across deregistration */
	uint64_t seen[400];
	int nseen = 0;
	for (int round = 0; round < 25; round++) {
		for (int i = 0; i < 16; i++) {
			CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, NULL, 0, 0, &mrs[i]), 0);
			for (int j = 0; j < nseen; j++)
				CHECK(seen[j] != mrs[i]->key, "key %#llx reused",
				      (unsigned long long)seen[j]);
			seen[nseen++] = mrs[i]->key;
		}
		for (int i = 0; i < 16; i++)
			CHECK_RET(ddtx_wire_mr_dereg(dom, mrs[i]), 0);
	}

	/* requested keys: collisions per space */
	uint64_t k = 42;
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, &k, 0, 0, &mr), 0);
	CHECK(mr->key == 42, "requested key not used");
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, &k, 0, 0, &mr2), -FI_ENOKEY);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_INTERNAL, &k, 0, 0, &mr2), 0);
	CHECK_RET(ddtx_wire_mr_dereg(dom, mr), 0);
	CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, &k, 0, 0, &mr), 0);
	CHECK_RET(ddtx_wire_mr_dereg(dom, mr), 0);
	CHECK_RET(ddtx_wire_mr_dereg(dom, mr2), 0);

	/* endpoints in one process: addressing, self send, loopback RMA */
	CHECK_RET(ddtx_wire_ep_open(dom, &handlers, &rx1, &ep1), 0);
	CHECK_RET(ddtx_wire_ep_open(dom, &handlers, &rx2, &ep2), 0);
	region_mode_check(ddtx_shm_ep_of(ep1)->map.name);
	len = sizeof(small);
	CHECK_RET(ddtx_wire_ep_getname(ep1, small, &len), -FI_ETOOSMALL);
	CHECK(len == DDTX_SHM_ADDR_LEN, "len %zu", len);
	len = sizeof(a1);
	CHECK_RET(ddtx_wire_ep_getname(ep1, a1, &len), 0);
	len = sizeof(a2);
	CHECK_RET(ddtx_wire_ep_getname(ep2, a2, &len), 0);
	CHECK(memcmp(a1, a2, len), "two endpoints share an address");
	CHECK_RET(ddtx_wire_peer_insert(ep1, a2, len, &p2), 0);
	CHECK_RET(ddtx_wire_peer_insert(ep1, a2, len, &p2b), 0);
	CHECK(p2 == p2b && p2 == 0, "same blob gave handles %u and %u", p2, p2b);
	CHECK_RET(ddtx_wire_peer_insert(ep1, a1, len, &pself), 0);
	CHECK(pself == 1, "handles not dense: %u", pself);
	CHECK_RET(ddtx_wire_peer_insert(ep1, a2, len - 1, &p2b), -FI_EINVAL);
	uint8_t bad[64];
	memcpy(bad, a2, len);
	bad[0] ^= 1;
	CHECK_RET(ddtx_wire_peer_insert(ep1, bad, len, &p2b), -FI_EINVAL);
	uint8_t back[64];
	size_t blen = sizeof(back);
	CHECK_RET(ddtx_wire_peer_addr(ep1, p2, back, &blen), 0);
	CHECK(blen == len && !memcmp(back, a2, len), "peer_addr differs");
	CHECK(ddtx_wire_peer_alive(ep1, p2), "live peer reported dead");
	CHECK(!ddtx_wire_peer_alive(ep1, 77), "unknown handle reported alive");

	char hello[] = "hello";
	struct iovec hv = { hello, 6 };
	CHECK_RET(ddtx_wire_send(ep1, p2, "H", 1, &hv, 1), 0);
	CHECK_RET(ddtx_wire_send(ep1, pself, NULL, 0, &hv, 1), 0);
	CHECK_RET(ddtx_wire_send(ep1, 99, NULL, 0, &hv, 1), -FI_EINVAL);
	struct iovec many[8];
	for (int i = 0; i < 8; i++)
		many[i] = hv;
	CHECK_RET(ddtx_wire_send(ep1, p2, NULL, 0, many, 8), -FI_EINVAL);   /* > max_sge 7 */
	CHECK(rx2.nrecv == 0 && rx1.nrecv == 0, "delivered without progress");
	CHECK(ddtx_wire_ep_progress(ep2) == 1, "ep2 progress");
	CHECK(rx2.nrecv == 1 && rx2.len[0] == 7 && !memcmp(rx2.buf[0], "Hhello", 7), "ep2 msg");
	CHECK(ddtx_wire_ep_progress(ep1) == 1 && rx1.nrecv == 1 && rx1.src[0] == pself,
	      "self message (src %u)", rx1.src[0]);
	/* ep2 learned ep1 on first contact: reply without an insert */
	ddtx_peer_t p1 = rx2.src[0];
	blen = sizeof(back);
	CHECK_RET(ddtx_wire_peer_addr(ep2, p1, back, &blen), 0);
	CHECK(!memcmp(back, a1, len), "first-contact handle has the wrong address");
	CHECK_RET(ddtx_wire_send(ep2, p1, "R", 1, NULL, 0), 0);
	CHECK(ddtx_wire_ep_progress(ep1) == 1 && rx1.src[1] == p2, "reply src %u", rx1.src[1]);

	/* loopback RMA through the same process */
	uint8_t tgt[256], src[256];
	for (int i = 0; i < 256; i++) {
		tgt[i] = 0xee;
		src[i] = (uint8_t)i;
	}
	struct iovec tv[2] = { { tgt, 100 }, { tgt + 150, 100 } };
	CHECK_RET(ddtx_wire_mr_reg(dom, tv, 2, DDTX_KEY_INTERNAL, NULL, 1000,
				   DDTX_ACC_REMOTE_WRITE | DDTX_ACC_REMOTE_READ, &mr), 0);
	struct iovec sv[3] = { { src, 10 }, { src + 10, 0 }, { src + 10, 170 } };
	CHECK_RET(rma_sync(ep1, &rx1, true, p2, sv, 3, DDTX_KEY_INTERNAL, mr->key, 1010, 180), 0);
	for (int i = 0; i < 256; i++) {
		uint8_t want = (i >= 10 && i < 100) ? (uint8_t)(i - 10)
			     : (i >= 150 && i < 240) ? (uint8_t)(i - 150 + 90) : 0xee;
		CHECK(tgt[i] == want, "loopback byte %d = %u, want %u", i, tgt[i], want);
	}
	CHECK_RET(rma_sync(ep1, &rx1, true, p2, sv, 3, DDTX_KEY_APP, mr->key, 1010, 180),
		  -FI_EKEYREJECTED);
	CHECK_RET(rma_sync(ep1, &rx1, true, p2, sv, 3, DDTX_KEY_INTERNAL, mr->key, 1030, 180),
		  -FI_EACCES);
	CHECK_RET(rma_sync(ep1, &rx1, true, p2, sv, 0, DDTX_KEY_INTERNAL, 12345, 0, 0), 0);
	CHECK_RET(ddtx_wire_write(ep1, p2, sv, 3, DDTX_KEY_INTERNAL, mr->key, 1010, 179, NULL),
		  -FI_EINVAL);
	CHECK_RET(ddtx_wire_write(ep1, p2, many, 8, DDTX_KEY_INTERNAL, mr->key, 1000, 48, NULL),
		  -FI_EINVAL);
	CHECK(ddtx_wire_ep_progress(ep1) == 0, "completions for refused posts");

	/* malformed key table: a huge segment count must not be followed */
	struct ddtx_shm_key_slot *ks = &ddtx_shm_domain_of(dom)->keys.slots[((struct ddtx_shm_mr *)mr->wire_priv)->slot];
	uint32_t saved = ks->nseg;
	ks->nseg = 0x7fffffff;
	CHECK_RET(rma_sync(ep1, &rx1, true, p2, sv, 3, DDTX_KEY_INTERNAL, mr->key, 1010, 180),
		  -FI_EIO);
	ks->nseg = 1;    /* segments shorter than the key's length */
	CHECK_RET(rma_sync(ep1, &rx1, true, p2, sv, 3, DDTX_KEY_INTERNAL, mr->key, 1010, 180),
		  -FI_EIO);
	ks->nseg = saved;
	uint64_t old_key = mr->key;
	CHECK_RET(ddtx_wire_mr_dereg(dom, mr), 0);
	CHECK_RET(rma_sync(ep1, &rx1, true, p2, sv, 3, DDTX_KEY_INTERNAL, old_key, 1010, 180),
		  -FI_EKEYREJECTED);

	/* malformed ring slot: an oversized length is dropped, the next message passes */
	CHECK_RET(ddtx_wire_send(ep1, p2, "A", 1, NULL, 0), 0);
	CHECK_RET(ddtx_wire_send(ep1, p2, "B", 1, NULL, 0), 0);
	ddtx_shm_ring_slot(&ddtx_shm_ep_of(ep2)->ring, ddtx_shm_ep_of(ep2)->cons.head)->len = 1u << 30;
	int before = rx2.nrecv;
	ddtx_wire_ep_progress(ep2);
	CHECK(rx2.nrecv == before + 1 && rx2.buf[before % MAX_MSGS][0] == 'B', "bad slot not "
	      "dropped");
	/* a malformed source address is dropped too */
	CHECK_RET(ddtx_wire_send(ep1, p2, "C", 1, NULL, 0), 0);
	ddtx_shm_ring_slot(&ddtx_shm_ep_of(ep2)->ring, ddtx_shm_ep_of(ep2)->cons.head)->src.magic = 0;
	ddtx_wire_ep_progress(ep2);
	CHECK(rx2.nrecv == before + 1, "message with a bad source delivered");
	/* a skip of a line or more, or one that puts the message past the slot, is dropped */
	struct ddtx_shm_ep *se2 = ddtx_shm_ep_of(ep2);
	CHECK_RET(ddtx_wire_send(ep1, p2, "D", 1, NULL, 0), 0);
	CHECK_RET(ddtx_wire_send(ep1, p2, "E", 1, NULL, 0), 0);
	CHECK_RET(ddtx_wire_send(ep1, p2, "F", 1, NULL, 0), 0);
	ddtx_shm_ring_slot(&se2->ring, se2->cons.head)->skip = 64;
	struct ddtx_shm_slot_hdr *sf = ddtx_shm_ring_slot(&se2->ring, se2->cons.head + 2);
	sf->skip = 63;
	sf->len = se2->ring.slot_size - DDTX_SHM_SLOT_HDR - 62;
	ddtx_wire_ep_progress(ep2);
	CHECK(rx2.nrecv == before + 2 && rx2.buf[(before + 1) % MAX_MSGS][0] == 'E',
	      "a slot with a bad skip delivered (%d messages)", rx2.nrecv - before);
	/* a payload of 256 B or more behind a header starts on a cache line of its slot */
	uint8_t hdr40[40], pay[300];
	memset(hdr40, 0x11, sizeof(hdr40));
	for (size_t i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 13 + 5);
	struct iovec pv = {pay, sizeof(pay)};
	CHECK_RET(ddtx_wire_send(ep1, p2, hdr40, sizeof(hdr40), &pv, 1), 0);
	ddtx_wire_ep_progress(ep2);
	int m = (before + 2) % MAX_MSGS;
	CHECK(rx2.nrecv == before + 3 && rx2.len[m] == 340 && !memcmp(rx2.buf[m], hdr40, 40) &&
	      !memcmp(rx2.buf[m] + 40, pay, sizeof(pay)), "header + 300 B not delivered intact");
	CHECK(((uintptr_t)rx2.at[m] + 40) % 64 == 0, "the payload starts at line offset %u",
	      (unsigned)(((uintptr_t)rx2.at[m] + 40) % 64));

	/* an endpoint region whose claim stamps would overlap its ring is refused */
	struct ddtx_wire_ep *ep3;
	struct rx rx3 = {0};
	uint8_t a3[64];
	ddtx_peer_t p3;
	CHECK_RET(ddtx_wire_ep_open(dom, &handlers, &rx3, &ep3), 0);
	struct ddtx_shm_ep_hdr *h3 = ddtx_shm_ep_of(ep3)->hdr;
	uint64_t stamp_off = h3->stamp_off;
	h3->stamp_off = h3->ring_off - 8;
	len = sizeof(a3);
	CHECK_RET(ddtx_wire_ep_getname(ep3, a3, &len), 0);
	CHECK_RET(ddtx_wire_peer_insert(ep1, a3, len, &p3), 0);
	CHECK_RET(ddtx_wire_send(ep1, p3, "G", 1, NULL, 0), -FI_EIO);
	CHECK(ddtx_wire_ep_progress(ep3) == 0 && rx3.nrecv == 0, "a refused peer got a message");
	h3->stamp_off = stamp_off;
	ddtx_wire_ep_close(ep3);

	/* a closed endpoint is dead for its peers */
	snprintf(ep_name, sizeof(ep_name), "%s", ddtx_shm_ep_of(ep2)->map.name);
	ddtx_wire_ep_close(ep2);
	CHECK(!region_exists(ep_name), "endpoint region not unlinked at close");
	CHECK(!ddtx_wire_peer_alive(ep1, p2), "closed endpoint reported alive");
	CHECK_RET(ddtx_wire_send(ep1, p2, "x", 1, NULL, 0), -FI_EIO);
	ddtx_wire_ep_close(ep1);
	ddtx_wire_domain_close(dom);
	for (int i = 0; i < MAX_MSGS; i++) {
		free(rx1.buf[i]);
		free(rx2.buf[i]);
	}
}

/* =================================================================================== msg */
static void fill_msg(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void test_msg(void)
{
	struct ddtx_wire_params params = { .ring_slots = 8, .slot_size = 4096 };
	const size_t maxs = 4096 - DDTX_SHM_SLOT_HDR;
	const size_t sizes[] = { 0, 1, 7, 64, 1000, maxs - 1, maxs };
	const int nsizes = (int)(sizeof(sizes) / sizeof(sizes[0]));
	struct ddtx_wire_domain *dom;
	struct ddtx_wire_ep *ep;
	struct rx rx = { 0 };
	uint8_t peer_addr[64], my_addr[64];
	size_t alen = sizeof(my_addr);
	struct chan ch;
	ddtx_peer_t peer;
	pid_t pid = fork_chan(&ch);

	open_wire(&params, &rx, &dom, &ep);
	CHECK(ddtx_wire_domain_caps(dom)->max_send_size == maxs, "max_send_size");
	exchange_addr(&ch, ep, peer_addr);
	CHECK_RET(ddtx_wire_ep_getname(ep, my_addr, &alen), 0);

	if (pid == 0) {
		/* sender */
		static uint8_t buf[8192];
		struct iovec iov[32];
		rng_state ^= 0x1234;
		CHECK_RET(ddtx_wire_peer_insert(ep, peer_addr, DDTX_SHM_ADDR_LEN, &peer), 0);
		for (int s = 0; s < nsizes; s++) {
			size_t len = sizes[s], hdr = len >= 16 ? 16 : len;
			fill_msg(buf, len, (unsigned)s);
			size_t n = split(buf + hdr, len - hdr, rnd_range(1, 30), iov);
			CHECK_RET(ddtx_wire_send(ep, peer, buf, hdr, iov, n), 0);
		}
		struct iovec big = { buf, maxs + 1 };
		CHECK_RET(ddtx_wire_send(ep, peer, NULL, 0, &big, 1), -FI_EMSGSIZE);
		big.iov_len = maxs;
		CHECK_RET(ddtx_wire_send(ep, peer, "h", 1, &big, 1), -FI_EMSGSIZE);
		send_cmd(ch.wr, 'S');
		/* the parent replies to the handle it learned on first contact */
		CHECK(progress_until(ep, &rx.nrecv, 1) == 0, "no reply");
		CHECK(rx.src[0] == peer, "reply came from handle %u, expected %u", rx.src[0], peer);
		CHECK(rx.len[0] == 5 && !memcmp(rx.buf[0], "reply", 5), "reply content");

		/* fill the ring: exactly ring_slots messages fit, then -FI_EAGAIN */
		CHECK(recv_cmd(ch.rd) == 'F', "protocol");
		int sent = 0, ret;
		while ((ret = ddtx_wire_send(ep, peer, &sent, sizeof(sent), NULL, 0)) == 0)
			sent++;
		CHECK(ret == -FI_EAGAIN, "full ring gave %d", ret);
		CHECK(sent == 8, "%d messages fit in an 8-slot ring", sent);
		CHECK_RET(ddtx_wire_send(ep, peer, &sent, sizeof(sent), NULL, 0), -FI_EAGAIN);
		send_cmd(ch.wr, 'F');
		CHECK(recv_cmd(ch.rd) == 'P', "protocol");
		CHECK_RET(ddtx_wire_send(ep, peer, &sent, sizeof(sent), NULL, 0), 0);
		CHECK(ddtx_wire_peer_alive(ep, peer), "parent reported dead");
		send_cmd(ch.wr, 'D');
		CHECK(recv_cmd(ch.rd) == 'X', "protocol");
		ddtx_wire_ep_close(ep);
		ddtx_wire_domain_close(dom);
		_exit(0);
	}

	/* receiver */
	CHECK(recv_cmd(ch.rd) == 'S', "protocol");
	CHECK(progress_until(ep, &rx.nrecv, nsizes) == 0, "messages missing");
	{
		static uint8_t want[8192];
		for (int s = 0; s < nsizes; s++) {
			fill_msg(want, sizes[s], (unsigned)s);
			CHECK(rx.len[s] == sizes[s], "message %d has %zu bytes, want %zu", s, rx.len[s],
			      sizes[s]);
			CHECK(!memcmp(rx.buf[s], want, sizes[s]), "message %d content", s);
			CHECK(rx.src[s] == rx.src[0], "sources differ");
		}
	}
	ddtx_peer_t child = rx.src[0];
	uint8_t back[64];
	size_t blen = sizeof(back);
	CHECK_RET(ddtx_wire_peer_addr(ep, child, back, &blen), 0);
	CHECK(blen == DDTX_SHM_ADDR_LEN && !memcmp(back, peer_addr, blen), "first-contact addr");
	CHECK_RET(ddtx_wire_peer_insert(ep, peer_addr, DDTX_SHM_ADDR_LEN, &peer), 0);
	CHECK(peer == child, "insert after first contact gave a new handle");
	CHECK_RET(ddtx_wire_send(ep, child, "re", 2, &(struct iovec){ "ply", 3 }, 1), 0);

	/* ring full: do not progress until the child has seen -FI_EAGAIN */
	int base = rx.nrecv;
	send_cmd(ch.wr, 'F');
	CHECK(recv_cmd(ch.rd) == 'F', "protocol");
	CHECK(progress_until(ep, &rx.nrecv, base + 8) == 0, "ring messages missing");
	for (int i = 0; i < 8; i++)
		CHECK(rx.len[base + i] == sizeof(int) && *(int *)rx.buf[base + i] == i,
		      "ring message %d out of order", i);
	send_cmd(ch.wr, 'P');
	CHECK(recv_cmd(ch.rd) == 'D', "protocol");
	CHECK(progress_until(ep, &rx.nrecv, base + 9) == 0, "message after progress missing");
	CHECK(*(int *)rx.buf[base + 8] == 8, "last message");

	/* the child closes and exits: it is dead, sends fail without spinning */
	CHECK(ddtx_wire_peer_alive(ep, child), "live child reported dead");
	send_cmd(ch.wr, 'X');
	wait_child(pid, 0);
	CHECK(!ddtx_wire_peer_alive(ep, child), "exited child reported alive");
	CHECK_RET(ddtx_wire_send(ep, child, "x", 1, NULL, 0), -FI_EIO);
	ddtx_wire_ep_close(ep);
	ddtx_wire_domain_close(dom);
	for (int i = 0; i < MAX_MSGS; i++)
		free(rx.buf[i]);
}

/* =================================================================================== rma */
#define TGT_SIZE (1u << 20)
#define NSEG_A 1500

struct key_desc {
	uint64_t key, iova, len;
	uint32_t space, nseg;
};

static void test_rma(void)
{
	struct ddtx_wire_params params = { .max_sge = 2048 };
	struct ddtx_wire_domain *dom;
	struct ddtx_wire_ep *ep;
	struct rx rx = { 0 };
	uint8_t peer_addr[64];
	struct chan ch;
	ddtx_peer_t peer;
	static uint32_t seg_off[NSEG_A], seg_len[NSEG_A];
	struct key_desc ka, kb, kc;

	/* The target layout: NSEG_A runs of 1..1024 bytes separated by 1..64-byte guards. */
	rng_state = 0xfeedbeef;
	uint32_t off = 32;
	uint64_t total_a = 0;
	for (int i = 0; i < NSEG_A; i++) {
		seg_len[i] = (uint32_t)rnd_range(1, 1024);
		seg_off[i] = off;
		off += seg_len[i] + (uint32_t)rnd_range(1, 64);
		total_a += seg_len[i];
	}
	CHECK(off + 8192 < TGT_SIZE, "layout too large");
	const uint32_t b_off = TGT_SIZE - 8192, c_off = TGT_SIZE - 4096;

	pid_t pid = fork_chan(&ch);
	open_wire(&params, &rx, &dom, &ep);
	exchange_addr(&ch, ep, peer_addr);

	if (pid == 0) {
		/* target: owns the memory and the keys */
		uint8_t *tgt = malloc(TGT_SIZE);
		static struct iovec iov[NSEG_A];
		struct ddtx_wire_mr *mra, *mrb, *mrc, *tmp;
		for (uint32_t i = 0; i < TGT_SIZE; i++)
			tgt[i] = (uint8_t)(i * 131 + 7);
		for (int i = 0; i < NSEG_A; i++) {
			iov[i].iov_base = tgt + seg_off[i];
			iov[i].iov_len = seg_len[i];
		}
		CHECK_RET(ddtx_wire_mr_reg(dom, iov, NSEG_A, DDTX_KEY_APP, NULL,
					   (uint64_t)(uintptr_t)tgt + seg_off[0],
					   DDTX_ACC_REMOTE_WRITE | DDTX_ACC_REMOTE_READ, &mra), 0);
		/* B: internal key, offset addressing, read only, 32 pieces of 128 bytes */
		for (int i = 0; i < 32; i++) {
			iov[i].iov_base = tgt + b_off + 128 * (31 - i);   /* reversed order */
			iov[i].iov_len = 128;
		}
		CHECK_RET(ddtx_wire_mr_reg(dom, iov, 33, DDTX_KEY_INTERNAL, NULL, 0,
					   DDTX_ACC_REMOTE_READ, &tmp), -FI_EINVAL);
		CHECK_RET(ddtx_wire_mr_reg(dom, iov, 32, DDTX_KEY_INTERNAL, NULL, 0,
					   DDTX_ACC_REMOTE_READ, &mrb), 0);
		/* C: requested key 42, contiguous */
		uint64_t k42 = 42;
		iov[0].iov_base = tgt + c_off;
		iov[0].iov_len = 4096;
		CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, &k42, 0,
					   DDTX_ACC_REMOTE_WRITE | DDTX_ACC_REMOTE_READ, &mrc), 0);
		CHECK_RET(ddtx_wire_mr_reg(dom, iov, 1, DDTX_KEY_APP, &k42, 0,
					   DDTX_ACC_REMOTE_WRITE, &tmp), -FI_ENOKEY);
		struct key_desc d[3] = {
			{ mra->key, mra->iova, mra->len, DDTX_KEY_APP, NSEG_A },
			{ mrb->key, mrb->iova, mrb->len, DDTX_KEY_INTERNAL, 32 },
			{ mrc->key, mrc->iova, mrc->len, DDTX_KEY_APP, 1 },
		};
		write_all(ch.wr, d, sizeof(d));
		for (;;) {
			char c = recv_cmd(ch.rd);
			if (c == 'D') {
				CHECK_RET(ddtx_wire_mr_dereg(dom, mrc), 0);
				send_cmd(ch.wr, 'd');
			} else if (c == 'V') {
				write_all(ch.wr, tgt, TGT_SIZE);
			} else {
				break;
			}
		}
		CHECK_RET(ddtx_wire_mr_dereg(dom, mra), 0);
		CHECK_RET(ddtx_wire_mr_dereg(dom, mrb), 0);
		ddtx_wire_ep_close(ep);
		ddtx_wire_domain_close(dom);
		_exit(0);
	}

	/* initiator: keeps a model of the target buffer */
	struct key_desc d[3];
	read_all(ch.rd, d, sizeof(d));
	ka = d[0];
	kb = d[1];
	kc = d[2];
	CHECK(ka.len == total_a && kb.len == 4096 && kc.key == 42, "key descriptions");
	CHECK_RET(ddtx_wire_peer_insert(ep, peer_addr, DDTX_SHM_ADDR_LEN, &peer), 0);

	uint8_t *model = malloc(TGT_SIZE), *src = malloc(TGT_SIZE), *dst = malloc(TGT_SIZE);
	uint64_t *amap = malloc(total_a * sizeof(*amap));   /* key-A byte -> target offset */
	struct iovec *liov = malloc(2049 * sizeof(*liov));
	for (uint32_t i = 0; i < TGT_SIZE; i++)
		model[i] = (uint8_t)(i * 131 + 7);
	for (uint64_t i = 0, k = 0; i < NSEG_A; i++)
		for (uint32_t j = 0; j < seg_len[i]; j++)
			amap[k++] = seg_off[i] + j;

	rng_state = 0xabcdef12345ull;
	for (int it = 0; it < 300; it++) {
		size_t len, start;
		int mode = it % 10;
		if (mode == 0) {                   /* the whole key: > IOV_MAX entries both sides */
			start = 0;
			len = total_a;
		} else if (mode < 4) {
			len = rnd_range(1, 64);
			start = rnd_range(0, total_a - len);
		} else {
			len = rnd_range(1, 256 * 1024);
			start = rnd_range(0, total_a - len);
		}
		size_t nl = split(src, len, mode == 0 ? 2000 : rnd_range(1, mode < 4 ? 8 : 300),
				  liov);
		for (size_t i = 0; i < len; i++)
			src[i] = (uint8_t)rnd();
		CHECK_RET(rma_sync(ep, &rx, true, peer, liov, nl, DDTX_KEY_APP, ka.key,
				   ka.iova + start, len), 0);
		for (size_t i = 0; i < len; i++)
			model[amap[start + i]] = src[i];

		/* read back a random range with its own random segmentation */
		len = rnd_range(1, 300 * 1024);
		start = rnd_range(0, total_a - len);
		memset(dst, 0x5a, len + 16);
		nl = split(dst, len, rnd_range(1, 2048), liov);
		CHECK_RET(rma_sync(ep, &rx, false, peer, liov, nl, DDTX_KEY_APP, ka.key,
				   ka.iova + start, len), 0);
		for (size_t i = 0; i < len; i++)
			CHECK(dst[i] == model[amap[start + i]], "read byte %zu of [%zu,+%zu) differs",
			      i, start, len);
		for (size_t i = len; i < len + 16; i++)
			CHECK(dst[i] == 0x5a, "read wrote past its local buffer");
	}

	/* refusals: nothing moves */
	struct iovec one = { src, 64 };
	memset(src, 0xcc, 64);
	CHECK_RET(rma_sync(ep, &rx, true, peer, &one, 1, DDTX_KEY_APP, ka.key, ka.iova - 1, 64),
		  -FI_EACCES);
	CHECK_RET(rma_sync(ep, &rx, true, peer, &one, 1, DDTX_KEY_APP, ka.key,
			   ka.iova + total_a - 63, 64), -FI_EACCES);
	CHECK_RET(rma_sync(ep, &rx, true, peer, &one, 1, DDTX_KEY_APP, ka.key, 0, 64), -FI_EACCES);
	CHECK_RET(rma_sync(ep, &rx, true, peer, &one, 1, DDTX_KEY_APP, ka.key ^ 0x5555, ka.iova,
			   64), -FI_EKEYREJECTED);
	CHECK_RET(rma_sync(ep, &rx, true, peer, &one, 1, DDTX_KEY_INTERNAL, ka.key, ka.iova, 64),
		  -FI_EKEYREJECTED);
	CHECK_RET(rma_sync(ep, &rx, true, peer, &one, 1, DDTX_KEY_INTERNAL, kb.key, 0, 64),
		  -FI_EACCES);                  /* read-only key */
	CHECK_RET(rma_sync(ep, &rx, false, peer, &one, 1, DDTX_KEY_INTERNAL, kb.key, 4033, 64),
		  -FI_EACCES);                  /* out of bounds by one */
	CHECK_RET(ddtx_wire_write(ep, peer, liov, 2049, DDTX_KEY_APP, ka.key, ka.iova, 2049,
				  NULL), -FI_EINVAL);   /* above max_sge */
	CHECK_RET(ddtx_wire_write(ep, peer, &one, 1, DDTX_KEY_APP, ka.key, ka.iova, 63, NULL),
		  -FI_EINVAL);                  /* local bytes != len */
	CHECK(ddtx_wire_ep_progress(ep) == 0, "refused posts completed");

	/* B read with offset addressing: logical byte i of B is tgt[b_off + 128*(31-i/128) + i%128] */
	{
		struct iovec bv[3] = { { dst, 1000 }, { dst + 1000, 3000 }, { dst + 4000, 96 } };
		CHECK_RET(rma_sync(ep, &rx, false, peer, bv, 3, DDTX_KEY_INTERNAL, kb.key, 0, 4096), 0);
		for (uint32_t i = 0; i < 4096; i++)
			CHECK(dst[i] == model[b_off + 128 * (31 - i / 128) + i % 128],
			      "key B byte %u", i);
	}

	/* C: write works, then deregistered -> rejected */
	{
		struct iovec cv[2] = { { src, 100 }, { src + 100, 28 } };
		for (int i = 0; i < 128; i++)
			src[i] = (uint8_t)(0x80 + i);
		CHECK_RET(rma_sync(ep, &rx, true, peer, cv, 2, DDTX_KEY_APP, 42, 4096 - 128, 128), 0);
		memcpy(model + c_off + 4096 - 128, src, 128);
		send_cmd(ch.wr, 'D');
		CHECK(recv_cmd(ch.rd) == 'd', "protocol");
		memset(src, 0x11, 128);
		CHECK_RET(rma_sync(ep, &rx, true, peer, cv, 2, DDTX_KEY_APP, 42, 0, 128),
			  -FI_EKEYREJECTED);
		CHECK_RET(rma_sync(ep, &rx, false, peer, cv, 2, DDTX_KEY_APP, 42, 0, 128),
			  -FI_EKEYREJECTED);
	}

	/* every byte of the target, guards included, matches the model */
	send_cmd(ch.wr, 'V');
	read_all(ch.rd, dst, TGT_SIZE);
	for (uint32_t i = 0; i < TGT_SIZE; i++)
		CHECK(dst[i] == model[i], "target byte %u is %#x, model %#x", i, dst[i], model[i]);
	CHECK(!rx.cb_in_post, "callbacks ran inside post calls");

	send_cmd(ch.wr, 'Q');
	wait_child(pid, 0);
	free(model);
	free(src);
	free(dst);
	free(amap);
	free(liov);
	ddtx_wire_ep_close(ep);
	ddtx_wire_domain_close(dom);
}

/* ================================================================================= death */
static void test_death(void)
{
	for (int variant = 0; variant < 2; variant++) {
		struct ddtx_wire_domain *dom;
		struct ddtx_wire_ep *ep;
		struct rx rx = { 0 };
		uint8_t peer_addr[64], buf[64] = { 0 };
		struct key_desc kd;
		struct chan ch;
		ddtx_peer_t peer;
		pid_t pid = fork_chan(&ch);

		open_wire(NULL, &rx, &dom, &ep);
		exchange_addr(&ch, ep, peer_addr);
		if (pid == 0) {
			static uint8_t mem[4096];
			struct iovec iov = { mem, sizeof(mem) };
			struct ddtx_wire_mr *mr;
			CHECK_RET(ddtx_wire_mr_reg(dom, &iov, 1, DDTX_KEY_INTERNAL, NULL, 0,
						   DDTX_ACC_REMOTE_WRITE, &mr), 0);
			kd = (struct key_desc){ mr->key, 0, 4096, DDTX_KEY_INTERNAL, 1 };
			write_all(ch.wr, &kd, sizeof(kd));
			recv_cmd(ch.rd);
			if (variant == 0)
				_exit(0);                      /* vanish without closing */
			ddtx_wire_ep_close(ep);                /* close but stay alive */
			send_cmd(ch.wr, 'c');
			recv_cmd(ch.rd);
			_exit(0);
		}
		read_all(ch.rd, &kd, sizeof(kd));
		CHECK_RET(ddtx_wire_peer_insert(ep, peer_addr, DDTX_SHM_ADDR_LEN, &peer), 0);
		struct iovec l = { buf, 64 };
		CHECK_RET(rma_sync(ep, &rx, true, peer, &l, 1, DDTX_KEY_INTERNAL, kd.key, 0, 64), 0);
		CHECK(ddtx_wire_peer_alive(ep, peer), "live peer dead");
		send_cmd(ch.wr, 'x');
		if (variant == 0) {
			wait_child(pid, 0);
			CHECK_RET(rma_sync(ep, &rx, true, peer, &l, 1, DDTX_KEY_INTERNAL, kd.key, 0,
					   64), -FI_EIO);
			CHECK(!ddtx_wire_peer_alive(ep, peer), "exited peer alive");
		} else {
			CHECK(recv_cmd(ch.rd) == 'c', "protocol");
			CHECK(!ddtx_wire_peer_alive(ep, peer), "closed peer alive");
			CHECK_RET(rma_sync(ep, &rx, true, peer, &l, 1, DDTX_KEY_INTERNAL, kd.key, 0,
					   64), -FI_EIO);
			send_cmd(ch.wr, 'q');
			wait_child(pid, 0);
		}
		CHECK_RET(ddtx_wire_send(ep, peer, "x", 1, NULL, 0), -FI_EIO);
		ddtx_wire_ep_close(ep);
		ddtx_wire_domain_close(dom);
		/* the child left its files behind, as a crash would */
		char name[DDTX_SHM_NAME_MAX], path[256];
		struct ddtx_shm_addr a;
		memcpy(&a, peer_addr, sizeof(a));
		ddtx_shm_format_name(name, a.pid, a.rand);
		snprintf(path, sizeof(path), "/dev/shm%s", name);
		CHECK(variant == 1 || access(path, F_OK) == 0, "crashed child's region vanished");
		ddtx_wire_cleanup_stale();
		CHECK(access(path, F_OK) != 0, "dead child's region survived cleanup");
	}
}

/* ================================================================================= stale */
static void make_fake_region(const char *name, uint32_t pid, uint64_t start_time, bool header)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0, "shm_open %s: %s", name, strerror(errno));
	if (header) {
		struct ddtx_shm_region_hdr h = { .magic = DDTX_SHM_EP_MAGIC,
						 .version = DDTX_SHM_VERSION,
						 .pid = pid,
						 .pidns = ddtx_shm_pidns(),
						 .start_time = start_time };
		CHECK(write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h), "write");
	}
	close(fd);
}

static void test_stale(void)
{
	struct ddtx_wire_domain *dom;
	struct ddtx_wire_ep *ep;
	struct rx rx = { 0 };
	char names[2][DDTX_SHM_NAME_MAX];
	struct chan ch;
	pid_t pid = fork_chan(&ch);

	if (pid == 0) {
		open_wire(NULL, &rx, &dom, &ep);
		snprintf(names[0], sizeof(names[0]), "%s", ddtx_shm_domain_of(dom)->map.name);
		snprintf(names[1], sizeof(names[1]), "%s", ddtx_shm_ep_of(ep)->map.name);
		write_all(ch.wr, names, sizeof(names));
		for (;;)
			pause();
	}
	read_all(ch.rd, names, sizeof(names));
	/* our own live regions (opened first: domain open itself cleans up stale files) */
	open_wire(NULL, &rx, &dom, &ep);
	kill(pid, SIGKILL);
	wait_child(pid, -1);

	/* fakes for a live pid (1) with and without a header */
	uint8_t r[DDTX_SHM_RAND_BYTES];
	char live_reused[DDTX_SHM_NAME_MAX], live_creating[DDTX_SHM_NAME_MAX],
	     live_ok[DDTX_SHM_NAME_MAX];
	uint64_t st1 = 0;
	bool init_visible = ddtx_shm_proc_identity(1, &st1, NULL) == 0;
	ddtx_shm_random(r, sizeof(r));
	ddtx_shm_format_name(live_reused, 1, r);
	ddtx_shm_random(r, sizeof(r));
	ddtx_shm_format_name(live_creating, 1, r);
	ddtx_shm_random(r, sizeof(r));
	ddtx_shm_format_name(live_ok, 1, r);
	make_fake_region(live_reused, 1, st1 + 12345, true);   /* pid 1 reused since */
	make_fake_region(live_creating, 1, 0, false);           /* header not written yet */
	make_fake_region(live_ok, 1, st1, true);                /* pid 1 itself */

	for (int i = 0; i < 2; i++) {
		CHECK(region_exists(names[i]), "%s missing before cleanup", names[i]);
		region_mode_check(names[i]);
	}
	ddtx_wire_cleanup_stale();
	for (int i = 0; i < 2; i++)
		CHECK(!region_exists(names[i]), "stale %s not removed", names[i]);
	CHECK(region_exists(ddtx_shm_domain_of(dom)->map.name) && region_exists(ddtx_shm_ep_of(ep)->map.name), "live regions removed");
	CHECK(region_exists(live_creating), "region being created removed");
	if (init_visible) {
		CHECK(!region_exists(live_reused), "region of a reused pid not removed");
		CHECK(region_exists(live_ok), "region of a live process removed");
	}
	shm_unlink(live_reused);
	shm_unlink(live_creating);
	shm_unlink(live_ok);

	/* A region whose pid this namespace cannot see (the dead child's) but whose owner lock
	 * is held, as by a live process in another pid namespace sharing /dev/shm: kept until
	 * the lock goes. */
	char foreign[DDTX_SHM_NAME_MAX], path[DDTX_SHM_NAME_MAX + 16];
	ddtx_shm_random(r, sizeof(r));
	ddtx_shm_format_name(foreign, (uint32_t)pid, r);
	make_fake_region(foreign, (uint32_t)pid, 12345, true);
	snprintf(path, sizeof(path), "/dev/shm%s", foreign);
	int lfd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(lfd >= 0 && flock(lfd, LOCK_SH) == 0, "lock %s: %s", path, strerror(errno));
	ddtx_wire_cleanup_stale();
	CHECK(region_exists(foreign), "a region whose owner holds its lock was removed");
	close(lfd);
	ddtx_wire_cleanup_stale();
	CHECK(!region_exists(foreign), "a region of a dead pid with no lock holder was kept");
	ddtx_wire_ep_close(ep);
	ddtx_wire_domain_close(dom);
}

/* ================================================================================== mpsc */
#define MPSC_PRODUCERS 3
#define MPSC_MSGS 20000

static struct {
	uint32_t next[8];
	int total, errors;
	ddtx_peer_t src_of[8];
} mp;

static void mpsc_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len)
{
	uint32_t v[2];

	if (len < sizeof(v)) {
		mp.errors++;
		return;
	}
	memcpy(v, buf, sizeof(v));
	if (v[0] >= MPSC_PRODUCERS || v[1] != mp.next[v[0]] || len != 8 + v[1] % 200) {
		mp.errors++;
		return;
	}
	const uint8_t *p = buf;
	for (size_t i = 8; i < len; i++)
		if (p[i] != (uint8_t)(v[1] + i))
			mp.errors++;
	if (v[1] == 0)
		mp.src_of[v[0]] = src;
	else if (mp.src_of[v[0]] != src)
		mp.errors++;
	mp.next[v[0]]++;
	mp.total++;
}

static void test_mpsc(void)
{
	struct ddtx_wire_params params = { .ring_slots = 16, .slot_size = 512 };
	const struct ddtx_wire_handlers h = { mpsc_recv, NULL };
	struct ddtx_wire_domain *dom;
	struct ddtx_wire_ep *ep;
	uint8_t addr[64];
	size_t alen = sizeof(addr);
	pid_t pids[MPSC_PRODUCERS];

	CHECK_RET(ddtx_wire_domain_open(&params, &dom), 0);
	CHECK_RET(ddtx_wire_ep_open(dom, &h, NULL, &ep), 0);
	CHECK_RET(ddtx_wire_ep_getname(ep, addr, &alen), 0);
	for (uint32_t p = 0; p < MPSC_PRODUCERS; p++) {
		pids[p] = fork();
		CHECK(pids[p] >= 0, "fork");
		if (pids[p])
			continue;
		struct ddtx_wire_domain *d;
		struct ddtx_wire_ep *e;
		struct rx rx = { 0 };
		ddtx_peer_t peer;
		uint8_t buf[256];
		open_wire(&params, &rx, &d, &e);
		CHECK_RET(ddtx_wire_peer_insert(e, addr, alen, &peer), 0);
		for (uint32_t i = 0; i < MPSC_MSGS; i++) {
			uint32_t v[2] = { p, i };
			size_t len = i % 200;
			for (size_t j = 0; j < len; j++)
				buf[j] = (uint8_t)(i + 8 + j);
			struct iovec iov[2] = { { buf, len / 2 }, { buf + len / 2, len - len / 2 } };
			int ret;
			while ((ret = ddtx_wire_send(e, peer, v, sizeof(v), iov, 2)) == -FI_EAGAIN)
				sched_yield();
			CHECK_RET(ret, 0);
		}
		ddtx_wire_ep_close(e);
		ddtx_wire_domain_close(d);
		_exit(0);
	}
	for (long spins = 0; mp.total < MPSC_PRODUCERS * MPSC_MSGS && !mp.errors; spins++) {
		if (!ddtx_wire_ep_progress(ep))
			sched_yield();
		CHECK(spins < 200000000L, "mpsc stuck at %d messages", mp.total);
	}
	CHECK(!mp.errors, "%d ordering/content errors", mp.errors);
	for (int p = 0; p < MPSC_PRODUCERS; p++)
		wait_child(pids[p], 0);
	CHECK(mp.src_of[0] != mp.src_of[1] && mp.src_of[1] != mp.src_of[2], "sources merged");
	ddtx_wire_ep_close(ep);
	ddtx_wire_domain_close(dom);
}

/*
 * Key churn (as window sets map and unmap mkeys): half the table's keys live, one removed and
 * one inserted 20000 times, beside keys the caller chose (hashed anywhere, some probing past
 * others).  Every live key must stay findable, and removed keys must not leave the table
 * without empty slots (every lookup would then scan all of it).  Keys the table chooses take
 * the slots in order, and the slot freed last first (keytable.c: pages not touched for a
 * while cost 9-15 us to touch on the test host).
 */
static void test_keytab(void)
{
	enum { NSLOTS = 128, CAP = 64, NSEGS = 256, CHOSEN = 8 };
	size_t size = ddtx_shm_keytab_region_size(NSLOTS, NSEGS);
	void *region = calloc(1, size);
	struct ddtx_shm_keytab kt;
	CHECK(region, "region");
	CHECK_RET(ddtx_shm_keytab_init(&kt, region, size, CAP, NSLOTS, NSEGS), 0);
	static char mem[CAP][64];
	uint64_t key[CAP];
	uint32_t slot[CAP];
	int live = CAP - CHOSEN;
	for (int i = 0; i < live; i++) {
		struct iovec v = {mem[i], sizeof(mem[i])};
		CHECK_RET(ddtx_shm_keytab_insert(&kt, &v, 1, DDTX_KEY_INTERNAL, NULL,
						 (uintptr_t)mem[i], sizeof(mem[i]), DDTX_ACC_LOCAL_READ,
						 &key[i], &slot[i]), 0);
		CHECK(slot[i] == (uint32_t)i, "key %d in slot %u, not in order", i, slot[i]);
	}
	uint64_t app[CHOSEN];
	uint32_t app_slot[CHOSEN];
	for (int c = 0; c < CHOSEN; c++) {
		struct iovec v = {mem[live + c], sizeof(mem[0])};
		app[c] = ((uint64_t)rnd() << 32) ^ rnd();
		CHECK_RET(ddtx_shm_keytab_insert(&kt, &v, 1, DDTX_KEY_APP, &app[c],
						 (uintptr_t)v.iov_base, v.iov_len, DDTX_ACC_LOCAL_READ,
						 &key[live + c], &app_slot[c]), 0);
		CHECK(key[live + c] == app[c], "requested key %d not kept", c);
	}
	for (int round = 0; round < 20000; round++) {
		int i = (int)(rnd() % live);
		uint32_t was = slot[i];
		CHECK_RET(ddtx_shm_keytab_remove(&kt, slot[i], DDTX_KEY_INTERNAL, key[i]), 0);
		CHECK(ddtx_shm_keytab_check(&kt, DDTX_KEY_INTERNAL, key[i], (uintptr_t)mem[i], 1,
					    DDTX_ACC_LOCAL_READ) == -FI_EKEYREJECTED,
		      "round %d: removed key still found", round);
		uint64_t old = key[i];
		struct iovec v = {mem[i], sizeof(mem[i])};
		CHECK_RET(ddtx_shm_keytab_insert(&kt, &v, 1, DDTX_KEY_INTERNAL, NULL,
						 (uintptr_t)mem[i], sizeof(mem[i]), DDTX_ACC_LOCAL_READ,
						 &key[i], &slot[i]), 0);
		CHECK(slot[i] == was && key[i] != old, "round %d: slot %u -> %u, key %s", round,
		      was, slot[i], key[i] == old ? "repeated" : "new");
		if (round % 1000)
			continue;
		for (int j = 0; j < CAP; j++)
			CHECK_RET(ddtx_shm_keytab_check(&kt, j < live ? DDTX_KEY_INTERNAL : DDTX_KEY_APP,
							key[j], (uintptr_t)mem[j], 1,
							DDTX_ACC_LOCAL_READ), 0);
		int empty = 0;
		for (int j = 0; j < NSLOTS; j++)
			empty += kt.slots[j].state == DDTX_SHM_KEY_EMPTY;
		CHECK(empty >= NSLOTS / 8, "round %d: %d empty slots of %d, %d live", round, empty,
		      NSLOTS, CAP);
	}
	for (int c = 0; c < CHOSEN; c++)
		CHECK_RET(ddtx_shm_keytab_remove(&kt, app_slot[c], DDTX_KEY_APP, app[c]), 0);
	for (int j = 0; j < live; j++)
		CHECK_RET(ddtx_shm_keytab_check(&kt, DDTX_KEY_INTERNAL, key[j], (uintptr_t)mem[j], 1,
						DDTX_ACC_LOCAL_READ), 0);
	/* No key displaced any more: a lookup stops at the hash's slot, and still answers. */
	CHECK(!kt.displaced, "%llu keys displaced", (unsigned long long)kt.displaced);
	CHECK_RET(ddtx_shm_keytab_remove(&kt, slot[0], DDTX_KEY_INTERNAL, key[0]), 0);
	CHECK(ddtx_shm_keytab_check(&kt, DDTX_KEY_INTERNAL, key[0], (uintptr_t)mem[0], 1,
				    DDTX_ACC_LOCAL_READ) == -FI_EKEYREJECTED, "removed key found");
	for (int j = 1; j < live; j++)
		CHECK_RET(ddtx_shm_keytab_check(&kt, DDTX_KEY_INTERNAL, key[j], (uintptr_t)mem[j], 1,
						DDTX_ACC_LOCAL_READ), 0);
	ddtx_shm_keytab_fini(&kt);
	free(region);
}

/*
 * A ring is touched page by page by every process that maps it (region.c), also while others
 * write it: the touch must change nothing.  The owner counts up one word per page with plain
 * stores while a peer process touches the mapping over and over; every count must arrive.
 */
static void test_region_touch(void)
{
	enum { PAGES = 64, COUNTS = 20000 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct ddtx_shm_map own = {0};
	uint8_t rand[DDTX_SHM_RAND_BYTES];
	CHECK_RET(ddtx_shm_region_create(PAGES * page, &own, rand), 0);
	volatile uint64_t *go = (volatile uint64_t *)((uint8_t *)own.addr + 8);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		struct ddtx_shm_map peer = {0};
		if (ddtx_shm_region_map(own.name, true, page, &peer))
			_exit(2);
		*(volatile uint64_t *)((uint8_t *)peer.addr + 8) = 1; /* mapped: start */
		while (*(volatile uint64_t *)((uint8_t *)peer.addr + 16) == 0)
			ddtx_shm_region_touch(&peer, peer.size, false);
		_exit(0);
	}
	while (!*go)
		sched_yield();
	for (int n = 0; n < COUNTS; n++)
		for (size_t i = 1; i < PAGES; i++)
			(*(volatile uint64_t *)((uint8_t *)own.addr + i * page))++;
	*(volatile uint64_t *)((uint8_t *)own.addr + 16) = 1;
	wait_child(pid, 0);
	for (size_t i = 1; i < PAGES; i++) {
		uint64_t v = *(volatile uint64_t *)((uint8_t *)own.addr + i * page);
		CHECK(v == COUNTS, "page %zu: %llu of %d counts", i, (unsigned long long)v, COUNTS);
	}
	ddtx_shm_region_destroy(&own);
}

/* ================================================================================== main */
static const struct {
	const char *name;
	void (*fn)(void);
	bool cma;
} tests[] = {
	{ "basic", test_basic, true },  { "msg", test_msg, false },
	{ "rma", test_rma, true },      { "death", test_death, true },
	{ "stale", test_stale, false }, { "mpsc", test_mpsc, false },
	{ "keytab", test_keytab, false },
	{ "region_touch", test_region_touch, false },
};

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	int ran = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(which, "all") && strcmp(which, tests[i].name))
			continue;
		g_test = tests[i].name;
		if (tests[i].cma)
			check_cma_permitted();
		printf("wire_shm %s ...\n", tests[i].name);
		tests[i].fn();
		printf("wire_shm %s: ok\n", tests[i].name);
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "unknown test %s\n", which);
		return 2;
	}
	return 0;
}
