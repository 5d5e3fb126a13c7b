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

/* What the rendezvous exchanges about a layout instead of the layout itself. */
struct ddtx_layout_stats {
	size_t total;       /* bytes */
	size_t nblocks;     /* non-empty entries */
	size_t min_block;   /* smallest non-empty entry, 0 if none */
	size_t avg_block;   /* total / nblocks, 0 if none */
};

size_t ddtx_iov_total(const struct iovec *iov, size_t count);
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
