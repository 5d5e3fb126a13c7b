/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs wire (rdma-core libibverbs, mlx5dv where present).  Private to wire/verbs/.
 *
 *  device.c   device discovery and selection (FI_DDTX_IFACE), port, GID, device limits
 *  mr.c       registration (ibv_reg_mr_iova2, ibv_reg_dmabuf_mr for CUDA memory), the region
 *             index for local lkeys, the key tables answering key resolution
 *  umr.c      mlx5 UMR: the self-connected RC QP, the indirect mkey pool, list/interleaved
 *             mapping, LOCAL_INV, tag rotation, entry-limit probe
 *  qp.c       QP creation and state transitions: RC, UD, DCI, DCT; SRQ; buffer slabs
 *  peer.c     peers: address blobs, address handles, DCI assignment, RC handshake over UD
 *  post.c     posting work requests (SEND with immediate, RDMA WRITE/READ) on a peer's channel
 *             and the per-peer pending queues (FIFO: ordering is preserved)
 *  wire_verbs.c  the ddtx_wire_impl entry points and ep_progress (completions, receives)
 *
 * Pure helpers (no device) are in verbs_pure.h.
 */
#ifndef DDTX_WIRE_VERBS_H
#define DDTX_WIRE_VERBS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#ifdef DDTX_HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

#include <rdma/fi_errno.h>
#include "common/clock.h"
#include "common/hindex.h"
#include "common/log.h"
#include "common/minmax.h"
#include "common/provider.h"
#include "common/list.h"
#include "wire/verbs/verbs_pure.h"
#include "wire/wire_impl.h"

/* Senders an endpoint learns from their messages alone (DC: any host may write to it).  A large
 * job's every rank fits; a flood of forged addresses does not grow the table past it. */
#define DDTX_VERBS_MAX_INBOUND_PEERS (1u << 20)

struct ddtx_vbuf;
struct ddtx_verbs_ep;

_Static_assert(sizeof(struct ddtx_vsge) == sizeof(struct ibv_sge), "ddtx_vsge is an ibv_sge");
_Static_assert(offsetof(struct ddtx_vsge, lkey) == offsetof(struct ibv_sge, lkey), "ibv_sge");

/* Defaults and limits. */
#define DDTX_VERBS_BUF_SIZE 16384        /* bytes of one send/receive buffer (header included) */
/* Payload offset in a send buffer: room for the header and our address blob before it. */
#define DDTX_VERBS_PAYLOAD_OFF (DDTX_VHDR_LEN + DDTX_VADDR_LEN)
#define DDTX_VERBS_POST_BUDGET 4096      /* send work requests in flight per endpoint */
#define DDTX_VERBS_RX_BUFS 512           /* shared receive queue depth */
#define DDTX_VERBS_TX_BUFS 256           /* send bounce buffers per endpoint */
#define DDTX_VERBS_SQ_DEPTH 128          /* send queue of one QP / DCI */
#define DDTX_VERBS_NUM_DCI 16            /* DCI pool per endpoint */
#define DDTX_VERBS_UD_BUFS 64            /* handshake receive buffers */
#define DDTX_VERBS_UD_BUF_SIZE 256       /* GRH (40) + header + address + payload */
#define DDTX_VERBS_GRH 40
#define DDTX_VERBS_MKEY_POOL 64          /* indirect mkeys made at domain open */
#define DDTX_VERBS_DEF_MKEY_ENTRIES 32   /* requested entries per pool mkey (engine window) */
#define DDTX_VERBS_UMR_INLINE 512        /* max_inline_data asked for the UMR QP */
#define DDTX_VERBS_CONN_RETRY_NS (200ull * 1000 * 1000)
#define DDTX_VERBS_CONN_TRIES 50         /* ~10 s before a peer is declared unreachable */
#define DDTX_VERBS_QKEY 0x11d7u
#define DDTX_VERBS_RNR_TIMER 12          /* 0.64 ms */
#define DDTX_VERBS_TIMEOUT 14            /* 4.096 us x 2^14 = 67 ms per retry */

/* wr_id = pointer | kind (every object posted is 8-byte aligned). */
enum {
	DDTX_VWR_ITEM = 1,               /* a struct ddtx_vitem: a SEND or one write/read chunk */
	DDTX_VWR_RX = 2,                 /* a shared receive queue buffer */
	DDTX_VWR_UD_RX = 3,              /* a handshake receive buffer */
	DDTX_VWR_UD_TX = 4,              /* a handshake send buffer */
	DDTX_VWR_MASK = 7,
};

/* ---- device.c ---- */
struct ddtx_vdev {
	struct ibv_context *ctx;
	struct ibv_device_attr_ex attr;
	struct ibv_port_attr port_attr;
	char name[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	bool grh;                        /* RoCE (or no LID): address handles carry a GRH */
	bool mlx5;                       /* opened through mlx5dv */
	bool devx;                       /* with a DEVX context (UMR mkeys) */
};

bool ddtx_verbs_available(void);
int ddtx_vdev_open(const char *iface, struct ddtx_vdev *dev);
void ddtx_vdev_close(struct ddtx_vdev *dev);
/* Our port, MTU, LID and GID as an address blob carries them. */
void ddtx_vdev_self_addr(const struct ddtx_vdev *dev, struct ddtx_vaddr *a);
/* Address handle attributes towards a peer (port, LID or GRH). */
void ddtx_vdev_ah_attr(const struct ddtx_vdev *dev, const struct ddtx_vaddr *peer,
		       struct ibv_ah_attr *ah);

/* ---- mr.c ---- */

/* A memory region the wire registered (refcounted: keys and operations reference it). */
struct ddtx_vreg {
	struct ibv_mr *mr;
	uint64_t addr, len;
	uint32_t refs;
	bool indexed;                    /* in dom->regions (usable as local memory) */
	int dmabuf_fd;                   /* -1 unless CUDA memory */
};

struct ddtx_vmkey;

struct ddtx_verbs_mr {
	struct ddtx_wire_mr pub;
	struct ddtx_verbs_mr *next;      /* key table chain */
	bool in_table;
	uint32_t rkey;
	uint64_t hca_base;               /* HCA address of byte 0 */
	struct ddtx_vreg *direct;        /* a single-segment key: its region */
	struct ddtx_vmkey *mkey;         /* a multi-entry key: its indirect mkey */
	struct ddtx_vreg **refs;         /* regions the mkey's entries point into */
	size_t nrefs;
	struct ddtx_vresolver *resolvers; /* who resolved this key: told when it goes away */
	size_t nresolvers, resolvers_cap;
};

struct ddtx_vresolver {
	struct ddtx_verbs_ep *ep;
	uint32_t peer;
};

#define DDTX_VKEY_BUCKETS 1024
struct ddtx_vkey_table {
	struct ddtx_verbs_mr *bucket[DDTX_VKEY_BUCKETS];
	uint64_t live;
};

struct ddtx_verbs_domain;
int ddtx_vmr_reg(struct ddtx_verbs_domain *dom, const struct iovec *iov, size_t count,
		 enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		 uint32_t access, struct ddtx_wire_mr **out);
int ddtx_vmr_dereg(struct ddtx_verbs_domain *dom, struct ddtx_wire_mr *pub);
/* Register [addr, addr + len) as a region (domain lock held); indexed if index. */
int ddtx_vreg_new(struct ddtx_verbs_domain *dom, void *addr, size_t len, uint64_t iova,
		  int ibv_access, bool index, struct ddtx_vreg **out);
void ddtx_vreg_put(struct ddtx_verbs_domain *dom, struct ddtx_vreg *reg);
/* Answer a key resolution request from (ep, peer) (domain lock taken inside). */
/* The local key (space, key) covers [addr, addr+len) with access: see ddtx_wire_key_check. */
int ddtx_vkey_check(struct ddtx_verbs_domain *dom, uint8_t space, uint64_t key, uint64_t addr,
		    uint64_t len, uint32_t access);
void ddtx_vkey_lookup(struct ddtx_verbs_domain *dom, struct ddtx_verbs_ep *ep, uint32_t peer,
		      uint8_t space, uint64_t key, struct ddtx_vkey_rep *rep);
/* Wire keys: bit 63 clear = the rkey itself, HCA address = the peer's raddr (internal keys
 * with offset addressing); set = resolve (space, key) through the owner. */
#define DDTX_VKEY_RESOLVE (1ull << 63)
int ddtx_vaccess_to_ibv(uint32_t access);
/* DDTX_VREGION_F_* for a region registered with these ibv access flags. */
uint32_t ddtx_vregion_flags(int ibv_access);

/* ---- umr.c ---- */
struct ddtx_vmkey {
#ifdef DDTX_HAVE_MLX5DV
	struct mlx5dv_mkey *mkey;
#endif
	uint32_t max_entries;
	bool mapped;
	bool dedicated;                  /* made for one key, destroyed with it */
	struct ddtx_vmkey *next_free;
};

struct ddtx_vumr {
	bool enabled;                    /* UMR usable: mkeys, QP and probe all succeeded */
	bool broken;                     /* the UMR QP could not be recovered */
	bool tag_update;                 /* mkeys rotate their tag on every mapping */
	uint32_t list_entries;           /* probed entries of one mr_list work request */
	uint32_t interleaved_entries;    /* probed pattern entries of one interleaved request */
	uint32_t pool_entries;           /* entries of each pool mkey */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
#ifdef DDTX_HAVE_MLX5DV
	struct ibv_qp_ex *qpx;
	struct mlx5dv_qp_ex *mqpx;
#endif
	struct ddtx_vmkey *free_head, *free_tail;   /* FIFO: a recycled mkey waits longest */
	size_t pool_size, pool_free;
	uint64_t maps, interleaved_maps, fallbacks;
	char why_off[128];               /* why UMR is off, for the log and fi_ddtx.7 */
};

int ddtx_vumr_init(struct ddtx_verbs_domain *dom);
void ddtx_vumr_fini(struct ddtx_verbs_domain *dom);
/*
 * Map entries (at most caps.max_mkey_entries) onto an mkey of the pool (or a dedicated one
 * when more are needed and dedicated is allowed): interleaved when the list is strided, a list
 * otherwise.  Synchronous (waits for the UMR completion).  Domain lock held.
 */
int ddtx_vumr_map(struct ddtx_verbs_domain *dom, const struct ddtx_vsge *e, size_t n,
		  int ibv_access, bool dedicated, struct ddtx_vmkey **out, uint32_t *rkey);
/* Invalidate (LOCAL_INV) and return the mkey to the pool (or destroy a dedicated one). */
void ddtx_vumr_unmap(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk);
/* The pieces of ddtx_vumr_map, for the engine's own mkeys (mkey.c): an mkey of the pool
 * (NULL without UMR), (re)mapping it (invalidated first if mapped), invalidating it. */
struct ddtx_vmkey *ddtx_vumr_mkey_new(struct ddtx_verbs_domain *dom);
int ddtx_vumr_post(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk,
		   const struct ddtx_vsge *e, size_t n, int ibv_access);
int ddtx_vumr_inv(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk);
uint32_t ddtx_vumr_rkey(const struct ddtx_vmkey *mk);
uint32_t ddtx_vumr_lkey(const struct ddtx_vmkey *mk);

/* ---- mkey.c: the wire interface's multi-entry keys ---- */
int ddtx_vmkey_create(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey **out);
void ddtx_vmkey_destroy(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);
int ddtx_vmkey_map(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey,
		   const struct ddtx_wire_mkey_entry *entries, size_t n, uint32_t access);
void ddtx_vmkey_invalidate(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);
uint32_t ddtx_vmkey_lkey(const struct ddtx_wire_mkey *mkey);

/* ---- the domain ---- */
struct ddtx_verbs_ep;

struct ddtx_verbs_domain {
	struct ddtx_wire_domain base;    /* first: the generic handle */
	pthread_mutex_t lock;            /* regions, key tables, UMR QP, endpoint list */
	struct ddtx_wire_caps caps;
	struct ddtx_wire_params params;
	struct ddtx_vdev dev;
	struct ibv_pd *pd;
	struct ddtx_vregion_index regions;
	struct ddtx_vkey_table keys[2];  /* per key space: key -> MR (resolution) */
	uint64_t next_key;
	uint64_t key_salt;
	struct ddtx_vumr umr;
	struct ddtx_list eps;
	bool dc;                         /* DC transport usable (probed at first ep open) */
};

/* ---- queue pairs (qp.c) ---- */
struct ibv_qp *ddtx_vqp_create_rc(struct ddtx_verbs_ep *ep);
int ddtx_vqp_rc_connect(const struct ddtx_vdev *dev, struct ibv_qp *qp,
			const struct ddtx_vaddr *peer, uint32_t remote_qpn, uint32_t remote_psn,
			uint32_t local_psn);
int ddtx_vqp_create_ud(struct ddtx_verbs_ep *ep);
int ddtx_vqp_create_dct(struct ddtx_verbs_ep *ep);
int ddtx_vqp_create_dci(struct ddtx_verbs_ep *ep, uint32_t i);
int ddtx_vqp_reset_dci(struct ddtx_verbs_ep *ep, uint32_t i);
int ddtx_vqp_post_rx(struct ddtx_verbs_ep *ep, struct ddtx_vbuf *b);
int ddtx_vqp_post_ud_rx(struct ddtx_verbs_ep *ep, struct ddtx_vbuf *b);

/* ---- peers (peer.c) ---- */
enum ddtx_vconn_state {
	DDTX_VCONN_NONE = 0,             /* RC: no QP yet */
	DDTX_VCONN_REQ_SENT,             /* RC: our QP exists, waiting for the peer's answer */
	DDTX_VCONN_READY,                /* RC connected, or DC (always ready) */
	DDTX_VCONN_RECOVER,              /* RC: the QP failed; drain, then reconnect */
	DDTX_VCONN_DEAD,                 /* unreachable: everything fails with -FI_EIO */
};

struct ddtx_vpeer {
	uint32_t index;                  /* its ddtx_peer_t */
	struct ddtx_vaddr addr;
	uint8_t blob[DDTX_VADDR_LEN];
	struct ibv_ah *ah;
	enum ddtx_vconn_state state;
	/* RC */
	struct ibv_qp *qp;
	uint32_t remote_qpn;
	uint32_t local_psn;
	uint32_t epoch;                  /* our connection attempts (handshake) */
	uint32_t remote_epoch;           /* the peer's latest attempt seen */
	uint32_t remote_psn;
	uint32_t conn_tries;
	uint64_t conn_sent_ns;
	/* DC */
	int dci;                         /* DCI held while work is outstanding, -1 if none */
	/* both */
	uint32_t outstanding;            /* posted, not completed */
	struct ddtx_list ctrlq;          /* key-resolution messages: posted before the queue */
	struct ddtx_list queue;          /* items waiting to be posted, in order */
	struct ddtx_list inflight;       /* items posted on the channel, in order */
	struct ddtx_list requeue;        /* flushed by a channel error: posted again, first */
	bool listed;                     /* on ep->busy (has queued items) */
	struct ddtx_list_entry busy_entry;
	bool addr_sent;                  /* our address blob went out in a message */
	bool addr_known;                 /* it knows us (it sent us something) */
	uint32_t tx_seq;
};

struct ddtx_vdci {
	struct ibv_qp *qp;
#ifdef DDTX_HAVE_MLX5DV
	struct ibv_qp_ex *qpx;
	struct mlx5dv_qp_ex *mqpx;
#endif
	int owner;                       /* peer index, -1 when free */
	uint32_t outstanding;
	bool error;                      /* in error: reset once drained */
};

/* ---- endpoint ---- */
struct ddtx_vcompl {
	void *ctx;
	int status;
};

/* A posted unit: a send buffer or one chunk of a write/read. */
enum ddtx_vitem_kind {
	DDTX_VITEM_SEND = 1,
	DDTX_VITEM_RMA = 2,
};

struct ddtx_vop;

struct ddtx_vitem {
	struct ddtx_list_entry entry;    /* peer->queue, peer->inflight or peer->requeue */
	uint8_t kind;
	uint32_t peer;
	struct ddtx_vbuf *buf;           /* SEND */
	struct ddtx_vop *op;             /* RMA */
	uint32_t first_sge, nsge;        /* RMA: op->sge[first_sge .. +nsge) */
	uint64_t roff;                   /* RMA: byte offset of this chunk in the transfer */
	uint32_t bytes;
};

/* A write/read: chunks (items) of at most max_sge entries each; one completion when all end. */
struct ddtx_vop {
	void *wr_context;
	bool write;
	int status;
	uint32_t peer;
	uint8_t space;
	uint64_t rkey_wire;              /* the key as the caller named it */
	uint64_t raddr;
	size_t len;
	bool resolved;                   /* hca_addr / rkey known */
	uint32_t rkey;
	uint64_t hca_addr;
	uint32_t nitems, items_left;
	struct ddtx_vitem *items;
	struct ddtx_vsge *sge;
	uint32_t nsge;
	struct ddtx_vreg **refs;         /* local regions referenced (incl. temporary ones) */
	uint32_t nrefs;
	struct ddtx_vbuf *bounce;        /* small transfers of unregistered memory */
	struct iovec *bounce_iov;        /* read: where the bounce's bytes go */
	size_t bounce_iovcnt;
};

/* Resolved remote keys of one endpoint (the sender side of APP / requested keys). */
enum { DDTX_VRKEY_PENDING = 1, DDTX_VRKEY_READY = 2 };
struct ddtx_vrkey {
	struct ddtx_vrkey *next;
	uint32_t peer;
	uint8_t space;
	uint8_t state;
	uint64_t key;
	uint64_t asked_ns;
	struct ddtx_vkey_rep rep;
};
#define DDTX_VRKEY_BUCKETS 256

/* A control message waiting for a send buffer. */
struct ddtx_vctrl {
	struct ddtx_list_entry entry;
	uint32_t peer;
	uint8_t type;
	uint32_t len;
	uint8_t payload[DDTX_VKEY_REP_LEN];
};

/* ---- buffers (qp.c) ---- */
struct ddtx_vbuf {
	struct ddtx_list_entry entry;    /* free list */
	struct ddtx_vitem item;          /* send buffers: the SEND posted from it */
	uint8_t *data;
	uint32_t off;                    /* first byte of the message (the header) */
	uint32_t len;                    /* bytes of the message from data + off */
	uint8_t kind;                    /* DDTX_VWR_ITEM (send) / _RX / _UD_RX / _UD_TX */
	bool in_use;
};

struct ddtx_vslab {
	uint8_t *mem;
	size_t size;
	struct ibv_mr *mr;
	struct ddtx_vbuf *bufs;
	uint32_t count, buf_size;
	struct ddtx_list free;
	uint32_t nfree;
};

int ddtx_vslab_init(struct ddtx_verbs_domain *dom, struct ddtx_vslab *s, uint32_t count,
		    uint32_t buf_size, uint8_t kind);
void ddtx_vslab_fini(struct ddtx_vslab *s);
struct ddtx_vbuf *ddtx_vslab_get(struct ddtx_vslab *s);
void ddtx_vslab_put(struct ddtx_vslab *s, struct ddtx_vbuf *b);

struct ddtx_verbs_ep {
	struct ddtx_wire_ep base;        /* first: the generic handle */
	struct ddtx_list_entry dom_entry;
	struct ddtx_verbs_domain *dom;
	struct ddtx_wire_handlers handlers;
	void *handler_arg;
	struct ddtx_vaddr self;
	uint8_t blob[DDTX_VADDR_LEN];
	bool dc;
	struct ibv_cq *cq;               /* every completion of this endpoint */
	uint32_t cq_size;
	struct ibv_srq *srq;
	struct ddtx_vslab rx, tx, ud_rx, ud_tx;
	/* DC */
	struct ibv_qp *dct;
	struct ddtx_vdci *dci;
	uint32_t ndci;
	int *dci_free;                   /* LIFO of free DCI indexes */
	uint32_t ndci_free;
	/* RC handshake */
	struct ibv_qp *ud;
	/* peers */
	struct ddtx_vpeer **peers;       /* each allocated alone: they hold list heads */
	uint32_t npeers, peers_cap;
	uint32_t inbound_peers;                  /* of npeers, learned from their messages */
	struct ddtx_hindex uid_index;    /* uid -> peer */
	struct ddtx_list busy;           /* peers with queued items */
	/* completions for on_complete, delivered by progress */
	struct ddtx_vcompl *cq_q;
	size_t cq_head, cq_count, cq_cap;
	struct ddtx_vrkey *rkeys[DDTX_VRKEY_BUCKETS];
	struct ddtx_list ctrl;           /* control messages waiting for a buffer */
	struct ddtx_list inval;          /* (dom lock) KEY_INVAL to send: struct ddtx_vctrl */
	uint32_t posted;                 /* send work requests in flight (CQ room) */
	bool in_progress;
	size_t ops_live;                 /* write/read operations whose completion is owed */
};

static inline struct ddtx_verbs_domain *ddtx_vdom_of(struct ddtx_wire_domain *d)
{
	return (struct ddtx_verbs_domain *)d;
}

static inline struct ddtx_verbs_ep *ddtx_vep_of(struct ddtx_wire_ep *e)
{
	return (struct ddtx_verbs_ep *)e;
}

/* ---- peer.c ---- */
void ddtx_vpeers_init(struct ddtx_verbs_ep *ep);
void ddtx_vpeers_fini(struct ddtx_verbs_ep *ep);
int ddtx_vpeer_insert(struct ddtx_verbs_ep *ep, const struct ddtx_vaddr *a,
		      const uint8_t *blob, ddtx_peer_t *out);
struct ddtx_vpeer *ddtx_vpeer_get(struct ddtx_verbs_ep *ep, ddtx_peer_t peer);
int ddtx_vpeer_by_uid(struct ddtx_verbs_ep *ep, uint64_t uid, ddtx_peer_t *out);
/* Make the channel usable (AH, RC handshake started); 0, -FI_EAGAIN (not yet), -FI_EIO. */
int ddtx_vpeer_ready(struct ddtx_verbs_ep *ep, ddtx_peer_t peer);
/* A CONN_REQ / CONN_REP arrived over UD. */
void ddtx_vpeer_on_conn(struct ddtx_verbs_ep *ep, uint8_t type, const struct ddtx_vaddr *from,
			const uint8_t *blob, const struct ddtx_vconn *c);
/* The channel of a peer drained after an error: recover it and post the flushed items. */
void ddtx_vpeer_drained(struct ddtx_verbs_ep *ep, ddtx_peer_t peer);
/* Timers: handshake retransmission. */
void ddtx_vpeer_tick(struct ddtx_verbs_ep *ep);
void ddtx_vpeer_mark_dead(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, const char *why);

/* ---- post.c ---- */
/* Queue an item for the peer and post what can be posted now. */
void ddtx_vpost_enqueue(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, struct ddtx_vitem *it);
/* Post queued items of every busy peer. */
void ddtx_vpost_flush(struct ddtx_verbs_ep *ep);
/* A send completion (success or not) of an item. */
void ddtx_vpost_completed(struct ddtx_verbs_ep *ep, struct ddtx_vitem *it,
			  enum ibv_wc_status st);
/* Send a small message outside the data path (handshake over UD). */
int ddtx_vpost_ud(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p, uint8_t type,
		  const void *payload, size_t len);
/* Finish a send buffer holding payload_len bytes at DDTX_VERBS_PAYLOAD_OFF: write the header
 * (and our address while the peer may not know it) in front of the payload. */
void ddtx_vpost_hdr(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p, uint8_t type,
		    struct ddtx_vbuf *b, size_t payload_len);
/* Fail every operation still queued or in flight (endpoint close). */
void ddtx_vpost_cancel_all(struct ddtx_verbs_ep *ep);
/* Queue a control message (key resolution) to a peer. */
int ddtx_vpost_ctrl(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, uint8_t type,
		    const void *payload, size_t len);
/* Complete an operation now (status) or when its last chunk finishes. */
void ddtx_vop_finish(struct ddtx_verbs_ep *ep, struct ddtx_vop *op);
void ddtx_vcq_push(struct ddtx_verbs_ep *ep, void *ctx, int status);
int ddtx_vcq_reserve(struct ddtx_verbs_ep *ep);
/* A resolved (or refused) key: post or fail the operations waiting for it. */
void ddtx_vpost_rkey_ready(struct ddtx_verbs_ep *ep, struct ddtx_vrkey *rk);
struct ddtx_vrkey *ddtx_vrkey_find(struct ddtx_verbs_ep *ep, uint32_t peer, uint8_t space,
				   uint64_t key);
void ddtx_vrkey_drop(struct ddtx_verbs_ep *ep, uint32_t peer, uint8_t space, uint64_t key);

extern const struct ddtx_wire_impl ddtx_verbs_wire_impl;

/* Entry points of the wire implementation table (wire_verbs.c), by file. */
/* domain.c */
uint64_t ddtx_verbs_random64(void);
int ddtx_verbs_domain_open(const struct ddtx_wire_params *params,
			     struct ddtx_wire_domain **out);
void ddtx_verbs_domain_close(struct ddtx_wire_domain *wdom);
const struct ddtx_wire_caps *ddtx_verbs_domain_caps(struct ddtx_wire_domain *wdom);
int ddtx_verbs_addr_check(struct ddtx_wire_domain *wdom, const void *addr, size_t len);
int ddtx_verbs_mr_reg(struct ddtx_wire_domain *wdom, const struct iovec *iov, size_t count,
			enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
			uint32_t access, struct ddtx_wire_mr **out);
int ddtx_verbs_mr_dereg(struct ddtx_wire_domain *wdom, struct ddtx_wire_mr *mr);
int ddtx_verbs_key_check(struct ddtx_wire_domain *wdom, enum ddtx_key_space space, uint64_t key,
			 uint64_t addr, uint64_t len, uint32_t access);
/* endpoint.c */
int ddtx_verbs_ep_open(struct ddtx_wire_domain *wdom, const struct ddtx_wire_handlers *handlers,
			 void *handler_arg, struct ddtx_wire_ep **out);
void ddtx_verbs_ep_close(struct ddtx_wire_ep *wep);
int ddtx_verbs_ep_getname(struct ddtx_wire_ep *wep, void *addr, size_t *len);
int ddtx_verbs_peer_insert(struct ddtx_wire_ep *wep, const void *addr, size_t len,
			     ddtx_peer_t *peer);
int ddtx_verbs_peer_addr(struct ddtx_wire_ep *wep, ddtx_peer_t peer, void *addr, size_t *len);
bool ddtx_verbs_peer_alive(struct ddtx_wire_ep *wep, ddtx_peer_t peer);
/* send.c */
int ddtx_verbs_send(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const void *hdr,
		      size_t hdr_len, const struct iovec *iov, size_t count);
int ddtx_verbs_send_claim(struct ddtx_wire_ep *wep, ddtx_peer_t peer, size_t min_len,
			    struct ddtx_wire_send_buf *buf);
void ddtx_verbs_send_commit(struct ddtx_wire_ep *wep, struct ddtx_wire_send_buf *buf,
			      size_t len);
/* rma.c */
int ddtx_verbs_rma_check(struct ddtx_wire_ep *wep, ddtx_peer_t peer, enum ddtx_key_space space,
			   uint64_t rkey, uint64_t raddr, size_t len, bool write);
int ddtx_verbs_write(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		       size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		       size_t len, void *wr_context);
int ddtx_verbs_read(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		      size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		      size_t len, void *wr_context);
int ddtx_verbs_write_mkey(struct ddtx_wire_ep *wep, ddtx_peer_t peer,
			    const struct ddtx_wire_mkey *local, uint64_t loff,
			    enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
			    void *wr_context);
/* progress.c */
int ddtx_verbs_ep_progress(struct ddtx_wire_ep *wep);

#endif /* DDTX_WIRE_VERBS_H */
