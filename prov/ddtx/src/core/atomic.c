/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_ops_atomic: fi_atomic, fi_fetch_atomic and fi_compare_atomic with their v, msg and inject
 * forms, each one locked call into proto (proto/atomic.c executes them at the target), and the
 * valid/query calls that say which op and datatype pairs exist and how many elements one carries.
 */
#include "core/atomic.h"
#include "core/ep.h"

static ssize_t atomic_call(struct fid_ep *fid, enum ddtx_proto_atomic_kind kind,
			   const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
			   size_t compare_count, struct fi_ioc *resultv, size_t result_count,
			   uint64_t flags)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	ddtx_domain_lock(ep->domain);
	ssize_t ret = ddtx_proto_atomic(ep->proto, kind, msg, comparev, compare_count, resultv,
					result_count, flags);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

/* The single-target calls: count elements at (addr, key). */
static ssize_t atomic_one(struct fid_ep *fid, enum ddtx_proto_atomic_kind kind,
			  const struct fi_ioc *iov, size_t count, const struct fi_ioc *comparev,
			  size_t compare_count, struct fi_ioc *resultv, size_t result_count,
			  fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
			  enum fi_op op, void *context, uint64_t flags)
{
	/* The elements: the operand's, or for FI_ATOMIC_READ (whose operand is ignored and may
	 * be NULL) the result list's. */
	size_t total = 0;
	if (op == FI_ATOMIC_READ && resultv)
		for (size_t i = 0; i < result_count; i++)
			total += resultv[i].count;
	else
		for (size_t i = 0; iov && i < count; i++)
			total += iov[i].count;
	const struct fi_rma_ioc rma = {.addr = addr, .count = total, .key = key};
	const struct fi_msg_atomic msg = {.msg_iov = iov, .iov_count = iov ? count : 0,
					  .addr = dest, .rma_iov = &rma, .rma_iov_count = 1,
					  .datatype = datatype, .op = op, .context = context};
	return atomic_call(fid, kind, &msg, comparev, compare_count, resultv, result_count, flags);
}

static uint64_t tx_flags(struct fid_ep *fid)
{
	return ddtx_ep_of(fid)->tx_op_flags;
}

static ssize_t at_write(struct fid_ep *fid, const void *buf, size_t count, void *desc,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
			enum fi_op op, void *context)
{
	const struct fi_ioc ioc = {(void *)buf, count};
	return atomic_one(fid, DDTX_PROTO_ATOMIC_WRITE, &ioc, 1, NULL, 0, NULL, 0, dest, addr, key,
			  datatype, op, context, tx_flags(fid));
}

static ssize_t at_writev(struct fid_ep *fid, const struct fi_ioc *iov, void **desc, size_t count,
			 fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
			 enum fi_op op, void *context)
{
	return atomic_one(fid, DDTX_PROTO_ATOMIC_WRITE, iov, count, NULL, 0, NULL, 0, dest, addr,
			  key, datatype, op, context, tx_flags(fid));
}

static ssize_t at_writemsg(struct fid_ep *fid, const struct fi_msg_atomic *msg, uint64_t flags)
{
	return atomic_call(fid, DDTX_PROTO_ATOMIC_WRITE, msg, NULL, 0, NULL, 0,
			   flags & ~DDTX_PROTO_NO_COMPLETION);
}

static ssize_t at_inject(struct fid_ep *fid, const void *buf, size_t count, fi_addr_t dest,
			 uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
	const struct fi_ioc ioc = {(void *)buf, count};
	return atomic_one(fid, DDTX_PROTO_ATOMIC_WRITE, &ioc, 1, NULL, 0, NULL, 0, dest, addr, key,
			  datatype, op, NULL, FI_INJECT | DDTX_PROTO_NO_COMPLETION);
}

static ssize_t at_readwrite(struct fid_ep *fid, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			    uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	const struct fi_ioc ioc = {(void *)buf, count};
	struct fi_ioc res = {result, count};
	return atomic_one(fid, DDTX_PROTO_ATOMIC_FETCH, &ioc, 1, NULL, 0, &res, 1, dest, addr, key,
			  datatype, op, context, tx_flags(fid));
}

static ssize_t at_readwritev(struct fid_ep *fid, const struct fi_ioc *iov, void **desc,
			     size_t count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op, void *context)
{
	return atomic_one(fid, DDTX_PROTO_ATOMIC_FETCH, iov, count, NULL, 0, resultv, result_count,
			  dest, addr, key, datatype, op, context, tx_flags(fid));
}

static ssize_t at_readwritemsg(struct fid_ep *fid, const struct fi_msg_atomic *msg,
			       struct fi_ioc *resultv, void **result_desc, size_t result_count,
			       uint64_t flags)
{
	return atomic_call(fid, DDTX_PROTO_ATOMIC_FETCH, msg, NULL, 0, resultv, result_count,
			   flags & ~DDTX_PROTO_NO_COMPLETION);
}

static ssize_t at_compwrite(struct fid_ep *fid, const void *buf, size_t count, void *desc,
			    const void *compare, void *compare_desc, void *result,
			    void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op, void *context)
{
	const struct fi_ioc ioc = {(void *)buf, count};
	const struct fi_ioc cmp = {(void *)compare, count};
	struct fi_ioc res = {result, count};
	return atomic_one(fid, DDTX_PROTO_ATOMIC_COMPARE, &ioc, 1, &cmp, 1, &res, 1, dest, addr,
			  key, datatype, op, context, tx_flags(fid));
}

static ssize_t at_compwritev(struct fid_ep *fid, const struct fi_ioc *iov, void **desc,
			     size_t count, const struct fi_ioc *comparev, void **compare_desc,
			     size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op, void *context)
{
	return atomic_one(fid, DDTX_PROTO_ATOMIC_COMPARE, iov, count, comparev, compare_count,
			  resultv, result_count, dest, addr, key, datatype, op, context,
			  tx_flags(fid));
}

static ssize_t at_compwritemsg(struct fid_ep *fid, const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev, void **compare_desc,
			       size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, uint64_t flags)
{
	return atomic_call(fid, DDTX_PROTO_ATOMIC_COMPARE, msg, comparev, compare_count, resultv,
			   result_count, flags & ~DDTX_PROTO_NO_COMPLETION);
}

static int valid(struct fid_ep *fid, enum ddtx_proto_atomic_kind kind, enum fi_datatype datatype,
		 enum fi_op op, size_t *count)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	if (!count)
		return -FI_EINVAL;
	if (!(ep->info->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	return ddtx_proto_atomic_valid(ep->domain->proto, kind, datatype, op, count, NULL);
}

static int at_writevalid(struct fid_ep *fid, enum fi_datatype datatype, enum fi_op op,
			 size_t *count)
{
	return valid(fid, DDTX_PROTO_ATOMIC_WRITE, datatype, op, count);
}

static int at_readwritevalid(struct fid_ep *fid, enum fi_datatype datatype, enum fi_op op,
			     size_t *count)
{
	return valid(fid, DDTX_PROTO_ATOMIC_FETCH, datatype, op, count);
}

static int at_compwritevalid(struct fid_ep *fid, enum fi_datatype datatype, enum fi_op op,
			     size_t *count)
{
	return valid(fid, DDTX_PROTO_ATOMIC_COMPARE, datatype, op, count);
}

struct fi_ops_atomic ddtx_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = at_write,
	.writev = at_writev,
	.writemsg = at_writemsg,
	.inject = at_inject,
	.readwrite = at_readwrite,
	.readwritev = at_readwritev,
	.readwritemsg = at_readwritemsg,
	.compwrite = at_compwrite,
	.compwritev = at_compwritev,
	.compwritemsg = at_compwritemsg,
	.writevalid = at_writevalid,
	.readwritevalid = at_readwritevalid,
	.compwritevalid = at_compwritevalid,
};

/* fi_query_atomic: flags pick the family (FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC, else fi_atomic). */
int ddtx_query_atomic(struct fid_domain *fid, enum fi_datatype datatype, enum fi_op op,
		      struct fi_atomic_attr *attr, uint64_t flags)
{
	if (!attr || (flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) ||
	    (flags & FI_FETCH_ATOMIC && flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	enum ddtx_proto_atomic_kind kind = (flags & FI_COMPARE_ATOMIC) ? DDTX_PROTO_ATOMIC_COMPARE
					   : (flags & FI_FETCH_ATOMIC) ? DDTX_PROTO_ATOMIC_FETCH
								       : DDTX_PROTO_ATOMIC_WRITE;
	struct ddtx_domain *domain = ddtx_domain_of(fid);
	return ddtx_proto_atomic_valid(domain->proto, kind, datatype, op, &attr->count,
				       &attr->size);
}
