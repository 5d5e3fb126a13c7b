/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/gpu_runs.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "engine/dataloop.h"
#include "engine/gpu_run_word.h"

struct builder {
	struct ddtx_gpu_runs *r;
	size_t cap;
	size_t max;
	uint64_t payload;   /* next payload byte */
	bool failed;
};

static struct ddtx_gpu_run *push(struct builder *b)
{
	if (b->r->nruns == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		struct ddtx_gpu_run *n = realloc(b->r->runs, cap * sizeof(*n));
		if (!n) {
			b->failed = true;
			return NULL;
		}
		b->r->runs = n;
		b->cap = cap;
	}
	return &b->r->runs[b->r->nruns++];
}

static void sink_blocks(struct builder *b, int64_t off, uint64_t block, int64_t stride,
			uint64_t n);

/* n blocks of `block` bytes at stride from off: extend the last run where they continue it.
 * A block over DDTX_GPU_RUN_MAX_BYTES is cut into pieces of that size, a run of one piece
 * each, so that no thread block is left alone with a long copy. */
static void sink(struct builder *b, int64_t off, uint64_t block, int64_t stride, uint64_t n)
{
	if (block <= DDTX_GPU_RUN_MAX_BYTES) {
		sink_blocks(b, off, block, stride, n);
		return;
	}
	for (uint64_t k = 0; k < n && !b->failed; k++) {
		int64_t at = off + (int64_t)k * stride;
		for (uint64_t done = 0; done < block && !b->failed;) {
			uint64_t piece = block - done < DDTX_GPU_RUN_MAX_BYTES
						 ? block - done
						 : DDTX_GPU_RUN_MAX_BYTES;
			sink_blocks(b, at + (int64_t)done, piece, 0, 1);
			done += piece;
		}
	}
}

static void sink_blocks(struct builder *b, int64_t off, uint64_t block, int64_t stride,
			uint64_t n)
{
	/* A run holds at most DDTX_GPU_RUN_MAX_BYTES (and b->max blocks). */
	uint64_t max = DDTX_GPU_RUN_MAX_BYTES / block < b->max ? DDTX_GPU_RUN_MAX_BYTES / block
								: b->max;
	while (n && !b->failed) {
		struct ddtx_gpu_run *last = b->r->nruns ? &b->r->runs[b->r->nruns - 1] : NULL;
		uint64_t take;

		if (last && last->block == block && last->n < max) {
			/* A run of one block takes its stride from the block that follows it. */
			int64_t gap = off - (last->off + (int64_t)(last->n - 1) * last->stride);
			bool fits = last->n == 1 ? (n == 1 || gap == stride) : gap == last->stride &&
				    (n == 1 || stride == last->stride);
			if (fits) {
				if (last->n == 1)
					last->stride = gap;
				take = n < max - last->n ? n : max - last->n;
				last->n += take;
				goto next;
			}
		}
		last = push(b);
		if (!last)
			return;
		take = n < max ? n : max;
		*last = (struct ddtx_gpu_run){ .payload = b->payload, .off = off, .block = block,
					       .stride = n > 1 ? stride : 0, .n = take };
next:
		b->payload += take * block;
		off += (int64_t)take * stride;
		n -= take;
	}
}

static void vector_rows(struct builder *b, const struct ddtx_dl_node *nd)
{
	size_t rows = 1, idx[DDTX_DL_DEPTH] = { 0 };

	for (unsigned l = 1; l < nd->depth; l++)
		rows *= nd->count[l];
	for (size_t r = 0; r < rows && !b->failed; r++) {
		int64_t off = nd->off;
		for (unsigned l = 1; l < nd->depth; l++)
			off += (int64_t)idx[l] * nd->stride[l];
		sink(b, off, nd->block, nd->stride[0], nd->count[0]);
		for (unsigned l = 1; l < nd->depth && ++idx[l] == nd->count[l]; l++)
			idx[l] = 0;
	}
}

static unsigned width_of(const struct ddtx_gpu_runs *r)
{
	static const unsigned widths[] = { 16, 8, 4, 1 };

	for (unsigned i = 0; i < 3; i++) {
		uint64_t w = widths[i];
		bool ok = true;
		for (size_t k = 0; k < r->nruns && ok; k++) {
			const struct ddtx_gpu_run *u = &r->runs[k];
			ok = u->block % w == 0 && (uint64_t)u->off % w == 0 &&
			     (uint64_t)u->stride % w == 0 && u->payload % w == 0;
		}
		if (ok)
			return (unsigned)w;
	}
	return 1;
}

int ddtx_gpu_runs_build(const struct ddtx_dataloop *dl, size_t max_blocks,
			struct ddtx_gpu_runs *out)
{
	struct builder b = { .r = out, .max = max_blocks ? max_blocks : DDTX_GPU_RUN_MAX_BLOCKS };

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < dl->nnodes && !b.failed; i++) {
		const struct ddtx_dl_node *nd = &dl->nodes[i];
		switch (nd->kind) {
		case DDTX_DL_VECTOR:
			vector_rows(&b, nd);
			break;
		case DDTX_DL_INDEXED_BLOCK:
			for (size_t k = 0; k < nd->n && !b.failed; k++)
				sink(&b, dl->offs[nd->first + k], nd->block, 0, 1);
			break;
		case DDTX_DL_INDEXED:
			for (size_t k = 0; k < nd->n && !b.failed; k++)
				sink(&b, dl->offs[nd->first + k], dl->lens[nd->first + k], 0, 1);
			break;
		}
	}
	if (b.failed) {
		ddtx_gpu_runs_free(out);
		return -FI_ENOMEM;
	}
	out->total = b.payload;
	out->width = width_of(out);
	return 0;
}

int ddtx_gpu_runs_from_iov(const struct iovec *iov, size_t count, uintptr_t origin,
			   size_t max_blocks, struct ddtx_gpu_runs *out)
{
	struct builder b = { .r = out, .max = max_blocks ? max_blocks : DDTX_GPU_RUN_MAX_BLOCKS };

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < count && !b.failed; i++)
		if (iov[i].iov_len)
			sink(&b, (int64_t)((uintptr_t)iov[i].iov_base - origin), iov[i].iov_len, 0, 1);
	if (b.failed) {
		ddtx_gpu_runs_free(out);
		return -FI_ENOMEM;
	}
	out->total = b.payload;
	out->width = width_of(out);
	return 0;
}

void ddtx_gpu_runs_free(struct ddtx_gpu_runs *r)
{
	free(r->runs);
	memset(r, 0, sizeof(*r));
}

/* The run holding payload byte p (p < total). */
static size_t run_at(const struct ddtx_gpu_runs *r, size_t p)
{
	size_t lo = 0, hi = r->nruns;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->runs[mid].payload <= p)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void ddtx_gpu_runs_span(const struct ddtx_gpu_runs *r, size_t lo, size_t hi, size_t *first,
			size_t *count)
{
	if (hi > r->total)
		hi = r->total;
	if (lo >= hi || !r->nruns) {
		*first = 0;
		*count = 0;
		return;
	}
	*first = run_at(r, lo);
	*count = run_at(r, hi - 1) - *first + 1;
}

size_t ddtx_gpu_runs_apply(const struct ddtx_gpu_runs *r, void *origin, size_t lo, void *packed,
			   size_t len, bool gather)
{
	size_t first, count, hi = lo + len > r->total ? r->total : lo + len;
	unsigned w = r->width;

	if (lo >= hi)
		return 0;
	/* As the launcher does: the word may not be wider than the addresses and the segment. */
	while (w > 1 && (((uintptr_t)origin | (uintptr_t)packed | lo | hi) & (w - 1)))
		w = w == 16 ? 8 : w == 8 ? 4 : 1;
	ddtx_gpu_runs_span(r, lo, hi, &first, &count);
	/* One iteration of the outer loop is one thread block; of the inner, a thread's word. */
	for (size_t t = first; t < first + count; t++) {
		const struct ddtx_gpu_run *u = &r->runs[t];
		uint64_t words = u->n * u->block / w;
		for (uint64_t k = 0; k < words; k++) {
			int64_t lay;
			uint64_t pay;
			ddtx_gpu_run_word(u->payload, u->off, u->block, u->stride, k, w, &lay, &pay);
			if (pay < lo || pay >= hi)
				continue;
			uint8_t *l = (uint8_t *)origin + lay, *p = (uint8_t *)packed + (pay - lo);
			if (gather)
				memcpy(p, l, w);
			else
				memcpy(l, p, w);
		}
	}
	return hi - lo;
}
