/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the objects of core/ share without holding it themselves: the -FI_ENOSYS stubs of fid
 * operations an object does not support, and the strerror of CQs and EQs (ddtx's provider
 * errno is a plain FI_E* value, so both answer with fi_strerror).
 */
#include <string.h>

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
