/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_ops_rma: the fi_write and fi_read families, each one locked call into proto. */
#include "common/iov_check.h"
#include "core/ep.h"

static ssize_t rma_msg(struct ddtx_ep *ep, const struct fi_msg_rma *msg, uint64_t flags,
		       bool write)
{
	ddtx_domain_lock(ep->domain);
	ssize_t ret = ddtx_proto_rma(ep->proto, msg, flags, write);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

/* The single-segment calls: one remote segment of len bytes at (raddr, key). */
static ssize_t rma_one(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t addr, uint64_t raddr, uint64_t key, uint64_t data,
		       void *context, uint64_t flags, bool write)
{
	size_t len = 0;
	if (ddtx_iov_check(iov, count, SIZE_MAX, &len))
		return -FI_EINVAL;
	struct fi_rma_iov rma = {.addr = raddr, .len = len, .key = key};
	struct fi_msg_rma msg = {.msg_iov = iov, .desc = desc, .iov_count = count, .addr = addr,
				 .rma_iov = &rma, .rma_iov_count = 1, .context = context,
				 .data = data};
	return rma_msg(ddtx_ep_of(fid), &msg, flags, write);
}

static ssize_t rma_read(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = {buf, len};
	return rma_one(fid, &iov, &desc, 1, src, addr, key, 0, context,
		       ddtx_ep_of(fid)->tx_op_flags, false);
}

static ssize_t rma_readv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	return rma_one(fid, iov, desc, count, src, addr, key, 0, context,
		       ddtx_ep_of(fid)->tx_op_flags, false);
}

static ssize_t rma_readmsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ddtx_ep_of(fid), msg, flags & ~DDTX_PROTO_NO_COMPLETION, false);
}

static ssize_t rma_write(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = {(void *)buf, len};
	return rma_one(fid, &iov, &desc, 1, dest, addr, key, 0, context,
		       ddtx_ep_of(fid)->tx_op_flags, true);
}

static ssize_t rma_writev(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return rma_one(fid, iov, desc, count, dest, addr, key, 0, context,
		       ddtx_ep_of(fid)->tx_op_flags, true);
}

static ssize_t rma_writemsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ddtx_ep_of(fid), msg, flags & ~DDTX_PROTO_NO_COMPLETION, true);
}

static ssize_t rma_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest,
			  uint64_t addr, uint64_t key)
{
	struct iovec iov = {(void *)buf, len};
	return rma_one(fid, &iov, NULL, 1, dest, addr, key, 0, NULL, FI_INJECT | DDTX_PROTO_NO_COMPLETION, true);
}

static ssize_t rma_writedata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	struct iovec iov = {(void *)buf, len};
	return rma_one(fid, &iov, &desc, 1, dest, addr, key, data, context,
		       ddtx_ep_of(fid)->tx_op_flags | FI_REMOTE_CQ_DATA, true);
}

static ssize_t rma_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec iov = {(void *)buf, len};
	return rma_one(fid, &iov, NULL, 1, dest, addr, key, data, NULL,
		       FI_INJECT | FI_REMOTE_CQ_DATA | DDTX_PROTO_NO_COMPLETION, true);
}

struct fi_ops_rma ddtx_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};
