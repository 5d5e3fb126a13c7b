/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit test of ddtx's fi_getinfo hint matching, calling ddtx_getinfo() directly (no
 * libfabric provider loading involved).
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "common/name.h"
#include "common/settings.h"
#include "core/core.h"

static int failures;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__,     \
				__func__, #cond);                                                \
			failures++;                                                              \
		}                                                                                \
	} while (0)

#define API FI_VERSION(1, 17)

static struct fi_info *rdm_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h) {
		perror("fi_allocinfo");
		exit(2);
	}
	h->ep_attr->type = FI_EP_RDM;
	return h;
}

/* getinfo with these hints must fail with -FI_ENODATA; frees the hints. */
static void expect_enodata(const char *what, uint32_t version, struct fi_info *h)
{
	struct fi_info *info = NULL;
	int ret = ddtx_getinfo(version, NULL, NULL, 0, h, &info);

	if (ret != -FI_ENODATA || info) {
		fprintf(stderr, "%s: expected -FI_ENODATA, got %d\n", what, ret);
		failures++;
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void test_no_hints(void)
{
	struct fi_info *info = NULL;

	CHECK(ddtx_getinfo(API, NULL, NULL, 0, NULL, &info) == 0);
	if (!info)
		return;
	/* the native entry first; after it at most the ofi wire's layered entry over a core
	 * (fabric_attr->prov_name the core's, libfabric appends ";ddtx"), with the same caps and
	 * a long-form name that binds nothing (fi_ddtx(7), ADDRESSES) */
	CHECK(info->fabric_attr->prov_name == NULL);
	if (info->next) {
		const struct fi_info *l = info->next;
		CHECK(l->next == NULL);
		CHECK(l->fabric_attr->prov_name && !strstr(l->fabric_attr->prov_name, "ddtx"));
		CHECK(l->caps == info->caps && l->dest_addr == NULL);
		CHECK(l->src_addrlen == DDTX_NAME_NODE_LEN && ddtx_name_is(l->src_addr, l->src_addrlen));
		CHECK(((const struct ddtx_name_addr *)l->src_addr)->node_family == 0 &&
		      ((const struct ddtx_name_addr *)l->src_addr)->service[0] == '\0');
	}
	CHECK(info->caps == DDTX_CAPS);
	CHECK((info->caps & (FI_MSG | FI_MULTI_RECV)) == (FI_MSG | FI_MULTI_RECV)); /* MPICH score */
	CHECK(info->mode == 0);
	CHECK(info->addr_format == FI_FORMAT_UNSPEC);
	CHECK(info->src_addr && info->src_addrlen == DDTX_NAME_LEN && info->dest_addr == NULL); /* test_addresses */
	CHECK(!(info->tx_attr->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)) &&
	      !(info->rx_attr->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM))); /* fabtests caps1/2 */
	CHECK(info->ep_attr->type == FI_EP_RDM);
	CHECK(info->ep_attr->max_msg_size == DDTX_MAX_MSG_SIZE);
	CHECK(info->ep_attr->max_msg_size >= 16384);
	CHECK(info->ep_attr->mem_tag_format == 0xAAAAAAAAAAAAAAAAULL);
	CHECK(info->ep_attr->tx_ctx_cnt == 1 && info->ep_attr->rx_ctx_cnt == 1);
	CHECK(info->tx_attr->iov_limit == DDTX_IOV_LIMIT);
	CHECK(info->tx_attr->rma_iov_limit == DDTX_IOV_LIMIT);
	CHECK(info->tx_attr->inject_size == DDTX_INJECT_SIZE);
	CHECK(info->tx_attr->op_flags == 0);
	CHECK(info->tx_attr->msg_order & FI_ORDER_SAS);
	CHECK(info->tx_attr->comp_order == FI_ORDER_NONE);
	CHECK(info->rx_attr->iov_limit == DDTX_IOV_LIMIT);
	CHECK(info->rx_attr->total_buffered_recv == 0);
	CHECK(info->domain_attr->name && strcmp(info->domain_attr->name, "ddtx") == 0);
	CHECK(info->domain_attr->threading == FI_THREAD_SAFE);
	CHECK(info->domain_attr->control_progress == FI_PROGRESS_MANUAL);
	CHECK(info->domain_attr->data_progress == FI_PROGRESS_MANUAL);
	CHECK(info->domain_attr->resource_mgmt == FI_RM_ENABLED);
	CHECK(info->domain_attr->mr_mode == 0);
	CHECK(info->domain_attr->mr_key_size == 8);
	CHECK(info->domain_attr->cq_data_size == DDTX_CQ_DATA_SIZE);
	CHECK(info->domain_attr->mr_iov_limit == DDTX_MR_IOV_LIMIT);
	CHECK(info->fabric_attr->name && strcmp(info->fabric_attr->name, "ddtx") == 0);
	CHECK(info->fabric_attr->prov_name == NULL);
	CHECK(info->fabric_attr->prov_version == DDTX_PROV_VERSION);

	/* What is returned must survive fi_dupinfo/fi_freeinfo (libfabric's allocators). */
	struct fi_info *dup = fi_dupinfo(info);
	CHECK(dup != NULL);
	fi_freeinfo(dup);
	fi_freeinfo(info);
}

static void test_mpich_hints(void)
{
	struct fi_info *h = rdm_hints(), *info = NULL;
	const uint64_t caps = FI_MSG | FI_TAGGED | FI_RMA | FI_MULTI_RECV | FI_DIRECTED_RECV;
	const uint64_t mode = FI_CONTEXT | FI_ASYNC_IOV | FI_RX_CQ_DATA | FI_CONTEXT2;

	h->mode = mode;
	h->caps = caps;
	h->addr_format = FI_FORMAT_UNSPEC;
	h->ep_attr->mem_tag_format = 0x00E000007FFFFFFFULL;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->mr_mode = 0;
	h->domain_attr->cq_data_size = 4;
	h->tx_attr->op_flags = FI_COMPLETION | FI_DELIVERY_COMPLETE;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;

	CHECK(ddtx_getinfo(FI_VERSION(1, 13), NULL, NULL, 0, h, &info) == 0);
	if (info) {
		CHECK((info->caps & caps) == caps);
		CHECK(!(info->caps & FI_SOURCE)); /* not asked for */
		CHECK((info->mode & ~mode) == 0);
		CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN);
		CHECK(info->tx_attr->op_flags == (FI_COMPLETION | FI_DELIVERY_COMPLETE));
		CHECK(info->tx_attr->msg_order & FI_ORDER_SAS);
		CHECK(info->domain_attr->mr_mode == 0);
		CHECK(info->domain_attr->cq_data_size >= 4);
		CHECK(info->domain_attr->av_type == FI_AV_TABLE);
		CHECK(info->domain_attr->resource_mgmt == FI_RM_ENABLED);
		CHECK(info->domain_attr->data_progress == FI_PROGRESS_MANUAL);
		CHECK(info->ep_attr->mem_tag_format == 0x00E000007FFFFFFFULL);
		CHECK(info->ep_attr->type == FI_EP_RDM);
		CHECK(info->tx_attr->inject_size > 0);
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void test_ompi_hints(void)
{
	struct fi_info *h = rdm_hints(), *info = NULL;
	const uint64_t caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;

	h->caps = caps;
	h->mode = FI_CONTEXT;
	h->domain_attr->av_type = FI_AV_MAP;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->mr_mode = 0;
	h->domain_attr->cq_data_size = 4;
	h->tx_attr->op_flags = FI_COMPLETION;
	h->fabric_attr->prov_name = strdup("ddtx");

	CHECK(ddtx_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) == 0);
	if (info) {
		CHECK((info->caps & caps) == caps);
		CHECK(!(info->caps & FI_MSG)); /* primary caps only as asked */
		CHECK(info->domain_attr->av_type == FI_AV_MAP);
		CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN);
		CHECK(info->domain_attr->mr_mode == 0);
		CHECK(info->ep_attr->mem_tag_format == 0xAAAAAAAAAAAAAAAAULL);
		CHECK(info->tx_attr->op_flags == FI_COMPLETION);
	}
	fi_freeinfo(info);

	/* MPI_THREAD_MULTIPLE asks for FI_THREAD_SAFE instead. */
	h->domain_attr->threading = FI_THREAD_SAFE;
	info = NULL;
	CHECK(ddtx_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) == 0);
	if (info)
		CHECK(info->domain_attr->threading == FI_THREAD_SAFE);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/*
 * FI_ATOMIC and FI_RMA_EVENT are granted when asked for and reported on the sides they belong to
 * (fi_getinfo(3): atomics on both, RMA events on the receive side); hints with no caps get every
 * primary cap but not FI_RMA_EVENT, which costs a message per RMA.
 */
static void test_atomic_caps(void)
{
	struct fi_info *h = rdm_hints(), *info = NULL;

	h->caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, h, &info) == 0);
	if (info) {
		CHECK((info->caps & (FI_ATOMIC | FI_RMA_EVENT)) == (FI_ATOMIC | FI_RMA_EVENT));
		CHECK(info->tx_attr->caps & FI_ATOMIC);
		CHECK((info->rx_attr->caps & (FI_ATOMIC | FI_RMA_EVENT)) ==
		      (FI_ATOMIC | FI_RMA_EVENT));
		CHECK(!(info->tx_attr->caps & FI_RMA_EVENT));
	}
	fi_freeinfo(info);
	h->caps = 0;
	info = NULL;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, h, &info) == 0);
	if (info) {
		CHECK(info->caps & FI_ATOMIC);
		CHECK(!(info->caps & FI_RMA_EVENT));
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void test_refusals(void)
{
	struct fi_info *h;

	h = rdm_hints();
	h->caps = FI_TAGGED | FI_TRIGGER;
	expect_enodata("FI_TRIGGER", API, h);

	h = rdm_hints();
	h->caps = FI_MSG | FI_HMEM;
	expect_enodata("FI_HMEM", API, h);

	h = rdm_hints();
	h->ep_attr->type = FI_EP_MSG;
	expect_enodata("FI_EP_MSG", API, h);

	h = rdm_hints();
	h->ep_attr->type = FI_EP_DGRAM;
	expect_enodata("FI_EP_DGRAM", API, h);

	h = rdm_hints();
	h->tx_attr->iov_limit = DDTX_IOV_LIMIT + 1;
	expect_enodata("tx iov_limit above DDTX_IOV_LIMIT", API, h);

	h = rdm_hints();
	h->rx_attr->iov_limit = DDTX_IOV_LIMIT + 1;
	expect_enodata("rx iov_limit above DDTX_IOV_LIMIT", API, h);

	h = rdm_hints();
	h->tx_attr->inject_size = DDTX_INJECT_SIZE + 1;
	expect_enodata("inject_size", API, h);

	h = rdm_hints();
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	expect_enodata("FI_PROGRESS_AUTO", API, h);

	h = rdm_hints();
	h->domain_attr->control_progress = FI_PROGRESS_AUTO;
	expect_enodata("control FI_PROGRESS_AUTO", API, h);

	h = rdm_hints();
	h->fabric_attr->prov_name = strdup("verbs");
	expect_enodata("prov_name verbs", API, h);

	h = rdm_hints();
	h->fabric_attr->name = strdup("IB-0xfe80");
	expect_enodata("fabric name", API, h);

	h = rdm_hints();
	h->domain_attr->name = strdup("mlx5_0");
	expect_enodata("domain name", API, h);

	h = rdm_hints();
	h->tx_attr->op_flags = FI_COMPLETION | FI_MULTICAST;
	expect_enodata("tx op_flags", API, h);

	h = rdm_hints();
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAS;
	expect_enodata("msg_order RAS", API, h);

	h = rdm_hints();
	h->domain_attr->cq_data_size = 16;
	expect_enodata("cq_data_size 16", API, h);

	h = rdm_hints();
	h->addr_format = FI_SOCKADDR_IN;
	expect_enodata("addr_format", API, h);

	h = rdm_hints();
	h->ep_attr->tx_ctx_cnt = 4;
	expect_enodata("scalable endpoint", API, h);

	h = rdm_hints();
	h->domain_attr->mr_mode = FI_MR_BASIC | FI_MR_LOCAL;
	expect_enodata("mr_mode BASIC|LOCAL", API, h);

	expect_enodata("API 1.18", FI_VERSION(1, 18), NULL);
}

static int getinfo_mr_mode(uint32_t version, int hint)
{
	struct fi_info *h = rdm_hints(), *info = NULL;
	int mr_mode = -1;

	h->domain_attr->mr_mode = hint;
	if (ddtx_getinfo(version, NULL, NULL, 0, h, &info) == 0 && info)
		mr_mode = info->domain_attr->mr_mode;
	fi_freeinfo(info);
	fi_freeinfo(h);
	return mr_mode;
}

static void test_mr_mode(void)
{
	const int all = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
			FI_MR_ENDPOINT | FI_MR_RAW | FI_MR_HMEM | FI_MR_MMU_NOTIFY;

	CHECK(getinfo_mr_mode(API, 0) == 0);
	CHECK(getinfo_mr_mode(API, all) ==
	      (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY));
	CHECK(getinfo_mr_mode(API, FI_MR_LOCAL) == 0);
	CHECK(getinfo_mr_mode(API, FI_MR_BASIC) == FI_MR_BASIC);
	CHECK(getinfo_mr_mode(API, FI_MR_SCALABLE) == FI_MR_SCALABLE);
	/* Before 1.5 the value is an enum and UNSPEC must be resolved. */
	CHECK(getinfo_mr_mode(FI_VERSION(1, 4), FI_MR_UNSPEC) == FI_MR_SCALABLE);
	CHECK(getinfo_mr_mode(FI_VERSION(1, 4), FI_MR_BASIC) == FI_MR_BASIC);
	CHECK(getinfo_mr_mode(FI_VERSION(1, 4), FI_MR_VIRT_ADDR) == -1);

	struct fi_info *info = NULL;
	CHECK(ddtx_getinfo(FI_VERSION(1, 4), NULL, NULL, 0, NULL, &info) == 0);
	if (info)
		CHECK(info->domain_attr->mr_mode == FI_MR_SCALABLE);
	fi_freeinfo(info);
}

static void test_misc(void)
{
	struct fi_info *h, *info = NULL;

	CHECK(ddtx_getinfo(API, NULL, NULL, 0, NULL, NULL) == -FI_EINVAL);

	/* FI_SOURCE only when asked; unspecified fields take the template's values. */
	h = fi_allocinfo();
	h->caps = FI_MSG | FI_SOURCE;
	CHECK(ddtx_getinfo(API, "localhost", "service", FI_SOURCE, h, &info) == 0);
	if (info) {
		CHECK(info->caps & FI_SOURCE);
		CHECK(info->rx_attr->caps & FI_SOURCE);
		CHECK(!(info->caps & FI_TAGGED));
		CHECK(info->domain_attr->threading == FI_THREAD_SAFE);
	}
	fi_freeinfo(info);
	info = NULL;

	/* Hints without caps: every primary cap, but still no FI_SOURCE. */
	h->caps = 0;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, h, &info) == 0);
	if (info) {
		CHECK((info->caps & (FI_MSG | FI_TAGGED | FI_RMA)) == (FI_MSG | FI_TAGGED | FI_RMA));
		CHECK(!(info->caps & FI_SOURCE));
	}
	fi_freeinfo(info);
	info = NULL;

	/* Limits at exactly ours, a stacked prov_name, named fabric/domain: accepted. */
	h->tx_attr->iov_limit = DDTX_IOV_LIMIT;
	h->rx_attr->iov_limit = DDTX_IOV_LIMIT;
	h->tx_attr->inject_size = DDTX_INJECT_SIZE;
	h->fabric_attr->prov_name = strdup("ddtx;ofi_rxm");
	h->fabric_attr->name = strdup("ddtx");
	h->domain_attr->name = strdup("ddtx");
	h->domain_attr->threading = FI_THREAD_COMPLETION;
	CHECK(ddtx_getinfo(API, NULL, NULL, FI_PROV_ATTR_ONLY, h, &info) == 0);
	if (info)
		CHECK(info->domain_attr->threading == FI_THREAD_COMPLETION);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* The service name in an fi_info address (NULL if it is not one). */
static const struct ddtx_name_addr *name_of(const void *addr, size_t len)
{
	return ddtx_name_is(addr, len) ? addr : NULL;
}

static void test_addresses(void)
{
	struct fi_info *info = NULL, *h;
	const struct ddtx_name_addr *n;
	struct ddtx_name_addr bad;

	/* No node, service or flags: a source that binds nothing, no destination. */
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, NULL, &info) == 0);
	if (info) {
		n = name_of(info->src_addr, info->src_addrlen);
		CHECK(n && n->service[0] == '\0' && n->user == (uint32_t)getuid());
		CHECK(n && n->host == ddtx_name_host_id());
		CHECK(info->src_addrlen == DDTX_NAME_LEN && !info->dest_addr && !info->dest_addrlen);
		CHECK(info->addr_format == FI_FORMAT_UNSPEC);
	}
	fi_freeinfo(info);

	/* FI_SOURCE with a service (node or not): the source binds it. */
	const char *nodes[] = {NULL, "localhost", "127.0.0.1", "127.0.0.2"};
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		info = NULL;
		CHECK(ddtx_getinfo(API, nodes[i], "9228", FI_SOURCE, NULL, &info) == 0);
		if (!info)
			continue;
		n = name_of(info->src_addr, info->src_addrlen);
		CHECK(n && strcmp(n->service, "9228") == 0);
		CHECK(!info->dest_addr);
		fi_freeinfo(info);
	}
	/* No node but a service, no flag: also the source (fi_getinfo(3)). */
	info = NULL;
	CHECK(ddtx_getinfo(API, NULL, "srv.1", 0, NULL, &info) == 0);
	if (info) {
		n = name_of(info->src_addr, info->src_addrlen);
		CHECK(n && strcmp(n->service, "srv.1") == 0 && !info->dest_addr);
	}
	fi_freeinfo(info);

	/* A node without FI_SOURCE: the destination names the service there; the source is the
	 * hints' (honoured) or one that binds nothing. */
	info = NULL;
	CHECK(ddtx_getinfo(API, "127.0.0.1", "9228", 0, NULL, &info) == 0);
	if (info) {
		n = name_of(info->dest_addr, info->dest_addrlen);
		CHECK(n && strcmp(n->service, "9228") == 0 && n->host == ddtx_name_host_id());
		n = name_of(info->src_addr, info->src_addrlen);
		CHECK(n && n->service[0] == '\0');
	}
	h = rdm_hints();
	ddtx_name_build(&bad, "client7");
	h->src_addr = malloc(sizeof(bad));
	memcpy(h->src_addr, &bad, sizeof(bad));
	h->src_addrlen = sizeof(bad);
	fi_freeinfo(info);
	info = NULL;
	CHECK(ddtx_getinfo(API, "localhost", "9228", 0, h, &info) == 0);
	if (info) {
		n = name_of(info->src_addr, info->src_addrlen);
		CHECK(n && strcmp(n->service, "client7") == 0);
		n = name_of(info->dest_addr, info->dest_addrlen);
		CHECK(n && strcmp(n->service, "9228") == 0);
	}
	fi_freeinfo(info);
	/* ...and a node without a service still gets both addresses (fabtests' getinfo_test). */
	info = NULL;
	CHECK(ddtx_getinfo(API, "localhost", NULL, 0, h, &info) == 0);
	if (info)
		CHECK(info->src_addr && info->src_addrlen && info->dest_addr && info->dest_addrlen);
	fi_freeinfo(info);
	/* The hints' destination is honoured when no node overrides it. */
	h->dest_addr = malloc(sizeof(bad));
	memcpy(h->dest_addr, &bad, sizeof(bad));
	h->dest_addrlen = sizeof(bad);
	info = NULL;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, h, &info) == 0);
	if (info)   /* the native (shm) entry: the short form of the same name */
		CHECK(info->dest_addrlen == DDTX_NAME_LEN &&
		      memcmp(info->dest_addr, &bad, DDTX_NAME_LEN) == 0);
	if (info && info->next)   /* the layered (ofi) entry: the long form */
		CHECK(info->next->dest_addrlen == DDTX_NAME_NODE_LEN &&
		      memcmp(info->next->dest_addr, &bad, sizeof(bad)) == 0);
	fi_freeinfo(info);
	fi_freeinfo(h);

	/* Another host: no shm entry; the ofi wire's entry (when its core is usable) names the
	 * service on that node's address. */
	info = NULL;
	int r = ddtx_getinfo(API, "192.0.2.1", "9228", 0, NULL, &info);
	CHECK(r == 0 ? info != NULL : r == -FI_ENODATA && !info);
	if (info) {
		CHECK(info->fabric_attr->prov_name && !info->next);
		n = name_of(info->dest_addr, info->dest_addrlen);
		CHECK(n && info->dest_addrlen == DDTX_NAME_NODE_LEN && n->node_family == AF_INET &&
		      !memcmp(n->node, "\xc0\x00\x02\x01", 4) && !strcmp(n->service, "9228"));
	}
	fi_freeinfo(info);
	/* Refusals: a malformed service, a src_addr that is no service name. */
	info = NULL;
	CHECK(ddtx_getinfo(API, "no-such-host.invalid", "9228", 0, NULL, &info) == -FI_ENODATA);
	CHECK(ddtx_getinfo(API, NULL, "a/b", FI_SOURCE, NULL, &info) == -FI_ENODATA);
	CHECK(ddtx_getinfo(API, NULL, "123456789012345678901234", FI_SOURCE, NULL, &info) ==
	      -FI_ENODATA);
	h = rdm_hints();
	h->src_addr = calloc(1, 48);
	h->src_addrlen = 48;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, h, &info) == -FI_ENODATA && !info);
	fi_freeinfo(h);
	/* Name checks: every reserved field and the terminator matter. */
	ddtx_name_build(&bad, "x");
	CHECK(ddtx_name_is(&bad, sizeof(bad)) && !ddtx_name_is(&bad, sizeof(bad) - 1));
	bad.reserved2 = 1;
	CHECK(!ddtx_name_is(&bad, sizeof(bad)));
	ddtx_name_build(&bad, "x");
	memset(bad.service, 'a', sizeof(bad.service));
	CHECK(!ddtx_name_is(&bad, sizeof(bad)));
	CHECK(ddtx_node_is_local(NULL) && ddtx_node_is_local("127.0.0.1"));
	/* Long names: a node of a known family, zero padding after it; short names have none. */
	CHECK(ddtx_name_build_node(&bad, "127.1.0.2", "9228") == 0);
	CHECK(bad.node_family == AF_INET && ddtx_name_is(&bad, DDTX_NAME_NODE_LEN) &&
	      !ddtx_name_is(&bad, DDTX_NAME_LEN));
	char str[80];
	size_t need = sizeof(str);
	ddtx_name_str(&bad, str, sizeof(str), &need);
	CHECK(!strcmp(str, "fi_ddtx://svc/9228@127.1.0.2") && need == strlen(str) + 1);
	bad.node[4] = 1;
	CHECK(!ddtx_name_is(&bad, DDTX_NAME_NODE_LEN));
	bad.node[4] = 0;
	bad.node_family = 99;
	CHECK(!ddtx_name_is(&bad, DDTX_NAME_NODE_LEN));
	CHECK(ddtx_name_build_node(&bad, "::1", "x") == 0 && bad.node_family == AF_INET6 &&
	      bad.node[15] == 1 && ddtx_name_is(&bad, DDTX_NAME_NODE_LEN));
	CHECK(ddtx_name_build_node(&bad, "no-such-host.invalid", "x") == -FI_ENODATA);
	CHECK(ddtx_name_build_node(&bad, NULL, "x") == 0 && bad.node_family == 0 &&
	      bad.host == ddtx_name_host_id() && ddtx_name_is(&bad, DDTX_NAME_LEN));
	CHECK(!ddtx_node_is_local("192.0.2.1"));
}

/* FI_DDTX_WIRE=multi: the native entry carries long names (any node), mr_iov_limit 1. */
static void test_multi_names(void)
{
	char *saved = ddtx_settings.wire, multi[] = "multi";
	struct fi_info *info = NULL;
	const struct ddtx_name_addr *n;

	ddtx_settings.wire = multi;
	CHECK(ddtx_getinfo(API, "192.0.2.1", "9228", 0, NULL, &info) == 0 && info);
	if (info) {
		CHECK(info->fabric_attr->prov_name == NULL && !info->next);
		n = name_of(info->dest_addr, info->dest_addrlen);
		CHECK(n && info->dest_addrlen == DDTX_NAME_NODE_LEN && n->node_family == AF_INET);
		CHECK(info->src_addrlen == DDTX_NAME_NODE_LEN);
		CHECK(info->domain_attr->mr_iov_limit == 1);
	}
	fi_freeinfo(info);
	info = NULL;
	CHECK(ddtx_getinfo(API, "127.1.0.1", NULL, FI_SOURCE, NULL, &info) == 0 && info);
	if (info) {
		n = name_of(info->src_addr, info->src_addrlen);
		CHECK(n && n->node_family == AF_INET && !n->service[0] && !info->dest_addr);
	}
	fi_freeinfo(info);
	ddtx_settings.wire = saved;
}

/* FI_DDTX_IOV_LIMIT caps what is advertised and accepted (fi_ubertest 1.17 needs < 256). */
static void test_iov_cap(void)
{
	struct fi_info *info = NULL, *h;
	size_t saved = ddtx_settings.iov_limit;

	ddtx_settings.iov_limit = 200;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, NULL, &info) == 0);
	if (info)
		CHECK(info->tx_attr->iov_limit == 200 && info->rx_attr->iov_limit == 200 &&
		      info->tx_attr->rma_iov_limit == 200);
	fi_freeinfo(info);
	h = rdm_hints();
	h->tx_attr->iov_limit = 201;
	expect_enodata("tx iov_limit above FI_DDTX_IOV_LIMIT", API, h);
	h = rdm_hints();
	h->rx_attr->iov_limit = 201;
	expect_enodata("rx iov_limit above FI_DDTX_IOV_LIMIT", API, h);
	ddtx_settings.iov_limit = 500; /* between MPICH's 32 and ddtx's own limit */
	info = NULL;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, NULL, &info) == 0);
	if (info)
		CHECK(info->tx_attr->iov_limit == 500 && info->rx_attr->iov_limit == 500);
	fi_freeinfo(info);
	ddtx_settings.iov_limit = DDTX_IOV_LIMIT + 1; /* above ddtx's own limit: no effect */
	info = NULL;
	CHECK(ddtx_getinfo(API, NULL, NULL, 0, NULL, &info) == 0);
	if (info)
		CHECK(info->tx_attr->iov_limit == DDTX_IOV_LIMIT &&
		      info->tx_attr->rma_iov_limit == DDTX_IOV_LIMIT);
	fi_freeinfo(info);
	ddtx_settings.iov_limit = saved;
}

int main(void)
{
	test_iov_cap();
	test_addresses();
	test_multi_names();
	test_no_hints();
	test_mpich_hints();
	test_ompi_hints();
	test_atomic_caps();
	test_refusals();
	test_mr_mode();
	test_misc();
	if (failures) {
		fprintf(stderr, "test_getinfo: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_getinfo: all checks passed\n");
	return 0;
}
