/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Compiled layouts (engine/dataloop.c) and their leaf kernels (engine/pack_kernels.c), against
 * the plain iov walk (engine/iov.c) as the reference, byte for byte:
 *   shapes     what the compiler makes of vectors, nested vectors, indexed-block runs and
 *              irregular lists (node kinds and block counts);
 *   property   random layouts (blocks of 1 to 4096 B, strides, up to four nesting levels,
 *              irregular blocks mixed in, misaligned bases, lists going down in memory) and
 *              random segments (start byte, length, past the end): gather gives the bytes the
 *              iov walk gives; scatter changes exactly the bytes the iov walk changes;
 *   vector     the eager path's one-pass scan of a list (ddtx_iov_scan) refuses and sums what
 *              the plain check does, and takes a list for a vector only when it is one; the
 *              vector kernels (ddtx_vec_gather/scatter) give the iov walk's bytes for random
 *              vectors (any block size, strides up and down, misaligned) and segments;
 *   half       rows of 2-16 and 64 B blocks at twice their size apart (AVX-512's kernels),
 *              ending before an unreadable page, with every wide kernel the CPU can run
 *              and with the baseline ones;
 *              64 B blocks every other line in layouts spanning more than 8 MiB (both
 *              kernel sets);
 *   built      the forms built from a description (handles) agree with the compiled lists;
 *   cache      the layout cache compiles once and keeps the form with the layout; a vector
 *              list is found by its shape (ddtx_layout_get_vec) as by its entries;
 *   gpu_runs   the runs the device pack kernels read (engine/gpu_runs.c), through the kernels'
 *              own index arithmetic run on the host (ddtx_gpu_runs_apply): random layouts and
 *              segments against the compiled gather/scatter, byte for byte; runs in payload
 *              order, capped, widest word; a vector's and an indexed list's runs counted;
 *   bench      (benchmark, asserts nothing) GB/s of the compiled gather and scatter (with the
 *              kernels chosen for this CPU, every wide one it can run, and the baseline
 *              ones), memcpy of the same bytes and the
 *              iov walk, for blocks of 2 B to 256 B at twice their size (and 8 B at 64) in
 *              cache and from memory, and 64 B blocks a page apart.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/clock.h"
#include "common/iov_check.h"
#include "common/minmax.h"
#include "engine/dataloop.h"
#include "engine/gpu_runs.h"
#include "engine/iov.h"
#include "engine/layout.h"
#include "engine/mkey_pool.h"
#include "engine/pack.h"
#include "engine/regcache.h"

#include "unit_check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t pick(size_t lo, size_t hi) /* [lo, hi] */
{
	return lo + rnd() % (hi - lo + 1);
}

/* ---- shapes ---- */

static void strided(struct iovec *iov, uint8_t *base, size_t count, size_t blen, size_t stride)
{
	for (size_t i = 0; i < count; i++) {
		iov[i].iov_base = base + i * stride;
		iov[i].iov_len = blen;
	}
}

static void test_shapes(void)
{
	static uint8_t buf[1 << 20];
	static struct iovec iov[4096];

	/* A vector: one node. */
	strided(iov, buf + 3, 1000, 8, 24);
	struct ddtx_dataloop *dl = ddtx_dl_compile(iov, 1000, 0);
	CHECK(dl && dl->nnodes == 1 && dl->nodes[0].kind == DDTX_DL_VECTOR &&
	      dl->nodes[0].depth == 1 && dl->nodes[0].count[0] == 1000 &&
	      dl->nodes[0].stride[0] == 24 && dl->total == 8000, "vector");
	ddtx_dl_put(dl);

	/* Touching blocks merge: 64 B at stride 64 is one block (nothing to loop over). */
	strided(iov, buf, 100, 64, 64);
	dl = ddtx_dl_compile(iov, 100, 0);
	CHECK(!dl, "one contiguous block compiles to nothing (memcpy serves it)");
	ddtx_dl_put(dl);

	/* A 3-D subarray's rows: 10 planes x 20 rows of 48 B, row stride 256, plane 8192. */
	size_t n = 0;
	for (size_t z = 0; z < 10; z++)
		for (size_t y = 0; y < 20; y++, n++) {
			iov[n].iov_base = buf + 100 + z * 8192 + y * 256;
			iov[n].iov_len = 48;
		}
	dl = ddtx_dl_compile(iov, n, 0);
	CHECK(dl && dl->nnodes == 1 && dl->nodes[0].depth == 2 && dl->nodes[0].count[0] == 20 &&
	      dl->nodes[0].count[1] == 10 && dl->nodes[0].stride[1] == 8192, "nested vector");
	ddtx_dl_put(dl);

	/* Four levels. */
	n = 0;
	for (size_t a = 0; a < 3; a++)
		for (size_t b = 0; b < 3; b++)
			for (size_t c = 0; c < 4; c++)
				for (size_t d = 0; d < 5; d++, n++) {
					iov[n].iov_base = buf + a * 100000 + b * 20000 + c * 1000 +
							  d * 16;
					iov[n].iov_len = 4;
				}
	dl = ddtx_dl_compile(iov, n, 0);
	CHECK(dl && dl->nnodes == 1 && dl->nodes[0].depth == 4 && dl->nodes[0].n == n,
	      "four levels: %zu nodes", dl ? dl->nnodes : 0);
	ddtx_dl_put(dl);

	/* Equal lengths at irregular offsets: indexed-block. */
	size_t off = 0;
	for (n = 0; n < 500; n++) {
		off += 16 + (n * n * 7) % 61;
		iov[n].iov_base = buf + off;
		iov[n].iov_len = 12;
	}
	dl = ddtx_dl_compile(iov, n, 0);
	CHECK(dl && ddtx_dl_blocks_of(dl, DDTX_DL_INDEXED_BLOCK) >= 400, "indexed-block: %zu",
	      dl ? ddtx_dl_blocks_of(dl, DDTX_DL_INDEXED_BLOCK) : 0);
	ddtx_dl_put(dl);

	/* Nothing regular: every length different. */
	off = 0;
	for (n = 0; n < 200; n++) {
		iov[n].iov_base = buf + off;
		iov[n].iov_len = 1 + n;
		off += 2 * (1 + n) + 3;
	}
	dl = ddtx_dl_compile(iov, n, 0);
	CHECK(!dl, "irregular list compiles to nothing");
	ddtx_dl_put(dl);

	/* Descending addresses: a negative stride. */
	for (n = 0; n < 64; n++) {
		iov[n].iov_base = buf + 100000 - n * 40;
		iov[n].iov_len = 16;
	}
	dl = ddtx_dl_compile(iov, n, 0);
	CHECK(dl && dl->nnodes == 1 && dl->nodes[0].stride[0] == -40, "negative stride");
	ddtx_dl_put(dl);
}

/* ---- property: compiled kernels against the iov walk ---- */

#define ARENA (8u << 20)

/* Append a random regular piece (a vector of up to 4 levels) at *pos; returns entries added. */
static size_t add_vector(uint8_t *arena, size_t *pos, struct iovec *iov, size_t room)
{
	static const size_t fixed[] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
	size_t block = rnd() % 2 ? fixed[rnd() % 10] : pick(1, rnd() % 4 ? 300 : 4096);
	unsigned depth = (unsigned)pick(1, 4);
	size_t counts[4] = {1, 1, 1, 1}, strides[4] = {0};
	size_t extent = block, n = 1;
	for (unsigned l = 0; l < depth; l++) {
		counts[l] = pick(1, l ? 4 : 40);
		strides[l] = extent + pick(0, 3) * pick(1, 70); /* sometimes touching */
		extent = strides[l] * counts[l];
		n *= counts[l];
	}
	if (n > room || *pos + extent + 64 > ARENA)
		return 0;
	size_t idx[4] = {0};
	for (size_t i = 0; i < n; i++) {
		size_t off = 0;
		for (unsigned l = 0; l < depth; l++)
			off += idx[l] * strides[l];
		iov[i].iov_base = arena + *pos + off;
		iov[i].iov_len = block;
		for (unsigned l = 0; l < depth && ++idx[l] == counts[l]; l++)
			idx[l] = 0;
	}
	*pos += extent + pick(0, 100);
	return n;
}

/* A random layout over arena: regular pieces, irregular blocks, empty entries; sometimes
 * reversed (addresses going down). */
static size_t random_layout(uint8_t *arena, struct iovec *iov, size_t max)
{
	size_t n = 0, pos = pick(0, 63); /* misaligned base */
	size_t pieces = pick(1, 6);
	for (size_t p = 0; p < pieces && n < max; p++) {
		if (rnd() % 4) {
			n += add_vector(arena, &pos, iov + n, max - n);
		} else {
			size_t k = pick(1, 8);
			for (size_t i = 0; i < k && n < max; i++) {
				size_t len = rnd() % 8 ? pick(1, 4096) : 0;
				if (pos + len + 16 > ARENA)
					break;
				iov[n].iov_base = arena + pos;
				iov[n++].iov_len = len;
				pos += len + pick(0, 16);
			}
		}
	}
	if (rnd() % 5 == 0)
		for (size_t i = 0; i < n / 2; i++) {
			struct iovec t = iov[i];
			iov[i] = iov[n - 1 - i];
			iov[n - 1 - i] = t;
		}
	return n;
}

/* An arena of random bytes and *canary, a copy of them to compare and restore against. */
static uint8_t *arena_new(uint8_t **canary)
{
	uint8_t *arena = malloc(ARENA);
	*canary = malloc(ARENA);
	for (size_t i = 0; i < ARENA; i++)
		(*canary)[i] = (uint8_t)rnd();
	memcpy(arena, *canary, ARENA);
	return arena;
}

/* What is compared with the iov walk: a compiled layout at its origin, or a one-vector list. */
struct copier {
	const struct ddtx_dataloop *dl;
	uint8_t *origin;
	const struct ddtx_iov_vec *vec;
};

static size_t copier_gather(const struct copier *c, size_t off, void *dst, size_t len)
{
	return c->vec ? ddtx_vec_gather(c->vec, off, dst, len)
		      : ddtx_dl_gather(c->dl, c->origin, off, dst, len);
}

static size_t copier_scatter(const struct copier *c, size_t off, const void *src, size_t len)
{
	return c->vec ? ddtx_vec_scatter(c->vec, off, src, len)
		      : ddtx_dl_scatter(c->dl, c->origin, off, src, len);
}

/*
 * Segments of the list in the arena (whole, one byte, then from random offsets, some past the
 * end): the copier's gather gives the bytes the iov walk gives and writes nothing past them;
 * its scatter changes exactly the bytes the iov walk changes.  Returns the segments compared.
 */
static size_t compare_segments(const struct iovec *iov, size_t count, size_t total,
			       const struct copier *c, uint8_t *arena, const uint8_t *canary,
			       uint8_t *a, uint8_t *b, int nseg)
{
	/* The arena's bytes the layout can touch: compared after every scatter. */
	uint8_t *lo = arena + ARENA, *hi = arena;
	for (size_t i = 0; i < count; i++) {
		uint8_t *p = iov[i].iov_base;
		if (!iov[i].iov_len)
			continue;
		lo = p < lo ? p : lo;
		hi = p + iov[i].iov_len > hi ? p + iov[i].iov_len : hi;
	}
	lo = lo - arena >= 64 ? lo - 64 : arena;
	hi = arena + ARENA - hi >= 64 ? hi + 64 : arena + ARENA;
	size_t span = (size_t)(hi - lo), done = 0;
	uint8_t *ref = malloc(span);
	memcpy(lo, canary + (lo - arena), span);
	for (int s = 0; s < nseg && !failures; s++, done++) {
		size_t off = s == 0 ? 0 : s == 1 ? pick(0, total - 1) : pick(0, total);
		size_t len = s == 0 ? total : s == 1 ? 1 : pick(0, total - off + 100);
		size_t want = ddtx_iov_gather(iov, count, off, a, len);
		memset(b, 0xa5, want + 16);
		size_t got = copier_gather(c, off, b, len);
		CHECK(got == want, "gather [%zu, +%zu) of %zu: %zu bytes, want %zu", off, len,
		      total, got, want);
		CHECK(!memcmp(a, b, want), "gathered bytes differ at [%zu, +%zu)", off, len);
		CHECK(b[want] == 0xa5, "gather wrote past its segment");
		/* Scatter fresh bytes both ways: the touched span must agree. */
		for (size_t i = 0; i < want; i++)
			a[i] = (uint8_t)rnd();
		ddtx_iov_scatter(iov, count, off, a, want);
		memcpy(ref, lo, span);
		memcpy(lo, canary + (lo - arena), span);
		size_t put = copier_scatter(c, off, a, len);
		CHECK(put == want, "scatter %zu != %zu", put, want);
		CHECK(!memcmp(lo, ref, span), "scatter of [%zu, +%zu) differs", off, want);
		memcpy(lo, canary + (lo - arena), span);
	}
	free(ref);
	return done;
}

static void test_property(void)
{
	uint8_t *canary, *arena = arena_new(&canary);
	uint8_t *a = malloc(1 << 24), *b = malloc(1 << 24);
	static struct iovec iov[20000];
	size_t compiled = 0, segments = 0;
	for (int iter = 0; iter < 1500 && !failures; iter++) {
		size_t count = random_layout(arena, iov, 20000);
		size_t total = ddtx_iov_total(iov, count);
		struct ddtx_dataloop *dl = ddtx_dl_compile(iov, count, 0);
		if (!dl)
			continue;
		compiled++;
		CHECK(dl->total == total, "total %zu != %zu", dl->total, total);
		const struct iovec *first = iov;
		while (!first->iov_len)
			first++;
		struct copier c = {.dl = dl, .origin = first->iov_base};
		segments += compare_segments(iov, count, total, &c, arena, canary, a, b, 10);
		ddtx_dl_put(dl);
	}
	printf("property: %zu compiled layouts, %zu segments compared\n", compiled, segments);
	CHECK(compiled > 500, "too few layouts compiled (%zu): the generator lost its regularity",
	      compiled);
	free(arena);
	free(canary);
	free(a);
	free(b);
}

/*
 * Transposes (pack_kernels.c's tiles): `rows` rows of n blocks, a row's blocks s0 apart and the
 * rows r apart (r < |s0|), some repeated at a third stride; compiled, their segments must move
 * the bytes the iov walk moves, from any offset (tiles start only at a row's first block).
 */
static void test_transpose(void)
{
	static const size_t blocks[] = {1, 2, 4, 8, 12, 16, 24, 32, 5};
	uint8_t *canary, *arena = arena_new(&canary);
	uint8_t *a = malloc(1 << 24), *b = malloc(1 << 24);
	static struct iovec iov[40000];
	size_t tiled = 0, segments = 0;
	for (int iter = 0; iter < 400 && !failures; iter++) {
		size_t block = blocks[rnd() % (sizeof(blocks) / sizeof(blocks[0]))];
		size_t r = block + (rnd() % 2 ? 0 : pick(0, 8));
		size_t rows = pick(1, 70), n = pick(1, 200), reps = rnd() % 3 ? 1 : pick(2, 3);
		size_t s0 = rows * r + pick(0, 300);
		size_t span = (n - 1) * s0 + rows * r, s2 = span + pick(0, 100);
		if (n * rows * reps > 40000 || reps * s2 + 128 > ARENA)
			continue;
		bool down = rnd() % 4 == 0; /* the blocks of a row going down in memory */
		uint8_t *base = arena + pick(0, 63) + (down ? (n - 1) * s0 : 0);
		size_t c = 0;
		for (size_t q = 0; q < reps; q++)
			for (size_t k = 0; k < rows; k++)
				for (size_t i = 0; i < n; i++) {
					int64_t at = (int64_t)(q * s2 + k * r) +
						     (down ? -1 : 1) * (int64_t)(i * s0);
					iov[c++] = (struct iovec){base + at, block};
				}
		size_t total = ddtx_iov_total(iov, c);
		struct ddtx_dataloop *dl = ddtx_dl_compile(iov, c, 0);
		if (!dl)
			continue;
		if (dl->nnodes == 1 && dl->nodes[0].depth > 1 && rows > 1 && n > 1 &&
		    dl->nodes[0].stride[1] == (int64_t)r && 2 * r <= 64 && s0 >= 64)
			tiled++;
		struct copier cp = {.dl = dl, .origin = iov[0].iov_base};
		segments += compare_segments(iov, c, total, &cp, arena, canary, a, b, 12);
		ddtx_dl_put(dl);
	}
	printf("transpose: %zu layouts taken in tiles, %zu segments compared\n", tiled, segments);
	CHECK(tiled > 50, "too few transposes compiled as tiled vectors (%zu)", tiled);
	free(arena);
	free(canary);
	free(a);
	free(b);
}

/* ---- one-vector lists of the eager path (ddtx_iov_scan, ddtx_vec_gather/scatter) ---- */

/* A vector of n blocks at arena + first, stride apart (negative: going down in memory). */
static void vec_list(struct iovec *iov, uint8_t *arena, size_t first, size_t n, size_t block,
		     int64_t stride)
{
	for (size_t i = 0; i < n; i++) {
		iov[i].iov_base = arena + first + (int64_t)i * stride;
		iov[i].iov_len = block;
	}
}

/* The scan must refuse what the plain check refuses and sum what it sums; a vector it reports
 * must be the list, entry for entry. */
static void scan_like_check(const struct iovec *iov, size_t count, size_t limit, size_t *vecs)
{
	size_t t1 = 5, t2 = 5;
	struct ddtx_iov_vec v;
	int r1 = ddtx_iov_check(iov, count, limit, &t1);
	int r2 = ddtx_iov_scan(iov, count, limit, &t2, &v);
	CHECK(r1 == r2, "scan %d, check %d (count %zu)", r2, r1, count);
	CHECK(r1 || t1 == t2, "scan total %zu, check %zu", t2, t1);
	if (r2 || !v.n)
		return;
	(*vecs)++;
	CHECK(v.n == count, "vector of %zu blocks for %zu entries", v.n, count);
	for (size_t i = 0; i < count && !failures; i++)
		CHECK(iov[i].iov_base == v.base + (int64_t)i * v.stride &&
			      iov[i].iov_len == v.block,
		      "entry %zu off the vector", i);
	CHECK(v.stride >= (int64_t)v.block || -v.stride >= (int64_t)v.block,
	      "overlapping blocks taken as a vector (block %zu, stride %lld)", v.block,
	      (long long)v.stride);
}

static void test_vector(void)
{
	uint8_t *canary, *arena = arena_new(&canary);
	uint8_t *a = malloc(1 << 22), *b = malloc(1 << 22);
	static struct iovec iov[8192];
	size_t vecs = 0, segments = 0;

	/* Lists the scan must not take for vectors, and refusals it must share with the check
	 * (addresses are never touched here: made-up ones are fine). */
	struct iovec f[16];
	vec_list(f, arena, 64, 16, 8, 16);
	scan_like_check(f, 16, 1024, &vecs);
	CHECK(vecs == 1, "a plain vector not recognised");
	scan_like_check(f, 16, 15, &vecs);                    /* over the limit */
	f[9].iov_len = 0;                                     /* an empty entry */
	scan_like_check(f, 16, 1024, &vecs);
	f[9].iov_len = 8;
	f[15].iov_base = (uint8_t *)f[15].iov_base + 1;       /* the last one off by a byte */
	scan_like_check(f, 16, 1024, &vecs);
	vec_list(f, arena, 64, 16, 8, 4);                      /* overlapping blocks */
	scan_like_check(f, 16, 1024, &vecs);
	vec_list(f, arena, 64, 16, 8, 0);                      /* the same block 16 times */
	scan_like_check(f, 16, 1024, &vecs);
	for (size_t i = 0; i < 16; i++)                        /* going down onto NULL */
		f[i] = (struct iovec){(void *)(uintptr_t)(16 * (15 - i)), 8};
	scan_like_check(f, 16, 1024, &vecs);
	for (size_t i = 0; i < 16; i++)                        /* a total past SIZE_MAX */
		f[i] = (struct iovec){(void *)(uintptr_t)(4096 + i * (SIZE_MAX / 8)), SIZE_MAX / 8};
	scan_like_check(f, 16, 1024, &vecs);
	for (size_t i = 0; i < 16; i++)                        /* wrapping around the top */
		f[i] = (struct iovec){(void *)(UINTPTR_MAX - 64 + 16 * i), 8};
	scan_like_check(f, 16, 1024, &vecs);
	CHECK(vecs == 1, "%zu lists above taken as vectors, want 1", vecs);
	scan_like_check(NULL, 0, 1024, &vecs);
	scan_like_check(NULL, 12, 1024, &vecs);

	/* Random vectors (any block size, strides up and down, misaligned), some broken by one
	 * entry, and the random layouts of the property test: the scan agrees with the check;
	 * the vector kernels give the iov walk's bytes for random segments. */
	for (int iter = 0; iter < 3000 && !failures; iter++) {
		size_t count, block = rnd() % 2 ? (size_t[]){1, 2, 4, 8, 12, 16, 24, 32, 48, 64}[rnd() % 10]
					      : pick(1, 300);
		if (iter % 4 == 3) {
			count = random_layout(arena, iov, 8192);
		} else {
			count = pick(1, rnd() % 4 ? 1100 : 8192);
			size_t gap = rnd() % 3 ? pick(0, 64) : pick(0, 3 * block);
			int64_t stride = (int64_t)(block + gap) * (rnd() % 4 ? 1 : -1);
			size_t extent = (count - 1) * (block + gap) + block + 64;
			if (extent > ARENA)
				continue;
			size_t first = stride > 0 ? pick(0, ARENA - extent) : pick(extent - block - 64, ARENA - block - 64);
			vec_list(iov, arena, first, count, block, stride);
			if (iter % 8 == 1) { /* one entry off */
				size_t k = pick(0, count - 1);
				if (rnd() % 2)
					iov[k].iov_len = pick(0, block);
				else
					iov[k].iov_base = (uint8_t *)iov[k].iov_base - pick(0, 1);
			}
		}
		size_t before = vecs;
		scan_like_check(iov, count, 8192, &vecs);
		size_t total = 0;
		struct ddtx_iov_vec v;
		if (vecs == before || ddtx_iov_scan(iov, count, 8192, &total, &v) || !v.n)
			continue;
		struct copier c = {.vec = &v};
		segments += compare_segments(iov, count, total, &c, arena, canary, a, b, 6);
	}
	printf("vector: %zu lists taken as vectors, %zu segments compared\n", vecs, segments);
	CHECK(vecs > 1000, "too few vectors recognised (%zu)", vecs);
	free(arena);
	free(canary);
	free(a);
	free(b);
}

/* ---- runs of the device pack kernels ---- */

static void check_runs_shape(const struct ddtx_gpu_runs *r, size_t total, size_t max)
{
	uint64_t p = 0;
	for (size_t i = 0; i < r->nruns; i++) {
		const struct ddtx_gpu_run *u = &r->runs[i];
		CHECK(u->payload == p, "run %zu starts at payload %llu, want %llu", i,
		      (unsigned long long)u->payload, (unsigned long long)p);
		CHECK(u->n >= 1 && u->n <= max, "run %zu has %llu blocks (max %zu)", i,
		      (unsigned long long)u->n, max);
		CHECK(u->block % r->width == 0 && (uint64_t)u->off % r->width == 0 &&
		      (uint64_t)u->stride % r->width == 0, "run %zu not a multiple of width %u", i,
		      r->width);
		p += u->n * u->block;
	}
	CHECK(p == total && r->total == total, "runs cover %llu bytes, total %zu",
	      (unsigned long long)p, total);
}

static void test_gpu_runs(void)
{
	uint8_t *arena = aligned_alloc(64, ARENA), *canary = malloc(ARENA);
	uint8_t *a = aligned_alloc(64, 1 << 24), *b = aligned_alloc(64, 1 << 24);
	static struct iovec iov[20000];
	size_t compiled = 0, segments = 0, wide = 0;
	struct ddtx_gpu_runs r;

	/* Shapes: a vector of 1000 8-byte blocks at 24 is ceil(1000 / max) runs of stride 24;
	 * an indexed list at a constant stride is one run; irregular lengths one run each. */
	static uint8_t buf[1 << 16] __attribute__((aligned(64)));
	strided(iov, buf, 1000, 8, 24);
	struct ddtx_dataloop *dl = ddtx_dl_compile(iov, 1000, 0);
	CHECK(dl && !ddtx_gpu_runs_build(dl, 300, &r), "vector runs");
	if (dl) {
		CHECK(r.nruns == 4 && r.runs[0].n == 300 && r.runs[3].n == 100 &&
		      r.runs[0].stride == 24 && r.runs[1].off == 300 * 24 && r.width == 8,
		      "vector: %zu runs, width %u", r.nruns, r.width);
		ddtx_gpu_runs_free(&r);
		CHECK(!ddtx_gpu_runs_build(dl, 0, &r) && r.nruns == 1 && r.runs[0].n == 1000,
		      "vector under the default cap: %zu runs", r.nruns);
		ddtx_gpu_runs_free(&r);
		ddtx_dl_put(dl);
	}
	size_t two_d[2] = {16, 8};
	int64_t two_s[2] = {64, 4096};
	dl = ddtx_dl_vector(32, 2, two_d, two_s);
	CHECK(dl && !ddtx_gpu_runs_build(dl, 0, &r), "2-d vector runs");
	if (dl) {
		/* rows of 16 blocks 4096 apart do not continue one another: 8 runs of 16 */
		CHECK(r.nruns == 8 && r.runs[1].off == 4096 && r.runs[7].n == 16 && r.width == 16,
		      "2-d vector: %zu runs, width %u", r.nruns, r.width);
		ddtx_gpu_runs_free(&r);
		ddtx_dl_put(dl);
	}

	/* Bytes per run are capped: 512 blocks of 4 KiB are 128 runs of 4 blocks (one run was one
	 * SM's work on an H200); a 40000-byte block is cut in 16 KiB pieces, a run each. */
	static struct iovec big[512];
	uint8_t *at = (uint8_t *)(uintptr_t)0x100000; /* addresses only, never touched */
	strided(big, at, 512, 4096, 8192);
	CHECK(!ddtx_gpu_runs_from_iov(big, 512, (uintptr_t)at, 0, &r) && r.nruns == 128 &&
	      r.runs[0].n == 4 &&
	      r.runs[1].off == 4 * 8192 && r.runs[127].payload == 127 * 16384,
	      "capped vector: %zu runs", r.nruns);
	check_runs_shape(&r, 512 * 4096, 4);
	ddtx_gpu_runs_free(&r);
	strided(big, at, 3, 40000, 50000);
	CHECK(!ddtx_gpu_runs_from_iov(big, 3, (uintptr_t)at, 0, &r) && r.nruns == 9 &&
	      r.runs[1].off == 16384 && r.runs[2].block == 40000 - 32768 &&
	      r.runs[3].off == 50000 && r.runs[8].payload == 80000 + 32768,
	      "cut blocks: %zu runs", r.nruns);
	check_runs_shape(&r, 3 * 40000, 1);
	ddtx_gpu_runs_free(&r);

	for (size_t i = 0; i < ARENA; i++)
		canary[i] = (uint8_t)rnd();
	memcpy(arena, canary, ARENA);
	for (int iter = 0; iter < 800 && !failures; iter++) {
		size_t count = random_layout(arena, iov, 20000);
		size_t total = ddtx_iov_total(iov, count);
		dl = ddtx_dl_compile(iov, count, 0);
		if (!dl)
			continue;
		size_t max = rnd() % 2 ? pick(1, 64) : 0;
		if (ddtx_gpu_runs_build(dl, max, &r)) {
			CHECK(0, "runs_build failed");
			ddtx_dl_put(dl);
			break;
		}
		compiled++;
		wide += r.width > 1;
		check_runs_shape(&r, total, max ? max : DDTX_GPU_RUN_MAX_BLOCKS);
		const struct iovec *first = iov;
		while (!first->iov_len)
			first++;
		uint8_t *origin = first->iov_base;
		for (int s = 0; s < 8 && !failures; s++, segments++) {
			size_t off = s == 0 ? 0 : pick(0, total);
			size_t len = s == 0 ? total : pick(0, total - off + 100);
			if (s == 2) /* aligned to 16: the wide words */
				off &= ~(size_t)15, len = (len + 15) & ~(size_t)15;
			size_t want = ddtx_dl_gather(dl, origin, off, a, len);
			memset(b, 0xa5, want + 16);
			size_t got = ddtx_gpu_runs_apply(&r, origin, off, b, len, true);
			CHECK(got == want, "runs gather [%zu, +%zu) of %zu: %zu, want %zu", off, len,
			      total, got, want);
			CHECK(!memcmp(a, b, want), "runs gathered bytes differ at [%zu, +%zu)", off,
			      len);
			CHECK(b[want] == 0xa5, "runs gather wrote past its segment");
			/* Unpack fresh bytes with the runs; the compiled gather must read them back,
			 * then put the canary back through the compiled scatter. */
			for (size_t i = 0; i < want; i++)
				a[i] = (uint8_t)rnd();
			ddtx_dl_gather(dl, origin, off, b, want);
			CHECK(ddtx_gpu_runs_apply(&r, origin, off, a, want, false) == want,
			      "runs scatter length");
			ddtx_dl_gather(dl, origin, off, b + want, want);
			CHECK(!memcmp(a, b + want, want), "runs scatter of [%zu, +%zu) differs", off,
			      want);
			ddtx_dl_scatter(dl, origin, off, b, want);
		}
		ddtx_gpu_runs_free(&r);
		ddtx_dl_put(dl);
	}
	CHECK(!memcmp(arena, canary, ARENA), "runs scatter touched bytes outside the layout");
	printf("gpu_runs: %zu layouts (%zu with words wider than a byte), %zu segments\n",
	       compiled, wide, segments);
	CHECK(compiled > 300 && wide > 0, "too few layouts (%zu, %zu wide)", compiled, wide);
	free(arena);
	free(canary);
	free(a);
	free(b);
}

/* ---- forms built from descriptions ---- */

static void test_built(void)
{
	static uint8_t buf[1 << 20], x[1 << 18], y[1 << 18];
	static struct iovec iov[8192];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (int iter = 0; iter < 300 && !failures; iter++) {
		unsigned depth = (unsigned)pick(1, 4);
		size_t block = pick(1, 100), counts[4], n = 1, extent = block;
		int64_t strides[4];
		for (unsigned l = 0; l < depth; l++) {
			counts[l] = pick(1, l ? 5 : 30);
			strides[l] = (int64_t)(extent + pick(0, 50));
			extent = (size_t)strides[l] * counts[l];
			n *= counts[l];
		}
		if (extent > sizeof(buf) - 64 || n > 8192)
			continue;
		uint8_t *base = buf + pick(0, 63);
		size_t idx[4] = {0};
		for (size_t i = 0; i < n; i++) {
			size_t off = 0;
			for (unsigned l = 0; l < depth; l++)
				off += idx[l] * (size_t)strides[l];
			iov[i].iov_base = base + off;
			iov[i].iov_len = block;
			for (unsigned l = 0; l < depth && ++idx[l] == counts[l]; l++)
				idx[l] = 0;
		}
		struct ddtx_dataloop *dl = ddtx_dl_vector(block, depth, counts, strides);
		size_t total = n * block;
		size_t off = pick(0, total), len = pick(0, total - off);
		size_t want = ddtx_iov_gather(iov, n, off, x, len);
		CHECK(dl && ddtx_dl_gather(dl, base, off, y, len) == want && !memcmp(x, y, want),
		      "nested vector (depth %u) differs", depth);
		ddtx_dl_put(dl);

		/* indexed-block over the same blocks' offsets */
		size_t offs[8192];
		for (size_t i = 0; i < n; i++)
			offs[i] = (size_t)((uint8_t *)iov[i].iov_base - base) + 7;
		dl = ddtx_dl_indexed_block(block, offs, n);
		CHECK(dl && ddtx_dl_gather(dl, base + offs[0] - 7, off, y, len) == want &&
		      !memcmp(x, y, want), "indexed-block differs (block %zu, n %zu, [%zu, +%zu))",
		      block, n, off, len);
		ddtx_dl_put(dl);
	}
}

/* ---- the layout cache keeps the compiled form ---- */

static void test_cache(void)
{
	struct ddtx_wire_params wp = {0};
	struct ddtx_regcache_params rp = {.max_bytes = 1 << 30, .max_count = 4096, .monitor = true};
	struct ddtx_layout_cache_params lp = {.max_entries = 16, .max_wsets = 4};
	struct ddtx_wire_domain *wire;
	struct ddtx_regcache *rc;
	struct ddtx_mkey_pool *pool;
	struct ddtx_layout_cache *lc;
	if (ddtx_wire_domain_open(&wp, &wire) || ddtx_regcache_open(wire, &rp, &rc) ||
	    ddtx_mkey_pool_open(wire, 16, &pool) ||
	    ddtx_layout_cache_open(&lp, wire, rc, pool, &lc)) {
		CHECK(0, "cannot open the engine");
		return;
	}
	static uint8_t buf[1 << 16], out[1 << 16], ref[1 << 16];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	struct iovec iov[513];
	strided(iov, buf + 5, 512, 24, 40);
	iov[512] = (struct iovec){buf + 30000, 0}; /* an empty entry: skipped by both */
	bool hit;
	struct ddtx_layout *l = ddtx_layout_get(lc, iov, 513, &hit);
	CHECK(l && !l->dl_done, "compiled before first use");
	const struct ddtx_dataloop *dl = ddtx_layout_dataloop(lc, l);
	CHECK(dl && dl->nnodes == 1 && l->dl_done, "layout compiled");
	CHECK(ddtx_layout_dataloop(lc, l) == dl, "compiled once");
	size_t got = ddtx_pack_gather(lc, l, iov, 513, 100, out, 5000);
	ddtx_iov_gather(iov, 513, 100, ref, 5000);
	CHECK(got == 5000 && !memcmp(out, ref, got), "pack gather through the layout");
	ddtx_layout_put(lc, l);

	/* The streaming gather (engine/pack.h) gives the same bytes as the plain one, compiled
	 * or walked, to a destination of any alignment, across its pieces (16 KiB) and past the
	 * layout's end, and writes nothing around them. */
	static struct iovec big[2048];
	static uint8_t sout[1 << 16];
	strided(big, buf + 5, 2048, 24, 32); /* 48 KiB */
	struct ddtx_layout *lb = ddtx_layout_get(lc, big, 2048, &hit);
	CHECK(lb && ddtx_layout_dataloop(lc, lb), "a vector of 2048 blocks compiles");
	const size_t soffs[] = {0, 1, 100, 16383, 40000, 49000};
	const size_t slens[] = {1, 15, 64, 100, 16384, 16385, 40000};
	const size_t shifts[] = {0, 1, 7, 16, 33};
	for (size_t a = 0; a < sizeof(soffs) / sizeof(soffs[0]); a++)
		for (size_t b = 0; b < sizeof(slens) / sizeof(slens[0]); b++)
			for (size_t c = 0; c < sizeof(shifts) / sizeof(shifts[0]); c++)
				for (int walked = 0; walked < 2; walked++) {
					size_t off = soffs[a], len = slens[b], sh = shifts[c];
					size_t want = off >= 49152 ? 0 : DDTX_MIN(len, 49152 - off);
					memset(sout, 0xa5, sizeof(sout));
					memset(ref, 0, sizeof(ref));
					got = ddtx_pack_gather_streaming(lc, walked ? NULL : lb,
									 big, 2048, off, sout + sh,
									 len);
					ddtx_iov_gather(big, 2048, off, ref, len);
					CHECK(got == want && !memcmp(sout + sh, ref, want) &&
						      sout[sh + want] == 0xa5 &&
						      (!sh || sout[sh - 1] == 0xa5),
					      "streaming gather [%zu, +%zu) to +%zu (%s): %zu of "
					      "%zu bytes, or wrong bytes", off, len, sh,
					      walked ? "walked" : "compiled", got, want);
				}
	ddtx_layout_put(lc, lb);

	/* Irregular: the iov walk packs it. */
	struct iovec irr[3] = {{buf, 7}, {buf + 100, 300}, {buf + 1000, 5}};
	l = ddtx_layout_get(lc, irr, 3, &hit);
	CHECK(l && !ddtx_layout_dataloop(lc, l) && l->dl_done, "irregular: no compiled form");
	got = ddtx_pack_gather(lc, l, irr, 3, 3, out, 400);
	ddtx_iov_gather(irr, 3, 3, ref, 400);
	CHECK(got == 309 && !memcmp(out, ref, got), "irregular pack gather");
	ddtx_layout_put(lc, l);

	/* A list the scan found to be a vector is looked up by its shape alone: it finds the
	 * layout a plain lookup entered and the reverse, with the same summary; another stride,
	 * block or base is another layout.  (References held: an unmonitored cache keeps a
	 * layout only while it is used.) */
	struct iovec v[65], w[64];
	struct ddtx_iov_vec vec, wvec;
	size_t t = 0;
	strided(v, buf + 3, 64, 16, 48);
	CHECK(!ddtx_iov_scan(v, 64, 1024, &t, &vec) && vec.n == 64, "scan: a vector");
	struct ddtx_layout *lp_ = ddtx_layout_get(lc, v, 64, &hit);
	CHECK(lp_ && !hit, "first plain lookup: a miss");
	struct ddtx_layout *lv = ddtx_layout_get_vec(lc, v, 64, &vec, &hit);
	CHECK(lv == lp_ && hit, "vector lookup: the plain lookup's layout");
	CHECK(lv->st.total == 1024 && lv->st.nblocks == 64 && lv->st.min_block == 16 &&
		      lv->st.avg_block == 16 && lv->vec.n == 64,
	      "summary of a vector layout");
	v[64] = v[63];
	v[63] = (struct iovec){buf, 0}; /* an empty entry: the same non-empty entries */
	struct ddtx_layout *le = ddtx_layout_get(lc, v, 65, &hit);
	CHECK(le == lp_ && hit, "plain lookup with an empty entry: the same layout");
	struct ddtx_layout *others[3];
	for (int k = 0; k < 3; k++) {
		strided(w, buf + 3 + (k == 2), 64, k == 1 ? 8 : 16, k == 0 ? 64 : 48);
		t = 0;
		CHECK(!ddtx_iov_scan(w, 64, 1024, &t, &wvec) && wvec.n == 64, "scan %d", k);
		others[k] = ddtx_layout_get_vec(lc, w, 64, &wvec, &hit);
		CHECK(others[k] && !hit && others[k] != lp_, "another vector (%d): a miss", k);
		struct ddtx_layout *again = ddtx_layout_get(lc, w, 64, &hit);
		CHECK(again == others[k] && hit, "plain lookup finds the vector's layout (%d)", k);
		CHECK(again->iov[5].iov_base == w[5].iov_base && again->count == 64,
		      "the layout's list (%d)", k);
		ddtx_layout_put(lc, again);
	}
	for (int k = 0; k < 3; k++)
		ddtx_layout_put(lc, others[k]);
	ddtx_layout_put(lc, le);
	ddtx_layout_put(lc, lv);
	ddtx_layout_put(lc, lp_);
	ddtx_layout_cache_close(lc);
	ddtx_mkey_pool_close(pool);
	ddtx_regcache_close(rc);
	ddtx_wire_domain_close(wire);
}

/* ---- half-stride rows: the permute kernels (engine/pack_rows_avx512.c) ---- */

/* size bytes followed by a page that may not be read or written (unmap size + 4096); NULL if
 * the mapping failed. */
static uint8_t *guarded_arena(size_t size)
{
	uint8_t *arena = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(arena != MAP_FAILED, "mmap");
	if (arena == MAP_FAILED)
		return NULL;
	CHECK(!mprotect(arena + size, 4096, PROT_NONE), "mprotect of the guard page");
	return arena;
}

/* rows rows, row bytes apart from base, of n0 blocks of block bytes, stride apart. */
static void rows_of_blocks(struct iovec *iov, uint8_t *base, size_t rows, size_t row, size_t n0,
			   size_t stride, size_t block)
{
	for (size_t j = 0; j < rows; j++)
		for (size_t i = 0; i < n0; i++)
			iov[j * n0 + i] = (struct iovec){base + j * row + i * stride, block};
}

/*
 * Rows of 64-byte blocks every other line in a layout spanning more than the caches hold
 * (pack_kernels.c's FAR_SPAN, 8 MiB: two blocks an iteration, loads of the lines between):
 * odd and even counts, one row or several, misaligned, ending on the last byte before an
 * unreadable page or not; gathered whole and in segments (PACK's chunks start anywhere)
 * against the iov walk, nothing written past a segment.
 */
static void half_far(void)
{
	const size_t page = 4096, span = 12u << 20, block = 64, stride = 128;
	uint8_t *arena = guarded_arena(span);
	if (!arena)
		return;
	for (size_t i = 0; i < span; i++)
		arena[i] = (uint8_t)(i * 131 + (i >> 12));
	size_t cap = span / stride;
	struct iovec *iov = malloc(cap * sizeof(*iov));
	uint8_t *a = malloc(cap * block + 64), *b = malloc(cap * block + 64);
	size_t segments = 0;
	/* The far loops: AVX-512's where this CPU has it, the baseline's */
	for (int iter = 0; iter < 16 && !failures; iter++) {
		ddtx_dl_row_kernels(iter < 8 ? DDTX_DL_KERNELS_ALL : DDTX_DL_KERNELS_BASELINE);
		size_t rows = iter % 4 < 2 ? 1 : pick(2, 5);
		size_t n0 = (11u << 20) / stride / rows - pick(0, 9);
		size_t row = n0 * stride + (iter % 3) * 8;
		size_t extent = (rows - 1) * row + (n0 - 1) * stride + block;
		size_t first = iter % 2 ? span - extent : pick(0, 63);
		rows_of_blocks(iov, arena + first, rows, row, n0, stride, block);
		size_t count = rows * n0, total = count * block;
		struct ddtx_dataloop *dl = ddtx_dl_compile(iov, count, 0);
		CHECK(dl, "a far vector of %zu blocks did not compile", count);
		if (!dl)
			continue;
		for (int sgi = 0; sgi < 12 && !failures; sgi++, segments++) {
			size_t off = sgi == 0 ? 0 : pick(0, total - 1);
			size_t len = sgi == 0 ? total : sgi % 2 ? pick(1, 65536) : pick(0, total - off);
			size_t want = ddtx_iov_gather(iov, count, off, a, len);
			memset(b, 0xa5, want + 16);
			size_t got = ddtx_dl_gather(dl, arena + first, off, b, len);
			CHECK(got == want && !memcmp(a, b, want) && b[want] == 0xa5,
			      "far gather [%zu, +%zu) of %zu, %zu rows: %zu bytes of %zu, or wrong",
			      off, len, total, rows, got, want);
		}
		ddtx_dl_put(dl);
	}
	ddtx_dl_row_kernels(DDTX_DL_KERNELS_CHOSEN);
	printf("half: far rows, %zu segments compared\n", segments);
	munmap(arena, span + page);
	free(iov);
	free(a);
	free(b);
}

/*
 * Rows of blocks of 2, 4, 8, 16 or 64 bytes at twice their size apart (AVX-512 moves rows of
 * 2, 4 and 8-byte blocks 64 bytes of payload at a time by permutes and masked loads and stores,
 * and 64-byte blocks with a prefetch of the line between): random counts (whole groups and
 * tails), one or two levels, misaligned bases, and half of the layouts ending on the last byte
 * before a page that may not be read (a kernel that loads past the last block faults), against
 * the iov walk, byte for byte, scatter included (the gaps between blocks stay as they were).
 * With every wide kernel the CPU can run and again with the baseline ones.
 */
static void test_half(void)
{
	size_t page = 4096;
	uint8_t *arena = guarded_arena(ARENA);
	if (!arena)
		return;
	uint8_t *canary = malloc(ARENA);
	for (size_t i = 0; i < ARENA; i++)
		canary[i] = (uint8_t)rnd();
	memcpy(arena, canary, ARENA);
	uint8_t *a = malloc(1 << 20), *b = malloc(1 << 20);
	static struct iovec iov[8192];
	size_t layouts = 0, segments = 0;
	for (int wide = 1; wide >= 0 && !failures; wide--) {
		ddtx_dl_row_kernels(wide ? DDTX_DL_KERNELS_ALL : DDTX_DL_KERNELS_BASELINE);
		for (int iter = 0; iter < 600 && !failures; iter++) {
			size_t block = rnd() % 5 ? (size_t)2 << pick(0, 3) : 64;
			size_t stride = 2 * block;
			size_t n0 = rnd() % 4 ? pick(1, 8192 / 4) : pick(1, 16);
			size_t n1 = rnd() % 3 ? 1 : pick(2, 4);
			size_t row = n0 * stride + pick(0, 3) * 8 + (rnd() % 2 ? 0 : pick(1, 7));
			size_t extent = (n1 - 1) * row + (n0 - 1) * stride + block;
			size_t first = iter % 2 ? ARENA - extent : pick(0, 63);
			rows_of_blocks(iov, arena + first, n1, row, n0, stride, block);
			size_t count = n0 * n1, total = count * block;
			struct ddtx_dataloop *dl = ddtx_dl_compile(iov, count, 0);
			if (!dl) /* too few blocks to be worth compiling */
				continue;
			struct copier c = {.dl = dl, .origin = arena + first};
			segments += compare_segments(iov, count, total, &c, arena, canary, a, b, 8);
			ddtx_dl_put(dl);
			layouts++;
		}
	}
	ddtx_dl_row_kernels(DDTX_DL_KERNELS_CHOSEN);
	printf("half: %zu layouts, %zu segments compared\n", layouts, segments);
	CHECK(layouts > 1000, "only %zu of 1200 layouts compiled", layouts);
	munmap(arena, ARENA + page);
	free(canary);
	free(a);
	free(b);
	half_far();
}

/* ---- micro-benchmark (printed, not asserted) ---- */

static double gbps(size_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / (double)ns : 0;
}

/* Best of a few timed rounds of each copy of `bytes` payload bytes. */
static void bench_case(size_t block, size_t stride, size_t bytes)
{
	size_t count = bytes / block;
	uint8_t *src = aligned_alloc(4096, count * stride + 4096);
	uint8_t *dst = aligned_alloc(4096, bytes + 4096);
	uint8_t *flat = aligned_alloc(4096, bytes + 4096);
	struct iovec *iov = malloc(count * sizeof(*iov));
	memset(src, 1, count * stride);
	memset(dst, 2, bytes);
	memset(flat, 3, bytes);
	strided(iov, src, count, block, stride);
	struct ddtx_dataloop *dl = ddtx_dl_compile(iov, count, 0);
	int reps = (int)((256u << 20) / bytes) + 1;
	/* memcpy; gather: compiled (the kernels chosen for this CPU), compiled (every wide kernel
	 * it can run), compiled (baseline), iov; scatter: the same */
	enum { MEMCPY, GATHER, GATHER_ALL, GATHER_BASE, GATHER_IOV, SCATTER, SCATTER_ALL,
	       SCATTER_BASE, SCATTER_IOV, RUNS };
	uint64_t best[RUNS];
	for (int k = 0; k < RUNS; k++)
		best[k] = UINT64_MAX;
	for (int round = 0; round < 5; round++) {
		uint64_t t[RUNS + 1];
		t[0] = ddtx_time_ns();
		for (int k = 0; k < RUNS; k++) {
			ddtx_dl_row_kernels(k == GATHER_BASE || k == SCATTER_BASE
						    ? DDTX_DL_KERNELS_BASELINE
					    : k == GATHER_ALL || k == SCATTER_ALL ? DDTX_DL_KERNELS_ALL
										  : DDTX_DL_KERNELS_CHOSEN);
			for (int r = 0; r < reps; r++)
				switch (k) {
				case MEMCPY: memcpy(dst, flat, bytes); break;
				case GATHER:
				case GATHER_ALL:
				case GATHER_BASE: ddtx_dl_gather(dl, src, 0, dst, bytes); break;
				case GATHER_IOV: ddtx_iov_gather(iov, count, 0, dst, bytes); break;
				case SCATTER:
				case SCATTER_ALL:
				case SCATTER_BASE: ddtx_dl_scatter(dl, src, 0, flat, bytes); break;
				case SCATTER_IOV: ddtx_iov_scatter(iov, count, 0, flat, bytes); break;
				}
			t[k + 1] = ddtx_time_ns();
		}
		for (int k = 0; k < RUNS; k++)
			best[k] = t[k + 1] - t[k] < best[k] ? t[k + 1] - t[k] : best[k];
	}
	ddtx_dl_row_kernels(DDTX_DL_KERNELS_CHOSEN);
	/* What a layout seen once pays: compiling a 1024-entry list (an iov_limit message). */
	size_t nc = count < 1024 ? count : 1024;
	uint64_t tc = UINT64_MAX;
	for (int round = 0; round < 5; round++) {
		uint64_t t0 = ddtx_time_ns();
		for (int r = 0; r < 200; r++)
			ddtx_dl_put(ddtx_dl_compile(iov, nc, 0));
		uint64_t d = ddtx_time_ns() - t0;
		tc = d < tc ? d : tc;
	}
	double g[RUNS];
	for (int k = 0; k < RUNS; k++)
		g[k] = gbps(bytes * (size_t)reps, best[k]);
	printf("%4zu B  stride %4zu  %6zu KiB  memcpy %6.2f  compiled %6.2f  all wide %6.2f  "
	       "baseline %6.2f  iov %6.2f GB/s  compiled/memcpy %.2fx  compiled/iov %.2fx  "
	       "compile %.1f ns/entry\n", block, stride, bytes >> 10, g[MEMCPY], g[GATHER],
	       g[GATHER_ALL], g[GATHER_BASE], g[GATHER_IOV], g[GATHER] / g[MEMCPY],
	       g[GATHER] / g[GATHER_IOV], (double)tc / 200 / (double)nc);
	printf("%4s    scatter  %4s  %6s     %6s  %6s  compiled %6.2f  all wide %6.2f  "
	       "baseline %6.2f  iov %6.2f GB/s  compiled/memcpy %.2fx  compiled/iov %.2fx\n", "", "",
	       "", "", "", g[SCATTER], g[SCATTER_ALL], g[SCATTER_BASE], g[SCATTER_IOV],
	       g[SCATTER] / g[MEMCPY], g[SCATTER] / g[SCATTER_IOV]);
	ddtx_dl_put(dl);
	free(iov);
	free(src);
	free(dst);
	free(flat);
}

/*
 * FFT2D's receive side (LAYOUTS.md 9, N = 256, P = 2): n = 128 rows of n 16-byte elements, the
 * elements 16 N bytes apart and the rows 16 bytes apart (a transpose).  The compiled scatter
 * and gather against the loop an MPI engine runs for it (yaksa: the rows outer, one element
 * copy inner), as MPICH unpacks it after receiving contiguously.
 */
static void bench_transpose(size_t elem, size_t n, size_t N)
{
	size_t bytes = elem * n * n, span = elem * N * n;
	uint8_t *lay = aligned_alloc(4096, span), *flat = aligned_alloc(4096, bytes);
	struct iovec *iov = malloc(n * n * sizeof(*iov));
	memset(lay, 1, span);
	memset(flat, 2, bytes);
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < n; i++)
			iov[k * n + i] = (struct iovec){lay + elem * (k + i * N), elem};
	struct ddtx_dataloop *dl = ddtx_dl_compile(iov, n * n, 0);
	int reps = (int)((64u << 20) / bytes) + 1;
	uint64_t best[4] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
	for (int round = 0; round < 5; round++) {
		uint64_t t[5];
		t[0] = ddtx_time_ns();
		for (int r = 0; r < reps; r++)
			for (size_t k = 0; k < n; k++)
				for (size_t i = 0; i < n; i++)
					memcpy(lay + elem * (k + i * N), flat + elem * (k * n + i),
					       elem);
		t[1] = ddtx_time_ns();
		for (int r = 0; r < reps; r++)
			ddtx_dl_scatter(dl, lay, 0, flat, bytes);
		t[2] = ddtx_time_ns();
		for (int r = 0; r < reps; r++)
			for (size_t k = 0; k < n; k++)
				for (size_t i = 0; i < n; i++)
					memcpy(flat + elem * (k * n + i), lay + elem * (k + i * N),
					       elem);
		t[3] = ddtx_time_ns();
		for (int r = 0; r < reps; r++)
			ddtx_dl_gather(dl, lay, 0, flat, bytes);
		t[4] = ddtx_time_ns();
		for (int k = 0; k < 4; k++)
			best[k] = t[k + 1] - t[k] < best[k] ? t[k + 1] - t[k] : best[k];
	}
	double us = 1e-3 / reps;
	printf("transpose %zu x %zu elements of %zu B, %zu B apart (%zu KiB): scatter loop %.1f us, "
	       "compiled %.1f us (%.2fx); gather loop %.1f us, compiled %.1f us (%.2fx)\n", n, n,
	       elem, elem * N, bytes >> 10, (double)best[0] * us, (double)best[1] * us,
	       (double)best[0] / (double)best[1], (double)best[2] * us, (double)best[3] * us,
	       (double)best[2] / (double)best[3]);
	ddtx_dl_put(dl);
	free(iov);
	free(lay);
	free(flat);
}

/* DDTX_DL_ROWS_* in words. */
static const char *rows_named(unsigned kinds)
{
	switch (kinds) {
	case 0: return "none wider than the baseline";
	case DDTX_DL_ROWS_HALF: return "AVX-512 half-stride rows";
	case DDTX_DL_ROWS_LINE: return "AVX-512 64-byte blocks";
	default: return "AVX-512 half-stride rows and 64-byte blocks";
	}
}

static int test_bench(void)
{
	unsigned all = ddtx_dl_row_kernels(DDTX_DL_KERNELS_ALL);
	unsigned chosen = ddtx_dl_row_kernels(DDTX_DL_KERNELS_CHOSEN);
	printf("gather of a strided layout into a contiguous buffer (and below it, the scatter\n"
	       "back), GB/s of payload, best of 5\n"
	       "  compiled: the kernels chosen for this CPU: %s\n"
	       "  all wide: every wide kernel it can run: %s\n"
	       "  baseline: the baseline instruction set's loops alone\n"
	       "(issue 12 targets: compiled >= 0.7x memcpy at 64 B / stride 128, >= 0.5x at 8 B)\n",
	       rows_named(chosen), rows_named(all));
	static const size_t sizes[] = {256u << 10, 32u << 20};
	for (int s = 0; s < 2; s++) {
		bench_case(64, 128, sizes[s]);
		bench_case(8, 16, sizes[s]);
		bench_case(8, 64, sizes[s]);
		bench_case(4, 8, sizes[s]);
		bench_case(2, 4, sizes[s]);
		bench_case(16, 32, sizes[s]);
		bench_case(32, 64, sizes[s]);
		bench_case(48, 96, sizes[s]);
		bench_case(256, 512, sizes[s]);
	}
	bench_case(64, 4096, 4u << 20); /* blocks a page apart: the kernels' own prefetch */
	bench_transpose(16, 128, 256);
	bench_transpose(8, 256, 512);
	return 0;
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	if (only && !strcmp(only, "bench"))
		return test_bench();
	if (!only || !strcmp(only, "shapes"))
		test_shapes();
	if (!only || !strcmp(only, "property"))
		test_property();
	if (!only || !strcmp(only, "vector"))
		test_vector();
	if (!only || !strcmp(only, "half"))
		test_half();
	if (!only || !strcmp(only, "transpose"))
		test_transpose();
	if (!only || !strcmp(only, "built"))
		test_built();
	if (!only || !strcmp(only, "cache"))
		test_cache();
	if (!only || !strcmp(only, "gpu_runs"))
		test_gpu_runs();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("ok\n");
	return failures ? 1 : 0;
}
