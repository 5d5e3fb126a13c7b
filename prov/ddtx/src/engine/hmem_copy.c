/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/hmem_copy.h"

const char *ddtx_hmem_copy_name(enum ddtx_hmem_copy c)
{
	static const char *const names[DDTX_HMEM_COPY_COUNT] = {
		[DDTX_HMEM_COPY_AUTO] = "auto",
		[DDTX_HMEM_COPY_SEGMENTS] = "segments",
		[DDTX_HMEM_COPY_2D] = "2d",
		[DDTX_HMEM_COPY_KERNEL] = "kernel",
	};
	return c < DDTX_HMEM_COPY_COUNT ? names[c] : "?";
}

/* cuMemcpy2D's pitches are at most CU_DEVICE_ATTRIBUTE_MAX_PITCH (2^31 - 1 on every GPU). */
#define MAX_PITCH ((int64_t)0x7fffffff)

void ddtx_hmem_copy_shape_of(const struct iovec *iov, size_t count, const int *device,
			     struct ddtx_hmem_copy_shape *out)
{
	const struct iovec *prev = NULL;
	int dev = -1;

	*out = (struct ddtx_hmem_copy_shape){ .one_device = true, .vector = true };
	for (size_t i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		out->segments++;
		if (device && (device[i] < 0 || (dev >= 0 && device[i] != dev)))
			out->one_device = false;
		dev = device ? device[i] : 0;
		if (!prev) {
			out->block = iov[i].iov_len;
		} else {
			int64_t stride = (int64_t)((uintptr_t)iov[i].iov_base -
						   (uintptr_t)prev->iov_base);
			if (iov[i].iov_len != out->block || stride < (int64_t)out->block ||
			    stride > MAX_PITCH || (out->segments > 2 && stride != out->stride))
				out->vector = false;
			out->stride = stride;
		}
		prev = &iov[i];
		if (!out->vector && (!device || !out->one_device)) {
			/* nothing left to learn but the count: SPECFEM3D_oc's 3225 pieces took
			 * 10.8 us in the whole loop (against the driver stand-in), 1 in this one */
			while (++i < count)
				out->segments += iov[i].iov_len != 0;
			break;
		}
	}
	if (out->segments < 2)
		out->vector = false;
}

void ddtx_hmem_copy_shape_of_vec(size_t n, size_t block, int64_t stride,
				 struct ddtx_hmem_copy_shape *out)
{
	*out = (struct ddtx_hmem_copy_shape){ .segments = n, .one_device = true, .block = block,
					      .stride = n > 1 ? stride : 0 };
	out->vector = n >= 2 && stride >= (int64_t)block && stride <= MAX_PITCH;
}

enum ddtx_hmem_copy ddtx_hmem_copy_choose(const struct ddtx_hmem_copy_shape *s,
					  enum ddtx_hmem_copy forced, bool *fell_back)
{
	bool can_2d = s->one_device && s->vector;
	bool can_kernel = s->one_device && s->kernels && s->segments > 1;

	*fell_back = false;
	switch (forced) {
	case DDTX_HMEM_COPY_SEGMENTS:
		return forced;
	case DDTX_HMEM_COPY_2D:
		if (can_2d)
			return forced;
		*fell_back = true;
		break;
	case DDTX_HMEM_COPY_KERNEL:
		if (can_kernel)
			return forced;
		*fell_back = true;
		break;
	default:
		break;
	}
	/* The cost line: segments pay a call each; 2D one call; a kernel a launch and one call. */
	uint64_t seg = (uint64_t)s->segments * DDTX_HMEM_CALL_NS;
	uint64_t kern = DDTX_HMEM_KERNEL_NS + DDTX_HMEM_CALL_NS;
	if (can_2d && s->segments > 1)
		return DDTX_HMEM_COPY_2D;
	if (can_kernel && kern < seg)
		return DDTX_HMEM_COPY_KERNEL;
	return DDTX_HMEM_COPY_SEGMENTS;
}
