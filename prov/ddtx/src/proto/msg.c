/* fi_ops_msg: untagged send and receive entry points. */
#include "proto/proto_internal.h"

#define EP_OF(fid) ddtx_container_of(fid, struct ddtx_ep, fid)

static ssize_t ddtx_recv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src,
			 void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	struct iovec iov = {buf, len};
	return ddtx_recv_common(ep, &iov, NULL, 1, src, 0, 0, context, ep->rx_op_flags, false);
}

static ssize_t ddtx_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t src, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	return ddtx_recv_common(ep, iov, desc, count, src, 0, 0, context, ep->rx_op_flags, false);
}

static ssize_t ddtx_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ddtx_recv_common(EP_OF(fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr, 0, 0,
				msg->context, flags, false);
}

static ssize_t ddtx_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(ep, &iov, NULL, 1, dest, 0, 0, context, ep->tx_op_flags, false);
}

static ssize_t ddtx_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	return ddtx_send_common(ep, iov, desc, count, dest, 0, 0, context, ep->tx_op_flags, false);
}

static ssize_t ddtx_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ddtx_send_common(EP_OF(fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr, 0, msg->data,
				msg->context, flags, false);
}

static ssize_t ddtx_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(EP_OF(fid), &iov, NULL, 1, dest, 0, 0, NULL, FI_INJECT, false);
}

static ssize_t ddtx_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, void *context)
{
	struct ddtx_ep *ep = EP_OF(fid);
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(ep, &iov, NULL, 1, dest, 0, data, context,
				ep->tx_op_flags | FI_REMOTE_CQ_DATA, false);
}

static ssize_t ddtx_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data,
			       fi_addr_t dest)
{
	struct iovec iov = {(void *)buf, len};
	return ddtx_send_common(EP_OF(fid), &iov, NULL, 1, dest, 0, data, NULL,
				FI_INJECT | FI_REMOTE_CQ_DATA, false);
}

struct fi_ops_msg ddtx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = ddtx_recv,
	.recvv = ddtx_recvv,
	.recvmsg = ddtx_recvmsg,
	.send = ddtx_send,
	.sendv = ddtx_sendv,
	.sendmsg = ddtx_sendmsg,
	.inject = ddtx_inject,
	.senddata = ddtx_senddata,
	.injectdata = ddtx_injectdata,
};
