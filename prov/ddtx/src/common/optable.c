/* SPDX-License-Identifier: BSD-2-Clause */
#include "common/optable.h"

#include <stdlib.h>

#define IDX_BITS 20
#define IDX_MASK ((1u << IDX_BITS) - 1)
#define MAX_OPS ((size_t)IDX_MASK)

void ddtx_optable_init(struct ddtx_optable *t)
{
	t->ops = NULL;
	t->gen = NULL;
	t->free_list = NULL;
	t->nfree = 0;
	t->cap = 0;
}

void ddtx_optable_fini(struct ddtx_optable *t)
{
	free(t->ops);
	free(t->gen);
	free(t->free_list);
	ddtx_optable_init(t);
}

static int grow(struct ddtx_optable *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	if (ncap > MAX_OPS)
		ncap = MAX_OPS;
	if (ncap <= t->cap)
		return -1;
	void **ops = realloc(t->ops, ncap * sizeof(*ops));
	if (!ops)
		return -1;
	t->ops = ops;
	uint16_t *gen = realloc(t->gen, ncap * sizeof(*gen));
	if (!gen)
		return -1;
	t->gen = gen;
	uint32_t *fl = realloc(t->free_list, ncap * sizeof(*fl));
	if (!fl)
		return -1;
	t->free_list = fl;
	/* Index 0 is never handed out so that id 0 means "none". */
	for (size_t i = ncap; i-- > t->cap;) {
		t->ops[i] = NULL;
		t->gen[i] = 1;
		if (i)
			t->free_list[t->nfree++] = (uint32_t)i;
	}
	t->cap = ncap;
	return 0;
}

uint32_t ddtx_optable_add(struct ddtx_optable *t, void *op)
{
	if (!t->nfree && grow(t))
		return 0;
	uint32_t idx = t->free_list[--t->nfree];
	t->ops[idx] = op;
	return ((uint32_t)(t->gen[idx] & 0xfff) << IDX_BITS) | idx;
}

void *ddtx_optable_get(const struct ddtx_optable *t, uint32_t id)
{
	uint32_t idx = id & IDX_MASK;
	if (!idx || idx >= t->cap || (t->gen[idx] & 0xfff) != id >> IDX_BITS)
		return NULL;
	return t->ops[idx];
}

void ddtx_optable_remove(struct ddtx_optable *t, uint32_t id)
{
	uint32_t idx = id & IDX_MASK;
	if (!ddtx_optable_get(t, id))
		return;
	t->ops[idx] = NULL;
	t->gen[idx] = (uint16_t)((t->gen[idx] + 1) & 0xfff);
	if (!t->gen[idx])
		t->gen[idx] = 1;
	t->free_list[t->nfree++] = idx;
}
