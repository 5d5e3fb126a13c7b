/* SPDX-License-Identifier: BSD-2-Clause */
#include "core/nic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "proto/proto.h"

static int nic_close(struct fid *fid);
static int nic_control(struct fid *fid, int command, void *arg);
static int nic_tostr(const struct fid *fid, char *buf, size_t len);

static struct fi_ops nic_ops = {
	.size = sizeof(struct fi_ops),
	.close = nic_close,
	.control = nic_control,
	.tostr = nic_tostr,
};

static int nic_close(struct fid *fid)
{
	struct fid_nic *nic = (struct fid_nic *)fid;

	if (nic->device_attr) {
		free(nic->device_attr->name);
		free(nic->device_attr->device_id);
		free(nic->device_attr->device_version);
		free(nic->device_attr->vendor_id);
		free(nic->device_attr->driver);
		free(nic->device_attr->firmware);
	}
	if (nic->link_attr) {
		free(nic->link_attr->address);
		free(nic->link_attr->network_type);
	}
	free(nic->device_attr);
	free(nic->bus_attr);
	free(nic->link_attr);
	free(nic);
	return 0;
}

/* Every string the nic holds, strdup'd from src (NULL stays NULL). */
static char *dup_or_null(const char *s, bool *failed)
{
	char *d = s ? strdup(s) : NULL;
	*failed |= s && !d;
	return d;
}

static struct fid_nic *nic_alloc(const struct fi_device_attr *dev, const struct fi_link_attr *link)
{
	struct fid_nic *nic = calloc(1, sizeof(*nic));
	bool failed = false;

	if (!nic)
		return NULL;
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &nic_ops;
	nic->device_attr = calloc(1, sizeof(*nic->device_attr));
	nic->bus_attr = calloc(1, sizeof(*nic->bus_attr));
	nic->link_attr = calloc(1, sizeof(*nic->link_attr));
	if (!nic->device_attr || !nic->bus_attr || !nic->link_attr) {
		nic_close(&nic->fid);
		return NULL;
	}
	nic->device_attr->name = dup_or_null(dev->name, &failed);
	nic->device_attr->device_id = dup_or_null(dev->device_id, &failed);
	nic->device_attr->device_version = dup_or_null(dev->device_version, &failed);
	nic->device_attr->vendor_id = dup_or_null(dev->vendor_id, &failed);
	nic->device_attr->driver = dup_or_null(dev->driver, &failed);
	nic->device_attr->firmware = dup_or_null(dev->firmware, &failed);
	nic->bus_attr->bus_type = FI_BUS_UNKNOWN;
	*nic->link_attr = *link;
	nic->link_attr->address = dup_or_null(link->address, &failed);
	nic->link_attr->network_type = dup_or_null(link->network_type, &failed);
	if (failed) {
		nic_close(&nic->fid);
		return NULL;
	}
	return nic;
}

static int nic_control(struct fid *fid, int command, void *arg)
{
	struct fid_nic *nic = (struct fid_nic *)fid;

	if (command != FI_DUP || !arg)
		return -FI_ENOSYS;
	*(struct fid_nic **)arg = nic_alloc(nic->device_attr, nic->link_attr);
	return *(struct fid_nic **)arg ? 0 : -FI_ENOMEM;
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static int nic_tostr(const struct fid *fid, char *buf, size_t len)
{
	const struct fid_nic *nic = (const struct fid_nic *)fid;
	const struct fi_device_attr *d = nic->device_attr;
	size_t n = strlen(buf);

	if (n < len)
		snprintf(buf + n, len - n,
			 "    fid_nic:\n        fi_device_attr:\n            name: %s\n"
			 "            driver: %s\n            firmware: %s\n"
			 "        fi_bus_attr:\n            fi_bus_type: FI_BUS_UNKNOWN\n"
			 "        fi_link_attr:\n            network_type: %s\n",
			 or_empty(d->name), or_empty(d->driver), or_empty(d->firmware),
			 or_empty(nic->link_attr->network_type));
	return 0;
}

struct fid_nic *ddtx_nic_new(void)
{
	char version[32], firmware[256];

	snprintf(version, sizeof(version), "%u.%u", FI_MAJOR(DDTX_PROV_VERSION),
		 FI_MINOR(DDTX_PROV_VERSION));
	snprintf(firmware, sizeof(firmware), "FI_HMEM (CUDA) %s; %s",
		 ddtx_proto_hmem_offered() ? "offered" : "not offered (no CUDA driver or device)",
		 ddtx_proto_hmem_describe());
	const struct fi_device_attr dev = { .name = DDTX_PROV_NAME, .driver = "ddtx",
					    .device_version = version, .firmware = firmware };
	const struct fi_link_attr link = { .state = FI_LINK_UNKNOWN,
					   .network_type = "software (wires: shm, verbs, ofi)" };
	return nic_alloc(&dev, &link);
}
