/*
 * RMA: fi_write and fi_read families with iov lists on both sides.  Remote segments are application keys
 * (DDTX_KEY_APP), so the remote side cannot be re-keyed: each rma_iov segment is moved by
 * work requests whose local side takes at most max_sge entries of the local list.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_internal.h"

static void rma_finish(struct ddtx_proto_ep *pep, struct ddtx_rma *op)
{
	struct ddtx_ep *ep = pep->ep;
	enum ddtx_ep_cntr cntr = (op->cq_flags & FI_READ) ? DDTX_CNTR_READ : DDTX_CNTR_WRITE;
	if (op->status) {
		ddtx_complete_tx_err(ep, op->context, op->cq_flags, 0, op->status, cntr);
	} else {
		if (op->remote_data) {
			struct ddtx_hdr_rma_data h;
			ddtx_hdr_init(&h.base, DDTX_MSG_RMA_DATA, DDTX_HDR_CQ_DATA);
			h.data = op->data;
			h.len = op->total;
			ddtx_ctrl_send(pep, op->peer, &h, sizeof(h));
		}
		ddtx_count_scheme(ep, FI_DDTX_SCHEME_RMA, op->total);
		ddtx_complete_tx(ep, op->context, op->cq_flags, op->report, op->total, cntr);
	}
	ddtx_list_remove(&op->entry);
	free(op->inject_buf);
	free(op);
}

void ddtx_rma_on_complete(struct ddtx_proto_ep *pep, struct ddtx_rma *op, int status)
{
	if (status && !op->status)
		op->status = -status;
	if (--op->writes_pending == 0)
		rma_finish(pep, op);
}

void ddtx_rma_on_remote_data(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf,
			     size_t len)
{
	const struct ddtx_hdr_rma_data *h = buf;
	struct ddtx_ep *ep = pep->ep;
	if (ep->rx_cq)
		ddtx_cq_write(ep->rx_cq, NULL, FI_REMOTE_CQ_DATA | FI_RMA | FI_REMOTE_WRITE, h->len,
			      NULL, h->data, 0, ddtx_from_addr(pep, src));
	if (ep->cntrs[DDTX_CNTR_REMOTE_WRITE])
		ddtx_cntr_inc(ep->cntrs[DDTX_CNTR_REMOTE_WRITE]);
	(void)len;
}

/* Post the work requests of every rma_iov segment; the op finishes with its last completion. */
static void rma_post(struct ddtx_proto_ep *pep, struct ddtx_rma *op, const struct iovec *iov,
		     size_t count, const struct fi_rma_iov *rma_iov, size_t rma_count, bool write)
{
	const struct ddtx_wire_caps *caps = pep->caps;
	struct iovec pieces[caps->max_sge];
	struct ddtx_iov_cursor cur;
	ddtx_iov_cursor_init(&cur, iov, count);
	/* One extra reference while posting, so an early completion cannot finish the op. */
	op->writes_pending = 1;
	/* A bad segment fails the whole operation before any segment moves. */
	for (size_t i = 0; i < rma_count && !op->status; i++) {
		int ret = ddtx_wire_rma_check(pep->ep->wire, op->peer, DDTX_KEY_APP, rma_iov[i].key,
					      rma_iov[i].addr, rma_iov[i].len, write);
		if (ret)
			op->status = -ret;
	}
	for (size_t i = 0; i < rma_count && !op->status; i++) {
		uint64_t done = 0;
		while (done < rma_iov[i].len) {
			size_t want = DDTX_MIN(rma_iov[i].len - done, caps->max_rma_size);
			size_t n;
			size_t got = ddtx_iov_cursor_take(&cur, want, caps->max_sge, pieces, &n);
			int ret = write ? ddtx_wire_write(pep->ep->wire, op->peer, pieces, n,
							  DDTX_KEY_APP, rma_iov[i].key,
							  rma_iov[i].addr + done, got, op)
					: ddtx_wire_read(pep->ep->wire, op->peer, pieces, n,
							 DDTX_KEY_APP, rma_iov[i].key,
							 rma_iov[i].addr + done, got, op);
			if (ret) {
				op->status = -ret;
				break;
			}
			op->writes_pending++;
			done += got;
		}
	}
	ddtx_rma_on_complete(pep, op, 0);
}

static ssize_t rma_common(struct ddtx_ep *ep, const struct fi_msg_rma *msg, uint64_t flags,
			  bool write)
{
	if (!msg)
		return -FI_EINVAL;
	size_t limit = ep->info->tx_attr->iov_limit;
	int ret = ddtx_iov_check(msg->msg_iov, msg->iov_count, limit, NULL);
	if (ret || msg->rma_iov_count > ep->info->tx_attr->rma_iov_limit ||
	    (msg->rma_iov_count && !msg->rma_iov)) {
		DDTX_WARN(FI_LOG_EP_DATA, "rma: invalid iov or rma_iov list\n");
		return -FI_EINVAL;
	}
	size_t total = ddtx_iov_total(msg->msg_iov, msg->iov_count), rtotal = 0;
	for (size_t i = 0; i < msg->rma_iov_count; i++)
		rtotal += msg->rma_iov[i].len;
	if (total != rtotal) {
		DDTX_WARN(FI_LOG_EP_DATA, "rma: local %zu bytes but remote %zu bytes\n", total,
			  rtotal);
		return -FI_EINVAL;
	}
	if ((flags & FI_INJECT) && (!write || total > ep->info->tx_attr->inject_size))
		return -FI_EINVAL;

	DDTX_EP_LOCK(ep);
	struct ddtx_proto_ep *pep = proto_of(ep);
	ddtx_peer_t peer;
	struct ddtx_rma *op = NULL;
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if ((ret = ddtx_ep_peer(ep, msg->addr, &peer)))
		goto out;
	op = calloc(1, sizeof(*op));
	if (!op) {
		ret = -FI_ENOMEM;
		goto out;
	}
	op->kind = DDTX_WR_RMA;
	op->peer = peer;
	op->context = msg->context;
	op->cq_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
	op->report = !(flags & FI_INJECT) && (!ep->tx_selective || (flags & FI_COMPLETION));
	op->remote_data = write && (flags & FI_REMOTE_CQ_DATA);
	op->data = msg->data;
	op->total = total;
	ddtx_list_push_back(&pep->rma_active, &op->entry);

	const struct iovec *iov = msg->msg_iov;
	size_t count = msg->iov_count;
	struct iovec copy;
	if (flags & FI_INJECT) {
		/* The caller may reuse its buffer at once: keep a private copy. */
		op->inject_buf = malloc(DDTX_MAX(total, (size_t)1));
		if (!op->inject_buf) {
			ddtx_list_remove(&op->entry);
			free(op);
			ret = -FI_ENOMEM;
			goto out;
		}
		ddtx_iov_gather(iov, count, 0, op->inject_buf, total);
		copy.iov_base = op->inject_buf;
		copy.iov_len = total;
		iov = &copy;
		count = 1;
	}
	rma_post(pep, op, iov, count, msg->rma_iov, msg->rma_iov_count, write);
out:
	DDTX_EP_UNLOCK(ep);
	return ret;
}

static ssize_t rma_simple(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t addr, uint64_t raddr, size_t len, uint64_t key, uint64_t data,
			  void *context, uint64_t flags, bool write)
{
	struct ddtx_ep *ep = ddtx_container_of(fid, struct ddtx_ep, fid);
	struct fi_rma_iov rma = {.addr = raddr, .len = len, .key = key};
	struct fi_msg_rma msg = {.msg_iov = iov, .desc = desc, .iov_count = count, .addr = addr,
				 .rma_iov = &rma, .rma_iov_count = 1, .context = context,
				 .data = data};
	return rma_common(ep, &msg, flags, write);
}

static ssize_t ddtx_read(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	struct ddtx_ep *ep = ddtx_container_of(fid, struct ddtx_ep, fid);
	struct iovec iov = {buf, len};
	return rma_simple(fid, &iov, &desc, 1, src, addr, len, key, 0, context, ep->tx_op_flags,
			  false);
}

static ssize_t ddtx_readv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	struct ddtx_ep *ep = ddtx_container_of(fid, struct ddtx_ep, fid);
	if (count && !iov)
		return -FI_EINVAL;
	return rma_simple(fid, iov, desc, count, src, addr, ddtx_iov_total(iov, count), key, 0,
			  context, ep->tx_op_flags, false);
}

static ssize_t ddtx_readmsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_common(ddtx_container_of(fid, struct ddtx_ep, fid), msg, flags, false);
}

static ssize_t ddtx_write(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			  fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	struct ddtx_ep *ep = ddtx_container_of(fid, struct ddtx_ep, fid);
	struct iovec iov = {(void *)buf, len};
	return rma_simple(fid, &iov, &desc, 1, dest, addr, len, key, 0, context, ep->tx_op_flags,
			  true);
}

static ssize_t ddtx_writev(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
			   fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	struct ddtx_ep *ep = ddtx_container_of(fid, struct ddtx_ep, fid);
	if (count && !iov)
		return -FI_EINVAL;
	return rma_simple(fid, iov, desc, count, dest, addr, ddtx_iov_total(iov, count), key, 0,
			  context, ep->tx_op_flags, true);
}

static ssize_t ddtx_writemsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_common(ddtx_container_of(fid, struct ddtx_ep, fid), msg, flags, true);
}

static ssize_t ddtx_inject_write(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest,
				 uint64_t addr, uint64_t key)
{
	struct iovec iov = {(void *)buf, len};
	return rma_simple(fid, &iov, NULL, 1, dest, addr, len, key, 0, NULL, FI_INJECT, true);
}

static ssize_t ddtx_writedata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
			      uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
			      void *context)
{
	struct ddtx_ep *ep = ddtx_container_of(fid, struct ddtx_ep, fid);
	struct iovec iov = {(void *)buf, len};
	return rma_simple(fid, &iov, &desc, 1, dest, addr, len, key, data, context,
			  ep->tx_op_flags | FI_REMOTE_CQ_DATA, true);
}

static ssize_t ddtx_inject_writedata(struct fid_ep *fid, const void *buf, size_t len,
				     uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec iov = {(void *)buf, len};
	return rma_simple(fid, &iov, NULL, 1, dest, addr, len, key, data, NULL,
			  FI_INJECT | FI_REMOTE_CQ_DATA, true);
}

struct fi_ops_rma ddtx_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = ddtx_read,
	.readv = ddtx_readv,
	.readmsg = ddtx_readmsg,
	.write = ddtx_write,
	.writev = ddtx_writev,
	.writemsg = ddtx_writemsg,
	.inject = ddtx_inject_write,
	.writedata = ddtx_writedata,
	.injectdata = ddtx_inject_writedata,
};
