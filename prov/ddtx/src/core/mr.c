/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_mr_reg: checks the caller's arguments and hands the registration to the data path.  The
 * key is the caller's (or the wire's with FI_MR_PROV_KEY), the address peers name is the
 * virtual address (FI_MR_VIRT_ADDR) or the offset argument.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "common/iov_check.h"
#include "core/mr.h"
#include "core/nosys.h"

/*
 * No Linux user address space reaches beyond 2^56 (x86-64 5-level paging is the largest), so
 * a range ending above it can never be memory; MPICH's dynamic windows probe with one.
 */
#define DDTX_USER_ADDR_LIMIT ((uint64_t)1 << 56)

#define DDTX_MR_ACCESS                                                                           \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* Device-memory MRs open in this process: descriptors need checking only while there are any
 * (the check's walk of a 32-entry list was 10% of a 32 x 64 B message's instructions,
 * callgrind, nc_overhead). */
static atomic_size_t device_mrs;

static int check_iov(const struct iovec *iov, size_t count)
{
	if (!count || ddtx_iov_check(iov, count, DDTX_MR_IOV_LIMIT, NULL)) {
		DDTX_WARN(FI_LOG_MR, "fi_mr_reg: %zu segments (1..%d allowed)\n", iov ? count : 0,
			  DDTX_MR_IOV_LIMIT);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t base = (uintptr_t)iov[i].iov_base, len = iov[i].iov_len;

		if (len && (base + len < base || base + len > DDTX_USER_ADDR_LIMIT)) {
			DDTX_WARN(FI_LOG_MR, "fi_mr_reg: [%#llx, +%#llx) is not user memory\n",
				  (unsigned long long)base, (unsigned long long)len);
			return -FI_EINVAL;
		}
	}
	return 0;
}

static int check_attr(const struct ddtx_domain *domain, const struct fi_mr_attr *attr,
		      uint64_t flags)
{
	if (flags & ~(uint64_t)(FI_RMA_EVENT | FI_HMEM_DEVICE_ONLY)) {
		DDTX_WARN(FI_LOG_MR, "fi_mr_reg: unsupported flags 0x%llx\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (attr->access & ~(uint64_t)DDTX_MR_ACCESS) {
		DDTX_WARN(FI_LOG_MR, "fi_mr_reg: unsupported access 0x%llx\n",
			  (unsigned long long)attr->access);
		return -FI_EINVAL;
	}
	/* Device memory: FI_HMEM_CUDA in a domain opened with FI_HMEM (core/domain.c). */
	if (attr->iface != FI_HMEM_SYSTEM &&
	    (attr->iface != FI_HMEM_CUDA || !domain->info || !(domain->info->caps & FI_HMEM))) {
		DDTX_INFO(FI_LOG_MR, "fi_mr_reg: hmem interface %d not supported%s\n", attr->iface,
			  attr->iface == FI_HMEM_CUDA ? " (domain opened without FI_HMEM)" : "");
		return -FI_ENOSYS;
	}
	/* FI_HMEM_DEVICE_ONLY says the memory is device memory the host cannot touch: true of
	 * every FI_HMEM_CUDA buffer ddtx accepts (staging copies it through the driver). */
	if ((flags & FI_HMEM_DEVICE_ONLY) && attr->iface != FI_HMEM_CUDA) {
		DDTX_WARN(FI_LOG_MR, "fi_mr_reg: FI_HMEM_DEVICE_ONLY on host memory\n");
		return -FI_EINVAL;
	}
	if (attr->auth_key_size) {
		DDTX_WARN(FI_LOG_MR, "fi_mr_reg: authorization keys not supported\n");
		return -FI_EINVAL;
	}
	return check_iov(attr->mr_iov, attr->iov_count);
}

static int mr_close(struct fid *fid)
{
	struct ddtx_mr *mr = ddtx_container_of(fid, struct ddtx_mr, fid.fid);
	struct ddtx_domain *domain = mr->domain;
	int ret;

	ddtx_domain_lock(domain);
	ret = ddtx_proto_mr_dereg(domain->proto, mr->pmr);
	ddtx_domain_unlock(domain);
	if (ret) {
		DDTX_WARN(FI_LOG_MR, "fi_close(mr): deregistration failed: %s\n",
			  fi_strerror(-ret));
		return ret;
	}
	if (mr->iface == FI_HMEM_CUDA)
		atomic_fetch_sub(&device_mrs, 1);
	if (mr->remote_write)
		atomic_fetch_sub(&mr->remote_write->ref, 1);
	if (mr->remote_read)
		atomic_fetch_sub(&mr->remote_read->ref, 1);
	atomic_fetch_sub(&domain->ref, 1);
	free(mr);
	return 0;
}

/* proto's report of a peer's access to the MR (domain locked). */
static void mr_event(void *arg, bool write)
{
	struct ddtx_mr *mr = arg;

	ddtx_cntr_inc(write ? mr->remote_write : mr->remote_read);
}

/*
 * fi_mr_bind of a counter (FI_RMA_EVENT): it counts the peers' RMA and atomics that write
 * (FI_REMOTE_WRITE) or read (FI_REMOTE_READ) this MR.  Endpoints are bound only with
 * FI_MR_ENDPOINT, which ddtx does not use.
 */
static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct ddtx_mr *mr = ddtx_container_of(fid, struct ddtx_mr, fid.fid);
	struct ddtx_cntr *cntr = ddtx_cntr_from_fid(bfid);

	if (!cntr) /* Binding an endpoint is only meaningful (and allowed) with FI_MR_ENDPOINT. */
		return (mr->domain->mr_mode & FI_MR_ENDPOINT) ? -FI_ENOSYS : -FI_EINVAL;
	if (cntr->domain != mr->domain || !flags ||
	    (flags & ~(uint64_t)(FI_REMOTE_WRITE | FI_REMOTE_READ)) ||
	    ((flags & FI_REMOTE_WRITE) && mr->remote_write) ||
	    ((flags & FI_REMOTE_READ) && mr->remote_read)) {
		DDTX_WARN(FI_LOG_MR, "fi_mr_bind: counter of another domain, flags 0x%llx or "
			  "rebind\n", (unsigned long long)flags);
		return -FI_EINVAL;
	}
	ddtx_domain_lock(mr->domain);
	if (flags & FI_REMOTE_WRITE) {
		mr->remote_write = cntr;
		atomic_fetch_add(&cntr->ref, 1);
	}
	if (flags & FI_REMOTE_READ) {
		mr->remote_read = cntr;
		atomic_fetch_add(&cntr->ref, 1);
	}
	ddtx_proto_mr_bind_event(mr->pmr, mr_event, mr);
	ddtx_domain_unlock(mr->domain);
	return 0;
}

/* FI_ENABLE (after binding, FI_MR_RMA_EVENT style): counting starts at bind time already. */
static int mr_control(struct fid *fid, int command, void *arg)
{
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops mr_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = mr_control, /* FI_REFRESH is not offered */
	.ops_open = ddtx_nosys_ops_open,
};

static struct ddtx_domain *domain_of_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_DOMAIN)
		return NULL;
	return ddtx_domain_of(ddtx_container_of(fid, struct fid_domain, fid));
}

int ddtx_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		    struct fid_mr **mrp)
{
	struct ddtx_domain *domain = domain_of_fid(fid);
	bool prov_key, virt_addr;
	struct ddtx_mr *mr;
	int ret;

	if (!domain || !attr || !mrp)
		return -FI_EINVAL;
	ret = check_attr(domain, attr, flags);
	if (ret)
		return ret;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	prov_key = domain->mr_mode & FI_MR_PROV_KEY;
	virt_addr = domain->mr_mode & FI_MR_VIRT_ADDR;
	ddtx_domain_lock(domain);
	uint64_t iova = virt_addr ? (uintptr_t)attr->mr_iov[0].iov_base : attr->offset;
	if (attr->iface == FI_HMEM_CUDA)
		ret = ddtx_proto_mr_reg_cuda(domain->proto, attr->mr_iov, attr->iov_count,
					     attr->access, attr->device.cuda,
					     prov_key ? NULL : &attr->requested_key, iova, &mr->pmr,
					     &mr->fid.key);
	else
		ret = ddtx_proto_mr_reg(domain->proto, attr->mr_iov, attr->iov_count,
					attr->access, prov_key ? NULL : &attr->requested_key,
					iova, &mr->pmr, &mr->fid.key);
	ddtx_domain_unlock(domain);
	if (ret) {
		DDTX_INFO(FI_LOG_MR, "fi_mr_reg: registration failed: %s\n",
			  fi_strerror(-ret));
		free(mr);
		return ret;
	}
	if (attr->iface == FI_HMEM_CUDA)
		atomic_fetch_add(&device_mrs, 1);
	mr->domain = domain;
	mr->iface = attr->iface;
	mr->access = attr->access;
	mr->flags = flags;
	mr->fid.fid.fclass = FI_CLASS_MR;
	mr->fid.fid.context = attr->context;
	mr->fid.fid.ops = &mr_fid_ops;
	mr->fid.mem_desc = mr;
	atomic_fetch_add(&domain->ref, 1);
	*mrp = &mr->fid;
	return 0;
}

int ddtx_mr_descs_check(void **desc, size_t count)
{
	if (!atomic_load_explicit(&device_mrs, memory_order_relaxed))
		return 0;
	for (size_t i = 0; desc && i < count; i++) {
		struct fid *f = desc[i];
		if (!f || f->fclass != FI_CLASS_MR || f->ops != &mr_fid_ops)
			continue;
		struct ddtx_mr *mr = ddtx_container_of(f, struct ddtx_mr, fid.fid);
		if (mr->iface == FI_HMEM_CUDA && ddtx_proto_mr_live(mr->pmr)) {
			DDTX_WARN(FI_LOG_EP_DATA, "descriptor %zu: its device memory was freed or "
				  "re-allocated since fi_mr_regattr\n", i);
			return -FI_EINVAL;
		}
	}
	return 0;
}

int ddtx_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		 void *context)
{
	const struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return ddtx_mr_regattr(fid, &attr, flags, mr);
}

int ddtx_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		void *context)
{
	const struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ddtx_mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}
