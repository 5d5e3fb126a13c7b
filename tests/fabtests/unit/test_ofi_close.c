/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An ofi wire endpoint that closes right after sending (wire/ofi/endpoint.c, linger): what it
 * sent still arrives.  Endpoint A sends its first message to B, whose connection tcp;ofi_rxm
 * (another process) has not made yet, and closes at once without a progress call; B must get
 * it, every byte.
 * (The proto floor's last words are such messages: the ACK of a delivery complete send that a
 * fabtests client owed when it closed.)  A close whose peer is gone still returns, within the
 * linger's bound.  Over the tcp core; exit 77 without it.
 */
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit_check.h"
#include "wire/ofi/ofi.h"

struct inbox {
	int count;
	size_t len;
	uint8_t last[256];
};

static void on_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len)
{
	struct inbox *in = arg;

	(void)src;
	in->count++;
	in->len = len;
	memcpy(in->last, buf, len < sizeof(in->last) ? len : sizeof(in->last));
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static ddtx_peer_t insert(struct ddtx_wire_ep *from, struct ddtx_wire_ep *to)
{
	uint8_t addr[256];
	size_t len = sizeof(addr);
	ddtx_peer_t p = 0;

	CHECK(!ddtx_wire_ep_getname(to, addr, &len) && !ddtx_wire_peer_insert(from, addr, len, &p),
	      "address");
	return p;
}

static void fill(uint8_t *msg, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		msg[i] = (uint8_t)(seed * 31 + i * 7);
}

/* The receiving process: its own domain and endpoint B; its address goes up `to_parent`, and it
 * exits 0 once it got the message whole, 1 if not within 5 s. */
static int receiver(int to_parent)
{
	struct ddtx_wire_params params = { .wire = "ofi", .ofi_provider = "tcp" };
	struct ddtx_wire_domain *dom;
	struct inbox in = { 0 };
	struct ddtx_wire_handlers h = { .on_recv = on_recv };
	struct ddtx_wire_ep *b;
	uint8_t addr[256], want[200];
	size_t len = sizeof(addr);

	if (ddtx_wire_domain_open(&params, &dom) || ddtx_wire_ep_open(dom, &h, &in, &b) ||
	    ddtx_wire_ep_getname(b, addr, &len) || write(to_parent, &len, sizeof(len)) < 0 ||
	    write(to_parent, addr, len) != (ssize_t)len)
		return 2;
	for (double t = now_s(); in.count < 1 && now_s() - t < 5.0;)
		ddtx_wire_ep_progress(b);
	fill(want, sizeof(want), 5);
	int ok = in.count == 1 && in.len == sizeof(want) && !memcmp(in.last, want, sizeof(want));
	ddtx_wire_ep_close(b);
	ddtx_wire_domain_close(dom);
	return ok ? 0 : 1;
}

int main(void)
{
	struct ddtx_wire_params params = { .wire = "ofi", .ofi_provider = "tcp" };
	struct ddtx_wire_domain *dom;
	struct inbox in_a = { 0 }, in_c = { 0 };
	struct ddtx_wire_handlers h = { .on_recv = on_recv };
	struct ddtx_wire_ep *a, *c;
	uint8_t msg[200], addr[256];
	size_t len = 0;
	int fds[2];

	/* B first, in a process of its own (before this one opens anything of libfabric's): it
	 * progresses while A's close lingers, as a peer does. */
	CHECK(!pipe(fds), "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(receiver(fds[1]));
	}
	close(fds[1]);
	if (read(fds[0], &len, sizeof(len)) != (ssize_t)sizeof(len) || len > sizeof(addr) ||
	    read(fds[0], addr, len) != (ssize_t)len) {
		int st = 0;
		waitpid(pid, &st, 0);
		printf("SKIP: no tcp core (receiver exit %d)\n", WEXITSTATUS(st));
		return 77;
	}
	if (ddtx_wire_domain_open(&params, &dom)) {
		printf("SKIP: no tcp core\n");
		return 77;
	}
	CHECK(!ddtx_wire_ep_open(dom, &h, &in_a, &a), "endpoint A");
	ddtx_peer_t to_b = 0;
	CHECK(!ddtx_wire_peer_insert(a, addr, len, &to_b), "B's address");
	fill(msg, sizeof(msg), 5);
	struct iovec iov = { msg, sizeof(msg) };
	CHECK(ddtx_wire_send(a, to_b, NULL, 0, &iov, 1) == 0, "send");
	double t0 = now_s();
	ddtx_wire_ep_close(a); /* no progress call since the send: nothing connected yet */
	double closed = now_s() - t0;
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the message sent right before the close did not arrive whole (receiver status %d)",
	      st);
	CHECK(closed < 3.0, "the close took %.2f s", closed);
	printf("sent then closed at once: receiver status %d, close %.3f s\n", st, closed);

	/* A peer that is gone: A2 sends to C after C closed; its close still returns. */
	struct ddtx_wire_ep *a2;
	CHECK(!ddtx_wire_ep_open(dom, &h, &in_a, &a2) && !ddtx_wire_ep_open(dom, &h, &in_c, &c),
	      "endpoints A2, C");
	ddtx_peer_t to_c = insert(a2, c);
	ddtx_wire_ep_close(c);
	CHECK(ddtx_wire_send(a2, to_c, NULL, 0, &iov, 1) == 0, "send to a closed peer");
	t0 = now_s();
	ddtx_wire_ep_close(a2);
	closed = now_s() - t0;
	CHECK(closed < 3.0, "a close with a gone peer took %.2f s (the linger: 1 s)", closed);
	printf("close with its peer gone: %.3f s\n", closed);
	ddtx_wire_domain_close(dom);
	return failures ? 1 : 0;
}
