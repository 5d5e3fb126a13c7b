/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire: ddtx over a core libfabric provider (tcp, shm, verbs;ofi_rxm, efa...) driven
 * through the public fi_* API only, as ofi_rxm drives its core.  Private to wire/ofi/.
 *
 *  domain.c    core selection (fi_getinfo, never ddtx itself), fabric and domain, caps
 *  mr.c        the key table: registrations in the core's domain, key_check, KEY_REQ answers
 *  endpoint.c  the core endpoint, AV, CQ, receive buffers, address blob, peers
 *  send.c      messages through registered bounce buffers (send, claim/commit)
 *  rma.c       writes and reads: key resolution, chunking to the core's limits, completions
 *  ring.c      the receive ring: messages written into the receiver's registered slots
 *  progress.c  the CQ: receives, control messages, completions and errors
 *  liveness.c  probes of peers that work waits on; a peer gone fails its operations
 *  name.c      service names: bind at and resolve to the core's address of (node, service)
 *  conn.c      a core with FI_EP_MSG only: listening, connecting, accepting, the race, shutdown
 *  wire_ofi.c  the ddtx_wire_impl table
 *
 * Pure helpers (blob, caps, chunking, key encoding) are in blob.h and ofi_pure.h.
 */
#ifndef DDTX_WIRE_OFI_H
#define DDTX_WIRE_OFI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "common/list.h"
#include "common/log.h"
#include "common/minmax.h"
#include "common/provider.h"
#include "wire/ofi/ofi_pure.h"
#include "wire/wire_impl.h"

#define DDTX_OFI_RX_BUFS 64               /* receive buffers posted per endpoint */
#define DDTX_OFI_TX_BUFS 128              /* send bounce buffers per endpoint */
#define DDTX_OFI_KEY_BUCKETS 4096
#define DDTX_OFI_CQ_BATCH 16
#define DDTX_OFI_EQ_EVERY 16              /* FI_EP_MSG: EQ reads, 1 per this many progress calls */
/* Bounce buffers one peer's unfinished sends may hold: a peer whose host vanished keeps its
 * sends unfinished (the core gives them back only at close); the rest serve the other peers. */
#define DDTX_OFI_TX_PER_PEER (DDTX_OFI_TX_BUFS / 2)
/* Peers an endpoint accepts (inserted or learnt from messages): a large job's every rank fits;
 * a flood of forged sender addresses does not grow the table past it. */
#define DDTX_OFI_MAX_PEERS (1u << 20)
/* The receive ring an endpoint grants each peer that sends to it (ring.c): slots of the
 * largest message a bounce buffer holds (64 KiB, where tcp;ofi_rxm sends at most 16 KiB),
 * as many as fit in 1 MiB (16), at most 64. */
#define DDTX_OFI_RING_SLOTS 64u
#define DDTX_OFI_RING_BYTES (1u << 20)

struct ddtx_ofi_domain {
	struct ddtx_wire_domain base;
	struct ddtx_wire_params params;
	struct ddtx_wire_caps caps;
	struct fi_info *core;             /* the core's fi_info this domain was opened from */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	uint32_t core_id;                 /* ddtx_ofi_core_id of the core */
	bool ep_msg;                      /* FI_EP_MSG: a connection per peer (conn.c) */
	bool mr_local;                    /* FI_MR_LOCAL: descriptors for local buffers */
	bool mr_virt;                     /* FI_MR_VIRT_ADDR: remote addresses are virtual */
	uint64_t rma_order;               /* the core's FI_ORDER_{RAR,RAW,WAR,WAW} */
	pthread_mutex_t lock;             /* the key table (the registration thread uses it) */
	struct ddtx_ofi_mr *keys[2][DDTX_OFI_KEY_BUCKETS];
	uint64_t next_app_key;            /* keys the wire chooses (FI_MR_PROV_KEY at ddtx) */
	uint64_t next_core_key;           /* core keys of app keys (bit 63 clear) */
	uint16_t next_tag;                /* internal keys' tag */
	size_t live;
	bool ring;                        /* the core has remote CQ data: receive rings (ring.c) */
	uint64_t ring_msgs, ring_bytes;   /* messages written into peers' rings (atomic adds) */
};

struct ddtx_ofi_mr {
	struct ddtx_wire_mr pub;
	struct ddtx_ofi_mr *next;
	struct fid_mr *mr;                /* NULL for a key over no memory */
	uint64_t core_key;
	uint64_t core_base;               /* core address of byte 0 */
};

/* A buffer of a receive or send: fi_context2 first (the core's FI_CONTEXT mode). */
enum ddtx_ofi_ctx_kind { DDTX_OFI_BUF_RX = 1, DDTX_OFI_BUF_TX, DDTX_OFI_WR };
struct ddtx_ofi_buf {
	struct fi_context2 ctx;
	enum ddtx_ofi_ctx_kind kind;      /* what a completion's op_context is (all kinds) */
	struct ddtx_list_entry entry;     /* free list, or the deferred-send queue */
	ddtx_peer_t peer;
	size_t start;                     /* the message begins at data + start */
	bool done;                        /* receive: completed, waiting for its turn */
	int status;                       /* receive: its completion's status */
	size_t len;                       /* bytes to send (header included) */
	bool inflight;                    /* send: handed to the core (or deferred), not done */
	uint64_t seq;                     /* send: its number among the peer's messages */
	bool ring;                        /* send: written into the peer's receive ring */
	uint64_t ring_seq;                /* ... as its ring message number ring_seq */
	uint8_t *data;                    /* DDTX_OFI_BUF_SIZE bytes in the endpoint's slab */
};

struct ddtx_ofi_peer {
	fi_addr_t fi_addr;
	uint64_t uid;
	uint8_t blob[DDTX_OFI_BLOB_LEN];
	bool heard;                       /* it sent to us: it knows our blob */
	bool dead;                        /* a send to it failed, or it stopped answering */
	uint32_t tx_inflight;             /* bounce buffers of its sends not completed */
	uint64_t tx_seq;                  /* messages to it posted so far (send_mark) */
	uint64_t heard_ns;                /* when it last sent anything (liveness.c) */
	uint64_t probe_ns;                /* when we probed it, unanswered since; 0: none */
	uint32_t reads, writes;           /* RMA ops to it in flight (ordering, rma.c) */
	void *inflight_ctx;               /* the wr_context of the last one counted... */
	bool inflight_one;                /* ...and of all of them */
	uint32_t nparked;                 /* its ops in ep->waiting: later ones queue behind */
	uint64_t parked_pass;             /* the resume pass that last parked one (rma.c) */
	struct ddtx_ofi_conn *conn;       /* FI_EP_MSG: the connection to it, NULL: none yet */
	uint32_t refusals;                /* FI_EP_MSG: our requests it refused */
	struct ddtx_ofi_ring_tx *ring_tx; /* its receive ring for our messages, once granted */
	struct ddtx_ofi_ring_rx *ring_rx; /* the ring we granted it */
	bool ring_offered;                /* tried once: a failed grant is not retried */
};

/* A connection to a peer (conn.c, FI_EP_MSG); the core endpoint's context. */
struct ddtx_ofi_conn {
	struct ddtx_list_entry entry;     /* ep->conns, until the endpoint closes */
	struct fid_ep *ep;
	ddtx_peer_t peer;
	enum ddtx_ofi_conn_state state;
};

/* A peer's receive ring as its sender sees it: where the next message goes, credits. */
struct ddtx_ofi_ring_tx {
	struct ddtx_ofi_ring_grant grant;
	uint64_t posted;                  /* ring messages posted (or deferred) so far */
	uint64_t acked;                   /* ... delivered by the peer, as its credits say */
	uint32_t claims;                  /* buffers claimed for the ring, not committed yet */
};

/* The ring we granted a peer: registered slots, and what the peer wrote into them. */
struct ddtx_ofi_ring_rx {
	struct ddtx_wire_mr *mr;
	uint8_t *mem;
	uint32_t slots, slot_size;
	bool started;                     /* RING_START seen: its earlier messages delivered */
	bool draining;                    /* delivering (on_recv may progress again) */
	uint64_t next;                    /* sequence number to deliver next */
	uint64_t credited;                /* delivered count last sent as a credit */
	uint32_t *held;                   /* per slot: a completion named it since it was last
					   * delivered (its length: the slot's own header) */
};

/* A remote app key's translation as learnt from KEY_REP. */
enum ddtx_ofi_rkey_state { DDTX_OFI_RKEY_PENDING, DDTX_OFI_RKEY_READY };
struct ddtx_ofi_rkey {
	struct ddtx_list_entry entry;
	ddtx_peer_t peer;
	uint64_t key;
	enum ddtx_ofi_rkey_state state;
	struct ddtx_ofi_key_rep rep;
};

/* A write or read in flight: its core work requests count down to on_complete. */
struct ddtx_ofi_op;
struct ddtx_ofi_wr {
	struct fi_context2 ctx;
	enum ddtx_ofi_ctx_kind kind;      /* DDTX_OFI_WR */
	struct ddtx_ofi_op *op;
	struct fid_mr **mrs;              /* FI_MR_LOCAL: registrations of its local pieces */
	size_t nmrs;
};

struct ddtx_ofi_op {
	struct ddtx_list_entry entry;     /* in ep->waiting or ep->done, else to itself */
	struct ddtx_list_entry all;       /* ep->ops: every op until it finishes (freed at close) */
	void *wr_context;
	ddtx_peer_t peer;
	bool write;
	enum ddtx_key_space space;
	uint64_t rkey;
	uint64_t raddr;
	size_t len;
	size_t lcount;
	struct iovec *local;              /* a copy of the local list */
	size_t pending;                   /* work requests posted and not completed */
	int status;
	bool resolved;                    /* core_key and core_addr known */
	bool parked;                      /* in ep->waiting (or in a resume pass's list) */
	bool group_ok;                    /* its caller operation's keys all resolved */
	bool counted;                     /* in the peer's reads/writes */
	bool reported;                    /* failed and reported (peer gone) with work requests
					   * still in the core: freed when they come back */
	size_t nchunks, next_chunk;
	struct ddtx_ofi_chunk *chunks;
	struct ddtx_ofi_wr *wrs;
	uint64_t core_key, core_addr;
};

struct ddtx_ofi_ep {
	struct ddtx_wire_ep base;
	struct ddtx_ofi_domain *dom;
	struct ddtx_wire_handlers handlers;
	void *handler_arg;
	struct fid_ep *ep;                /* RDM: the endpoint; MSG: the shared receive context */
	struct fid_av *av;                /* RDM only */
	struct fid_cq *cq;                /* every completion (MSG: of all connections) */
	struct fid_eq *eq;                /* MSG: connection events */
	struct fid_pep *pep;              /* MSG: where peers connect (its address is the blob's) */
	struct ddtx_list conns;           /* MSG: every connection opened */
	uint32_t eq_polls;                /* MSG: progress calls (the EQ is read 1 in EQ_EVERY) */
	uint64_t uid;
	uint8_t blob[DDTX_OFI_BLOB_LEN];
	/* bounce buffers: one slab, one registration */
	uint8_t *slab;
	struct fid_mr *slab_mr;
	void *slab_desc;
	struct ddtx_ofi_buf rx[DDTX_OFI_RX_BUFS];
	struct ddtx_ofi_buf tx[DDTX_OFI_TX_BUFS];
	struct ddtx_list tx_free;
	struct ddtx_list tx_deferred;     /* committed buffers the core refused (-FI_EAGAIN) */
	struct ddtx_list rx_repost;       /* receive buffers to post again */
	/* Receives in the order they were posted, which is the order sends are matched to them
	 * (FI_ORDER_SAS); completions may come in another order (ofi_rxm completes a rendezvous
	 * message after later eager ones), so messages are delivered from here. */
	struct ddtx_ofi_buf *rx_ring[DDTX_OFI_RX_BUFS];
	size_t rx_head, rx_count;
	/* peers */
	struct ddtx_ofi_peer **peers;
	size_t npeers, peer_cap;
	/* RMA */
	struct ddtx_list rkeys;           /* remote app keys learnt or asked for */
	struct ddtx_list waiting;         /* ops waiting for a key, the core or an earlier op */
	uint64_t rma_pass;                /* ddtx_ofi_rma_resume's passes */
	struct ddtx_list done;            /* ops finished inside a post call: report at progress */
	struct ddtx_list ctrl;            /* KEY_REP answers waiting for a send buffer */
	struct ddtx_list ops;             /* every op not finished */
};

static inline struct ddtx_ofi_domain *ddtx_odom_of(struct ddtx_wire_domain *d)
{
	return (struct ddtx_ofi_domain *)d;
}

static inline struct ddtx_ofi_ep *ddtx_oep_of(struct ddtx_wire_ep *e)
{
	return (struct ddtx_ofi_ep *)e;
}

extern const struct ddtx_wire_impl ddtx_ofi_wire_impl;

#define DDTX_OFI_API FI_VERSION(1, 14)

/* domain.c */
/* The hints every core fi_getinfo of the wire uses (caps, ordering, mr_mode, the core's name). */
struct fi_info *ddtx_ofi_core_hints(const char *prov_name, bool ep_msg);
int ddtx_ofi_core_getinfo(const char *prov_name, bool ep_msg, struct fi_info **out);
bool ddtx_ofi_available(void);
int ddtx_ofi_domain_open(const struct ddtx_wire_params *params, struct ddtx_wire_domain **out);
void ddtx_ofi_domain_close(struct ddtx_wire_domain *dom);
const struct ddtx_wire_caps *ddtx_ofi_domain_caps(struct ddtx_wire_domain *dom);
void ddtx_ofi_domain_stats(struct ddtx_wire_domain *dom, struct ddtx_wire_stats *stats);
int ddtx_ofi_addr_check(struct ddtx_wire_domain *dom, const void *addr, size_t len);

/* mr.c */
int ddtx_ofi_mr_reg(struct ddtx_wire_domain *dom, const struct iovec *iov, size_t count,
		    enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		    uint32_t access, struct ddtx_wire_mr **out);
int ddtx_ofi_mr_dereg(struct ddtx_wire_domain *dom, struct ddtx_wire_mr *mr);
int ddtx_ofi_key_check(struct ddtx_wire_domain *dom, enum ddtx_key_space space, uint64_t key,
		       uint64_t addr, uint64_t len, uint32_t access);
void ddtx_ofi_key_lookup(struct ddtx_ofi_domain *dom, uint64_t key, struct ddtx_ofi_key_rep *rep);
int ddtx_ofi_local_reg(struct ddtx_ofi_domain *dom, void *addr, size_t len, bool write,
		       struct fid_mr **out);
/* The same with the core access bits given (the bounce buffers: sends, receives, writes). */
int ddtx_ofi_local_reg_access(struct ddtx_ofi_domain *dom, void *addr, size_t len,
			      uint64_t access, struct fid_mr **out);

/* endpoint.c */
int ddtx_ofi_ep_open(struct ddtx_wire_domain *dom, const struct ddtx_wire_handlers *handlers,
		     void *handler_arg, struct ddtx_wire_ep **out);
void ddtx_ofi_ep_close(struct ddtx_wire_ep *ep);
int ddtx_ofi_ep_getname(struct ddtx_wire_ep *ep, void *addr, size_t *len);
int ddtx_ofi_peer_insert(struct ddtx_wire_ep *ep, const void *addr, size_t len,
			 ddtx_peer_t *peer);
int ddtx_ofi_peer_addr(struct ddtx_wire_ep *ep, ddtx_peer_t peer, void *addr, size_t *len);
bool ddtx_ofi_peer_alive(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
struct ddtx_ofi_peer *ddtx_ofi_peer_get(struct ddtx_ofi_ep *ep, ddtx_peer_t peer);
int ddtx_ofi_peer_by_uid(struct ddtx_ofi_ep *ep, uint64_t uid, ddtx_peer_t *peer);
int ddtx_ofi_post_recv(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b);

/* Close and open again the core endpoint at src (bind, name.c): only before any peer.
 * by_service: src is a service's address, so the uid is computed from it (blob.h); an
 * ephemeral bind (a node, no service) keeps its random uid: a process that binds one endpoint
 * after another may get a port again, and a computed uid would make the new endpoint's blob
 * the old one's (a peer's AV would hand back the old peer, its ring and its state). */
int ddtx_ofi_ep_reopen(struct ddtx_ofi_ep *ep, const void *src, size_t srclen, bool by_service);
/* A copy of the core's fi_info with src_addr and dest_addr replaced (NULL: none). */
struct fi_info *ddtx_ofi_info_addrs(struct ddtx_ofi_domain *dom, const void *src, size_t srclen,
				    const void *dest, size_t destlen);
/* The endpoint's CQ (every completion of its core endpoint or connections). */
int ddtx_ofi_cq_open(struct ddtx_ofi_ep *ep);
/* The blob of the core address name[len] (by_service: a uid computed from it, name.c). */
int ddtx_ofi_ep_set_addr(struct ddtx_ofi_ep *ep, void *name, size_t len, bool by_service);

/* conn.c (FI_EP_MSG) */
/* EQ, passive endpoint listening at src (NULL: the core's default), shared receive context and
 * CQ; ep->ep is the receive context, so receives are posted as on an RDM endpoint. */
int ddtx_ofi_conn_open(struct ddtx_ofi_ep *ep, const void *src, size_t srclen, bool by_service);
void ddtx_ofi_conn_close(struct ddtx_ofi_ep *ep);
/*
 * The core endpoint that reaches peer: the RDM endpoint, or the peer's connection (a request is
 * sent on first use).  -FI_EAGAIN while the connection is being set up, -FI_EIO when the peer
 * cannot be reached.
 */
int ddtx_ofi_conn_get(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, struct fid_ep **out);
/* The peer's connection is being set up: its messages wait, the others' do not. */
bool ddtx_ofi_conn_waiting(struct ddtx_ofi_ep *ep, ddtx_peer_t peer);
/* Connection events: requests, established, refused, shut down.  How many were handled. */
int ddtx_ofi_conn_progress(struct ddtx_ofi_ep *ep);
/* p's connection closed and forgotten: the next send asks for a new one. */
void ddtx_ofi_conn_forget(struct ddtx_ofi_ep *ep, struct ddtx_ofi_peer *p);

/* name.c */
int ddtx_ofi_ep_bind(struct ddtx_wire_ep *ep, const struct ddtx_name_addr *name);
int ddtx_ofi_name_resolve(struct ddtx_wire_domain *dom, const struct ddtx_name_addr *name,
			  int timeout_ms, void *addr, size_t *len);

/* send.c */
int ddtx_ofi_send(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		  const struct iovec *iov, size_t count);
size_t ddtx_ofi_peer_send_size(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
int ddtx_ofi_send_claim(struct ddtx_wire_ep *ep, ddtx_peer_t peer, size_t min_len,
			struct ddtx_wire_send_buf *buf);
void ddtx_ofi_send_commit(struct ddtx_wire_ep *ep, struct ddtx_wire_send_buf *buf, size_t len);
struct ddtx_ofi_buf *ddtx_ofi_tx_get(struct ddtx_ofi_ep *ep);
void ddtx_ofi_tx_put(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b);
/* A committed buffer back (sent, refused or dropped): also out of its peer's count. */
void ddtx_ofi_tx_done(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b);
/* Header (and our blob while the peer has not heard from us) into b; returns the payload. */
uint8_t *ddtx_ofi_tx_prepare(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b, ddtx_peer_t peer,
			     uint8_t type);
/* Hand b (len bytes from data) to the core: sent, deferred, or -FI_EAGAIN (not taken). */
int ddtx_ofi_tx_post(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b, bool defer);
void ddtx_ofi_tx_flush(struct ddtx_ofi_ep *ep);
uint64_t ddtx_ofi_send_mark(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
bool ddtx_ofi_sent(struct ddtx_wire_ep *ep, ddtx_peer_t peer, uint64_t mark);

/* rma.c */
int ddtx_ofi_rma_check(struct ddtx_wire_ep *ep, ddtx_peer_t peer, enum ddtx_key_space space,
		       uint64_t rkey, uint64_t raddr, size_t len, bool write);
int ddtx_ofi_write(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		   size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		   size_t len, void *wr_context);
int ddtx_ofi_read(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		  size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		  size_t len, void *wr_context);
void ddtx_ofi_key_rep_in(struct ddtx_ofi_ep *ep, ddtx_peer_t peer,
			 const struct ddtx_ofi_key_rep *rep);
void ddtx_ofi_wr_done(struct ddtx_ofi_ep *ep, struct ddtx_ofi_wr *wr, int status);
int ddtx_ofi_rma_resume(struct ddtx_ofi_ep *ep);
int ddtx_ofi_rma_report(struct ddtx_ofi_ep *ep);
void ddtx_ofi_rma_fini(struct ddtx_ofi_ep *ep);
/* Fail the peer's writes and reads, parked or in flight (reported at the next progress). */
void ddtx_ofi_rma_fail_peer(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, int status);
/* No write or read to peer is left (waiting, in flight or unreported). */
bool ddtx_ofi_rma_idle(struct ddtx_ofi_ep *ep, ddtx_peer_t peer);
/* The application keys learnt from peer forgotten (they were its process's). */
void ddtx_ofi_rkeys_forget(struct ddtx_ofi_ep *ep, ddtx_peer_t peer);

/* A control message waiting for a send buffer. */
struct ddtx_ofi_ctrl {
	struct ddtx_list_entry entry;
	ddtx_peer_t peer;
	uint8_t type;
	size_t len;
	uint8_t payload[DDTX_OFI_KEY_REP_LEN];
};

/* ring.c */
/* The sender's side: may a message to p take a ring slot now (0, -FI_EAGAIN: no credit)? */
int ddtx_ofi_ring_admit(const struct ddtx_ofi_peer *p);
/* Post b as a ring write (fi_writemsg with remote CQ data) or a send (b->ring false). */
int ddtx_ofi_ring_post(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b);
/* The receiver's side: a message from a peer that has no ring yet (grant one if we can). */
void ddtx_ofi_ring_offer(struct ddtx_ofi_ep *ep, ddtx_peer_t peer);
/* A ring control message (GRANT, START, CREDIT) from peer: messages it let us deliver, or
 * -FI_EINVAL (malformed or unexpected: dropped). */
int ddtx_ofi_ring_ctrl_in(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, uint8_t type,
			  const uint8_t *payload, size_t len);
/* A remote write's completion with CQ data: a ring message; returns messages delivered. */
int ddtx_ofi_ring_write_in(struct ddtx_ofi_ep *ep, uint64_t data);
void ddtx_ofi_ring_fini(struct ddtx_ofi_ep *ep);
/* Both rings of p (the one it granted us, the one we granted it) dropped; a grant may come
 * again (a peer started afresh: liveness.c). */
void ddtx_ofi_ring_forget(struct ddtx_ofi_ep *ep, struct ddtx_ofi_peer *p);
/* One message from peer for on_recv, after its header (shared with progress.c). */
int ddtx_ofi_deliver(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, const uint8_t *data, size_t len);

/* progress.c */
int ddtx_ofi_ep_progress(struct ddtx_wire_ep *ep);
/* A control message (KEY_REP, PROBE, ANSWER) now, or queued until a send buffer is free. */
void ddtx_ofi_ctrl_send(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, uint8_t type,
			const void *payload, size_t len);
/* The control messages queued for peer dropped. */
void ddtx_ofi_ctrl_forget(struct ddtx_ofi_ep *ep, ddtx_peer_t peer);

/* liveness.c */
void ddtx_ofi_live_heard(struct ddtx_ofi_ep *ep, struct ddtx_ofi_peer *p);
void ddtx_ofi_peer_gone(struct ddtx_ofi_ep *ep, ddtx_peer_t peer);
int ddtx_ofi_peer_revive(struct ddtx_wire_ep *ep, ddtx_peer_t peer);

#endif /* DDTX_WIRE_OFI_H */
