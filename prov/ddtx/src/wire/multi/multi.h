/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The multi wire: a wire per peer.  One endpoint holds two sub-wires, the host's shared-memory
 * wire ("local", shm) and a wire that crosses hosts ("fabric", e.g. ofi or verbs), and sends to
 * each peer through the one its address calls for: the local wire when the peer shares this
 * process's shared-memory domain (host.c), the fabric wire otherwise.  Private to wire/multi/.
 *
 * Address blob: DDTX_MULTI_ADDR_LEN (64) bytes, the most MPICH takes (FI_NAME_MAX):
 *
 *   offset  size  field
 *        0     2  magic          DDTX_MULTI_ADDR_MAGIC
 *        2     1  version        DDTX_MULTI_ADDR_VERSION
 *        3     1  fabric_len     bytes of the fabric blob stored (its trailing zero bytes are
 *                                left out; the receiver pads them back)
 *        4    60  fabric blob    the endpoint's address on the fabric wire, then zeros
 *
 * The local (shm) half does not travel: an endpoint publishes a record in its host's /dev/shm
 * (publish.c) named by a hash of its fabric blob, holding its shm address, its full multi blob
 * and its host identity.  A peer that finds the record in its own /dev/shm, written by a live
 * process of the same host identity (host.c), is on this host and is reached through shm;
 * anyone else through the fabric wire.
 */
#ifndef DDTX_WIRE_MULTI_H
#define DDTX_WIRE_MULTI_H

#include "wire/wire_impl.h"

enum { DDTX_MULTI_LOCAL = 0, DDTX_MULTI_FABRIC = 1, DDTX_MULTI_NSUB = 2 };

/*
 * What decides "the shm wire reaches that process": the same kernel (boot id), the same /dev/shm
 * (the device and inode of its root directory: a tmpfs mounted over it in another mount
 * namespace is another domain) and the same PID namespace (the wire names processes by pid for
 * cross-memory attach and liveness).  The host name and the network namespace do not matter.
 */
struct ddtx_multi_host {
	uint8_t boot_id[16];
	uint64_t shm_dev;
	uint64_t shm_ino;
	uint64_t pidns;
};

#define DDTX_MULTI_ADDR_MAGIC 0x4d57u         /* "WM" little-endian */
#define DDTX_MULTI_ADDR_VERSION 1
#define DDTX_MULTI_ADDR_LEN 64
#define DDTX_MULTI_ADDR_HDR 4
#define DDTX_MULTI_FABRIC_MAX (DDTX_MULTI_ADDR_LEN - DDTX_MULTI_ADDR_HDR)
#define DDTX_MULTI_SUB_ADDR_MAX 128               /* a sub-wire's blob, at most */

/* Multi blob -> fabric blob (fabric_len bytes padded with zeros to out_len): 0 or -FI_EINVAL. */
int ddtx_multi_addr_unpack(const void *addr, size_t len, void *fabric, size_t fabric_len);
/* Fabric blob -> multi blob: -FI_EINVAL when it does not fit. */
int ddtx_multi_addr_pack(const void *fabric, size_t fabric_len, uint8_t out[DDTX_MULTI_ADDR_LEN]);
/* The name of an endpoint's record: a hash of its fabric blob (the uid of the user as salt). */
uint64_t ddtx_multi_token(const void *fabric, size_t fabric_len);

/* ---- records in the host's /dev/shm (publish.c) ---- */
struct ddtx_multi_record {
	uint64_t magic;
	uint32_t pid;                                 /* publisher */
	uint32_t local_len;
	struct ddtx_multi_host host;
	uint8_t local[DDTX_MULTI_SUB_ADDR_MAX];      /* its shm address */
	uint8_t addr[DDTX_MULTI_ADDR_LEN];           /* its multi blob */
};
/* Publish (atomically: a private file linked into place); 0 or -FI_EIO. */
int ddtx_multi_publish(uint64_t token, const struct ddtx_multi_record *rec);
void ddtx_multi_unpublish(uint64_t token);
/* The record of token if one of this user's, well formed, and its publisher alive: 0 or
 * -FI_ENOENT. */
int ddtx_multi_lookup(uint64_t token, struct ddtx_multi_record *rec);
/* Find the live record whose shm address is local[0..len): 0 or -FI_ENOENT. */
int ddtx_multi_lookup_local(const void *local, size_t len, struct ddtx_multi_record *rec);
/* Remove records whose publishers are gone (domain open). */
void ddtx_multi_cleanup_stale(void);

/* Fill this process's identity; 0 or -FI_ENODEV (no /dev/shm). */
int ddtx_multi_host_self(struct ddtx_multi_host *host);
bool ddtx_multi_host_same(const struct ddtx_multi_host *a, const struct ddtx_multi_host *b);

struct ddtx_multi_domain {
	struct ddtx_wire_domain base;
	bool fabric_only;                    /* FI_DDTX_LOCAL_WIRE=none */
	int fabric_timeout_ms;               /* FI_DDTX_FABRIC_TIMEOUT_MS */
	struct ddtx_wire_domain *sub[DDTX_MULTI_NSUB];
	const struct ddtx_wire_caps *sub_caps[DDTX_MULTI_NSUB];
	struct ddtx_wire_caps caps;
	char name[40];                       /* "multi(shm+ofi)" */
	struct ddtx_multi_host host;
	struct ddtx_wire_stats stats;        /* what each sub-wire carried, all endpoints */
};

/* A registration: the same key in both sub-domains. */
struct ddtx_multi_mr {
	struct ddtx_wire_mr pub;
	struct ddtx_wire_mr *sub[DDTX_MULTI_NSUB];
};

struct ddtx_multi_peer {
	uint8_t sub;                         /* DDTX_MULTI_LOCAL or DDTX_MULTI_FABRIC */
	ddtx_peer_t sub_peer;
	uint8_t *addr;                       /* the full blob it was inserted with; NULL when it
					      * is known only from its first message */
	/* liveness of a fabric peer (liveness.c) */
	uint64_t heard_ns;                   /* last message from it (or when it became known) */
	uint64_t probe_ns;                   /* when our unanswered probe went out; 0 = none */
	bool pong_owed;                      /* it probed us: answer at the next progress */
	bool gone;                           /* silent past the timeout: every call fails */
};

struct ddtx_multi_ep;
struct ddtx_multi_sub_arg {
	struct ddtx_multi_ep *ep;
	int sub;
};

struct ddtx_multi_ep {
	struct ddtx_wire_ep base;
	struct ddtx_multi_domain *dom;
	struct ddtx_wire_ep *sub[DDTX_MULTI_NSUB];
	struct ddtx_multi_sub_arg sub_arg[DDTX_MULTI_NSUB];
	struct ddtx_wire_handlers handlers;
	void *handler_arg;
	uint8_t addr[DDTX_MULTI_ADDR_LEN];   /* own blob */
	uint64_t token;                      /* own record's name (0: none published) */
	struct ddtx_multi_peer *peers;       /* by multi handle */
	size_t npeers, peers_cap;
	ddtx_peer_t *of_sub[DDTX_MULTI_NSUB];     /* sub-wire handle -> multi handle */
	size_t of_sub_len[DDTX_MULTI_NSUB];
	uint64_t timeout_ns;                 /* FI_DDTX_FABRIC_TIMEOUT_MS; 0 = no probes */
	bool pongs_owed;
};

static inline struct ddtx_multi_domain *ddtx_multi_domain_of(struct ddtx_wire_domain *d)
{
	return (struct ddtx_multi_domain *)d;
}

static inline struct ddtx_multi_ep *ddtx_multi_ep_of(struct ddtx_wire_ep *e)
{
	return (struct ddtx_multi_ep *)e;
}

/* ---- peers (peer.c) ---- */
/* The multi handle of sub-wire peer (sub, sp), made on first sight; DDTX_PEER_INVALID on ENOMEM. */
ddtx_peer_t ddtx_multi_peer_of_sub(struct ddtx_multi_ep *ep, int sub, ddtx_peer_t sp);
struct ddtx_multi_peer *ddtx_multi_peer_get(struct ddtx_multi_ep *ep, ddtx_peer_t peer);
void ddtx_multi_peers_fini(struct ddtx_multi_ep *ep);

/* ---- liveness of fabric peers (liveness.c) ---- */
/*
 * A fabric over TCP reports a host that vanished only after the kernel gives up retransmitting
 * (about 15 minutes), so the multi wire probes: when the protocol asks whether a fabric peer
 * lives (it does so while operations wait on it) and nothing came from it for timeout/2, a probe
 * goes out; no message at all within the timeout after it, and the peer is gone.  A peer that
 * does not progress (manual progress, a long computation) answers late: the timeout must exceed
 * the longest pause between a peer's progress calls.
 */
/* A message from a sub-wire: true if it was the wire's own (a probe or its answer), kept. */
bool ddtx_multi_live_recv(struct ddtx_multi_ep *ep, struct ddtx_multi_peer *p, const void *buf,
			  size_t len);
/* Is a fabric peer alive by the probes?  May send a probe. */
bool ddtx_multi_live_check(struct ddtx_multi_ep *ep, struct ddtx_multi_peer *p);
/* Send the answers owed (from progress, outside the sub-wires' callbacks). */
void ddtx_multi_live_answer(struct ddtx_multi_ep *ep);

extern const struct ddtx_wire_impl ddtx_multi_wire_impl;

#endif /* DDTX_WIRE_MULTI_H */
