/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the objects of core/ share without holding it themselves: the -FI_ENOSYS stubs of fid
 * operations an object does not support, and the strerror of CQs and EQs (ddtx's provider
 * errno is a plain FI_E* value, so both answer with fi_strerror).
 */
#include <string.h>
#include <rdma/fi_atomic.h>

#include "core/nosys.h"

int ddtx_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			void *context)
{
	return -FI_ENOSYS;
}

/* Scalable endpoints and connections: ddtx offers FI_EP_RDM endpoints only. */
int ddtx_nosys_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		      struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int ddtx_nosys_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		    void *context)
{
	return -FI_ENOSYS;
}

/* Atomics: not offered (fi_getinfo refuses FI_ATOMIC); the table every endpoint points at. */

static ssize_t at_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t at_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			 enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t at_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t at_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest_addr,
			 uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t at_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr,
			    uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t at_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			     size_t count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key, enum fi_datatype datatype, enum fi_op op,
			     void *context)
{
	return -FI_ENOSYS;
}

static ssize_t at_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			       struct fi_ioc *resultv, void **result_desc, size_t result_count,
			       uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t at_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    const void *compare, void *compare_desc, void *result,
			    void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t at_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			     size_t count, const struct fi_ioc *comparev, void **compare_desc,
			     size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key, enum fi_datatype datatype, enum fi_op op,
			     void *context)
{
	return -FI_ENOSYS;
}

static ssize_t at_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev, void **compare_desc,
			       size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int at_valid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic ddtx_nosys_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = at_write,
	.writev = at_writev,
	.writemsg = at_writemsg,
	.inject = at_inject,
	.readwrite = at_readwrite,
	.readwritev = at_readwritev,
	.readwritemsg = at_readwritemsg,
	.compwrite = at_compwrite,
	.compwritev = at_compwritev,
	.compwritemsg = at_compwritemsg,
	.writevalid = at_valid,
	.readwritevalid = at_valid,
	.compwritevalid = at_valid,
};

const char *ddtx_strerror(int prov_errno, char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}
