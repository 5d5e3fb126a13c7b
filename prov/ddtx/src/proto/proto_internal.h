/* SPDX-License-Identifier: BSD-2-Clause */
/* Data-path state shared by the files of proto/ (not seen outside proto/). */
#ifndef DDTX_PROTO_INTERNAL_H
#define DDTX_PROTO_INTERNAL_H

#include <rdma/fi_ddtx.h>

#include "common/iov_check.h"
#include "engine/iov.h"
#include "common/list.h"
#include "engine/scheme.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/minmax.h"
#include "common/optable.h"
#include "common/settings.h"
#include "common/spares.h"
#include "hmem/hmem.h"
#include "proto/hdr.h"
#include "proto/pdomain.h"
#include "proto/proto.h"
#include "proto/rmkey.h"
#include "wire/wire.h"

struct ddtx_layout;
struct ddtx_window_set;

/* A layout handle of fi_ddtx.h. */
struct ddtx_dataloop;

/*
 * The buffers a handle was last used at, each with its cached layout (one reference held): a
 * runtime sends from one buffer and receives into another with the same datatype, and a
 * handle that remembered only its last base re-flattened and re-hashed its whole list at every
 * call (65536 blocks of 8 B: 43x the contiguous time, nc_bw ddtx-handle).
 */
#define DDTX_HANDLE_BASES 4

struct ddtx_handle_base {
	uintptr_t base;
	struct ddtx_layout *layout;      /* NULL: a free entry */
	uint64_t last_use;
};

struct fi_ddtx_layout {
	struct fid fid;                  /* fclass FI_DDTX_CLASS_LAYOUT */
	struct ddtx_proto_domain *pd;
	size_t count;
	struct iovec *rel;               /* blocks: offsets from base in iov_base */
	size_t total;                    /* bytes in the blocks */
	size_t size;                     /* extent from base: what msg_iov[0].iov_len must be */
	struct iovec *abs;               /* scratch: the list at a base not cached yet */
	struct ddtx_handle_base bases[DDTX_HANDLE_BASES];
	uint64_t uses;
	struct ddtx_dataloop *dl;        /* compiled form, relative to the first block, or NULL */
};

/* What a wire work-request context points at: the first member tells which. */
enum ddtx_wr_kind { DDTX_WR_BATCH = 1, DDTX_WR_RMA = 2, DDTX_WR_PULL = 3 };

struct ddtx_rx;

/*
 * The reads of a pulled rendezvous (the receiver reads the sender's one block).  The wire holds
 * it as the context of reads_pending reads; a receive that ends first (its peer died, its
 * endpoint closed) only detaches itself (rx = NULL), and the last completion frees it.
 */
struct ddtx_pull {
	enum ddtx_wr_kind kind;          /* DDTX_WR_PULL */
	struct ddtx_rx *rx;
	size_t reads_pending;
	int status;                      /* first error (positive FI_E*), 0 if none */
	bool posted;                     /* all reads posted */
	size_t bytes;                    /* read: [0, bytes) of the receive */
};

struct ddtx_tx;

/*
 * A CTS batch of receiver descriptors being written by the sender (SGL/UMR).  The wire holds its
 * address as the context of every write it posted (writes_pending of them) until it reports their
 * completions, so a batch, and the transfer it belongs to, outlive a failure of the transfer
 * until writes_pending is 0 (see ddtx_tx_fail).
 */
struct ddtx_batch {
	enum ddtx_wr_kind kind;          /* DDTX_WR_BATCH */
	struct ddtx_list_entry entry;    /* ddtx_tx.batches */
	struct ddtx_tx *tx;
	uint64_t offset;                 /* payload offset of the first descriptor */
	size_t writes_pending;
	int status;
	bool posted;                     /* all writes posted */
	struct ddtx_window_set *local_ws; /* UMR: write window first_window + i from its mkey */
	size_t first_window;
	uint32_t ndesc;
	struct ddtx_desc desc[];
};

enum ddtx_tx_state {
	DDTX_TX_WAIT_CTS,                /* RTS sent */
	DDTX_TX_PACK,                    /* streaming DATA chunks */
	DDTX_TX_ZCOPY,                   /* writing CTS batches */
	DDTX_TX_WAIT_ACK,                /* FI_DELIVERY_COMPLETE: all sent, waiting for ACK */
	DDTX_TX_WAIT_WIRE,               /* all sent, some still queued in the wire (ofi) */
	DDTX_TX_FAILED,                  /* reported; kept only until its posted writes finish */
};

/* A rendezvous send in flight. */
struct ddtx_tx {
	struct ddtx_list_entry entry;    /* proto_ep.tx_active */
	struct ddtx_list_entry work;     /* proto_ep.tx_work, or linked to itself */
	uint32_t id;
	ddtx_peer_t peer;
	void *context;
	uint64_t cq_flags;               /* FI_SEND | FI_MSG or FI_TAGGED */
	bool report;                     /* write a CQ entry on success */
	bool want_ack;                   /* FI_DELIVERY_COMPLETE: complete on the receiver's ACK */
	uint64_t tag;
	struct iovec *iov;               /* private copy of the caller's list, or the list of
					  * layout (a handle's, which tx holds) when borrowed */
	size_t iov_cap;                  /* entries the private copy holds (iov_spare.c) */
	bool iov_borrowed;
	size_t count;
	size_t total;
	enum ddtx_tx_state state;
	enum fi_ddtx_scheme scheme;
	uint64_t wire_mark;              /* WAIT_WIRE: ddtx_wire_send_mark after its last message */
	size_t accepted;                 /* bytes the receiver takes */
	size_t sent;                     /* PACK: bytes posted; ZCOPY: bytes covered by batches done */
	size_t described;                /* ZCOPY: bytes the receiver's CTS batches covered so far */
	size_t chunk;                    /* UMR: the window length of the first CTS */
	size_t inlined;                  /* payload bytes that went in the RTS (PACK) */
	size_t streamed;                 /* bytes sent before the CTS: inlined, then STREAM chunks */
	bool streaming;                  /* STREAM chunks go out until the CTS comes (send.c) */
	bool streaming_stores;           /* PACK chunks written by non-temporal stores (the CTS) */
	uint32_t rx_id;
	bool umr_started;                /* UMR: the window writes are posted */
	bool ipc;                        /* offered by CUDA IPC: its stage is not filled yet */
	bool device;                     /* from device memory the NIC reads: never PACK */
	bool abandoned;                  /* the receiver gave up (empty CTS): fail once idle */
	struct ddtx_list batches;        /* struct ddtx_batch, in CTS order */
	struct ddtx_layout *layout;      /* cached layout of iov (rendezvous) */
	struct ddtx_window_set *ws;      /* UMR: local windows */
	struct ddtx_reg *pull_reg;       /* the registration offered in the RTS for a pull, or NULL */
	struct ddtx_window_set *pull_ws; /* the windows offered in the RTS for a pull, or NULL */
	bool split_pending;              /* split pull: the receiver's PULLED not in yet */
	uint64_t t_rts;                  /* when the RTS of a send the eager boundary weighed went
					  * (ddtx_choose_rndv_done), or 0 */
};

/* Receiver keys of one CTS batch (SGL/UMR), released when its DONE arrives. */
struct ddtx_rbatch {
	struct ddtx_list_entry entry;
	uint64_t offset;
	uint64_t len;
	uint32_t nmr;
	struct ddtx_wire_mr *mr[];
};

enum ddtx_rx_state {
	DDTX_RX_POSTED,                  /* waiting for a match */
	DDTX_RX_RNDV,                    /* matched an RTS, data moving */
};

struct ddtx_rx {
	struct ddtx_list_entry entry;    /* posted queue, then proto_ep.rx_active */
	uint32_t id;                     /* in pep->rxs from its rendezvous on; 0 before */
	enum ddtx_rx_state state;
	void *context;
	uint64_t flags;                  /* FI_RECV | FI_MSG or FI_TAGGED, FI_MULTI_RECV */
	bool report;
	uint64_t tag, ignore;            /* tagged matching */
	fi_addr_t src;                   /* FI_ADDR_UNSPEC: any source */
	struct iovec *iov;
	size_t count;
	size_t capacity;                 /* bytes the buffers hold */
	struct iovec iov_inline[1];
	size_t iov_cap;                  /* entries a private copy holds (iov_spare.c) */
	bool iov_borrowed;               /* iov is the list of cached (a handle's layout) */
	struct ddtx_iov_vec vec;         /* iov is one vector (eager delivery by the kernels) */
	/* FI_MULTI_RECV: the parent buffer and bookkeeping */
	struct ddtx_rx *parent;
	size_t multi_used;
	size_t multi_children;           /* rendezvous slices still open */
	bool multi_released;             /* removed from the posted queue */
	/* rendezvous, once matched */
	ddtx_peer_t peer;
	fi_addr_t from;
	uint32_t tx_id;
	uint64_t msg_tag, msg_data;
	uint16_t hdr_flags;
	size_t offered, accepted, received;
	enum fi_ddtx_scheme scheme;
	size_t chunk;                    /* UMR window length */
	struct ddtx_iov_cursor cur;      /* next byte to describe in a CTS batch */
	struct ddtx_list rbatches;       /* struct ddtx_rbatch in flight */
	struct ddtx_layout_stats layout;
	struct ddtx_layout *cached;      /* cached layout of iov (rendezvous) */
	struct ddtx_window_set *ws;      /* UMR: the window set described in the CTS */
	uint64_t t_start;                /* when the rendezvous started (cost model) */
	size_t sender_blocks;
	bool explored;
	struct ddtx_pull *pull;          /* reads in flight of a pulled rendezvous, or NULL */
	size_t split;                    /* split pull: bytes read here, the rest written; or 0 */
	enum ddtx_contig_way contig_way; /* how a contiguous one was chosen to move, or NONE */
	uint8_t contig_try;              /* one of its size's tries: 1 + its scheme's index, or 0 */
	uint8_t contig_try_class;        /* ... and that size class (ddtx_choose_try_end) */
	bool pulled_windows;             /* read through the sender's windows (timed as such) */
	uint8_t pack_stores;             /* PACK: enum ddtx_pack_stores asked of the sender */
	bool stores_learned;             /* ... chosen by what was measured: timed for it */
	uint64_t cts_queued;             /* its last CTS's place in pep->ctrl, or 0 (sent) */
};

/* A message that arrived before its receive was posted. */
struct ddtx_unexp {
	struct ddtx_list_entry entry;
	ddtx_peer_t peer;
	uint8_t type;                    /* DDTX_MSG_EAGER or DDTX_MSG_RTS */
	uint16_t hdr_flags;
	uint64_t tag, data;
	size_t len;
	void *claim_context;             /* set by FI_PEEK | FI_CLAIM */
	uint32_t ack_tx_id;              /* EAGER with ACK_REQ */
	struct ddtx_hdr_rts rts;
	size_t inlined;                  /* RTS: payload bytes it carried, in payload[], and the
					  * STREAM chunks that followed it, in stream */
	uint8_t *stream;                 /* RTS followed by STREAM chunks: all inlined bytes, or NULL */
	size_t charged;                  /* bytes of the sender's credit it holds (credit.c) */
	uint8_t payload[];               /* EAGER: len bytes */
};

/* A control message waiting for room in the peer's receive queue. */
struct ddtx_ctrl {
	struct ddtx_list_entry entry;
	uint64_t seq;                    /* pep->ctrl_seq when queued: the queue's order */
	ddtx_peer_t peer;
	size_t len;
	uint8_t msg[];
};

/* An atomic waiting for the target's answer. */
struct ddtx_atomic_op {
	struct ddtx_list_entry entry;    /* proto_ep.atomic_active */
	uint32_t id;
	ddtx_peer_t peer;
	void *context;
	uint64_t cq_flags;               /* FI_ATOMIC | FI_WRITE, or FI_READ when fetching */
	bool report;
	enum ddtx_proto_counter cntr;
	size_t result_len;               /* bytes of old values expected back (0: none) */
	size_t result_count;
	struct iovec result[];           /* where they go */
};

/* An RMA operation in flight. */
struct ddtx_rma {
	enum ddtx_wr_kind kind;          /* DDTX_WR_RMA */
	struct ddtx_list_entry entry;    /* proto_ep.rma_active */
	ddtx_peer_t peer;
	void *context;
	uint64_t cq_flags;               /* FI_RMA | FI_WRITE or FI_READ */
	bool report;
	bool remote_data;                /* send DDTX_MSG_RMA_DATA once the writes land */
	uint64_t data;
	struct fi_rma_iov first;         /* the first remote segment, named in RMA_DATA */
	struct fi_rma_iov *segs;         /* FI_RMA_EVENT: every remote segment, one RMA_DATA each */
	size_t nsegs;
	size_t total;
	size_t writes_pending;
	int status;
	void *inject_buf;                /* fi_inject_write copy */
};

/* A delivery ACK owed to a peer, waiting for a message to ride on (ack.c). */
struct ddtx_ack_owed {
	ddtx_peer_t peer;
	uint32_t tx_id;
	uint64_t call;                   /* the endpoint's progress_calls when it was owed */
	uint32_t epoch;                  /* and the ACK timer's round */
};

/* ACKs an endpoint owes at most; one more flushes them all first. */
#define DDTX_ACKS_OWED_MAX 64

/* Copies of long iov lists kept per endpoint for the next operation, at most this many and
 * this many bytes of lists in all (iov_spare.c says why). */
#define DDTX_IOV_SPARES 64
#define DDTX_IOV_SPARE_BYTES ((size_t)16 << 20)

/* Size classes (powers of two from 8 KiB, the last one open) of the eager tries (choose.c). */
#define DDTX_EAGER_TRY_CLASSES 8

/* A receive of a vector of at least this many blocks borrows the layout cache's list. */
#define DDTX_LEND_MIN_ENTRIES 256

/*
 * A post of a list this long first moves the endpoint's traffic forward (send.c, recv.c).
 * An application posts a whole exchange before it waits, and reading its lists is the post's
 * work: nc_bw's 256 receives of 16384 8-byte blocks took the receiver 3 ms, in which its ring
 * was not read, and the sender stalled on it after 4 MiB, then posted its own 256 sends, in
 * which no CTS was served.  With the progress 8-byte blocks moved 4.80-5.02 GB/s against
 * 3.56-3.73 (2026-11-28, alternated, nc_bw -b 8 -m bw); the call costs a fraction of the scan
 * of such a list.
 */
#define DDTX_POST_PROGRESS_ENTRIES 1024

/* Host bounce buffers of device-memory staging kept per endpoint (hmem_stage.c). */
#define DDTX_BOUNCE_KEEP 4

struct ddtx_proto_ep {
	struct ddtx_proto_domain *pd;
	struct ddtx_list_entry pd_entry;           /* ddtx_proto_domain.eps */
	const struct ddtx_proto_owner_ops *owner_ops;
	void *owner;                               /* core's endpoint */
	struct ddtx_wire_ep *wire;
	const struct ddtx_wire_caps *caps;
	struct ddtx_proto_ep_attr attr;
	bool enabled;
	/* fi_addr -> wire peer cache, revalidated against the owner's AV generation */
	ddtx_peer_t *peer_of_addr;
	size_t peer_of_addr_len;
	uint64_t av_generation;
	/* wire peer -> fi_addr cache for FI_SOURCE (hits only; same generation rule) */
	fi_addr_t *addr_of_peer;
	size_t addr_of_peer_len;
	struct ddtx_list posted_msg, posted_tag;   /* struct ddtx_rx */
	struct ddtx_list unexp_msg, unexp_tag;     /* struct ddtx_unexp */
	struct ddtx_list tx_active;                /* struct ddtx_tx */
	struct ddtx_list tx_failed;                /* struct ddtx_tx reported, writes in flight */
	struct ddtx_list tx_work;                  /* struct ddtx_tx .work: ddtx_send_progress's */
	struct ddtx_list rx_active;                /* struct ddtx_rx in DDTX_RX_RNDV */
	struct ddtx_list rx_held;                  /* struct ddtx_rx done, its CTS in ctrl */
	struct ddtx_list rma_active;               /* struct ddtx_rma */
	struct ddtx_list atomic_active;            /* struct ddtx_atomic_op */
	struct ddtx_optable atomics;               /* id -> ddtx_atomic_op */
	struct ddtx_list ctrl;                     /* struct ddtx_ctrl */
	uint64_t ctrl_seq;                         /* control messages queued so far */
	struct ddtx_optable txs, rxs;              /* id -> ddtx_tx / ddtx_rx */
	uint64_t next_peer_check_ns;         /* coarse clock */
	struct ddtx_cost_timer rndv_timer;   /* service times of finished rendezvous */
	struct ddtx_rndv_sample {            /* the last one's, learnt at the next progress call */
		enum fi_ddtx_scheme scheme;
		enum ddtx_contig_way way;        /* a contiguous one's (engine/contig_choice.h) */
		uint64_t start_ns, done_ns;
		size_t bytes, blocks;
		uint64_t shape;                  /* the receiver's layout's (cost_bias.h) */
		bool warm, shaped, pending;
		bool model;                      /* the cost model learns it (not only the way) */
	} rndv_sample;
	uint64_t eager_deliveries;           /* eager messages of timed sizes received (sampling) */
	uint64_t eager_sends;                /* and sent */
	uint64_t last_eager_choice_ns;       /* the last send weighed eager (choose.c; 0: not
						timed, it followed a receive) */
	uint64_t rx_ops_at_send;             /* the domain's receives when it was weighed */
	bool eager_streaming;                /* and it came within a stream */
	float eager_out_ns_per_byte;         /* the copy out of the ring, running mean (choose.c) */
	int8_t eager_time_next;              /* the next eager send is a try: 1 timed, -1 not
						(the start of a burst), 0 not a try */
	bool eager_streaming_stores;         /* eager copies in by streaming stores (choose.c) */
	bool eager_stores_probe;             /* the next one by streaming stores, timed */
	bool eager_timed_stores_only;        /* the send timed is a stream's: for its stores */
	uint16_t eager_stores_since_try;     /* such sends since cached stores were last tried */
	float eager_stream_in[3];            /* their last timed copies in, ns a byte */
	float eager_cached_in;               /* the last timed one by cached stores, ns a byte */
	uint8_t eager_stream_in_n, eager_stream_in_next;
	struct ddtx_eager_try {              /* eager tries of a size class sent by rendezvous */
		uint16_t skipped, every;     /* rendezvous since the last try; the period */
		uint8_t burst_left;          /* eager sends of the try still to come */
		bool tried;                  /* the last choice ended a try */
		uint8_t rndv_n, rndv_next;   /* rendezvous of the class this sender timed (up to
						3), and where the next one goes */
		float rndv[3];               /* their last timings, ns per byte (RTS to completion) */
	} eager_tries[DDTX_EAGER_TRY_CLASSES];
	uint64_t last_big_send_ns;           /* the last contiguous send over 64 KiB (choose.c) */
	struct ddtx_rmkey_cache rmkeys;      /* peers' UMR key lists */
	struct ddtx_list stages;             /* struct ddtx_stage: device memory in flight */
	struct ddtx_bounce {                 /* hmem_stage.c: host bounce buffers kept for reuse */
		void *p;
		size_t cap;
		bool pinned;
	} bounce_free[DDTX_BOUNCE_KEEP];
	unsigned nbounce_free;
	struct ddtx_dev_bounce {             /* hmem_stage.c: device bounce buffers kept */
		void *p;
		size_t cap;
		int device;
	} dev_bounce_free[DDTX_BOUNCE_KEEP];
	unsigned ndev_bounce_free;
	struct ddtx_iov_spare {              /* iov_spare.c: long iov list copies kept */
		struct iovec *v;
		size_t cap;
	} iov_spare[DDTX_IOV_SPARES];
	size_t iov_spare_bytes;              /* of the lists kept there */
	struct ddtx_spares spare_rx, spare_tx, spare_pull; /* freed objects kept (spares.h) */
	struct ddtx_ack_owed acks[DDTX_ACKS_OWED_MAX]; /* ack.c: owed, oldest first */
	unsigned nacks;
	uint64_t progress_calls;
	uint32_t ack_epoch;                  /* bumped by each round of the ACK timer */
	struct ddtx_credit {                 /* credit.c: per wire peer, grown on first use */
		uint64_t spent;              /* sent to it, not yet given back */
		uint64_t owed;               /* its payload no longer held here, not yet returned */
	} *credits;
	size_t ncredits;
};

/*
 * hmem_stage.c: device memory through host bounce buffers.  ddtx_stage_begin: when some of
 * *iov is device memory, replace *iov and *count with a host bounce buffer (filled, for a send),
 * *context with the stage and *flags so that a completion is always produced; *out is the
 * stage (NULL: host memory, nothing changed).  vec: *iov as one vector (ddtx_iov_scan), or NULL
 * when not known: a vector's checks and shape take no pass over the list (a send of 512 blocks
 * spent 2.5 of its 5.3 us in such passes).  -FI_EINVAL: device memory but the domain has no
 * FI_HMEM; -FI_EOPNOTSUPP: a flag staging cannot honour; -FI_EIO: the device copy failed.
 * report: did the caller ask for a completion.  ddtx_stage_abort: the operation was not posted.
 * ddtx_stage_complete (ddtx_report): finish the stage c->context names, if any (receive: copy
 * into the device); false when the completion is to be swallowed.  ddtx_stage_find: the
 * context a posted receive of the caller's `context` runs under (for fi_cancel).
 */
struct ddtx_stage;
int ddtx_stage_begin_device(struct ddtx_proto_ep *pep, bool rx, const struct iovec **iov,
			    size_t *count, const struct ddtx_iov_vec *vec, void **context,
			    uint64_t *flags, bool report, struct ddtx_stage **out);
/* Without a CUDA driver every buffer is host memory: no call (a call and its frame were 70
 * instructions of each 8 B message, callgrind). */
static inline int ddtx_stage_begin(struct ddtx_proto_ep *pep, bool rx, const struct iovec **iov,
				   size_t *count, const struct ddtx_iov_vec *vec, void **context,
				   uint64_t *flags, bool report, struct ddtx_stage **out)
{
	*out = NULL;
	if (!ddtx_hmem_cuda_available())
		return 0;
	return ddtx_stage_begin_device(pep, rx, iov, count, vec, context, flags, report, out);
}
void ddtx_stage_abort(struct ddtx_proto_ep *pep, struct ddtx_stage *s);
bool ddtx_stage_complete(struct ddtx_proto_ep *pep, struct ddtx_proto_completion *c);
void *ddtx_stage_find(struct ddtx_proto_ep *pep, void *context);
void ddtx_stage_free_all(struct ddtx_proto_ep *pep);

/*
 * iov_spare.c: room for a copy of a count-entry iov list (*cap entries: at least count, at
 * least 1), a long one from the endpoint's spares when one fits; given back when the operation
 * ends (kept if long, else freed); all freed when the endpoint closes.  NULL: no memory.
 */
struct iovec *ddtx_iov_take(struct ddtx_proto_ep *pep, size_t count, size_t *cap);
void ddtx_iov_give(struct ddtx_proto_ep *pep, struct iovec *v, size_t cap);
void ddtx_iov_spares_free(struct ddtx_proto_ep *pep);
/*
 * For CUDA IPC (hmem_ipc.c).  A send's stage may be deferred: its bounce buffer is set aside
 * but not filled (the device data may never need to pass through it).
 * ddtx_stage_prefers_ipc: such a send whose staging would take the pack kernel (many small
 * blocks), which should go by IPC even when small enough to be eager.  ddtx_stage_fill: fill
 * it now (0, or -FI_EIO from the device copy).  ddtx_stage_ipc_offer: the IPC offer of the
 * stage's segments (malloc'ed, *len bytes, at most room), or -FI_E* when they cannot be
 * offered; segments too many to list are packed on the device by the kernel first, and their
 * packed copy is offered.  ddtx_stage_of: the stage a context names, or NULL.
 * ddtx_stage_target: the caller's segments and their device; ddtx_stage_on_device: all of them
 * memory of that device.  ddtx_stage_delivered: a receive's bytes were placed in the caller's
 * segments directly: nothing to copy at completion.
 */
bool ddtx_stage_deferred(const struct ddtx_stage *s);
bool ddtx_stage_prefers_ipc(const struct ddtx_stage *s);
int ddtx_stage_fill(struct ddtx_proto_ep *pep, struct ddtx_stage *s);
int ddtx_stage_ipc_offer(struct ddtx_proto_ep *pep, struct ddtx_stage *s, void **offer,
			 size_t *len, size_t room);
struct ddtx_stage *ddtx_stage_of(struct ddtx_proto_ep *pep, void *context);
void ddtx_stage_target(const struct ddtx_stage *s, const struct iovec **iov, size_t *count,
		       int *device);
bool ddtx_stage_on_device(const struct ddtx_stage *s);
void ddtx_stage_delivered(struct ddtx_stage *s);

/*
 * hmem_direct.c: device memory moved zero copy by a wire whose NIC reaches it (GPUDirect RDMA).
 * ddtx_direct_possible: may this endpoint's operations go so (the wire's device keys, the
 * setting, no forced PACK)?  ddtx_direct_guard: before a direct operation, check the buffer id
 * of each device allocation among iov's segments (attr, or one: as a stage's) against the one
 * recorded, dropping the registrations and layouts of a changed one.  A stage is direct when
 * its operation may go this way (ddtx_stage_direct): a send's bounce buffer is set aside, as
 * for IPC, and filled only if the send goes eager or staged after all; a receive works on the
 * caller's segments when its rendezvous goes zero copy (rndv_recv.c, direct_target).
 */
struct ddtx_hmem_attr;
bool ddtx_direct_possible(struct ddtx_proto_ep *pep);
void ddtx_direct_guard(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
		       const struct ddtx_hmem_attr *attr, const struct ddtx_hmem_attr *one);
bool ddtx_stage_direct(const struct ddtx_stage *s);
/* The segments the NIC moves for a direct stage: the caller's, or one device bounce buffer
 * the pack kernel fills (a send, now) or empties (a receive, at completion) where staging
 * would take the kernel.  0, or the kernel's -FI_E*.  _undo: a receive staged after all. */
int ddtx_stage_direct_segments(struct ddtx_proto_ep *pep, struct ddtx_stage *s,
			       const struct iovec **iov, size_t *count);
void ddtx_stage_direct_undo(struct ddtx_stage *s);

/* hmem_ipc.c: CUDA IPC on the shm wire */
struct ddtx_ipc_cache *ddtx_ipc_cache_of(struct ddtx_proto_domain *pd, int device);
void ddtx_ipc_close_all(struct ddtx_proto_domain *pd);
/* Close the mappings this endpoint holds of one peer's allocations (peer gone), or of all. */
void ddtx_ipc_drop(struct ddtx_proto_ep *pep, bool all_peers, ddtx_peer_t peer);
/* The RTS's offer of iov's device segments (attr: each one's memory, or NULL: all in one's
 * allocation; vec: iov as one vector when known, encoded without reading iov): malloc'ed, *len
 * bytes, at most room; -FI_EMSGSIZE when they do not fit. */
struct ddtx_hmem_attr;
int ddtx_ipc_offer_build(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
			 const struct ddtx_iov_vec *vec, const struct ddtx_hmem_attr *attr,
			 const struct ddtx_hmem_attr *one, int device, void **out, size_t *len,
			 size_t room);
/* rx matched an RTS with an IPC offer: true if the offer was taken (rx is finished or failed
 * and freed), false if declined (go on with an ordinary CTS; the offer is not payload). */
bool ddtx_ipc_take(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, const void *offer,
		   size_t offer_len);

/* completion.c: reports through the owner interface of proto.h */
void ddtx_report(struct ddtx_proto_ep *pep, enum ddtx_proto_queue q,
		 const struct ddtx_proto_completion *c);
void ddtx_count(struct ddtx_proto_ep *pep, enum ddtx_proto_counter cntr, bool error);
void ddtx_complete_tx(struct ddtx_proto_ep *pep, void *context, uint64_t flags, bool report,
		      enum ddtx_proto_counter cntr);
void ddtx_complete_tx_err(struct ddtx_proto_ep *pep, void *context, uint64_t flags, size_t len,
			  int err, enum ddtx_proto_counter cntr);
void ddtx_count_scheme(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme scheme, size_t bytes);

/*
 * addr.c: fi_addr <-> wire peer through the owner's AV.  A translation cached since the AV's
 * last removal is answered in line (as calls, the two lookups of every message were 70
 * instructions; callgrind, util/bench-instructions.sh); anything else asks addr.c.
 */
int ddtx_peer_lookup(struct ddtx_proto_ep *pep, fi_addr_t addr, ddtx_peer_t *peer);
fi_addr_t ddtx_addr_lookup(struct ddtx_proto_ep *pep, ddtx_peer_t peer);
void ddtx_addr_cache_fini(struct ddtx_proto_ep *pep);

static inline bool ddtx_addr_cache_current(const struct ddtx_proto_ep *pep)
{
	const uint64_t *g = pep->attr.av_generation;
	return pep->av_generation == (g ? __atomic_load_n(g, __ATOMIC_RELAXED) : 0);
}

static inline int ddtx_peer_of(struct ddtx_proto_ep *pep, fi_addr_t addr, ddtx_peer_t *peer)
{
	if (addr < pep->peer_of_addr_len && pep->peer_of_addr[addr] != DDTX_PEER_INVALID &&
	    ddtx_addr_cache_current(pep)) {
		*peer = pep->peer_of_addr[addr];
		return 0;
	}
	return ddtx_peer_lookup(pep, addr, peer);
}

static inline fi_addr_t ddtx_addr_of(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	if (peer < pep->addr_of_peer_len && pep->addr_of_peer[peer] != FI_ADDR_NOTAVAIL &&
	    ddtx_addr_cache_current(pep))
		return pep->addr_of_peer[peer];
	return ddtx_addr_lookup(pep, peer);
}

/* ctrl.c: send a control message now or queue it (never fails for a live peer); returns 0 when
 * it went, else its place in the queue (ddtx_ctrl_left). */
uint64_t ddtx_ctrl_send(struct ddtx_proto_ep *pep, ddtx_peer_t peer, const void *msg, size_t len);
/* Has the control message queued at place seq left (sent, or dropped with its peer)? */
bool ddtx_ctrl_left(struct ddtx_proto_ep *pep, uint64_t seq);
void ddtx_ctrl_flush(struct ddtx_proto_ep *pep);
/* Do control messages to peer still wait in pep->ctrl after a flush?  Then nothing else may
 * go to that peer. */
bool ddtx_ctrl_waiting(struct ddtx_proto_ep *pep, ddtx_peer_t peer);
void ddtx_ctrl_drop_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer);
/* peer_restart.c: the wire took peer as gone and a new send goes to it; true if it was started
 * afresh (nothing of ours waited on it), and the send may be tried again. */
bool ddtx_peer_restart(struct ddtx_proto_ep *pep, ddtx_peer_t peer);
void ddtx_hdr_init(struct ddtx_hdr_base *b, enum ddtx_msg_type type, uint16_t flags);

/*
 * ack.c: delivery ACKs carried on reverse traffic.  ddtx_ack_owe: tx_id of peer is delivered
 * (status 0; defer: an eager message, whose ACK may wait for a message to ride on).  ddtx_ack_carry: let the message b, about to go to peer, carry one owed ACK;
 * ddtx_ack_uncarry: it did not go.  ddtx_ack_progress: at the start of each progress call
 * (sends what waited long enough); ddtx_ack_flush_all: everything now (closing).
 * ddtx_ack_timer_stop: at domain close, without the lock.
 */
void ddtx_ack_owe(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint32_t tx_id, bool defer);
void ddtx_ack_carry(struct ddtx_proto_ep *pep, ddtx_peer_t peer, struct ddtx_hdr_base *b);
void ddtx_ack_uncarry(struct ddtx_proto_ep *pep, ddtx_peer_t peer, struct ddtx_hdr_base *b);
void ddtx_ack_progress(struct ddtx_proto_ep *pep);
void ddtx_ack_flush_all(struct ddtx_proto_ep *pep);
/* The ACKs owed to peer forgotten (its process is gone: peer_restart.c). */
void ddtx_ack_drop_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer);
void ddtx_ack_timer_stop(struct ddtx_proto_domain *pd);

/*
 * credit.c: payload sent before a match, bounded per peer (hdr.h, DDTX_CREDIT_BYTES).
 * ddtx_credit_left: what may still go to peer; ddtx_credit_spend: n bytes went.
 * ddtx_credit_charge: the bytes of message b (body_len after its header) that spend credit;
 * ddtx_credit_release: n of peer's bytes no longer held here (given back in batches);
 * ddtx_credit_hold / ddtx_credit_unhold: the domain's count of unexpected payload held
 * (FI_DDTX_STATS' high-water mark).  ddtx_credit_drop_peer: its process is gone.
 */
uint64_t ddtx_credit_left(struct ddtx_proto_ep *pep, ddtx_peer_t peer);
void ddtx_credit_spend(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint64_t n);
size_t ddtx_credit_charge(const struct ddtx_hdr_base *b, size_t body_len);
void ddtx_credit_release(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint64_t n);
void ddtx_credit_hold(struct ddtx_proto_ep *pep, struct ddtx_unexp *u, size_t n);
void ddtx_credit_unhold(struct ddtx_proto_ep *pep, struct ddtx_unexp *u);
void ddtx_credit_drop_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer);
void ddtx_recv_on_credit(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf,
			 size_t len);

/* send.c */
void ddtx_send_on_cts(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
void ddtx_send_progress(struct ddtx_proto_ep *pep);
void ddtx_batch_complete(struct ddtx_proto_ep *pep, struct ddtx_batch *b, int status);
void ddtx_tx_fail(struct ddtx_proto_ep *pep, struct ddtx_tx *tx, int err);
void ddtx_tx_free(struct ddtx_proto_ep *pep, struct ddtx_tx *tx);
void ddtx_send_on_ack(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
/* A message from src carried the ACK of our send tx_id (DDTX_HDR_ACKED). */
void ddtx_send_on_carried_ack(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint32_t tx_id);

/* rx.c: the receive object */
/* total: the list's bytes when the caller has them, else NULL (summed here). */
struct ddtx_rx *ddtx_rx_new(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
			    const size_t *total);
/* A receive into a handle's cached layout l: takes the caller's reference, borrows its list. */
struct ddtx_rx *ddtx_rx_new_layout(struct ddtx_proto_ep *pep, struct ddtx_layout *l);
/* Release rx: kept among the endpoint's spares (common/spares.h), else freed. */
void ddtx_rx_free(struct ddtx_proto_ep *pep, struct ddtx_rx *rx);
void ddtx_rx_fail(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, int err);
void ddtx_rbatch_release(struct ddtx_proto_ep *pep, struct ddtx_rbatch *rb);
/* A multi-receive slice finished: FI_MULTI_RECV if it was the last of a released buffer. */
uint64_t ddtx_rx_multi_flags(struct ddtx_proto_ep *pep, struct ddtx_rx *parent);
void ddtx_rx_multi_consume(struct ddtx_proto_ep *pep, struct ddtx_rx *parent, size_t len);
/* Report a received message of `offered` bytes, `got` delivered into rx. */
void ddtx_rx_report(struct ddtx_proto_ep *pep, const struct ddtx_rx *rx, size_t offered,
		    size_t got, uint64_t tag, uint64_t data, uint16_t hflags, fi_addr_t from,
		    void *buf, uint64_t extra_flags);

/* recv.c: posting, eager arrivals */
void ddtx_recv_on_eager(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
/* Take an unexpected message into rx; true if rx no longer exists afterwards. */
bool ddtx_recv_take_unexp(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, struct ddtx_unexp *u);

/* rndv_recv.c: the receiver's rendezvous */
void ddtx_recv_on_rts(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
void ddtx_recv_on_data(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
void ddtx_recv_on_stream(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
void ddtx_recv_on_done(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
void ddtx_recv_on_list_req(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf,
			   size_t len);
/* first: the first_len payload bytes the RTS carried (checked against total_len). */
void ddtx_rndv_match_rts(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, ddtx_peer_t src,
			 const struct ddtx_hdr_rts *rts, const void *first, size_t first_len);
void ddtx_rndv_send_cts(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, uint64_t offset,
			const struct ddtx_desc *desc, uint32_t ndesc, uint16_t flags);
/* Complete the receives held until their CTS had gone (rx_held). */
void ddtx_rndv_release_held(struct ddtx_proto_ep *pep);
/* A read of a pull finished (status 0 or a negative FI_E* code from the wire). */
void ddtx_rndv_on_pull_complete(struct ddtx_proto_ep *pep, struct ddtx_pull *pull, int status);

/* match.c: queues, peek/claim, cancel */
bool ddtx_match_rx(const struct ddtx_rx *rx, bool tagged, uint64_t tag, fi_addr_t from);
struct ddtx_rx *ddtx_posted_find(struct ddtx_proto_ep *pep, bool tagged, uint64_t tag,
				 fi_addr_t from);
void ddtx_unexp_free(struct ddtx_unexp *u);
struct ddtx_unexp *ddtx_unexp_find(struct ddtx_proto_ep *pep, bool tagged, fi_addr_t src,
				   uint64_t tag, uint64_t ignore, void *claim_context);
struct ddtx_unexp *ddtx_unexp_new(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint8_t type,
				  uint16_t hflags, uint64_t tag, uint64_t data, size_t len,
				  size_t payload_len);
/* Release a posted receive without data (cancel); returns true if found. */
bool ddtx_recv_cancel(struct ddtx_proto_ep *pep, void *context);

/* peer_check.c: NULL if consistent with the state it names, else the offending field */
const char *ddtx_check_rts(const struct ddtx_hdr_rts *rts, size_t len);
const char *ddtx_check_ipc_offer(const struct ddtx_hdr_rts *rts, const void *offer, size_t len);
const char *ddtx_check_cts(const struct ddtx_tx *tx, const struct ddtx_hdr_cts *cts, size_t len);
const char *ddtx_check_cts_batch(const struct ddtx_tx *tx, const struct ddtx_hdr_cts *cts);
const char *ddtx_check_atomic(const struct ddtx_hdr_atomic *h, size_t len);
const char *ddtx_check_rma_data(const struct ddtx_hdr_rma_data *h);
const char *ddtx_check_ack(const struct ddtx_hdr_ack *h, size_t len);
const char *ddtx_check_carried_ack(const struct ddtx_hdr_base *b);

/* choose.c: the scheme of a rendezvous */
/* The scheme a send proposes (can_pull: it could offer its block to be read, see send.c). */
enum fi_ddtx_scheme ddtx_choose_propose(struct ddtx_proto_ep *pep, struct ddtx_layout *l,
					bool can_pull);
/* The same for a send from device memory the NIC reads (hmem_direct.c): a zero-copy scheme,
 * never PACK; l is registered. */
enum fi_ddtx_scheme ddtx_choose_propose_device(struct ddtx_proto_ep *pep, struct ddtx_layout *l);
/* Is a message of bytes in blocks cheaper eager than by rendezvous?  (below the eager cap) */
/* The largest message of bytes in blocks that may go eagerly, the wire's room being room;
 * host: the payload is in host memory. */
size_t ddtx_choose_eager_limit(struct ddtx_proto_ep *pep, size_t room, size_t bytes,
			       size_t blocks, bool host);
bool ddtx_choose_eager(struct ddtx_proto_ep *pep, size_t bytes, size_t blocks);
/* Should this eager send be timed?  (sampled or a try, and only sizes the boundary is drawn
 * among; in a stream sampled for its stores alone) */
bool ddtx_choose_time_eager(struct ddtx_proto_ep *pep, size_t bytes);
/* An eager send of bytes in blocks: its copy into the wire took ns. */
void ddtx_choose_observe_eager(struct ddtx_proto_ep *pep, size_t bytes, size_t blocks,
			       uint64_t ns);
/* Does this eager send of bytes copy in by streaming stores?  (before ddtx_choose_time_eager:
 * a try of cached stores is timed) */
bool ddtx_choose_eager_stores(struct ddtx_proto_ep *pep, size_t bytes);
/* An eager send went out, by streaming stores or not; copy_ns: its copy's time if it was timed
 * (else NULL). */
void ddtx_choose_eager_sent(struct ddtx_proto_ep *pep, size_t bytes, size_t blocks,
			    bool streaming, const uint64_t *copy_ns);
/* The same for an eager delivery's copy out of the ring. */
bool ddtx_choose_time_eager_out(struct ddtx_proto_ep *pep, size_t bytes);
/* A contiguous send the eager boundary sent by rendezvous completed ns after its RTS went. */
void ddtx_choose_rndv_done(struct ddtx_proto_ep *pep, size_t bytes, uint64_t ns);
void ddtx_choose_observe_eager_out(struct ddtx_proto_ep *pep, size_t bytes, uint64_t ns);
/* Payload bytes to send packed in the RTS itself (0: none), at most room; l: the send's
 * cached layout (NULL if none), st: its summary. */
size_t ddtx_choose_first_chunk(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
			       const struct ddtx_layout *l, const struct ddtx_layout_stats *st,
			       size_t room);
/* Does a send of this layout, proposing `proposed`, offer its block to be read (pull)? */
bool ddtx_choose_pull(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
		      const struct ddtx_layout_stats *st);
/* Does a send of several blocks, proposing `proposed`, offer its windows to be read? */
bool ddtx_choose_pull_windows(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
			      const struct ddtx_layout_stats *st);
/* Bytes a receiver that pulls `bytes` reads itself; the sender writes the rest (a split
 * pull).  bytes: no split. */
size_t ddtx_choose_split(struct ddtx_proto_ep *pep, size_t bytes);
/* The head of a pull the receiver reads (the rest the sender writes): way, the per-size choice's
 * (DDTX_CONTIG_NONE: none); contiguous, one block on each side. */
size_t ddtx_choose_pull_head(struct ddtx_proto_ep *pep, enum ddtx_contig_way way, size_t bytes,
			     bool contiguous);
/* Is a transfer from or into this layout worth timing for the cost model?  (NULL: unknown.) */
bool ddtx_choose_warm(const struct ddtx_layout *l);
/* The receiver's scheme for an RTS proposing `proposed` (pull_offered: with DDTX_HDR_PULL);
 * rx is marked when it is one of its size's tries. */
enum fi_ddtx_scheme ddtx_choose_decide(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
				       bool pull_offered, const struct ddtx_layout_stats *sender,
				       struct ddtx_layout *receiver, size_t bytes, bool *explored,
				       enum ddtx_contig_way *way, struct ddtx_rx *rx);
/* A receive that was one of its size's tries is over (ddtx_rx_free): another may start. */
void ddtx_choose_try_end(struct ddtx_proto_ep *pep, struct ddtx_rx *rx);
/* The same where device memory is on either side (hmem_direct.c): a zero-copy scheme, the
 * receiver's layout registered now; PACK when zero copy is impossible (the sender's layout
 * not registered and no pull offered, or the receiver's registration refused). */
enum fi_ddtx_scheme ddtx_choose_decide_device(struct ddtx_proto_ep *pep,
					      enum fi_ddtx_scheme proposed, bool pull_offered,
					      const struct ddtx_layout_stats *sender,
					      struct ddtx_layout *receiver, size_t bytes,
					      bool *explored);
/* When the cost model counts a rendezvous as started whose RTS came at rts_ns with a first
 * chunk that took scatter_ns to scatter (the sender's gather of that chunk included). */
uint64_t ddtx_choose_sample_start(uint64_t rts_ns, uint64_t scatter_ns);
/* PACK's stores (pack_stores.c): rx->pack_stores for the CTS of a PACK receive, and at its
 * end what they cost; false when the cost model should not time the transfer as PACK. */
void ddtx_pack_stores_choose(struct ddtx_proto_ep *pep, struct ddtx_rx *rx);
bool ddtx_pack_stores_observe(struct ddtx_proto_ep *pep, const struct ddtx_rx *rx);

/* A rendezvous by s (a contiguous one: by `way`), started at start_ns, finished now (warm: its
 * timing may be learnt), into the layout `receiver` (NULL: none cached), whose shape learns
 * its own correction.  model: the cost model learns it too, not only the contiguous way's
 * choice (false: PACK by streaming stores, ddtx_pack_stores_observe). */
void ddtx_choose_observe(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme s,
			 enum ddtx_contig_way way, uint64_t start_ns, size_t bytes, size_t blocks,
			 bool warm, const struct ddtx_layout *receiver, bool model);
/* Teach the cost model the timing ddtx_choose_observe kept, if any (each progress call). */
void ddtx_choose_learn(struct ddtx_proto_ep *pep);

/* handle.c: fi_ddtx.h layout handles passed as desc[0] */
struct fi_ddtx_layout *ddtx_handle_of(void **desc, const struct iovec *iov, size_t count);
/*
 * The handle at the buffer iov[0]: its cached layout (a reference for the caller, who puts it;
 * NULL if the cache could not hold it) and the absolute block list, which lives as long as
 * that reference (the layout's own list), or only until the handle's next use when *layout
 * is NULL.
 */
int ddtx_handle_use(struct fi_ddtx_layout *h, const struct iovec *iov, struct ddtx_layout **layout,
		    const struct iovec **out, size_t *count);

/* rma.c */
void ddtx_rma_on_complete(struct ddtx_proto_ep *pep, struct ddtx_rma *op, int status);
void ddtx_rma_on_remote_data(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf,
			     size_t len);

/* atomic.c */
void ddtx_atomic_on_req(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
void ddtx_atomic_on_resp(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len);
void ddtx_atomic_fail_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer, int err);
void ddtx_atomic_free_all(struct ddtx_proto_ep *pep);

/* mr.c: what an application key of this domain names, for work the target does itself */
/* The registered memory of [addr, addr+len) of key, checked for access: 0 with the MR's list and
 * the offset into it, or -FI_EKEYREJECTED / -FI_EACCES. */
int ddtx_mr_local(struct ddtx_proto_domain *pd, uint64_t key, uint64_t addr, uint64_t len,
		  uint32_t access, const struct iovec **iov, size_t *count, size_t *offset);
/* A peer's RMA or atomic accessed key (access: DDTX_ACC_REMOTE_*): its MR counters count it. */
void ddtx_mr_count_event(struct ddtx_proto_domain *pd, uint64_t key, uint32_t access);

#endif /* DDTX_PROTO_INTERNAL_H */
