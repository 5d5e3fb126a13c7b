/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queue.  ddtx has no connection management, so only fi_eq_write puts events here; the
 * EQ still has to exist (fi_ep_bind of an EQ, applications that open one unconditionally) and
 * behave like one: FIFO events, FI_PEEK, an error queue, blocking reads with a timeout.
 */
#include <stdlib.h>
#include <string.h>

#include "core/eq.h"
#include "core/nosys.h"
#include "core/wait.h"

struct eq_event {
	struct ddtx_list_entry entry;
	uint32_t event;
	size_t len;
	uint8_t data[];
};

struct eq_error {
	struct ddtx_list_entry entry;
	struct fi_eq_err_entry err;
};

static ssize_t eq_read(struct fid_eq *fid, uint32_t *event, void *buf, size_t len,
		       uint64_t flags)
{
	struct ddtx_eq *eq = ddtx_container_of(fid, struct ddtx_eq, fid);
	struct eq_event *ev;
	ssize_t ret;

	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	if (!ddtx_list_empty(&eq->errors)) {
		ret = -FI_EAVAIL;
	} else if (ddtx_list_empty(&eq->events)) {
		ret = -FI_EAGAIN;
	} else {
		ev = ddtx_container_of(ddtx_list_first(&eq->events), struct eq_event, entry);
		if (len < ev->len || (ev->len && !buf)) {
			ret = -FI_ETOOSMALL;
		} else {
			if (event)
				*event = ev->event;
			memcpy(buf, ev->data, ev->len);
			ret = (ssize_t)ev->len;
			if (!(flags & FI_PEEK)) {
				ddtx_list_remove(&ev->entry);
				free(ev);
			}
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct ddtx_eq *eq = ddtx_container_of(fid, struct ddtx_eq, fid);
	struct ddtx_list_entry *e;

	if (!buf)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	e = ddtx_list_pop_front(&eq->errors);
	pthread_mutex_unlock(&eq->lock);
	if (!e)
		return -FI_EAGAIN;
	struct eq_error *err = ddtx_container_of(e, struct eq_error, entry);
	*buf = err->err;
	buf->err_data = NULL; /* ddtx errors carry no provider data */
	buf->err_data_size = 0;
	free(err);
	return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *fid, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct ddtx_eq *eq = ddtx_container_of(fid, struct ddtx_eq, fid);
	struct eq_event *ev;

	/* Applications write plain events only; the error queue is fed by the provider. */
	if ((len && !buf) || flags)
		return -FI_EINVAL;
	ev = malloc(sizeof(*ev) + len);
	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	ev->len = len;
	if (len)
		memcpy(ev->data, buf, len);
	pthread_mutex_lock(&eq->lock);
	ddtx_list_push_back(&eq->events, &ev->entry);
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf, size_t len,
			int timeout, uint64_t flags)
{
	uint64_t deadline = timeout >= 0 ? ddtx_now_ms() + (uint64_t)timeout : 0;
	unsigned int spins = 0;
	ssize_t ret;

	for (;;) {
		ret = eq_read(fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		if (timeout >= 0 && ddtx_now_ms() >= deadline)
			return -FI_EAGAIN;
		ddtx_wait_pause(&spins);
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return ddtx_strerror(prov_errno, buf, len);
}

static void eq_drain(struct ddtx_list *l)
{
	struct ddtx_list_entry *e;

	while ((e = ddtx_list_pop_front(l)))
		free(e); /* the list entry is the first member of both node types */
}

static int eq_close(struct fid *fid)
{
	struct ddtx_eq *eq = ddtx_container_of(fid, struct ddtx_eq, fid.fid);

	eq_drain(&eq->events);
	eq_drain(&eq->errors);
	pthread_mutex_destroy(&eq->lock);
	atomic_fetch_sub(&eq->fabric->ref, 1);
	free(eq);
	return 0;
}

static struct fi_ops eq_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = ddtx_nosys_bind,
	.control = ddtx_nosys_control,
	.ops_open = ddtx_nosys_ops_open,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int ddtx_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eqp,
		 void *context)
{
	struct ddtx_fabric *fab;
	struct ddtx_eq *eq;

	if (!fabric || !attr || !eqp || fabric->fid.fclass != FI_CLASS_FABRIC) {
		DDTX_WARN(FI_LOG_EQ, "fi_eq_open: invalid arguments\n");
		return -FI_EINVAL;
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
		break;
	default:
		DDTX_INFO(FI_LOG_EQ, "fi_eq_open: wait object %d not supported\n", attr->wait_obj);
		return -FI_ENOSYS;
	}
	fab = ddtx_container_of(fabric, struct ddtx_fabric, fid);
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->fabric = fab;
	pthread_mutex_init(&eq->lock, NULL);
	ddtx_list_init(&eq->events);
	ddtx_list_init(&eq->errors);
	eq->fid.fid.fclass = FI_CLASS_EQ;
	eq->fid.fid.context = context;
	eq->fid.fid.ops = &eq_fid_ops;
	eq->fid.ops = &eq_ops;
	atomic_fetch_add(&fab->ref, 1);
	*eqp = &eq->fid;
	return 0;
}
