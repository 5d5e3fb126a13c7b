/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Compiling a layout into loop nodes (dataloop.h), in linear passes over its blocks:
 *   1. touching blocks merge (a vector of 64 B at stride 64 is one contiguous block);
 *   2. runs of equal length at equal stride become vectors;
 *   3. runs of equal vectors at equal distance become vectors of vectors, level by level;
 *   4. what is left over (vectors of fewer than DL_MIN_RUN blocks broken up again) becomes
 *      indexed-block runs where lengths repeat, indexed nodes otherwise.
 */
#include "engine/dataloop.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Below this many blocks a vector's loop costs more than it saves over listing them. */
#define DL_MIN_RUN 4

struct blk {
	int64_t off;
	size_t len;
};

/* A vector under construction (the nodes of step 2 and 3). */
struct item {
	int64_t off;
	size_t block;
	unsigned depth;
	size_t count[DDTX_DL_DEPTH];
	int64_t stride[DDTX_DL_DEPTH];
	size_t n;                        /* blocks */
};

struct ddtx_dataloop *ddtx_dl_get(struct ddtx_dataloop *dl)
{
	if (dl)
		atomic_fetch_add_explicit(&dl->refs, 1, memory_order_relaxed);
	return dl;
}

void ddtx_dl_put(struct ddtx_dataloop *dl)
{
	if (!dl || atomic_fetch_sub_explicit(&dl->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(dl->nodes);
	free(dl->start);
	free(dl->offs);
	free(dl->lens);
	free(dl);
}

static struct ddtx_dataloop *dl_alloc(size_t nnodes, size_t noffs, size_t nlens)
{
	struct ddtx_dataloop *dl = calloc(1, sizeof(*dl));
	if (!dl)
		return NULL;
	atomic_init(&dl->refs, 1);
	dl->nodes = calloc(nnodes ? nnodes : 1, sizeof(*dl->nodes));
	dl->start = calloc(nnodes + 1, sizeof(*dl->start));
	dl->offs = noffs ? malloc(noffs * sizeof(*dl->offs)) : NULL;
	dl->lens = nlens ? malloc(nlens * sizeof(*dl->lens)) : NULL;
	if (!dl->nodes || !dl->start || (noffs && !dl->offs) || (nlens && !dl->lens)) {
		ddtx_dl_put(dl);
		return NULL;
	}
	return dl;
}

/* Payload offsets of the nodes, for the segment search of the kernels. */
static void dl_finish(struct ddtx_dataloop *dl)
{
	size_t pos = 0, blocks = 0;
	for (size_t i = 0; i < dl->nnodes; i++) {
		dl->start[i] = pos;
		pos += dl->nodes[i].bytes;
		blocks += dl->nodes[i].n;
	}
	dl->start[dl->nnodes] = pos;
	dl->total = pos;
	dl->nblocks = blocks;
}

/* Step 1: the non-empty blocks relative to the first one, touching ones merged. */
static size_t collect(const struct iovec *iov, size_t count, uintptr_t origin, struct blk *out)
{
	size_t n = 0;
	int64_t first = 0;
	for (size_t i = 0; i < count; i++) {
		size_t len = iov[i].iov_len;
		if (!len)
			continue;
		int64_t off = (int64_t)((uintptr_t)iov[i].iov_base - origin);
		if (!n)
			first = off;
		off -= first;
		if (n && out[n - 1].off + (int64_t)out[n - 1].len == off) {
			out[n - 1].len += len;
			continue;
		}
		out[n].off = off;
		out[n].len = len;
		n++;
	}
	return n;
}

/* Step 2: runs of equal length at one stride. */
static size_t vectors(const struct blk *b, size_t nb, struct item *it)
{
	size_t ni = 0;
	for (size_t i = 0; i < nb;) {
		size_t j = i + 1;
		int64_t stride = 0;
		if (j < nb && b[j].len == b[i].len) {
			stride = b[j].off - b[i].off;
			while (j < nb && b[j].len == b[i].len && b[j].off - b[j - 1].off == stride)
				j++;
			/* Two blocks whose distance the next pair does not repeat: the second one
			 * more likely starts a longer run. */
			if (j - i == 2 && j < nb && b[j].len == b[i].len)
				j = i + 1;
		}
		struct item *v = &it[ni++];
		memset(v, 0, sizeof(*v));
		v->off = b[i].off;
		v->block = b[i].len;
		v->depth = 1;
		v->count[0] = j - i;
		v->stride[0] = j - i > 1 ? stride : 0;
		v->n = j - i;
		i = j;
	}
	return ni;
}

/* Same shape below level k (so that a run of them is a vector of them)? */
static bool same_shape(const struct item *a, const struct item *b, unsigned k)
{
	if (a->depth != k || b->depth != k || a->block != b->block)
		return false;
	for (unsigned l = 0; l < k; l++)
		if (a->count[l] != b->count[l] || a->stride[l] != b->stride[l])
			return false;
	return true;
}

/* Step 3: one nesting level, in place; returns the new item count. */
static size_t nest(struct item *it, size_t ni, unsigned k)
{
	size_t out = 0;
	for (size_t i = 0; i < ni;) {
		size_t j = i + 1;
		int64_t delta = 0;
		if (it[i].count[k - 1] >= 2 && j < ni && same_shape(&it[i], &it[j], k)) {
			delta = it[j].off - it[i].off;
			while (j < ni && same_shape(&it[i], &it[j], k) &&
			       it[j].off - it[j - 1].off == delta)
				j++;
		}
		struct item v = it[i];
		if (j - i > 1) {
			v.depth = k + 1;
			v.count[k] = j - i;
			v.stride[k] = delta;
			v.n = it[i].n * (j - i);
		}
		it[out++] = v;
		i = j;
	}
	return out;
}

/* Lay out blocks that no vector took: indexed-block runs where a length repeats at least
 * DL_MIN_RUN times in a row, the rest in indexed nodes.  Returns the blocks in indexed-block. */
static size_t flush_loose(struct ddtx_dataloop *dl, const struct blk *loose, size_t nl,
			  size_t *no)
{
	size_t regular = 0;
	struct ddtx_dl_node *plain = NULL;
	for (size_t i = 0; i < nl;) {
		size_t j = i + 1;
		while (j < nl && loose[j].len == loose[i].len)
			j++;
		struct ddtx_dl_node *nd;
		if (j - i >= DL_MIN_RUN) {
			nd = &dl->nodes[dl->nnodes++];
			nd->kind = DDTX_DL_INDEXED_BLOCK;
			nd->block = loose[i].len;
			nd->first = *no;
			regular += j - i;
			plain = NULL;
		} else {
			if (!plain) {
				plain = &dl->nodes[dl->nnodes++];
				plain->kind = DDTX_DL_INDEXED;
				plain->first = *no;
			}
			nd = plain;
		}
		for (; i < j; i++) {
			dl->offs[*no] = loose[i].off;
			dl->lens[*no] = loose[i].len;
			(*no)++;
			nd->n++;
			nd->bytes += loose[i].len;
		}
	}
	return regular;
}

/* Step 4: nodes.  Vectors of at least DL_MIN_RUN blocks stay; the others' blocks are listed. */
static struct ddtx_dataloop *emit(const struct item *it, size_t ni, size_t nb, struct blk *loose)
{
	/* Nodes: the vectors; per stretch of loose blocks between them, indexed-block runs of at
	 * least DL_MIN_RUN blocks and no more indexed nodes than those runs plus one. */
	size_t nvec = 0, nloose = 0;
	for (size_t i = 0; i < ni; i++) {
		if (it[i].n >= DL_MIN_RUN)
			nvec++;
		else
			nloose += it[i].n;
	}
	struct ddtx_dataloop *dl = dl_alloc(2 * nvec + 1 + 2 * (nloose / DL_MIN_RUN) + 1, nloose,
					    nloose);
	if (!dl)
		return NULL;
	size_t no = 0, nl = 0, regular = 0;
	for (size_t i = 0; i < ni; i++) {
		const struct item *v = &it[i];
		if (v->n < DL_MIN_RUN) {
			/* A depth-1 vector: nest() needs count >= 2 below a level, so deeper
			 * items hold at least 4 blocks. */
			for (size_t b = 0; b < v->n; b++)
				loose[nl++] = (struct blk){v->off + (int64_t)b * v->stride[0],
							   v->block};
			continue;
		}
		regular += flush_loose(dl, loose, nl, &no);
		nl = 0;
		struct ddtx_dl_node *nd = &dl->nodes[dl->nnodes++];
		nd->kind = DDTX_DL_VECTOR;
		nd->depth = v->depth;
		nd->block = v->block;
		nd->off = v->off;
		for (unsigned l = 0; l < DDTX_DL_DEPTH; l++) {
			nd->count[l] = l < v->depth ? v->count[l] : 1;
			nd->stride[l] = l < v->depth ? v->stride[l] : 0;
		}
		nd->n = v->n;
		nd->bytes = v->n * v->block;
		regular += v->n;
	}
	regular += flush_loose(dl, loose, nl, &no);
	if (2 * regular < nb) {
		ddtx_dl_put(dl);
		return NULL;
	}
	dl_finish(dl);
	return dl;
}

struct ddtx_dataloop *ddtx_dl_compile(const struct iovec *iov, size_t count, uintptr_t origin)
{
	if (!count)
		return NULL;
	struct blk *b = malloc(count * sizeof(*b));
	if (!b)
		return NULL;
	size_t nb = collect(iov, count, origin, b);
	/* Blocks in runs of DL_MIN_RUN equal lengths bound what can be regular: most lists with
	 * nothing regular stop here, before the passes below. */
	size_t runs = 0;
	for (size_t i = 0, j; i < nb; i = j) {
		for (j = i + 1; j < nb && b[j].len == b[i].len; j++)
			;
		if (j - i >= DL_MIN_RUN)
			runs += j - i;
	}
	struct item *it = nb && 2 * runs >= nb ? malloc(nb * sizeof(*it)) : NULL;
	struct ddtx_dataloop *dl = NULL;
	if (it) {
		size_t ni = vectors(b, nb, it);
		for (unsigned k = 1; k < DDTX_DL_DEPTH; k++)
			ni = nest(it, ni, k);
		/* b[] is read by nothing after vectors(): it holds the loose blocks. */
		dl = emit(it, ni, nb, b);
	}
	free(it);
	free(b);
	return dl;
}

struct ddtx_dataloop *ddtx_dl_vector(size_t block, unsigned ndims, const size_t *counts,
				     const int64_t *strides)
{
	if (!block || !ndims || ndims > DDTX_DL_DEPTH)
		return NULL;
	size_t n = 1;
	for (unsigned l = 0; l < ndims; l++) {
		if (!counts[l] || n > SIZE_MAX / counts[l])
			return NULL;
		n *= counts[l];
	}
	if (n > SIZE_MAX / block)
		return NULL;
	struct ddtx_dataloop *dl = dl_alloc(1, 0, 0);
	if (!dl)
		return NULL;
	struct ddtx_dl_node *nd = &dl->nodes[0];
	nd->kind = DDTX_DL_VECTOR;
	nd->depth = ndims;
	nd->block = block;
	for (unsigned l = 0; l < DDTX_DL_DEPTH; l++) {
		nd->count[l] = l < ndims ? counts[l] : 1;
		nd->stride[l] = l < ndims ? strides[l] : 0;
	}
	nd->n = n;
	nd->bytes = n * block;
	dl->nnodes = 1;
	dl_finish(dl);
	return dl;
}

struct ddtx_dataloop *ddtx_dl_indexed_block(size_t block, const size_t *offsets, size_t count)
{
	if (!block || !count || count > SIZE_MAX / block)
		return NULL;
	struct ddtx_dataloop *dl = dl_alloc(1, count, 0);
	if (!dl)
		return NULL;
	for (size_t i = 0; i < count; i++)
		dl->offs[i] = (int64_t)(offsets[i] - offsets[0]);
	struct ddtx_dl_node *nd = &dl->nodes[0];
	nd->kind = DDTX_DL_INDEXED_BLOCK;
	nd->block = block;
	nd->n = count;
	nd->bytes = count * block;
	dl->nnodes = 1;
	dl_finish(dl);
	return dl;
}

size_t ddtx_dl_blocks_of(const struct ddtx_dataloop *dl, enum ddtx_dl_kind kind)
{
	size_t n = 0;
	for (size_t i = 0; dl && i < dl->nnodes; i++)
		if (dl->nodes[i].kind == kind)
			n += dl->nodes[i].n;
	return n;
}
