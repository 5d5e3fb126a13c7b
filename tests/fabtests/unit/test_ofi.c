/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the ofi wire's pure logic (wire/ofi/blob.h, wire/ofi/ofi_pure.h); no core
 * provider is opened:
 *
 *  - caps from a core's fi_info: max_sge = min(tx, rx iov_limit) capped by FI_DDTX_MAX_SGE,
 *    max_rma_size from max_msg_size, no UMR; cores refused for each missing capability
 *  - address blob: round trip, and every malformed blob refused (length, magic, version,
 *    core_len, padding, another core's identity)
 *  - chunking of a local iov list to the core's iov_limit and max_msg_size, against a
 *    byte-by-byte reference on random lists
 *  - internal key encoding and the core address it gives, key replies and their bounds checks,
 *    message headers
 *  - receive rings (ring.c): grants, credits and the CQ data of a ring write round trip; a
 *    hostile peer's grant (app key, ring number, slot count, slot size), credit (none due,
 *    more than sent) and CQ data (a slot it may not hold: behind, too far ahead, a length
 *    outside the slot) refused; sequence numbers across the 16-bit wrap
 *  - names (name.c): the uid of a bound endpoint, a function of the core and its address alone
 *    (server and resolver compute the same), and the canonical socket address
 *  - connections (conn.c, FI_EP_MSG cores): a core's fitness for each endpoint type, the verdict
 *    on a connection request in every state (both sides of a simultaneous connect deciding alike
 *    leave exactly one connection), when a refusal is asked again, and the parsing of a request's
 *    data
 *
 * Usage: test_ofi [seed]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "wire/ofi/blob.h"
#include "wire/ofi/ofi_pure.h"

#include "unit_check.h"

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static struct fi_info *good_core(void)
{
	struct fi_info *i = fi_allocinfo();

	i->caps = DDTX_OFI_CORE_CAPS | FI_TAGGED;
	i->ep_attr->type = FI_EP_RDM;
	i->ep_attr->max_msg_size = (size_t)1 << 40;
	i->tx_attr->iov_limit = 4;
	i->rx_attr->iov_limit = 8;
	i->tx_attr->msg_order = FI_ORDER_SAS;
	i->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_LOCAL;
	i->domain_attr->mr_key_size = 8;
	return i;
}

static void test_caps(void)
{
	struct fi_info *i = good_core();
	struct ddtx_wire_params params = { 0 };
	struct ddtx_wire_caps caps;

	CHECK(ddtx_ofi_unusable(i) == NULL, "a good core refused: %s", ddtx_ofi_unusable(i));
	ddtx_ofi_caps_from_info(i, &params, &caps);
	CHECK(caps.max_sge == 4, "max_sge %zu (min of tx 4 / rx 8)", caps.max_sge);
	CHECK(caps.max_mkey_entries == 0, "UMR on a core provider");
	CHECK(caps.max_rma_size == (size_t)1 << 30, "max_rma_size %zu", caps.max_rma_size);
	CHECK(caps.addr_len == DDTX_OFI_BLOB_LEN && caps.addr_len <= 64, "addr_len %zu",
	      caps.addr_len);
	CHECK(caps.max_send_size + DDTX_OFI_PAYLOAD_OFF == DDTX_OFI_BUF_SIZE, "max_send_size %zu",
	      caps.max_send_size);
	CHECK(!strcmp(caps.name, "ofi"), "name %s", caps.name);
	params.max_sge = 2;
	ddtx_ofi_caps_from_info(i, &params, &caps);
	CHECK(caps.max_sge == 2, "FI_DDTX_MAX_SGE=2 gives %zu", caps.max_sge);
	i->ep_attr->max_msg_size = 1 << 20;
	ddtx_ofi_caps_from_info(i, NULL, &caps);
	CHECK(caps.max_rma_size == 1 << 20, "max_rma_size %zu under a 1 MiB core", caps.max_rma_size);

	/* each missing capability refuses the core, with a reason */
	i->ep_attr->type = FI_EP_MSG;
	CHECK(ddtx_ofi_unusable(i), "FI_EP_MSG accepted");
	i->ep_attr->type = FI_EP_RDM;
	i->caps &= ~(uint64_t)FI_RMA;
	CHECK(ddtx_ofi_unusable(i), "a core without FI_RMA accepted");
	i->caps |= FI_RMA;
	i->domain_attr->mr_mode |= FI_MR_PROV_KEY;
	CHECK(ddtx_ofi_unusable(i), "FI_MR_PROV_KEY accepted (internal keys are chosen)");
	i->domain_attr->mr_mode = FI_MR_ENDPOINT;
	CHECK(ddtx_ofi_unusable(i), "FI_MR_ENDPOINT accepted");
	i->domain_attr->mr_mode = FI_MR_ALLOCATED;
	CHECK(!ddtx_ofi_unusable(i), "FI_MR_ALLOCATED refused");
	i->domain_attr->mr_key_size = 4;
	CHECK(ddtx_ofi_unusable(i), "4-byte keys accepted");
	i->domain_attr->mr_key_size = 8;
	i->tx_attr->msg_order = 0;
	CHECK(ddtx_ofi_unusable(i), "unordered sends accepted");
	i->tx_attr->msg_order = FI_ORDER_SAS;
	i->ep_attr->max_msg_size = 4096;
	CHECK(ddtx_ofi_unusable(i), "a 4 KiB max_msg_size accepted");
	fi_freeinfo(i);
}

static void test_msg_core(void)
{
	struct fi_info *i = good_core();

	i->ep_attr->type = FI_EP_MSG;
	i->domain_attr->max_ep_srx_ctx = 1;
	CHECK(ddtx_ofi_unusable_as(i, FI_EP_MSG) == NULL, "a good FI_EP_MSG core refused: %s",
	      ddtx_ofi_unusable_as(i, FI_EP_MSG));
	CHECK(ddtx_ofi_unusable_as(i, FI_EP_RDM) != NULL, "an FI_EP_MSG core taken for RDM");
	CHECK(ddtx_ofi_unusable(i) != NULL, "ddtx_ofi_unusable is not the RDM check");
	i->domain_attr->max_ep_srx_ctx = 0;
	CHECK(ddtx_ofi_unusable_as(i, FI_EP_MSG) != NULL, "an FI_EP_MSG core without SRX accepted");
	i->domain_attr->max_ep_srx_ctx = 1;
	i->ep_attr->type = FI_EP_RDM;
	CHECK(ddtx_ofi_unusable_as(i, FI_EP_MSG) != NULL, "an RDM core taken for FI_EP_MSG");
	CHECK(ddtx_ofi_unusable_as(i, FI_EP_RDM) == NULL, "the good RDM core refused");
	i->ep_attr->type = FI_EP_DGRAM;
	CHECK(ddtx_ofi_unusable_as(i, FI_EP_MSG) && ddtx_ofi_unusable_as(i, FI_EP_RDM),
	      "FI_EP_DGRAM accepted");
	fi_freeinfo(i);
}

/* One side's state after it decided on the other's request, given its own state before. */
static enum ddtx_ofi_conn_state after(enum ddtx_ofi_connreq_verdict v,
				      enum ddtx_ofi_conn_state mine, bool *theirs_accepted)
{
	*theirs_accepted = v != DDTX_OFI_CONNREQ_REJECT;
	return v == DDTX_OFI_CONNREQ_ACCEPT_REPLACE ? DDTX_OFI_CONN_LOSER : mine;
}

static void test_connreq(void)
{
	const uint64_t lo = 0x1000, hi = 0x8000000000000001ull;
	const enum ddtx_ofi_conn_state busy[] = { DDTX_OFI_CONN_ACCEPTING, DDTX_OFI_CONN_UP };

	/* no connection yet: accepted, from a larger or a smaller uid */
	CHECK(ddtx_ofi_connreq_decide(lo, hi, DDTX_OFI_CONN_NONE, false) == DDTX_OFI_CONNREQ_ACCEPT,
	      "a first request from a larger uid refused");
	CHECK(ddtx_ofi_connreq_decide(hi, lo, DDTX_OFI_CONN_NONE, false) == DDTX_OFI_CONNREQ_ACCEPT,
	      "a first request from a smaller uid refused");
	/* a peer taken as gone, or one we already have a connection with: refused */
	CHECK(ddtx_ofi_connreq_decide(lo, hi, DDTX_OFI_CONN_NONE, true) == DDTX_OFI_CONNREQ_REJECT,
	      "a request from a dead peer accepted");
	for (size_t k = 0; k < 2; k++) {
		CHECK(ddtx_ofi_connreq_decide(lo, hi, busy[k], false) == DDTX_OFI_CONNREQ_REJECT,
		      "a second connection accepted (state %d, larger uid)", busy[k]);
		CHECK(ddtx_ofi_connreq_decide(hi, lo, busy[k], false) == DDTX_OFI_CONNREQ_REJECT,
		      "a second connection accepted (state %d, smaller uid)", busy[k]);
	}
	/* our own request to ourselves: accepted beside it, whatever the state */
	CHECK(ddtx_ofi_connreq_decide(lo, lo, DDTX_OFI_CONN_CONNECTING, false) ==
	      DDTX_OFI_CONNREQ_ACCEPT_EXTRA, "a request to ourselves not accepted beside ours");
	/* The simultaneous connect, on random uid pairs: each side decides on the other's request
	 * while its own is on its way; exactly one connection is left, the larger uid's request. */
	for (int n = 0; n < 1000; n++) {
		uint64_t a = rnd() | 1, b = rnd() | 2;
		bool a_took_b, b_took_a;

		if (a == b)
			continue;
		enum ddtx_ofi_conn_state a_own =
			after(ddtx_ofi_connreq_decide(a, b, DDTX_OFI_CONN_CONNECTING, false),
			      DDTX_OFI_CONN_CONNECTING, &a_took_b);
		enum ddtx_ofi_conn_state b_own =
			after(ddtx_ofi_connreq_decide(b, a, DDTX_OFI_CONN_CONNECTING, false),
			      DDTX_OFI_CONN_CONNECTING, &b_took_a);
		/* a connection exists when its requester keeps it and its acceptor took it */
		bool via_a = a_own == DDTX_OFI_CONN_CONNECTING && b_took_a;
		bool via_b = b_own == DDTX_OFI_CONN_CONNECTING && a_took_b;

		CHECK(via_a != via_b, "uids %#llx %#llx: %d connections left",
		      (unsigned long long)a, (unsigned long long)b, (int)via_a + (int)via_b);
		CHECK(via_a == (a > b), "uids %#llx %#llx: the smaller uid's request won",
		      (unsigned long long)a, (unsigned long long)b);
		/* the loser's request is refused, never accepted half-way */
		CHECK(!(a_own == DDTX_OFI_CONN_LOSER && b_took_a) &&
		      !(b_own == DDTX_OFI_CONN_LOSER && a_took_b), "a losing request accepted");
	}
	/* A refusal from a larger uid is asked again (its own request is on the way), a bounded
	 * number of times; from a smaller uid never (it had a reason). */
	CHECK(ddtx_ofi_refusal_retry(lo, hi, 1), "a refusal from a larger uid not asked again");
	CHECK(ddtx_ofi_refusal_retry(lo, hi, DDTX_OFI_CONN_RETRIES - 1), "retries end too early");
	CHECK(!ddtx_ofi_refusal_retry(lo, hi, DDTX_OFI_CONN_RETRIES), "retries never end");
	CHECK(!ddtx_ofi_refusal_retry(hi, lo, 1), "a refusal from a smaller uid asked again");
}

static void test_connreq_parse(void)
{
	uint32_t tcp = ddtx_ofi_core_id("tcp", FI_SOCKADDR_IN);
	struct ddtx_ofi_blob b = { .core_id = tcp, .uid = 0x77, .core_len = 16 }, out;
	uint8_t raw[DDTX_OFI_BLOB_LEN + 8] = { 0 };

	for (int i = 0; i < 16; i++)
		b.core_addr[i] = (uint8_t)(i + 3);
	CHECK(ddtx_ofi_blob_pack(&b, raw) == 0, "pack");
	CHECK(ddtx_ofi_connreq_parse(raw, DDTX_OFI_BLOB_LEN, tcp, &out) == 0 && out.uid == 0x77 &&
	      out.core_len == 16 && !memcmp(out.core_addr, b.core_addr, 16), "a good request");
	CHECK(ddtx_ofi_connreq_parse(raw, 0, tcp, &out) == -FI_EINVAL, "no data accepted");
	CHECK(ddtx_ofi_connreq_parse(raw, DDTX_OFI_BLOB_LEN - 1, tcp, &out) == -FI_EINVAL,
	      "short data accepted");
	CHECK(ddtx_ofi_connreq_parse(raw, DDTX_OFI_BLOB_LEN + 8, tcp, &out) == -FI_EINVAL,
	      "data with bytes after the blob accepted");
	CHECK(ddtx_ofi_connreq_parse(raw, DDTX_OFI_BLOB_LEN, ddtx_ofi_core_id("tcp;ofi_rxm",
	      FI_SOCKADDR_IN), &out) == -FI_EINVAL, "a blob of the RDM stack accepted over MSG");
	b.uid = 0;
	CHECK(ddtx_ofi_blob_pack(&b, raw) == 0, "pack uid 0");
	CHECK(ddtx_ofi_connreq_parse(raw, DDTX_OFI_BLOB_LEN, tcp, &out) == -FI_EINVAL,
	      "uid 0 accepted");
	/* random bytes: refused or a well-formed blob, never a crash or a read past the end */
	for (int n = 0; n < 2000; n++) {
		size_t len = (size_t)(rnd() % sizeof(raw));

		for (size_t k = 0; k < sizeof(raw); k++)
			raw[k] = (uint8_t)rnd();
		if (n & 1) { /* a plausible header, so the deeper checks run */
			memcpy(raw, "DOFI", 4);
			raw[4] = DDTX_OFI_BLOB_VERSION;
			len = DDTX_OFI_BLOB_LEN;
		}
		int r = ddtx_ofi_connreq_parse(raw, len, 0, &out);
		CHECK(r == 0 || r == -FI_EINVAL, "parse gave %d", r);
		if (!r)
			CHECK(out.uid && out.core_len && out.core_len <= DDTX_OFI_CORE_ADDR_MAX,
			      "a parsed request with uid 0 or a bad length");
	}
}

static void test_blob(void)
{
	struct ddtx_ofi_blob b = { .core_id = ddtx_ofi_core_id("tcp;ofi_rxm", FI_SOCKADDR_IN),
				   .uid = 0x1122334455667788ull, .core_len = 16 };
	struct ddtx_ofi_blob out;
	uint8_t raw[DDTX_OFI_BLOB_LEN], bad[DDTX_OFI_BLOB_LEN];

	for (int i = 0; i < 16; i++)
		b.core_addr[i] = (uint8_t)(i * 7 + 1);
	CHECK(ddtx_ofi_blob_pack(&b, raw) == 0, "pack");
	CHECK(!memcmp(raw, "DOFI", 4), "magic bytes");
	CHECK(ddtx_ofi_blob_unpack(raw, sizeof(raw), b.core_id, &out) == 0, "unpack");
	CHECK(out.uid == b.uid && out.core_len == 16 && !memcmp(out.core_addr, b.core_addr, 16),
	      "round trip");
	CHECK(ddtx_ofi_blob_unpack(raw, sizeof(raw), 0, &out) == 0, "any core");
	CHECK(ddtx_ofi_core_id("shm", FI_ADDR_STR) != b.core_id, "core ids of tcp and shm equal");
	CHECK(ddtx_ofi_core_id("tcp;ofi_rxm", FI_SOCKADDR_IN6) != b.core_id,
	      "address formats not told apart");
	CHECK(ddtx_ofi_blob_unpack(raw, sizeof(raw), ddtx_ofi_core_id("shm", FI_ADDR_STR), &out) ==
	      -FI_EINVAL, "a blob of another core accepted");
	CHECK(ddtx_ofi_blob_unpack(raw, sizeof(raw) - 1, 0, &out) == -FI_EINVAL, "short");
	CHECK(ddtx_ofi_blob_unpack(NULL, sizeof(raw), 0, &out) == -FI_EINVAL, "NULL");
	/* every single-byte change of a header or padding byte is refused, except uid / core_id
	 * / the address itself (which are data) */
	for (size_t pos = 0; pos < sizeof(raw); pos++) {
		bool data = (pos >= 8 && pos < 20) || (pos >= 20 && pos < 36);
		memcpy(bad, raw, sizeof(raw));
		bad[pos] ^= 0x5a;
		int r = ddtx_ofi_blob_unpack(bad, sizeof(bad), 0, &out);
		if (pos == 5) /* core_len 16 ^ 0x5a = 74 > 44 */
			CHECK(r == -FI_EINVAL, "core_len out of range accepted");
		else if (!data)
			CHECK(r == -FI_EINVAL, "byte %zu changed and accepted", pos);
		else
			CHECK(r == 0, "byte %zu (data) changed and refused", pos);
	}
	b.core_len = 0;
	CHECK(ddtx_ofi_blob_pack(&b, raw) == -FI_EINVAL, "empty core address packed");
	b.core_len = DDTX_OFI_CORE_ADDR_MAX + 1;
	CHECK(ddtx_ofi_blob_pack(&b, raw) == -FI_EINVAL, "oversized core address packed");
}

static void test_bound_uid(void)
{
	uint32_t tcp = ddtx_ofi_core_id("tcp;ofi_rxm", FI_SOCKADDR_IN);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9228) }, b;

	inet_pton(AF_INET, "127.1.0.2", &a.sin_addr);
	b = a;
	memset(b.sin_zero, 0x77, sizeof(b.sin_zero));   /* what a resolver may leave there */
	ddtx_ofi_addr_canon(FI_SOCKADDR_IN, &b, sizeof(b));
	CHECK(!memcmp(&a, &b, sizeof(a)), "sockaddr_in padding not cleared");
	uint64_t u = ddtx_ofi_bound_uid(tcp, &a, sizeof(a));
	CHECK(u == ddtx_ofi_bound_uid(tcp, &b, sizeof(b)), "one address, two uids");
	CHECK(u >> 63, "bound uid without bit 63");
	b.sin_port = htons(9229);
	CHECK(u != ddtx_ofi_bound_uid(tcp, &b, sizeof(b)), "another port, the same uid");
	b = a;
	inet_pton(AF_INET, "127.1.0.1", &b.sin_addr);
	CHECK(u != ddtx_ofi_bound_uid(tcp, &b, sizeof(b)), "another host, the same uid");
	CHECK(u != ddtx_ofi_bound_uid(ddtx_ofi_core_id("net", FI_SOCKADDR_IN), &a, sizeof(a)),
	      "another core, the same uid");
	/* a format that is not a socket address is left as it is */
	uint8_t raw[16];
	memset(raw, 0x77, sizeof(raw));
	ddtx_ofi_addr_canon(FI_ADDR_STR, raw, sizeof(raw));
	CHECK(raw[15] == 0x77, "a string address changed");
}

/* A wildcard bound address takes the interface's IP, its own port; nothing else changes. */
static void test_fill_ip(void)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(9228) };
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(41000) }, a = any;
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_port = htons(9228) };
	struct sockaddr_in6 at6 = { .sin6_family = AF_INET6, .sin6_scope_id = 3 }, a6 = any6;

	inet_pton(AF_INET, "127.1.0.2", &at.sin_addr);
	CHECK(ddtx_ofi_addr_fill_ip(FI_SOCKADDR_IN, &a, sizeof(a), &at, sizeof(at)),
	      "0.0.0.0 not filled");
	CHECK(a.sin_addr.s_addr == at.sin_addr.s_addr && a.sin_port == htons(9228),
	      "0.0.0.0:9228 did not become 127.1.0.2:9228");
	/* the filled address is the one a client resolving 127.1.0.2:9228 computes its uid from */
	struct sockaddr_in want = at;
	want.sin_port = htons(9228);
	uint32_t tcp = ddtx_ofi_core_id("tcp", FI_SOCKADDR_IN);
	CHECK(ddtx_ofi_bound_uid(tcp, &a, sizeof(a)) == ddtx_ofi_bound_uid(tcp, &want, sizeof(want)),
	      "filled address, another uid");
	CHECK(!ddtx_ofi_addr_fill_ip(FI_SOCKADDR_IN, &a, sizeof(a), &at, sizeof(at)),
	      "a named address refilled");
	a = any;
	CHECK(!ddtx_ofi_addr_fill_ip(FI_SOCKADDR_IN, &a, sizeof(a), &any, sizeof(any)) &&
	      !a.sin_addr.s_addr, "filled from a wildcard interface");
	CHECK(!ddtx_ofi_addr_fill_ip(FI_SOCKADDR_IN, &a, sizeof(a), NULL, 0), "filled from nothing");
	CHECK(!ddtx_ofi_addr_fill_ip(FI_SOCKADDR_IN, &a, sizeof(a), &at6, sizeof(at6)),
	      "filled from another family");
	inet_pton(AF_INET6, "fe80::1", &at6.sin6_addr);
	CHECK(ddtx_ofi_addr_fill_ip(FI_SOCKADDR_IN6, &a6, sizeof(a6), &at6, sizeof(at6)) &&
	      !memcmp(&a6.sin6_addr, &at6.sin6_addr, sizeof(a6.sin6_addr)) &&
	      a6.sin6_scope_id == 3 && a6.sin6_port == htons(9228), ":: not filled");
	uint8_t raw[16] = {0};
	CHECK(!ddtx_ofi_addr_fill_ip(FI_ADDR_STR, raw, sizeof(raw), &at, sizeof(at)),
	      "a string address filled");
}

/* The chunks must cover exactly the first len bytes in order, each within the limits. */
static void test_chunk(void)
{
	struct ddtx_ofi_chunk ch[4096];

	for (int round = 0; round < 2000; round++) {
		size_t count = 1 + rnd() % 24, max_iov = 1 + rnd() % 6, max_bytes = 1 + rnd() % 700;
		struct iovec iov[24];
		static uint8_t mem[24 * 300];
		size_t total = 0;

		for (size_t i = 0; i < count; i++) {
			iov[i].iov_base = mem + i * 300;
			iov[i].iov_len = rnd() % 4 == 0 ? 0 : rnd() % 300;
			total += iov[i].iov_len;
		}
		size_t len = total ? rnd() % (total + 1) : 0;
		long n = ddtx_ofi_chunk_iov(iov, count, len, max_iov, max_bytes, ch, 4096);
		CHECK(n >= 0 && n <= 4096, "round %d: %ld chunks", round, n);
		if (n < 0 || n > 4096)
			continue;
		/* replay byte by byte */
		size_t idx = 0, off = 0, pos = 0;
		for (long c = 0; c < n; c++) {
			CHECK(ch[c].roff == pos, "round %d chunk %ld: roff %llu, want %zu", round, c,
			      (unsigned long long)ch[c].roff, pos);
			CHECK(ch[c].n >= 1 && ch[c].n <= max_iov, "round %d: %zu entries > %zu", round,
			      ch[c].n, max_iov);
			CHECK(ch[c].bytes >= 1 && ch[c].bytes <= max_bytes, "round %d: %zu bytes > %zu",
			      round, ch[c].bytes, max_bytes);
			while (idx < count && off == iov[idx].iov_len) {
				idx++;
				off = 0;
			}
			CHECK(ch[c].first == idx && ch[c].first_off == off,
			      "round %d chunk %ld starts at %zu+%zu, want %zu+%zu", round, c,
			      ch[c].first, ch[c].first_off, idx, off);
			size_t left = ch[c].bytes, used = 0;
			while (left) {
				while (off == iov[idx].iov_len) {
					idx++;
					off = 0;
				}
				size_t take = iov[idx].iov_len - off < left ? iov[idx].iov_len - off : left;
				off += take;
				left -= take;
				used++;
			}
			CHECK(used == ch[c].n, "round %d chunk %ld: %zu entries used, %zu counted", round,
			      c, used, ch[c].n);
			pos += ch[c].bytes;
		}
		CHECK(pos == len, "round %d: chunks cover %zu of %zu bytes", round, pos, len);
		if (total < SIZE_MAX - 1)
			CHECK(ddtx_ofi_chunk_iov(iov, count, total + 1, max_iov, max_bytes, ch, 4096) ==
			      -FI_EINVAL, "round %d: a list shorter than len accepted", round);
	}
	struct iovec one = { (void *)ch, 100 };
	CHECK(ddtx_ofi_chunk_iov(&one, 1, 100, 0, 10, ch, 10) == -FI_EINVAL, "max_iov 0");
	CHECK(ddtx_ofi_chunk_iov(&one, 1, 100, 1, 10, ch, 3) == 10, "count beyond cap: %ld",
	      ddtx_ofi_chunk_iov(&one, 1, 100, 1, 10, ch, 3));
}

static void test_keys(void)
{
	uint64_t va = 0x7f1234560000ull, a;
	uint64_t k0 = ddtx_ofi_ikey(va, false, 5), kv = ddtx_ofi_ikey(va, true, 5);

	CHECK(k0 & DDTX_OFI_IKEY_BIT && k0 != kv, "internal keys");
	CHECK(ddtx_ofi_ikey(va, false, 6) != k0, "the tag does not change the key");
	/* offset key: raddr is an offset */
	CHECK(!ddtx_ofi_ikey_core_addr(k0, 100, true, &a) && a == va + 100, "virt core: %#llx",
	      (unsigned long long)a);
	CHECK(!ddtx_ofi_ikey_core_addr(k0, 100, false, &a) && a == 100, "offset core");
	/* virtual key: raddr is an address */
	CHECK(!ddtx_ofi_ikey_core_addr(kv, va + 8, true, &a) && a == va + 8, "virt/virt");
	CHECK(!ddtx_ofi_ikey_core_addr(kv, va + 8, false, &a) && a == 8, "virt key, offset core");
	CHECK(ddtx_ofi_ikey_core_addr(kv, va - 8, false, &a) == -FI_EACCES, "before the key");
	CHECK(ddtx_ofi_ikey_core_addr(42, 0, true, &a) == -FI_EKEYREJECTED, "an app key");

	struct ddtx_ofi_key_rep r = { .key = 9, .access = DDTX_ACC_REMOTE_WRITE, .core_key = 77,
				      .iova = 4096, .len = 1000, .core_base = va }, o;
	uint8_t raw[DDTX_OFI_KEY_REP_LEN];
	ddtx_ofi_key_rep_pack(&r, raw);
	CHECK(!ddtx_ofi_key_rep_unpack(raw, sizeof(raw), &o) && o.key == 9 && o.core_key == 77 &&
	      o.iova == 4096 && o.len == 1000 && o.core_base == va &&
	      o.access == DDTX_ACC_REMOTE_WRITE && !o.status, "key reply round trip");
	CHECK(ddtx_ofi_key_rep_unpack(raw, sizeof(raw) - 1, &o) == -FI_EINVAL, "short reply");
	raw[8] = 0x33; /* status neither 0 nor -FI_EKEYREJECTED */
	CHECK(ddtx_ofi_key_rep_unpack(raw, sizeof(raw), &o) == -FI_EINVAL, "odd status accepted");
	CHECK(!ddtx_ofi_key_translate(&r, 4096 + 10, 990, DDTX_ACC_REMOTE_WRITE, &a) &&
	      a == va + 10, "translate");
	CHECK(ddtx_ofi_key_translate(&r, 4096 + 10, 991, DDTX_ACC_REMOTE_WRITE, &a) == -FI_EACCES,
	      "past the end");
	CHECK(ddtx_ofi_key_translate(&r, 4095, 1, DDTX_ACC_REMOTE_WRITE, &a) == -FI_EACCES,
	      "before the start");
	CHECK(ddtx_ofi_key_translate(&r, UINT64_MAX - 5, 10, DDTX_ACC_REMOTE_WRITE, &a) ==
	      -FI_EACCES, "wrapping");
	CHECK(ddtx_ofi_key_translate(&r, 4096, 10, DDTX_ACC_REMOTE_READ, &a) == -FI_EACCES,
	      "read without the right");
	r.status = -FI_EKEYREJECTED;
	CHECK(ddtx_ofi_key_translate(&r, 4096, 10, DDTX_ACC_REMOTE_WRITE, &a) == -FI_EKEYREJECTED,
	      "no such key");

	struct ddtx_ofi_hdr h = { .type = DDTX_OFI_MSG_DATA, .flags = DDTX_OFI_F_ADDR,
				  .src_uid = 0xabcdef }, ho;
	uint8_t hb[DDTX_OFI_PAYLOAD_OFF] = { 0 };
	ddtx_ofi_hdr_pack(&h, hb);
	CHECK(!ddtx_ofi_hdr_unpack(hb, sizeof(hb), &ho) && ho.src_uid == h.src_uid &&
	      ho.type == h.type && ho.flags == h.flags, "header round trip");
	CHECK(ddtx_ofi_hdr_unpack(hb, DDTX_OFI_HDR_LEN, &ho) == -FI_EINVAL,
	      "a header announcing a blob without one accepted");
	hb[0] = 9;
	CHECK(ddtx_ofi_hdr_unpack(hb, sizeof(hb), &ho) == -FI_EINVAL, "unknown type accepted");
	hb[0] = DDTX_OFI_MSG_DATA;
	hb[1] = 0x80;
	CHECK(ddtx_ofi_hdr_unpack(hb, sizeof(hb), &ho) == -FI_EINVAL, "unknown flag accepted");
}

static void test_ring(void)
{
	struct ddtx_ofi_ring_grant g = { .key = ddtx_ofi_ikey(0x7f0000001000ull, false, 3),
					 .ring_id = 77, .slots = 64, .slot_size = 16448 }, o;
	uint8_t raw[DDTX_OFI_RING_GRANT_LEN], bad[DDTX_OFI_RING_GRANT_LEN];

	ddtx_ofi_ring_grant_pack(&g, raw);
	CHECK(!ddtx_ofi_ring_grant_unpack(raw, sizeof(raw), &o) && o.key == g.key &&
	      o.ring_id == 77 && o.slots == 64 && o.slot_size == 16448, "grant round trip");
	CHECK(ddtx_ofi_ring_grant_unpack(raw, sizeof(raw) - 1, &o) == -FI_EINVAL, "short grant");
	struct ddtx_ofi_ring_grant hostile[] = {
		{ .key = 42, .ring_id = 1, .slots = 64, .slot_size = 16448 },          /* app key */
		{ .key = g.key, .ring_id = DDTX_OFI_RING_ID_MAX, .slots = 64, .slot_size = 16448 },
		{ .key = g.key, .ring_id = 1, .slots = 0, .slot_size = 16448 },
		{ .key = g.key, .ring_id = 1, .slots = 48, .slot_size = 16448 },      /* not 2^n */
		{ .key = g.key, .ring_id = 1, .slots = 2 * DDTX_OFI_RING_SLOTS_MAX,
		  .slot_size = 16448 },
		{ .key = g.key, .ring_id = 1, .slots = 64, .slot_size = DDTX_OFI_HDR_LEN },
		{ .key = g.key, .ring_id = 1, .slots = 64, .slot_size = DDTX_OFI_RING_SLOT_MAX + 1 },
	};
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		ddtx_ofi_ring_grant_pack(&hostile[i], bad);
		CHECK(ddtx_ofi_ring_grant_unpack(bad, sizeof(bad), &o) == -FI_EINVAL,
		      "hostile grant %zu accepted", i);
	}
	memcpy(bad, raw, sizeof(bad));
	bad[23] = 1; /* a slot size beyond 32 bits */
	CHECK(ddtx_ofi_ring_grant_unpack(bad, sizeof(bad), &o) == -FI_EINVAL, "huge slot size");

	uint8_t c[DDTX_OFI_RING_CREDIT_LEN];
	uint64_t v;
	ddtx_ofi_ring_credit_pack(0x123456789ull, c);
	CHECK(!ddtx_ofi_ring_credit_unpack(c, sizeof(c), &v) && v == 0x123456789ull, "credit");
	CHECK(ddtx_ofi_ring_credit_unpack(c, 7, &v) == -FI_EINVAL, "short credit");
	CHECK(ddtx_ofi_ring_credit_ok(10, 40, 20) && ddtx_ofi_ring_credit_ok(10, 40, 40),
	      "credits due");
	CHECK(!ddtx_ofi_ring_credit_ok(10, 40, 10) && !ddtx_ofi_ring_credit_ok(10, 40, 9) &&
	      !ddtx_ofi_ring_credit_ok(10, 40, 41), "a credit for nothing, backwards, or for "
	      "more than was written accepted");

	/* CQ data: round trip over random values */
	for (int i = 0; i < 1000; i++) {
		uint32_t id = (uint32_t)(rnd() % DDTX_OFI_RING_ID_MAX), id2;
		uint64_t seq = rnd();
		size_t len = (size_t)(rnd() % (1u << 24)), len2;
		uint16_t s16;

		ddtx_ofi_ring_data_split(ddtx_ofi_ring_data(id, seq, len), &id2, &s16, &len2);
		CHECK(id2 == id && s16 == (uint16_t)seq && len2 == len, "CQ data round trip");
	}
	/* which slots a write may name: [next, next + slots) */
	uint64_t seq;
	CHECK(!ddtx_ofi_ring_accept(100, 64, 16448, 100, 500, &seq) && seq == 100, "in order");
	CHECK(!ddtx_ofi_ring_accept(100, 64, 16448, 163, 500, &seq) && seq == 163, "last slot");
	CHECK(ddtx_ofi_ring_accept(100, 64, 16448, 164, 500, &seq) == -FI_EINVAL,
	      "a slot beyond the credits accepted");
	CHECK(ddtx_ofi_ring_accept(100, 64, 16448, 99, 500, &seq) == -FI_EINVAL,
	      "a delivered slot accepted");
	CHECK(!ddtx_ofi_ring_accept(65530, 64, 16448, 3, 500, &seq) && seq == 65539,
	      "across the 16-bit wrap");
	CHECK(!ddtx_ofi_ring_accept(100, 64, 16448, 100, 16448, &seq), "a full slot");
	CHECK(ddtx_ofi_ring_accept(100, 64, 16448, 100, 16449, &seq) == -FI_EINVAL,
	      "longer than the slot");
	CHECK(ddtx_ofi_ring_accept(100, 64, 16448, 100, DDTX_OFI_HDR_LEN - 1, &seq) == -FI_EINVAL,
	      "shorter than a header");

	/* The slot's own header says which message is there (CQ data names no source). */
	uint8_t slot[64] = { 0 };
	struct ddtx_ofi_hdr h = { .type = DDTX_OFI_MSG_DATA, .src_uid = 0xabcdef };
	size_t got = 0;
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 0, 0xabcdef, &got) == DDTX_OFI_RING_NOT_YET,
	      "a cleared slot passed for message 0");
	ddtx_ofi_hdr_pack(&h, slot);
	ddtx_ofi_ring_hdr_seal(slot, 70000, 500);
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 70000, 0xabcdef, &got) ==
	      DDTX_OFI_RING_DELIVER && got == 500, "a sealed message");
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 70000 + 64, 0xabcdef, &got) ==
	      DDTX_OFI_RING_NOT_YET, "a message of the ring's previous lap passed for this one");
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 70000, 0xabcdee, &got) == DDTX_OFI_RING_BAD,
	      "another sender's header");
	CHECK(ddtx_ofi_ring_hdr_check(slot, 400, 70000, 0xabcdef, &got) == DDTX_OFI_RING_BAD,
	      "a length beyond the slot");
	ddtx_ofi_ring_hdr_seal(slot, 70000, DDTX_OFI_HDR_LEN - 1);
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 70000, 0xabcdef, &got) == DDTX_OFI_RING_BAD,
	      "a length shorter than a header");
	slot[0] = DDTX_OFI_MSG_KEY_REQ;
	ddtx_ofi_ring_hdr_seal(slot, 70000, 100);
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 70000, 0xabcdef, &got) == DDTX_OFI_RING_BAD,
	      "a control message in a ring slot");

	/* A credit carried in byte 7 (the reply's header, for the ring its writer holds). */
	uint8_t c8 = 0;
	uint64_t d = 0;
	slot[0] = DDTX_OFI_MSG_DATA;
	ddtx_ofi_ring_hdr_seal(slot, 70000, 500);
	CHECK(!ddtx_ofi_ring_hdr_credit_get(slot, &c8), "a credit where none was put");
	ddtx_ofi_ring_hdr_credit(slot, 0x1234);
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 70000, 0xabcdef, &got) ==
	      DDTX_OFI_RING_DELIVER && got == 500, "a message carrying a credit");
	CHECK(ddtx_ofi_ring_hdr_credit_get(slot, &c8) && c8 == 0x34, "the carried credit");
	ddtx_ofi_ring_hdr_seal(slot, 70001, 600); /* sealed again (deferred): no credit left */
	CHECK(!ddtx_ofi_ring_hdr_credit_get(slot, &c8), "a credit survived sealing");
	slot[7] = 1;                               /* byte 7 set without the flag */
	CHECK(ddtx_ofi_ring_hdr_check(slot, 16448, 70001, 0xabcdef, &got) == DDTX_OFI_RING_BAD,
	      "a length over 2^24 accepted");
	/* acked 250, 20 posted beyond: a credit names 250..270 by its low 8 bits */
	CHECK(ddtx_ofi_ring_credit8(250, 270, 16, (uint8_t)262, &d) && d == 262, "credit 262");
	CHECK(ddtx_ofi_ring_credit8(250, 270, 16, 250, &d) && d == 250, "no news");
	CHECK(ddtx_ofi_ring_credit8(250, 270, 16, (uint8_t)270, &d) && d == 270, "all delivered");
	CHECK(!ddtx_ofi_ring_credit8(250, 270, 16, (uint8_t)271, &d), "beyond what was posted");
	CHECK(!ddtx_ofi_ring_credit8(250, 270, 16, 240, &d), "a stale credit taken");
	CHECK(!ddtx_ofi_ring_credit8(250, 270, 256, (uint8_t)262, &d), "a ring of 256 slots");
}

int main(int argc, char **argv)
{
	rng = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x0f15eedull;
	if (!rng)
		rng = 1;
	printf("test_ofi: seed %#llx\n", (unsigned long long)rng);
	test_caps();
	test_msg_core();
	test_connreq();
	test_connreq_parse();
	test_blob();
	test_fill_ip();
	test_bound_uid();
	test_chunk();
	test_keys();
	test_ring();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ofi unit tests passed\n");
	return 0;
}
