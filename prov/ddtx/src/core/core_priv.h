/*
 * Helpers shared by the object files of core/ (not part of the contract with proto).
 */
#ifndef DDTX_CORE_PRIV_H
#define DDTX_CORE_PRIV_H

#include "core/core.h"

/* The fi_ops tables of an endpoint's data calls (msg.c, tagged.c, rma.c). */
extern struct fi_ops_msg ddtx_msg_ops;
extern struct fi_ops_tagged ddtx_tagged_ops;
extern struct fi_ops_rma ddtx_rma_ops;

/* Stubs for fid operations an object does not support. */
int ddtx_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int ddtx_nosys_control(struct fid *fid, int command, void *arg);
int ddtx_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			void *context);

/* fi_cq_strerror / fi_eq_strerror: prov_errno is an FI_E* value (either sign). */
const char *ddtx_strerror(int prov_errno, char *buf, size_t len);

/* The ddtx domain behind a fid_domain, or NULL (with a warning) if it is not one. */
struct ddtx_domain *ddtx_domain_of(struct fid_domain *domain);
/* The ddtx object behind a fid, or NULL if the fid is not one (e.g. another provider's). */
struct ddtx_av *ddtx_av_from_fid(struct fid *fid);
struct ddtx_cq *ddtx_cq_from_fid(struct fid *fid);
struct ddtx_cntr *ddtx_cntr_from_fid(struct fid *fid);

static inline void ddtx_domain_lock(struct ddtx_domain *d)
{
	pthread_mutex_lock(&d->lock);
}

static inline void ddtx_domain_unlock(struct ddtx_domain *d)
{
	pthread_mutex_unlock(&d->lock);
}

/* Sleep briefly inside a blocking wait (sread, cntr wait): the peer needs the CPU too. */
void ddtx_wait_pause(unsigned int *spins);
/* Milliseconds on a monotonic clock. */
#define ddtx_now_ms() (ddtx_time_ns() / 1000000)

#endif /* DDTX_CORE_PRIV_H */
