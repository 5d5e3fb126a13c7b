/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive ring: a bounded multi-producer / single-consumer queue in the endpoint region
 * (Vyukov's sequence-number design).  Slot i starts with sequence i.  A producer claims
 * position pos when the slot's sequence equals pos (CAS on the shared tail), stamps the claim
 * (its pid and the position, in an array of its own: see ring_stamp), copies its message in
 * and publishes it by writing the slot's header and storing pos + 1 (release).  The owner
 * consumes in order:
 * a slot is ready when its sequence is head + 1, and is handed back to producers by storing
 * head + nslots after the message has been delivered.
 *
 * Producers write the ring from other processes, so the consumer trusts nothing in a slot:
 * the length is checked against the slot size, a slot claimed by a process that died before
 * publishing it is skipped after a grace period instead of blocking the ring forever, and
 * indices that no correct producer can leave (a tail moved past unclaimed slots, a sequence out
 * of place) are repaired, so one broken peer cannot stop the others (ring_repair).
 */
#include <string.h>
#include <unistd.h>

#include "shm.h"

#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define PUSH_SPIN_MAX 4096
#define STALL_GRACE_NS (200ull * 1000 * 1000)
#define TAIL_EVERY 64
/* Payload bytes of a slot asked for ahead of use; beyond, the hardware prefetcher streams. */
#define PREFETCH_MAX 1024
/* Payloads from this size start on a cache line of their slot (ring_skip). */
#define ALIGN_MIN 256
#define STALL_WARN_NS (5ull * 1000 * 1000 * 1000)
/* A producer claims a slot (tail CAS) and stamps its pid in the next instructions: an unstamped
 * claim this old was never a claim.  Long enough to outlast any scheduling delay we measured. */
#define REPAIR_GRACE_NS (1000ull * 1000 * 1000)
/* A live producer that holds a claimed slot this long without publishing is broken. */
#define GIVE_UP_NS (10ull * 1000 * 1000 * 1000)

void ddtx_shm_ring_init(struct ddtx_shm_ring *ring, struct ddtx_shm_ep_hdr *hdr,
			_Atomic uint64_t *stamps, uint8_t *base, uint32_t nslots, uint32_t slot_size)
{
	ring->hdr = hdr;
	ring->stamps = stamps;
	ring->base = base;
	ring->nslots = nslots;
	ring->slot_size = slot_size;
	ring->mask = nslots - 1;
}

/*
 * The claim's stamp: who claimed position pos (pid), with the position's low 32 bits, so that a
 * stamp of an earlier lap never passes for this one and the consumer never has to clear it.
 * It lives outside the slot: the consumer polls the slot's header line, and a stamp written
 * there at the claim and the header written again at the publish moved that line to this core,
 * back to the polling one, and here again, before the message could be seen (issue 12:
 * fabtests' tagged pingpong of 8 B, fastest / median of 12 runs 0.35 / 0.54 -> 0.30 / 0.39 us,
 * libfabric shm 0.30 / 0.36, on the AMD EPYC host).
 */
static inline uint64_t ring_stamp(uint64_t pos, uint32_t pid)
{
	return (uint64_t)(uint32_t)pos << 32 | pid;
}

/* The pid that stamped its claim of position pos; 0 when none did. */
static uint32_t ring_owner(const struct ddtx_shm_ring *ring, uint64_t pos)
{
	uint64_t s = atomic_load_explicit(&ring->stamps[pos & ring->mask], memory_order_relaxed);
	return (uint32_t)(s >> 32) == (uint32_t)pos ? (uint32_t)s : 0;
}

int ddtx_shm_ring_claim(struct ddtx_shm_ring *ring, const struct ddtx_shm_addr *src,
			struct ddtx_shm_slot_hdr **slotp, uint64_t *posp)
{
	uint64_t pos = atomic_load_explicit(&ring->hdr->tail, memory_order_relaxed);
	struct ddtx_shm_slot_hdr *slot;

	for (int spin = 0;; spin++) {
		if (spin == PUSH_SPIN_MAX)
			return -FI_EAGAIN;
		slot = ddtx_shm_ring_slot(ring, pos);
		uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
		int64_t diff = (int64_t)(seq - pos);

		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(&ring->hdr->tail, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (diff < 0) {
			return -FI_EAGAIN;       /* the consumer has not released this slot yet */
		} else {
			pos = atomic_load_explicit(&ring->hdr->tail, memory_order_relaxed);
		}
	}
	atomic_store_explicit(&ring->stamps[pos & ring->mask], ring_stamp(pos, src->pid),
			      memory_order_relaxed);
	*slotp = slot;
	*posp = pos;
	return 0;
}

bool ddtx_shm_ring_full(const struct ddtx_shm_ring *ring)
{
	uint64_t pos = atomic_load_explicit(&ring->hdr->tail, memory_order_relaxed);
	const struct ddtx_shm_slot_hdr *slot = ddtx_shm_ring_slot(ring, pos);
	return (int64_t)(atomic_load_explicit(&slot->seq, memory_order_acquire) - pos) < 0;
}

/* A slot's header, written once as the message is published (see ring_stamp). */
static void ring_seal(struct ddtx_shm_slot_hdr *slot, uint64_t pos,
		      const struct ddtx_shm_addr *src, size_t len, uint32_t skip)
{
	memcpy(&slot->src, src, sizeof(*src));
	slot->len = (uint32_t)len;
	slot->skip = skip;
	atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
}

void ddtx_shm_ring_publish(struct ddtx_shm_slot_hdr *slot, uint64_t pos,
			   const struct ddtx_shm_addr *src, size_t len)
{
	ring_seal(slot, pos, src, len, 0);
}

/*
 * Where a message of hdr_len header bytes and total bytes in all starts in its slot: after
 * enough bytes that its payload begins on a cache line, when the payload is long enough to
 * pay for it and the slot has the room.  A payload copied from and into lines it only partly
 * covers made each copy touch a line more and split every wide load or store across two lines
 * (issue 12: nc_overhead, one endpoint sending to itself, 1 KiB 382-464 -> 280-290 ns per
 * message, 4 KiB 392-587 -> 352-366, three runs each).
 */
static uint32_t ring_skip(const struct ddtx_shm_ring *ring, size_t hdr_len, size_t total)
{
	uint32_t skip = (uint32_t)(-hdr_len & 63);
	if (total - hdr_len < ALIGN_MIN || total + skip > ring->slot_size - DDTX_SHM_SLOT_HDR)
		return 0;
	return skip;
}

int ddtx_shm_ring_push(struct ddtx_shm_ring *ring, const struct ddtx_shm_addr *src,
		       const void *hdr, size_t hdr_len, const struct iovec *iov, size_t count,
		       size_t total)
{
	struct ddtx_shm_slot_hdr *slot;
	uint64_t pos;
	int ret = ddtx_shm_ring_claim(ring, src, &slot, &pos);
	if (ret)
		return ret;
	uint32_t skip = ring_skip(ring, hdr_len, total);
	uint8_t *dst = (uint8_t *)slot + DDTX_SHM_SLOT_HDR + skip;
	if (hdr_len) {
		memcpy(dst, hdr, hdr_len);
		dst += hdr_len;
	}
	for (size_t i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	ring_seal(slot, pos, src, total, skip);
	return 0;
}

static void ring_hand_back(struct ddtx_shm_ring *ring, struct ddtx_shm_consumer *c)
{
	struct ddtx_shm_slot_hdr *slot = ddtx_shm_ring_slot(ring, c->head);

	atomic_store_explicit(&slot->seq, c->head + ring->nslots, memory_order_release);
	c->head++;
	c->stall_since = 0;
	c->stall_warned = false;
}

/* Is position head + 1 (below tail) claimed by a producer or already published? */
static bool ring_next_in_use(struct ddtx_shm_ring *ring, uint64_t head, uint64_t tail)
{
	if (tail - head < 2)
		return false;
	struct ddtx_shm_slot_hdr *next = ddtx_shm_ring_slot(ring, head + 1);
	uint64_t seq = atomic_load_explicit(&next->seq, memory_order_acquire);
	return seq == head + 2 || (seq == head + 1 && ring_owner(ring, head + 1));
}

/*
 * Indices no producer following the protocol can leave behind, found at the consumer's position
 * after REPAIR_GRACE_NS: a peer wrote the shared tail or a slot's sequence.  Repaired in place so
 * that every other producer keeps working; what the broken peer had in flight is lost.
 *  - the tail behind the head, or past a slot nobody claimed (unstamped, sequence still free)
 *    with nothing claimed after it: the tail goes back to the head, the first position not yet
 *    consumed; with later positions in use, the producer of head died between its claim and
 *    its stamp, and head is skipped;
 *  - a sequence that is neither "free for head" nor "published at head": with nothing claimed
 *    beyond, the slot is made free for head again; otherwise position head is skipped.
 * Returns EMPTY with c->stall_since still set when there was nothing to repair.
 */
static enum ddtx_shm_pop ring_repair(struct ddtx_shm_ring *ring, struct ddtx_shm_consumer *c,
				     struct ddtx_shm_slot_hdr *slot, uint64_t seq, uint64_t tail,
				     uint32_t owner)
{
	bool tail_behind = (int64_t)(tail - c->head) < 0;
	if (seq != c->head && !tail_behind && tail != c->head) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: ring slot at position %llu holds sequence %llu: "
			  "skipped\n", (unsigned long long)c->head, (unsigned long long)seq);
		ring_hand_back(ring, c);
		return DDTX_SHM_POP_SKIP;
	}
	if (seq != c->head) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: ring slot at position %llu holds sequence %llu: "
			  "freed\n", (unsigned long long)c->head, (unsigned long long)seq);
		atomic_store_explicit(&ring->stamps[c->head & ring->mask], 0, memory_order_relaxed);
		atomic_store_explicit(&slot->seq, c->head, memory_order_release);
	}
	if (!tail_behind && tail != c->head && !owner && seq == c->head &&
	    ring_next_in_use(ring, c->head, tail)) {
		/* Later positions are claimed or published: the slot at head was claimed by a
		 * producer that stopped between its tail CAS and its stamp.  Skip that one. */
		DDTX_WARN(FI_LOG_EP_DATA, "shm: ring slot at position %llu claimed but never "
			  "stamped: skipped\n", (unsigned long long)c->head);
		ring_hand_back(ring, c);
		return DDTX_SHM_POP_SKIP;
	}
	if (tail_behind || (tail != c->head && !owner)) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: ring tail at %llu with position %llu unclaimed: "
			  "reset to %llu\n", (unsigned long long)tail, (unsigned long long)c->head,
			  (unsigned long long)c->head);
		atomic_compare_exchange_strong_explicit(&ring->hdr->tail, &tail, c->head,
							memory_order_relaxed, memory_order_relaxed);
	} else if (seq == c->head) {
		return DDTX_SHM_POP_EMPTY;       /* claimed by a producer: not a repair */
	}
	c->stall_since = 0;
	c->stall_warned = false;
	return DDTX_SHM_POP_EMPTY;
}

/*
 * The slot at the head is not published and the tail (or a pending stall) is to be looked at:
 * idle, claimed by a producer still writing (or dead), or inconsistent.  Out of line, so that
 * the idle poll of ddtx_shm_ring_peek (the ping-pong's wait) stays a few instructions.
 */
static __attribute__((noinline, cold)) enum ddtx_shm_pop
ring_not_ready(struct ddtx_shm_ring *ring, struct ddtx_shm_consumer *c,
	       struct ddtx_shm_slot_hdr *slot, uint64_t seq)
{
	uint64_t tail = atomic_load_explicit(&ring->hdr->tail, memory_order_relaxed);
	if (tail == c->head && seq == c->head)
		return DDTX_SHM_POP_EMPTY;
	uint64_t now = ddtx_shm_now_ns();
	if (!c->stall_since) {
		c->stall_since = now;
		return DDTX_SHM_POP_EMPTY;
	}
	uint64_t stalled = now - c->stall_since;
	if (stalled < STALL_GRACE_NS)
		return DDTX_SHM_POP_EMPTY;
	uint32_t owner = ring_owner(ring, c->head);
	if (stalled >= REPAIR_GRACE_NS) {
		enum ddtx_shm_pop r = ring_repair(ring, c, slot, seq, tail, owner);
		if (r != DDTX_SHM_POP_EMPTY || c->stall_since == 0)
			return r;
	}
	if (owner && !ddtx_shm_proc_alive(owner, 0)) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: skipping a ring slot claimed by dead process %u\n",
			  owner);
		ring_hand_back(ring, c);
		return DDTX_SHM_POP_SKIP;
	}
	if (stalled >= GIVE_UP_NS) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: ring slot at position %llu claimed by process %u "
			  "for %llu s and never published: skipped\n", (unsigned long long)c->head,
			  owner, (unsigned long long)(stalled / 1000000000ull));
		ring_hand_back(ring, c);
		return DDTX_SHM_POP_SKIP;
	}
	if (!c->stall_warned && stalled > STALL_WARN_NS) {
		c->stall_warned = true;
		DDTX_WARN(FI_LOG_EP_DATA, "shm: receive ring stalled for 5 s at position %llu "
			  "(producer pid %u)\n", (unsigned long long)c->head, owner);
	}
	return DDTX_SHM_POP_EMPTY;
}

/*
 * The payload's cache lines were just written by the producer's core: each is a cross-core
 * miss.  Asking for them all now, as soon as the sequence says the slot is full, overlaps those
 * misses instead of taking them one by one as the header is checked and the payload copied
 * (issue 12: fabtests' tagged pingpong of 256 B 0.75-0.81 -> 0.66-0.70 us, 64 B 0.62-0.69 ->
 * 0.60-0.68, on the 2-core host).  Asking for the slot's lines for writing on the producer's
 * side, before its tail CAS, was measured too and not kept: 64 B 0.73-0.77 us, 256 B 0.79-0.85
 * (the whole slot or its payload lines alone), why not profiled.
 */
static inline void prefetch_payload(const uint8_t *p, uint32_t len)
{
	for (uint32_t off = 0; off < len && off < PREFETCH_MAX; off += 64)
		__builtin_prefetch(p + off, 0, 3);
}

/*
 * The next slot's header and first payload line, asked for while this message is handled: in a
 * stream of rendezvous messages (a window of fabtests' tagged bw) each slot was read as its own
 * cross-core misses after the previous message's pull.  In a ping-pong the consumer polls that
 * header line next anyway.
 */
static inline void prefetch_next(const struct ddtx_shm_ring *ring, uint64_t pos)
{
	const uint8_t *next = (const uint8_t *)ddtx_shm_ring_slot(ring, pos);
	__builtin_prefetch(next, 0, 3);
	__builtin_prefetch(next + DDTX_SHM_SLOT_HDR, 0, 3);
}

enum ddtx_shm_pop ddtx_shm_ring_peek(struct ddtx_shm_ring *ring, struct ddtx_shm_consumer *c,
				     struct ddtx_shm_slot_hdr **slotp, uint8_t **msgp,
				     uint32_t *lenp)
{
	struct ddtx_shm_slot_hdr *slot = ddtx_shm_ring_slot(ring, c->head);
	uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);

	if (seq == c->head + 1) {
		uint32_t len = READ_ONCE(slot->len), skip = READ_ONCE(slot->skip);
		if (skip > 63 || len > ring->slot_size - DDTX_SHM_SLOT_HDR - skip) {
			DDTX_WARN(FI_LOG_EP_DATA, "shm: dropping a ring message of %u bytes after "
				  "%u (slot holds %zu)\n", len, skip,
				  ring->slot_size - DDTX_SHM_SLOT_HDR);
			ring_hand_back(ring, c);
			return DDTX_SHM_POP_SKIP;
		}
		c->stall_since = 0;
		uint8_t *msg = (uint8_t *)slot + DDTX_SHM_SLOT_HDR + skip;
		prefetch_payload(msg, len);
		prefetch_next(ring, c->head + 1);
		*slotp = slot;
		*msgp = msg;
		*lenp = len;
		return DDTX_SHM_POP_MSG;
	}

	/*
	 * Not published.  The usual case is an idle ring, and the next message goes into this
	 * very slot: reading the producers' tail as well on every idle poll kept the tail's
	 * cache line shared with this core, so every producer's claim (a CAS on it) paid a
	 * cross-core miss on top of the slot's (issue 12: fabtests' tagged pingpong of 1-24 B
	 * went from 1.12-1.19x shm's latency to 0.87-0.93x without it, on the 2-core host).  A
	 * stall matters only after STALL_GRACE_NS, so an idle
	 * poll with no stall pending looks at the tail only every TAIL_EVERY-th time.
	 */
	if (seq == c->head && !c->stall_since && ++c->idle_polls % TAIL_EVERY)
		return DDTX_SHM_POP_EMPTY;
	return ring_not_ready(ring, c, slot, seq);
}

void ddtx_shm_ring_release(struct ddtx_shm_ring *ring, struct ddtx_shm_consumer *c)
{
	ring_hand_back(ring, c);
}
