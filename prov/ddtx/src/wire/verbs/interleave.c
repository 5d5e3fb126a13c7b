/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Strided layout detection for mlx5dv_wr_mr_interleaved (pure).
 *
 * An interleaved UMR describes p entries {addr, bytes_count, bytes_skip, lkey} repeated
 * repeat_count times: repetition k reads entry j at addr_j + k * (bytes_count_j + bytes_skip_j).
 * A vector datatype of n blocks thus needs one entry instead of n, and a struct-of-vectors a
 * handful.  The byte count and the stride are 16-bit fields of the work request; anything that
 * does not fit, or is not exactly periodic, is mapped as a list instead.
 */
#include <rdma/fi_errno.h>

#include "wire/verbs/verbs_pure.h"

/* Does e[0..n) repeat the first p entries with the strides e[p + j].addr - e[j].addr? */
static bool is_period(const struct ddtx_vsge *e, size_t n, size_t p)
{
	uint64_t per_rep = 0;

	for (size_t j = 0; j < p; j++) {
		uint64_t len = e[j].length;
		uint64_t stride;

		if (!len || len > DDTX_VINTERLEAVE_MAX_FIELD || e[p + j].addr < e[j].addr)
			return false;
		stride = e[p + j].addr - e[j].addr;
		if (stride < len || stride > DDTX_VINTERLEAVE_MAX_FIELD)
			return false;
		per_rep += len;
		for (size_t k = 1; k * p < n; k++) {
			const struct ddtx_vsge *x = &e[k * p + j];
			if (x->length != e[j].length || x->lkey != e[j].lkey ||
			    x->addr != e[j].addr + k * stride)
				return false;
		}
	}
	/* One mkey covers less than 2 GiB (the length is summed in an int). */
	return per_rep * (n / p) < ((uint64_t)1 << 31);
}

size_t ddtx_vinterleave_detect(const struct ddtx_vsge *e, size_t n, size_t max_pattern,
			       struct ddtx_vinterleave *out, uint32_t *repeat)
{
	if (!e || !out || !repeat || n < 2 || n > UINT32_MAX)
		return 0;
	for (size_t p = 1; p <= max_pattern && p <= n / 2; p++) {
		if (n % p || !is_period(e, n, p))
			continue;
		for (size_t j = 0; j < p; j++) {
			out[j].addr = e[j].addr;
			out[j].bytes_count = e[j].length;
			out[j].bytes_skip = (uint32_t)(e[p + j].addr - e[j].addr - e[j].length);
			out[j].lkey = e[j].lkey;
		}
		*repeat = (uint32_t)(n / p);
		return p;
	}
	return 0;
}
