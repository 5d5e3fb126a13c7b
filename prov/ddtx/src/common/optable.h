/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operation ids carried in protocol headers: an index into a table plus a generation, so a
 * stale, duplicated or forged id from a peer never reaches a freed or reused operation.
 */
#ifndef DDTX_OPTABLE_H
#define DDTX_OPTABLE_H

#include <stddef.h>
#include <stdint.h>

struct ddtx_optable {
	void **ops;
	uint16_t *gen;
	uint32_t *free_list;
	size_t nfree;
	size_t cap;
};

void ddtx_optable_init(struct ddtx_optable *t);
void ddtx_optable_fini(struct ddtx_optable *t);
/* Store op; returns its id, or 0 if out of memory (0 is never a valid id). */
uint32_t ddtx_optable_add(struct ddtx_optable *t, void *op);
/* The op of id, or NULL if the id is not live. */
void *ddtx_optable_get(const struct ddtx_optable *t, uint32_t id);
void ddtx_optable_remove(struct ddtx_optable *t, uint32_t id);

#endif /* DDTX_OPTABLE_H */
