/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire's pure logic (no libfabric object): the capabilities derived from a core
 * provider's fi_info, the reasons a core is unusable, the cutting of an RMA's local iov list
 * into work requests of the core's limits, the internal key encoding and the message header.
 * Unit-tested in tests/fabtests/unit/test_ofi.c.
 */
#ifndef DDTX_WIRE_OFI_PURE_H
#define DDTX_WIRE_OFI_PURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include "wire/ofi/blob.h"
#include "wire/wire.h"

/* Bytes of one receive / send bounce buffer: message header, our blob, then the payload. */
#define DDTX_OFI_BUF_SIZE 65536
#define DDTX_OFI_HDR_LEN 16
#define DDTX_OFI_PAYLOAD_OFF (DDTX_OFI_HDR_LEN + DDTX_OFI_BLOB_LEN)

/* The core capabilities ddtx needs (an fi_info lacking one is skipped). */
#define DDTX_OFI_CORE_CAPS                                                                       \
	(FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |            \
	 FI_REMOTE_WRITE)
/* mr_mode bits the ofi wire honours.  FI_MR_PROV_KEY is left out: internal keys carry the
 * address of their byte 0 (see ddtx_ofi_ikey), so the wire must choose core keys itself.
 * FI_MR_ENDPOINT is left out: a registration belongs to the wire domain, not one endpoint. */
#define DDTX_OFI_MR_MODE (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)

/* Caps from a core's fi_info; params->max_sge caps max_sge.  NULL when info is unusable. */
const char *ddtx_ofi_unusable(const struct fi_info *core);
/* The same for an endpoint type: FI_EP_RDM, or FI_EP_MSG (conn.c; needs a shared receive
 * context).  ddtx_ofi_unusable(core) is ddtx_ofi_unusable_as(core, FI_EP_RDM). */
const char *ddtx_ofi_unusable_as(const struct fi_info *core, enum fi_ep_type want);
void ddtx_ofi_caps_from_info(const struct fi_info *core, const struct ddtx_wire_params *params,
			     struct ddtx_wire_caps *caps);

/*
 * One core work request of an RMA: entries [first, first + n) of the local list, the first one
 * starting at first_off, bytes in all, at remote offset roff of the operation.
 */
struct ddtx_ofi_chunk {
	size_t first;
	size_t first_off;
	size_t n;
	size_t bytes;
	uint64_t roff;
};

/*
 * Cut the first len bytes of iov[0..count) into chunks of at most max_iov entries and
 * max_bytes bytes (zero-length entries skipped).  Writes up to cap chunks, returns how many are
 * needed (more than cap: call again with room); -FI_EINVAL if the list holds fewer than len
 * bytes or a limit is 0.
 */
long ddtx_ofi_chunk_iov(const struct iovec *iov, size_t count, size_t len, size_t max_iov,
			size_t max_bytes, struct ddtx_ofi_chunk *out, size_t cap);

/*
 * Internal keys (DDTX_KEY_INTERNAL) name their memory without a round trip: bit 63 set (app
 * keys' core keys have it clear), bit 62 = the key's iova is the address of byte 0 (else 0,
 * offsets), bits 48..61 a tag that makes keys over the same address distinct, bits 0..47 the
 * address of byte 0.  The core key of an internal key is the key itself.
 */
#define DDTX_OFI_IKEY_BIT (1ull << 63)
#define DDTX_OFI_IKEY_VIRT (1ull << 62)
#define DDTX_OFI_IKEY_ADDR_MASK ((1ull << 48) - 1)
uint64_t ddtx_ofi_ikey(uint64_t addr, bool virt, uint16_t tag);
/*
 * The core address of [raddr, ...) through key: for a core with FI_MR_VIRT_ADDR the virtual
 * address, else the offset from byte 0.  -FI_EKEYREJECTED if key is not an internal key.
 */
int ddtx_ofi_ikey_core_addr(uint64_t key, uint64_t raddr, bool core_virt, uint64_t *out);

/* Message types and flags of the wire's header (DDTX_OFI_HDR_LEN bytes). */
enum {
	DDTX_OFI_MSG_DATA = 1,     /* a ddtx_wire_send message for on_recv */
	DDTX_OFI_MSG_KEY_REQ = 2,  /* what is app key K?  (space, key) */
	DDTX_OFI_MSG_KEY_REP = 3,  /* the answer */
	DDTX_OFI_MSG_PROBE = 4,    /* are you there?  (no payload; liveness.c) */
	DDTX_OFI_MSG_ANSWER = 5,   /* yes (no payload) */
	DDTX_OFI_MSG_RING_GRANT = 6, /* write your messages into this receive ring (ring.c) */
	DDTX_OFI_MSG_RING_START = 7, /* my last message sent, not written: the ring follows it */
	DDTX_OFI_MSG_RING_CREDIT = 8, /* ring messages delivered so far (their slots are free) */
};
#define DDTX_OFI_F_ADDR 1u        /* the sender's blob follows the header */
#define DDTX_OFI_F_CREDIT 2u      /* ring messages only: byte 7 carries a ring credit */

struct ddtx_ofi_hdr {
	uint8_t type;
	uint8_t flags;
	uint64_t src_uid;
};
void ddtx_ofi_hdr_pack(const struct ddtx_ofi_hdr *h, void *out);
int ddtx_ofi_hdr_unpack(const void *in, size_t len, struct ddtx_ofi_hdr *h);

/* An app key's description, as KEY_REP carries it. */
struct ddtx_ofi_key_rep {
	uint64_t key;
	int32_t status;            /* 0, or -FI_EKEYREJECTED (no such key) */
	uint32_t access;           /* DDTX_ACC_* */
	uint64_t core_key;
	uint64_t iova;             /* the key's address of byte 0 as peers name it */
	uint64_t len;
	uint64_t core_base;        /* core address of byte 0 */
};
#define DDTX_OFI_KEY_REQ_LEN 8
#define DDTX_OFI_KEY_REP_LEN 48
void ddtx_ofi_key_rep_pack(const struct ddtx_ofi_key_rep *r, void *out);
int ddtx_ofi_key_rep_unpack(const void *in, size_t len, struct ddtx_ofi_key_rep *r);
/*
 * Check [raddr, raddr+len) with access against a reply and give the core address: 0,
 * -FI_EKEYREJECTED (no such key) or -FI_EACCES (bounds or access).
 */
int ddtx_ofi_key_translate(const struct ddtx_ofi_key_rep *r, uint64_t raddr, uint64_t len,
			   uint32_t access, uint64_t *core_addr);

/*
 * Connections (conn.c, a core with FI_EP_MSG): one per pair of endpoints, opened by the first to
 * send, its request carrying the requester's blob (connreq_parse: exactly one blob of our core,
 * uid not 0).  A request that finds our own request to that peer on its way is the simultaneous
 * connect: the request of the larger uid wins on both sides, so exactly one connection is left.
 */
enum ddtx_ofi_conn_state {
	DDTX_OFI_CONN_NONE,        /* no connection to the peer */
	DDTX_OFI_CONN_CONNECTING,  /* we asked (fi_connect), no answer yet */
	DDTX_OFI_CONN_ACCEPTING,   /* it asked, we accepted, not yet up */
	DDTX_OFI_CONN_UP,          /* connected: sends and writes go through it */
	DDTX_OFI_CONN_LOSER,       /* our request that lost the race: closed when answered */
	DDTX_OFI_CONN_DOWN,        /* shut down or failed */
};
enum ddtx_ofi_connreq_verdict {
	DDTX_OFI_CONNREQ_ACCEPT,          /* the peer's connection */
	DDTX_OFI_CONNREQ_ACCEPT_REPLACE,  /* the peer's, and ours on its way is given up */
	DDTX_OFI_CONNREQ_ACCEPT_EXTRA,    /* our own request to ourselves: accepted beside it */
	DDTX_OFI_CONNREQ_REJECT,          /* ours wins, or we have one, or the peer is dead */
};
/* What to do with a request from their_uid while our connection to it is in state ours. */
enum ddtx_ofi_connreq_verdict ddtx_ofi_connreq_decide(uint64_t our_uid, uint64_t their_uid,
						      enum ddtx_ofi_conn_state ours, bool peer_dead);
/* Our request was refused for the refusals-th time: ask again (true) or take the peer as gone. */
#define DDTX_OFI_CONN_RETRIES 8
bool ddtx_ofi_refusal_retry(uint64_t our_uid, uint64_t their_uid, uint32_t refusals);
/* A connection request's data: 0 and the requester's blob, or -FI_EINVAL. */
int ddtx_ofi_connreq_parse(const void *data, size_t len, uint32_t core_id,
			   struct ddtx_ofi_blob *b);

/*
 * The receive ring (ring.c): a receiver's registered slots, one ring per sender, into which
 * the sender writes its messages (fi_writemsg with FI_REMOTE_CQ_DATA) instead of sending them.
 * RING_GRANT describes it: the internal key over the ring (offset addressing, slot i at
 * i * slot_size), the ring's number at the receiver (which the CQ data names, since a remote
 * write's completion has no source address), the slot count (a power of two) and size.
 */
#define DDTX_OFI_RING_SLOTS_MAX 1024u
/* The largest ring message: a bounce buffer's bytes without the blob (header + payload). */
#define DDTX_OFI_RING_SLOT_MAX (DDTX_OFI_BUF_SIZE - DDTX_OFI_BLOB_LEN)
#define DDTX_OFI_RING_ID_MAX (1u << 24)  /* ring numbers the CQ data can name */
struct ddtx_ofi_ring_grant {
	uint64_t key;
	uint32_t ring_id;
	uint32_t slots;
	uint32_t slot_size;
};
#define DDTX_OFI_RING_GRANT_LEN 24
#define DDTX_OFI_RING_CREDIT_LEN 8
void ddtx_ofi_ring_grant_pack(const struct ddtx_ofi_ring_grant *g, void *out);
/*
 * A peer's grant, checked: an internal key, ring_id below DDTX_OFI_RING_ID_MAX, slots a power
 * of two in 1..DDTX_OFI_RING_SLOTS_MAX, slot_size from a header to DDTX_OFI_RING_SLOT_MAX.
 */
int ddtx_ofi_ring_grant_unpack(const void *in, size_t len, struct ddtx_ofi_ring_grant *g);
void ddtx_ofi_ring_credit_pack(uint64_t delivered, void *out);
int ddtx_ofi_ring_credit_unpack(const void *in, size_t len, uint64_t *delivered);

/* The remote CQ data of a ring write: ring number (24 bits), sequence number modulo 2^16, and
 * the message's length (24 bits). */
uint64_t ddtx_ofi_ring_data(uint32_t ring_id, uint64_t seq, size_t len);
void ddtx_ofi_ring_data_split(uint64_t data, uint32_t *ring_id, uint16_t *seq16, size_t *len);
/*
 * At the receiver: the sequence number of a write whose CQ data says seq16 and len, given the
 * next sequence number to deliver (next) and the ring's geometry.  Only slots the sender may
 * hold are accepted: [next, next + slots).  -FI_EINVAL for a length outside [header,
 * slot_size] or a sequence number outside that window.
 */
int ddtx_ofi_ring_accept(uint64_t next, uint32_t slots, uint32_t slot_size, uint16_t seq16,
			 size_t len, uint64_t *seq);
/* At the sender: is a credit of `delivered` possible (acked < delivered <= posted)? */
bool ddtx_ofi_ring_credit_ok(uint64_t acked, uint64_t posted, uint64_t delivered);
/*
 * A ring message's header also states its sequence number (modulo 2^16, bytes 2-3) and its
 * length (bytes 4-7), which the sender seals in before the write.  Why: a remote write's
 * completion names no source, so any peer could send CQ data naming another peer's ring; the
 * CQ data only says "look at this slot", and what the ring's owner wrote there says which
 * message is there and how long it is.  The receiver clears a slot's header once it has
 * delivered it, so nothing left in a slot passes for a later message.
 */
void ddtx_ofi_ring_hdr_seal(void *hdr, uint64_t seq, size_t len);
/*
 * A ring message may also carry a credit for the ring its writer holds from the reader: the
 * count of the reader's ring messages the writer delivered, modulo 2^8, in byte 7 (the length
 * never needs it: a slot is under 2^24 bytes), flag DDTX_OFI_F_CREDIT.  Why: a ping-pong's
 * receiver returned a RING_CREDIT message of its own every half ring (every 8th message with
 * 16 slots), a whole message through the core each time; the reply carries it now, as delivery
 * ACKs ride on reverse traffic.  Only a ring of at most DDTX_OFI_CREDIT8_SLOTS slots is
 * credited so: its writer never has 256 messages undelivered, so 8 bits name the count.
 */
#define DDTX_OFI_CREDIT8_SLOTS 128u
void ddtx_ofi_ring_hdr_credit(void *hdr, uint64_t delivered);
/* The credit a ring message's header carries; false if none. */
bool ddtx_ofi_ring_hdr_credit_get(const void *hdr, uint8_t *c8);
/*
 * At the ring's writer: the delivered count a carried credit c8 names, from its acked and
 * posted counts and the ring's slots; false where it names none ahead of acked: stale (a
 * RING_CREDIT message, sent the ordinary way, overtook the ring message that carried it),
 * beyond what was posted, or from a ring of more than DDTX_OFI_CREDIT8_SLOTS slots.  Such a
 * credit is ignored, never the message carrying it.
 */
bool ddtx_ofi_ring_credit8(uint64_t acked, uint64_t posted, uint32_t slots, uint8_t c8,
			   uint64_t *delivered);
enum ddtx_ofi_ring_verdict {
	DDTX_OFI_RING_DELIVER,   /* message seq from the ring's owner, *len bytes */
	DDTX_OFI_RING_NOT_YET,   /* not message seq (not written yet): wait for the owner's own
				  * completion to name the slot again */
	DDTX_OFI_RING_BAD,       /* the owner wrote a malformed message seq there: drop it */
};
enum ddtx_ofi_ring_verdict ddtx_ofi_ring_hdr_check(const void *slot, uint32_t slot_size,
						   uint64_t seq, uint64_t owner_uid, size_t *len);

#endif /* DDTX_WIRE_OFI_PURE_H */
