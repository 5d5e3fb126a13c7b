/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire's receive rings (wire/ofi/ring.c) against a broken peer, over the tcp core in
 * one process: endpoint A sends to endpoint B, B grants A a ring, A's later messages are ring
 * writes that B delivers in order, every byte checked, messages up to a whole 64 KiB slot.
 * Then A misbehaves through the core itself (fi_writemsg into B's ring with forged CQ data or
 * contents) and B must drop each
 * forgery (nothing delivered, no crash) and still deliver A's next real message: a write
 * naming a ring B never granted, a sequence number beyond A's credits, a length beyond the
 * slot, a slot whose header carries another sender's uid.  And forged control messages: a
 * second grant, a credit for more than was written, a second RING_START, all dropped.
 * Exit 77 when the tcp core is not there.
 */
#include <string.h>
#include <time.h>

#include "unit_check.h"
#include "wire/ofi/ofi.h"

struct inbox {
	int count;
	size_t len;
	uint8_t last[DDTX_OFI_BUF_SIZE];
};

static void on_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len)
{
	struct inbox *in = arg;

	(void)src;
	in->count++;
	in->len = len;
	memcpy(in->last, buf, len < sizeof(in->last) ? len : sizeof(in->last));
}

static struct ddtx_wire_ep *a, *b;
static struct inbox in_a, in_b;

/* Progress both endpoints until B has count messages (or 5 s). */
static void wait_b(int count)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ddtx_wire_ep_progress(a);
		ddtx_wire_ep_progress(b);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (in_b.count < count && (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) /
						   1000000 < 5000);
}

static void send_msg(ddtx_peer_t to, uint32_t n)
{
	uint8_t msg[200];

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(n * 7 + i);
	struct iovec iov = { msg, sizeof(msg) };
	CHECK(ddtx_wire_send(a, to, NULL, 0, &iov, 1) == 0, "send %u", n);
}

static bool got(uint32_t n)
{
	if (in_b.len != 200)
		return false;
	for (size_t i = 0; i < 200; i++)
		if (in_b.last[i] != (uint8_t)(n * 7 + i))
			return false;
	return true;
}

/* A ring write from A of a message of len bytes (hdr_uid in its header) as ring message seq. */
static void forge(ddtx_peer_t to, uint64_t seq, size_t len, uint64_t hdr_uid)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(a);
	struct ddtx_ofi_buf *buf = ddtx_ofi_tx_get(ep);

	CHECK(buf, "a send buffer");
	if (!buf)
		return;
	struct ddtx_ofi_hdr h = { .type = DDTX_OFI_MSG_DATA, .src_uid = hdr_uid };
	ddtx_ofi_tx_prepare(ep, buf, to, DDTX_OFI_MSG_DATA);
	if (len > DDTX_OFI_BUF_SIZE - buf->start)
		buf->start = 0; /* longer than any message: the whole buffer */
	ddtx_ofi_hdr_pack(&h, buf->data + buf->start);
	memset(buf->data + buf->start + DDTX_OFI_HDR_LEN, 0xee, len - DDTX_OFI_HDR_LEN);
	buf->len = len;
	buf->ring = true;
	buf->ring_seq = seq;
	buf->inflight = true;
	ep->peers[to]->tx_inflight++;
	CHECK(ddtx_ofi_ring_post(ep, buf) == 0, "forged write posted");
}

int main(void)
{
	struct ddtx_wire_params params = { .wire = "ofi", .ofi_provider = "tcp" };
	struct ddtx_wire_domain *dom;
	struct ddtx_wire_handlers ha = { .on_recv = on_recv }, hb = { .on_recv = on_recv };
	uint8_t addr[256];
	size_t len = sizeof(addr);
	ddtx_peer_t to_b, to_a;

	if (ddtx_wire_domain_open(&params, &dom)) {
		printf("SKIP: no tcp core\n");
		return 77;
	}
	CHECK(ddtx_odom_of(dom)->ring, "tcp;ofi_rxm offers remote CQ data");
	CHECK(!ddtx_wire_ep_open(dom, &ha, &in_a, &a) && !ddtx_wire_ep_open(dom, &hb, &in_b, &b),
	      "endpoints");
	CHECK(!ddtx_wire_ep_getname(b, addr, &len) && !ddtx_wire_peer_insert(a, addr, len, &to_b),
	      "B's address");
	len = sizeof(addr);
	CHECK(!ddtx_wire_ep_getname(a, addr, &len) && !ddtx_wire_peer_insert(b, addr, len, &to_a),
	      "A's address");

	/* the first message is sent; B grants a ring, A starts it, later messages are writes */
	struct ddtx_ofi_peer *pb = ddtx_oep_of(a)->peers[to_b];
	uint32_t n = 0;
	send_msg(to_b, n);
	wait_b(1);
	CHECK(in_b.count == 1 && got(n), "first message");
	for (int i = 0; i < 100 && !pb->ring_tx; i++)
		wait_b(1);
	CHECK(pb->ring_tx, "no grant from B");
	if (!pb->ring_tx)
		return 1;
	struct ddtx_wire_stats st0, st1;
	ddtx_wire_domain_stats(dom, &st0);
	for (int i = 0; i < 300; i++) {
		/* more than the ring holds: credits must come back */
		send_msg(to_b, ++n);
		wait_b(in_b.count + 1);
		CHECK(in_b.count == (int)n + 1 && got(n), "ring message %u", n);
	}
	/* a claimed buffer for a ring peer holds a whole slot's message: 64 KiB, not rxm's 16 */
	struct ddtx_wire_send_buf sb;
	CHECK(!ddtx_wire_send_claim(a, to_b, 1, &sb), "claim");
	CHECK(sb.cap == DDTX_OFI_BUF_SIZE - DDTX_OFI_PAYLOAD_OFF &&
	      sb.cap > ddtx_wire_domain_caps(dom)->max_send_size, "ring claim holds %zu bytes",
	      sb.cap);
	for (size_t i = 0; i < sb.cap; i++)
		((uint8_t *)sb.data)[i] = (uint8_t)(i * 13 + 1);
	ddtx_wire_send_commit(a, &sb, sb.cap);
	int full = in_b.count;
	wait_b(full + 1);
	bool same = in_b.count == full + 1 && in_b.len == sb.cap;
	for (size_t i = 0; same && i < sb.cap; i++)
		same = in_b.last[i] == (uint8_t)(i * 13 + 1);
	CHECK(same, "a full ring message arrived intact");
	ddtx_wire_domain_stats(dom, &st1);
	CHECK(st1.ring_msgs - st0.ring_msgs == 301 && st1.ring_bytes - st0.ring_bytes ==
	      300 * (200 + DDTX_OFI_HDR_LEN) + DDTX_OFI_HDR_LEN + sb.cap,
	      "301 ring writes counted, %llu",
	      (unsigned long long)(st1.ring_msgs - st0.ring_msgs));

	/* forged writes, each followed by a real message that must be the next one delivered */
	struct ddtx_ofi_ring_tx *r = pb->ring_tx;
	uint32_t id = r->grant.ring_id;
	r->grant.ring_id = id + 1000; /* a ring B never granted */
	forge(to_b, r->posted, 64, ddtx_oep_of(a)->uid);
	r->grant.ring_id = id;
	forge(to_b, r->posted + r->grant.slots, 64, ddtx_oep_of(a)->uid); /* beyond the credits */
	forge(to_b, r->posted - 1, 64, ddtx_oep_of(a)->uid);            /* delivered already */
	uint32_t slot0 = (uint32_t)(-r->posted & (r->grant.slots - 1));  /* posted + slot0: slot 0 */
	forge(to_b, r->posted + slot0, r->grant.slot_size + 8, ddtx_oep_of(a)->uid); /* too long */
	int before = in_b.count;
	send_msg(to_b, ++n);
	wait_b(before + 1);
	CHECK(in_b.count == before + 1 && got(n), "after forged CQ data: %d messages (want %d), %s",
	      in_b.count - before, 1, got(n) ? "the real one" : "not the real one");

	/*
	 * CQ data naming a slot that does not hold that message (as another peer could send: a
	 * remote write's completion has no source): a write into the next-but-one slot announced
	 * as the next message, the next slot holding a cleared header from the ring's previous
	 * lap.  Nothing is delivered for it, and the real next two messages arrive intact.
	 */
	{
		struct ddtx_ofi_ep *ep = ddtx_oep_of(a);
		uint64_t want = r->posted;
		/* message want + 1's bytes into its slot, announced as message `want` */
		struct ddtx_ofi_buf *fb = ddtx_ofi_tx_get(ep);
		CHECK(fb, "a send buffer");
		if (fb) {
			struct ddtx_ofi_hdr fh = { .type = DDTX_OFI_MSG_DATA,
						   .src_uid = ddtx_oep_of(a)->uid };
			ddtx_ofi_tx_prepare(ep, fb, to_b, DDTX_OFI_MSG_DATA);
			ddtx_ofi_hdr_pack(&fh, fb->data + fb->start);
			memset(fb->data + fb->start + DDTX_OFI_HDR_LEN, 0xee, 200 - DDTX_OFI_HDR_LEN);
			fb->len = 200;
			fb->ring = true;
			fb->ring_seq = want + 1;
			fb->inflight = true;
			ep->peers[to_b]->tx_inflight++;
			struct iovec fiov = { fb->data + fb->start, fb->len };
			void *fdesc = ep->slab_desc;
			uint64_t slot = (want + 1) & (r->grant.slots - 1);
			struct fi_rma_iov frma = { .len = fb->len, .key = r->grant.key };
			struct fi_msg_rma fmsg = {
				.msg_iov = &fiov, .desc = &fdesc, .iov_count = 1,
				.addr = pb->fi_addr, .rma_iov = &frma, .rma_iov_count = 1,
				.context = &fb->ctx,
				.data = ddtx_ofi_ring_data(r->grant.ring_id, want, fb->len),
			};
			ddtx_ofi_ring_hdr_seal(fb->data + fb->start, want + 1, fb->len);
			CHECK(!ddtx_ofi_ikey_core_addr(r->grant.key, slot * r->grant.slot_size,
						       ep->dom->mr_virt, &frma.addr) &&
			      fi_writemsg(ep->ep, &fmsg, FI_REMOTE_CQ_DATA | FI_COMPLETION) == 0,
			      "forged completion posted");
		}
		before = in_b.count;
		for (int i = 0; i < 20; i++)
			ddtx_wire_ep_progress(b), ddtx_wire_ep_progress(a);
		CHECK(in_b.count == before, "a forged completion delivered %d messages",
		      in_b.count - before);
		/* the real message `want`; then want + 1, whose slot the forgery had written: the
		 * real write overwrites it */
		send_msg(to_b, ++n);
		wait_b(before + 1);
		CHECK(in_b.count == before + 1 && got(n), "after a forged completion: %d messages, %s",
		      in_b.count - before, got(n) ? "the real one" : "not the real one");
		send_msg(to_b, ++n);
		wait_b(before + 2);
		CHECK(in_b.count == before + 2 && got(n), "the message after it: %d, %s",
		      in_b.count - before, got(n) ? "the real one" : "not the real one");
	}

	/* a well-formed write whose header names another sender: takes its slot, delivers nothing */
	forge(to_b, r->posted, 64, ddtx_oep_of(a)->uid ^ 1);
	r->posted++; /* A's own count stays in step with the slot it spoiled */
	before = in_b.count;
	send_msg(to_b, ++n);
	wait_b(before + 1);
	CHECK(in_b.count == before + 1 && got(n), "after a forged header: %d messages",
	      in_b.count - before);

	/* forged control messages: a second grant, an impossible credit, a second RING_START */
	struct ddtx_ofi_ring_grant g = r->grant;
	uint8_t raw[DDTX_OFI_RING_GRANT_LEN], credit[DDTX_OFI_RING_CREDIT_LEN];
	g.ring_id = 5;
	ddtx_ofi_ring_grant_pack(&g, raw);
	ddtx_ofi_ctrl_send(ddtx_oep_of(b), to_a, DDTX_OFI_MSG_RING_GRANT, raw, sizeof(raw));
	ddtx_ofi_ring_credit_pack(r->posted + 10, credit);
	ddtx_ofi_ctrl_send(ddtx_oep_of(b), to_a, DDTX_OFI_MSG_RING_CREDIT, credit, sizeof(credit));
	ddtx_ofi_ctrl_send(ddtx_oep_of(a), to_b, DDTX_OFI_MSG_RING_START, NULL, 0);
	for (int i = 0; i < 100; i++) {
		before = in_b.count;
		send_msg(to_b, ++n);
		wait_b(before + 1);
		CHECK(in_b.count == before + 1 && got(n), "after forged control messages");
	}
	/* B's credits for those came after the forgeries in its stream to A */
	CHECK(pb->ring_tx == r && r->grant.ring_id == id, "a second grant was taken");
	CHECK(r->acked <= r->posted, "a credit for unwritten messages was taken");
	CHECK(ddtx_wire_peer_alive(a, to_b), "B is still alive for A");

	ddtx_wire_ep_close(a);
	ddtx_wire_ep_close(b);
	ddtx_wire_domain_close(dom);
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ofi ring hostile tests passed\n");
	return 0;
}
