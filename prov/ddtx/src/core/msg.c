/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_ops_msg: untagged send and receive, each one locked call into proto. */
#include "core/ep.h"
#include "core/mr.h"

static ssize_t ep_recv(struct ddtx_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, void *context, uint64_t flags)
{
	ddtx_domain_lock(ep->domain);
	ssize_t ret = ddtx_mr_descs_check(desc, count);
	if (!ret)
		ret = ddtx_proto_recv(ep->proto, iov, desc, count, src, 0, 0, context, flags,
				      false);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

static ssize_t ep_send(struct ddtx_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t data, void *context, uint64_t flags)
{
	ddtx_domain_lock(ep->domain);
	ssize_t ret = ddtx_mr_descs_check(desc, count);
	if (!ret)
		ret = ddtx_proto_send(ep->proto, iov, desc, count, dest, 0, data, context, flags,
				      false);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

static ssize_t msg_recv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src,
			void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	struct iovec iov = {buf, len};
	ssize_t ret = ddtx_mr_descs_check(&desc, 1);
	return ret ? ret : ep_recv(ep, &iov, NULL, 1, src, context, ep->rx_op_flags);
}

static ssize_t msg_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	return ep_recv(ep, iov, desc, count, src, context, ep->rx_op_flags);
}

static ssize_t msg_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ep_recv(ddtx_ep_of(fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
		       msg->context, flags & ~DDTX_PROTO_NO_COMPLETION);
}

static ssize_t msg_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			fi_addr_t dest, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	struct iovec iov = {(void *)buf, len};
	ssize_t ret = ddtx_mr_descs_check(&desc, 1);
	return ret ? ret : ep_send(ep, &iov, NULL, 1, dest, 0, context, ep->tx_op_flags);
}

static ssize_t msg_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	return ep_send(ep, iov, desc, count, dest, 0, context, ep->tx_op_flags);
}

static ssize_t msg_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ep_send(ddtx_ep_of(fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
		       msg->data, msg->context, flags & ~DDTX_PROTO_NO_COMPLETION);
}

static ssize_t msg_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = {(void *)buf, len};
	return ep_send(ddtx_ep_of(fid), &iov, NULL, 1, dest, 0, NULL, FI_INJECT | DDTX_PROTO_NO_COMPLETION);
}

static ssize_t msg_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	struct iovec iov = {(void *)buf, len};
	return ep_send(ep, &iov, NULL, 1, dest, data, context,
		       ep->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t msg_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest)
{
	struct iovec iov = {(void *)buf, len};
	return ep_send(ddtx_ep_of(fid), &iov, NULL, 1, dest, data, NULL,
		       FI_INJECT | FI_REMOTE_CQ_DATA | DDTX_PROTO_NO_COMPLETION);
}

struct fi_ops_msg ddtx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};
