/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/scheme.h"
#include "common/minmax.h"

enum fi_ddtx_scheme ddtx_scheme_forced(const struct ddtx_settings *set,
				       const struct ddtx_wire_caps *caps)
{
	switch (set->scheme) {
	case DDTX_SCHEME_SETTING_PACK:
		return FI_DDTX_SCHEME_PACK;
	case DDTX_SCHEME_SETTING_SGL:
		return FI_DDTX_SCHEME_SGL;
	case DDTX_SCHEME_SETTING_UMR:
		/* A wire without multi-entry keys falls back to descriptor lists. */
		return caps->max_mkey_entries ? FI_DDTX_SCHEME_UMR : FI_DDTX_SCHEME_SGL;
	default:
		return FI_DDTX_SCHEME_COUNT;
	}
}

size_t ddtx_umr_chunk(size_t max_mkey_entries, size_t sender_min_block, size_t receiver_min_block)
{
	size_t min_block = DDTX_MIN(sender_min_block, receiver_min_block);
	if (!min_block)
		min_block = DDTX_MAX(sender_min_block, receiver_min_block);
	if (!min_block)
		min_block = 1;
	/* A window of (m - 1) x min bytes touches at most m blocks even when it starts inside one,
	 * so it always fits one mkey; m x min could need m + 1 entries. */
	return (DDTX_MAX(max_mkey_entries, (size_t)2) - 1) * min_block;
}

const char *ddtx_scheme_name(enum fi_ddtx_scheme scheme)
{
	static const char *const names[FI_DDTX_SCHEME_COUNT] = {
		[FI_DDTX_SCHEME_EAGER] = "eager", [FI_DDTX_SCHEME_PACK] = "pack",
		[FI_DDTX_SCHEME_SGL] = "sgl",     [FI_DDTX_SCHEME_UMR] = "umr",
		[FI_DDTX_SCHEME_RMA] = "rma",
	};
	return (unsigned)scheme < FI_DDTX_SCHEME_COUNT ? names[scheme] : "unknown";
}
