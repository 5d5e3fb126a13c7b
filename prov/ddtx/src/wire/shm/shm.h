/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm wire: a software HCA on one host.  Private to wire/shm/.
 *
 * Shared-memory layout (all integers in host byte order; both sides run on the same host):
 *
 *  domain region  "/ddtx-<pid>-<32 hex>"  (written by its owner, mapped read-only by peers)
 *    struct ddtx_shm_region_hdr (magic DDTX_SHM_DOM_MAGIC) + struct ddtx_shm_dom_hdr
 *    key table : nslots  x struct ddtx_shm_key_slot   (open addressing, linear probing)
 *    seg pool  : nsegs   x struct ddtx_shm_seg        (addr, len) runs, owner-allocated
 *
 *  endpoint region "/ddtx-<pid>-<32 hex>"  (owner consumes, peers produce into the ring)
 *    struct ddtx_shm_region_hdr (magic DDTX_SHM_EP_MAGIC) + struct ddtx_shm_ep_hdr
 *    ring      : ring_slots x slot_size bytes, each a struct ddtx_shm_slot_hdr + payload
 *
 * Every value read from a peer's region is validated before use; the geometry of a peer's
 * regions is copied into private memory when it is mapped and never re-read.
 */
#ifndef DDTX_WIRE_SHM_H
#define DDTX_WIRE_SHM_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fi_errno.h>
#include "common/clock.h"
#include "common/hindex.h"
#include "common/log.h"
#include "common/minmax.h"
#include "common/provider.h"
#include "wire/wire_impl.h"

#define DDTX_SHM_VERSION 2
#define DDTX_SHM_DOM_MAGIC 0x444d4f44584444ull  /* "DDXDOMD" */
#define DDTX_SHM_EP_MAGIC 0x50455058584444ull   /* "DDXXPEP" */
#define DDTX_SHM_ADDR_MAGIC 0x61747864u          /* "dxta" */

#define DDTX_SHM_PREFIX "ddtx-"
#define DDTX_SHM_RAND_BYTES 16
#define DDTX_SHM_BOUND_MAX 128                   /* path of a service name file (name.c) */
#define DDTX_SHM_NAME_MAX 64                     /* "/ddtx-4294967295-<32 hex>" + NUL = 50 */

/* Defaults (see wire.h: ddtx_wire_params). */
#define DDTX_SHM_DEF_MAX_SGE 30
/* FI_DDTX_MAX_SGE's range: proto's work-request pieces are arrays of max_sge on the stack. */
#define DDTX_SHM_MAX_SGE 65536u
#define DDTX_SHM_DEF_MKEY_ENTRIES 32
/* 64 ring slots, not 256: every message takes the next slot, so PACK's DATA chunks (a slot each)
 * cycled through 16 MiB of ring, far more than this host's 2 MiB L2, and were copied into and out
 * of cold lines.  nc_bw PACK, interleaved runs: 32 x 4 KiB 16.6-17.0 -> 14.4-14.9 us, a layout
 * handle of 65536 x 8 B 78-80 -> 69 us; contiguous latency unchanged; 32 slots lose 1-2 KiB
 * message bandwidth (docs/benchmark-results.md). */
#define DDTX_SHM_DEF_RING_SLOTS 64
/* 128 KiB of payload and the headers, in whole pages.  With 64 KiB slots a 64 KiB message could
 * not go eagerly, and its rendezvous moved 11.0-11.4 GB/s in fabtests' tagged_bw (0.94-0.97x
 * shm) where eager moves 32.5-47.7 (docs/benchmark-results.md, "Contiguous 16 KiB-8 MiB"); with
 * 68 KiB slots 96 and 128 KiB went by pull at 0.80-0.86x shm, eagerly at 1.68-1.85x ("Eager up
 * to 128 KiB").  Not more: 196 KiB slots sent 192 KiB eagerly, 0.91x where the pull is 1.1x,
 * and its ping-pong 1.3x shm's latency. */
#define DDTX_SHM_DEF_SLOT_SIZE (131072 + 4096)
#define DDTX_SHM_DEF_KEY_SLOTS 16384
#define DDTX_SHM_DEF_KEY_SEGS 262144
#define DDTX_SHM_MAX_RING_SLOTS (1u << 16)
#define DDTX_SHM_MAX_SLOT_SIZE (64u << 20)
#define DDTX_SHM_MAX_RING_BYTES ((size_t)4 << 30)
#define DDTX_SHM_MAX_KEY_SLOTS (1u << 24)
#define DDTX_SHM_MAX_KEY_SEGS (1u << 28)
#define DDTX_SHM_MAX_RMA ((size_t)1 << 40)
#define DDTX_SHM_CMA_IOV_MAX 1024                /* IOV_MAX: entries per side per call */
/* Internal status: the process is gone (fi_errno.h has no FI_ESRCH); never returned by wire.h. */
#define DDTX_SHM_ESRCH ESRCH
#define DDTX_SHM_CMA_MAX_BYTES ((size_t)1 << 30) /* bytes per process_vm_* call */

/* ---- address blob (caps.addr_len bytes) ---- */
struct ddtx_shm_addr {
	uint32_t magic;                          /* DDTX_SHM_ADDR_MAGIC */
	uint16_t version;
	uint16_t reserved;
	uint32_t pid;
	uint32_t reserved2;
	uint64_t start_time;                     /* pid reuse guard: /proc/<pid>/stat starttime */
	uint64_t uid;                            /* random endpoint identity */
	uint8_t rand[DDTX_SHM_RAND_BYTES];       /* the endpoint region is /ddtx-<pid>-<hex(rand)> */
};
_Static_assert(sizeof(struct ddtx_shm_addr) == 48, "address blob layout");
#define DDTX_SHM_ADDR_LEN sizeof(struct ddtx_shm_addr)

/* ---- common region header ---- */
struct ddtx_shm_region_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;                       /* offset of the first table/ring byte */
	uint64_t region_size;
	uint32_t pid;
	uint32_t pidns;                          /* creator's PID namespace (ddtx_shm_pidns) */
	uint64_t start_time;
	uint64_t uid;
};

/* ---- key table ---- */
enum {
	DDTX_SHM_KEY_EMPTY = 0,
	DDTX_SHM_KEY_USED = 1,
	DDTX_SHM_KEY_TOMB = 2,
};

struct ddtx_shm_key_slot {
	_Atomic uint64_t seq;                    /* seqlock: odd while the owner rewrites the slot */
	uint32_t state;                          /* DDTX_SHM_KEY_* */
	uint32_t space;
	uint64_t key;
	uint64_t iova;
	uint64_t len;
	uint32_t access;
	uint32_t nseg;
	uint64_t seg_off;                        /* first segment in the pool */
	uint64_t gen;                            /* registrations this slot has held */
};
_Static_assert(sizeof(struct ddtx_shm_key_slot) == 64, "key slot layout");

struct ddtx_shm_seg {
	uint64_t addr;
	uint64_t len;
};

struct ddtx_shm_dom_hdr {
	struct ddtx_shm_region_hdr r;
	uint64_t nslots;                         /* hash slots (power of two) */
	uint64_t nsegs;                          /* segment pool entries */
	uint64_t slots_off;
	uint64_t segs_off;
};

/* ---- endpoint region / receive ring ---- */
struct ddtx_shm_ep_hdr {
	struct ddtx_shm_region_hdr r;
	char dom_name[DDTX_SHM_NAME_MAX];        /* the owner's domain region */
	_Atomic uint32_t alive;                  /* cleared by the owner at close */
	uint32_t ring_slots;
	uint32_t slot_size;
	uint32_t reserved;
	uint64_t ring_off;
	uint64_t stamp_off;                      /* the claim stamps: ring_slots x 8 bytes */
	_Alignas(64) _Atomic uint64_t tail;      /* producers' claim counter */
	_Alignas(64) uint64_t pad[8];
};

struct ddtx_shm_slot_hdr {
	_Atomic uint64_t seq;                    /* Vyukov sequence: pos free, pos+1 full */
	uint32_t len;                            /* message bytes */
	uint32_t skip;                           /* bytes before the message (below 64) */
	struct ddtx_shm_addr src;                /* sender's address blob (carries its uid) */
};
_Static_assert(sizeof(struct ddtx_shm_slot_hdr) == 64, "slot header layout");
#define DDTX_SHM_SLOT_HDR sizeof(struct ddtx_shm_slot_hdr)

/* ---- region.c: names, files, process identity, stale cleanup ---- */
struct ddtx_shm_map {
	void *addr;
	size_t size;
	char name[DDTX_SHM_NAME_MAX];
	int owner_fd;                            /* own regions: fd + 1 holding a shared flock
						  * while the region lives (0: none) */
};

int ddtx_shm_random(void *buf, size_t len);
void ddtx_shm_format_name(char *name, uint32_t pid, const uint8_t rand[DDTX_SHM_RAND_BYTES]);
bool ddtx_shm_valid_name(const char *name, size_t maxlen);
/* Create a fresh 0600 region of size bytes under a new random name; rand receives its bytes. */
int ddtx_shm_region_create(size_t size, struct ddtx_shm_map *map,
			   uint8_t rand[DDTX_SHM_RAND_BYTES]);
/* Map an existing region of a peer (checks the owner uid and a minimum size). */
int ddtx_shm_region_map(const char *name, bool writable, size_t min_size,
			struct ddtx_shm_map *map);
/* Write each page once (fresh: a region of ours not yet in use). */
void ddtx_shm_region_touch(const struct ddtx_shm_map *map, size_t bytes, bool fresh);
void ddtx_shm_region_unmap(struct ddtx_shm_map *map);
void ddtx_shm_region_destroy(struct ddtx_shm_map *map);
/* Start time of pid (clock ticks since boot) and whether it is a zombie; -DDTX_SHM_ESRCH if gone. */
int ddtx_shm_proc_identity(uint32_t pid, uint64_t *start_time, bool *zombie);
uint64_t ddtx_shm_self_start_time(void);
/* Low 32 bits of this process's PID namespace inode: pids mean something only within it. */
uint32_t ddtx_shm_pidns(void);
/* Is the process (pid, start_time) still running?  start_time 0 = do not check reuse. */
bool ddtx_shm_proc_alive(uint32_t pid, uint64_t start_time);
/* Periodic liveness and stall checks need only the coarse clock. */
#define ddtx_shm_now_ns() ddtx_coarse_time_ns()

/* ---- keytable.c: the memory translation table ---- */
struct ddtx_shm_segpool;                 /* private allocator of the segment pool */

#define DDTX_SHM_KEYTAB_FREED 64

struct ddtx_shm_keytab {
	struct ddtx_shm_dom_hdr *hdr;
	struct ddtx_shm_key_slot *slots;
	struct ddtx_shm_seg *segs;
	uint64_t mask;
	uint64_t live;                           /* keys registered */
	uint64_t tombs;                          /* slots of removed keys still ending no chain */
	uint64_t capacity;                       /* most keys at once (params.key_slots) */
	uint64_t next_key;                       /* counter for chosen keys */
	uint64_t key_secret;
	uint64_t displaced;                      /* live keys away from their hash's slot */
	uint64_t cursor;                         /* next slot a chosen key may take */
	uint32_t nfreed;
	uint32_t freed[DDTX_SHM_KEYTAB_FREED];   /* slots freed last, reused first */
	struct ddtx_shm_segpool *pool;
};

/* A key as a remote reader sees it, after a consistent seqlock snapshot. */
struct ddtx_shm_key_view {
	uint64_t iova;
	uint64_t len;
	uint32_t access;
};

size_t ddtx_shm_keytab_region_size(uint64_t nslots, uint64_t nsegs);
int ddtx_shm_keytab_init(struct ddtx_shm_keytab *kt, void *region, size_t region_size,
			 uint64_t capacity, uint64_t nslots, uint64_t nsegs);
void ddtx_shm_keytab_fini(struct ddtx_shm_keytab *kt);
int ddtx_shm_keytab_insert(struct ddtx_shm_keytab *kt, const struct iovec *iov, size_t count,
			   uint32_t space, const uint64_t *requested_key, uint64_t iova,
			   uint64_t len, uint32_t access, uint64_t *key_out, uint32_t *slot_out);
/* Owner side: is (space, key) live with access over [addr, addr+len)?  See ddtx_wire_key_check. */
int ddtx_shm_keytab_check(struct ddtx_shm_keytab *kt, uint32_t space, uint64_t key,
			  uint64_t addr, uint64_t len, uint32_t access);
int ddtx_shm_keytab_remove(struct ddtx_shm_keytab *kt, uint32_t slot, uint32_t space,
			   uint64_t key);

/* A read-only view of a peer's key table (geometry copied and validated at map time). */
struct ddtx_shm_remote_keytab {
	const struct ddtx_shm_key_slot *slots;
	const struct ddtx_shm_seg *segs;
	uint64_t mask;
	uint64_t nsegs;
};
int ddtx_shm_remote_keytab_attach(struct ddtx_shm_remote_keytab *rk, const void *region,
				  size_t region_size, uint32_t pid, uint64_t start_time);
/*
 * Resolve (space, key) and translate [raddr, raddr + len) into remote iovecs (appended to
 * *riov, grown as needed).  -FI_EKEYREJECTED, -FI_EACCES (bounds or access), -FI_EIO
 * (inconsistent table), -FI_ENOMEM.
 */
int ddtx_shm_remote_keytab_translate(const struct ddtx_shm_remote_keytab *rk, uint32_t space,
				     uint64_t key, uint64_t raddr, size_t len, uint32_t need,
				     struct iovec **riov, size_t *riov_cap, size_t *riov_cnt);

/* ---- ring.c: the receive ring ---- */
struct ddtx_shm_ring {
	struct ddtx_shm_ep_hdr *hdr;
	_Atomic uint64_t *stamps;                /* per slot: who claimed which position */
	uint8_t *base;
	uint32_t nslots;
	uint32_t slot_size;
	uint64_t mask;
};

void ddtx_shm_ring_init(struct ddtx_shm_ring *ring, struct ddtx_shm_ep_hdr *hdr,
			_Atomic uint64_t *stamps, uint8_t *base, uint32_t nslots, uint32_t slot_size);
static inline struct ddtx_shm_slot_hdr *ddtx_shm_ring_slot(const struct ddtx_shm_ring *ring,
							   uint64_t pos)
{
	return (struct ddtx_shm_slot_hdr *)(ring->base + (pos & ring->mask) * ring->slot_size);
}
/* Producer: gather hdr + iov into one slot; -FI_EAGAIN when full. */
int ddtx_shm_ring_push(struct ddtx_shm_ring *ring, const struct ddtx_shm_addr *src,
		       const void *hdr, size_t hdr_len, const struct iovec *iov, size_t count,
		       size_t total);
/* Claim the next free slot (stamped with src's pid); fill its payload, then publish it (the
 * slot's header, src included, is written there, once). */
int ddtx_shm_ring_claim(struct ddtx_shm_ring *ring, const struct ddtx_shm_addr *src,
			struct ddtx_shm_slot_hdr **slot, uint64_t *pos);
void ddtx_shm_ring_publish(struct ddtx_shm_slot_hdr *slot, uint64_t pos,
			   const struct ddtx_shm_addr *src, size_t len);
/* Is the slot at the tail still the consumer's (a claim now would take -FI_EAGAIN)? */
bool ddtx_shm_ring_full(const struct ddtx_shm_ring *ring);

/* Consumer state, private to the owner. */
struct ddtx_shm_consumer {
	uint64_t head;
	uint64_t stall_since;                    /* ns; 0 = not stalled */
	bool stall_warned;
	uint32_t idle_polls;                     /* empty peeks that did not read the tail */
};
enum ddtx_shm_pop {
	DDTX_SHM_POP_EMPTY = 0,
	DDTX_SHM_POP_MSG,
	DDTX_SHM_POP_SKIP,                       /* a slot was dropped (malformed / dead producer) */
};
/* Peek the next message; on DDTX_SHM_POP_MSG, *slot, *msg (its first byte, in the slot) and
 * *len are set; release with _release. */
enum ddtx_shm_pop ddtx_shm_ring_peek(struct ddtx_shm_ring *ring, struct ddtx_shm_consumer *c,
				     struct ddtx_shm_slot_hdr **slot, uint8_t **msg,
				     uint32_t *len);
void ddtx_shm_ring_release(struct ddtx_shm_ring *ring, struct ddtx_shm_consumer *c);

/* ---- dma.c: CMA transfers with iov lists on both sides ---- */
/*
 * Move len bytes between local and remote lists; write = local -> remote.  0, -FI_E*, or
 * -DDTX_SHM_ESRCH / -FI_EPERM when the kernel refused to reach the process (gone, or a pid now
 * owned by another process; but EPERM also comes from a live peer that made itself
 * non-dumpable): the caller checks the peer before declaring it dead.
 */
int ddtx_shm_dma(pid_t pid, bool write, const struct iovec *local, size_t lcount,
		 const struct iovec *remote, size_t rcount, size_t len);

/* ---- peer.c: the peer table ---- */
struct ddtx_shm_peer {
	struct ddtx_shm_addr addr;
	bool mapped;
	bool dead;
	uint64_t last_check_ns;
	struct ddtx_shm_map ep_map;
	struct ddtx_shm_map dom_map;
	struct ddtx_shm_ep_hdr *ep_hdr;          /* in ep_map */
	struct ddtx_shm_ring ring;               /* geometry copied at map time */
	struct ddtx_shm_remote_keytab keys;
};

/* Peers an endpoint learns from incoming messages alone (not through its AV): a bound on the
 * state other processes can make it keep.  A host runs far fewer endpoints than this. */
#define DDTX_SHM_MAX_INBOUND_PEERS 16384

struct ddtx_shm_peers {
	struct ddtx_shm_peer *v;
	uint32_t count, cap;
	uint32_t inbound;                        /* of count, admitted by ddtx_shm_peers_admit */
	struct ddtx_hindex index;                /* uid -> peer (the whole address compared) */
};

int ddtx_shm_addr_check(const void *addr, size_t len);
void ddtx_shm_peers_init(struct ddtx_shm_peers *pt);
void ddtx_shm_peers_fini(struct ddtx_shm_peers *pt);
int ddtx_shm_peers_insert(struct ddtx_shm_peers *pt, const struct ddtx_shm_addr *addr,
			  ddtx_peer_t *out);
int ddtx_shm_peers_find(const struct ddtx_shm_peers *pt, const struct ddtx_shm_addr *addr,
			ddtx_peer_t *out);
/*
 * The peer that sent a message: found, or added once its address is verified against its live
 * regions (mapped now).  -FI_EIO (no such endpoint), -FI_ENOSPC (DDTX_SHM_MAX_INBOUND_PEERS
 * reached), -FI_ENOMEM; nothing is kept then.
 */
int ddtx_shm_peers_admit(struct ddtx_shm_peers *pt, const struct ddtx_shm_addr *addr,
			 ddtx_peer_t *out);
struct ddtx_shm_peer *ddtx_shm_peers_get(struct ddtx_shm_peers *pt, ddtx_peer_t peer);
/* Map the peer's regions once; -FI_EIO (and the peer marked dead) if they are gone. */
int ddtx_shm_peer_map(struct ddtx_shm_peer *p);
/* Full liveness check (alive flag, process, pid reuse); marks the peer dead. */
bool ddtx_shm_peer_check(struct ddtx_shm_peer *p);
void ddtx_shm_peer_mark_dead(struct ddtx_shm_peer *p, const char *why);

/* ---- wire_shm.c ---- */
struct ddtx_shm_compl {
	void *ctx;
	int status;
};

struct ddtx_shm_domain {
	struct ddtx_wire_domain base;            /* first: the generic handle */
	pthread_mutex_t lock;                    /* key table writer */
	struct ddtx_wire_caps caps;
	struct ddtx_wire_params params;          /* with defaults applied */
	struct ddtx_shm_map map;
	struct ddtx_shm_keytab keys;
	uint64_t start_time;
};

struct ddtx_shm_mr {
	struct ddtx_wire_mr pub;
	uint32_t slot;
};

struct ddtx_shm_ep {
	struct ddtx_wire_ep base;                /* first: the generic handle */
	struct ddtx_shm_domain *dom;
	struct ddtx_wire_handlers handlers;
	void *handler_arg;
	struct ddtx_shm_map map;
	struct ddtx_shm_ep_hdr *hdr;
	struct ddtx_shm_ring ring;
	struct ddtx_shm_consumer cons;
	struct ddtx_shm_addr addr;
	struct ddtx_shm_peers peers;
	struct ddtx_shm_compl *cq;               /* pending completions, circular */
	size_t cq_head, cq_count, cq_cap;
	struct iovec *riov;                      /* scratch: translated remote segments */
	size_t riov_cap;
	bool in_progress;
	bool last_src_ok;                        /* last_src was checked and admitted: */
	struct ddtx_shm_addr last_src;           /* the source of the last message received */
	ddtx_peer_t last_src_peer;               /* and its handle (peers are never removed) */
	uint64_t dropped;                        /* messages refused for their source */
	char bound[DDTX_SHM_BOUND_MAX];          /* name file published (name.c); "" = none */
};


/* The shm objects behind generic wire handles (NULL stays NULL: the base is the first member). */
static inline struct ddtx_shm_domain *ddtx_shm_domain_of(struct ddtx_wire_domain *d)
{
	return (struct ddtx_shm_domain *)d;
}

static inline struct ddtx_shm_ep *ddtx_shm_ep_of(struct ddtx_wire_ep *e)
{
	return (struct ddtx_shm_ep *)e;
}

extern const struct ddtx_wire_impl ddtx_shm_wire_impl;

int ddtx_shm_mr_reg(struct ddtx_wire_domain *dom, const struct iovec *iov, size_t count,
		    enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		    uint32_t access, struct ddtx_wire_mr **out);
int ddtx_shm_mr_dereg(struct ddtx_wire_domain *dom, struct ddtx_wire_mr *mr);

/* ---- mkey.c: multi-entry keys as key-table entries (UMR of the software HCA) ---- */
struct ddtx_shm_mkey {
	struct ddtx_wire_mkey pub;
	struct ddtx_wire_mr *mr;                 /* the key-table entry of the current mapping */
	struct ddtx_wire_mkey_entry *entries;    /* max_entries, the current mapping */
};

int ddtx_shm_mkey_create(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey **out);
void ddtx_shm_mkey_destroy(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);
int ddtx_shm_mkey_map(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey,
		      const struct ddtx_wire_mkey_entry *entries, size_t n, uint32_t access);
void ddtx_shm_mkey_invalidate(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);
void ddtx_shm_cleanup_stale(void);

/* ---- name.c: service names (common/name.h) as name files in /dev/shm ---- */
int ddtx_shm_ep_bind(struct ddtx_wire_ep *ep, const struct ddtx_name_addr *name);
void ddtx_shm_name_unbind(struct ddtx_shm_ep *ep);
int ddtx_shm_name_resolve(struct ddtx_wire_domain *dom, const struct ddtx_name_addr *name,
			  int timeout_ms, void *addr, size_t *len);

#endif /* DDTX_WIRE_SHM_H */
