/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo: one template fi_info, checked against the caller's hints and then narrowed to
 * what was asked.  libfabric's attribute-matching helpers are not exported to external
 * providers, so the rules are written out here; each refusal logs its reason at info level.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/name.h"
#include "common/settings.h"
#include "core/core.h"
#include "core/nic.h"
#include "proto/proto.h"

/* "Any tag bits": the generic format from fi_endpoint(3), used when the caller gives none. */
#define DDTX_TAG_GENERIC 0xAAAAAAAAAAAAAAAAULL

/* The RMA_* and ATOMIC_* flags are the halves of RAR/RAW/WAR/WAW (fi_endpoint(3): those cover
 * "RMA and atomic" operations), spelled out because consumers test them: MPICH scores a
 * provider one point higher for the four ATOMIC_* ones, and without them picks libfabric's
 * net or tcp (listed first, scored alike) when FI_PROVIDER names a core for the ofi wire. */
#define DDTX_MSG_ORDER                                                                           \
	(FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | FI_ORDER_WAW |               \
	 FI_ORDER_SAW | FI_ORDER_SAR | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAR |   \
	 FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR |     \
	 FI_ORDER_ATOMIC_WAW)

/*
 * Capabilities that describe the transmit / receive side of an endpoint.  FI_LOCAL_COMM and
 * FI_REMOTE_COMM are domain capabilities: they appear in info->caps and domain_attr->caps only
 * (fabtests' fi_getinfo_test rejects them in tx_attr / rx_attr).
 */
#define DDTX_TX_CAPS                                                                             \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_SEND | FI_HMEM)
#define DDTX_RX_CAPS                                                                             \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV |   \
	 FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV | FI_RMA_EVENT | FI_HMEM)
#define DDTX_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)

/*
 * Secondary capabilities returned even when not asked for (as libfabric's own providers do).
 * FI_SOURCE is left out: it costs a reverse lookup per receive, so only those who ask get it;
 * FI_RMA_EVENT too: it costs a notification message per RMA (docs/wire-protocol.md).
 */
#define DDTX_COSTLY_CAPS (FI_SOURCE | FI_RMA_EVENT)
#define DDTX_ALWAYS_CAPS (FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM)

/* mr_mode bits ddtx can honour; it requires none of them. */
#define DDTX_MR_MODE_SUPPORTED (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)

#define DDTX_QUEUE_SIZE 4096
#define DDTX_MAX_COUNT 1024

#define REFUSE(...)                                                                              \
	do {                                                                                     \
		DDTX_INFO(FI_LOG_CORE, "fi_getinfo: " __VA_ARGS__);                              \
		return -FI_ENODATA;                                                              \
	} while (0)

uint64_t ddtx_caps(void)
{
	static int hmem = -1; /* the driver is asked once (dlopen + cuInit) */

	if (hmem < 0) {
		hmem = ddtx_proto_hmem_offered();
		DDTX_INFO(FI_LOG_CORE, "FI_HMEM (CUDA device memory) %s; %s\n",
			  hmem ? "offered" : "not offered: no CUDA driver or device",
			  ddtx_proto_hmem_describe());
	}
	return DDTX_CAPS | (hmem ? FI_HMEM : 0);
}

/* The advertised iov limit: DDTX_IOV_LIMIT, or FI_DDTX_IOV_LIMIT when that is smaller. */
size_t ddtx_iov_limit(void)
{
	size_t cap = ddtx_settings.iov_limit;

	return cap && cap < DDTX_IOV_LIMIT ? cap : DDTX_IOV_LIMIT;
}

struct fi_info *ddtx_info_template(void)
{
	struct fi_info *info = fi_allocinfo();

	if (!info)
		return NULL;
	info->caps = ddtx_caps();
	info->mode = 0;
	info->addr_format = FI_FORMAT_UNSPEC;

	*info->tx_attr = (struct fi_tx_attr){
		.caps = ddtx_caps() & DDTX_TX_CAPS,
		.op_flags = 0,
		.msg_order = DDTX_MSG_ORDER,
		.comp_order = FI_ORDER_NONE,
		.inject_size = DDTX_INJECT_SIZE,
		.size = DDTX_QUEUE_SIZE,
		.iov_limit = ddtx_iov_limit(),
		.rma_iov_limit = ddtx_iov_limit(),
	};
	*info->rx_attr = (struct fi_rx_attr){
		.caps = ddtx_caps() & DDTX_RX_CAPS,
		.op_flags = 0,
		.msg_order = DDTX_MSG_ORDER,
		.comp_order = FI_ORDER_NONE,
		.total_buffered_recv = 0,
		.size = DDTX_QUEUE_SIZE,
		.iov_limit = ddtx_iov_limit(),
	};
	*info->ep_attr = (struct fi_ep_attr){
		.type = FI_EP_RDM,
		.protocol = FI_PROTO_UNSPEC,
		.protocol_version = 1,
		.max_msg_size = DDTX_MAX_MSG_SIZE,
		.msg_prefix_size = 0,
		.max_order_raw_size = DDTX_MAX_MSG_SIZE,
		.max_order_war_size = DDTX_MAX_MSG_SIZE,
		.max_order_waw_size = DDTX_MAX_MSG_SIZE,
		.mem_tag_format = DDTX_TAG_GENERIC,
		.tx_ctx_cnt = 1,
		.rx_ctx_cnt = 1,
	};
	*info->domain_attr = (struct fi_domain_attr){
		.name = strdup(DDTX_PROV_NAME),
		.threading = FI_THREAD_SAFE,
		.control_progress = FI_PROGRESS_MANUAL,
		.data_progress = FI_PROGRESS_MANUAL,
		.resource_mgmt = FI_RM_ENABLED,
		.av_type = FI_AV_UNSPEC,
		.mr_mode = 0,
		.mr_key_size = sizeof(uint64_t),
		.cq_data_size = DDTX_CQ_DATA_SIZE,
		.cq_cnt = DDTX_MAX_COUNT,
		.ep_cnt = DDTX_MAX_COUNT,
		.tx_ctx_cnt = DDTX_MAX_COUNT,
		.rx_ctx_cnt = DDTX_MAX_COUNT,
		.max_ep_tx_ctx = 1,
		.max_ep_rx_ctx = 1,
		.max_ep_stx_ctx = 0,
		.max_ep_srx_ctx = 0,
		.cntr_cnt = DDTX_MAX_COUNT,
		.mr_iov_limit = DDTX_MR_IOV_LIMIT,
		.caps = DDTX_DOMAIN_CAPS,
		.mode = 0,
		.max_err_data = 0,
		.mr_cnt = (size_t)1 << 20,
	};
	info->fabric_attr->name = strdup(DDTX_PROV_NAME);
	info->fabric_attr->prov_name = NULL; /* libfabric fills it */
	info->fabric_attr->prov_version = DDTX_PROV_VERSION;
	info->nic = ddtx_nic_new(); /* fi_info -v: FI_HMEM and the device pack kernels */
	if (!info->domain_attr->name || !info->fabric_attr->name || !info->nic) {
		fi_freeinfo(info);
		return NULL;
	}
	return info;
}

/* prov_name may name a stack ("ddtx;ofi_rxm"); ddtx must be one of its layers. */
static bool prov_name_ok(const char *name)
{
	char *copy, *tok, *save = NULL;
	bool found = false;

	if (!name)
		return true;
	copy = strdup(name);
	if (!copy)
		return false;
	for (tok = strtok_r(copy, ";", &save); tok && !found; tok = strtok_r(NULL, ";", &save))
		found = strcasecmp(tok, DDTX_PROV_NAME) == 0;
	free(copy);
	return found;
}

static int check_fabric(const struct fi_fabric_attr *h)
{
	if (!h)
		return 0;
	if (h->name && strcmp(h->name, DDTX_PROV_NAME) != 0)
		REFUSE("fabric name %s is not %s\n", h->name, DDTX_PROV_NAME);
	if (!prov_name_ok(h->prov_name))
		REFUSE("provider %s requested\n", h->prov_name);
	return 0;
}

static bool threading_ok(enum fi_threading t)
{
	switch (t) {
	case FI_THREAD_UNSPEC:
	case FI_THREAD_SAFE:
	case FI_THREAD_FID:
	case FI_THREAD_DOMAIN:
	case FI_THREAD_COMPLETION:
	case FI_THREAD_ENDPOINT:
		return true; /* the domain lock makes every model safe */
	default:
		return false;
	}
}

static bool progress_ok(enum fi_progress p)
{
	return p == FI_PROGRESS_UNSPEC || p == FI_PROGRESS_MANUAL;
}

/*
 * mr_mode by API version.  Before 1.5 it is an enum: UNSPEC/BASIC/SCALABLE.  From 1.5 it is a
 * bit mask of what the application can cope with, where the old BASIC and SCALABLE values are
 * still accepted on their own.  ddtx requires no bit, so the answer is the legacy value asked
 * for, or the supported subset of the requested bits (FI_MR_LOCAL dropped: it would only make
 * the application register buffers ddtx never needs registered).
 */
static int resolve_mr_mode(uint32_t version, int hint, int *out)
{
	if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		if (hint == FI_MR_UNSPEC)
			*out = FI_MR_SCALABLE;
		else if (hint == FI_MR_BASIC || hint == FI_MR_SCALABLE)
			*out = hint;
		else
			REFUSE("mr_mode %d is not valid before API 1.5\n", hint);
		return 0;
	}
	if (hint == FI_MR_BASIC || hint == FI_MR_SCALABLE) {
		*out = hint;
		return 0;
	}
	if (hint & (FI_MR_BASIC | FI_MR_SCALABLE))
		REFUSE("mr_mode 0x%x mixes FI_MR_BASIC/SCALABLE with mode bits\n", hint);
	*out = hint & DDTX_MR_MODE_SUPPORTED;
	return 0;
}

static int check_domain(uint32_t version, const struct fi_domain_attr *h)
{
	int mr_mode;

	if (!h)
		return 0;
	if (h->name && strcmp(h->name, DDTX_PROV_NAME) != 0)
		REFUSE("domain name %s is not %s\n", h->name, DDTX_PROV_NAME);
	if (!threading_ok(h->threading))
		REFUSE("threading %d not supported\n", h->threading);
	if (!progress_ok(h->control_progress) || !progress_ok(h->data_progress))
		REFUSE("only FI_PROGRESS_MANUAL is supported\n");
	if (h->av_type != FI_AV_UNSPEC && h->av_type != FI_AV_TABLE && h->av_type != FI_AV_MAP)
		REFUSE("av_type %d not supported\n", h->av_type);
	if (resolve_mr_mode(version, h->mr_mode, &mr_mode))
		return -FI_ENODATA;
	if (h->mr_key_size > sizeof(uint64_t))
		REFUSE("mr_key_size %zu > 8\n", h->mr_key_size);
	if (h->cq_data_size > DDTX_CQ_DATA_SIZE)
		REFUSE("cq_data_size %zu > %d\n", h->cq_data_size, DDTX_CQ_DATA_SIZE);
	if (h->caps & ~(uint64_t)DDTX_DOMAIN_CAPS)
		REFUSE("domain caps 0x%llx not supported\n",
		       (unsigned long long)(h->caps & ~(uint64_t)DDTX_DOMAIN_CAPS));
	if (h->max_ep_tx_ctx > 1 || h->max_ep_rx_ctx > 1 || h->max_ep_stx_ctx ||
	    h->max_ep_srx_ctx)
		REFUSE("scalable or shared contexts not supported\n");
	if (h->mr_iov_limit > DDTX_MR_IOV_LIMIT)
		REFUSE("mr_iov_limit %zu > %d\n", h->mr_iov_limit, DDTX_MR_IOV_LIMIT);
	if (h->auth_key_size)
		REFUSE("authorization keys not supported\n");
	return 0;
}

static int check_ep(const struct fi_ep_attr *h)
{
	if (!h)
		return 0;
	if (h->type != FI_EP_UNSPEC && h->type != FI_EP_RDM)
		REFUSE("endpoint type %d (only FI_EP_RDM)\n", h->type);
	if (h->protocol != FI_PROTO_UNSPEC)
		REFUSE("protocol %u not supported\n", h->protocol);
	if (h->max_msg_size > DDTX_MAX_MSG_SIZE)
		REFUSE("max_msg_size %zu too large\n", h->max_msg_size);
	if (h->msg_prefix_size)
		REFUSE("message prefixes not supported\n");
	if (h->max_order_raw_size > DDTX_MAX_MSG_SIZE || h->max_order_war_size > DDTX_MAX_MSG_SIZE ||
	    h->max_order_waw_size > DDTX_MAX_MSG_SIZE)
		REFUSE("max_order_*_size too large\n");
	if (h->tx_ctx_cnt > 1 || h->rx_ctx_cnt > 1)
		REFUSE("scalable or shared contexts not supported\n");
	if (h->auth_key_size)
		REFUSE("authorization keys not supported\n");
	return 0;
}

static int check_tx(const struct fi_tx_attr *h)
{
	if (!h)
		return 0;
	if (h->caps & ~ddtx_caps())
		REFUSE("tx caps 0x%llx not supported\n",
		       (unsigned long long)(h->caps & ~ddtx_caps()));
	if (h->op_flags & ~(uint64_t)DDTX_TX_OP_FLAGS)
		REFUSE("tx op_flags 0x%llx not supported\n",
		       (unsigned long long)(h->op_flags & ~(uint64_t)DDTX_TX_OP_FLAGS));
	if (h->msg_order & ~(uint64_t)DDTX_MSG_ORDER)
		REFUSE("tx msg_order 0x%llx not provided\n",
		       (unsigned long long)(h->msg_order & ~(uint64_t)DDTX_MSG_ORDER));
	if (h->comp_order != FI_ORDER_NONE)
		REFUSE("tx comp_order 0x%llx not provided\n", (unsigned long long)h->comp_order);
	if (h->inject_size > DDTX_INJECT_SIZE)
		REFUSE("inject_size %zu > %d\n", h->inject_size, DDTX_INJECT_SIZE);
	if (h->size > DDTX_QUEUE_SIZE)
		REFUSE("tx size %zu > %d\n", h->size, DDTX_QUEUE_SIZE);
	if (h->iov_limit > ddtx_iov_limit())
		REFUSE("tx iov_limit %zu > %zu\n", h->iov_limit, ddtx_iov_limit());
	if (h->rma_iov_limit > ddtx_iov_limit())
		REFUSE("rma_iov_limit %zu > %zu\n", h->rma_iov_limit, ddtx_iov_limit());
	return 0;
}

static int check_rx(const struct fi_rx_attr *h)
{
	if (!h)
		return 0;
	if (h->caps & ~ddtx_caps())
		REFUSE("rx caps 0x%llx not supported\n",
		       (unsigned long long)(h->caps & ~ddtx_caps()));
	if (h->op_flags & ~(uint64_t)DDTX_RX_OP_FLAGS)
		REFUSE("rx op_flags 0x%llx not supported\n",
		       (unsigned long long)(h->op_flags & ~(uint64_t)DDTX_RX_OP_FLAGS));
	if (h->msg_order & ~(uint64_t)DDTX_MSG_ORDER)
		REFUSE("rx msg_order 0x%llx not provided\n",
		       (unsigned long long)(h->msg_order & ~(uint64_t)DDTX_MSG_ORDER));
	if (h->comp_order != FI_ORDER_NONE)
		REFUSE("rx comp_order 0x%llx not provided\n", (unsigned long long)h->comp_order);
	if (h->size > DDTX_QUEUE_SIZE)
		REFUSE("rx size %zu > %d\n", h->size, DDTX_QUEUE_SIZE);
	if (h->iov_limit > ddtx_iov_limit())
		REFUSE("rx iov_limit %zu > %zu\n", h->iov_limit, ddtx_iov_limit());
	return 0;
}

static int check_hints(uint32_t version, const struct fi_info *h)
{
	if (h->caps & ~ddtx_caps())
		REFUSE("caps 0x%llx not supported\n",
		       (unsigned long long)(h->caps & ~ddtx_caps()));
	if (h->addr_format != FI_FORMAT_UNSPEC)
		REFUSE("addr_format %u not supported (ddtx addresses are opaque)\n",
		       h->addr_format);
	if (check_fabric(h->fabric_attr) || check_domain(version, h->domain_attr) ||
	    check_ep(h->ep_attr) || check_tx(h->tx_attr) || check_rx(h->rx_attr))
		return -FI_ENODATA;
	return 0;
}

/*
 * Narrow the template to the request: requested primary caps plus the secondary caps always
 * provided, and echo what the caller must see back exactly (threading, av_type, op_flags,
 * resource management, tag format).
 */
static void apply_hints(uint32_t version, const struct fi_info *h, struct fi_info *info)
{
	const struct fi_domain_attr *hd = h->domain_attr;

	if (h->caps)
		info->caps = h->caps | (ddtx_caps() & DDTX_ALWAYS_CAPS);
	else
		info->caps = ddtx_caps() & ~(uint64_t)DDTX_COSTLY_CAPS;
	info->tx_attr->caps = info->caps & DDTX_TX_CAPS;
	info->rx_attr->caps = info->caps & DDTX_RX_CAPS;

	if (h->tx_attr)
		info->tx_attr->op_flags = h->tx_attr->op_flags;
	if (h->rx_attr)
		info->rx_attr->op_flags = h->rx_attr->op_flags;
	if (h->ep_attr && h->ep_attr->mem_tag_format)
		info->ep_attr->mem_tag_format = h->ep_attr->mem_tag_format;
	if (!hd) {
		resolve_mr_mode(version, FI_MR_UNSPEC, &info->domain_attr->mr_mode);
		return;
	}
	if (hd->threading != FI_THREAD_UNSPEC)
		info->domain_attr->threading = hd->threading;
	if (hd->resource_mgmt != FI_RM_UNSPEC)
		info->domain_attr->resource_mgmt = hd->resource_mgmt;
	if (hd->av_type != FI_AV_UNSPEC)
		info->domain_attr->av_type = hd->av_type;
	resolve_mr_mode(version, hd->mr_mode, &info->domain_attr->mr_mode);
}

static int set_addr(void **dst, size_t *dstlen, const void *addr, size_t len)
{
	void *p = malloc(len);

	if (!p)
		return -FI_ENOMEM;
	memcpy(p, addr, len);
	free(*dst);
	*dst = p;
	*dstlen = len;
	return 0;
}

/*
 * Addresses (common/name.h): fi_info carries service names, resolved when inserted into an AV.
 * FI_SOURCE or no node: src_addr names service (the endpoint opened from the info binds it;
 * none: it binds nothing).  A node without FI_SOURCE: dest_addr names the endpoint bound to
 * service on node, and src_addr is the hints' or a name binding nothing.  node must be this host
 * (the shm wire reaches no other).
 */
static int fill_addrs(const char *node, const char *service, uint64_t flags,
		      const struct fi_info *hints, struct fi_info *info)
{
	struct ddtx_name_addr name;
	bool source = (flags & FI_SOURCE) || !node;
	int ret = 0;

	if (node && !ddtx_node_is_local(node))
		REFUSE("node %s is not this host (ddtx's shm wire reaches only this host)\n", node);
	if (ddtx_name_build(&name, service))
		REFUSE("service \"%s\" is not a ddtx service name (at most %d of [A-Za-z0-9._-])\n",
		       service, DDTX_NAME_SERVICE_MAX - 1);
	if (hints && hints->src_addr && hints->src_addrlen)
		ret = set_addr(&info->src_addr, &info->src_addrlen, hints->src_addr,
			       hints->src_addrlen);
	if (!ret && hints && hints->dest_addr && hints->dest_addrlen)
		ret = set_addr(&info->dest_addr, &info->dest_addrlen, hints->dest_addr,
			       hints->dest_addrlen);
	if (!ret && !source)
		ret = set_addr(&info->dest_addr, &info->dest_addrlen, &name, sizeof(name));
	if (!ret && source && (node || service || !info->src_addr))
		ret = set_addr(&info->src_addr, &info->src_addrlen, &name, sizeof(name));
	if (!ret && !info->src_addr) {
		ddtx_name_build(&name, NULL);
		ret = set_addr(&info->src_addr, &info->src_addrlen, &name, sizeof(name));
	}
	return ret;
}

char *ddtx_layered_core(const char *prov_name)
{
	const char *last;

	if (!prov_name || !(last = strrchr(prov_name, ';')) || last == prov_name ||
	    strcasecmp(last + 1, DDTX_PROV_NAME) != 0)
		return NULL;
	return strndup(prov_name, (size_t)(last - prov_name));
}

static bool wire_is(const char *name)
{
	return ddtx_settings.wire && strcasecmp(ddtx_settings.wire, name) == 0;
}

/*
 * The entries of one template: the native one (wire chosen by FI_DDTX_WIRE) unless the ofi wire
 * is forced or a layered name was asked for, then the layered one over the core of the hints'
 * "<core>;ddtx", else of FI_DDTX_OFI_PROVIDER (default tcp;ofi_rxm), when that core is usable.
 * fabric_attr->prov_name is the core's name; libfabric appends ";ddtx".
 */
static int add_entries(const struct fi_info *hints, bool named_dest, struct fi_info *native,
		       struct fi_info **info)
{
	const char *hname = hints && hints->fabric_attr ? hints->fabric_attr->prov_name : NULL;
	char *asked = ddtx_layered_core(hname);
	bool want_native = !asked && !wire_is("ofi");
	bool want_layered = asked || !ddtx_settings.wire || wire_is("ofi") || wire_is("auto");
	char core[128];
	struct fi_info *layered = NULL;

	/* Service names are the shm wire's directory: over a core provider, addresses travel by
	 * fi_getname and fi_av_insert only, so a destination named by node/service has no
	 * layered entry, and layered entries carry no name to bind. */
	if (want_layered && named_dest)
		DDTX_INFO(FI_LOG_CORE, "fi_getinfo: no layered (ofi wire) entry for a destination "
			  "named by node/service: the ofi wire has no service names\n");
	if (want_layered && !named_dest &&
	    ddtx_proto_ofi_core_name(asked ? asked : ddtx_settings.ofi_provider, core,
				    sizeof(core)) == 0) {
		layered = fi_dupinfo(native);
		if (!layered) {
			free(asked);
			return -FI_ENOMEM;
		}
		free(layered->fabric_attr->prov_name);
		layered->fabric_attr->prov_name = strdup(core);
		free(layered->src_addr);
		free(layered->dest_addr);
		layered->src_addr = layered->dest_addr = NULL;
		layered->src_addrlen = layered->dest_addrlen = 0;
		if (!layered->fabric_attr->prov_name) {
			fi_freeinfo(layered);
			free(asked);
			return -FI_ENOMEM;
		}
	}
	free(asked);
	if (want_native) {
		native->next = layered;
		*info = native;
	} else {
		fi_freeinfo(native);
		*info = layered;
	}
	if (!*info)
		REFUSE("the ofi wire was asked for and no core provider is usable\n");
	return 0;
}

int ddtx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *out;
	int ret;

	if (!info) {
		DDTX_WARN(FI_LOG_CORE, "fi_getinfo: NULL info pointer\n");
		return -FI_EINVAL;
	}
	*info = NULL;
	if (FI_VERSION_LT(DDTX_FI_VERSION, version))
		REFUSE("API version %u.%u is newer than %u.%u\n", FI_MAJOR(version),
		       FI_MINOR(version), FI_MAJOR(DDTX_FI_VERSION), FI_MINOR(DDTX_FI_VERSION));
	if (hints && check_hints(version, hints))
		return -FI_ENODATA;
	if (hints && hints->src_addr && hints->src_addrlen &&
	    !ddtx_name_is(hints->src_addr, hints->src_addrlen))
		REFUSE("hints' src_addr is not a ddtx service name\n");

	out = ddtx_info_template();
	if (!out)
		return -FI_ENOMEM;
	if (hints)
		apply_hints(version, hints, out);
	else
		resolve_mr_mode(version, FI_MR_UNSPEC, &out->domain_attr->mr_mode);
	ret = fill_addrs(node, service, flags, hints, out);
	if (ret) {
		fi_freeinfo(out);
		return ret;
	}
	return add_entries(hints, node && !(flags & FI_SOURCE), out, info);
}
