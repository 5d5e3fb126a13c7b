/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/pack.h"

#include "engine/dataloop.h"
#include "engine/iov.h"
#include "engine/layout.h"

size_t ddtx_pack_gather(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
			const struct iovec *iov, size_t count, size_t offset, void *dst, size_t len)
{
	const struct ddtx_dataloop *dl = l ? ddtx_layout_dataloop(lc, l) : NULL;
	if (dl)
		return ddtx_dl_gather(dl, (const void *)l->base, offset, dst, len);
	return ddtx_iov_gather(iov, count, offset, dst, len);
}

size_t ddtx_pack_scatter(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
			 const struct iovec *iov, size_t count, size_t offset, const void *src,
			 size_t len)
{
	const struct ddtx_dataloop *dl = l ? ddtx_layout_dataloop(lc, l) : NULL;
	if (dl)
		return ddtx_dl_scatter(dl, (void *)l->base, offset, src, len);
	return ddtx_iov_scatter(iov, count, offset, src, len);
}
