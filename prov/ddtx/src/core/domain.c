/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_domain: owns the lock that serialises everything opened on it, the data path's domain
 * (proto: engine and wire domain), the list of endpoints progressed by CQ/counter reads, and the
 * FI_DDTX_DOMAIN_OPS_1 extension (statistics, layout handles).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic.h"
#include "core/av.h"
#include "core/cntr.h"
#include "core/cq.h"
#include "core/ep.h"
#include "core/mr.h"
#include "core/nosys.h"
#include "core/poll.h"

static struct fi_ops domain_fid_ops;

struct ddtx_domain *ddtx_domain_of(struct fid_domain *domain)
{
	if (!domain || domain->fid.fclass != FI_CLASS_DOMAIN ||
	    domain->fid.ops != &domain_fid_ops) {
		DDTX_WARN(FI_LOG_DOMAIN, "not a ddtx domain\n");
		return NULL;
	}
	return ddtx_container_of(domain, struct ddtx_domain, fid);
}

void ddtx_domain_progress_locked(struct ddtx_domain *domain)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_proto_domain_progress(domain->proto); /* also with no endpoint enabled */
	ddtx_list_foreach_safe(&domain->eps, it, tmp) {
		struct ddtx_ep *ep = ddtx_container_of(it, struct ddtx_ep, domain_entry);

		if (ep->enabled)
			ddtx_proto_progress(ep->proto);
	}
}

void ddtx_domain_progress(struct ddtx_domain *domain)
{
	ddtx_domain_lock(domain);
	ddtx_domain_progress_locked(domain);
	ddtx_domain_unlock(domain);
}

/* ---- FI_DDTX_DOMAIN_OPS_1 ---- */

static int domain_stats(struct fid_domain *fid, struct fi_ddtx_stats *stats)
{
	struct ddtx_domain *domain = ddtx_domain_of(fid);

	if (!domain || !stats)
		return -FI_EINVAL;
	ddtx_domain_lock(domain);
	ddtx_proto_domain_stats(domain->proto, stats);
	ddtx_domain_unlock(domain);
	return 0;
}

static int domain_layout_create(struct fid_domain *fid, const struct iovec *blocks,
				size_t count, struct fi_ddtx_layout **layout)
{
	struct ddtx_domain *domain = ddtx_domain_of(fid);

	return domain ? ddtx_proto_layout_create(domain->proto, blocks, count, layout)
		      : -FI_EINVAL;
}

static int domain_layout_create_strided(struct fid_domain *fid, size_t block_len, size_t stride,
					size_t count, struct fi_ddtx_layout **layout)
{
	struct ddtx_domain *domain = ddtx_domain_of(fid);

	return domain ? ddtx_proto_layout_create_strided(domain->proto, block_len, stride, count,
							 layout)
		      : -FI_EINVAL;
}

static int domain_layout_create_vector(struct fid_domain *fid, size_t offset, size_t block_len,
				       size_t ndims, const size_t *counts, const size_t *strides,
				       struct fi_ddtx_layout **layout)
{
	struct ddtx_domain *domain = ddtx_domain_of(fid);

	return domain ? ddtx_proto_layout_create_vector(domain->proto, offset, block_len, ndims,
							counts, strides, layout)
		      : -FI_EINVAL;
}

static int domain_layout_create_subarray(struct fid_domain *fid, size_t ndims,
					 const size_t *sizes, const size_t *subsizes,
					 const size_t *starts, size_t elem_size,
					 struct fi_ddtx_layout **layout)
{
	struct ddtx_domain *domain = ddtx_domain_of(fid);

	return domain ? ddtx_proto_layout_create_subarray(domain->proto, ndims, sizes, subsizes,
							  starts, elem_size, layout)
		      : -FI_EINVAL;
}

static int domain_layout_create_indexed_block(struct fid_domain *fid, size_t block_len,
					      const size_t *offsets, size_t count,
					      struct fi_ddtx_layout **layout)
{
	struct ddtx_domain *domain = ddtx_domain_of(fid);

	return domain ? ddtx_proto_layout_create_indexed_block(domain->proto, block_len, offsets,
							       count, layout)
		      : -FI_EINVAL;
}

static struct fi_ddtx_ops ddtx_ext_ops = {
	.size = sizeof(struct fi_ddtx_ops),
	.stats = domain_stats,
	.scheme_name = ddtx_proto_scheme_name,
	.layout_create = domain_layout_create,
	.layout_create_strided = domain_layout_create_strided,
	.layout_free = ddtx_proto_layout_free,
	.layout_size = ddtx_proto_layout_size,
	.layout_create_vector = domain_layout_create_vector,
	.layout_create_subarray = domain_layout_create_subarray,
	.layout_create_indexed_block = domain_layout_create_indexed_block,
};

static int domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			   void *context)
{
	if (!name || !ops)
		return -FI_EINVAL;
	if (strcmp(name, FI_DDTX_DOMAIN_OPS_1) != 0) {
		DDTX_INFO(FI_LOG_DOMAIN, "fi_open_ops: unknown interface %s\n", name);
		return -FI_ENOSYS;
	}
	*ops = &ddtx_ext_ops;
	return 0;
}

/* ---- life cycle ---- */

static void print_stats(struct ddtx_domain *domain)
{
	struct fi_ddtx_stats st, *s = &st;
	ddtx_proto_domain_stats(domain->proto, s);

	fprintf(stderr, "ddtx stats (domain %p): tx_ops %llu rx_ops %llu iov_entries_max %llu "
			"last_scheme %s\n",
		(const void *)domain, (unsigned long long)s->tx_ops,
		(unsigned long long)s->rx_ops, (unsigned long long)s->iov_entries_max,
		ddtx_proto_scheme_name(s->last_scheme));
	for (int i = 0; i < FI_DDTX_SCHEME_COUNT; i++)
		fprintf(stderr, "ddtx stats:   %-5s ops %llu bytes %llu\n",
			ddtx_proto_scheme_name((enum fi_ddtx_scheme)i), (unsigned long long)s->ops[i],
			(unsigned long long)s->bytes[i]);
#define U(x) (unsigned long long)(x)
	fprintf(stderr, "ddtx stats:   layout cache hits %llu misses %llu evictions %llu "
			"invalidations %llu\n", U(s->layout_hits), U(s->layout_misses),
		U(s->layout_evictions), U(s->layout_invalidations));
	fprintf(stderr, "ddtx stats:   registration cache hits %llu misses %llu evictions %llu "
			"invalidations %llu\n", U(s->reg_hits), U(s->reg_misses),
		U(s->reg_evictions), U(s->reg_invalidations));
	fprintf(stderr, "ddtx stats:   mkey cache hits %llu misses %llu evictions %llu; remote "
			"hits %llu misses %llu\n", U(s->mkey_hits), U(s->mkey_misses),
		U(s->mkey_evictions), U(s->rmkey_hits), U(s->rmkey_misses));
	fprintf(stderr, "ddtx stats:   mkey pool level %llu/%llu created %llu refills %llu "
			"empty %llu\n", U(s->pool_level), U(s->pool_capacity), U(s->pool_created),
		U(s->pool_refills), U(s->pool_empty));
	fprintf(stderr, "ddtx stats:   registration thread layouts %llu time %llu ns failures "
			"%llu\n", U(s->regthread_layouts), U(s->regthread_ns),
		U(s->regthread_failures));
	fprintf(stderr, "ddtx stats:   zero copy not ready %llu umr fallbacks %llu explorations "
			"%llu learned threshold %llu B\n", U(s->zcopy_not_ready),
		U(s->umr_fallbacks), U(s->explorations), U(s->learned_threshold));
	fprintf(stderr, "ddtx stats:   layout handles: operations %llu\n", U(s->handle_ops));
	fprintf(stderr, "ddtx stats:   PACK bytes streamed before the CTS %llu\n",
		U(s->stream_bytes));
	fprintf(stderr, "ddtx stats:   PACK bytes written with streaming stores %llu\n",
		U(s->pack_streaming_bytes));
	fprintf(stderr, "ddtx stats:   ofi receive rings: msgs %llu bytes %llu\n",
		U(s->ofi_ring_msgs), U(s->ofi_ring_bytes));
	for (uint32_t i = 0; i < s->nwires; i++)
		fprintf(stderr, "ddtx stats:   wire %-5s peers %llu msgs %llu bytes %llu rma ops "
				"%llu bytes %llu\n", s->wires[i].name, U(s->wires[i].peers),
			U(s->wires[i].msgs), U(s->wires[i].msg_bytes), U(s->wires[i].rma_ops),
			U(s->wires[i].rma_bytes));
	fprintf(stderr, "ddtx stats:   device memory staged sends %llu receives %llu bytes %llu "
			"copy errors %llu; copies: segments %llu 2d %llu kernel %llu fallbacks "
			"%llu\n", U(s->hmem_tx_staged), U(s->hmem_rx_staged), U(s->hmem_staged_bytes),
		U(s->hmem_copy_errors), U(s->hmem_copy_ops[FI_DDTX_HMEM_COPY_SEGMENTS]),
		U(s->hmem_copy_ops[FI_DDTX_HMEM_COPY_2D]),
		U(s->hmem_copy_ops[FI_DDTX_HMEM_COPY_KERNEL]), U(s->hmem_copy_fallbacks));
	fprintf(stderr, "ddtx stats:   device memory detection: driver pointer queries %llu "
			"answered by the host page cache %llu\n", U(s->hmem_ptr_queries),
		U(s->hmem_ptr_cached));
	fprintf(stderr, "ddtx stats:   CUDA IPC: sends %llu staged after a decline %llu; receives "
			"%llu bytes %llu (2-D %llu batched %llu kernel %llu) declined %llu errors %llu; "
			"mappings opened %llu reused %llu stale %llu; sends packed on the device "
			"%llu\n", U(s->hmem_ipc_tx),
		U(s->hmem_ipc_tx_staged), U(s->hmem_ipc_rx), U(s->hmem_ipc_bytes),
		U(s->hmem_ipc_copy_2d), U(s->hmem_ipc_copy_batched), U(s->hmem_ipc_copy_kernel),
		U(s->hmem_ipc_declined),
		U(s->hmem_ipc_errors), U(s->hmem_ipc_opens), U(s->hmem_ipc_hits),
		U(s->hmem_ipc_stale), U(s->hmem_ipc_tx_packed));
	fprintf(stderr, "ddtx stats:   CUDA IPC receives' time: planning %llu ns, copies %llu "
			"ns\n", U(s->hmem_ipc_plan_ns), U(s->hmem_ipc_copy_ns));
	fprintf(stderr, "ddtx stats:   device memory zero copy: sends %llu receives %llu bytes "
			"%llu stale registrations dropped %llu; through the pack kernel %llu\n",
		U(s->hmem_direct_tx), U(s->hmem_direct_rx), U(s->hmem_direct_bytes),
		U(s->hmem_direct_stale), U(s->hmem_direct_kernel));
	fprintf(stderr, "ddtx stats:   pulls %llu split with the sender %llu through its windows "
			"%llu\n", U(s->pulls), U(s->pull_splits), U(s->pull_windows));
	fprintf(stderr, "ddtx stats:   delivery ACKs carried %llu alone %llu\n",
		U(s->acks_carried), U(s->acks_alone));
	fprintf(stderr, "ddtx stats:   peers started afresh after they were gone %llu\n",
		U(s->peer_restarts));
	fprintf(stderr, "ddtx stats:   unexpected payload held at most %llu bytes; sends that "
			"waited for credit %llu\n", U(s->unexp_bytes_max), U(s->credit_waits));
#undef U
}

/* Open domains, so that FI_DDTX_STATS reports those a program never closes. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ddtx_list open_domains = {{&open_domains.head, &open_domains.head}};

void ddtx_domain_stop_threads_at_exit(void)
{
	pthread_mutex_lock(&open_lock);
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&open_domains, it, tmp) {
		struct ddtx_domain *d = ddtx_container_of(it, struct ddtx_domain, open_entry);

		ddtx_proto_domain_stop_threads(d->proto);
	}
	pthread_mutex_unlock(&open_lock);
}

void ddtx_domain_stats_at_exit(void)
{
	if (!ddtx_settings.print_stats)
		return;
	pthread_mutex_lock(&open_lock);
	struct ddtx_list_entry *e;

	while ((e = ddtx_list_pop_front(&open_domains))) { /* once per domain */
		struct ddtx_domain *d = ddtx_container_of(e, struct ddtx_domain, open_entry);
		/* A thread may still hold the domain at exit: then its numbers may be torn. */
		bool locked = ddtx_rlock_trylock(&d->lock);
		fprintf(stderr, "ddtx stats: domain %p was not closed (reported at exit)\n",
			(const void *)d);
		print_stats(d);
		if (locked)
			ddtx_rlock_unlock(&d->lock);
	}
	pthread_mutex_unlock(&open_lock);
}

static int domain_close(struct fid *fid)
{
	struct ddtx_domain *domain = ddtx_container_of(fid, struct ddtx_domain, fid.fid);

	if (atomic_load(&domain->ref) > 0) {
		DDTX_WARN(FI_LOG_DOMAIN, "domain still has %d open objects\n",
			  atomic_load(&domain->ref));
		return -FI_EBUSY;
	}
	pthread_mutex_lock(&open_lock);
	if (domain->open_entry.next != &domain->open_entry) /* not reported at exit yet */
		ddtx_list_remove(&domain->open_entry);
	pthread_mutex_unlock(&open_lock);
	if (ddtx_settings.print_stats)
		print_stats(domain);
	ddtx_proto_domain_close(domain->proto);
	ddtx_rlock_destroy(&domain->lock);
	atomic_fetch_sub(&domain->fabric->ref, 1);
	fi_freeinfo(domain->info);
	free(domain);
	return 0;
}

static int domain_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int domain_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			  struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static int domain_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
			  struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int domain_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
				   struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops domain_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = ddtx_nosys_bind,
	.control = ddtx_nosys_control,
	.ops_open = domain_ops_open,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = ddtx_av_open,
	.cq_open = ddtx_cq_open,
	.endpoint = ddtx_ep_open,
	.scalable_ep = domain_scalable_ep,
	.cntr_open = ddtx_cntr_open,
	.poll_open = ddtx_poll_open,
	.stx_ctx = domain_stx_ctx,
	.srx_ctx = domain_srx_ctx,
	.query_atomic = ddtx_query_atomic,
	.query_collective = domain_query_collective,
};

static struct fi_ops_mr domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = ddtx_mr_reg,
	.regv = ddtx_mr_regv,
	.regattr = ddtx_mr_regattr,
};

/* The legacy enum values of mr_mode, as the bits they stand for (fi_mr(3)). */
static uint64_t normalize_mr_mode(int mr_mode)
{
	if (mr_mode == FI_MR_BASIC)
		return FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	if (mr_mode == FI_MR_SCALABLE)
		return 0;
	return (uint64_t)mr_mode;
}

static int domain_check_info(const struct fi_info *info)
{
	const struct fi_domain_attr *da = info->domain_attr;

	if (info->ep_attr && info->ep_attr->type != FI_EP_UNSPEC &&
	    info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	if (!da)
		return 0;
	if (da->name && strcmp(da->name, DDTX_PROV_NAME) != 0)
		return -FI_EINVAL;
	if (da->data_progress == FI_PROGRESS_AUTO || da->control_progress == FI_PROGRESS_AUTO)
		return -FI_EINVAL;
	return 0;
}

static int domain_init_lock(struct ddtx_domain *domain)
{
	/* Recursive: a CQ read progresses endpoints, which write CQs under the same lock. */
	return ddtx_rlock_init(&domain->lock) ? -FI_ENOMEM : 0;
}

int ddtx_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		     void *context)
{
	struct ddtx_domain *domain;
	int ret;

	if (!fabric || fabric->fid.fclass != FI_CLASS_FABRIC || !info || !dom) {
		DDTX_WARN(FI_LOG_DOMAIN, "fi_domain: invalid arguments\n");
		return -FI_EINVAL;
	}
	if (domain_check_info(info)) {
		DDTX_WARN(FI_LOG_DOMAIN, "fi_domain: info does not describe a ddtx domain\n");
		return -FI_EINVAL;
	}
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->info = fi_dupinfo(info);
	if (!domain->info) {
		free(domain);
		return -FI_ENOMEM;
	}
	ret = domain_init_lock(domain);
	if (ret)
		goto err_info;
	/* A layered entry ("tcp;ofi_rxm;ddtx") names the ofi wire's core. */
	domain->fabric = ddtx_container_of(fabric, struct ddtx_fabric, fid);
	char *ofi_core = ddtx_layered_core(info->fabric_attr && info->fabric_attr->prov_name
						   ? info->fabric_attr->prov_name
						   : domain->fabric->attr.prov_name);
	ret = ddtx_proto_domain_open(&domain->lock, ofi_core, &domain->proto);
	free(ofi_core);
	if (ret)
		goto err_lock;
	ddtx_proto_domain_set_hmem(domain->proto, info->caps & FI_HMEM);
	domain->mr_mode = info->domain_attr ? normalize_mr_mode(info->domain_attr->mr_mode) : 0;
	domain->threading = info->domain_attr ? info->domain_attr->threading : FI_THREAD_SAFE;
	atomic_init(&domain->ref, 0);
	ddtx_list_init(&domain->eps);
	domain->fid.fid.fclass = FI_CLASS_DOMAIN;
	domain->fid.fid.context = context;
	domain->fid.fid.ops = &domain_fid_ops;
	domain->fid.ops = &domain_ops;
	domain->fid.mr = &domain_mr_ops;
	atomic_fetch_add(&domain->fabric->ref, 1);
	pthread_mutex_lock(&open_lock);
	ddtx_list_push_back(&open_domains, &domain->open_entry);
	pthread_mutex_unlock(&open_lock);
	*dom = &domain->fid;
	return 0;

err_lock:
	ddtx_rlock_destroy(&domain->lock);
err_info:
	fi_freeinfo(domain->info);
	free(domain);
	return ret;
}
