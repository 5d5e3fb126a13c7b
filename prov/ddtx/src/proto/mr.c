/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Application memory registration: a key in the wire domain's key table, in the application key
 * space (DDTX_KEY_APP), with libfabric's access bits translated into the wire's.
 *
 * The key is revoked when the memory monitor sees the registration's memory go away
 * (engine/mr_watch.h): the registration is removed from the wire's key table and, where the
 * wire accepts one, an empty registration without access rights takes the same key, so the key
 * stays taken until fi_close (a caller-chosen key cannot be registered twice) and a peer's RMA
 * with it fails (-FI_EACCES; -FI_EKEYREJECTED where no placeholder could be made).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/mr_watch.h"
#include "hmem/hmem.h"
#include "proto/proto_internal.h"

struct ddtx_proto_mr {
	struct ddtx_proto_domain *pd;
	struct ddtx_list_entry entry;    /* ddtx_proto_domain.app_mrs */
	struct iovec *iov;               /* the registered memory, for atomics executed here */
	size_t count;
	ddtx_proto_mr_event_fn on_event; /* FI_RMA_EVENT counters bound to the MR (fi_mr_bind) */
	void *event_arg;
	struct ddtx_wire_mr *wmr;        /* the registration, the placeholder, or NULL */
	struct ddtx_mr_watched *watched;
	uint64_t key;
	uint64_t iova;
	bool revoked;
	uint64_t *buffer_ids;            /* CUDA MRs: each segment's allocation at registration */
};

#define FI_MR_ACCESS_BITS                                                                        \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static uint32_t wire_access(uint64_t access)
{
	uint32_t acc = 0;

	if (!(access & FI_MR_ACCESS_BITS))
		access = FI_SEND | FI_RECV | FI_READ | FI_WRITE; /* 0: local use only */
	if (access & (FI_READ | FI_SEND))
		acc |= DDTX_ACC_LOCAL_READ;
	if (access & (FI_WRITE | FI_RECV))
		acc |= DDTX_ACC_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		acc |= DDTX_ACC_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		acc |= DDTX_ACC_REMOTE_WRITE;
	return acc;
}

/* mr_watch's gone(): the memory this key was made for is no longer mapped there. */
static void mr_revoke(void *arg)
{
	struct ddtx_proto_mr *mr = arg;
	struct ddtx_proto_domain *pd = mr->pd;
	int ret;

	if (mr->revoked)
		return;
	mr->revoked = true;
	ret = ddtx_wire_mr_dereg(pd->wire, mr->wmr);
	if (ret) {
		/* Still registered: keep it, so fi_close tries again; peers keep access. */
		DDTX_WARN(FI_LOG_MR, "fi_mr key %#llx: revoking failed: %s\n",
			  (unsigned long long)mr->key, fi_strerror(-ret));
		mr->revoked = false;
		return;
	}
	mr->wmr = NULL;
	if (ddtx_wire_mr_reg(pd->wire, NULL, 0, DDTX_KEY_APP, &mr->key, mr->iova, 0, &mr->wmr))
		mr->wmr = NULL;
	DDTX_WARN(FI_LOG_MR, "fi_mr key %#llx revoked: its memory was unmapped or returned to "
		  "the system while registered; close the MR before freeing its memory\n",
		  (unsigned long long)mr->key);
}

int ddtx_proto_mr_reg(struct ddtx_proto_domain *pd, const struct iovec *iov, size_t count,
		      uint64_t access, const uint64_t *requested_key, uint64_t iova,
		      struct ddtx_proto_mr **out, uint64_t *key)
{
	struct ddtx_proto_mr *mr = calloc(1, sizeof(*mr));
	bool complete;
	int ret;

	if (!mr)
		return -FI_ENOMEM;
	/* Device memory registered as host memory: the wire would hand peers a range the host
	 * cannot touch. */
	for (size_t i = 0; i < count && ddtx_hmem_cuda_available(); i++) {
		struct ddtx_hmem_attr a;
		ddtx_hmem_detect(iov[i].iov_base, &a);
		if (iov[i].iov_len && a.iface != DDTX_HMEM_SYSTEM) {
			DDTX_WARN(FI_LOG_MR, "fi_mr_reg: segment %zu is device memory: register it "
				  "with fi_mr_regattr, iface FI_HMEM_CUDA\n", i);
			free(mr);
			return -FI_EINVAL;
		}
	}
	mr->pd = pd;
	mr->iova = iova;
	/* Watch first: an unmap after the watch is always seen; one before it (polled by the
	 * watch itself) means the wire registers what is mapped now. */
	ret = ddtx_mr_watch_add(pd->mr_watch, iov, count, mr_revoke, mr, &mr->watched,
				&complete);
	if (ret) {
		free(mr);
		return ret;
	}
	if (!complete && ddtx_mr_watch_monitored(pd->mr_watch))
		DDTX_INFO(FI_LOG_MR, "fi_mr_reg: part of the memory cannot be watched (file or "
			  "SysV shm mapping?): its key is not revoked if it is unmapped\n");
	ret = ddtx_wire_mr_reg(pd->wire, iov, count, DDTX_KEY_APP, requested_key, iova,
			       wire_access(access), &mr->wmr);
	if (ret) {
		ddtx_mr_watch_remove(pd->mr_watch, mr->watched);
		free(mr);
		return ret;
	}
	mr->iov = malloc(count * sizeof(*iov));
	if (!mr->iov) {
		ddtx_wire_mr_dereg(pd->wire, mr->wmr);
		ddtx_mr_watch_remove(pd->mr_watch, mr->watched);
		free(mr);
		return -FI_ENOMEM;
	}
	memcpy(mr->iov, iov, count * sizeof(*iov));
	mr->count = count;
	mr->key = *key = mr->wmr->key;
	ddtx_list_push_back(&pd->app_mrs, &mr->entry);
	*out = mr;
	return 0;
}

int ddtx_proto_mr_reg_cuda(struct ddtx_proto_domain *pd, const struct iovec *iov, size_t count,
			   uint64_t access, int device, const uint64_t *requested_key,
			   uint64_t iova, struct ddtx_proto_mr **out, uint64_t *key)
{
	struct ddtx_proto_mr *mr;
	int ret;

	if (!pd->hmem)
		return -FI_EOPNOTSUPP;
	if (access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) {
		DDTX_INFO(FI_LOG_MR, "fi_mr_regattr: remote access to device memory is not "
			  "supported (RMA on FI_HMEM_CUDA is not built)\n");
		return -FI_EOPNOTSUPP;
	}
	for (size_t i = 0; i < count; i++) {
		struct ddtx_hmem_attr a;
		if (!iov[i].iov_len)
			continue;
		ddtx_hmem_detect(iov[i].iov_base, &a);
		if (a.iface != DDTX_HMEM_CUDA || a.device != device) {
			DDTX_WARN(FI_LOG_MR, "fi_mr_regattr: segment %zu is not memory of CUDA device "
				  "%d\n", i, device);
			return -FI_EINVAL;
		}
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr || !(mr->iov = malloc(count * sizeof(*iov))) ||
	    !(mr->buffer_ids = calloc(count, sizeof(uint64_t)))) {
		if (mr)
			free(mr->iov);
		free(mr);
		return -FI_ENOMEM;
	}
	memcpy(mr->iov, iov, count * sizeof(*iov));
	mr->count = count;
	for (size_t i = 0; i < count; i++) {
		struct ddtx_hmem_attr a;
		ddtx_hmem_detect(iov[i].iov_base, &a);
		mr->buffer_ids[i] = a.buffer_id;
	}
	mr->pd = pd;
	mr->iova = iova;
	/* A key with no memory behind it (as a revoked one): unique, refused to every peer. */
	ret = ddtx_wire_mr_reg(pd->wire, NULL, 0, DDTX_KEY_APP, requested_key, iova, 0, &mr->wmr);
	if (ret) {
		free(mr->buffer_ids);
		free(mr->iov);
		free(mr);
		return ret;
	}
	mr->key = *key = mr->wmr->key;
	mr->revoked = true; /* atomics and RMA events never find it */
	ddtx_list_push_back(&pd->app_mrs, &mr->entry);
	*out = mr;
	return 0;
}

int ddtx_proto_mr_live(const struct ddtx_proto_mr *mr)
{
	for (size_t i = 0; mr->buffer_ids && i < mr->count; i++) {
		struct ddtx_hmem_attr a;
		if (!mr->iov[i].iov_len)
			continue;
		ddtx_hmem_detect(mr->iov[i].iov_base, &a);
		if (a.iface != DDTX_HMEM_CUDA || a.buffer_id != mr->buffer_ids[i])
			return -FI_EINVAL;
	}
	return 0;
}

void ddtx_proto_mr_bind_event(struct ddtx_proto_mr *mr, ddtx_proto_mr_event_fn fn, void *arg)
{
	mr->on_event = fn;
	mr->event_arg = arg;
}

/*
 * The MR behind an application key of this domain.  A linear walk: the processes ddtx serves
 * (MPI windows, fabtests) register a handful of MRs, and only atomics and RMA events look.
 */
static struct ddtx_proto_mr *mr_of_key(struct ddtx_proto_domain *pd, uint64_t key)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pd->app_mrs, it, tmp)
	{
		struct ddtx_proto_mr *mr = ddtx_container_of(it, struct ddtx_proto_mr, entry);
		if (mr->key == key && !mr->revoked)
			return mr;
	}
	return NULL;
}

int ddtx_mr_local(struct ddtx_proto_domain *pd, uint64_t key, uint64_t addr, uint64_t len,
		  uint32_t access, const struct iovec **iov, size_t *count, size_t *offset)
{
	int ret = ddtx_wire_key_check(pd->wire, DDTX_KEY_APP, key, addr, len, access);
	if (ret)
		return ret;
	struct ddtx_proto_mr *mr = mr_of_key(pd, key);
	if (!mr || addr < mr->iova)
		return -FI_EKEYREJECTED; /* the wire knows the key, but no fi_mr of ours made it */
	*iov = mr->iov;
	*count = mr->count;
	*offset = addr - mr->iova;
	return 0;
}

void ddtx_mr_count_event(struct ddtx_proto_domain *pd, uint64_t key, uint32_t access)
{
	struct ddtx_proto_mr *mr = mr_of_key(pd, key);
	if (mr && mr->on_event)
		mr->on_event(mr->event_arg, access & DDTX_ACC_REMOTE_WRITE);
}

int ddtx_proto_mr_dereg(struct ddtx_proto_domain *pd, struct ddtx_proto_mr *mr)
{
	int ret = 0;

	ddtx_mr_watch_poll(pd->mr_watch);
	if (mr->wmr)
		ret = ddtx_wire_mr_dereg(pd->wire, mr->wmr);
	if (ret)
		return ret;
	ddtx_mr_watch_remove(pd->mr_watch, mr->watched);
	ddtx_list_remove(&mr->entry);
	free(mr->buffer_ids);
	free(mr->iov);
	free(mr);
	return 0;
}
