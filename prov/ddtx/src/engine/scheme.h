/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scheme vocabulary shared by both sides: the scheme FI_DDTX_SCHEME forces, the UMR window
 * length, names.  The choice itself (proto/choose.c) uses the layout cache and the cost model.
 */
#ifndef DDTX_SCHEME_H
#define DDTX_SCHEME_H

#include <rdma/fi_ddtx.h>

#include "common/settings.h"
#include "engine/iov.h"
#include "wire/wire.h"

/* The scheme FI_DDTX_SCHEME forces on this wire, or FI_DDTX_SCHEME_COUNT for auto. */
enum fi_ddtx_scheme ddtx_scheme_forced(const struct ddtx_settings *set,
				       const struct ddtx_wire_caps *caps);

/*
 * UMR window length agreed by both sides: (max_mkey_entries - 1) x the smaller of the two
 * minimum block lengths, so each side's window spans at most max_mkey_entries blocks (one fewer
 * than the papers' m x min, which can need m + 1 entries when a window starts inside a block)
 * and both sides cut the byte stream at the same offsets.
 */
size_t ddtx_umr_chunk(size_t max_mkey_entries, size_t sender_min_block, size_t receiver_min_block);

const char *ddtx_scheme_name(enum fi_ddtx_scheme scheme);

#endif /* DDTX_SCHEME_H */
