/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_cq: completions in the order they happen, errors beside them, never dropped. */
#ifndef DDTX_CORE_CQ_H
#define DDTX_CORE_CQ_H

#include "common/list.h"
#include "core/domain.h"

/* One completion as ddtx stores it, converted to the CQ's format on read. */
struct ddtx_cq_entry {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src_addr;
	bool error;                      /* placeholder of the next entry of cq->errors (order) */
};

struct ddtx_cq_err {
	struct ddtx_list_entry entry;
	struct fi_cq_err_entry err;
	fi_addr_t src_addr;
};

struct ddtx_cq {
	struct fid_cq fid;
	struct ddtx_domain *domain;
	atomic_int ref;                  /* endpoints bound */
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	enum fi_cq_wait_cond wait_cond;  /* FI_CQ_COND_THRESHOLD: sread's cond is a size_t */
	size_t size;
	struct ddtx_cq_entry *ring;      /* grows when full: completions are never dropped */
	size_t head, count, capacity;
	struct ddtx_list errors;         /* struct ddtx_cq_err */
	struct ddtx_cq_err *last_err;    /* freed on the next readerr (err_data lifetime) */
	atomic_int signaled;             /* fi_cq_signal wakes sread */
	unsigned reads_unprogressed;     /* fi_cq_read calls served without progress (cq.c) */
};

/* Append a completion.  Caller holds the domain lock. */
void ddtx_cq_write(struct ddtx_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
		   uint64_t data, uint64_t tag, fi_addr_t src_addr);
/* Append an error completion; err is a positive FI_E* value (fi_cq_err_entry convention). */
void ddtx_cq_write_err(struct ddtx_cq *cq, void *context, uint64_t flags, size_t len,
		       void *buf, uint64_t data, uint64_t tag, size_t olen, int err,
		       fi_addr_t src_addr);

int ddtx_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		 void *context);
/* The ddtx CQ behind a fid, or NULL if the fid is not one. */
struct ddtx_cq *ddtx_cq_from_fid(struct fid *fid);

#endif /* DDTX_CORE_CQ_H */
