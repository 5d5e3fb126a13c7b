/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion counters (FI_CNTR_EVENTS_COMP).  Values are atomics so reads need no lock;
 * reading and waiting drive progress, since ddtx has no progress thread.
 */
#include <stdlib.h>

#include "core/cntr.h"
#include "core/nosys.h"
#include "core/wait.h"

void ddtx_cntr_inc(struct ddtx_cntr *cntr)
{
	if (cntr)
		atomic_fetch_add(&cntr->value, 1);
}

void ddtx_cntr_err_inc(struct ddtx_cntr *cntr)
{
	if (cntr)
		atomic_fetch_add(&cntr->err, 1);
}

static struct ddtx_cntr *cntr_of(struct fid_cntr *fid)
{
	return ddtx_container_of(fid, struct ddtx_cntr, fid);
}

static uint64_t cntr_read(struct fid_cntr *fid)
{
	struct ddtx_cntr *cntr = cntr_of(fid);

	ddtx_domain_progress(cntr->domain);
	return atomic_load(&cntr->value);
}

static uint64_t cntr_readerr(struct fid_cntr *fid)
{
	struct ddtx_cntr *cntr = cntr_of(fid);

	ddtx_domain_progress(cntr->domain);
	return atomic_load(&cntr->err);
}

static int cntr_add(struct fid_cntr *fid, uint64_t value)
{
	atomic_fetch_add(&cntr_of(fid)->value, value);
	return 0;
}

static int cntr_set(struct fid_cntr *fid, uint64_t value)
{
	atomic_store(&cntr_of(fid)->value, value);
	return 0;
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t value)
{
	atomic_fetch_add(&cntr_of(fid)->err, value);
	return 0;
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t value)
{
	atomic_store(&cntr_of(fid)->err, value);
	return 0;
}

/* Poll progress until the threshold is reached, an error is counted, or the time is up. */
static int cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
	struct ddtx_cntr *cntr = cntr_of(fid);
	uint64_t deadline = timeout >= 0 ? ddtx_now_ms() + (uint64_t)timeout : 0;
	uint64_t err0 = atomic_load(&cntr->err);
	unsigned int spins = 0;

	for (;;) {
		ddtx_domain_progress(cntr->domain);
		if (atomic_load(&cntr->value) >= threshold)
			return 0;
		if (atomic_load(&cntr->err) != err0)
			return -FI_EAVAIL;
		if (timeout >= 0 && ddtx_now_ms() >= deadline)
			return -FI_ETIMEDOUT;
		ddtx_wait_pause(&spins);
	}
}

static int cntr_close(struct fid *fid)
{
	struct ddtx_cntr *cntr = ddtx_container_of(fid, struct ddtx_cntr, fid.fid);

	if (atomic_load(&cntr->ref) > 0) {
		DDTX_WARN(FI_LOG_CNTR, "counter still bound to %d endpoints\n",
			  atomic_load(&cntr->ref));
		return -FI_EBUSY;
	}
	atomic_fetch_sub(&cntr->domain->ref, 1);
	free(cntr);
	return 0;
}

static struct fi_ops cntr_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = ddtx_nosys_bind,
	.control = ddtx_nosys_control,
	.ops_open = ddtx_nosys_ops_open,
};

struct ddtx_cntr *ddtx_cntr_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_CNTR || fid->ops != &cntr_fid_ops)
		return NULL;
	return ddtx_container_of(fid, struct ddtx_cntr, fid.fid);
}

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int ddtx_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntrp, void *context)
{
	struct ddtx_domain *domain = ddtx_domain_of(domain_fid);
	struct ddtx_cntr *cntr;
	enum fi_wait_obj wait_obj = attr ? attr->wait_obj : FI_WAIT_UNSPEC;

	if (!domain || !cntrp)
		return -FI_EINVAL;
	if (attr && (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)) {
		DDTX_WARN(FI_LOG_CNTR, "fi_cntr_open: only FI_CNTR_EVENTS_COMP, no flags\n");
		return -FI_EINVAL;
	}
	if (wait_obj != FI_WAIT_NONE && wait_obj != FI_WAIT_UNSPEC && wait_obj != FI_WAIT_YIELD) {
		DDTX_INFO(FI_LOG_CNTR, "fi_cntr_open: wait object %d not supported\n", wait_obj);
		return -FI_ENOSYS;
	}
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	cntr->domain = domain;
	atomic_init(&cntr->ref, 0);
	atomic_init(&cntr->value, 0);
	atomic_init(&cntr->err, 0);
	/* Waiting polls progress either way, so even FI_WAIT_NONE counters may fi_cntr_wait. */
	cntr->wait_obj = wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_YIELD : wait_obj;
	cntr->fid.fid.fclass = FI_CLASS_CNTR;
	cntr->fid.fid.context = context;
	cntr->fid.fid.ops = &cntr_fid_ops;
	cntr->fid.ops = &cntr_ops;
	atomic_fetch_add(&domain->ref, 1);
	*cntrp = &cntr->fid;
	return 0;
}
