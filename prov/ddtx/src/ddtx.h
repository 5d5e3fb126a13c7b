/*
 * Provider-wide definitions: the fi_provider object, logging, and the FI_DDTX_* settings.
 * Every layer may include this header; it includes nothing but libfabric's public headers.
 */
#ifndef DDTX_H
#define DDTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#define DDTX_PROV_NAME "ddtx"
#define DDTX_PROV_VERSION FI_VERSION(0, 1)
#define DDTX_FI_VERSION FI_VERSION(1, 17)

extern struct fi_provider ddtx_prov;

#define DDTX_WARN(subsys, ...) FI_WARN(&ddtx_prov, subsys, __VA_ARGS__)
#define DDTX_INFO(subsys, ...) FI_INFO(&ddtx_prov, subsys, __VA_ARGS__)
#define DDTX_DBG(subsys, ...) FI_DBG(&ddtx_prov, subsys, __VA_ARGS__)

/* Scheme names as FI_DDTX_SCHEME spells them; see engine/scheme.h. */
enum ddtx_scheme_setting {
	DDTX_SCHEME_SETTING_AUTO = 0,
	DDTX_SCHEME_SETTING_PACK,
	DDTX_SCHEME_SETTING_SGL,
	DDTX_SCHEME_SETTING_UMR,
};

/* Values of the FI_DDTX_* variables, read once in fi_prov_ini(). */
struct ddtx_settings {
	enum ddtx_scheme_setting scheme;   /* FI_DDTX_SCHEME */
	size_t threshold;                  /* FI_DDTX_THRESHOLD: 0 = learned; else auto picks zero
					    * copy when the average block is at least this */
	size_t eager_size;                 /* FI_DDTX_EAGER_SIZE */
	size_t max_sge;                    /* FI_DDTX_MAX_SGE (shm wire) */
	size_t max_mkey_entries;           /* FI_DDTX_MAX_MKEY_ENTRIES (shm wire) */
	size_t ring_slots;                 /* FI_DDTX_SHM_RING_SLOTS */
	size_t slot_size;                  /* FI_DDTX_SHM_SLOT_SIZE */
	size_t key_slots;                  /* FI_DDTX_SHM_KEYS */
	int peer_timeout_ms;               /* FI_DDTX_PEER_CHECK_MS: liveness check period */
	bool print_stats;                  /* FI_DDTX_STATS: print fi_ddtx_stats at domain close */
	/* DDT engine */
	size_t mr_cache_max_size;          /* FI_DDTX_MR_CACHE_MAX_SIZE: registered bytes kept */
	size_t mr_cache_max_count;         /* FI_DDTX_MR_CACHE_MAX_COUNT: registrations kept */
	bool mr_monitor;                   /* FI_DDTX_MR_MONITOR: watch for unmapped memory */
	size_t mkey_pool;                  /* FI_DDTX_MKEY_POOL: mkeys made at domain open */
	size_t layout_cache_size;          /* FI_DDTX_LAYOUT_CACHE_SIZE: layouts kept */
	bool reg_thread;                   /* FI_DDTX_REG_THREAD: register in the background */
	char *wire;                        /* FI_DDTX_WIRE: auto, shm or verbs (NULL = auto) */
	char *iface;                       /* FI_DDTX_IFACE: verbs device[:port] */
};

extern struct ddtx_settings ddtx_settings;

#define DDTX_IOV_LIMIT 1024
#define DDTX_MR_IOV_LIMIT 1024

/* Monotonic time.  The coarse clock (a few ms resolution) costs a fraction of the precise one
 * and is what periodic checks on the progress path use. */
static inline uint64_t ddtx_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#define ddtx_time_ns() ddtx_clock_ns(CLOCK_MONOTONIC)
#define ddtx_coarse_time_ns() ddtx_clock_ns(CLOCK_MONOTONIC_COARSE)

#define DDTX_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DDTX_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif /* DDTX_H */
