/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_endpoint: bindings, options, enable; its data calls are msg.c, tagged.c and rma.c over proto. */
#ifndef DDTX_CORE_EP_H
#define DDTX_CORE_EP_H

#include "core/av.h"
#include "core/cntr.h"
#include "core/cq.h"

struct ddtx_ep {
	struct fid_ep fid;
	struct ddtx_domain *domain;
	struct ddtx_list_entry domain_entry;
	struct fi_info *info;            /* fi_dupinfo of the info it was opened with */
	struct ddtx_av *av;
	struct ddtx_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective; /* FI_SELECTIVE_COMPLETION on the binding */
	struct ddtx_cntr *cntrs[DDTX_CNTR_COUNT];
	uint64_t tx_op_flags, rx_op_flags;
	size_t min_multi_recv;           /* FI_OPT_MIN_MULTI_RECV */
	bool enabled;
	struct ddtx_proto_ep *proto;     /* the data path state and wire endpoint, owned by proto/ */
};

/* The ddtx endpoint behind a fid_ep of this provider. */
static inline struct ddtx_ep *ddtx_ep_of(struct fid_ep *fid)
{
	return ddtx_container_of(fid, struct ddtx_ep, fid);
}

int ddtx_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		 void *context);

/* The fi_ops tables of an endpoint's data calls (msg.c, tagged.c, rma.c). */
extern struct fi_ops_msg ddtx_msg_ops;
extern struct fi_ops_tagged ddtx_tagged_ops;
extern struct fi_ops_rma ddtx_rma_ops;

#endif /* DDTX_CORE_EP_H */
