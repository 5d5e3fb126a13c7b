/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_poll(3): a set of CQs and counters of one domain.  fi_poll progresses the domain (ddtx has
 * manual progress only) and returns the context of every CQ holding completions or errors and of
 * every counter whose value or error count changed since the set last reported it.  A member is
 * referenced like a bound endpoint references it: it cannot be closed while in a set.
 */
#include "core/poll.h"

#include <stdlib.h>

#include "common/log.h"
#include "core/cntr.h"
#include "core/cq.h"
#include "core/domain.h"
#include "core/nosys.h"

struct ddtx_poll_member {
	struct ddtx_cq *cq;              /* one of cq, cntr */
	struct ddtx_cntr *cntr;
	uint64_t seen_value, seen_err;   /* counter: what the set reported last */
};

struct ddtx_poll {
	struct fid_poll fid;
	struct ddtx_domain *domain;
	struct ddtx_poll_member *m;
	size_t n, cap;
};

static struct ddtx_poll *poll_of(struct fid_poll *p)
{
	return ddtx_container_of(p, struct ddtx_poll, fid);
}

static int poll_poll(struct fid_poll *pollset, void **context, int count)
{
	struct ddtx_poll *ps = poll_of(pollset);
	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	ddtx_domain_progress(ps->domain);
	int n = 0;
	ddtx_domain_lock(ps->domain);
	for (size_t i = 0; i < ps->n && n < count; i++) {
		struct ddtx_poll_member *m = &ps->m[i];
		if (m->cq) {
			if (m->cq->count || !ddtx_list_empty(&m->cq->errors))
				context[n++] = m->cq->fid.fid.context;
			continue;
		}
		uint64_t v = atomic_load(&m->cntr->value), e = atomic_load(&m->cntr->err);
		if (v != m->seen_value || e != m->seen_err) {
			m->seen_value = v;
			m->seen_err = e;
			context[n++] = m->cntr->fid.fid.context;
		}
	}
	ddtx_domain_unlock(ps->domain);
	return n;
}

static int poll_add(struct fid_poll *pollset, struct fid *event_fid, uint64_t flags)
{
	struct ddtx_poll *ps = poll_of(pollset);
	struct ddtx_poll_member m = {0};
	if (flags || !event_fid)
		return -FI_EINVAL;
	m.cq = ddtx_cq_from_fid(event_fid);
	m.cntr = m.cq ? NULL : ddtx_cntr_from_fid(event_fid);
	if (!m.cq && !m.cntr) {
		DDTX_WARN(FI_LOG_DOMAIN, "fi_poll_add: not a ddtx CQ or counter\n");
		return -FI_EINVAL;
	}
	if ((m.cq ? m.cq->domain : m.cntr->domain) != ps->domain)
		return -FI_EINVAL;
	ddtx_domain_lock(ps->domain);
	int ret = 0;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->m[i].cq == m.cq && ps->m[i].cntr == m.cntr)
			ret = -FI_EALREADY;
	if (!ret && ps->n == ps->cap) {
		size_t ncap = ps->cap ? 2 * ps->cap : 4;
		struct ddtx_poll_member *v = realloc(ps->m, ncap * sizeof(*v));
		if (v) {
			ps->m = v;
			ps->cap = ncap;
		} else {
			ret = -FI_ENOMEM;
		}
	}
	if (!ret) {
		if (m.cntr) {
			m.seen_value = atomic_load(&m.cntr->value);
			m.seen_err = atomic_load(&m.cntr->err);
		}
		atomic_fetch_add(m.cq ? &m.cq->ref : &m.cntr->ref, 1);
		ps->m[ps->n++] = m;
	}
	ddtx_domain_unlock(ps->domain);
	return ret;
}

static void member_release(struct ddtx_poll_member *m)
{
	atomic_fetch_sub(m->cq ? &m->cq->ref : &m->cntr->ref, 1);
}

static int poll_del(struct fid_poll *pollset, struct fid *event_fid, uint64_t flags)
{
	struct ddtx_poll *ps = poll_of(pollset);
	if (flags || !event_fid)
		return -FI_EINVAL;
	int ret = -FI_ENOENT;
	ddtx_domain_lock(ps->domain);
	for (size_t i = 0; i < ps->n; i++) {
		struct ddtx_poll_member *m = &ps->m[i];
		if ((m->cq && &m->cq->fid.fid == event_fid) ||
		    (m->cntr && &m->cntr->fid.fid == event_fid)) {
			member_release(m);
			ps->m[i] = ps->m[--ps->n];
			ret = 0;
			break;
		}
	}
	ddtx_domain_unlock(ps->domain);
	return ret;
}

static int poll_close(struct fid *fid)
{
	struct ddtx_poll *ps = ddtx_container_of(fid, struct ddtx_poll, fid.fid);
	for (size_t i = 0; i < ps->n; i++)
		member_release(&ps->m[i]);
	atomic_fetch_sub(&ps->domain->ref, 1);
	free(ps->m);
	free(ps);
	return 0;
}

static struct fi_ops poll_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = poll_close,
	.bind = ddtx_nosys_bind,
	.control = ddtx_nosys_control,
	.ops_open = ddtx_nosys_ops_open,
};

static struct fi_ops_poll poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = poll_poll,
	.poll_add = poll_add,
	.poll_del = poll_del,
};

int ddtx_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset)
{
	struct ddtx_domain *d = ddtx_domain_of(domain);
	if (!d || !pollset || (attr && attr->flags))
		return -FI_EINVAL;
	struct ddtx_poll *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ps->domain = d;
	ps->fid.fid.fclass = FI_CLASS_POLL;
	ps->fid.fid.ops = &poll_fid_ops;
	ps->fid.ops = &poll_ops;
	atomic_fetch_add(&d->ref, 1);
	*pollset = &ps->fid;
	return 0;
}
