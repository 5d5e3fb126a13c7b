/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the objects of core/ share without holding it themselves: the -FI_ENOSYS stubs of fid
 * operations an object does not support, and the strerror of CQs and EQs (ddtx's provider
 * errno is a plain FI_E* value, so both answer with fi_strerror).
 */
#include <string.h>

#include "core/core_priv.h"

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
