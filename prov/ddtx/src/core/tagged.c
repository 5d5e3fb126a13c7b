/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_ops_tagged: tagged send and receive, including FI_PEEK / FI_CLAIM, each one locked call. */
#include "core/ep.h"
#include "core/mr.h"

static ssize_t ep_trecv(struct ddtx_ep *ep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			uint64_t flags)
{
	ddtx_domain_lock(ep->domain);
	ssize_t ret = ddtx_mr_descs_check(desc, count);
	if (!ret)
		ret = ddtx_proto_recv(ep->proto, iov, desc, count, src, tag, ignore, context,
				      flags, true);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

static ssize_t ep_tsend(struct ddtx_ep *ep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
			uint64_t flags)
{
	ddtx_domain_lock(ep->domain);
	ssize_t ret = ddtx_mr_descs_check(desc, count);
	if (!ret)
		ret = ddtx_proto_send(ep->proto, iov, desc, count, dest, tag, data, context, flags,
				      true);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

static ssize_t tag_recv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t tag, uint64_t ignore, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	struct iovec iov = {buf, len};
	ssize_t ret = ddtx_mr_descs_check(&desc, 1);
	return ret ? ret : ep_trecv(ep, &iov, NULL, 1, src, tag, ignore, context, ep->rx_op_flags);
}

static ssize_t tag_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	return ep_trecv(ep, iov, desc, count, src, tag, ignore, context, ep->rx_op_flags);
}

static ssize_t tag_recvmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	if (!(flags & (FI_PEEK | FI_CLAIM)))
		return ep_trecv(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->tag,
				msg->ignore, msg->context, flags & ~DDTX_PROTO_NO_COMPLETION);
	ddtx_domain_lock(ep->domain);
	ret = ddtx_proto_peek(ep->proto, msg->addr, msg->tag, msg->ignore, msg->context, flags,
			      msg->msg_iov, msg->desc, msg->iov_count);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

static ssize_t tag_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			fi_addr_t dest, uint64_t tag, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	struct iovec iov = {(void *)buf, len};
	ssize_t ret = ddtx_mr_descs_check(&desc, 1);
	return ret ? ret : ep_tsend(ep, &iov, NULL, 1, dest, tag, 0, context, ep->tx_op_flags);
}

static ssize_t tag_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, uint64_t tag, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	return ep_tsend(ep, iov, desc, count, dest, tag, 0, context, ep->tx_op_flags);
}

static ssize_t tag_sendmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ep_tsend(ddtx_ep_of(fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->tag, msg->data, msg->context, flags & ~DDTX_PROTO_NO_COMPLETION);
}

static ssize_t tag_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest,
			  uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};
	return ep_tsend(ddtx_ep_of(fid), &iov, NULL, 1, dest, tag, 0, NULL, FI_INJECT | DDTX_PROTO_NO_COMPLETION);
}

static ssize_t tag_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	struct ddtx_ep *ep = ddtx_ep_of(fid);
	struct iovec iov = {(void *)buf, len};
	return ep_tsend(ep, &iov, NULL, 1, dest, tag, data, context,
			ep->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t tag_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};
	return ep_tsend(ddtx_ep_of(fid), &iov, NULL, 1, dest, tag, data, NULL,
			FI_INJECT | FI_REMOTE_CQ_DATA | DDTX_PROTO_NO_COMPLETION);
}

struct fi_ops_tagged ddtx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tag_recv,
	.recvv = tag_recvv,
	.recvmsg = tag_recvmsg,
	.send = tag_send,
	.sendv = tag_sendv,
	.sendmsg = tag_sendmsg,
	.inject = tag_inject,
	.senddata = tag_senddata,
	.injectdata = tag_injectdata,
};
