/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_fabric: the root object.  It only counts what is opened on it (domains, EQs) so that
 * fi_close refuses while those are still open.
 */
#include <stdlib.h>
#include <string.h>

#include "core/domain.h"
#include "core/eq.h"
#include "core/fabric.h"
#include "core/nosys.h"

static int fabric_close(struct fid *fid)
{
	struct ddtx_fabric *fab = ddtx_container_of(fid, struct ddtx_fabric, fid.fid);

	if (atomic_load(&fab->ref) > 0) {
		DDTX_WARN(FI_LOG_FABRIC, "fabric still has %d open domains/EQs\n",
			  atomic_load(&fab->ref));
		return -FI_EBUSY;
	}
	free(fab->attr.name);
	free(fab->attr.prov_name);
	free(fab);
	return 0;
}

static int fabric_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			     struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS; /* connection-less RDM only */
}

static int fabric_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			    struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	return -FI_ENOSYS;
}

static struct fi_ops fabric_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = ddtx_nosys_bind,
	.control = ddtx_nosys_control,
	.ops_open = ddtx_nosys_ops_open,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = ddtx_domain_open,
	.passive_ep = fabric_passive_ep,
	.eq_open = ddtx_eq_open,
	.wait_open = fabric_wait_open,
	.trywait = fabric_trywait,
};

int ddtx_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct ddtx_fabric *fab;

	if (!attr || !fabric) {
		DDTX_WARN(FI_LOG_FABRIC, "fi_fabric: NULL attr or fabric\n");
		return -FI_EINVAL;
	}
	if (attr->name && strcmp(attr->name, DDTX_PROV_NAME) != 0) {
		DDTX_WARN(FI_LOG_FABRIC, "fi_fabric: unknown fabric %s\n", attr->name);
		return -FI_EINVAL;
	}
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->attr.name = strdup(DDTX_PROV_NAME);
	fab->attr.prov_name = attr->prov_name ? strdup(attr->prov_name) : NULL;
	fab->attr.prov_version = DDTX_PROV_VERSION;
	fab->attr.api_version = attr->api_version;
	atomic_init(&fab->ref, 0);
	fab->fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fid.fid.context = context;
	fab->fid.fid.ops = &fabric_fid_ops;
	fab->fid.ops = &fabric_ops;
	fab->fid.api_version = attr->api_version;
	*fabric = &fab->fid;
	return 0;
}
