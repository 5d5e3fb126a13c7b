/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DMA engine of the software HCA: cross-memory attach (process_vm_writev / readv) with iov
 * lists on both sides.  One call takes at most IOV_MAX entries per side and well under
 * SSIZE_MAX bytes and may stop short (at an iovec boundary or at a fault), so a transfer is
 * a loop of calls over two cursors that advance by what each call moved.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "fault.h"
#include "shm.h"

struct cursor {
	const struct iovec *iov;
	size_t count;
	size_t i;                                /* current entry */
	size_t off;                              /* bytes of it already moved */
};

/* Fill out[] from the cursor with at most budget bytes; returns the bytes taken. */
static size_t cursor_fill(const struct cursor *c, struct iovec *out, size_t *n, size_t budget)
{
	size_t i = c->i, off = c->off, taken = 0;

	*n = 0;
	while (i < c->count && *n < DDTX_SHM_CMA_IOV_MAX && taken < budget) {
		size_t rem = c->iov[i].iov_len - off;
		if (rem) {
			size_t take = DDTX_MIN(rem, budget - taken);
			out[*n].iov_base = (uint8_t *)c->iov[i].iov_base + off;
			out[*n].iov_len = take;
			(*n)++;
			taken += take;
		}
		i++;
		off = 0;
	}
	return taken;
}

static void cursor_advance(struct cursor *c, size_t n)
{
	while (n && c->i < c->count) {
		size_t rem = c->iov[c->i].iov_len - c->off;
		if (n < rem) {
			c->off += n;
			return;
		}
		n -= rem;
		c->i++;
		c->off = 0;
	}
	while (c->i < c->count && c->iov[c->i].iov_len == c->off) {
		c->i++;
		c->off = 0;
	}
}

/* Cut a filled list down to exactly n bytes. */
static void trim(struct iovec *v, size_t *cnt, size_t n)
{
	size_t sum = 0;

	for (size_t i = 0; i < *cnt; i++) {
		if (sum + v[i].iov_len >= n) {
			v[i].iov_len = n - sum;
			*cnt = i + 1;
			return;
		}
		sum += v[i].iov_len;
	}
}

/* One CMA call; in the test build the fault plan may fail it or cut it short first. */
static ssize_t fault_or_move(pid_t pid, bool write, struct iovec *lv, size_t *nl,
			     struct iovec *rv, size_t *nr)
{
	struct ddtx_shm_fault f = ddtx_shm_fault_hit(write ? DDTX_SHM_FP_DMA_WRITE :
							    DDTX_SHM_FP_DMA_READ, -1);
	switch (f.action) {
	case DDTX_SHM_FA_ERRNO:
		errno = (int)f.arg;
		return -1;
	case DDTX_SHM_FA_DIE:
		ddtx_shm_fault_die(write ? "before a process_vm_writev" : "before a process_vm_readv");
		break;
	case DDTX_SHM_FA_SHORT: {
		size_t half = 0;
		for (size_t i = 0; i < *nl; i++)
			half += lv[i].iov_len;
		half /= 2;
		if (half) {
			trim(lv, nl, half);
			trim(rv, nr, half);
		}
		break;
	}
	default:
		break;
	}
	return write ? process_vm_writev(pid, lv, *nl, rv, *nr, 0)
		     : process_vm_readv(pid, lv, *nl, rv, *nr, 0);
}

int ddtx_shm_dma(pid_t pid, bool write, const struct iovec *local, size_t lcount,
		 const struct iovec *remote, size_t rcount, size_t len)
{
	struct iovec lv[DDTX_SHM_CMA_IOV_MAX], rv[DDTX_SHM_CMA_IOV_MAX];
	struct cursor lc = { local, lcount, 0, 0 }, rc = { remote, rcount, 0, 0 };
	size_t done = 0, nl, nr;

	while (done < len) {
		size_t budget = DDTX_MIN(len - done, DDTX_SHM_CMA_MAX_BYTES);
		size_t lb = cursor_fill(&lc, lv, &nl, budget);
		size_t rb = cursor_fill(&rc, rv, &nr, lb);
		ssize_t r;

		if (!lb || !rb) {
			DDTX_WARN(FI_LOG_EP_DATA, "shm: iov lists shorter than the %zu bytes to move\n",
				  len);
			return -FI_EINVAL;
		}
		if (rb < lb)
			trim(lv, &nl, rb);
		r = fault_or_move(pid, write, lv, &nl, rv, &nr);
		if (r < 0) {
			int err = errno;
			if (err == EINTR)
				continue;
			if (err == ESRCH || err == EPERM) {
				/* the caller decides with a liveness check whether the peer is gone */
				DDTX_WARN(FI_LOG_EP_DATA, "shm: process_vm_%sv to pid %d failed: %s\n",
					  write ? "write" : "read", (int)pid, strerror(err));
				return err == ESRCH ? -DDTX_SHM_ESRCH : -FI_EPERM;
			}
			DDTX_WARN(FI_LOG_EP_DATA, "shm: process_vm_%sv to pid %d failed after %zu of "
				  "%zu bytes: %s\n", write ? "write" : "read", (int)pid, done, len,
				  strerror(err));
			return err == EFAULT ? -FI_EFAULT : err == ENOMEM ? -FI_ENOMEM : -FI_EIO;
		}
		if (r == 0) {
			DDTX_WARN(FI_LOG_EP_DATA, "shm: process_vm_%sv to pid %d made no progress\n",
				  write ? "write" : "read", (int)pid);
			return -FI_EIO;
		}
		done += (size_t)r;
		cursor_advance(&lc, (size_t)r);
		cursor_advance(&rc, (size_t)r);
	}
	return 0;
}
