/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fi_provider object and the FI_DDTX_* settings.  Kept out of init.c so that the static
 * library (and the unit tests linked to it) has the provider and its settings too.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <stdio.h>

#include "core/domain.h"
#include "core/fabric.h"

struct ddtx_settings ddtx_settings = {
	.scheme = DDTX_SCHEME_SETTING_AUTO,
	.threshold = 0,
	.eager_size = 16384,
	.pull_split = 98304,
	.max_sge = 0,
	.max_mkey_entries = 0,
	.ring_slots = 64, /* see DDTX_SHM_DEF_RING_SLOTS */
	.slot_size = 131072 + 4096, /* see DDTX_SHM_DEF_SLOT_SIZE */
	.key_slots = 16384,
	.peer_timeout_ms = 100,
	.ack_delay_us = 5000,
	.resolve_ms = 5000,
	.print_stats = false,
	.mr_cache_max_size = (size_t)1 << 30,
	.mr_cache_max_count = 4096,
	.mr_monitor = true,
	.hmem_ipc = true,
	.hmem_direct = true,
	.mkey_pool = 512,
	.layout_cache_size = 1024,
	.reg_thread = true,
};

static void ddtx_cleanup(void)
{
	/* Every resource belongs to a fabric/domain object; only the statistics of domains the
	 * program never closed are still owed (FI_DDTX_STATS), and their ACK timers must end
	 * before the provider's code is unmapped (a rank that exits without closing). */
	ddtx_domain_stop_threads_at_exit();
	ddtx_domain_stats_at_exit();
}

struct fi_provider ddtx_prov = {
	.name = DDTX_PROV_NAME,
	.version = DDTX_PROV_VERSION,
	.fi_version = DDTX_FI_VERSION,
	.getinfo = ddtx_getinfo,
	.fabric = ddtx_fabric_open,
	.cleanup = ddtx_cleanup,
};

static void define_params(void)
{
	fi_param_define(&ddtx_prov, "scheme", FI_PARAM_STRING,
			"Transfer scheme for noncontiguous data: auto, pack, sgl or umr "
			"(default: auto)");
	fi_param_define(&ddtx_prov, "hmem_copy", FI_PARAM_STRING,
			"Device memory (FI_HMEM_CUDA): how host staging copies between device "
			"memory and its bounce buffer, and a CUDA IPC receiver from the sender's "
			"blocks: auto, segments (a driver copy per segment), 2d (cuMemcpy2D for "
			"vectors) or kernel (the device pack kernel then one copy; for IPC the copy "
			"kernel) (default: auto)");
	fi_param_define(&ddtx_prov, "hmem_ipc", FI_PARAM_BOOL,
			"Device memory (FI_HMEM_CUDA) on the shm wire: offer the receiver CUDA IPC "
			"handles of a rendezvous send's device buffers, so that it copies device to "
			"device with no host staging (default: 1)");
	fi_param_define(&ddtx_prov, "hmem_direct", FI_PARAM_BOOL,
			"Device memory (FI_HMEM_CUDA) on a wire whose NIC reads and writes it "
			"(verbs with dma-buf: GPUDirect RDMA): rendezvous transfers move it by zero "
			"copy from and into the application's device buffers, with no host staging "
			"(default: 1)");
	fi_param_define(&ddtx_prov, "threshold", FI_PARAM_SIZE_T,
			"auto scheme: use zero copy when the average block length is at least "
			"this many bytes, overriding the threshold learned from measured costs "
			"(default: 0, learned)");
	fi_param_define(&ddtx_prov, "eager_size", FI_PARAM_SIZE_T,
			"Largest message sent eagerly through the peer's ring (default: 16384 for "
			"contiguous messages and lists of blocks over 512 B; lists of smaller blocks "
			"up to the ring's slot; when set, every message)");
	fi_param_define(&ddtx_prov, "pack_stores", FI_PARAM_STRING,
			"shm wire: the stores that write PACK's chunks into the peer's ring: auto "
			"(the receiver times both and takes the faster per layout), cached (ordinary "
			"stores) or streaming (non-temporal stores, to memory) (default: auto)");
	fi_param_define(&ddtx_prov, "pack_stream", FI_PARAM_STRING,
			"PACK's chunks follow the RTS before the receiver's CTS: auto (where the "
			"wire's round trip is long: the ofi wire), on or off (default: auto)");
	fi_param_define(&ddtx_prov, "pull_split", FI_PARAM_SIZE_T,
			"shm wire: smallest contiguous message the receiver reads in part while the "
			"sender writes the rest; 0: the receiver reads all (default: 98304)");
	fi_param_define(&ddtx_prov, "max_sge", FI_PARAM_SIZE_T,
			"Scatter-gather entries per work request; 0 = wire default (shm: 30)");
	fi_param_define(&ddtx_prov, "max_mkey_entries", FI_PARAM_SIZE_T,
			"Entries of one multi-entry memory key; 0 = wire default (shm: 32)");
	fi_param_define(&ddtx_prov, "shm_ring_slots", FI_PARAM_SIZE_T,
			"shm wire: receive ring slots per endpoint, a power of two "
			"(default: 64)");
	fi_param_define(&ddtx_prov, "shm_slot_size", FI_PARAM_SIZE_T,
			"shm wire: bytes per ring slot, header included (default: 65536)");
	fi_param_define(&ddtx_prov, "shm_keys", FI_PARAM_SIZE_T,
			"shm wire: capacity of the memory key table, a power of two "
			"(default: 16384)");
	fi_param_define(&ddtx_prov, "peer_check_ms", FI_PARAM_INT,
			"Period in milliseconds of the peer liveness check (default: 100)");
	fi_param_define(&ddtx_prov, "ack_delay_us", FI_PARAM_INT,
			"Delivery ACKs (FI_DELIVERY_COMPLETE) ride on the next message to the "
			"sender; one the receiver's calls did not send is sent by a timer within two "
			"periods of this many microseconds (0: every ACK at once, alone; default: "
			"5000)");
	fi_param_define(&ddtx_prov, "iov_limit", FI_PARAM_SIZE_T,
			"Cap on the tx, rx and RMA iov_limit that fi_getinfo advertises and endpoints "
			"accept (default: 0 = 1024, ddtx's own limit).  fi_ubertest 1.17 needs < 256");
	fi_param_define(&ddtx_prov, "resolve_ms", FI_PARAM_INT,
			"How long fi_av_insert of a service name (fi_getinfo's dest_addr) or "
			"fi_av_insertsvc waits in milliseconds for an endpoint to bind that service "
			"(default: 5000; 0: no wait)");
	fi_param_define(&ddtx_prov, "stats", FI_PARAM_BOOL,
			"Print the domain's transfer statistics to stderr when it is closed "
			"(default: no)");
	fi_param_define(&ddtx_prov, "mr_cache_max_size", FI_PARAM_SIZE_T,
			"Registration cache: bytes kept registered beyond those in use "
			"(default: 1073741824)");
	fi_param_define(&ddtx_prov, "mr_cache_max_count", FI_PARAM_SIZE_T,
			"Registration cache: registrations kept beyond those in use "
			"(default: 4096)");
	fi_param_define(&ddtx_prov, "mr_monitor", FI_PARAM_BOOL,
			"Watch for unmapped or freed memory so that registrations of it are "
			"invalidated (default: yes)");
	fi_param_define(&ddtx_prov, "mkey_pool", FI_PARAM_SIZE_T,
			"Multi-entry memory keys created when a domain opens and kept in stock "
			"by a refill thread (default: 512)");
	fi_param_define(&ddtx_prov, "layout_cache_size", FI_PARAM_SIZE_T,
			"Layouts (iov list shapes at an address) kept in the layout cache "
			"(default: 1024)");
	fi_param_define(&ddtx_prov, "reg_thread", FI_PARAM_BOOL,
			"Register layouts worth zero copy in a background thread; off: register "
			"on first use (default: yes)");
	fi_param_define(&ddtx_prov, "wire", FI_PARAM_STRING,
			"Wire (NIC) to use: auto (verbs when an RDMA device is present, else shm), "
			"shm, verbs, ofi (a core libfabric provider, FI_DDTX_OFI_PROVIDER) or multi "
			"(a wire per peer: shm to this host's peers, FI_DDTX_FABRIC_WIRE to others) "
			"(default: auto)");
	fi_param_define(&ddtx_prov, "ofi_provider", FI_PARAM_STRING,
			"ofi wire: the core libfabric provider ddtx runs over, e.g. tcp or shm "
			"(default: tcp)");
	fi_param_define(&ddtx_prov, "ofi_ep_type", FI_PARAM_STRING,
			"ofi wire: the core's endpoint type: rdm (FI_EP_RDM, e.g. tcp;ofi_rxm) or "
			"msg (FI_EP_MSG, e.g. tcp, connected by ddtx itself) (default: rdm)");
	fi_param_define(&ddtx_prov, "fabric_wire", FI_PARAM_STRING,
			"multi wire: the wire to peers on other hosts, e.g. ofi or verbs "
			"(default: the first of them available)");
	fi_param_define(&ddtx_prov, "fabric_timeout_ms", FI_PARAM_INT,
			"multi wire, and the ofi wire used alone: a peer on another host that has "
			"been silent this long while operations wait on it, and does not answer a "
			"probe within as long again, is gone: its operations fail; 0 = only when the fabric reports an error "
			"(default: 0)");
	fi_param_define(&ddtx_prov, "local_wire", FI_PARAM_STRING,
			"multi wire: the wire to peers on this host: shm, or none to send to them "
			"through the fabric wire too (default: shm)");
	fi_param_define(&ddtx_prov, "iface", FI_PARAM_STRING,
			"verbs wire: RDMA device, optionally with a port, e.g. mlx5_0 or mlx5_0:1 "
			"(default: the first device with an active port)");
}

/*
 * A variable that names one of `names` (case ignored): its index, or 0 (the first name, the
 * default) with a warning when it names none; unchanged when not set.
 */
static void load_choice(const char *name, const char *const *names, size_t n, unsigned *out)
{
	char *value = NULL;

	if (fi_param_get_str(&ddtx_prov, name, &value) != 0 || !value)
		return;
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(value, names[i]) == 0) {
			*out = (unsigned)i;
			return;
		}
	}
	char list[128] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? "|" : "",
			 names[i]);
	char upper[64];
	size_t k = 0;
	for (; name[k] && k + 1 < sizeof(upper); k++)
		upper[k] = (char)toupper((unsigned char)name[k]);
	upper[k] = 0;
	DDTX_WARN(FI_LOG_CORE, "FI_DDTX_%s=%s is not one of %s; using %s\n", upper, value, list,
		  names[0]);
	*out = 0;
}

static void load_choices(void)
{
	/* FI_DDTX_HMEM_COPY: the names of engine/hmem_copy.h, in its order. */
	static const char *const copies[] = { "auto", "segments", "2d", "kernel" };
	static const char *const schemes[] = {
		[DDTX_SCHEME_SETTING_AUTO] = "auto",
		[DDTX_SCHEME_SETTING_PACK] = "pack",
		[DDTX_SCHEME_SETTING_SGL] = "sgl",
		[DDTX_SCHEME_SETTING_UMR] = "umr",
	};
	static const char *const stores[] = {
		[DDTX_PACK_STORES_SETTING_AUTO] = "auto",
		[DDTX_PACK_STORES_SETTING_CACHED] = "cached",
		[DDTX_PACK_STORES_SETTING_STREAMING] = "streaming",
	};
	static const char *const streams[] = {
		[DDTX_PACK_STREAM_SETTING_AUTO] = "auto",
		[DDTX_PACK_STREAM_SETTING_ON] = "on",
		[DDTX_PACK_STREAM_SETTING_OFF] = "off",
	};
	unsigned v = ddtx_settings.scheme;
	load_choice("scheme", schemes, sizeof(schemes) / sizeof(schemes[0]), &v);
	ddtx_settings.scheme = (enum ddtx_scheme_setting)v;
	v = ddtx_settings.pack_stores;
	load_choice("pack_stores", stores, sizeof(stores) / sizeof(stores[0]), &v);
	ddtx_settings.pack_stores = (enum ddtx_pack_stores_setting)v;
	v = ddtx_settings.pack_stream;
	load_choice("pack_stream", streams, sizeof(streams) / sizeof(streams[0]), &v);
	ddtx_settings.pack_stream = (enum ddtx_pack_stream_setting)v;
	load_choice("hmem_copy", copies, sizeof(copies) / sizeof(copies[0]),
		    &ddtx_settings.hmem_copy);
}

/* A size_t variable overrides the default only when set. */
static void load_size(const char *name, size_t *out)
{
	size_t v;

	if (fi_param_get_size_t(&ddtx_prov, name, &v) == 0)
		*out = v;
}

void ddtx_settings_load(void)
{
	static bool defined;
	int v;

	/* fi_param_define refuses duplicates; load may run again (unit tests). */
	if (!defined) {
		define_params();
		defined = true;
	}
	load_choices();
	load_size("threshold", &ddtx_settings.threshold);
	size_t eager = 0;
	if (fi_param_get_size_t(&ddtx_prov, "eager_size", &eager) == 0) {
		ddtx_settings.eager_size = eager;
		ddtx_settings.eager_size_set = true;
	}
	load_size("pull_split", &ddtx_settings.pull_split);
	load_size("max_sge", &ddtx_settings.max_sge);
	load_size("max_mkey_entries", &ddtx_settings.max_mkey_entries);
	load_size("shm_ring_slots", &ddtx_settings.ring_slots);
	load_size("shm_slot_size", &ddtx_settings.slot_size);
	load_size("shm_keys", &ddtx_settings.key_slots);
	if (fi_param_get_int(&ddtx_prov, "peer_check_ms", &v) == 0) {
		if (v > 0)
			ddtx_settings.peer_timeout_ms = v;
		else
			DDTX_WARN(FI_LOG_CORE, "FI_DDTX_PEER_CHECK_MS=%d ignored (must be > 0)\n",
				  v);
	}
	if (fi_param_get_int(&ddtx_prov, "ack_delay_us", &v) == 0) {
		if (v >= 0 && v <= 1000000)
			ddtx_settings.ack_delay_us = (unsigned)v;
		else
			DDTX_WARN(FI_LOG_CORE,
				  "FI_DDTX_ACK_DELAY_US=%d ignored (must be 0 to 1000000)\n", v);
	}
	if (fi_param_get_int(&ddtx_prov, "resolve_ms", &v) == 0) {
		if (v >= 0)
			ddtx_settings.resolve_ms = v;
		else
			DDTX_WARN(FI_LOG_CORE, "FI_DDTX_RESOLVE_MS=%d ignored (must be >= 0)\n", v);
	}
	if (fi_param_get_bool(&ddtx_prov, "stats", &v) == 0)
		ddtx_settings.print_stats = v != 0;
	load_size("mr_cache_max_size", &ddtx_settings.mr_cache_max_size);
	load_size("mr_cache_max_count", &ddtx_settings.mr_cache_max_count);
	load_size("mkey_pool", &ddtx_settings.mkey_pool);
	load_size("layout_cache_size", &ddtx_settings.layout_cache_size);
	load_size("iov_limit", &ddtx_settings.iov_limit);
	if (fi_param_get_bool(&ddtx_prov, "hmem_ipc", &v) == 0)
		ddtx_settings.hmem_ipc = v != 0;
	if (fi_param_get_bool(&ddtx_prov, "hmem_direct", &v) == 0)
		ddtx_settings.hmem_direct = v != 0;
	if (fi_param_get_bool(&ddtx_prov, "mr_monitor", &v) == 0)
		ddtx_settings.mr_monitor = v != 0;
	if (fi_param_get_bool(&ddtx_prov, "reg_thread", &v) == 0)
		ddtx_settings.reg_thread = v != 0;
	fi_param_get_str(&ddtx_prov, "wire", &ddtx_settings.wire);
	fi_param_get_str(&ddtx_prov, "fabric_wire", &ddtx_settings.fabric_wire);
	fi_param_get_str(&ddtx_prov, "local_wire", &ddtx_settings.local_wire);
	if (fi_param_get_int(&ddtx_prov, "fabric_timeout_ms", &v) == 0 && v >= 0)
		ddtx_settings.fabric_timeout_ms = v;
	fi_param_get_str(&ddtx_prov, "iface", &ddtx_settings.iface);
	fi_param_get_str(&ddtx_prov, "ofi_provider", &ddtx_settings.ofi_provider);
	char *ep_type = NULL;
	if (fi_param_get_str(&ddtx_prov, "ofi_ep_type", &ep_type) == 0 && ep_type) {
		if (!strcasecmp(ep_type, "msg"))
			ddtx_settings.ofi_ep_msg = true;
		else if (strcasecmp(ep_type, "rdm"))
			DDTX_WARN(FI_LOG_CORE, "FI_DDTX_OFI_EP_TYPE=%s: neither rdm nor msg; rdm "
				  "is used\n", ep_type);
	}
}
