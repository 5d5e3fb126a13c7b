/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The public wire calls, dispatched to the implementation that opened the domain.  Argument
 * checks that every implementation would repeat (NULL handles) are made once here.
 */
#include <stdint.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/minmax.h"
#include "wire/wire_impl.h"

extern const struct ddtx_wire_impl ddtx_shm_wire_impl;
extern const struct ddtx_wire_impl ddtx_multi_wire_impl;
#ifdef DDTX_HAVE_VERBS
extern const struct ddtx_wire_impl ddtx_verbs_wire_impl;
#endif
extern const struct ddtx_wire_impl ddtx_ofi_wire_impl;

/*
 * In order of preference for "auto": verbs when an RDMA device is present (its available()
 * lists the devices), shm otherwise, so a host without a device behaves as if verbs did not
 * exist.  multi (a wire per peer) and ofi (a core libfabric provider) are used when asked for
 * (FI_DDTX_WIRE=multi|ofi): under multi every same-host peer loses UMR and gets the fabric
 * wire's smaller limits, which the single-host default must not pay.
 */
static const struct ddtx_wire_impl *const impls[] = {
#ifdef DDTX_HAVE_VERBS
	&ddtx_verbs_wire_impl,
#endif
	&ddtx_shm_wire_impl,
	&ddtx_ofi_wire_impl,
	&ddtx_multi_wire_impl,
};

#define NIMPLS (sizeof(impls) / sizeof(impls[0]))

static const struct ddtx_wire_impl *impl_by_name(const char *name)
{
	for (size_t i = 0; i < NIMPLS; i++) {
		bool avail = !impls[i]->available || impls[i]->available();
		if ((!name || !strcmp(name, "auto")) && avail)
			return impls[i];
		if (name && !strcmp(name, impls[i]->name))
			return avail ? impls[i] : NULL;
	}
	return NULL;
}

bool ddtx_wire_available(const char *name)
{
	for (size_t i = 0; name && i < NIMPLS; i++)
		if (!strcmp(name, impls[i]->name))
			return !impls[i]->available || impls[i]->available();
	return false;
}

void ddtx_wire_domain_stats(struct ddtx_wire_domain *dom, struct ddtx_wire_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	if (dom && dom->impl->domain_stats)
		dom->impl->domain_stats(dom, stats);
}

void ddtx_wire_cleanup_stale(void)
{
	for (size_t i = 0; i < NIMPLS; i++)
		if (impls[i]->cleanup_stale)
			impls[i]->cleanup_stale();
}

int ddtx_wire_domain_open(const struct ddtx_wire_params *params, struct ddtx_wire_domain **out)
{
	const char *name = params ? params->wire : NULL;
	const struct ddtx_wire_impl *impl = impl_by_name(name);
	if (!out)
		return -FI_EINVAL;
	if (!impl) {
		DDTX_WARN(FI_LOG_CORE, "wire \"%s\" is unknown or has no device here\n", name);
		return -FI_ENODEV;
	}
	return impl->domain_open(params, out);
}

void ddtx_wire_domain_close(struct ddtx_wire_domain *dom)
{
	if (dom)
		dom->impl->domain_close(dom);
}

const struct ddtx_wire_caps *ddtx_wire_domain_caps(struct ddtx_wire_domain *dom)
{
	return dom ? dom->impl->domain_caps(dom) : NULL;
}

int ddtx_wire_addr_check(struct ddtx_wire_domain *dom, const void *addr, size_t len)
{
	if (!dom || !addr)
		return -FI_EINVAL;
	return dom->impl->addr_check(dom, addr, len);
}

int ddtx_wire_mr_reg(struct ddtx_wire_domain *dom, const struct iovec *iov, size_t count,
		     enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		     uint32_t access, struct ddtx_wire_mr **out)
{
	if (!dom)
		return -FI_EINVAL;
	return dom->impl->mr_reg(dom, iov, count, space, requested_key, iova, access, out);
}

int ddtx_wire_mr_dereg(struct ddtx_wire_domain *dom, struct ddtx_wire_mr *mr)
{
	return dom ? dom->impl->mr_dereg(dom, mr) : -FI_EINVAL;
}

int ddtx_wire_ep_open(struct ddtx_wire_domain *dom, const struct ddtx_wire_handlers *handlers,
		      void *handler_arg, struct ddtx_wire_ep **out)
{
	return dom ? dom->impl->ep_open(dom, handlers, handler_arg, out) : -FI_EINVAL;
}

void ddtx_wire_ep_close(struct ddtx_wire_ep *ep)
{
	if (ep)
		ep->impl->ep_close(ep);
}

int ddtx_wire_ep_getname(struct ddtx_wire_ep *ep, void *addr, size_t *len)
{
	return ep ? ep->impl->ep_getname(ep, addr, len) : -FI_EINVAL;
}

int ddtx_wire_ep_bind(struct ddtx_wire_ep *ep, const struct ddtx_name_addr *name)
{
	if (!ep || !name)
		return -FI_EINVAL;
	return ep->impl->ep_bind ? ep->impl->ep_bind(ep, name) : -FI_ENOSYS;
}

int ddtx_wire_name_resolve(struct ddtx_wire_domain *dom, const struct ddtx_name_addr *name,
			   int timeout_ms, void *addr, size_t *len)
{
	if (!dom || !name || !len)
		return -FI_EINVAL;
	if (!dom->impl->name_resolve)
		return -FI_ENOSYS;
	return dom->impl->name_resolve(dom, name, timeout_ms, addr, len);
}

int ddtx_wire_peer_insert(struct ddtx_wire_ep *ep, const void *addr, size_t len,
			  ddtx_peer_t *peer)
{
	return ep ? ep->impl->peer_insert(ep, addr, len, peer) : -FI_EINVAL;
}

int ddtx_wire_peer_addr(struct ddtx_wire_ep *ep, ddtx_peer_t peer, void *addr, size_t *len)
{
	return ep ? ep->impl->peer_addr(ep, peer, addr, len) : -FI_EINVAL;
}

bool ddtx_wire_peer_alive(struct ddtx_wire_ep *ep, ddtx_peer_t peer)
{
	return ep && ep->impl->peer_alive(ep, peer);
}

int ddtx_wire_peer_revive(struct ddtx_wire_ep *ep, ddtx_peer_t peer)
{
	if (!ep || !ep->impl->peer_revive)
		return -FI_ENOSYS;
	return ep->impl->peer_revive(ep, peer);
}

size_t ddtx_wire_peer_send_size(struct ddtx_wire_ep *ep, ddtx_peer_t peer, size_t max_send_size)
{
	size_t n = ep && ep->impl->peer_send_size ? ep->impl->peer_send_size(ep, peer) : 0;
	return DDTX_MAX(n, max_send_size);
}

bool ddtx_wire_peer_carries_acks(struct ddtx_wire_ep *ep, ddtx_peer_t peer, bool domain_caps)
{
	return ep && ep->impl->peer_carries_acks ? ep->impl->peer_carries_acks(ep, peer)
						 : domain_caps;
}

int ddtx_wire_send(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		   const struct iovec *iov, size_t count)
{
	return ep ? ep->impl->send(ep, peer, hdr, hdr_len, iov, count) : -FI_EINVAL;
}

int ddtx_wire_send_claim(struct ddtx_wire_ep *ep, ddtx_peer_t peer, size_t min_len,
			 struct ddtx_wire_send_buf *buf)
{
	return ep ? ep->impl->send_claim(ep, peer, min_len, buf) : -FI_EINVAL;
}

void ddtx_wire_send_commit(struct ddtx_wire_ep *ep, struct ddtx_wire_send_buf *buf, size_t len)
{
	ep->impl->send_commit(ep, buf, len);
}

bool ddtx_wire_send_room(struct ddtx_wire_ep *ep, ddtx_peer_t peer)
{
	return !ep || !ep->impl->send_room || ep->impl->send_room(ep, peer);
}

int ddtx_wire_key_check(struct ddtx_wire_domain *dom, enum ddtx_key_space space, uint64_t key,
			uint64_t addr, uint64_t len, uint32_t access)
{
	return dom ? dom->impl->key_check(dom, space, key, addr, len, access) : -FI_EINVAL;
}

int ddtx_wire_rma_check(struct ddtx_wire_ep *ep, ddtx_peer_t peer, enum ddtx_key_space space,
			uint64_t rkey, uint64_t raddr, size_t len, bool write)
{
	return ep ? ep->impl->rma_check(ep, peer, space, rkey, raddr, len, write) : -FI_EINVAL;
}

int ddtx_wire_write(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		    size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		    size_t len, void *wr_context)
{
	if (!ep)
		return -FI_EINVAL;
	return ep->impl->write(ep, peer, local, lcount, space, rkey, raddr, len, wr_context);
}

int ddtx_wire_read(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		   size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		   size_t len, void *wr_context)
{
	if (!ep)
		return -FI_EINVAL;
	return ep->impl->read(ep, peer, local, lcount, space, rkey, raddr, len, wr_context);
}

uint64_t ddtx_wire_send_mark(struct ddtx_wire_ep *ep, ddtx_peer_t peer)
{
	return ep && ep->impl->send_mark ? ep->impl->send_mark(ep, peer) : 0;
}

bool ddtx_wire_sent(struct ddtx_wire_ep *ep, ddtx_peer_t peer, uint64_t mark)
{
	return !ep || !ep->impl->sent || ep->impl->sent(ep, peer, mark);
}

int ddtx_wire_ep_progress(struct ddtx_wire_ep *ep)
{
	return ep ? ep->impl->ep_progress(ep) : 0;
}

int ddtx_wire_mkey_create(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey **out)
{
	if (!dom || !out)
		return -FI_EINVAL;
	return dom->impl->mkey_create ? dom->impl->mkey_create(dom, out) : -FI_ENOSYS;
}

void ddtx_wire_mkey_destroy(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey)
{
	if (dom && mkey && dom->impl->mkey_destroy)
		dom->impl->mkey_destroy(dom, mkey);
}

int ddtx_wire_mkey_map(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey,
		       const struct ddtx_wire_mkey_entry *entries, size_t n, uint32_t access)
{
	if (!dom || !mkey || (n && !entries) || n > mkey->max_entries)
		return -FI_EINVAL;
	return dom->impl->mkey_map ? dom->impl->mkey_map(dom, mkey, entries, n, access)
				   : -FI_ENOSYS;
}

void ddtx_wire_mkey_invalidate(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey)
{
	if (dom && mkey && dom->impl->mkey_invalidate)
		dom->impl->mkey_invalidate(dom, mkey);
}

int ddtx_wire_write_mkey(struct ddtx_wire_ep *ep, ddtx_peer_t peer,
			 const struct ddtx_wire_mkey *local, uint64_t loff,
			 enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
			 void *wr_context)
{
	if (!ep || !local)
		return -FI_EINVAL;
	if (!ep->impl->write_mkey)
		return -FI_ENOSYS;
	return ep->impl->write_mkey(ep, peer, local, loff, space, rkey, raddr, len, wr_context);
}
