/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire's endpoint: one core endpoint (FI_EP_RDM) with its AV and CQ, or (FI_EP_MSG) a
 * listening endpoint, a shared receive context and connections made by conn.c; a slab of bounce
 * buffers (receives posted up front, sends taken from a free list), the address blob and the
 * peer table (a peer is a core fi_addr or a connection, plus the uid its messages carry).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/clock.h"
#include "wire/ofi/ofi.h"

static uint64_t random_uid(void)
{
	uint64_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v) || !v)
		;
	return v;
}

int ddtx_ofi_post_recv(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b)
{
	struct iovec iov = { b->data, DDTX_OFI_BUF_SIZE };
	void *desc = ep->slab_desc;
	struct fi_msg msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
		.context = &b->ctx,
	};

	int ret = (int)fi_recvmsg(ep->ep, &msg, 0);

	if (!ret) {
		b->done = false;
		ep->rx_ring[(ep->rx_head + ep->rx_count++) % DDTX_OFI_RX_BUFS] = b;
	}
	return ret;
}

static int open_slab(struct ddtx_ofi_ep *ep)
{
	size_t nbufs = DDTX_OFI_RX_BUFS + DDTX_OFI_TX_BUFS;
	size_t bytes = nbufs * DDTX_OFI_BUF_SIZE;
	int ret;

	if (posix_memalign((void **)&ep->slab, 4096, bytes))
		return -FI_ENOMEM;
	if (ep->dom->mr_local) {
		/* receives, sends, and the source of ring writes (ring.c) */
		ret = ddtx_ofi_local_reg_access(ep->dom, ep->slab, bytes,
						FI_SEND | FI_RECV | FI_WRITE, &ep->slab_mr);
		if (ret)
			return ret;
		ep->slab_desc = fi_mr_desc(ep->slab_mr);
	}
	ddtx_list_init(&ep->tx_free);
	ddtx_list_init(&ep->tx_deferred);
	ddtx_list_init(&ep->rx_repost);
	for (size_t i = 0; i < DDTX_OFI_RX_BUFS; i++) {
		ep->rx[i].kind = DDTX_OFI_BUF_RX;
		ep->rx[i].data = ep->slab + i * DDTX_OFI_BUF_SIZE;
	}
	for (size_t i = 0; i < DDTX_OFI_TX_BUFS; i++) {
		ep->tx[i].kind = DDTX_OFI_BUF_TX;
		ep->tx[i].data = ep->slab + (DDTX_OFI_RX_BUFS + i) * DDTX_OFI_BUF_SIZE;
		ddtx_list_push_back(&ep->tx_free, &ep->tx[i].entry);
	}
	return 0;
}

static int copy_addr(void **to, size_t *to_len, const void *from, size_t len)
{
	free(*to);
	*to = NULL;
	*to_len = 0;
	if (!from)
		return 0;
	*to = malloc(len);
	if (!*to)
		return -FI_ENOMEM;
	memcpy(*to, from, len);
	*to_len = len;
	return 0;
}

struct fi_info *ddtx_ofi_info_addrs(struct ddtx_ofi_domain *dom, const void *src, size_t srclen,
				    const void *dest, size_t destlen)
{
	struct fi_info *info = fi_dupinfo(dom->core);

	if (info && (copy_addr(&info->src_addr, &info->src_addrlen, src, srclen) ||
		     copy_addr(&info->dest_addr, &info->dest_addrlen, dest, destlen))) {
		fi_freeinfo(info);
		info = NULL;
	}
	return info;
}

int ddtx_ofi_cq_open(struct ddtx_ofi_ep *ep)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA, /* a ring write's remote CQ data (ring.c) */
		.size = 4 * (DDTX_OFI_RX_BUFS + DDTX_OFI_TX_BUFS),
		.wait_obj = FI_WAIT_NONE,
	};

	return fi_cq_open(ep->dom->domain, &cq_attr, &ep->cq, NULL);
}

/*
 * The core endpoint, at src (a core address, NULL: the core's default) and its blob.  A name
 * (name.c) needs the core's fi_info with that src_addr, so the info is copied for it.
 */
static int open_core(struct ddtx_ofi_ep *ep, const void *src, size_t srclen, bool by_service)
{
	struct ddtx_ofi_domain *dom = ep->dom;
	struct fi_info *info = dom->core;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	uint8_t name[256];
	size_t len = sizeof(name);
	int ret;

	if (dom->ep_msg)
		return ddtx_ofi_conn_open(ep, src, srclen, by_service);
	if (src) {
		info = ddtx_ofi_info_addrs(dom, src, srclen, NULL, 0);
		if (!info)
			return -FI_ENOMEM;
	}
	ret = fi_endpoint(dom->domain, info, &ep->ep, NULL);
	if (info != dom->core)
		fi_freeinfo(info);
	if (!ret)
		ret = fi_av_open(dom->domain, &av_attr, &ep->av, NULL);
	if (!ret)
		ret = ddtx_ofi_cq_open(ep);
	if (!ret)
		ret = fi_ep_bind(ep->ep, &ep->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(ep->ep, &ep->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(ep->ep);
	if (!ret)
		ret = fi_getname(&ep->ep->fid, name, &len);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: core endpoint (%s): %s\n",
			  dom->core->fabric_attr->prov_name, fi_strerror(-ret));
		return ret;
	}
	return ddtx_ofi_ep_set_addr(ep, name, len, src && by_service);
}

int ddtx_ofi_ep_set_addr(struct ddtx_ofi_ep *ep, void *name, size_t len, bool by_service)
{
	struct ddtx_ofi_domain *dom = ep->dom;

	if (!len || len > DDTX_OFI_CORE_ADDR_MAX) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: the core's address has %zu bytes, the blob holds "
			  "%d\n", len, DDTX_OFI_CORE_ADDR_MAX);
		return -FI_EOPNOTSUPP;
	}
	ddtx_ofi_addr_canon(dom->core->addr_format, name, len);
	if (by_service)
		ep->uid = ddtx_ofi_bound_uid(dom->core_id, name, len);
	struct ddtx_ofi_blob b = { .core_id = dom->core_id, .uid = ep->uid,
				   .core_len = (uint8_t)len };
	memcpy(b.core_addr, name, len);
	return ddtx_ofi_blob_pack(&b, ep->blob);
}

static void close_core(struct ddtx_ofi_ep *ep)
{
	if (ep->dom->ep_msg)
		ddtx_ofi_conn_close(ep);     /* the connections first: they use the CQ and SRX */
	if (ep->ep)
		fi_close(&ep->ep->fid);
	if (ep->av)
		fi_close(&ep->av->fid);
	if (ep->cq)
		fi_close(&ep->cq->fid);
	ep->ep = NULL;
	ep->av = NULL;
	ep->cq = NULL;
}

static int post_all_recvs(struct ddtx_ofi_ep *ep)
{
	int ret = 0;

	ep->rx_head = ep->rx_count = 0;
	ddtx_list_init(&ep->rx_repost);
	for (size_t i = 0; !ret && i < DDTX_OFI_RX_BUFS; i++)
		ret = ddtx_ofi_post_recv(ep, &ep->rx[i]);
	return ret;
}

int ddtx_ofi_ep_reopen(struct ddtx_ofi_ep *ep, const void *src, size_t srclen, bool by_service)
{
	int ret;

	if (ep->npeers || !ddtx_list_empty(&ep->ops))
		return -FI_EOPBADSTATE;
	close_core(ep);
	ret = open_core(ep, src, srclen, by_service);
	if (!ret)
		ret = post_all_recvs(ep);
	if (ret) {
		/* Back to an endpoint at the core's default address, usable as before. */
		close_core(ep);
		ep->uid = random_uid();
		if (!open_core(ep, NULL, 0, false))
			(void)post_all_recvs(ep);
	}
	return ret;
}

/* Messages queued or in the core for a peer still reachable. */
static bool tx_pending(const struct ddtx_ofi_ep *ep)
{
	if (!ddtx_list_empty(&ep->ctrl) || !ddtx_list_empty(&ep->tx_deferred))
		return true;
	for (size_t i = 0; i < ep->npeers; i++)
		if (ep->peers[i] && !ep->peers[i]->dead && ep->peers[i]->tx_inflight)
			return true;
	return false;
}

/*
 * What is still queued or in the core when the endpoint closes is mostly the protocol's last
 * words: the acknowledgement of a delivery complete send (the proto floor flushes those at
 * close), a ring credit.  The core drops what it holds at fi_close (a first message sent to a
 * peer not yet connected and closed at once never arrived: test_ofi_close), and the peer then
 * waits for the acknowledgement until its send fails; fabtests' fi_rdm_multi_client -U, whose
 * client closes right after its last receive, failed once between two hosts in CI, likely so.
 * So progress runs, delivering nothing, until they left or LINGER_MS passed (a peer gone).
 */
#define LINGER_MS 1000

static void linger(struct ddtx_ofi_ep *ep)
{
	if (!ep->cq || !tx_pending(ep))
		return;
	ep->handlers = (struct ddtx_wire_handlers){ 0 }; /* the floor above is closing */
	uint64_t end = ddtx_coarse_time_ns() + (uint64_t)LINGER_MS * 1000000;

	while (tx_pending(ep) && ddtx_coarse_time_ns() < end)
		(void)ddtx_ofi_ep_progress(&ep->base);
}

void ddtx_ofi_ep_close(struct ddtx_wire_ep *wep)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);

	if (!ep)
		return;
	linger(ep);
	while (!ddtx_list_empty(&ep->ctrl))
		free(ddtx_container_of(ddtx_list_pop_front(&ep->ctrl), struct ddtx_ofi_ctrl, entry));
	close_core(ep);
	/* after the core endpoint: nothing completes into an op any more */
	ddtx_ofi_rma_fini(ep);
	ddtx_ofi_ring_fini(ep);
	if (ep->slab_mr)
		fi_close(&ep->slab_mr->fid);
	for (size_t i = 0; i < ep->npeers; i++)
		free(ep->peers[i]);
	free(ep->peers);
	free(ep->slab);
	free(ep);
}

int ddtx_ofi_ep_open(struct ddtx_wire_domain *wdom, const struct ddtx_wire_handlers *handlers,
		     void *handler_arg, struct ddtx_wire_ep **out)
{
	struct ddtx_ofi_ep *ep;
	int ret;

	if (!wdom || !out)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->base.impl = &ddtx_ofi_wire_impl;
	ep->dom = ddtx_odom_of(wdom);
	if (handlers)
		ep->handlers = *handlers;
	ep->handler_arg = handler_arg;
	ep->uid = random_uid();
	ddtx_list_init(&ep->rkeys);
	ddtx_list_init(&ep->waiting);
	ddtx_list_init(&ep->done);
	ddtx_list_init(&ep->ctrl);
	ddtx_list_init(&ep->ops);
	ddtx_list_init(&ep->conns);
	ret = open_slab(ep);
	if (!ret)
		ret = open_core(ep, NULL, 0, false);
	if (!ret)
		ret = post_all_recvs(ep);
	if (ret) {
		ddtx_ofi_ep_close(&ep->base);
		return ret;
	}
	*out = &ep->base;
	return 0;
}

int ddtx_ofi_ep_getname(struct ddtx_wire_ep *wep, void *addr, size_t *len)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	size_t have;

	if (!ep || !len)
		return -FI_EINVAL;
	have = *len;
	*len = DDTX_OFI_BLOB_LEN;
	if (have < DDTX_OFI_BLOB_LEN || !addr)
		return -FI_ETOOSMALL;
	memcpy(addr, ep->blob, DDTX_OFI_BLOB_LEN);
	return 0;
}

struct ddtx_ofi_peer *ddtx_ofi_peer_get(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	return ep && peer < ep->npeers ? ep->peers[peer] : NULL;
}

int ddtx_ofi_peer_by_uid(struct ddtx_ofi_ep *ep, uint64_t uid, ddtx_peer_t *peer)
{
	/* A linear scan: peers are few per endpoint in the jobs this wire runs so far. */
	for (size_t i = 0; i < ep->npeers; i++) {
		if (ep->peers[i]->uid == uid) {
			*peer = (ddtx_peer_t)i;
			return 0;
		}
	}
	return -FI_ENOENT;
}

int ddtx_ofi_peer_insert(struct ddtx_wire_ep *wep, const void *addr, size_t len,
			 ddtx_peer_t *peer)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_blob b;
	struct ddtx_ofi_peer *p;
	int ret;

	if (!ep || !peer || ddtx_ofi_blob_unpack(addr, len, ep->dom->core_id, &b))
		return -FI_EINVAL;
	for (size_t i = 0; i < ep->npeers; i++) {
		if (!memcmp(ep->peers[i]->blob, addr, DDTX_OFI_BLOB_LEN)) {
			*peer = (ddtx_peer_t)i;
			return 0;
		}
	}
	if (ep->npeers >= DDTX_OFI_MAX_PEERS) {
		DDTX_WARN(FI_LOG_AV, "ofi: %zu peers: no more accepted\n", ep->npeers);
		return -FI_ENOSPC;
	}
	if (ep->npeers == ep->peer_cap) {
		size_t ncap = ep->peer_cap ? 2 * ep->peer_cap : 16;
		struct ddtx_ofi_peer **v = realloc(ep->peers, ncap * sizeof(*v));

		if (!v)
			return -FI_ENOMEM;
		ep->peers = v;
		ep->peer_cap = ncap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	/* FI_EP_MSG: no AV, the peer is reached by its connection (conn.c) */
	p->fi_addr = FI_ADDR_UNSPEC;
	ret = ep->av ? fi_av_insert(ep->av, b.core_addr, 1, &p->fi_addr, 0, NULL) : 1;
	if (ret != 1) {
		DDTX_WARN(FI_LOG_AV, "ofi: the core refused a peer's address: %s\n",
			  fi_strerror(ret < 0 ? -ret : FI_EINVAL));
		free(p);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	p->uid = b.uid;
	ddtx_ofi_live_heard(ep, p);
	memcpy(p->blob, addr, DDTX_OFI_BLOB_LEN);
	/* Our own address: we know ourselves. */
	p->heard = b.uid == ep->uid;
	ep->peers[ep->npeers] = p;
	*peer = (ddtx_peer_t)ep->npeers++;
	return 0;
}

int ddtx_ofi_peer_addr(struct ddtx_wire_ep *wep, ddtx_peer_t peer, void *addr, size_t *len)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);
	size_t have;

	if (!p || !len)
		return -FI_EINVAL;
	have = *len;
	*len = DDTX_OFI_BLOB_LEN;
	if (have < DDTX_OFI_BLOB_LEN || !addr)
		return -FI_ETOOSMALL;
	memcpy(addr, p->blob, DDTX_OFI_BLOB_LEN);
	return 0;
}
