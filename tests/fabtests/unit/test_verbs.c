/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the verbs wire's pure functions (wire/verbs/verbs_pure.h), each checked
 * against an independent reference on random inputs; no RDMA device is needed:
 *
 *  - region index: lookups against a linear scan (overlaps, access flags, removal)
 *  - SGE chunking: gather lists from iov lists under max_sge / byte limits, against a
 *    byte-by-byte reference; uncovered memory reported and then covered
 *  - interleaved pattern detection: strided layouts found with the smallest pattern, the
 *    expansion equal to the input, fallbacks for non-periodic lists and 16-bit overflows
 *  - address blobs, message headers, immediate data, key and handshake payloads: round trips,
 *    network byte order, every malformed input refused
 *  - hmem without CUDA: host memory, no dma-buf
 *
 * Usage: test_verbs [seed]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "hmem/hmem.h"
#include "wire/verbs/verbs_pure.h"
#include "wire/wire.h"

#include "unit_check.h"

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi)     /* [lo, hi] */
{
	return lo + rnd() % (hi - lo + 1);
}

/* ---- reference region lookup: a linear scan ---- */

#define MAXREG 64
struct ref_regions {
	struct ddtx_vregion r[MAXREG];
	int n;
};

static const struct ddtx_vregion *ref_find(const struct ref_regions *rr, uint64_t addr,
					   uint32_t need)
{
	const struct ddtx_vregion *best = NULL;

	for (int i = 0; i < rr->n; i++) {
		const struct ddtx_vregion *r = &rr->r[i];
		if (addr >= r->addr && addr < r->addr + r->len && (r->flags & need) == need &&
		    (!best || r->addr + r->len > best->addr + best->len))
			best = r;
	}
	return best;
}

static void test_region_index(void)
{
	static char owners[MAXREG * 4];

	for (int round = 0; round < 200; round++) {
		struct ddtx_vregion_index idx;
		struct ref_regions rr = { .n = 0 };
		int next_owner = 0;

		ddtx_vregion_index_init(&idx);
		for (int op = 0; op < 150; op++) {
			if (rr.n < MAXREG && (rnd() % 3 || !rr.n)) {
				struct ddtx_vregion r = {
					.addr = rnd_range(0, 100000),
					.len = rnd_range(1, rnd() % 4 ? 2000 : 40000),
					.lkey = (uint32_t)rnd(),
					.flags = rnd() % 3 ? DDTX_VREGION_F_LOCAL_WRITE : 0,
					.owner = &owners[next_owner++ % (MAXREG * 4)],
				};
				bool dup = false;
				for (int i = 0; i < rr.n; i++)
					dup |= rr.r[i].owner == r.owner;
				if (dup)
					continue;
				CHECK(ddtx_vregion_index_insert(&idx, &r) == 0, "insert");
				rr.r[rr.n++] = r;
			} else {
				int k = (int)(rnd() % (uint64_t)rr.n);
				CHECK(ddtx_vregion_index_remove(&idx, rr.r[k].owner) == 0, "remove");
				CHECK(ddtx_vregion_index_remove(&idx, rr.r[k].owner) == -FI_ENOENT,
				      "second remove");
				rr.r[k] = rr.r[--rr.n];
			}
			for (int q = 0; q < 20; q++) {
				uint64_t a = rnd_range(0, 150000);
				uint32_t need = rnd() % 2 ? DDTX_VREGION_F_LOCAL_WRITE : 0;
				const struct ddtx_vregion *x = ddtx_vregion_index_find(&idx, a, need);
				const struct ddtx_vregion *y = ref_find(&rr, a, need);
				CHECK(!x == !y, "addr %llu: found %d expected %d",
				      (unsigned long long)a, !!x, !!y);
				if (x && y)
					CHECK(x->addr + x->len == y->addr + y->len &&
					      a >= x->addr && (x->flags & need) == need,
					      "addr %llu: region ends %llu, expected %llu",
					      (unsigned long long)a,
					      (unsigned long long)(x->addr + x->len),
					      (unsigned long long)(y->addr + y->len));
			}
		}
		ddtx_vregion_index_fini(&idx);
	}
	{
		struct ddtx_vregion_index idx;
		struct ddtx_vregion bad = { .addr = UINT64_MAX - 4, .len = 10, .owner = owners };
		ddtx_vregion_index_init(&idx);
		CHECK(ddtx_vregion_index_insert(&idx, &bad) == -FI_EINVAL, "wrapping region");
		bad.addr = 0;
		bad.len = 0;
		CHECK(ddtx_vregion_index_insert(&idx, &bad) == -FI_EINVAL, "empty region");
		bad.len = 5;
		CHECK(ddtx_vregion_index_insert(&idx, &bad) == 0, "region");
		CHECK(ddtx_vregion_index_insert(&idx, &bad) == -FI_EINVAL, "duplicate owner");
		ddtx_vregion_index_fini(&idx);
	}
}

/* ---- SGE chunking against a byte-by-byte reference ---- */

struct ref_pos {
	size_t idx, off;
};

/* Reference take: walk the stream byte by byte from pos (non-overlapping regions). */
static size_t ref_take(const struct iovec *iov, size_t count, struct ref_pos *pos,
		       const struct ref_regions *rr, uint32_t need, size_t max_sge,
		       size_t max_bytes, struct ddtx_vsge *out, size_t *n, bool *uncovered)
{
	size_t bytes = 0, k = 0;

	*uncovered = false;
	while (bytes < max_bytes) {
		while (pos->idx < count && pos->off >= iov[pos->idx].iov_len) {
			pos->idx++;
			pos->off = 0;
		}
		if (pos->idx >= count)
			break;
		uint64_t a = (uint64_t)(uintptr_t)iov[pos->idx].iov_base + pos->off;
		const struct ddtx_vregion *r = ref_find(rr, a, need);
		if (!r) {
			*uncovered = true;
			break;
		}
		if (k && out[k - 1].lkey == r->lkey && out[k - 1].addr + out[k - 1].length == a) {
			out[k - 1].length++;
		} else {
			if (k == max_sge)
				break;
			out[k++] = (struct ddtx_vsge){ a, 1, r->lkey };
		}
		pos->off++;
		bytes++;
	}
	*n = k;
	return bytes;
}

static void test_sge_take(void)
{
	static uint8_t buf[1 << 16];
	static char owners[MAXREG];

	for (int round = 0; round < 3000; round++) {
		struct iovec iov[64];
		size_t count = rnd_range(1, 64), pos = 0;
		struct ref_regions rr = { .n = 0 };
		struct ddtx_vregion_index idx;
		uint32_t need = rnd() % 2 ? DDTX_VREGION_F_LOCAL_WRITE : 0;
		size_t max_sge = rnd_range(1, 8), max_bytes = rnd_range(1, 5000);
		uint64_t base = (uint64_t)(uintptr_t)buf;

		for (size_t i = 0; i < count; i++) {
			size_t len = rnd() % 8 ? rnd_range(0, 600) : 0;
			if (rnd() % 3)
				pos += rnd_range(0, 64);          /* gap, or contiguous */
			if (pos + len > sizeof(buf)) {
				count = i;
				break;
			}
			iov[i].iov_base = buf + pos;
			iov[i].iov_len = len;
			pos += len;
		}
		/* Non-overlapping regions covering most of the buffer, with holes. */
		ddtx_vregion_index_init(&idx);
		for (uint64_t a = 0; a < sizeof(buf) && rr.n < MAXREG;) {
			uint64_t len = rnd_range(64, 4096);
			if (rnd() % 6) {
				struct ddtx_vregion r = {
					.addr = base + a, .len = len,
					.lkey = (uint32_t)rnd_range(1, 3),  /* lkeys repeat */
					.flags = rnd() % 4 ? DDTX_VREGION_F_LOCAL_WRITE : 0,
					.owner = &owners[rr.n],
				};
				rr.r[rr.n++] = r;
				CHECK(ddtx_vregion_index_insert(&idx, &r) == 0, "insert");
			}
			a += len + (rnd() % 4 ? 0 : rnd_range(1, 200));
		}

		struct ddtx_vsge_cursor c;
		struct ref_pos rp = { 0, 0 };
		ddtx_vsge_cursor_init(&c, iov, count);
		for (int guard = 0; guard < 10000; guard++) {
			struct ddtx_vsge got[8], exp[8];
			size_t n1, n2;
			bool u1, u2;
			size_t b1 = ddtx_vsge_take(&c, &idx, need, max_sge, max_bytes, got, &n1,
						   &u1);
			size_t b2 = ref_take(iov, count, &rp, &rr, need, max_sge, max_bytes, exp,
					     &n2, &u2);
			CHECK(b1 == b2 && n1 == n2 && u1 == u2,
			      "round %d: took %zu bytes in %zu (uncovered %d), expected %zu in %zu "
			      "(%d)", round, b1, n1, u1, b2, n2, u2);
			for (size_t i = 0; i < n1 && i < n2; i++)
				CHECK(!memcmp(&got[i], &exp[i], sizeof(got[i])),
				      "round %d entry %zu: {%#llx %u %u} expected {%#llx %u %u}",
				      round, i, (unsigned long long)got[i].addr, got[i].length,
				      got[i].lkey, (unsigned long long)exp[i].addr, exp[i].length,
				      exp[i].lkey);
			if (failures)
				return;
			if (u1) {
				/* Cover the rest of this entry, as the wire registers it. */
				uint64_t a = ddtx_vsge_cursor_addr(&c);
				size_t len = c.iov[c.idx].iov_len - c.off;
				struct ddtx_vregion r = { .addr = a, .len = len, .lkey = 99,
							  .flags = need, .owner = &owners[rr.n] };
				/* Keep the reference non-overlapping: trim the new region. */
				for (int i = 0; i < rr.n; i++)
					if (rr.r[i].addr > a && rr.r[i].addr < a + r.len)
						r.len = rr.r[i].addr - a;
				if (rr.n == MAXREG)
					break;
				rr.r[rr.n++] = r;
				CHECK(ddtx_vregion_index_insert(&idx, &r) == 0, "cover");
				continue;
			}
			if (!b1 && !u1) {
				CHECK(ddtx_vsge_cursor_done(&c), "stuck without reason");
				break;
			}
		}
		ddtx_vregion_index_fini(&idx);
	}
	{
		/* Overlaps: the region reaching furthest wins, so one entry suffices. */
		static char o[2];
		struct ddtx_vregion_index idx;
		struct ddtx_vregion a = { 1000, 100, 1, 0, &o[0] }, b = { 900, 1000, 2, 0, &o[1] };
		struct iovec v = { (void *)(uintptr_t)1010, 500 };
		struct ddtx_vsge_cursor c;
		struct ddtx_vsge out[4];
		size_t n;
		bool u;

		ddtx_vregion_index_init(&idx);
		ddtx_vregion_index_insert(&idx, &a);
		ddtx_vregion_index_insert(&idx, &b);
		ddtx_vsge_cursor_init(&c, &v, 1);
		CHECK(ddtx_vsge_take(&c, &idx, 0, 4, SIZE_MAX, out, &n, &u) == 500 && n == 1 &&
		      out[0].lkey == 2, "overlap: %zu entries, lkey %u", n, out[0].lkey);
		/* The access filter skips regions without local write. */
		ddtx_vsge_cursor_init(&c, &v, 1);
		CHECK(ddtx_vsge_take(&c, &idx, DDTX_VREGION_F_LOCAL_WRITE, 4, SIZE_MAX, out, &n,
				     &u) == 0 && u, "filter");
		ddtx_vregion_index_fini(&idx);
	}
}

/* ---- interleaved detection ---- */

/* Reference expansion of a pattern: repetition-major. */
static size_t expand(const struct ddtx_vinterleave *il, size_t p, uint32_t repeat,
		     struct ddtx_vsge *out)
{
	size_t k = 0;
	for (uint32_t r = 0; r < repeat; r++)
		for (size_t j = 0; j < p; j++)
			out[k++] = (struct ddtx_vsge){
				il[j].addr + (uint64_t)r * (il[j].bytes_count + il[j].bytes_skip),
				il[j].bytes_count, il[j].lkey };
	return k;
}

/* Does some pattern of q entries (taken from the first two repetitions) reproduce e? */
static bool ref_period(const struct ddtx_vsge *e, size_t n, size_t q)
{
	static struct ddtx_vsge tmp[4096];
	struct ddtx_vinterleave il[64];

	if (n % q || n / q < 2 || q > 64)
		return false;
	for (size_t j = 0; j < q; j++) {
		if (e[q + j].addr < e[j].addr + e[j].length || !e[j].length)
			return false;
		uint64_t stride = e[q + j].addr - e[j].addr;
		if (stride > 0xffff || e[j].length > 0xffff)
			return false;
		il[j] = (struct ddtx_vinterleave){ e[j].addr, e[j].length,
						   (uint32_t)(stride - e[j].length), e[j].lkey };
	}
	expand(il, q, (uint32_t)(n / q), tmp);
	return !memcmp(tmp, e, n * sizeof(*e));
}

static void test_interleave(void)
{
	static struct ddtx_vsge e[4096], back[4096];
	struct ddtx_vinterleave il[16];
	uint32_t repeat;

	for (int round = 0; round < 3000; round++) {
		size_t p = rnd_range(1, 5), n;
		uint32_t R = (uint32_t)rnd_range(2, 60);
		struct ddtx_vinterleave pat[8];
		uint64_t a = rnd_range(0, 1u << 30);
		bool big = rnd() % 10 == 0;

		for (size_t j = 0; j < p; j++) {
			uint32_t len = (uint32_t)rnd_range(1, big ? 70000 : 3000);
			uint32_t stride = (uint32_t)rnd_range(len, big ? 80000 : 20000);
			pat[j] = (struct ddtx_vinterleave){ a, len, stride - len,
							    (uint32_t)rnd_range(1, 2) };
			a += rnd_range(0, 5000);
		}
		n = expand(pat, p, R, e);
		if (rnd() % 4 == 0) {                      /* break it somewhere */
			size_t k = rnd() % n;
			switch (rnd() % 3) {
			case 0: e[k].addr += 1; break;
			case 1: e[k].length += 1; break;
			default: e[k].lkey ^= 7; break;
			}
		}
		if (rnd() % 5 == 0 && n > 2)
			n--;                               /* a partial last repetition */
		size_t max_pattern = rnd_range(1, 8);
		size_t q = ddtx_vinterleave_detect(e, n, max_pattern, il, &repeat);
		/* The smallest period the reference finds within max_pattern. */
		size_t want = 0;
		for (size_t t = 1; t <= max_pattern && t <= n / 2 && !want; t++)
			if (ref_period(e, n, t))
				want = t;
		CHECK(q == want, "round %d: pattern of %zu entries, expected %zu (n %zu)", round,
		      q, want, n);
		if (q) {
			uint64_t per = 0;
			CHECK(repeat * q == n, "repeat %u x %zu != %zu", repeat, q, n);
			for (size_t j = 0; j < q; j++) {
				CHECK(il[j].bytes_count <= 0xffff &&
				      il[j].bytes_count + il[j].bytes_skip <= 0xffff,
				      "16-bit fields: %u + %u", il[j].bytes_count,
				      il[j].bytes_skip);
				per += il[j].bytes_count;
			}
			CHECK(per * repeat < (1ull << 31), "total");
			expand(il, q, repeat, back);
			CHECK(!memcmp(back, e, n * sizeof(*e)), "round %d: expansion differs",
			      round);
		}
		if (failures)
			return;
	}
	/* Explicit fallbacks. */
	struct ddtx_vsge v[4] = { { 0, 100, 1 }, { 70000, 100, 1 }, { 140000, 100, 1 },
				  { 210000, 100, 1 } };
	CHECK(ddtx_vinterleave_detect(v, 4, 4, il, &repeat) == 0, "stride over 16 bits");
	struct ddtx_vsge w[3] = { { 0, 100, 1 }, { 200, 100, 1 }, { 400, 100, 1 } };
	CHECK(ddtx_vinterleave_detect(w, 3, 4, il, &repeat) == 1 && repeat == 3 &&
	      il[0].bytes_skip == 100, "vector of 3");
	CHECK(ddtx_vinterleave_detect(w, 1, 4, il, &repeat) == 0, "one entry is a list");
	struct ddtx_vsge ov[2] = { { 0, 100, 1 }, { 50, 100, 1 } };
	CHECK(ddtx_vinterleave_detect(ov, 2, 4, il, &repeat) == 0, "overlapping blocks");
}

/* ---- address blob, header, immediate data, payloads ---- */

static struct ddtx_vaddr random_addr(void)
{
	struct ddtx_vaddr a = {
		.transport = rnd() % 2 ? DDTX_VTRANSPORT_DC : DDTX_VTRANSPORT_RC,
		.port = (uint8_t)rnd_range(1, 2),
		.mtu = (uint8_t)rnd_range(1, 5),
		.flags = rnd() % 2 ? DDTX_VADDR_F_GRH : 0,
		.lid = (uint16_t)rnd(),
		.sl = (uint8_t)rnd_range(0, 15),
		.qpn = (uint32_t)rnd_range(2, 0xffffff),
		.pid = (uint32_t)rnd(),
		.key = rnd(),
		.uid = rnd() | 1,
	};
	for (int i = 0; i < 16; i++)
		a.gid[i] = (uint8_t)rnd();
	a.gid[15] |= 1;
	if (!a.lid && !(a.flags & DDTX_VADDR_F_GRH))
		a.lid = 1;
	return a;
}

/* Field by field (the structs have padding). */
static bool addr_eq(const struct ddtx_vaddr *a, const struct ddtx_vaddr *b)
{
	return a->transport == b->transport && a->port == b->port && a->mtu == b->mtu &&
	       a->flags == b->flags && a->lid == b->lid && a->sl == b->sl && a->qpn == b->qpn &&
	       a->pid == b->pid && a->key == b->key && a->uid == b->uid &&
	       !memcmp(a->gid, b->gid, sizeof(a->gid));
}

static bool rep_eq(const struct ddtx_vkey_rep *a, const struct ddtx_vkey_rep *b)
{
	return a->space == b->space && a->status == b->status && a->rkey == b->rkey &&
	       a->access == b->access && a->key == b->key && a->iova == b->iova &&
	       a->hca_base == b->hca_base && a->len == b->len;
}

static void test_addr(void)
{
	uint8_t blob[DDTX_VADDR_LEN], m[DDTX_VADDR_LEN], again[DDTX_VADDR_LEN];
	struct ddtx_vaddr a, b;

	for (int round = 0; round < 2000; round++) {
		a = random_addr();
		CHECK(ddtx_vaddr_pack(&a, blob, sizeof(blob)) == 0, "pack");
		CHECK(ddtx_vaddr_unpack(blob, sizeof(blob), &b) == 0 && addr_eq(&a, &b),
		      "round trip");
		/* Network byte order, field by field. */
		CHECK(blob[0] == 'D' && blob[1] == 'X' && blob[2] == 'V' && blob[3] == 'B' &&
		      blob[12] == 0 && blob[13] == (uint8_t)(a.qpn >> 16) &&
		      blob[15] == (uint8_t)a.qpn && blob[32] == (uint8_t)(a.uid >> 56),
		      "byte order");
		CHECK(ddtx_vaddr_unpack(blob, sizeof(blob) - 1, &b) == -FI_EINVAL, "short");
		CHECK(ddtx_vaddr_unpack(blob, sizeof(blob) + 1, &b) == -FI_EINVAL, "long");
		/* Any mutation is refused, or is a valid address that packs to exactly it. */
		memcpy(m, blob, sizeof(m));
		size_t k = rnd() % sizeof(m);
		m[k] ^= (uint8_t)rnd_range(1, 255);
		if (!ddtx_vaddr_unpack(m, sizeof(m), &b)) {
			CHECK(ddtx_vaddr_pack(&b, again, sizeof(again)) == 0 &&
			      !memcmp(again, m, sizeof(m)), "byte %zu accepted but not canonical",
			      k);
			CHECK(k != 0 && k != 4 && !(k >= 20 && k < 24) && k < 56,
			      "magic/version/reserved byte %zu accepted", k);
		}
	}
	a = random_addr();
	CHECK(ddtx_vaddr_pack(&a, blob, 10) == -FI_ETOOSMALL, "small buffer");
	/* Each field out of range is refused, by pack and by unpack. */
	for (int c = 0; c < 10; c++) {
		struct ddtx_vaddr x;
		do {
			x = random_addr();
		} while (!x.lid);
		x.flags = DDTX_VADDR_F_GRH;
		CHECK(ddtx_vaddr_pack(&x, blob, sizeof(blob)) == 0, "valid");
		switch (c) {
		case 0: x.transport = 0; blob[5] = 0; break;
		case 1: x.transport = 3; blob[5] = 3; break;
		case 2: x.port = 0; blob[6] = 0; break;
		case 3: x.mtu = 6; blob[7] = 6; break;
		case 4: x.flags = 2; blob[8] = 2; break;
		case 5: x.sl = 16; blob[9] = 16; break;
		case 6: x.qpn = 1; blob[12] = blob[13] = blob[14] = 0; blob[15] = 1; break;
		case 7: x.uid = 0; memset(blob + 32, 0, 8); break;
		case 8: x.flags = 0; x.lid = 0; blob[8] = 0; blob[10] = blob[11] = 0; break;
		default: memset(x.gid, 0, 16); memset(blob + 40, 0, 16); break;
		}
		CHECK(ddtx_vaddr_pack(&x, again, sizeof(again)) == -FI_EINVAL, "pack case %d", c);
		CHECK(ddtx_vaddr_unpack(blob, sizeof(blob), &b) == -FI_EINVAL, "unpack case %d", c);
	}
	CHECK(ddtx_vaddr_unpack(NULL, DDTX_VADDR_LEN, &b) == -FI_EINVAL, "NULL blob");
}

static void test_hdr_imm(void)
{
	uint8_t buf[DDTX_VHDR_LEN + DDTX_VADDR_LEN] = { 0 };
	struct ddtx_vhdr h, g;

	for (int round = 0; round < 1000; round++) {
		h = (struct ddtx_vhdr){ .type = (uint8_t)rnd_range(1, DDTX_VMSG_MAX),
					.flags = rnd() % 2 ? DDTX_VHDR_F_ADDR : 0,
					.seq = (uint32_t)rnd(), .src_uid = rnd() | 1 };
		ddtx_vhdr_pack(&h, buf);
		CHECK(ddtx_vhdr_unpack(buf, sizeof(buf), &g) == 0 && g.type == h.type &&
		      g.flags == h.flags && g.seq == h.seq && g.src_uid == h.src_uid, "round trip");
		CHECK(buf[8] == (uint8_t)(h.src_uid >> 56) && buf[4] == (uint8_t)(h.seq >> 24),
		      "byte order");
		if (h.flags)
			CHECK(ddtx_vhdr_unpack(buf, DDTX_VHDR_LEN + 10, &g) == -FI_EINVAL,
			      "address announced but missing");
		CHECK(ddtx_vhdr_unpack(buf, DDTX_VHDR_LEN - 1, &g) == -FI_EINVAL, "short");

		uint8_t type = h.type, flags = h.flags, t2, f2;
		uint32_t imm = ddtx_vimm_encode(type, flags);
		uint8_t bytes[4];
		memcpy(bytes, &imm, 4);                  /* as the HCA puts it on the wire */
		CHECK(bytes[0] == DDTX_VIMM_MARKER && bytes[1] == (uint8_t)(1 << 4 | type) &&
		      bytes[2] == flags && bytes[3] == 0, "imm bytes %02x %02x %02x %02x",
		      bytes[0], bytes[1], bytes[2], bytes[3]);
		CHECK(ddtx_vimm_decode(imm, &t2, &f2) == 0 && t2 == type && f2 == flags, "imm");
		bytes[(size_t)rnd() % 2] ^= (uint8_t)(1u << (rnd() % 4)) | 0x80;
		memcpy(&imm, bytes, 4);
		CHECK(ddtx_vimm_decode(imm, &t2, &f2) == -FI_EINVAL, "corrupt imm accepted");
	}
	h = (struct ddtx_vhdr){ .type = 0, .src_uid = 1 };
	ddtx_vhdr_pack(&h, buf);
	CHECK(ddtx_vhdr_unpack(buf, sizeof(buf), &g) == -FI_EINVAL, "type 0");
	h.type = DDTX_VMSG_MAX + 1;
	ddtx_vhdr_pack(&h, buf);
	CHECK(ddtx_vhdr_unpack(buf, sizeof(buf), &g) == -FI_EINVAL, "type too large");
	h = (struct ddtx_vhdr){ .type = 1, .flags = 0x80, .src_uid = 1 };
	ddtx_vhdr_pack(&h, buf);
	CHECK(ddtx_vhdr_unpack(buf, sizeof(buf), &g) == -FI_EINVAL, "unknown flag");
	h = (struct ddtx_vhdr){ .type = 1 };
	ddtx_vhdr_pack(&h, buf);
	CHECK(ddtx_vhdr_unpack(buf, sizeof(buf), &g) == -FI_EINVAL, "zero uid");
	buf[2] = 1;
	CHECK(ddtx_vhdr_unpack(buf, sizeof(buf), &g) == -FI_EINVAL, "reserved");
}

/* Reference translation: bounds and access, byte arithmetic in 128 bits. */
static int ref_translate(const struct ddtx_vkey_rep *k, uint64_t raddr, uint64_t len,
			 uint32_t need, uint64_t *hca)
{
	if (k->status)
		return k->status;
	if ((k->access & need) != need)
		return -FI_EACCES;
	unsigned __int128 lo = k->iova, hi = (unsigned __int128)k->iova + k->len;
	if (raddr < lo || (unsigned __int128)raddr + len > hi)
		return -FI_EACCES;
	*hca = k->hca_base + (raddr - k->iova);
	return 0;
}

static void test_payloads(void)
{
	uint8_t buf[64];

	for (int round = 0; round < 2000; round++) {
		struct ddtx_vkey_req q = { (uint8_t)(rnd() % 2), rnd() }, q2;
		ddtx_vkey_req_pack(&q, buf);
		CHECK(ddtx_vkey_req_unpack(buf, DDTX_VKEY_REQ_LEN, &q2) == 0 && q2.space == q.space &&
		      q2.key == q.key, "req");
		CHECK(ddtx_vkey_req_unpack(buf, DDTX_VKEY_REQ_LEN - 1, &q2) == -FI_EINVAL, "short");
		buf[0] = 2;
		CHECK(ddtx_vkey_req_unpack(buf, DDTX_VKEY_REQ_LEN, &q2) == -FI_EINVAL, "space");

		struct ddtx_vkey_rep r = {
			.space = (uint8_t)(rnd() % 2),
			.status = rnd() % 5 ? 0 : -FI_EKEYREJECTED,
			.rkey = (uint32_t)rnd(),
			.access = (uint32_t)(rnd() & 15),
			.key = rnd(),
			.iova = rnd() % 2 ? 0 : rnd() >> 2,
			.hca_base = rnd() % 2 ? 0 : rnd() >> 2,
			.len = rnd_range(0, 1u << 20),
		}, r2;
		ddtx_vkey_rep_pack(&r, buf);
		CHECK(ddtx_vkey_rep_unpack(buf, DDTX_VKEY_REP_LEN, &r2) == 0 && rep_eq(&r, &r2),
		      "rep round trip");
		for (int t = 0; t < 8; t++) {
			uint64_t raddr = r.iova + rnd_range(0, r.len + 10) - (rnd() % 4 ? 0 : 5);
			uint64_t len = rnd_range(0, r.len + 10);
			uint32_t need = rnd() % 2 ? DDTX_ACC_REMOTE_WRITE : DDTX_ACC_REMOTE_READ;
			uint64_t h1 = 0, h2 = 0;
			int e1 = ddtx_vkey_translate(&r2, raddr, len, need, &h1);
			int e2 = ref_translate(&r, raddr, len, need, &h2);
			CHECK(e1 == e2 && (e1 || h1 == h2), "translate %d/%d", e1, e2);
		}
		buf[1] = 1;
		CHECK(ddtx_vkey_rep_unpack(buf, DDTX_VKEY_REP_LEN, &r2) == -FI_EINVAL, "rep reserved");

		struct ddtx_vconn c = { (uint32_t)rnd_range(2, 0xffffff),
					(uint32_t)rnd_range(0, 0xffffff),
					(uint32_t)rnd_range(1, 1000), (uint32_t)rnd() }, c2;
		ddtx_vconn_pack(&c, buf);
		CHECK(ddtx_vconn_unpack(buf, DDTX_VCONN_LEN, &c2) == 0 &&
		      !memcmp(&c, &c2, sizeof(c)), "conn round trip");
		buf[4] = 1;                              /* PSN over 24 bits */
		CHECK(ddtx_vconn_unpack(buf, DDTX_VCONN_LEN, &c2) == -FI_EINVAL, "psn");
		CHECK(ddtx_vconn_unpack(buf, DDTX_VCONN_LEN - 1, &c2) == -FI_EINVAL, "short");
	}
}

static void test_hmem(void)
{
	struct ddtx_hmem_attr a;
	int fd;
	uint64_t off;
	static char host[4096];

	ddtx_hmem_detect(host, &a);
	CHECK(a.iface == DDTX_HMEM_SYSTEM && a.device == -1, "host memory");
	ddtx_hmem_detect(NULL, &a);
	CHECK(a.iface == DDTX_HMEM_SYSTEM, "NULL");
	if (!ddtx_hmem_cuda_available())
		CHECK(ddtx_hmem_dmabuf_fd(host, sizeof(host), &fd, &off) == -FI_ENOSYS,
		      "no CUDA: no dma-buf");
	else
		CHECK(ddtx_hmem_dmabuf_fd(host, sizeof(host), &fd, &off) == -FI_EINVAL,
		      "host memory has no dma-buf");
	CHECK(ddtx_hmem_dmabuf_fd(NULL, 1, &fd, &off) == -FI_EINVAL, "NULL");
}

int main(int argc, char **argv)
{
	rng = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5eed1234abcdull;
	if (!rng)
		rng = 1;
	printf("test_verbs: seed %#llx\n", (unsigned long long)rng);
	test_region_index();
	test_sge_take();
	test_interleave();
	test_addr();
	test_hdr_imm();
	test_payloads();
	test_hmem();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("verbs unit tests passed\n");
	return 0;
}
