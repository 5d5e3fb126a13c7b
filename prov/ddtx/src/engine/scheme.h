/*
 * Scheme selection: the sender proposes a scheme in the RTS from its own layout, the receiver
 * decides in the CTS from both.  For now "auto" is the papers' block-length rule (zero copy when
 * both sides' average block is at least FI_DDTX_THRESHOLD); FI_DDTX_SCHEME forces a scheme.
 */
#ifndef DDTX_SCHEME_H
#define DDTX_SCHEME_H

#include <rdma/fi_ddtx.h>

#include "ddtx.h"
#include "engine/iov.h"
#include "wire/wire.h"

enum fi_ddtx_scheme ddtx_scheme_propose(const struct ddtx_settings *set,
					const struct ddtx_wire_caps *caps,
					const struct ddtx_layout_stats *local);
enum fi_ddtx_scheme ddtx_scheme_decide(const struct ddtx_settings *set,
				       const struct ddtx_wire_caps *caps,
				       enum fi_ddtx_scheme proposed,
				       const struct ddtx_layout_stats *sender,
				       const struct ddtx_layout_stats *receiver);

/*
 * UMR window length agreed by both sides: max_mkey_entries x the smaller of the two minimum
 * block lengths, so each side's window spans about max_mkey_entries blocks and both sides cut
 * the byte stream at the same offsets.
 */
size_t ddtx_umr_chunk(size_t max_mkey_entries, size_t sender_min_block, size_t receiver_min_block);

const char *ddtx_scheme_name(enum fi_ddtx_scheme scheme);

#endif /* DDTX_SCHEME_H */
