/* fi_ops_tagged: tagged send and receive entry points, including FI_PEEK / FI_CLAIM. */
#include "proto/proto_internal.h"

#define EP_OF(fid) ddtx_container_of(fid, struct ddtx_ep, fid)

static ssize_t ddtx_trecv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	struct iovec iov = {buf, len};
	return ddtx_recv_common(ep, &iov, NULL, 1, src, tag, ignore, context, ep->rx_op_flags, true);
}

static ssize_t ddtx_trecvv(struct fid_ep *fid, const struct iovec *iov, void **desc,
			   size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
			   void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	return ddtx_recv_common(ep, iov, desc, count, src, tag, ignore, context, ep->rx_op_flags, true);
}

static ssize_t ddtx_trecvmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	struct ddtx_ep *ep = EP_OF(fid);
	if (flags & (FI_PEEK | FI_CLAIM))
		return ddtx_recv_peek(ep, msg->addr, msg->tag, msg->ignore, msg->context, flags,
				      msg->msg_iov, msg->iov_count);
	return ddtx_recv_common(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->tag,
				msg->ignore, msg->context, flags, true);
}

static ssize_t ddtx_tsend(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			  fi_addr_t dest, uint64_t tag, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(ep, &iov, NULL, 1, dest, tag, 0, context, ep->tx_op_flags, true);
}

static ssize_t ddtx_tsendv(struct fid_ep *fid, const struct iovec *iov, void **desc,
			   size_t count, fi_addr_t dest, uint64_t tag, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	return ddtx_send_common(ep, iov, desc, count, dest, tag, 0, context, ep->tx_op_flags, true);
}

static ssize_t ddtx_tsendmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ddtx_send_common(EP_OF(fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->tag,
				msg->data, msg->context, flags, true);
}

static ssize_t ddtx_tinject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest,
			    uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(EP_OF(fid), &iov, NULL, 1, dest, tag, 0, NULL, FI_INJECT, true);
}

static ssize_t ddtx_tsenddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			      uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(ep, &iov, NULL, 1, dest, tag, data, context,
				ep->tx_op_flags | FI_REMOTE_CQ_DATA, true);
}

static ssize_t ddtx_tinjectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data,
				fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(EP_OF(fid), &iov, NULL, 1, dest, tag, data, NULL,
				FI_INJECT | FI_REMOTE_CQ_DATA, true);
}

struct fi_ops_tagged ddtx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = ddtx_trecv,
	.recvv = ddtx_trecvv,
	.recvmsg = ddtx_trecvmsg,
	.send = ddtx_tsend,
	.sendv = ddtx_tsendv,
	.sendmsg = ddtx_tsendmsg,
	.inject = ddtx_tinject,
	.senddata = ddtx_tsenddata,
	.injectdata = ddtx_tinjectdata,
};
