/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ddtx wire protocol: the messages endpoints exchange through ddtx_wire_send().
 * docs/wire-protocol.md describes each message and the sequence per scheme; keep both in step.
 *
 * Every message starts with struct ddtx_hdr_base.  All fields travel in the sender's host byte
 * order, with natural alignment and no implicit padding (the sizes are asserted below, so a
 * compiler or ABI that lays them out differently fails to build).  Headers therefore only ever
 * pass between hosts of the same byte order: that is true of every host ddtx runs on today
 * (x86-64, aarch64 and ppc64le are little-endian), and it is the reason a wire that crosses hosts
 * must refuse a peer of the other byte order when its address is inserted rather than exchange
 * headers with it.  A receiver validates the type, version and length of everything it reads
 * before acting on it.
 */
#ifndef DDTX_HDR_H
#define DDTX_HDR_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fi_errno.h>
#include "wire/wire.h"

/* 2: RMA_DATA names the target key and address; 3: ATOMIC/ATOMIC_RESP, RMA_DATA as RMA event;
 * 4: the first PACK chunk in the RTS; 5: RTS and ACK with DDTX_HDR_IPC (CUDA IPC offer and its
 * answer); 6: pull (RTS.pull_key, CTS with PULLED); 7: split pull (CTS with SPLIT),
 * RTS.pull_addr (the pull's key comes from the registration cache); 8: delivery ACKs carried
 * on reverse traffic (ACKED with ddtx_hdr_base.ack_id on any message, ACK with a list of ids);
 * 9: the CUDA IPC offer lists its segments as runs (vectors and lists), not one by one;
 * 10: a pull of several blocks, through the sender's windows listed behind the RTS (WINDOWS);
 * 11: RTS with DEVICE; 12: STREAM, PACK chunks sent behind a PACK proposal before its CTS;
 * 13: CREDIT, payload sent before a match is bounded per peer (DDTX_CREDIT_BYTES) */
#define DDTX_PROTO_VERSION 13

enum ddtx_msg_type {
	DDTX_MSG_EAGER = 1,  /* header + the whole payload */
	DDTX_MSG_RTS = 2,    /* rendezvous request: sizes and layout summary, no payload */
	DDTX_MSG_CTS = 3,    /* receiver's answer: scheme, accepted length, a batch of descriptors */
	DDTX_MSG_DATA = 4,   /* PACK: one packed chunk of a rendezvous payload */
	DDTX_MSG_DONE = 5,   /* SGL/UMR: the sender finished the writes of one CTS batch */
	DDTX_MSG_RMA_DATA = 6, /* remote CQ data of an fi_writedata / FI_REMOTE_CQ_DATA write */
	DDTX_MSG_ACK = 7,    /* FI_DELIVERY_COMPLETE: the message reached the receive buffer */
	DDTX_MSG_LIST_REQ = 8, /* UMR: the sender lacks a cached key list; CTS again with it */
	DDTX_MSG_ATOMIC = 9, /* an atomic for the target to execute: op, segments, operands */
	DDTX_MSG_ATOMIC_RESP = 10, /* the target's answer: status and, if fetching, old values */
	DDTX_MSG_STREAM = 11, /* PACK: a chunk sent behind the RTS before the CTS (by tx_id) */
	DDTX_MSG_CREDIT = 12, /* the receiver gives back credit for payload it no longer holds */
	DDTX_MSG_TYPE_MAX,
};

/* ddtx_hdr_base.flags */
#define DDTX_HDR_TAGGED (1u << 0)   /* EAGER/RTS: tagged message (tag is valid) */
#define DDTX_HDR_CQ_DATA (1u << 1)  /* EAGER/RTS: data is valid (FI_REMOTE_CQ_DATA) */
#define DDTX_HDR_LAST (1u << 2)     /* CTS: this batch covers the last accepted byte */
#define DDTX_HDR_ACK_REQ (1u << 3)  /* EAGER/RTS: answer with ACK once delivered */
#define DDTX_HDR_CACHED (1u << 4)   /* CTS (UMR): the key list is the one sent before */
#define DDTX_HDR_WARM (1u << 5)     /* RTS: the sender's layout is warm (time this transfer) */
#define DDTX_HDR_RMA_EVENT (1u << 6) /* RMA_DATA: count the access (FI_RMA_EVENT counters) */
#define DDTX_HDR_READ (1u << 7)     /* RMA_DATA with RMA_EVENT: the access was a read */
#define DDTX_HDR_MORE (1u << 8)     /* RMA_DATA: a further segment of an operation already
				     * reported (only the counters of its key count it) */
#define DDTX_HDR_IPC (1u << 9)      /* RTS: a CUDA IPC offer follows instead of a first chunk;
				     * ACK: the receiver copied the payload through it */
#define DDTX_HDR_PULL (1u << 10)    /* RTS: pull_key names the sender's one block, readable
				     * (with WINDOWS: its windows do, pull_key 0) */
#define DDTX_HDR_PULLED (1u << 11)  /* CTS: the receiver read the payload (with SPLIT before:
				     * its part); the send is done once its writes are */
#define DDTX_HDR_SPLIT (1u << 12)   /* CTS (SGL, first, to a PULL): the receiver reads the bytes
				     * before offset itself; the batch asks for the rest */
#define DDTX_HDR_ACKED (1u << 13)   /* any message: it also acknowledges the delivery of the
				     * receiver's send ack_id (an ACK with status 0, carried) */
#define DDTX_HDR_WINDOWS (1u << 14) /* RTS with PULL: the payload is readable through the
				     * sender's windows, listed behind the RTS (ddtx_desc) */
#define DDTX_HDR_DEVICE (1u << 15)  /* RTS: the payload is device memory the sender's NIC
				     * reads (proto/hmem_direct.c): zero copy only, no PACK */

struct ddtx_hdr_base {
	uint8_t type;
	uint8_t version;
	uint16_t flags;
	uint32_t ack_id;     /* with ACKED: a send of the receiver now delivered; 0 otherwise */
};

struct ddtx_hdr_eager {
	struct ddtx_hdr_base base;
	uint64_t tag;
	uint64_t data;
	uint64_t len;        /* payload bytes following the header */
	uint32_t tx_id;      /* with ACK_REQ: the sender's operation, echoed in ACK */
	uint32_t reserved2;
};

struct ddtx_hdr_rts {
	struct ddtx_hdr_base base;
	uint64_t tag;
	uint64_t data;
	uint64_t total_len;  /* bytes the sender offers */
	uint32_t tx_id;      /* the sender's operation, echoed in CTS */
	uint32_t scheme;     /* enum fi_ddtx_scheme the sender proposes */
	uint64_t nblocks;    /* the sender's layout summary (engine/iov.h) */
	uint64_t min_block;
	uint64_t avg_block;
	uint64_t pull_key;   /* with PULL: key (internal space) over the payload */
	uint64_t pull_addr;  /* with PULL: the key's address of the payload's first byte */
};

/* One receiver descriptor: a key (internal space, offset addressing) covering len bytes. */
struct ddtx_desc {
	uint64_t key;
	uint64_t len;
};

/* The most windows an RTS lists for a pull (WINDOWS): 4 KiB of keys. */
#define DDTX_PULL_WINDOWS_MAX 256

struct ddtx_hdr_cts {
	struct ddtx_hdr_base base;
	uint32_t tx_id;      /* from the RTS */
	uint32_t rx_id;      /* the receiver's operation, echoed in DATA/DONE */
	uint64_t accepted;   /* bytes the receiver takes (less than offered: truncation) */
	uint64_t offset;     /* byte offset of this batch's first descriptor */
	uint32_t scheme;     /* enum fi_ddtx_scheme decided by the receiver */
	uint32_t ndesc;      /* descriptors following (0 for PACK, and for UMR with CACHED) */
	uint64_t chunk;      /* UMR: window length agreed for both sides */
	uint64_t wset_id;    /* UMR: the receiver's window set (names the cached key list) */
	/* struct ddtx_desc desc[ndesc]; UMR: one per window, in window order */
};

struct ddtx_hdr_list_req {
	struct ddtx_hdr_base base;
	uint32_t rx_id;
	uint32_t reserved2;
};

struct ddtx_hdr_data {
	struct ddtx_hdr_base base;
	uint32_t rx_id;
	uint32_t reserved2;
	uint64_t offset;     /* position of the chunk in the payload */
	uint64_t len;        /* bytes following the header */
};

/*
 * A chunk of a send that proposed PACK, sent before its CTS came back (the wire's round trip
 * is not waited for).  It names the sender's tx_id: the receiver may not have matched the RTS
 * yet.  A sender streams at most DDTX_STREAM_MAX bytes of a message this way (the RTS's own
 * first chunk included); the rest goes as DATA once the CTS has come.
 */
struct ddtx_hdr_stream {
	struct ddtx_hdr_base base;
	uint32_t tx_id;
	uint32_t reserved2;
	uint64_t offset;     /* position of the chunk in the payload */
	uint64_t len;        /* bytes following the header */
};

#define DDTX_STREAM_MAX ((size_t)256 << 10)

/*
 * Credit: payload a sender may have sent to one peer before any receive matched it (the bytes
 * of EAGER messages, of an RTS's first chunk, of STREAM chunks) and not yet given back.  Both
 * sides count the same bytes: the sender spends credit on them and sends what it has none for
 * as a rendezvous without payload (an FI_INJECT eagerly all the same); the receiver, once it
 * no longer holds them (delivered, matched or dropped), gives them back with CREDIT as they
 * reach DDTX_CREDIT_RETURN.  So the unexpected payload a receiver keeps from one peer is at
 * most DDTX_CREDIT_BYTES (and what was injected), however far ahead of the receives the sender
 * runs.  The same value on both sides: part of the protocol.  8 MiB, given back by the MiB: a
 * window of 64 eager messages of 64 KiB (fabtests' bandwidth tests) always finds its 4 MiB,
 * whatever is still on its way back.
 */
#define DDTX_CREDIT_BYTES ((uint64_t)8 << 20)
#define DDTX_CREDIT_RETURN ((uint64_t)1 << 20)

struct ddtx_hdr_credit {
	struct ddtx_hdr_base base;
	uint64_t bytes;      /* credit given back: at most what the sender spent and has not had */
};

struct ddtx_hdr_done {
	struct ddtx_hdr_base base;
	uint32_t rx_id;
	int32_t status;      /* 0, or the negative FI_E* error that ended the transfer */
	uint64_t offset;     /* the batch that is finished (its CTS offset) */
};

struct ddtx_hdr_ack {
	struct ddtx_hdr_base base;
	uint32_t tx_id;
	int32_t status;      /* 0, or the negative FI_E* error the receive ended with */
	/* uint32_t more[]: up to DDTX_ACK_LIST_MAX further sends delivered (status 0), the rest
	 * of the message (a multiple of 4 bytes) */
};

/* Ids one ACK lists after its own tx_id: bounds what a receiver walks per message. */
#define DDTX_ACK_LIST_MAX 64

struct ddtx_hdr_rma_data {
	struct ddtx_hdr_base base;
	uint64_t data;
	uint64_t len;        /* bytes the write moved */
	uint64_t key;        /* the target's application key of the write's first segment */
	uint64_t addr;       /* that segment's address (as the key addresses it) */
	uint64_t seg_len;    /* and length: the target reports only writes into its own keys */
};

/*
 * A CUDA IPC offer (RTS with DDTX_HDR_IPC; docs/wire-protocol.md): the sender's device
 * allocations holding the payload, each with its driver handle, then the payload's segments in
 * order, as runs: a vector (count segments of len bytes, offset from the allocation's base, each
 * next stride further) or a list (count segments of len bytes at the offsets that follow it).
 * Runs keep the offers of many-block layouts within one message (NAS_MG's x face, 4096 blocks
 * of 8 B: 64 runs of 32 B; 3225 random blocks of 4 B: one list of 25.8 KB), so the receiver
 * alone touches the GPU.  The receiver maps the allocations and copies the segments device to
 * device, or declines by answering with an ordinary CTS.
 */
#define DDTX_IPC_MAX_ALLOCS 16
#define DDTX_IPC_MAX_SEGS 65536 /* segments of one offer: what a receiver expands */

struct ddtx_ipc_offer {
	uint32_t nalloc;
	uint32_t nrun;
	/* struct ddtx_ipc_alloc alloc[nalloc]; then nrun runs, each a struct ddtx_ipc_run and,
	 * for a list, its count offsets (uint64_t) */
};

struct ddtx_ipc_alloc {
	uint8_t handle[64];  /* CUipcMemHandle */
	uint64_t base;       /* the allocation in the sender's address space */
	uint64_t size;
	uint64_t buffer_id;  /* CU_POINTER_ATTRIBUTE_BUFFER_ID: a new one after free + alloc */
};

#define DDTX_IPC_RUN_LIST 1 /* the segments' offsets follow the run */

struct ddtx_ipc_run {
	uint16_t alloc;      /* index into alloc[] */
	uint16_t flags;      /* DDTX_IPC_RUN_LIST */
	uint32_t count;      /* segments, at least 1 */
	uint64_t len;        /* bytes of each, at least 1 */
	uint64_t offset;     /* vector: the first one's, from the allocation's base; list: 0 */
	uint64_t stride;     /* vector: from one segment's start to the next; list: 0 */
};

/*
 * One target segment of an atomic: count elements at addr of the target's application key.
 * DDTX_MSG_ATOMIC carries nseg of them, then the operand (count elements; none for
 * FI_ATOMIC_READ), then for DDTX_ATOMIC_COMPARE the compare operand (count elements).
 */
struct ddtx_atomic_seg {
	uint64_t addr;
	uint64_t count;
	uint64_t key;
};

/*
 * Operand bytes one ATOMIC carries at most (and old-value bytes one ATOMIC_RESP returns): both
 * peers check against it, so it is part of the protocol.  With its segments and both operands
 * a request stays under every wire's max_send_size (shm 64 KiB slots, verbs 16 KiB buffers).
 */
#define DDTX_ATOMIC_MAX_BYTES 2048

struct ddtx_hdr_atomic {
	struct ddtx_hdr_base base;
	uint32_t tx_id;      /* the initiator's operation, echoed in ATOMIC_RESP */
	uint8_t kind;        /* enum ddtx_atomic_kind (engine/atomic_exec.h) */
	uint8_t op;          /* enum fi_op */
	uint8_t datatype;    /* enum fi_datatype */
	uint8_t reserved2;
	uint64_t count;      /* elements in all segments */
	uint32_t nseg;
	uint32_t reserved3;
	/* struct ddtx_atomic_seg seg[nseg]; operand; compare operand */
};

struct ddtx_hdr_atomic_resp {
	struct ddtx_hdr_base base;
	uint32_t tx_id;
	int32_t status;      /* 0, or the negative FI_E* error the target refused it with */
	uint64_t len;        /* bytes of old values following (fetch and compare; 0 on error) */
};

/* The layouts peers exchange: a change here is a protocol change (bump DDTX_PROTO_VERSION). */
_Static_assert(sizeof(struct ddtx_hdr_base) == 8, "hdr_base layout");
_Static_assert(DDTX_MSG_TYPE_MAX <= DDTX_WIRE_MSG_OWN, "a type wires keep for themselves");
_Static_assert(sizeof(struct ddtx_hdr_eager) == 40, "hdr_eager layout");
_Static_assert(sizeof(struct ddtx_hdr_rts) == 80, "hdr_rts layout");
_Static_assert(sizeof(struct ddtx_desc) == 16, "desc layout");
_Static_assert(sizeof(struct ddtx_hdr_cts) == 56, "hdr_cts layout");
_Static_assert(sizeof(struct ddtx_hdr_list_req) == 16, "hdr_list_req layout");
_Static_assert(sizeof(struct ddtx_hdr_data) == 32, "hdr_data layout");
_Static_assert(sizeof(struct ddtx_hdr_done) == 24, "hdr_done layout");
_Static_assert(sizeof(struct ddtx_hdr_ack) == 16, "hdr_ack layout");
_Static_assert(sizeof(struct ddtx_hdr_rma_data) == 48, "hdr_rma_data layout");
_Static_assert(sizeof(struct ddtx_atomic_seg) == 24, "atomic_seg layout");
_Static_assert(sizeof(struct ddtx_hdr_atomic) == 32, "hdr_atomic layout");
_Static_assert(sizeof(struct ddtx_hdr_atomic_resp) == 24, "hdr_atomic_resp layout");
_Static_assert(sizeof(struct ddtx_hdr_credit) == 16, "hdr_credit layout");
_Static_assert(offsetof(struct ddtx_hdr_cts, chunk) == 40, "hdr_cts.chunk offset");
_Static_assert(sizeof(struct ddtx_ipc_offer) == 8, "ipc_offer layout");
_Static_assert(sizeof(struct ddtx_ipc_alloc) == 88, "ipc_alloc layout");
_Static_assert(sizeof(struct ddtx_ipc_run) == 32, "ipc_run layout");

static inline size_t ddtx_hdr_min_len(unsigned type)
{
	switch (type) {
	case DDTX_MSG_EAGER: return sizeof(struct ddtx_hdr_eager);
	case DDTX_MSG_RTS: return sizeof(struct ddtx_hdr_rts);
	case DDTX_MSG_CTS: return sizeof(struct ddtx_hdr_cts);
	case DDTX_MSG_DATA: return sizeof(struct ddtx_hdr_data);
	case DDTX_MSG_STREAM: return sizeof(struct ddtx_hdr_stream);
	case DDTX_MSG_DONE: return sizeof(struct ddtx_hdr_done);
	case DDTX_MSG_RMA_DATA: return sizeof(struct ddtx_hdr_rma_data);
	case DDTX_MSG_ACK: return sizeof(struct ddtx_hdr_ack);
	case DDTX_MSG_LIST_REQ: return sizeof(struct ddtx_hdr_list_req);
	case DDTX_MSG_ATOMIC: return sizeof(struct ddtx_hdr_atomic);
	case DDTX_MSG_ATOMIC_RESP: return sizeof(struct ddtx_hdr_atomic_resp);
	case DDTX_MSG_CREDIT: return sizeof(struct ddtx_hdr_credit);
	default: return 0;
	}
}

/*
 * The error a peer's status field (DONE, ACK) stands for, as a positive FI_E* value for the local
 * application.  A peer chooses the number, so only the codes ddtx itself sends pass through;
 * anything else (including INT32_MIN, whose negation overflows) becomes FI_EIO.
 */
static inline int ddtx_hdr_status_err(int32_t status)
{
	static const int known[] = {
		FI_EIO, FI_EACCES, FI_EKEYREJECTED, FI_ENOMEM, FI_ENOSPC, FI_EINVAL, FI_ETRUNC,
		FI_ECANCELED, FI_EMSGSIZE, FI_EAGAIN, FI_ENOENT, FI_ETIMEDOUT, FI_EREMOTEIO,
		FI_EOPNOTSUPP,
	};
	if (status >= 0)
		return status ? FI_EIO : 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (status == -known[i])
			return known[i];
	return FI_EIO;
}

#endif /* DDTX_HDR_H */
