/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_av: peer addresses by fi_addr_t, and back (FI_SOURCE). */
#ifndef DDTX_CORE_AV_H
#define DDTX_CORE_AV_H

#include "common/hindex.h"
#include "core/domain.h"

/* Address vector: blobs of peer wire addresses, indexed by fi_addr_t for both AV types. */
struct ddtx_av_entry {
	bool valid;
	uint8_t addr[64];
	size_t addr_len;
};

struct ddtx_av {
	struct fid_av fid;
	struct ddtx_domain *domain;
	atomic_int ref;                  /* endpoints bound */
	enum fi_av_type type;
	size_t addrlen;
	struct ddtx_av_entry *entries;
	size_t count;                    /* entries used (next index) */
	size_t capacity;
	struct ddtx_hindex index;        /* blob -> fi_addr (FI_SOURCE, duplicate inserts) */
	uint64_t generation;             /* bumped on remove: endpoint caches revalidate */
};

/* Look up fi_addr by address blob; FI_ADDR_NOTAVAIL if absent.  Caller holds domain lock. */
fi_addr_t ddtx_av_reverse(struct ddtx_av *av, const void *addr, size_t len);
/* The blob of fi_addr, or NULL if invalid.  Caller holds domain lock. */
const struct ddtx_av_entry *ddtx_av_get(struct ddtx_av *av, fi_addr_t addr);

int ddtx_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		 void *context);
/* The ddtx AV behind a fid, or NULL if the fid is not one (e.g. another provider's). */
struct ddtx_av *ddtx_av_from_fid(struct fid *fid);

#endif /* DDTX_CORE_AV_H */
