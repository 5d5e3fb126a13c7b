/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iov lists: totals, layout statistics, byte-offset gather/scatter and a cursor that cuts a
 * list into pieces bounded in bytes and entries (the shape of every work request).
 */
#ifndef DDTX_IOV_H
#define DDTX_IOV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/iov_check.h"

/* What the rendezvous exchanges about a layout instead of the layout itself. */
struct ddtx_layout_stats {
	size_t total;       /* bytes */
	size_t nblocks;     /* non-empty entries */
	size_t min_block;   /* smallest non-empty entry, 0 if none */
	size_t avg_block;   /* total / nblocks, 0 if none */
};

size_t ddtx_iov_total(const struct iovec *iov, size_t count);

/* A list that is one vector: n blocks of `block` bytes, `stride` bytes apart, from base. */
struct ddtx_iov_vec {
	uint8_t *base;
	size_t block;
	int64_t stride;
	size_t n;                /* 0: the list is not one vector */
};

/*
 * ddtx_iov_check (same refusals, -FI_EINVAL) and the list's total and shape in one pass: the
 * eager path of a list of small blocks read its entries three to four times (check, total,
 * gather or scatter), and 16 bytes of entry per 8-byte block is most of what it reads.  vec
 * says whether the list is a vector of at least DDTX_IOV_VEC_MIN non-overlapping blocks that
 * the fixed-size kernels can copy without reading the list again (ddtx_vec_gather).
 */
#define DDTX_IOV_VEC_MIN 8
int ddtx_iov_scan_vec(const struct iovec *iov, size_t count, size_t limit, size_t *total,
		      struct ddtx_iov_vec *vec);

/* Short lists (most messages: one buffer) are no vector: checked in line, without the
 * vector scan's set-up (38 instructions of each 8 B message's send and receive). */
static inline int ddtx_iov_scan(const struct iovec *iov, size_t count, size_t limit,
				size_t *total, struct ddtx_iov_vec *vec)
{
	if (count >= DDTX_IOV_VEC_MIN)
		return ddtx_iov_scan_vec(iov, count, limit, total, vec);
	vec->n = 0;
	return ddtx_iov_check(iov, count, limit, total);
}
void ddtx_layout_stats(const struct iovec *iov, size_t count, struct ddtx_layout_stats *st);

/* Copy len bytes from contiguous src into the list starting at byte offset; returns bytes copied
 * (less than len if the list ends first). */
size_t ddtx_iov_scatter(const struct iovec *iov, size_t count, size_t offset, const void *src,
			size_t len);
/* Copy len bytes of the list starting at byte offset into contiguous dst; returns bytes copied. */
size_t ddtx_iov_gather(const struct iovec *iov, size_t count, size_t offset, void *dst, size_t len);

struct ddtx_iov_cursor {
	const struct iovec *iov;
	size_t count;
	size_t idx;         /* current entry */
	size_t off;         /* bytes of iov[idx] already consumed */
	size_t pos;         /* bytes consumed in all */
};

void ddtx_iov_cursor_init(struct ddtx_iov_cursor *c, const struct iovec *iov, size_t count);
/* Position the cursor at byte offset from the start of the list. */
void ddtx_iov_cursor_seek(struct ddtx_iov_cursor *c, size_t offset);
/*
 * Take the next piece: at most max_bytes bytes in at most max_entries entries (empty entries
 * are skipped, not counted).  Fills out[0..*nout) and returns the bytes taken (0 at the end).
 */
size_t ddtx_iov_cursor_take(struct ddtx_iov_cursor *c, size_t max_bytes, size_t max_entries,
			    struct iovec *out, size_t *nout);
/* Entries (non-empty) that the next max_bytes bytes span, without moving the cursor. */
size_t ddtx_iov_cursor_entries(const struct ddtx_iov_cursor *c, size_t max_bytes);
static inline bool ddtx_iov_cursor_done(const struct ddtx_iov_cursor *c)
{
	return c->idx >= c->count;
}

#endif /* DDTX_IOV_H */
