/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Freed objects of one kind kept for the next allocation: every message takes a receive
 * object, every tracked send a send object, every pull a pull object, and malloc, free and
 * calloc's clearing were 11% of the samples of a small message's whole path (nc_overhead, one
 * endpoint sending 8 B to itself, 2026-11-27) and about 650 of a 96 KiB rendezvous's 9857
 * instructions (callgrind, 2026-11-29).  Single-threaded: the owner's lock covers it.
 */
#ifndef DDTX_COMMON_SPARES_H
#define DDTX_COMMON_SPARES_H

#include <stdlib.h>
#include <string.h>

#define DDTX_SPARES_MAX 32

struct ddtx_spares {
	void *obj[DDTX_SPARES_MAX];
	unsigned n;
};

/* A zeroed object of size bytes (always the same size for one set): a kept one, else new. */
static inline void *ddtx_spares_get(struct ddtx_spares *s, size_t size)
{
	if (!s->n)
		return calloc(1, size);
	void *o = s->obj[--s->n];
	/* The size hidden from the compiler, so that libc's memset clears it with vector stores:
	 * inlined, a receive object's 424 bytes were a `rep stos`, 16 ns against 5.5 on the AMD
	 * EPYC host and 5% of nc_overhead's 8 B samples (2026-11-27). */
	__asm__("" : "+r"(size));
	memset(o, 0, size);
	return o;
}

static inline void ddtx_spares_put(struct ddtx_spares *s, void *o)
{
	if (!o)
		return;
	if (s->n < DDTX_SPARES_MAX)
		s->obj[s->n++] = o;
	else
		free(o);
}

static inline void ddtx_spares_free(struct ddtx_spares *s)
{
	while (s->n)
		free(s->obj[--s->n]);
}

#endif /* DDTX_COMMON_SPARES_H */
