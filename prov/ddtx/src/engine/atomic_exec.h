/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The atomic executor: libfabric's atomic operations (enum fi_op) on its datatypes (enum
 * fi_datatype, the 1.17 set with the 128-bit integers) applied to memory of this process.  The
 * target of an atomic runs it on the request of a peer (proto/atomic.c); the caller provides the
 * mutual exclusion (the domain lock) and has checked the request against its registrations.
 * Pure computation: no floor below is called.
 */
#ifndef DDTX_ATOMIC_EXEC_H
#define DDTX_ATOMIC_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The three families of fi_atomic(3), each with its own set of valid operations. */
enum ddtx_atomic_kind {
	DDTX_ATOMIC_WRITE = 0,   /* fi_atomic: update, nothing returned */
	DDTX_ATOMIC_FETCH = 1,   /* fi_fetch_atomic: update, old values returned */
	DDTX_ATOMIC_COMPARE = 2, /* fi_compare_atomic: conditional update, old values returned */
	DDTX_ATOMIC_KIND_MAX,
};

/* Bytes of one element of datatype, 0 for a datatype ddtx does not execute. */
size_t ddtx_atomic_type_size(uint32_t datatype);

/* Is op on datatype one of kind's operations (as libfabric's own providers define them)? */
bool ddtx_atomic_valid(enum ddtx_atomic_kind kind, uint32_t datatype, uint32_t op);

/* Does op read an operand (buf) and a compare operand? */
bool ddtx_atomic_has_operand(uint32_t op);
bool ddtx_atomic_has_compare(uint32_t op);

/*
 * Apply op to count elements at dst, element by element: operand i is src's, compare value i
 * cmp's (each NULL where the op takes none), and old (NULL if not wanted) receives the value each
 * element had before.  Memory need not be aligned.  The op/datatype pair must be valid.
 */
void ddtx_atomic_apply(uint32_t op, uint32_t datatype, void *dst, const void *src,
		       const void *cmp, void *old, size_t count);

#endif /* DDTX_ATOMIC_EXEC_H */
