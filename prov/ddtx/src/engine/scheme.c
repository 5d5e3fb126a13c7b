#include "engine/scheme.h"

static enum fi_ddtx_scheme forced(const struct ddtx_settings *set, const struct ddtx_wire_caps *caps)
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

enum fi_ddtx_scheme ddtx_scheme_propose(const struct ddtx_settings *set,
					const struct ddtx_wire_caps *caps,
					const struct ddtx_layout_stats *local)
{
	enum fi_ddtx_scheme s = forced(set, caps);
	if (s != FI_DDTX_SCHEME_COUNT)
		return s;
	return local->avg_block >= set->threshold ? FI_DDTX_SCHEME_SGL : FI_DDTX_SCHEME_PACK;
}

enum fi_ddtx_scheme ddtx_scheme_decide(const struct ddtx_settings *set,
				       const struct ddtx_wire_caps *caps,
				       enum fi_ddtx_scheme proposed,
				       const struct ddtx_layout_stats *sender,
				       const struct ddtx_layout_stats *receiver)
{
	enum fi_ddtx_scheme s = forced(set, caps);
	if (s != FI_DDTX_SCHEME_COUNT)
		return s;
	/* The sender's proposal counts only if it asks for a scheme this wire can run. */
	if (proposed == FI_DDTX_SCHEME_UMR && !caps->max_mkey_entries)
		proposed = FI_DDTX_SCHEME_SGL;
	if (proposed == FI_DDTX_SCHEME_PACK)
		return FI_DDTX_SCHEME_PACK;
	size_t avg = DDTX_MIN(sender->avg_block, receiver->avg_block);
	return avg >= set->threshold ? proposed : FI_DDTX_SCHEME_PACK;
}

size_t ddtx_umr_chunk(size_t max_mkey_entries, size_t sender_min_block, size_t receiver_min_block)
{
	size_t min_block = DDTX_MIN(sender_min_block, receiver_min_block);
	if (!min_block)
		min_block = DDTX_MAX(sender_min_block, receiver_min_block);
	if (!min_block)
		min_block = 1;
	return DDTX_MAX(max_mkey_entries, (size_t)1) * min_block;
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
