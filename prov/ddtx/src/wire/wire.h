/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire interface: what ddtx's engine and protocols see of a NIC.
 *
 * A wire is described by its capabilities (ddtx_wire_caps) and offers what an RDMA HCA offers:
 * addressing, memory registration into a key table, and work requests (send of a gathered
 * message, RDMA write and read with scatter-gather lists on both sides).  Wires know nothing of
 * tags, libfabric objects or schemes.  Completions and incoming messages are reported through
 * callbacks invoked only from ddtx_wire_ep_progress(), never from inside a post call.
 *
 * Implementations ("shm": a software HCA on one host, wire/shm/; "verbs": rdma-core, wire/verbs/;
 * "ofi": a core libfabric provider, wire/ofi/; "multi": a wire per peer over two of the others,
 * wire/multi/) fill the
 * table of wire_impl.h; wire.c dispatches these calls to the one that opened the domain
 * (params.wire).  All functions return 0 or a negative FI_E* code.
 */
#ifndef DDTX_WIRE_H
#define DDTX_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/name.h"

/* Which implementation a wire is, for the protocol's choices that depend on it. */
enum ddtx_wire_kind {
	DDTX_WIRE_KIND_SHM,
	DDTX_WIRE_KIND_VERBS,
	DDTX_WIRE_KIND_OFI,
	DDTX_WIRE_KIND_MULTI,
};

/* Capabilities: the limits the engine must respect, as data. */
struct ddtx_wire_caps {
	const char *name;         /* "shm", "verbs", "ofi" (logs and statistics) */
	enum ddtx_wire_kind kind; /* the same, compared per message without a string */
	size_t max_sge;           /* SGL entries per side of one work request */
	size_t max_mkey_entries;  /* entries of one multi-entry (UMR) key; 0 = no UMR */
	size_t max_send_size;     /* largest message ddtx_wire_send() carries (header included) */
	size_t max_rma_size;      /* largest byte count of one write/read work request */
	size_t inline_size;       /* bytes a send may carry without registration */
	size_t addr_len;          /* length of the address blob from ddtx_wire_ep_getname() */
	bool strided_mkeys;       /* interleaved (strided) keys exist */
	bool recv_scatter;        /* a send can scatter into receiver-posted SGEs */
	bool pack_fill;           /* PACK fills each message rather than cutting a payload into
				   * chunks for overlap: a message costs more than the overlap buys */
	bool pack_stream;         /* PACK chunks follow the RTS before its CTS (STREAM): the round
				   * trip costs more than a chunk's transfer */
	bool pack_stores;         /* PACK chunks go from one core to another through memory both
				   * map: the receiver chooses the stores that write them
				   * (engine/store_choice.h) */
	bool carry_acks;          /* a message costs more than the unexpected copy a delivery ACK
				   * carried on the reply causes: ACKs wait for a ride (proto/ack.c) */
	bool device_keys;         /* keys and local SGEs may cover CUDA device memory: the NIC
				   * reads and writes it itself (verbs: dma-buf registration) */
};

/* Tunables the provider reads from FI_DDTX_* parameters and hands to the wire. */
struct ddtx_wire_params {
	const char *wire;         /* implementation: "shm", "verbs", "ofi"; NULL/"auto" = default */
	size_t max_sge;           /* 0 = wire default */
	size_t max_mkey_entries;  /* 0 = wire default */
	size_t ring_slots;        /* shm: receive ring slots per endpoint (power of two) */
	size_t slot_size;         /* shm: bytes per ring slot, header included */
	size_t key_slots;         /* shm: capacity of the key table (power of two) */
	size_t key_segments;      /* shm: capacity of the key table's segment pool */
	const char *iface;        /* verbs: device[:port] (FI_DDTX_IFACE); NULL = first active */
	const char *ofi_provider; /* ofi: core provider name (FI_DDTX_OFI_PROVIDER); NULL = tcp */
	bool ofi_ep_msg;          /* ofi: the core's FI_EP_MSG endpoints, a connection per peer
				   * (FI_DDTX_OFI_EP_TYPE=msg); false: FI_EP_RDM */
	const char *fabric_wire;  /* multi: the wire to other hosts (FI_DDTX_FABRIC_WIRE);
				   * NULL = the first available of ofi, verbs */
	bool local_off;           /* multi: same-host peers also through the fabric wire
				   * (FI_DDTX_LOCAL_WIRE=none) */
	int fabric_timeout_ms;    /* multi, and ofi used alone: a fabric peer silent this long
				   * while work waits on it, and not answering a probe, is gone
				   * (0: never) */
};

/*
 * The first byte of a message a wire sends for itself (the multi wire's liveness probes): the
 * protocols never begin a message with it (proto/hdr.h asserts), so a wire that receives one
 * keeps it.
 */
#define DDTX_WIRE_MSG_OWN 0xffu

/* What each sub-wire of a wire per peer (multi) carried, counted by the sending side. */
#define DDTX_WIRE_STATS_MAX 2
struct ddtx_wire_stats {
	size_t count;             /* sub-wires described; 0 for a wire that has none */
	struct {
		const char *name;
		uint64_t peers;           /* peers reached through it */
		uint64_t msgs, msg_bytes; /* messages sent (header included) */
		uint64_t rma_ops, rma_bytes; /* writes and reads posted */
	} sub[DDTX_WIRE_STATS_MAX];
	/* The ofi wire (also under multi): messages written into peers' receive rings by RMA
	 * instead of sent, header included (wire/ofi/ring.c). */
	uint64_t ring_msgs, ring_bytes;
};

/* Access rights of a registered key, checked by the remote side of a write/read. */
enum {
	DDTX_ACC_LOCAL_READ = 1u << 0,
	DDTX_ACC_LOCAL_WRITE = 1u << 1,
	DDTX_ACC_REMOTE_READ = 1u << 2,
	DDTX_ACC_REMOTE_WRITE = 1u << 3,
};

/*
 * Key spaces.  Application keys (fi_mr_reg) are chosen by the caller when FI_MR_PROV_KEY is not
 * in use, so they share no numbering with the keys the engine registers for itself.  A remote
 * key is therefore named by (space, key).
 */
enum ddtx_key_space {
	DDTX_KEY_APP = 0,
	DDTX_KEY_INTERNAL = 1,
};

typedef uint32_t ddtx_peer_t;           /* a wire-level peer handle, dense from 0 */
#define DDTX_PEER_INVALID UINT32_MAX

struct ddtx_wire_domain;                /* owns the key table (memory registration) */
struct ddtx_wire_ep;                    /* owns the receive ring and the address */

struct ddtx_wire_mr {
	uint64_t key;                   /* the key a peer names in a write/read */
	enum ddtx_key_space space;
	uint64_t iova;                  /* address of byte 0 of the key as peers name it */
	size_t len;                     /* total bytes covered */
	uint32_t access;
	void *wire_priv;                /* wire-private */
};

/* Callbacks a wire endpoint invokes from ddtx_wire_ep_progress(). */
struct ddtx_wire_handlers {
	/*
	 * A message arrived from src.  buf is valid only during the call.  src is a peer handle of
	 * this wire endpoint (the wire creates one on first contact if needed).
	 */
	void (*on_recv)(void *arg, ddtx_peer_t src, const void *buf, size_t len);
	/* A posted write/read finished; status is 0 or a negative FI_E* code. */
	void (*on_complete)(void *arg, void *wr_context, int status);
};

/* ---- domain: memory registration ---- */

int ddtx_wire_domain_open(const struct ddtx_wire_params *params,
			  struct ddtx_wire_domain **out);
void ddtx_wire_domain_close(struct ddtx_wire_domain *dom);
const struct ddtx_wire_caps *ddtx_wire_domain_caps(struct ddtx_wire_domain *dom);
/* What the domain's sub-wires carried (count 0 for a wire without sub-wires). */
void ddtx_wire_domain_stats(struct ddtx_wire_domain *dom, struct ddtx_wire_stats *stats);
/* Is the wire implementation called name built in and usable here (a device present)? */
bool ddtx_wire_available(const char *name);

/*
 * Is addr a well-formed address blob of this wire: caps.addr_len bytes, its magic and version,
 * every field in range?  0 or -FI_EINVAL.  The format only: whether the endpoint it names exists
 * is learnt at first contact (a well-formed address of an exited process passes).  Lets fi_av_insert
 * refuse garbage instead of failing the first send to it.
 */
int ddtx_wire_addr_check(struct ddtx_wire_domain *dom, const void *addr, size_t len);

/*
 * Register count segments as one key.  With requested_key == NULL the wire chooses a unique
 * key; otherwise *requested_key is used and -FI_ENOKEY is returned if it is taken in this space.
 * iova is the address peers use for byte 0 (the segments' first address for virtual addressing,
 * 0 for offset addressing).  A count above caps.max_mkey_entries is allowed only in
 * DDTX_KEY_APP space (application fi_mr_regv); -FI_EINVAL otherwise.
 */
int ddtx_wire_mr_reg(struct ddtx_wire_domain *dom, const struct iovec *iov, size_t count,
		     enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		     uint32_t access, struct ddtx_wire_mr **out);
int ddtx_wire_mr_dereg(struct ddtx_wire_domain *dom, struct ddtx_wire_mr *mr);
/*
 * Is (space, key) registered in this domain with every bit of access, covering [addr, addr+len)
 * as the key addresses it?  0, -FI_EKEYREJECTED (no such key) or -FI_EACCES (bounds or access).
 * Lets the protocol check what a peer claims about this domain's own memory.
 */
int ddtx_wire_key_check(struct ddtx_wire_domain *dom, enum ddtx_key_space space, uint64_t key,
			uint64_t addr, uint64_t len, uint32_t access);

/*
 * ---- multi-entry keys (UMR mkeys) ----
 *
 * An mkey maps up to caps.max_mkey_entries pieces of registered memory into one key: addresses
 * through it are offsets 0..len into the concatenation of its entries.  Creating one is slow on
 * hardware (about 200 us), so the engine keeps a pool; mapping (a UMR work request) is fast.
 * Every map gives the mkey a new key value (tag rotation), so a peer's cached key of an earlier
 * mapping is refused (-FI_EKEYREJECTED) instead of reaching the new memory.
 */
struct ddtx_wire_mkey {
	uint64_t key;                   /* current key; valid while mapped */
	size_t max_entries;
	size_t nentries;                /* mapped entries, 0 when not mapped */
	size_t len;                     /* bytes mapped */
	void *wire_priv;
};

struct ddtx_wire_mkey_entry {
	const struct ddtx_wire_mr *mr;  /* registration holding the piece (NULL: host memory the
					 * wire can reach without one, as on shm) */
	uint64_t addr;
	uint64_t len;
};

/* -FI_ENOSYS when the wire has no multi-entry keys (caps.max_mkey_entries == 0). */
int ddtx_wire_mkey_create(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey **out);
void ddtx_wire_mkey_destroy(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);
/* Map n (<= max_entries) entries with remote access rights `access` (DDTX_ACC_*). */
int ddtx_wire_mkey_map(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey,
		       const struct ddtx_wire_mkey_entry *entries, size_t n, uint32_t access);
/* Unmap: the key is refused from now on. */
void ddtx_wire_mkey_invalidate(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);

/* ---- endpoint: addressing, messages, RMA ---- */

int ddtx_wire_ep_open(struct ddtx_wire_domain *dom, const struct ddtx_wire_handlers *handlers,
		      void *handler_arg, struct ddtx_wire_ep **out);
void ddtx_wire_ep_close(struct ddtx_wire_ep *ep);

/* Address blob of caps.addr_len bytes (-FI_ETOOSMALL with *len set if the buffer is short). */
int ddtx_wire_ep_getname(struct ddtx_wire_ep *ep, void *addr, size_t *len);
/*
 * Bind the endpoint to a service name (common/name.h): publish its address under the name so
 * that ddtx_wire_name_resolve() finds it, until the endpoint closes or binds another name.  A
 * name with an empty service unbinds.  -FI_EADDRINUSE (a live endpoint holds the name),
 * -FI_ENOSYS (this wire has no names), -FI_EINVAL.
 */
int ddtx_wire_ep_bind(struct ddtx_wire_ep *ep, const struct ddtx_name_addr *name);
/*
 * The address blob of the endpoint bound to a service name, waiting up to timeout_ms for one
 * to appear.  -FI_EADDRNOTAVAIL (none bound, or its owner is gone), -FI_ETOOSMALL, -FI_ENOSYS.
 */
int ddtx_wire_name_resolve(struct ddtx_wire_domain *dom, const struct ddtx_name_addr *name,
			   int timeout_ms, void *addr, size_t *len);
/* Turn a peer's address blob into a handle (idempotent: the same blob gives the same handle). */
int ddtx_wire_peer_insert(struct ddtx_wire_ep *ep, const void *addr, size_t len,
			  ddtx_peer_t *peer);
/* The address blob of a known peer (for FI_SOURCE / fi_av_lookup). */
int ddtx_wire_peer_addr(struct ddtx_wire_ep *ep, ddtx_peer_t peer, void *addr, size_t *len);
/* Is the peer's process still there?  false once it is known to be gone. */
bool ddtx_wire_peer_alive(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
/*
 * Start a peer taken as gone afresh, as a new process at the same address (a server restarted
 * on its service): the wire's state of the old one is dropped.  The caller holds nothing that
 * waits on the old process.  0 (also when the peer was not gone), -FI_EBUSY while the old
 * process's operations are still coming back from the fabric, -FI_ENOSYS where the wire's
 * addresses never outlive their process (shm: a pid in each) or it cannot tell.
 */
int ddtx_wire_peer_revive(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
/*
 * The largest message ddtx_wire_send() and a claim carry to peer now (header included):
 * max_send_size (the domain's caps.max_send_size), or more where the wire has more room for
 * this peer (the ofi wire: a peer's receive ring, 64 KiB slots, where a message sent through
 * tcp;ofi_rxm is held to rxm's 16 KiB eager size).  It never shrinks for a live peer (a
 * peer gone, or started afresh by ddtx_wire_peer_revive, is back to max_send_size).
 */
size_t ddtx_wire_peer_send_size(struct ddtx_wire_ep *ep, ddtx_peer_t peer, size_t max_send_size);
/* Should delivery ACKs to peer wait for a message to ride on (caps.carry_acks, per peer where
 * the wire has several kinds of peer: wire/multi answers for the peer's sub-wire)? */
bool ddtx_wire_peer_carries_acks(struct ddtx_wire_ep *ep, ddtx_peer_t peer, bool domain_caps);

/*
 * Send hdr followed by the gathered iov (at most caps.max_sge entries) as one message of at
 * most caps.max_send_size bytes.  The data is copied out before return.  -FI_EAGAIN when the
 * peer's receive queue is full (retry after progress), -FI_EHOSTUNREACH / -FI_EIO if the peer
 * is gone.
 */
int ddtx_wire_send(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		   const struct iovec *iov, size_t count);

/*
 * A send buffer built in place: claim one, write a whole message (header and payload) into
 * data[0..cap), then post it with ddtx_wire_send_commit().  On the shm wire the buffer is the
 * slot of the peer's receive queue, so a caller that packs straight into it makes the only copy
 * on the sending side; on verbs it is a registered bounce buffer.  -FI_EAGAIN when none is free,
 * -FI_EIO if the peer is gone, -FI_EMSGSIZE (nothing claimed) if the buffer would hold fewer
 * than min_len bytes.  Commit promptly: the peer's queue waits behind a claimed buffer.
 */
struct ddtx_wire_send_buf {
	void *data;
	size_t cap;                     /* == caps.max_send_size (or less for a smaller peer; more
					 * where the wire reaches the peer by a path with larger
					 * messages: the ofi wire's receive ring) */
	void *wire_priv;
	uint64_t wire_pos;
	uint32_t wire_route;            /* a wire per peer: the sub-wire that claimed it */
};
int ddtx_wire_send_claim(struct ddtx_wire_ep *ep, ddtx_peer_t peer, size_t min_len,
			 struct ddtx_wire_send_buf *buf);
/* Post a claimed buffer holding len (<= cap) bytes. */
void ddtx_wire_send_commit(struct ddtx_wire_ep *ep, struct ddtx_wire_send_buf *buf, size_t len);
/*
 * Would a send or a claim to peer find room in its queue now?  A hint, read without claiming:
 * false only where the next send would take -FI_EAGAIN (the shm wire's full ring of a live
 * reader); true where the wire cannot tell, or where the send would fail otherwise (a peer
 * gone, not yet mapped), so that it reports that.
 */
bool ddtx_wire_send_room(struct ddtx_wire_ep *ep, ddtx_peer_t peer);

/*
 * Would a write (or read) of [raddr, raddr+len) with the peer's key (space, rkey) be accepted
 * now?  0, or -FI_EACCES / -FI_EKEYREJECTED / -FI_EIO as the operation's completion would say.
 * Lets an operation of several remote segments refuse as a whole before any segment moves.  A
 * wire that cannot see its peers' keys before the transfer (verbs) answers 0.
 */
int ddtx_wire_rma_check(struct ddtx_wire_ep *ep, ddtx_peer_t peer, enum ddtx_key_space space,
			uint64_t rkey, uint64_t raddr, size_t len, bool write);

/*
 * RDMA write / read: local iov list (at most caps.max_sge entries) to/from the remote key
 * (space, rkey) at remote address raddr (as the key's iova names it), len bytes in all (the
 * local iov must hold exactly len bytes).  The remote side's key table is checked exactly as an
 * HCA would: key exists, [raddr, raddr+len) inside it, access right present.  Failures are
 * reported as the completion's status: -FI_EACCES (access or bounds), -FI_EKEYREJECTED (no
 * such key), -FI_EIO (peer gone); nothing is written on failure.  on_complete(wr_context) is
 * called from a later ddtx_wire_ep_progress().  Returns -FI_EINVAL for bad arguments (nothing
 * posted, no completion).
 */
int ddtx_wire_write(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		    size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		    size_t len, void *wr_context);
int ddtx_wire_read(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		   size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		   size_t len, void *wr_context);

/*
 * RDMA write whose local side is the mapped mkey `local` at offset loff (one work request however
 * many pieces the mkey gathers): the UMR scheme's write of one window pair.  Remote side and
 * completion as for ddtx_wire_write.
 */
int ddtx_wire_write_mkey(struct ddtx_wire_ep *ep, ddtx_peer_t peer,
			 const struct ddtx_wire_mkey *local, uint64_t loff,
			 enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
			 void *wr_context);

/* Deliver incoming messages and completions through the handlers; returns how many. */
int ddtx_wire_ep_progress(struct ddtx_wire_ep *ep);

/*
 * A mark covering every message to peer sent or committed so far, and whether all of them have
 * left this process (the ofi wire's core completed them).  A core with manual progress (tcp;
 * ofi_rxm) moves a queued message only while this process calls progress: a send reported
 * complete before that stopped the peer when the application then waited elsewhere.  Wires
 * whose messages need no further progress here (shm's ring, a NIC's queue) are always sent.
 */
uint64_t ddtx_wire_send_mark(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
bool ddtx_wire_sent(struct ddtx_wire_ep *ep, ddtx_peer_t peer, uint64_t mark);

/*
 * ofi wire: the provider name of the core that `want` (FI_DDTX_OFI_PROVIDER's syntax; NULL: the
 * default) resolves to, e.g. "tcp" -> "tcp;ofi_rxm" on libfabric 1.17 (FI_EP_RDM) or "tcp"
 * (ep_msg: FI_EP_MSG), into name[len].
 * -FI_ENODATA when no usable core answers (the reason is logged at info level).  For fi_getinfo's
 * layered entries.
 */
int ddtx_wire_ofi_core_name(const char *want, bool ep_msg, char *name, size_t len);

/* Remove shared-memory files left by processes that no longer exist (called at start-up). */
void ddtx_wire_cleanup_stale(void);

#endif /* DDTX_WIRE_H */
