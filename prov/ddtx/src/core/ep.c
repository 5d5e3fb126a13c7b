/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDM endpoint: bindings (AV, CQs, counters), enable, options and addressing, and the owner
 * interface through which proto reports completions and resolves addresses (proto/proto.h).
 * The data calls are in msg.c, tagged.c, rma.c and atomic.c.
 */
#include <stdlib.h>
#include <string.h>

#include "core/atomic.h"
#include "core/ep.h"
#include "core/nosys.h"

/* Default FI_OPT_MIN_MULTI_RECV: one eager message still fits in what is left. */
#define DDTX_DEFAULT_MIN_MULTI_RECV 16384

#define DIR_CAPS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static struct ddtx_ep *ep_of(struct fid *fid)
{
	return ddtx_container_of(fid, struct ddtx_ep, fid.fid);
}

/* ---- bindings ---- */

static int bind_av(struct ddtx_ep *ep, struct fid *bfid, uint64_t flags)
{
	struct ddtx_av *av = ddtx_av_from_fid(bfid);

	if (!av || av->domain != ep->domain || flags || ep->av) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: AV of another domain, flags or rebind\n");
		return -FI_EINVAL;
	}
	ep->av = av;
	atomic_fetch_add(&av->ref, 1);
	return 0;
}

static int bind_cq(struct ddtx_ep *ep, struct fid *bfid, uint64_t flags)
{
	struct ddtx_cq *cq = ddtx_cq_from_fid(bfid);
	const uint64_t roles = flags & (FI_TRANSMIT | FI_RECV);

	if (!cq || cq->domain != ep->domain || !roles ||
	    (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) ||
	    ((roles & FI_TRANSMIT) && ep->tx_cq) || ((roles & FI_RECV) && ep->rx_cq)) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: bad CQ binding (flags 0x%llx)\n",
			  (unsigned long long)flags);
		return -FI_EINVAL;
	}
	if (roles & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->ref, 1);
	}
	if (roles & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->ref, 1);
	}
	return 0;
}

static const uint64_t cntr_role_flag[DDTX_CNTR_COUNT] = {
	[DDTX_CNTR_SEND] = FI_SEND,		[DDTX_CNTR_RECV] = FI_RECV,
	[DDTX_CNTR_READ] = FI_READ,		[DDTX_CNTR_WRITE] = FI_WRITE,
	[DDTX_CNTR_REMOTE_READ] = FI_REMOTE_READ, [DDTX_CNTR_REMOTE_WRITE] = FI_REMOTE_WRITE,
};

static int bind_cntr(struct ddtx_ep *ep, struct fid *bfid, uint64_t flags)
{
	struct ddtx_cntr *cntr = ddtx_cntr_from_fid(bfid);
	int i;

	if (!cntr || cntr->domain != ep->domain || !flags || (flags & ~(uint64_t)DIR_CAPS)) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: bad counter binding (flags 0x%llx)\n",
			  (unsigned long long)flags);
		return -FI_EINVAL;
	}
	for (i = 0; i < DDTX_CNTR_COUNT; i++) {
		if ((flags & cntr_role_flag[i]) && ep->cntrs[i]) {
			DDTX_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: counter role already bound\n");
			return -FI_EINVAL;
		}
	}
	for (i = 0; i < DDTX_CNTR_COUNT; i++) {
		if (flags & cntr_role_flag[i]) {
			ep->cntrs[i] = cntr;
			atomic_fetch_add(&cntr->ref, 1);
		}
	}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct ddtx_ep *ep = ep_of(fid);
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	if (bfid->fclass == FI_CLASS_EQ)
		return 0; /* no connection events on RDM: accepted and ignored */
	ddtx_domain_lock(ep->domain);
	if (ep->enabled) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: endpoint already enabled\n");
		ret = -FI_EOPBADSTATE;
	} else if (bfid->fclass == FI_CLASS_AV) {
		ret = bind_av(ep, bfid, flags);
	} else if (bfid->fclass == FI_CLASS_CQ) {
		ret = bind_cq(ep, bfid, flags);
	} else if (bfid->fclass == FI_CLASS_CNTR) {
		ret = bind_cntr(ep, bfid, flags);
	} else {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: cannot bind class %zu\n", bfid->fclass);
		ret = -FI_EINVAL;
	}
	ddtx_domain_unlock(ep->domain);
	return ret;
}

/* ---- control ---- */

static int ep_enable(struct ddtx_ep *ep)
{
	uint64_t caps = ep->info->caps;
	uint64_t dir = (caps & DIR_CAPS) ? caps & DIR_CAPS : DIR_CAPS;
	bool need_tx = (caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)) &&
		       (dir & (FI_SEND | FI_READ | FI_WRITE));
	bool need_rx = (caps & (FI_MSG | FI_TAGGED)) && (dir & FI_RECV);
	bool have_tx = ep->tx_cq || ep->cntrs[DDTX_CNTR_SEND] || ep->cntrs[DDTX_CNTR_READ] ||
		       ep->cntrs[DDTX_CNTR_WRITE];
	bool have_rx = ep->rx_cq || ep->cntrs[DDTX_CNTR_RECV];

	if (ep->enabled)
		return 0;
	if (!ep->av) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_enable: no AV bound\n");
		return -FI_ENOAV;
	}
	if ((need_tx && !have_tx) || (need_rx && !have_rx)) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_enable: %s completion queue or counter missing\n",
			  need_tx && !have_tx ? "transmit" : "receive");
		return -FI_ENOCQ;
	}
	const struct ddtx_proto_ep_attr attr = {
		.tx_iov_limit = ep->info->tx_attr ? DDTX_MIN(ep->info->tx_attr->iov_limit,
							     ddtx_iov_limit())
						  : ddtx_iov_limit(),
		.rx_iov_limit = ep->info->rx_attr ? DDTX_MIN(ep->info->rx_attr->iov_limit,
							     ddtx_iov_limit())
						  : ddtx_iov_limit(),
		.rma_iov_limit = ep->info->tx_attr ? DDTX_MIN(ep->info->tx_attr->rma_iov_limit,
							      ddtx_iov_limit())
						   : ddtx_iov_limit(),
		.inject_size = ep->info->tx_attr ? ep->info->tx_attr->inject_size
						 : DDTX_INJECT_SIZE,
		.directed_recv = ep->info->caps & FI_DIRECTED_RECV,
		.tx_selective = ep->tx_selective,
		.rx_selective = ep->rx_selective,
		.min_multi_recv = ep->min_multi_recv,
		.rma_event = caps & FI_RMA_EVENT,
		.av_generation = &ep->av->generation,
	};
	ddtx_proto_ep_enable(ep->proto, &attr);
	ep->enabled = true;
	return 0;
}

static int ep_opsflag(struct ddtx_ep *ep, int command, uint64_t *flags)
{
	uint64_t role, value;

	if (!flags)
		return -FI_EINVAL;
	role = *flags & (FI_TRANSMIT | FI_RECV);
	if (role != FI_TRANSMIT && role != FI_RECV)
		return -FI_EINVAL; /* exactly one side */
	if (command == FI_GETOPSFLAG) {
		*flags = role == FI_TRANSMIT ? ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	}
	value = *flags & ~role;
	if (value & ~(uint64_t)(role == FI_TRANSMIT ? DDTX_TX_OP_FLAGS : DDTX_RX_OP_FLAGS)) {
		DDTX_WARN(FI_LOG_EP_CTRL, "FI_SETOPSFLAG: unsupported flags 0x%llx\n",
			  (unsigned long long)value);
		return -FI_EINVAL;
	}
	if (role == FI_TRANSMIT)
		ep->tx_op_flags = value;
	else
		ep->rx_op_flags = value;
	return 0;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct ddtx_ep *ep = ep_of(fid);
	int ret;

	ddtx_domain_lock(ep->domain);
	switch (command) {
	case FI_ENABLE:
		ret = ep_enable(ep);
		break;
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG:
		ret = ep_opsflag(ep, command, arg);
		break;
	default:
		ret = -FI_ENOSYS;
		break;
	}
	ddtx_domain_unlock(ep->domain);
	return ret;
}

/* ---- fi_ops_ep ---- */

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct ddtx_ep *ep = ep_of(fid);
	ssize_t ret;

	if (!fid || fid->fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	ddtx_domain_lock(ep->domain);
	ret = ddtx_proto_cancel(ep->proto, context);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct ddtx_ep *ep = ep_of(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_EINVAL;
	*(size_t *)optval = ep->min_multi_recv;
	*optlen = sizeof(size_t);
	return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct ddtx_ep *ep = ep_of(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	ddtx_domain_lock(ep->domain);
	ep->min_multi_recv = *(const size_t *)optval;
	ddtx_proto_ep_set_min_multi_recv(ep->proto, ep->min_multi_recv);
	ddtx_domain_unlock(ep->domain);
	return 0;
}

static ssize_t ep_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS; /* deprecated calls */
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ddtx_nosys_tx_ctx,
	.rx_ctx = ddtx_nosys_rx_ctx,
	.rx_size_left = ep_size_left,
	.tx_size_left = ep_size_left,
};

/* ---- fi_ops_cm: only the address ---- */

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct ddtx_ep *ep = ep_of(fid);
	int ret;

	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	if (!ep->proto)
		return -FI_EOPBADSTATE;
	ddtx_domain_lock(ep->domain);
	ret = ddtx_proto_ep_getname(ep->proto, addr, addrlen);
	ddtx_domain_unlock(ep->domain);
	return ret;
}

/*
 * Bind a service name (common/name.h) as the endpoint's source: its address is published under
 * it until the endpoint closes or binds another.  An empty service binds nothing, except on a
 * wire that crosses hosts where a name with a node makes the endpoint take that host address
 * (an ephemeral port): peers on other hosts can reach what it sends them.
 */
static int ep_bind_name(struct ddtx_ep *ep, const void *addr, size_t addrlen, const char *call)
{
	struct ddtx_name_addr name;
	int ret;

	if (!ddtx_name_is(addr, addrlen)) {
		DDTX_WARN(FI_LOG_EP_CTRL, "%s: the source address is not a ddtx service name "
			  "(concrete addresses are assigned by the wire)\n", call);
		return -FI_EINVAL;
	}
	ddtx_name_load(&name, addr, addrlen);
	if (!name.service[0] && !name.node_family)
		return 0;
	ddtx_domain_lock(ep->domain);
	ret = ddtx_proto_ep_bind(ep->proto, &name);
	ddtx_domain_unlock(ep->domain);
	if (ret == -FI_ENOSYS && !name.service[0])
		ret = 0; /* a node without a service binds nothing on a wire without names */
	if (ret)
		DDTX_WARN(FI_LOG_EP_CTRL, "%s: cannot bind service %s: %s\n", call, name.service,
			  fi_strerror(-ret));
	return ret;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct ddtx_ep *ep = ddtx_container_of(fid, struct ddtx_ep, fid.fid);

	if (!addr)
		return -FI_EINVAL;
	return ep_bind_name(ep, addr, addrlen, "fi_setname");
}

static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ddtx_nosys_connect,
	.listen = ddtx_nosys_listen,
	.accept = ddtx_nosys_accept,
	.reject = ddtx_nosys_reject,
	.shutdown = ddtx_nosys_shutdown,
	.join = ddtx_nosys_join,
};

/* ---- life cycle ---- */

static void ep_unbind_all(struct ddtx_ep *ep)
{
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->tx_cq)
		atomic_fetch_sub(&ep->tx_cq->ref, 1);
	if (ep->rx_cq)
		atomic_fetch_sub(&ep->rx_cq->ref, 1);
	for (int i = 0; i < DDTX_CNTR_COUNT; i++)
		if (ep->cntrs[i])
			atomic_fetch_sub(&ep->cntrs[i]->ref, 1);
}

static void ep_free(struct ddtx_ep *ep)
{
	fi_freeinfo(ep->info);
	free(ep);
}

static int ep_close(struct fid *fid)
{
	struct ddtx_ep *ep = ep_of(fid);
	struct ddtx_domain *domain = ep->domain;

	ddtx_domain_lock(domain);
	ddtx_list_remove(&ep->domain_entry);
	ep->enabled = false;
	/* Proto drops pending work while the AV and CQs it may touch are still referenced. */
	ddtx_proto_ep_close(ep->proto);
	ep->proto = NULL;
	ep_unbind_all(ep);
	ddtx_domain_unlock(domain);
	atomic_fetch_sub(&domain->ref, 1);
	ep_free(ep);
	return 0;
}

static struct fi_ops ep_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = ddtx_nosys_ops_open,
};

static int ep_check_info(const struct fi_info *info)
{
	if (!info) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_endpoint: NULL info\n");
		return -FI_EINVAL;
	}
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_endpoint: only FI_EP_RDM endpoints\n");
		return -FI_EINVAL;
	}
	if (info->caps & ~ddtx_caps()) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_endpoint: unsupported caps 0x%llx\n",
			  (unsigned long long)(info->caps & ~ddtx_caps()));
		return -FI_EINVAL;
	}
	return 0;
}

/* ---- the owner interface proto reports through (domain locked) ---- */

static void owner_cq_write(void *owner, enum ddtx_proto_queue q,
			   const struct ddtx_proto_completion *c)
{
	struct ddtx_ep *ep = owner;
	struct ddtx_cq *cq = q == DDTX_PROTO_TX ? ep->tx_cq : ep->rx_cq;

	if (!cq)
		return;
	if (c->err)
		ddtx_cq_write_err(cq, c->context, c->flags, c->len, c->buf, c->data, c->tag,
				  c->olen, c->err, c->src_addr);
	else
		ddtx_cq_write(cq, c->context, c->flags, c->len, c->buf, c->data, c->tag,
			      c->src_addr);
}

static void owner_cntr_add(void *owner, enum ddtx_proto_counter which, bool error)
{
	struct ddtx_cntr *cntr = ((struct ddtx_ep *)owner)->cntrs[which];

	if (!cntr)
		return;
	if (error)
		ddtx_cntr_err_inc(cntr);
	else
		ddtx_cntr_inc(cntr);
}

static int owner_av_lookup(void *owner, fi_addr_t addr, const void **blob, size_t *len)
{
	struct ddtx_ep *ep = owner;
	const struct ddtx_av_entry *e = ep->av ? ddtx_av_get(ep->av, addr) : NULL;

	if (!e)
		return -FI_EINVAL;
	*blob = e->addr;
	*len = e->addr_len;
	return 0;
}

static fi_addr_t owner_av_reverse(void *owner, const void *blob, size_t len)
{
	struct ddtx_ep *ep = owner;

	return ep->av ? ddtx_av_reverse(ep->av, blob, len) : FI_ADDR_NOTAVAIL;
}

static const struct ddtx_proto_owner_ops ep_owner_ops = {
	.cq_write = owner_cq_write,
	.cntr_add = owner_cntr_add,
	.av_lookup = owner_av_lookup,
	.av_reverse = owner_av_reverse,
};

static void ep_init_fid(struct ddtx_ep *ep, void *context)
{
	ep->fid.fid.fclass = FI_CLASS_EP;
	ep->fid.fid.context = context;
	ep->fid.fid.ops = &ep_fid_ops;
	ep->fid.ops = &ep_ops;
	ep->fid.cm = &ep_cm_ops;
	ep->fid.msg = &ddtx_msg_ops;
	ep->fid.tagged = &ddtx_tagged_ops;
	ep->fid.rma = &ddtx_rma_ops;
	ep->fid.atomic = &ddtx_atomic_ops;
	ep->fid.collective = NULL;
}

int ddtx_ep_open(struct fid_domain *domain_fid, struct fi_info *info, struct fid_ep **epp,
		 void *context)
{
	struct ddtx_domain *domain = ddtx_domain_of(domain_fid);
	struct ddtx_ep *ep;
	int ret;

	if (!domain || !epp)
		return -FI_EINVAL;
	ret = ep_check_info(info);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->domain = domain;
	ep->tx_op_flags = (info->tx_attr ? info->tx_attr->op_flags : 0) & ~DDTX_PROTO_NO_COMPLETION;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->min_multi_recv = DDTX_DEFAULT_MIN_MULTI_RECV;
	ep_init_fid(ep, context);

	ddtx_domain_lock(domain);
	ret = ddtx_proto_ep_open(domain->proto, &ep_owner_ops, ep, &ep->proto);
	if (!ret)
		ddtx_list_push_back(&domain->eps, &ep->domain_entry);
	ddtx_domain_unlock(domain);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "fi_endpoint: data path setup failed: %s\n",
			  fi_strerror(-ret));
		ep_free(ep);
		return ret;
	}
	if (info->src_addr) {
		ret = ep_bind_name(ep, info->src_addr, info->src_addrlen, "fi_endpoint");
		if (ret) {
			ddtx_domain_lock(domain);
			ddtx_list_remove(&ep->domain_entry);
			ddtx_proto_ep_close(ep->proto);
			ddtx_domain_unlock(domain);
			ep_free(ep);
			return ret;
		}
	}
	atomic_fetch_add(&domain->ref, 1);
	*epp = &ep->fid;
	return 0;
}
