/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Values of the FI_DDTX_* variables, declared with fi_param_define and read once in fi_prov_ini()
 * (core/settings.c).  core and proto read them; engine, wire and hmem are handed what they need
 * as parameter structs and read no globals.
 */
#ifndef DDTX_COMMON_SETTINGS_H
#define DDTX_COMMON_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

/* Scheme names as FI_DDTX_SCHEME spells them; see engine/scheme.h. */
enum ddtx_scheme_setting {
	DDTX_SCHEME_SETTING_AUTO = 0,
	DDTX_SCHEME_SETTING_PACK,
	DDTX_SCHEME_SETTING_SGL,
	DDTX_SCHEME_SETTING_UMR,
};

/* FI_DDTX_PACK_STORES: see engine/store_choice.h. */
enum ddtx_pack_stores_setting {
	DDTX_PACK_STORES_SETTING_AUTO = 0,
	DDTX_PACK_STORES_SETTING_CACHED,
	DDTX_PACK_STORES_SETTING_STREAMING,
};

/* FI_DDTX_PACK_STREAM: PACK chunks behind the RTS before the CTS (STREAM). */
enum ddtx_pack_stream_setting {
	DDTX_PACK_STREAM_SETTING_AUTO = 0,  /* where the wire says (caps.pack_stream) */
	DDTX_PACK_STREAM_SETTING_ON,
	DDTX_PACK_STREAM_SETTING_OFF,
};

/* Values of the FI_DDTX_* variables, read once in fi_prov_ini(). */
struct ddtx_settings {
	enum ddtx_scheme_setting scheme;   /* FI_DDTX_SCHEME */
	size_t threshold;                  /* FI_DDTX_THRESHOLD: 0 = learned; else auto picks zero
					    * copy when the average block is at least this */
	size_t eager_size;                 /* FI_DDTX_EAGER_SIZE */
	bool eager_size_set;               /* ... given by the user (it then caps every message) */
	enum ddtx_pack_stores_setting pack_stores; /* FI_DDTX_PACK_STORES (shm wire) */
	enum ddtx_pack_stream_setting pack_stream; /* FI_DDTX_PACK_STREAM */
	size_t pull_split;                 /* FI_DDTX_PULL_SPLIT: smallest pull shared with the
					    * sender's writes (0: never) */
	size_t max_sge;                    /* FI_DDTX_MAX_SGE (shm wire) */
	size_t max_mkey_entries;           /* FI_DDTX_MAX_MKEY_ENTRIES (shm wire) */
	size_t ring_slots;                 /* FI_DDTX_SHM_RING_SLOTS */
	size_t slot_size;                  /* FI_DDTX_SHM_SLOT_SIZE */
	size_t key_slots;                  /* FI_DDTX_SHM_KEYS */
	int peer_timeout_ms;               /* FI_DDTX_PEER_CHECK_MS: liveness check period */
	unsigned ack_delay_us;             /* FI_DDTX_ACK_DELAY_US: the ACK timer's period (0: every
					    * delivery ACK sent at once, alone) */
	size_t iov_limit;                  /* FI_DDTX_IOV_LIMIT: cap on advertised iov limits (0: none) */
	int resolve_ms;                    /* FI_DDTX_RESOLVE_MS: wait for a service to be bound */
	bool print_stats;                  /* FI_DDTX_STATS: print fi_ddtx_stats at domain close */
	bool hmem_ipc;                     /* FI_DDTX_HMEM_IPC: offer CUDA IPC on the shm wire */
	bool hmem_direct;                  /* FI_DDTX_HMEM_DIRECT: device memory zero copy on a
					    * wire whose keys reach it (GPUDirect RDMA) */
	unsigned hmem_copy;                /* FI_DDTX_HMEM_COPY: 0 auto, 1 segments, 2 2d, 3 kernel
					    * (engine/hmem_copy.h) */
	/* DDT engine */
	size_t mr_cache_max_size;          /* FI_DDTX_MR_CACHE_MAX_SIZE: registered bytes kept */
	size_t mr_cache_max_count;         /* FI_DDTX_MR_CACHE_MAX_COUNT: registrations kept */
	bool mr_monitor;                   /* FI_DDTX_MR_MONITOR: watch for unmapped memory */
	size_t mkey_pool;                  /* FI_DDTX_MKEY_POOL: mkeys made at domain open */
	size_t layout_cache_size;          /* FI_DDTX_LAYOUT_CACHE_SIZE: layouts kept */
	bool reg_thread;                   /* FI_DDTX_REG_THREAD: register in the background */
	char *wire;                        /* FI_DDTX_WIRE: auto, shm, verbs, ofi or multi
					    * (NULL = auto) */
	char *fabric_wire;                 /* FI_DDTX_FABRIC_WIRE: multi's wire to other hosts */
	int fabric_timeout_ms;             /* FI_DDTX_FABRIC_TIMEOUT_MS (multi) */
	char *local_wire;                  /* FI_DDTX_LOCAL_WIRE: multi's wire to this host's
					    * peers: shm (default) or none (the fabric wire) */
	char *iface;                       /* FI_DDTX_IFACE: verbs device[:port] */
	char *ofi_provider;                /* FI_DDTX_OFI_PROVIDER: the ofi wire's core */
	bool ofi_ep_msg;                   /* FI_DDTX_OFI_EP_TYPE=msg: the core's FI_EP_MSG
					    * endpoints, connected by the wire (default: rdm) */
};

extern struct ddtx_settings ddtx_settings;

#endif /* DDTX_COMMON_SETTINGS_H */
