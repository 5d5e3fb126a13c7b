/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Service names on the ofi wire (common/name.h, long form): (node, service) is a core address,
 * as the core's own fi_getinfo(node, service) computes it, so a client on another host reaches
 * a server with no shared /dev/shm and no exchange.
 *
 *  - bind: the endpoint's core endpoint is opened again with src_addr = the core's address of
 *    (node, service) (FI_SOURCE; no node: the address of the core domain's own interface), and
 *    its uid becomes ddtx_ofi_bound_uid of that address (blob.h) when a service was named (a
 *    node alone binds an ephemeral port, nobody resolves it: the uid stays random);
 *  - resolve: the core's fi_getinfo(node, service) gives dest_addr; the blob is that address
 *    with the uid computed the same way.
 *
 * Nothing is cached or published: a server that closes and a new one bound to the same
 * service have the same address, as two TCP listeners on one port do, and a resolver never
 * holds a stale one.  A service must be one the core understands (a port number for tcp).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire/ofi/ofi.h"

/* The core's address of name: src_addr (source) or dest_addr; 0, -FI_EADDRNOTAVAIL, -FI_ENOMEM. */
static int core_addr_of(struct ddtx_ofi_domain *dom, const struct ddtx_name_addr *name,
			bool source, uint8_t *out, size_t *len)
{
	char node[INET6_ADDRSTRLEN];
	bool has_node = ddtx_name_node_str(name, node, sizeof(node));
	const char *service = name->service[0] ? name->service : NULL;
	struct fi_info *hints, *list = NULL, *pick = NULL;
	int ret;

	if (!has_node && !source)
		return -FI_EADDRNOTAVAIL;
	hints = ddtx_ofi_core_hints(dom->core->fabric_attr->prov_name, dom->ep_msg);
	if (!hints)
		return -FI_ENOMEM;
	hints->addr_format = dom->core->addr_format;
	ret = fi_getinfo(DDTX_OFI_API, has_node ? node : NULL, service, source ? FI_SOURCE : 0,
			 hints, &list);
	fi_freeinfo(hints);
	if (ret) {
		DDTX_INFO(FI_LOG_AV, "ofi: %s service %s: the core's fi_getinfo: %s\n",
			  has_node ? node : "(no node)", service ? service : "(none)",
			  fi_strerror(-ret));
		return -FI_EADDRNOTAVAIL;
	}
	/* The entry of our core; with no node, the one of our own domain (its interface). */
	for (struct fi_info *cur = list; cur; cur = cur->next) {
		void *a = source ? cur->src_addr : cur->dest_addr;

		if (!a || strcasecmp(cur->fabric_attr->prov_name, dom->core->fabric_attr->prov_name))
			continue;
		if (!pick)
			pick = cur;
		if (!has_node && cur->domain_attr->name && dom->core->domain_attr->name &&
		    !strcmp(cur->domain_attr->name, dom->core->domain_attr->name)) {
			pick = cur;
			break;
		}
	}
	ret = -FI_EADDRNOTAVAIL;
	if (pick) {
		size_t n = source ? pick->src_addrlen : pick->dest_addrlen;

		if (n && n <= DDTX_OFI_CORE_ADDR_MAX) {
			memcpy(out, source ? pick->src_addr : pick->dest_addr, n);
			if (source)
				(void)ddtx_ofi_addr_fill_ip(dom->core->addr_format, out, n,
							    dom->core->src_addr,
							    dom->core->src_addrlen);
			ddtx_ofi_addr_canon(dom->core->addr_format, out, n);
			*len = n;
			ret = 0;
		}
	}
	fi_freeinfo(list);
	return ret;
}

int ddtx_ofi_ep_bind(struct ddtx_wire_ep *wep, const struct ddtx_name_addr *name)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	uint8_t src[DDTX_OFI_CORE_ADDR_MAX];
	size_t len = sizeof(src);
	int ret;

	if (!ep || !ddtx_name_is(name, DDTX_NAME_NODE_LEN))
		return -FI_EINVAL;
	if (!name->service[0] && !name->node_family)
		return 0;
	ret = core_addr_of(ep->dom, name, true, src, &len);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: service %s names no address of the core %s\n",
			  name->service, ep->dom->core->fabric_attr->prov_name);
		return ret == -FI_ENOMEM ? ret : -FI_EINVAL;
	}
	ret = ddtx_ofi_ep_reopen(ep, src, len, name->service[0] != '\0');
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: cannot bind service %s: %s\n", name->service,
			  fi_strerror(-ret));
		/* the core's bind error (a port in use) comes back as the core says it */
		return ret == -FI_EOPBADSTATE ? ret : -FI_EADDRINUSE;
	}
	DDTX_INFO(FI_LOG_EP_CTRL, "ofi: endpoint bound to service %s\n",
		  name->service[0] ? name->service : "(ephemeral)");
	return 0;
}

int ddtx_ofi_name_resolve(struct ddtx_wire_domain *wdom, const struct ddtx_name_addr *name,
			  int timeout_ms, void *addr, size_t *len)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);
	struct ddtx_ofi_blob b = { .core_id = dom->core_id };
	size_t n = sizeof(b.core_addr);
	int ret;

	(void)timeout_ms; /* nothing to wait for: the address is computed */
	if (!ddtx_name_is(name, DDTX_NAME_NODE_LEN))
		return -FI_EINVAL;
	if (!addr || *len < DDTX_OFI_BLOB_LEN) {
		*len = DDTX_OFI_BLOB_LEN;
		return -FI_ETOOSMALL;
	}
	if (!name->service[0] || !name->node_family) {
		DDTX_INFO(FI_LOG_AV, "ofi: a name without a node or a service names no endpoint\n");
		return -FI_EADDRNOTAVAIL;
	}
	ret = core_addr_of(dom, name, false, b.core_addr, &n);
	if (ret)
		return ret;
	b.core_len = (uint8_t)n;
	b.uid = ddtx_ofi_bound_uid(dom->core_id, b.core_addr, n);
	ret = ddtx_ofi_blob_pack(&b, addr);
	if (!ret)
		*len = DDTX_OFI_BLOB_LEN;
	return ret;
}
