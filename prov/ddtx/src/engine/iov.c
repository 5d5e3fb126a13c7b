/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/iov.h"

#include <stdbool.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include "common/iov_check.h"
#include "common/minmax.h"

size_t ddtx_iov_total(const struct iovec *iov, size_t count)
{
	size_t total = 0;
	for (size_t i = 0; i < count; i++)
		total += iov[i].iov_len;
	return total;
}

int ddtx_iov_scan_vec(const struct iovec *iov, size_t count, size_t limit, size_t *total,
		      struct ddtx_iov_vec *vec)
{
	vec->n = 0;
	if (count < DDTX_IOV_VEC_MIN || count > limit || !iov || !iov[0].iov_len)
		return ddtx_iov_check(iov, count, limit, total);
	uintptr_t a0 = (uintptr_t)iov[0].iov_base;
	size_t len0 = iov[0].iov_len;
	int64_t s = (int64_t)((uintptr_t)iov[1].iov_base - a0);
	/* The vector's last block, from a first block that is not NULL, without wrapping around
	 * (then no block is NULL), and its bytes: otherwise the list is checked the plain way. */
	int64_t span;
	size_t bytes;
	bool fits = a0 && !__builtin_mul_overflow(s, (int64_t)(count - 1), &span) &&
		    !__builtin_mul_overflow(len0, count, &bytes);
	if (fits && span >= 0)
		fits = a0 <= UINTPTR_MAX - (uintptr_t)span;
	else if (fits)
		fits = a0 > (uintptr_t)0 - (uintptr_t)span; /* the last block is not NULL */
	/* Blocks that overlap would make the order of a scatter's stores matter. */
	if (fits)
		fits = s >= (int64_t)len0 || (s < 0 && (uint64_t)-s >= len0);
	/* Every entry against the one the vector predicts: an xor and an or per entry, no
	 * branch.  This loop is the only read of the list, bound by memory when the list is
	 * long: with a prefetch 1 KiB ahead 1.7-1.9 ns per entry of a 64 MiB list on the first
	 * host, against 2.1-2.3 without it and for the plain check (0.55, 0.48 and 0.6 ns in
	 * cache).  While the other core streams too (nc_bw's 8-byte blocks, both ranks scanning
	 * and copying), 8 KiB ahead moved 3.67-3.77 GB/s against 3.02-3.40 at 1 KiB (2 KiB
	 * 3.37-3.43, 4 KiB 3.53-3.59, 16 KiB 3.63-3.64; 2026-11-27).  Past the list's end it
	 * reads ahead too (harmless; nc_bw's next message's list lies there, and stopping at the
	 * end measured 3.2-3.7 against 3.4-4.0).  A list that is no vector leaves at the first
	 * line that says so, and is read once more, by the plain check: MPICH's lists of
	 * SPECFEM3D_oc (3225 pieces of 4 B) and LAMMPS spent 8.5% of their samples on both ranks
	 * in the two full passes. */
	uintptr_t diff = !fits, a = a0;
	for (size_t i = 0; fits && i < count; i++, a += (uintptr_t)s) {
		if (!(i & 3)) { /* one line of four entries */
			if (diff)
				break;
			__builtin_prefetch((const void *)((uintptr_t)&iov[i] + 8192));
		}
		diff |= ((uintptr_t)iov[i].iov_base ^ a) | (iov[i].iov_len ^ len0);
	}
	if (diff)
		return ddtx_iov_check(iov, count, limit, total);
	size_t t = total ? *total : 0;
	if (bytes > SIZE_MAX - t)
		return -FI_EINVAL;
	if (total)
		*total = t + bytes;
	vec->base = (uint8_t *)a0;
	vec->block = len0;
	vec->stride = s;
	vec->n = count;
	return 0;
}

void ddtx_layout_stats(const struct iovec *iov, size_t count, struct ddtx_layout_stats *st)
{
	st->total = 0;
	st->nblocks = 0;
	st->min_block = 0;
	for (size_t i = 0; i < count; i++) {
		size_t len = iov[i].iov_len;
		if (!len)
			continue;
		st->total += len;
		st->nblocks++;
		if (!st->min_block || len < st->min_block)
			st->min_block = len;
	}
	st->avg_block = st->nblocks ? st->total / st->nblocks : 0;
}

void ddtx_iov_cursor_init(struct ddtx_iov_cursor *c, const struct iovec *iov, size_t count)
{
	c->iov = iov;
	c->count = count;
	c->idx = 0;
	c->off = 0;
	c->pos = 0;
	while (c->idx < c->count && !c->iov[c->idx].iov_len)
		c->idx++;
}

void ddtx_iov_cursor_seek(struct ddtx_iov_cursor *c, size_t offset)
{
	ddtx_iov_cursor_init(c, c->iov, c->count);
	while (c->idx < c->count && offset >= c->iov[c->idx].iov_len) {
		offset -= c->iov[c->idx].iov_len;
		c->pos += c->iov[c->idx].iov_len;
		c->idx++;
	}
	c->off = offset;
	c->pos += offset;
	while (c->idx < c->count && c->off == c->iov[c->idx].iov_len) {
		c->idx++;
		c->off = 0;
	}
}

size_t ddtx_iov_cursor_take(struct ddtx_iov_cursor *c, size_t max_bytes, size_t max_entries,
			    struct iovec *out, size_t *nout)
{
	size_t taken = 0, n = 0;
	while (c->idx < c->count && taken < max_bytes && n < max_entries) {
		const struct iovec *e = &c->iov[c->idx];
		size_t avail = e->iov_len - c->off;
		if (!avail) {
			c->idx++;
			c->off = 0;
			continue;
		}
		size_t len = avail < max_bytes - taken ? avail : max_bytes - taken;
		out[n].iov_base = (char *)e->iov_base + c->off;
		out[n].iov_len = len;
		n++;
		taken += len;
		c->off += len;
		if (c->off == e->iov_len) {
			c->idx++;
			c->off = 0;
		}
	}
	while (c->idx < c->count && c->off == c->iov[c->idx].iov_len) {
		c->idx++;
		c->off = 0;
	}
	c->pos += taken;
	*nout = n;
	return taken;
}

size_t ddtx_iov_cursor_entries(const struct ddtx_iov_cursor *c, size_t max_bytes)
{
	size_t n = 0, idx = c->idx, off = c->off, left = max_bytes;
	while (idx < c->count && left) {
		size_t avail = c->iov[idx].iov_len - off;
		if (avail) {
			n++;
			left -= avail < left ? avail : left;
		}
		idx++;
		off = 0;
	}
	return n;
}

/*
 * A copy of at most 64 bytes without a call: two (or four) possibly overlapping loads and stores
 * of a power-of-two size.  An iov list of small blocks spends most of its walk in memcpy's call
 * and size dispatch otherwise (8 B blocks at stride 16: 2.0 GB/s before, 2.8 with this in cache,
 * 1.9 and 3.5 from memory; test_dataloop bench).  src and dst never overlap (one is the list,
 * the other a bounce buffer).
 */
#define COPY_PAIR(T, d, s, n)                                                                  \
	do {                                                                                   \
		T a_, b_;                                                                      \
		memcpy(&a_, (s), sizeof(T));                                                   \
		memcpy(&b_, (s) + (n) - sizeof(T), sizeof(T));                                 \
		memcpy((d), &a_, sizeof(T));                                                   \
		memcpy((d) + (n) - sizeof(T), &b_, sizeof(T));                                 \
	} while (0)

struct u128 {
	uint64_t lo, hi;
};

static inline void copy_small(uint8_t *restrict d, const uint8_t *restrict s, size_t n)
{
	if (n >= 16) {
		if (n <= 32) {
			COPY_PAIR(struct u128, d, s, n);
		} else {
			COPY_PAIR(struct u128, d, s, 32);
			COPY_PAIR(struct u128, d + n - 32, s + n - 32, 32);
		}
	} else if (n >= 8) {
		COPY_PAIR(uint64_t, d, s, n);
	} else if (n >= 4) {
		COPY_PAIR(uint32_t, d, s, n);
	} else if (n >= 2) {
		COPY_PAIR(uint16_t, d, s, n);
	} else if (n) {
		*d = *s;
	}
}

/*
 * Whole entries of exactly B bytes from entry i on, while the buffer has room for them: one
 * fixed-size copy each, no size dispatch.  Lists that MPICH builds for irregular layouts are
 * runs of one small size (SPECFEM3D_oc 4 B, LAMMPS 12 B: 1.2 ns per entry through the general
 * walk below).  Returns the index of the first entry not copied.
 */
#define WALK_RUN(B)                                                                            \
	static size_t walk_run_##B(const struct iovec *iov, size_t i, size_t count,             \
				   uint8_t *buf, size_t *done, size_t len, bool to_iov)        \
	{                                                                                      \
		size_t d = *done, end = i + (len - d) / B;                                     \
		if (end > count)                                                               \
			end = count;                                                           \
		if (to_iov)                                                                    \
			for (; i < end && iov[i].iov_len == B; i++, d += B)                    \
				memcpy(iov[i].iov_base, buf + d, B);                           \
		else                                                                           \
			for (; i < end && iov[i].iov_len == B; i++, d += B)                    \
				memcpy(buf + d, iov[i].iov_base, B);                           \
		*done = d;                                                                     \
		return i;                                                                      \
	}
WALK_RUN(4)
WALK_RUN(8)
WALK_RUN(12)
WALK_RUN(16)
WALK_RUN(24)
WALK_RUN(32)
WALK_RUN(48)
WALK_RUN(64)

/* Walk the list from offset, calling copy on each overlapping piece. */
static size_t iov_walk(const struct iovec *iov, size_t count, size_t offset, uint8_t *buf,
		       size_t len, bool to_iov)
{
	size_t done = 0;
	for (size_t i = 0; i < count && done < len; i++) {
		size_t elen = iov[i].iov_len;
		if (!offset && i + 1 < count && iov[i + 1].iov_len == elen) {
			/* Two entries of one size: a run, maybe (the run stops by itself). */
			size_t j = i;
			switch (elen) {
			case 4: j = walk_run_4(iov, i, count, buf, &done, len, to_iov); break;
			case 8: j = walk_run_8(iov, i, count, buf, &done, len, to_iov); break;
			case 12: j = walk_run_12(iov, i, count, buf, &done, len, to_iov); break;
			case 16: j = walk_run_16(iov, i, count, buf, &done, len, to_iov); break;
			case 24: j = walk_run_24(iov, i, count, buf, &done, len, to_iov); break;
			case 32: j = walk_run_32(iov, i, count, buf, &done, len, to_iov); break;
			case 48: j = walk_run_48(iov, i, count, buf, &done, len, to_iov); break;
			case 64: j = walk_run_64(iov, i, count, buf, &done, len, to_iov); break;
			default: break;
			}
			if (j != i) {
				i = j - 1; /* the loop's i++ */
				continue;
			}
		}
		if (offset >= elen) {
			offset -= elen;
			continue;
		}
		size_t n = elen - offset;
		if (n > len - done)
			n = len - done;
		uint8_t *p = (uint8_t *)iov[i].iov_base + offset;
		if (n <= 64)
			to_iov ? copy_small(p, buf + done, n) : copy_small(buf + done, p, n);
		else if (to_iov)
			memcpy(p, buf + done, n);
		else
			memcpy(buf + done, p, n);
		done += n;
		offset = 0;
	}
	return done;
}

/*
 * One buffer (most messages), without the walk: its set-up for the runs (registers saved and
 * restored) was most of the 71 instructions an 8 B eager receive spent scattering (callgrind,
 * util/bench-instructions.sh).
 */
static inline size_t one_piece(const struct iovec *iov, size_t offset, uint8_t *buf, size_t len,
			       bool to_iov)
{
	if (offset >= iov->iov_len)
		return 0;
	size_t n = DDTX_MIN(iov->iov_len - offset, len);
	uint8_t *p = (uint8_t *)iov->iov_base + offset;
	if (n > 64)
		memcpy(to_iov ? p : buf, to_iov ? buf : p, n);
	else if (to_iov)
		copy_small(p, buf, n);
	else
		copy_small(buf, p, n);
	return n;
}

size_t ddtx_iov_scatter(const struct iovec *iov, size_t count, size_t offset, const void *src,
			size_t len)
{
	if (count == 1)
		return one_piece(iov, offset, (uint8_t *)src, len, true);
	return iov_walk(iov, count, offset, (uint8_t *)src, len, true);
}

size_t ddtx_iov_gather(const struct iovec *iov, size_t count, size_t offset, void *dst, size_t len)
{
	if (count == 1)
		return one_piece(iov, offset, dst, len, false);
	return iov_walk(iov, count, offset, dst, len, false);
}
