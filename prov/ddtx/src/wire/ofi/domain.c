/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire's domain: the core provider's fi_info (asked of libfabric with the core's name,
 * so ddtx never finds itself), its fabric and domain, and the caps derived from them.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "common/provider.h"
#include "wire/ofi/ofi.h"

/* libfabric 1.17's tcp has FI_EP_RDM only through ofi_rxm ("net" is its own RDM endpoint);
 * named in full, the inner fi_getinfo asks ofi_rxm alone (no warning from other utilities). */
#define DDTX_OFI_DEFAULT_CORE "tcp;ofi_rxm"
/* With FI_DDTX_OFI_EP_TYPE=msg: tcp's own connected endpoints, with ddtx's connection set-up
 * (conn.c) in place of rxm's. */
#define DDTX_OFI_DEFAULT_MSG_CORE "tcp"

static bool names_ddtx(const char *name)
{
	return strcasestr(name, DDTX_PROV_NAME) != NULL;
}

struct fi_info *ddtx_ofi_core_hints(const char *prov_name, bool ep_msg)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->caps = DDTX_OFI_CORE_CAPS;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = ep_msg ? FI_EP_MSG : FI_EP_RDM;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->domain_attr->mr_mode = DDTX_OFI_MR_MODE;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->fabric_attr->prov_name = strdup(prov_name);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return NULL;
	}
	return hints;
}

/*
 * The core's entries without ddtx's needs in the hints, each logged with what it lacks (the
 * hinted fi_getinfo only says "no data").  How many were found.
 */
static int explain_refusal(const char *prov_name, bool ep_msg)
{
	struct fi_info *hints = fi_allocinfo(), *list = NULL;
	int n = 0;

	if (!hints)
		return 0;
	hints->fabric_attr->prov_name = strdup(prov_name);
	hints->mode = ~0ull;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	if (hints->fabric_attr->prov_name &&
	    !fi_getinfo(DDTX_OFI_API, NULL, NULL, 0, hints, &list)) {
		for (struct fi_info *cur = list; cur; cur = cur->next, n++) {
			const char *why = ddtx_ofi_unusable_as(cur, ep_msg ? FI_EP_MSG : FI_EP_RDM);

			DDTX_INFO(FI_LOG_CORE, "ofi: core %s domain %s (%s) skipped: %s\n",
				  cur->fabric_attr->prov_name, cur->domain_attr->name,
				  fi_tostr(&cur->ep_attr->type, FI_TYPE_EP_TYPE),
				  why ? why : "does not match ddtx's hints (FI_ORDER_SAS, FI_THREAD_SAFE)");
		}
	}
	fi_freeinfo(list);
	fi_freeinfo(hints);
	return n;
}

int ddtx_ofi_core_getinfo(const char *prov_name, bool ep_msg, struct fi_info **out)
{
	struct fi_info *hints, *list = NULL, *found = NULL;
	int ret;

	*out = NULL;
	if (!prov_name || !*prov_name)
		prov_name = ep_msg ? DDTX_OFI_DEFAULT_MSG_CORE : DDTX_OFI_DEFAULT_CORE;
	if (names_ddtx(prov_name)) {
		DDTX_INFO(FI_LOG_CORE, "ofi: core provider \"%s\" refused: ddtx cannot run over "
			  "itself\n", prov_name);
		return -FI_ENODATA;
	}
	hints = ddtx_ofi_core_hints(prov_name, ep_msg);
	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(DDTX_OFI_API, NULL, NULL, 0, hints, &list);
	fi_freeinfo(hints);
	if (ret) {
		if (!explain_refusal(prov_name, ep_msg))
			DDTX_INFO(FI_LOG_CORE, "ofi: core provider \"%s\": no entry (fi_getinfo: %s; "
				  "with FI_PROVIDER set, it must name the core too, e.g. "
				  "FI_PROVIDER=ddtx,%s)\n", prov_name, fi_strerror(-ret), prov_name);
		return ret;
	}
	/* The core named exactly first ("tcp" is tcp's own RDM endpoint, not tcp;ofi_rxm), then
	 * utility stacks over it. */
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (struct fi_info *cur = list; cur && !found; cur = cur->next) {
			const char *why;

			if ((strcasecmp(cur->fabric_attr->prov_name, prov_name) == 0) != (pass == 0))
				continue;
			why = ddtx_ofi_unusable_as(cur, ep_msg ? FI_EP_MSG : FI_EP_RDM);
			if (!why && names_ddtx(cur->fabric_attr->prov_name))
				why = "it is ddtx";
			if (why)
				DDTX_INFO(FI_LOG_CORE, "ofi: core %s domain %s skipped: %s\n",
					  cur->fabric_attr->prov_name, cur->domain_attr->name, why);
			else
				found = cur;
		}
	}
	if (found)
		found = fi_dupinfo(found);
	fi_freeinfo(list);
	if (!found)
		return -FI_ENODATA;
	*out = found;
	return 0;
}

int ddtx_wire_ofi_core_name(const char *want, bool ep_msg, char *name, size_t len)
{
	struct fi_info *core;
	int ret = ddtx_ofi_core_getinfo(want, ep_msg, &core);

	if (ret)
		return ret;
	if (strlen(core->fabric_attr->prov_name) >= len)
		ret = -FI_ETOOSMALL;
	else
		strcpy(name, core->fabric_attr->prov_name);
	fi_freeinfo(core);
	return ret;
}

/*
 * The largest message ofi_rxm sends eagerly: its bounce-buffer size (FI_OFI_RXM_BUFFER_SIZE,
 * default 16384), which its eager limit never goes below.  Messages above it take rxm's
 * segmentation or rendezvous protocols, and in libfabric 1.17 over tcp those lose receive
 * completions when several peers send at once (ft_hosts wire_per_peer_4 and the 4 KiB PACK
 * ping-pong hung; with FI_OFI_RXM_BUFFER_SIZE/EAGER_LIMIT raised above 64 KiB they pass), so the
 * wire keeps every message within it.  0 for a core that is not an rxm stack.
 */
static size_t rxm_eager_floor(const char *prov_name)
{
	const char *v;
	char *end;
	unsigned long long n;

	if (!strcasestr(prov_name, "ofi_rxm"))
		return 0;
	v = getenv("FI_OFI_RXM_BUFFER_SIZE");
	if (!v || !*v)
		return 16384;
	n = strtoull(v, &end, 0);
	return *end || n < 1024 ? 16384 : (size_t)n;
}

/* "auto" never picks the ofi wire (wire.c lists it last); it is there when asked for. */
bool ddtx_ofi_available(void)
{
	return true;
}

int ddtx_ofi_domain_open(const struct ddtx_wire_params *params, struct ddtx_wire_domain **out)
{
	struct ddtx_ofi_domain *dom;
	int ret;

	if (!out)
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	if (params)
		dom->params = *params;
	ret = ddtx_ofi_core_getinfo(dom->params.ofi_provider, dom->params.ofi_ep_msg, &dom->core);
	if (ret)
		goto err_free;
	ret = fi_fabric(dom->core->fabric_attr, &dom->fabric, NULL);
	if (ret) {
		DDTX_WARN(FI_LOG_CORE, "ofi: fi_fabric(%s): %s\n", dom->core->fabric_attr->prov_name,
			  fi_strerror(-ret));
		goto err_info;
	}
	ret = fi_domain(dom->fabric, dom->core, &dom->domain, NULL);
	if (ret) {
		DDTX_WARN(FI_LOG_CORE, "ofi: fi_domain(%s): %s\n", dom->core->domain_attr->name,
			  fi_strerror(-ret));
		goto err_fabric;
	}
	ret = pthread_mutex_init(&dom->lock, NULL);
	if (ret) {
		ret = -ret;
		goto err_domain;
	}
	dom->mr_local = dom->core->domain_attr->mr_mode & FI_MR_LOCAL;
	dom->mr_virt = dom->core->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	/* the ring's CQ data names ring, slot and length in 8 bytes (ring.c) */
	dom->ring = dom->core->domain_attr->cq_data_size >= sizeof(uint64_t);
	dom->rma_order = dom->core->tx_attr->msg_order &
			 (FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | FI_ORDER_WAW);
	dom->ep_msg = dom->core->ep_attr->type == FI_EP_MSG;
	dom->core_id = ddtx_ofi_core_id(dom->core->fabric_attr->prov_name,
					dom->core->addr_format);
	ddtx_ofi_caps_from_info(dom->core, &dom->params, &dom->caps);
	/* Each message is a core operation, a completion and a progress round on both sides, so
	 * PACK fills the receive ring's 64 KiB messages (docs/benchmark-results.md, branch
	 * ofirma: filled against cut into 8 chunks). */
	dom->caps.pack_fill = true;
	/* And PACK does not wait a round trip for its CTS (proto/send.c, stream_more). */
	dom->caps.pack_stream = true;
	/* For the same reason delivery ACKs ride on reverse traffic: MPICH's 8 KiB ping-pong over
	 * tcp 13.1 -> 10.5 us (docs/benchmark-results.md, branch ackpb). */
	dom->caps.carry_acks = true;
	size_t eager = rxm_eager_floor(dom->core->fabric_attr->prov_name);
	if (eager && eager - DDTX_OFI_PAYLOAD_OFF < dom->caps.max_send_size) {
		dom->caps.max_send_size = eager - DDTX_OFI_PAYLOAD_OFF;
		dom->caps.inline_size = dom->caps.max_send_size;
		DDTX_INFO(FI_LOG_CORE, "ofi: messages kept within %s's eager size, %zu bytes\n",
			  dom->core->fabric_attr->prov_name, eager);
	}
	while (getrandom(&dom->next_core_key, sizeof(dom->next_core_key), 0) !=
	       (ssize_t)sizeof(dom->next_core_key))
		;
	dom->next_core_key &= (1ull << 62) - 1;
	dom->next_app_key = 1;
	DDTX_INFO(FI_LOG_CORE, "ofi: domain over %s (%s, %s): max_sge %zu, max_rma_size %zu, "
		  "mr_mode%s%s%s\n", dom->core->fabric_attr->prov_name, dom->core->domain_attr->name,
		  dom->ep_msg ? "FI_EP_MSG" : "FI_EP_RDM",
		  dom->caps.max_sge, dom->caps.max_rma_size, dom->mr_local ? " local" : "",
		  dom->mr_virt ? " virt_addr" : " offsets", dom->ring ? ", receive rings" : "");
	dom->base.impl = &ddtx_ofi_wire_impl;
	*out = &dom->base;
	return 0;
err_domain:
	fi_close(&dom->domain->fid);
err_fabric:
	fi_close(&dom->fabric->fid);
err_info:
	fi_freeinfo(dom->core);
err_free:
	free(dom);
	return ret;
}

void ddtx_ofi_domain_close(struct ddtx_wire_domain *wdom)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);

	if (!dom)
		return;
	if (dom->live)
		DDTX_WARN(FI_LOG_CORE, "ofi: closing a domain with %zu keys still registered\n",
			  dom->live);
	for (int s = 0; s < 2; s++)
		for (size_t b = 0; b < DDTX_OFI_KEY_BUCKETS; b++)
			while (dom->keys[s][b]) {
				struct ddtx_ofi_mr *m = dom->keys[s][b];

				dom->keys[s][b] = m->next;
				if (m->mr)
					fi_close(&m->mr->fid);
				free(m);
			}
	if (fi_close(&dom->domain->fid))
		DDTX_WARN(FI_LOG_CORE, "ofi: the core domain is still in use\n");
	fi_close(&dom->fabric->fid);
	fi_freeinfo(dom->core);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
}

void ddtx_ofi_domain_stats(struct ddtx_wire_domain *wdom, struct ddtx_wire_stats *stats)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);

	stats->ring_msgs = __atomic_load_n(&dom->ring_msgs, __ATOMIC_RELAXED);
	stats->ring_bytes = __atomic_load_n(&dom->ring_bytes, __ATOMIC_RELAXED);
}

const struct ddtx_wire_caps *ddtx_ofi_domain_caps(struct ddtx_wire_domain *wdom)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);
	return dom ? &dom->caps : NULL;
}

int ddtx_ofi_addr_check(struct ddtx_wire_domain *wdom, const void *addr, size_t len)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);
	struct ddtx_ofi_blob b;

	if (ddtx_ofi_blob_unpack(addr, len, dom->core_id, &b)) {
		DDTX_WARN(FI_LOG_AV, "ofi: malformed address or one of another core (%zu bytes, "
			  "%d expected)\n", len, (int)DDTX_OFI_BLOB_LEN);
		return -FI_EINVAL;
	}
	return 0;
}
