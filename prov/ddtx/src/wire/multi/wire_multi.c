/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The multi wire's entry points (wire/wire.h): a wire per peer.  It drives its two sub-wires
 * through the public wire calls only, so any wire can be the fabric one.
 *
 * Capabilities are the smaller of the two sub-wires' (the protocols size a message or a work
 * request before they know which peer's wire carries it), and no multi-entry keys: an mkey would
 * have to exist in both sub-domains, so UMR is given up under a wire per peer.
 * Registrations go into both sub-domains under one key: the fabric wire chooses it (it may have
 * to take what its device hands out), the local wire is asked for the same value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/minmax.h"
#include "wire/multi/multi.h"

/* Candidates for the fabric wire when FI_DDTX_FABRIC_WIRE is not set, in order. */
static const char *const fabric_candidates[] = {"ofi", "verbs"};

static const char *pick_fabric(const struct ddtx_wire_params *params)
{
	if (params && params->fabric_wire && *params->fabric_wire)
		return params->fabric_wire;
	for (size_t i = 0; i < sizeof(fabric_candidates) / sizeof(fabric_candidates[0]); i++)
		if (ddtx_wire_available(fabric_candidates[i]))
			return fabric_candidates[i];
	return NULL;
}

static void combine_caps(struct ddtx_multi_domain *dom)
{
	const struct ddtx_wire_caps *l = dom->sub_caps[DDTX_MULTI_LOCAL];
	const struct ddtx_wire_caps *f = dom->sub_caps[DDTX_MULTI_FABRIC];
	struct ddtx_wire_caps *c = &dom->caps;

	snprintf(dom->name, sizeof(dom->name), "multi(%s+%s)", l->name, f->name);
	c->name = dom->name;
	c->kind = DDTX_WIRE_KIND_MULTI;
	c->max_sge = DDTX_MIN(l->max_sge, f->max_sge);
	c->max_mkey_entries = 0;
	c->max_send_size = DDTX_MIN(l->max_send_size, f->max_send_size);
	c->max_rma_size = DDTX_MIN(l->max_rma_size, f->max_rma_size);
	c->inline_size = DDTX_MIN(l->inline_size, f->inline_size);
	c->addr_len = DDTX_MULTI_ADDR_LEN;
	c->strided_mkeys = false;
	c->device_keys = false; /* the peer's sub-wire is not known when memory is registered */
	c->recv_scatter = l->recv_scatter && f->recv_scatter;
	/* PACK overlaps on the local wire; a fabric message is held to max_send_size (claim),
	 * under two PACK chunks over tcp;ofi_rxm, so PACK fills it anyway */
	c->pack_fill = false;
	c->pack_stream = false; /* per endpoint, not per peer: the local wire's round trip is short */
	c->pack_stores = false; /* likewise: the fabric wire's chunks are read by its core */
	/* per peer, the sub-wire's (multi_peer_carries_acks); this is for a peer not yet known */
	c->carry_acks = false;
}

static int multi_domain_open(const struct ddtx_wire_params *params, struct ddtx_wire_domain **out)
{
	struct ddtx_multi_domain *dom;
	struct ddtx_wire_params sub = params ? *params : (struct ddtx_wire_params){0};
	const char *fabric = pick_fabric(params);
	int ret;

	if (!out)
		return -FI_EINVAL;
	if (!fabric || !strcmp(fabric, "multi") || !strcmp(fabric, "auto")) {
		DDTX_WARN(FI_LOG_CORE, "multi: no wire to other hosts (FI_DDTX_FABRIC_WIRE %s)\n",
			  fabric ? fabric : "unset, and neither ofi nor verbs is available");
		return -FI_ENODEV;
	}
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = ddtx_multi_host_self(&dom->host);
	if (ret)
		goto err;
	ddtx_multi_cleanup_stale();
	dom->fabric_only = params && params->local_off;
	dom->fabric_timeout_ms = params ? params->fabric_timeout_ms : 0;
	sub.fabric_timeout_ms = 0;        /* multi probes its fabric peers itself */
	sub.wire = "shm";
	ret = ddtx_wire_domain_open(&sub, &dom->sub[DDTX_MULTI_LOCAL]);
	if (ret)
		goto err;
	sub.wire = fabric;
	ret = ddtx_wire_domain_open(&sub, &dom->sub[DDTX_MULTI_FABRIC]);
	if (ret)
		goto err_local;
	for (int s = 0; s < DDTX_MULTI_NSUB; s++)
		dom->sub_caps[s] = ddtx_wire_domain_caps(dom->sub[s]);
	combine_caps(dom);
	if (dom->sub_caps[DDTX_MULTI_LOCAL]->addr_len > DDTX_MULTI_SUB_ADDR_MAX ||
	    dom->sub_caps[DDTX_MULTI_FABRIC]->addr_len > DDTX_MULTI_SUB_ADDR_MAX) {
		DDTX_WARN(FI_LOG_CORE, "multi: a sub-wire's address is longer than %d bytes\n",
			  DDTX_MULTI_SUB_ADDR_MAX);
		ret = -FI_EINVAL;
		goto err_fabric;
	}
	dom->stats.count = DDTX_MULTI_NSUB;
	for (int s = 0; s < DDTX_MULTI_NSUB; s++)
		dom->stats.sub[s].name = dom->sub_caps[s]->name;
	DDTX_INFO(FI_LOG_CORE, "multi: %s, same-host peers through %s; max_sge %zu, max_send_size "
		  "%zu\n", dom->name, dom->fabric_only ? "the fabric (FI_DDTX_LOCAL_WIRE=none)" : "shm",
		  dom->caps.max_sge, dom->caps.max_send_size);
	dom->base.impl = &ddtx_multi_wire_impl;
	*out = &dom->base;
	return 0;
err_fabric:
	ddtx_wire_domain_close(dom->sub[DDTX_MULTI_FABRIC]);
err_local:
	ddtx_wire_domain_close(dom->sub[DDTX_MULTI_LOCAL]);
err:
	free(dom);
	return ret;
}

static void multi_domain_close(struct ddtx_wire_domain *wdom)
{
	struct ddtx_multi_domain *dom = ddtx_multi_domain_of(wdom);

	ddtx_wire_domain_close(dom->sub[DDTX_MULTI_FABRIC]);
	ddtx_wire_domain_close(dom->sub[DDTX_MULTI_LOCAL]);
	free(dom);
}

static const struct ddtx_wire_caps *multi_domain_caps(struct ddtx_wire_domain *wdom)
{
	return &ddtx_multi_domain_of(wdom)->caps;
}

static void multi_domain_stats(struct ddtx_wire_domain *wdom, struct ddtx_wire_stats *stats)
{
	struct ddtx_multi_domain *dom = ddtx_multi_domain_of(wdom);
	struct ddtx_wire_stats fabric;

	*stats = dom->stats;
	ddtx_wire_domain_stats(dom->sub[DDTX_MULTI_FABRIC], &fabric);
	stats->ring_msgs = fabric.ring_msgs;
	stats->ring_bytes = fabric.ring_bytes;
}

/* ---- addresses ---- */

static int multi_addr_check(struct ddtx_wire_domain *wdom, const void *addr, size_t len)
{
	struct ddtx_multi_domain *dom = ddtx_multi_domain_of(wdom);
	size_t flen = dom->sub_caps[DDTX_MULTI_FABRIC]->addr_len;
	uint8_t fabric[DDTX_MULTI_SUB_ADDR_MAX];

	if (ddtx_multi_addr_unpack(addr, len, fabric, flen))
		return -FI_EINVAL;
	return ddtx_wire_addr_check(dom->sub[DDTX_MULTI_FABRIC], fabric, flen) ? -FI_EINVAL : 0;
}

/* ---- memory registration ---- */

static int multi_mr_reg(struct ddtx_wire_domain *wdom, const struct iovec *iov, size_t count,
			enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
			uint32_t access, struct ddtx_wire_mr **out)
{
	struct ddtx_multi_domain *dom = ddtx_multi_domain_of(wdom);
	struct ddtx_multi_mr *mr;
	int ret;

	if (!out)
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	ret = ddtx_wire_mr_reg(dom->sub[DDTX_MULTI_FABRIC], iov, count, space, requested_key, iova,
			       access, &mr->sub[DDTX_MULTI_FABRIC]);
	if (ret)
		goto err;
	ret = ddtx_wire_mr_reg(dom->sub[DDTX_MULTI_LOCAL], iov, count, space,
			       &mr->sub[DDTX_MULTI_FABRIC]->key, iova, access,
			       &mr->sub[DDTX_MULTI_LOCAL]);
	if (ret) {
		DDTX_WARN(FI_LOG_CORE, "multi: key %#llx of the fabric wire refused by the local "
			  "wire: %s\n", (unsigned long long)mr->sub[DDTX_MULTI_FABRIC]->key,
			  fi_strerror(-ret));
		ddtx_wire_mr_dereg(dom->sub[DDTX_MULTI_FABRIC], mr->sub[DDTX_MULTI_FABRIC]);
		goto err;
	}
	mr->pub = *mr->sub[DDTX_MULTI_FABRIC];
	mr->pub.wire_priv = mr;
	*out = &mr->pub;
	return 0;
err:
	free(mr);
	return ret;
}

static int multi_mr_dereg(struct ddtx_wire_domain *wdom, struct ddtx_wire_mr *pub)
{
	struct ddtx_multi_domain *dom = ddtx_multi_domain_of(wdom);
	struct ddtx_multi_mr *mr = pub ? pub->wire_priv : NULL;
	int ret, ret2;

	if (!mr || &mr->pub != pub)
		return -FI_EINVAL;
	ret = ddtx_wire_mr_dereg(dom->sub[DDTX_MULTI_LOCAL], mr->sub[DDTX_MULTI_LOCAL]);
	ret2 = ddtx_wire_mr_dereg(dom->sub[DDTX_MULTI_FABRIC], mr->sub[DDTX_MULTI_FABRIC]);
	mr->pub.wire_priv = NULL;
	free(mr);
	return ret ? ret : ret2;
}

static int multi_key_check(struct ddtx_wire_domain *wdom, enum ddtx_key_space space,
			   uint64_t key, uint64_t addr, uint64_t len, uint32_t access)
{
	/* Both sub-domains hold the same keys over the same memory. */
	return ddtx_wire_key_check(ddtx_multi_domain_of(wdom)->sub[DDTX_MULTI_LOCAL], space, key,
				   addr, len, access);
}

/* ---- endpoint ---- */

static void sub_on_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len)
{
	struct ddtx_multi_sub_arg *a = arg;
	struct ddtx_multi_ep *ep = a->ep;
	ddtx_peer_t h = ddtx_multi_peer_of_sub(ep, a->sub, src);

	if (h == DDTX_PEER_INVALID) {
		DDTX_WARN(FI_LOG_EP_DATA, "multi: no memory for a new peer; message dropped\n");
		return;
	}
	if (ddtx_multi_live_recv(ep, &ep->peers[h], buf, len))
		return;
	if (ep->handlers.on_recv)
		ep->handlers.on_recv(ep->handler_arg, h, buf, len);
}

static void sub_on_complete(void *arg, void *wr_context, int status)
{
	struct ddtx_multi_ep *ep = ((struct ddtx_multi_sub_arg *)arg)->ep;

	if (ep->handlers.on_complete)
		ep->handlers.on_complete(ep->handler_arg, wr_context, status);
}

static void multi_ep_close(struct ddtx_wire_ep *wep)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);

	if (ep->token)
		ddtx_multi_unpublish(ep->token);
	for (int s = 0; s < DDTX_MULTI_NSUB; s++)
		ddtx_wire_ep_close(ep->sub[s]);
	ddtx_multi_peers_fini(ep);
	free(ep);
}

/* The endpoint's blob from its sub-wires' addresses, and its record in /dev/shm under it. */
static int multi_ep_publish(struct ddtx_multi_ep *ep)
{
	struct ddtx_multi_domain *dom = ep->dom;
	struct ddtx_multi_record rec = {.pid = (uint32_t)getpid(), .host = dom->host};
	uint8_t fabric[DDTX_MULTI_SUB_ADDR_MAX];
	size_t flen = sizeof(fabric), llen = sizeof(rec.local);
	int ret;

	ret = ddtx_wire_ep_getname(ep->sub[DDTX_MULTI_LOCAL], rec.local, &llen);
	if (!ret)
		ret = ddtx_wire_ep_getname(ep->sub[DDTX_MULTI_FABRIC], fabric, &flen);
	if (ret)
		return ret;
	ret = ddtx_multi_addr_pack(fabric, flen, ep->addr);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "multi: the %s address does not fit in %d bytes\n",
			  dom->sub_caps[DDTX_MULTI_FABRIC]->name, DDTX_MULTI_FABRIC_MAX);
		return ret;
	}
	rec.local_len = (uint32_t)llen;
	memcpy(rec.addr, ep->addr, sizeof(rec.addr));
	if (ep->token)
		ddtx_multi_unpublish(ep->token);
	ep->token = ddtx_multi_token(fabric, flen);
	ret = ddtx_multi_publish(ep->token, &rec);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "multi: cannot publish the endpoint in /dev/shm\n");
		ep->token = 0;
	}
	return ret;
}

static int multi_ep_open(struct ddtx_wire_domain *wdom, const struct ddtx_wire_handlers *handlers,
			 void *handler_arg, struct ddtx_wire_ep **out)
{
	struct ddtx_multi_domain *dom = ddtx_multi_domain_of(wdom);
	const struct ddtx_wire_handlers sub_handlers = {.on_recv = sub_on_recv,
						       .on_complete = sub_on_complete};
	struct ddtx_multi_ep *ep;
	int ret;

	if (!handlers || !out)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->base.impl = &ddtx_multi_wire_impl;
	ep->dom = dom;
	ep->handlers = *handlers;
	ep->handler_arg = handler_arg;
	ep->timeout_ns = (uint64_t)dom->fabric_timeout_ms * 1000000;
	for (int s = 0; s < DDTX_MULTI_NSUB; s++) {
		ep->sub_arg[s] = (struct ddtx_multi_sub_arg){.ep = ep, .sub = s};
		ret = ddtx_wire_ep_open(dom->sub[s], &sub_handlers, &ep->sub_arg[s], &ep->sub[s]);
		if (ret)
			goto err;
	}
	ret = multi_ep_publish(ep);
	if (ret)
		goto err;
	*out = &ep->base;
	return 0;
err:
	multi_ep_close(&ep->base);
	return ret;
}

static int multi_ep_getname(struct ddtx_wire_ep *wep, void *addr, size_t *len)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	size_t need = ep->dom->caps.addr_len;

	if (!len)
		return -FI_EINVAL;
	if (*len < need || !addr) {
		*len = need;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, ep->addr, need);
	*len = need;
	return 0;
}

/*
 * Service names: a name with a node, or on a fabric wire with names (ofi), binds the fabric
 * endpoint (its blob changes: published again); a service also binds the local wire's name
 * (this host's shared memory) for resolvers that give no node.
 */
static int multi_ep_bind(struct ddtx_wire_ep *wep, const struct ddtx_name_addr *name)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_name_addr local = *name;
	int ret;

	/* A fabric wire that is the local one (shm standing in, tests) would publish the same
	 * name twice in one /dev/shm: the local name alone. */
	if (strcmp(ep->dom->sub_caps[DDTX_MULTI_FABRIC]->name,
		   ep->dom->sub_caps[DDTX_MULTI_LOCAL]->name))
		ret = ddtx_wire_ep_bind(ep->sub[DDTX_MULTI_FABRIC], name);
	else
		ret = -FI_ENOSYS;
	if (!ret)
		ret = multi_ep_publish(ep);
	else if (!name->node_family && (ret == -FI_ENOSYS || ret == -FI_EINVAL))
		ret = 0;        /* no fabric name (no names there, or a service that is no port
				 * of its core): the local name only */
	if (ret || !name->service[0])
		return ret;
	local.node_family = 0;
	memset(local.node, 0, sizeof(local.node));
	local.host = ddtx_name_host_id();
	return ddtx_wire_ep_bind(ep->sub[DDTX_MULTI_LOCAL], &local);
}

static int multi_name_resolve(struct ddtx_wire_domain *wdom, const struct ddtx_name_addr *name,
			      int timeout_ms, void *addr, size_t *len)
{
	struct ddtx_multi_domain *dom = ddtx_multi_domain_of(wdom);
	uint8_t half[256];
	size_t hlen = sizeof(half);
	int ret;

	if (*len < dom->caps.addr_len || !addr) {
		*len = dom->caps.addr_len;
		return -FI_ETOOSMALL;
	}
	struct ddtx_multi_record rec;

	/* On a node: the fabric blob names the endpoint wherever it is (a peer on this host is
	 * then found by its record, multi_peer_insert). */
	if (name->node_family) {
		ret = ddtx_wire_name_resolve(dom->sub[DDTX_MULTI_FABRIC], name, timeout_ms, half,
					     &hlen);
		if (!ret)
			ret = ddtx_multi_addr_pack(half, hlen, addr);
		if (!ret)
			*len = DDTX_MULTI_ADDR_LEN;
		return ret;
	}
	ret = ddtx_wire_name_resolve(dom->sub[DDTX_MULTI_LOCAL], name, timeout_ms, half, &hlen);
	if (ret)
		return ret;
	/* The name holds the endpoint's shm address; its record holds the whole blob. */
	if (ddtx_multi_lookup_local(half, hlen, &rec)) {
		DDTX_INFO(FI_LOG_AV, "multi: the endpoint bound to %s is not a multi-wire one\n",
			  name->service);
		return -FI_EADDRNOTAVAIL;
	}
	memcpy(addr, rec.addr, DDTX_MULTI_ADDR_LEN);
	*len = DDTX_MULTI_ADDR_LEN;
	return 0;
}

static int multi_peer_insert(struct ddtx_wire_ep *wep, const void *addr, size_t len,
			     ddtx_peer_t *peer)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_domain *dom = ep->dom;
	size_t flen = dom->sub_caps[DDTX_MULTI_FABRIC]->addr_len;
	uint8_t fabric[DDTX_MULTI_SUB_ADDR_MAX];
	struct ddtx_multi_record rec;
	const void *sub_addr = fabric;
	size_t sub_len = flen;
	int sub = DDTX_MULTI_FABRIC, ret;
	ddtx_peer_t sp, mp;

	if (!peer || multi_addr_check(&dom->base, addr, len))
		return -FI_EINVAL;
	ddtx_multi_addr_unpack(addr, len, fabric, flen);
	/* On this host when its record is in our /dev/shm, live, of our host identity, and for
	 * this very blob. */
	if (!dom->fabric_only && !ddtx_multi_lookup(ddtx_multi_token(fabric, flen), &rec) &&
	    ddtx_multi_host_same(&rec.host, &dom->host) && !memcmp(rec.addr, addr, len) &&
	    rec.local_len == dom->sub_caps[DDTX_MULTI_LOCAL]->addr_len) {
		sub = DDTX_MULTI_LOCAL;
		sub_addr = rec.local;
		sub_len = rec.local_len;
	}
	ret = ddtx_wire_peer_insert(ep->sub[sub], sub_addr, sub_len, &sp);
	if (ret)
		return ret;
	mp = ddtx_multi_peer_of_sub(ep, sub, sp);
	if (mp == DDTX_PEER_INVALID)
		return -FI_ENOMEM;
	struct ddtx_multi_peer *mpeer = &ep->peers[mp];
	if (!mpeer->addr) {
		mpeer->addr = malloc(len);
		if (mpeer->addr)
			memcpy(mpeer->addr, addr, len);
	}
	DDTX_DBG(FI_LOG_AV, "multi: peer %u through %s\n", mp, dom->sub_caps[sub]->name);
	*peer = mp;
	return 0;
}

static int multi_peer_addr(struct ddtx_wire_ep *wep, ddtx_peer_t peer, void *addr, size_t *len)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);
	uint8_t half[DDTX_MULTI_SUB_ADDR_MAX], blob[DDTX_MULTI_ADDR_LEN];
	size_t hlen = sizeof(half);
	struct ddtx_multi_record rec;
	int ret;

	if (!p || !len)
		return -FI_EINVAL;
	if (*len < DDTX_MULTI_ADDR_LEN || !addr) {
		*len = DDTX_MULTI_ADDR_LEN;
		return -FI_ETOOSMALL;
	}
	if (!p->addr) {
		/* Known only from its messages: its blob from its record (same host) or from
		 * its fabric address (the blob is a function of it). */
		ret = ddtx_wire_peer_addr(ep->sub[p->sub], p->sub_peer, half, &hlen);
		if (ret)
			return ret;
		if (p->sub == DDTX_MULTI_LOCAL)
			ret = ddtx_multi_lookup_local(half, hlen, &rec);
		else
			ret = ddtx_multi_addr_pack(half, hlen, blob);
		if (ret)
			return -FI_EADDRNOTAVAIL;
		p->addr = malloc(DDTX_MULTI_ADDR_LEN);
		if (!p->addr)
			return -FI_ENOMEM;
		memcpy(p->addr, p->sub == DDTX_MULTI_LOCAL ? rec.addr : blob, DDTX_MULTI_ADDR_LEN);
	}
	memcpy(addr, p->addr, DDTX_MULTI_ADDR_LEN);
	*len = DDTX_MULTI_ADDR_LEN;
	return 0;
}

static bool multi_peer_alive(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);

	return p && ddtx_multi_live_check(ep, p) &&
	       ddtx_wire_peer_alive(ep->sub[p->sub], p->sub_peer);
}

/* Its sub-wire says whether it can (the ofi wire can: a service's address outlives its
 * process); our probes start again from now. */
static int multi_peer_revive(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);

	if (!p)
		return -FI_EINVAL;
	int ret = ddtx_wire_peer_revive(ep->sub[p->sub], p->sub_peer);
	if (ret)
		return ret;
	p->gone = false;
	p->probe_ns = 0;
	p->heard_ns = ddtx_coarse_time_ns();
	return 0;
}

/* A peer's ACK carrying is its sub-wire's (the ofi wire carries, shm does not). */
static bool multi_peer_carries_acks(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);

	return p && ddtx_wire_peer_carries_acks(ep->sub[p->sub], p->sub_peer,
						ep->dom->sub_caps[p->sub]->carry_acks);
}

/* ---- traffic: each call goes to the peer's sub-wire, and is counted there ---- */

static int multi_send(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const void *hdr,
		      size_t hdr_len, const struct iovec *iov, size_t count)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);
	size_t total = hdr_len;
	int ret;

	if (!p || count > ep->dom->caps.max_sge)
		return -FI_EINVAL;
	if (p->gone)
		return -FI_EIO;
	for (size_t i = 0; i < count && iov; i++)
		total += iov[i].iov_len;
	if (total > ep->dom->caps.max_send_size)
		return -FI_EMSGSIZE;
	ret = ddtx_wire_send(ep->sub[p->sub], p->sub_peer, hdr, hdr_len, iov, count);
	if (!ret) {
		ep->dom->stats.sub[p->sub].msgs++;
		ep->dom->stats.sub[p->sub].msg_bytes += total;
	}
	return ret;
}

static int multi_send_claim(struct ddtx_wire_ep *wep, ddtx_peer_t peer, size_t min_len,
			    struct ddtx_wire_send_buf *buf)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);
	int ret;

	if (!p || !buf)
		return -FI_EINVAL;
	if (p->gone)
		return -FI_EIO;
	if (min_len > ep->dom->caps.max_send_size)
		return -FI_EMSGSIZE;
	ret = ddtx_wire_send_claim(ep->sub[p->sub], p->sub_peer, min_len, buf);
	if (ret)
		return ret;
	buf->cap = DDTX_MIN(buf->cap, ep->dom->caps.max_send_size);
	buf->wire_route = p->sub;
	return 0;
}

static void multi_send_commit(struct ddtx_wire_ep *wep, struct ddtx_wire_send_buf *buf,
			      size_t len)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	uint32_t s = buf->wire_route;

	ddtx_wire_send_commit(ep->sub[s], buf, len);
	ep->dom->stats.sub[s].msgs++;
	ep->dom->stats.sub[s].msg_bytes += len;
}

static int multi_rma_check(struct ddtx_wire_ep *wep, ddtx_peer_t peer, enum ddtx_key_space space,
			   uint64_t rkey, uint64_t raddr, size_t len, bool write)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);

	if (!p)
		return -FI_EINVAL;
	return ddtx_wire_rma_check(ep->sub[p->sub], p->sub_peer, space, rkey, raddr, len, write);
}

static int multi_rma(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		     size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		     size_t len, void *wr_context, bool write)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);
	int ret;

	if (!p || lcount > ep->dom->caps.max_sge || len > ep->dom->caps.max_rma_size)
		return -FI_EINVAL;
	if (p->gone)
		return -FI_EIO;
	ret = write ? ddtx_wire_write(ep->sub[p->sub], p->sub_peer, local, lcount, space, rkey,
				      raddr, len, wr_context)
		    : ddtx_wire_read(ep->sub[p->sub], p->sub_peer, local, lcount, space, rkey,
				     raddr, len, wr_context);
	if (!ret) {
		ep->dom->stats.sub[p->sub].rma_ops++;
		ep->dom->stats.sub[p->sub].rma_bytes += len;
	}
	return ret;
}

static int multi_write(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		       size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		       size_t len, void *wr_context)
{
	return multi_rma(wep, peer, local, lcount, space, rkey, raddr, len, wr_context, true);
}

static int multi_read(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		      size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		      size_t len, void *wr_context)
{
	return multi_rma(wep, peer, local, lcount, space, rkey, raddr, len, wr_context, false);
}

static uint64_t multi_send_mark(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);

	return p ? ddtx_wire_send_mark(ep->sub[p->sub], p->sub_peer) : 0;
}

static bool multi_send_room(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);

	return !p || p->gone || ddtx_wire_send_room(ep->sub[p->sub], p->sub_peer);
}

static bool multi_sent(struct ddtx_wire_ep *wep, ddtx_peer_t peer, uint64_t mark)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	struct ddtx_multi_peer *p = ddtx_multi_peer_get(ep, peer);

	return !p || ddtx_wire_sent(ep->sub[p->sub], p->sub_peer, mark);
}

static int multi_ep_progress(struct ddtx_wire_ep *wep)
{
	struct ddtx_multi_ep *ep = ddtx_multi_ep_of(wep);
	int n = 0;

	for (int s = 0; s < DDTX_MULTI_NSUB; s++) {
		int r = ddtx_wire_ep_progress(ep->sub[s]);
		if (r > 0)
			n += r;
	}
	ddtx_multi_live_answer(ep);
	return n;
}

const struct ddtx_wire_impl ddtx_multi_wire_impl = {
	.name = "multi",
	.available = NULL,               /* opening it finds out whether a fabric wire is there */
	.cleanup_stale = NULL,           /* the sub-wires clean their own */
	.domain_open = multi_domain_open,
	.domain_close = multi_domain_close,
	.domain_caps = multi_domain_caps,
	.domain_stats = multi_domain_stats,
	.addr_check = multi_addr_check,
	.mr_reg = multi_mr_reg,
	.mr_dereg = multi_mr_dereg,
	.key_check = multi_key_check,
	.ep_open = multi_ep_open,
	.ep_close = multi_ep_close,
	.ep_getname = multi_ep_getname,
	.ep_bind = multi_ep_bind,
	.name_resolve = multi_name_resolve,
	.peer_insert = multi_peer_insert,
	.peer_addr = multi_peer_addr,
	.peer_alive = multi_peer_alive,
	.peer_revive = multi_peer_revive,
	.peer_carries_acks = multi_peer_carries_acks,
	.send = multi_send,
	.send_claim = multi_send_claim,
	.send_commit = multi_send_commit,
	.send_room = multi_send_room,
	.rma_check = multi_rma_check,
	.write = multi_write,
	.read = multi_read,
	.ep_progress = multi_ep_progress,
	.send_mark = multi_send_mark,
	.sent = multi_sent,
	/* no multi-entry keys (caps.max_mkey_entries 0) */
};
