/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device discovery and selection.
 *
 * FI_DDTX_IFACE names the device, optionally with a port: "mlx5_0" or "mlx5_0:1".  Without it
 * the first device with an active port is used.  mlx5 devices are opened through mlx5dv with a
 * DEVX context (needed for indirect mkeys); if that is refused the device is opened plainly and
 * runs without UMR.  On Ethernet (RoCE) ports a RoCE v2 GID is preferred.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/verbs/verbs.h"

static pthread_once_t avail_once = PTHREAD_ONCE_INIT;
static bool avail;

static void probe_devices(void)
{
	struct ibv_device **list;
	int n = 0;

	/*
	 * Applications that fork (the test programs do) need fork-safe registrations on kernels
	 * that do not provide them; this must precede every other verbs call.
	 */
	if (ibv_is_fork_initialized() == IBV_FORK_DISABLED && ibv_fork_init())
		DDTX_INFO(FI_LOG_CORE, "verbs: ibv_fork_init failed: %s\n", strerror(errno));
	list = ibv_get_device_list(&n);
	avail = list && n > 0;
	if (list)
		ibv_free_device_list(list);
	DDTX_INFO(FI_LOG_CORE, "verbs: %d RDMA device(s)\n", n);
}

bool ddtx_verbs_available(void)
{
	pthread_once(&avail_once, probe_devices);
	return avail;
}

/* Choose the GID: RoCE v2 first, then RoCE v1 / IB, skipping empty entries. */
static int pick_gid(struct ddtx_vdev *dev)
{
	int best = -1, best_rank = 0;

	for (int i = 0; i < dev->port_attr.gid_tbl_len && i < 256; i++) {
		struct ibv_gid_entry e;
		int rank;

		if (ibv_query_gid_ex(dev->ctx, dev->port, (uint32_t)i, &e, 0))
			continue;
		if (!e.gid.global.subnet_prefix && !e.gid.global.interface_id)
			continue;
		rank = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 3 : e.gid_type == IBV_GID_TYPE_IB ? 2 : 1;
		if (rank > best_rank) {
			best = i;
			best_rank = rank;
		}
	}
	if (best < 0)
		return -FI_ENODEV;
	dev->gid_index = best;
	return ibv_query_gid(dev->ctx, dev->port, best, &dev->gid) ? -FI_ENODEV : 0;
}

static int open_context(struct ibv_device *d, struct ddtx_vdev *dev)
{
#ifdef DDTX_HAVE_MLX5DV
	if (mlx5dv_is_supported(d)) {
		struct mlx5dv_context_attr attr = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };

		dev->ctx = mlx5dv_open_device(d, &attr);
		if (dev->ctx) {
			dev->mlx5 = dev->devx = true;
			return 0;
		}
		DDTX_INFO(FI_LOG_CORE, "verbs: %s: no DEVX context (%s): no UMR\n",
			  ibv_get_device_name(d), strerror(errno));
		dev->mlx5 = true;
	}
#endif
	dev->ctx = ibv_open_device(d);
	return dev->ctx ? 0 : -FI_ENODEV;
}

/* The first active port (or the one asked for). */
static int pick_port(struct ddtx_vdev *dev, int want)
{
	uint32_t nports = dev->attr.orig_attr.phys_port_cnt;

	for (uint32_t p = 1; p <= nports; p++) {
		if (want > 0 && (uint32_t)want != p)
			continue;
		if (ibv_query_port(dev->ctx, (uint8_t)p, &dev->port_attr))
			continue;
		if (dev->port_attr.state != IBV_PORT_ACTIVE)
			continue;
		dev->port = (uint8_t)p;
		return 0;
	}
	return -FI_ENODEV;
}

int ddtx_vdev_open(const char *iface, struct ddtx_vdev *dev)
{
	struct ibv_device **list;
	char want_name[IBV_SYSFS_NAME_MAX] = "";
	int want_port = 0, n = 0, ret = -FI_ENODEV;

	memset(dev, 0, sizeof(*dev));
	if (iface && *iface) {
		const char *colon = strchr(iface, ':');
		size_t len = colon ? (size_t)(colon - iface) : strlen(iface);

		if (len >= sizeof(want_name) || (colon && (want_port = atoi(colon + 1)) <= 0)) {
			DDTX_WARN(FI_LOG_CORE, "verbs: FI_DDTX_IFACE=%s is not <device>[:<port>]\n",
				  iface);
			return -FI_EINVAL;
		}
		memcpy(want_name, iface, len);
	}
	list = ibv_get_device_list(&n);
	if (!list)
		return -FI_ENODEV;
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (*want_name && strcmp(name, want_name))
			continue;
		memset(dev, 0, sizeof(*dev));
		if (open_context(list[i], dev))
			continue;
		if (ibv_query_device_ex(dev->ctx, NULL, &dev->attr) ||
		    pick_port(dev, want_port)) {
			DDTX_INFO(FI_LOG_CORE, "verbs: %s: no active port%s\n", name,
				  want_port ? " (as requested)" : "");
			ibv_close_device(dev->ctx);
			dev->ctx = NULL;
			continue;
		}
		snprintf(dev->name, sizeof(dev->name), "%s", name);
		dev->grh = dev->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ||
			   !dev->port_attr.lid;
		if (pick_gid(dev)) {
			if (dev->grh) {
				DDTX_INFO(FI_LOG_CORE, "verbs: %s:%u: no usable GID\n", name,
					  dev->port);
				ibv_close_device(dev->ctx);
				dev->ctx = NULL;
				continue;
			}
			dev->gid_index = 0;
		}
		ret = 0;
		break;
	}
	ibv_free_device_list(list);
	if (ret) {
		DDTX_WARN(FI_LOG_CORE, "verbs: no usable RDMA device%s%s\n",
			  *want_name ? " named " : "", want_name);
		return ret;
	}
	DDTX_INFO(FI_LOG_CORE, "verbs: using %s port %u (%s, lid %u, gid index %d, mtu %d, "
		  "max_sge %d, max_sge_rd %d%s)\n", dev->name, dev->port,
		  dev->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB",
		  dev->port_attr.lid, dev->gid_index, (int)dev->port_attr.active_mtu,
		  dev->attr.orig_attr.max_sge, dev->attr.orig_attr.max_sge_rd,
		  dev->devx ? ", mlx5 DEVX" : dev->mlx5 ? ", mlx5" : "");
	return 0;
}

void ddtx_vdev_close(struct ddtx_vdev *dev)
{
	if (dev->ctx)
		ibv_close_device(dev->ctx);
	dev->ctx = NULL;
}

void ddtx_vdev_ah_attr(const struct ddtx_vdev *dev, const struct ddtx_vaddr *peer,
		       struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = dev->port;
	ah->sl = peer->sl;
	ah->dlid = peer->lid;
	if (dev->grh || (peer->flags & DDTX_VADDR_F_GRH)) {
		ah->is_global = 1;
		memcpy(ah->grh.dgid.raw, peer->gid, sizeof(ah->grh.dgid.raw));
		ah->grh.sgid_index = (uint8_t)dev->gid_index;
		ah->grh.hop_limit = 64;
	}
}

void ddtx_vdev_self_addr(const struct ddtx_vdev *dev, struct ddtx_vaddr *a)
{
	a->port = dev->port;
	a->mtu = (uint8_t)dev->port_attr.active_mtu;
	a->flags = dev->grh ? DDTX_VADDR_F_GRH : 0;
	a->lid = dev->port_attr.lid;
	a->sl = 0;
	memcpy(a->gid, dev->gid.raw, sizeof(a->gid));
}
