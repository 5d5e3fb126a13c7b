/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The key table: the software HCA's memory translation table.
 *
 * An open-addressing hash (linear probing, tombstones) of 64-byte slots keyed by (space, key),
 * living in the domain region, plus a pool of (addr, len) segments.  The owning process is the
 * only writer (under the domain lock); other processes only read, through a per-slot seqlock:
 * the slot counter is odd while the owner rewrites the slot or the segments it points to.
 * Slots never move, so a lock-free lookup that runs during an insert or a removal still finds
 * every key that exists throughout it.  Segments are freed only after their slot has been
 * rewritten (counter bumped), so a reader holding an old snapshot retries instead of trusting
 * recycled segments.
 *
 * Keys the table chooses are placed, not hashed at random: the slot first (the one freed last,
 * else the next free one in order), then a key whose hash lands on it.  Random slots put each
 * registration on a page of the table not touched for a while, and on the test host (a virtual
 * machine) touching such a page costs 9-15 us: a split pull, which registers its tail, spent
 * 13-17 us of its 50 in the lookup of one empty slot (fabtests' tagged pingpong at 96 KiB, slow
 * regime), where a slot just freed is in the cache.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "shm.h"

#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define SEQ_SPIN_MAX 200000

/* ---- private segment-pool allocator: sorted, coalesced free extents ---- */
struct ddtx_shm_ext {
	uint64_t off, len;
};

struct ddtx_shm_segpool {
	struct ddtx_shm_ext *v;
	size_t n, cap;
};

static int segpool_init(struct ddtx_shm_segpool *sp, uint64_t nsegs)
{
	sp->cap = 64;
	sp->v = malloc(sp->cap * sizeof(*sp->v));
	if (!sp->v)
		return -FI_ENOMEM;
	sp->n = 0;
	if (nsegs) {
		sp->v[0] = (struct ddtx_shm_ext){ 0, nsegs };
		sp->n = 1;
	}
	return 0;
}

static int segpool_alloc(struct ddtx_shm_segpool *sp, uint64_t n, uint64_t *off)
{
	if (!n) {
		*off = 0;
		return 0;
	}
	for (size_t i = 0; i < sp->n; i++) {
		if (sp->v[i].len < n)
			continue;
		*off = sp->v[i].off;
		sp->v[i].off += n;
		sp->v[i].len -= n;
		if (!sp->v[i].len) {
			memmove(&sp->v[i], &sp->v[i + 1], (sp->n - i - 1) * sizeof(*sp->v));
			sp->n--;
		}
		return 0;
	}
	return -FI_ENOSPC;
}

static void segpool_free(struct ddtx_shm_segpool *sp, uint64_t off, uint64_t n)
{
	size_t lo = 0, hi = sp->n;

	if (!n)
		return;
	while (lo < hi) {                        /* first extent starting after off */
		size_t mid = (lo + hi) / 2;
		if (sp->v[mid].off > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	bool left = lo > 0 && sp->v[lo - 1].off + sp->v[lo - 1].len == off;
	bool right = lo < sp->n && off + n == sp->v[lo].off;

	if (left && right) {
		sp->v[lo - 1].len += n + sp->v[lo].len;
		memmove(&sp->v[lo], &sp->v[lo + 1], (sp->n - lo - 1) * sizeof(*sp->v));
		sp->n--;
	} else if (left) {
		sp->v[lo - 1].len += n;
	} else if (right) {
		sp->v[lo].off = off;
		sp->v[lo].len += n;
	} else {
		if (sp->n == sp->cap) {
			struct ddtx_shm_ext *v = realloc(sp->v, 2 * sp->cap * sizeof(*v));
			if (!v) {
				DDTX_WARN(FI_LOG_CORE, "shm: out of memory freeing %llu key "
					  "segments; they are lost\n", (unsigned long long)n);
				return;
			}
			sp->v = v;
			sp->cap *= 2;
		}
		memmove(&sp->v[lo + 1], &sp->v[lo], (sp->n - lo) * sizeof(*sp->v));
		sp->v[lo] = (struct ddtx_shm_ext){ off, n };
		sp->n++;
	}
}

/* ---- hashing ---- */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* mix64's inverse: each step undone in reverse order. */
static uint64_t unmix64(uint64_t x)
{
	x ^= (x >> 31) ^ (x >> 62);
	x *= 0x319642b2d24d8ec3ull; /* 0x94d049bb133111eb^-1 mod 2^64 */
	x ^= (x >> 27) ^ (x >> 54);
	x *= 0x96de1b173f119089ull; /* 0xbf58476d1ce4e5b9^-1 mod 2^64 */
	x ^= (x >> 30) ^ (x >> 60);
	return x;
}

static uint64_t space_salt(uint32_t space)
{
	return ((uint64_t)space + 1) * 0x9e3779b97f4a7c15ull;
}

static uint64_t key_hash(uint32_t space, uint64_t key)
{
	return mix64(key ^ space_salt(space));
}

/* A bijection of b-bit numbers keyed by the secret (each step is invertible modulo 2^b). */
static uint64_t scramble(uint64_t x, uint64_t secret, unsigned b)
{
	uint64_t m = b < 64 ? (1ull << b) - 1 : ~0ull;
	x = (x + secret) & m;
	x = (x * 0xbf58476d1ce4e5b9ull) & m;
	x ^= x >> (b / 2);
	x = (x * (mix64(secret) | 1)) & m;
	x ^= x >> (b / 2);
	return x;
}

/*
 * A new key whose hash's slot is `slot`: the hash is chosen (the slot in its low bits, the
 * never-repeating counter scrambled by the secret above them) and the key computed back from
 * it, so chosen keys stay unique for the domain's lifetime.
 */
static uint64_t key_for_slot(struct ddtx_shm_keytab *kt, uint32_t space, uint64_t slot)
{
	unsigned bits = (unsigned)__builtin_popcountll(kt->mask);
	uint64_t high = scramble(kt->next_key++, kt->key_secret, 64 - bits);
	uint64_t h = (bits < 64 ? high << bits : 0) | slot;
	return unmix64(h) ^ space_salt(space);
}

size_t ddtx_shm_keytab_region_size(uint64_t nslots, uint64_t nsegs)
{
	size_t hdr = (sizeof(struct ddtx_shm_dom_hdr) + 63) & ~(size_t)63;

	return hdr + nslots * sizeof(struct ddtx_shm_key_slot) +
	       nsegs * sizeof(struct ddtx_shm_seg);
}

int ddtx_shm_keytab_init(struct ddtx_shm_keytab *kt, void *region, size_t region_size,
			 uint64_t capacity, uint64_t nslots, uint64_t nsegs)
{
	size_t hdr_size = (sizeof(struct ddtx_shm_dom_hdr) + 63) & ~(size_t)63;
	int ret;

	memset(kt, 0, sizeof(*kt));
	kt->pool = calloc(1, sizeof(*kt->pool));
	if (!kt->pool)
		return -FI_ENOMEM;
	ret = segpool_init(kt->pool, nsegs);
	if (ret) {
		free(kt->pool);
		kt->pool = NULL;
		return ret;
	}
	ret = ddtx_shm_random(&kt->key_secret, sizeof(kt->key_secret));
	if (ret) {
		free(kt->pool->v);
		free(kt->pool);
		kt->pool = NULL;
		return ret;
	}
	kt->hdr = region;
	kt->hdr->nslots = nslots;
	kt->hdr->nsegs = nsegs;
	kt->hdr->slots_off = hdr_size;
	kt->hdr->segs_off = hdr_size + nslots * sizeof(struct ddtx_shm_key_slot);
	kt->hdr->r.hdr_size = (uint32_t)hdr_size;
	kt->hdr->r.region_size = region_size;
	kt->slots = (struct ddtx_shm_key_slot *)((uint8_t *)region + kt->hdr->slots_off);
	kt->segs = (struct ddtx_shm_seg *)((uint8_t *)region + kt->hdr->segs_off);
	kt->mask = nslots - 1;
	kt->capacity = capacity;
	kt->next_key = 1;
	return 0;
}

static void seq_write_begin(struct ddtx_shm_key_slot *s)
{
	uint64_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, v + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void seq_write_end(struct ddtx_shm_key_slot *s)
{
	uint64_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, v + 1, memory_order_release);
}

void ddtx_shm_keytab_fini(struct ddtx_shm_keytab *kt)
{
	/* Peers may keep the table mapped after we unlink it: leave no usable key behind. */
	for (uint64_t i = 0; kt->live && kt->slots && i <= kt->mask; i++) {
		struct ddtx_shm_key_slot *s = &kt->slots[i];
		if (s->state != DDTX_SHM_KEY_USED)
			continue;
		seq_write_begin(s);
		s->state = DDTX_SHM_KEY_TOMB;
		s->access = 0;
		seq_write_end(s);
		kt->live--;
	}
	if (kt->pool) {
		free(kt->pool->v);
		free(kt->pool);
	}
	kt->pool = NULL;
}

/* The slot freed last that is still free, else the next free one from the cursor. */
static uint64_t pick_slot(struct ddtx_shm_keytab *kt)
{
	while (kt->nfreed) {
		uint64_t i = kt->freed[--kt->nfreed];
		if (kt->slots[i].state != DDTX_SHM_KEY_USED)
			return i;
	}
	for (uint64_t n = 0; n <= kt->mask; n++) {
		uint64_t i = kt->cursor;
		kt->cursor = (kt->cursor + 1) & kt->mask;
		if (kt->slots[i].state != DDTX_SHM_KEY_USED)
			return i;
	}
	return UINT64_MAX;
}

static void remember_freed(struct ddtx_shm_keytab *kt, uint32_t slot)
{
	if (kt->nfreed == DDTX_SHM_KEYTAB_FREED) {
		memmove(kt->freed, kt->freed + 1, (DDTX_SHM_KEYTAB_FREED - 1) * sizeof(kt->freed[0]));
		kt->nfreed--;
	}
	kt->freed[kt->nfreed++] = slot;
}

/* Owner-side lookup (no seqlock needed: we are the only writer). */
static bool keytab_find(struct ddtx_shm_keytab *kt, uint32_t space, uint64_t key,
			uint64_t *slot_idx, int64_t *free_idx)
{
	uint64_t i = key_hash(space, key) & kt->mask;
	int64_t tomb = -1;

	for (uint64_t n = 0; n <= kt->mask; n++, i = (i + 1) & kt->mask) {
		struct ddtx_shm_key_slot *s = &kt->slots[i];
		if (s->state == DDTX_SHM_KEY_EMPTY) {
			if (free_idx)
				*free_idx = tomb >= 0 ? tomb : (int64_t)i;
			return false;
		}
		if (s->state == DDTX_SHM_KEY_TOMB) {
			if (tomb < 0)
				tomb = (int64_t)i;
		} else if (s->space == space && s->key == key) {
			*slot_idx = i;
			return true;
		}
		/* Only a displaced key lies past its hash's slot: a lookup ends there without one
		 * (chosen keys fill the first slots, a probe on would cross all of them). */
		if (!free_idx && !kt->displaced)
			return false;
	}
	if (free_idx)
		*free_idx = tomb;
	return false;
}

/*
 * Tombstones cleared where no probe chain needs them.  Without this, key churn (mkeys mapped
 * and unmapped for every window set) left no empty slot at all, and every lookup and insert
 * scanned the whole table: 36% of a UMR property run's samples in keytab_find, 11 s instead
 * of 6.3 s for 40 cases with 256 keys.  A slot is needed while some live key sits past its
 * home position with the slot between the two, since readers probe from the home until they
 * find the key or an empty slot; every other tombstone can become empty, even while other
 * processes read (the slot changes under its seqlock, and no reader's answer depends on it).
 */
static void sweep_tombs(struct ddtx_shm_keytab *kt)
{
	uint64_t n = kt->mask + 1;
	int32_t *d = calloc(n + 1, sizeof(*d));
	if (!d)
		return; /* only slower lookups */
	for (uint64_t q = 0; q < n; q++) {
		const struct ddtx_shm_key_slot *s = &kt->slots[q];
		if (s->state != DDTX_SHM_KEY_USED)
			continue;
		uint64_t h = key_hash(s->space, s->key) & kt->mask;
		if (h <= q) {
			d[h]++;
			d[q]--;
		} else { /* the chain wraps around the end of the table */
			d[h]++;
			d[n]--;
			d[0]++;
			d[q]--;
		}
	}
	int32_t cover = 0;
	for (uint64_t p = 0; p < n; p++) {
		cover += d[p];
		struct ddtx_shm_key_slot *s = &kt->slots[p];
		if (cover || s->state != DDTX_SHM_KEY_TOMB)
			continue;
		seq_write_begin(s);
		s->state = DDTX_SHM_KEY_EMPTY;
		seq_write_end(s);
		kt->tombs--;
	}
	free(d);
}

int ddtx_shm_keytab_check(struct ddtx_shm_keytab *kt, uint32_t space, uint64_t key,
			  uint64_t addr, uint64_t len, uint32_t access)
{
	uint64_t i;
	if (!keytab_find(kt, space, key, &i, NULL))
		return -FI_EKEYREJECTED;
	const struct ddtx_shm_key_slot *s = &kt->slots[i];
	if ((s->access & access) != access || addr < s->iova || addr - s->iova > s->len ||
	    len > s->len - (addr - s->iova))
		return -FI_EACCES;
	return 0;
}

int ddtx_shm_keytab_insert(struct ddtx_shm_keytab *kt, const struct iovec *iov, size_t count,
			   uint32_t space, const uint64_t *requested_key, uint64_t iova,
			   uint64_t len, uint32_t access, uint64_t *key_out, uint32_t *slot_out)
{
	uint64_t key, seg_off, found;
	int64_t free_idx = -1;
	int ret;

	if (kt->live >= kt->capacity) {
		DDTX_WARN(FI_LOG_CORE, "shm: key table full (%llu keys); raise FI_DDTX_SHM_KEYS\n",
			  (unsigned long long)kt->capacity);
		return -FI_ENOSPC;
	}
	if (kt->tombs > (kt->mask + 1) / 4)
		sweep_tombs(kt);
	if (requested_key) {
		key = *requested_key;
		if (keytab_find(kt, space, key, &found, &free_idx)) {
			DDTX_INFO(FI_LOG_CORE, "shm: key %#llx already in use in space %u\n",
				  (unsigned long long)key, space);
			return -FI_ENOKEY;
		}
	} else {
		uint64_t slot = pick_slot(kt);
		if (slot == UINT64_MAX) {
			DDTX_WARN(FI_LOG_CORE, "shm: key table has no free slot\n");
			return -FI_ENOSPC;
		}
		/* Its probe starts at the free slot itself: found at once, or a requested key's. */
		do {
			key = key_for_slot(kt, space, slot);
		} while (keytab_find(kt, space, key, &found, NULL));
		free_idx = (int64_t)slot;
	}
	if (free_idx < 0) {
		DDTX_WARN(FI_LOG_CORE, "shm: key table has no free slot\n");
		return -FI_ENOSPC;
	}
	ret = segpool_alloc(kt->pool, count, &seg_off);
	if (ret) {
		DDTX_WARN(FI_LOG_CORE, "shm: key segment pool exhausted (%zu segments wanted); "
			  "register fewer or larger regions\n", count);
		return ret;
	}

	struct ddtx_shm_key_slot *s = &kt->slots[free_idx];
	if (s->state == DDTX_SHM_KEY_TOMB)
		kt->tombs--;
	if ((key_hash(space, key) & kt->mask) != (uint64_t)free_idx)
		kt->displaced++;
	seq_write_begin(s);
	s->space = space;
	s->key = key;
	s->iova = iova;
	s->len = len;
	s->access = access;
	s->nseg = (uint32_t)count;
	s->seg_off = seg_off;
	s->gen++;
	for (size_t i = 0; i < count; i++) {
		kt->segs[seg_off + i].addr = (uint64_t)(uintptr_t)iov[i].iov_base;
		kt->segs[seg_off + i].len = iov[i].iov_len;
	}
	s->state = DDTX_SHM_KEY_USED;
	seq_write_end(s);

	kt->live++;
	*key_out = key;
	*slot_out = (uint32_t)free_idx;
	return 0;
}

int ddtx_shm_keytab_remove(struct ddtx_shm_keytab *kt, uint32_t slot, uint32_t space,
			   uint64_t key)
{
	struct ddtx_shm_key_slot *s;
	uint64_t seg_off, i;
	uint32_t nseg;

	if (slot > kt->mask)
		return -FI_EINVAL;
	s = &kt->slots[slot];
	if (s->state != DDTX_SHM_KEY_USED || s->space != space || s->key != key) {
		DDTX_WARN(FI_LOG_CORE, "shm: deregistering key %#llx that is not registered\n",
			  (unsigned long long)key);
		return -FI_EINVAL;
	}
	seg_off = s->seg_off;
	nseg = s->nseg;
	if ((key_hash(space, key) & kt->mask) != slot)
		kt->displaced--;
	/* Only a key away from its hash's slot probes past others: without one, no tombstone. */
	bool tomb = kt->displaced > 0;
	seq_write_begin(s);
	s->state = tomb ? DDTX_SHM_KEY_TOMB : DDTX_SHM_KEY_EMPTY;
	s->nseg = 0;
	s->len = 0;
	s->access = 0;
	seq_write_end(s);
	segpool_free(kt->pool, seg_off, nseg);
	kt->live--;
	remember_freed(kt, slot);
	if (!tomb)
		return 0;
	kt->tombs++;

	/* A tombstone followed by an empty slot ends no probe chain: turn the run back to empty. */
	i = slot;
	if (kt->slots[(i + 1) & kt->mask].state == DDTX_SHM_KEY_EMPTY) {
		for (uint64_t n = 0; n <= kt->mask; n++, i = (i - 1) & kt->mask) {
			s = &kt->slots[i];
			if (s->state != DDTX_SHM_KEY_TOMB)
				break;
			seq_write_begin(s);
			s->state = DDTX_SHM_KEY_EMPTY;
			seq_write_end(s);
			kt->tombs--;
		}
	}
	return 0;
}

/* ---- remote (reader) side ---- */
int ddtx_shm_remote_keytab_attach(struct ddtx_shm_remote_keytab *rk, const void *region,
				  size_t region_size, uint32_t pid, uint64_t start_time)
{
	const struct ddtx_shm_dom_hdr *h = region;
	uint64_t nslots, nsegs, slots_off, segs_off;

	if (region_size < sizeof(*h))
		goto bad;
	nslots = READ_ONCE(h->nslots);
	nsegs = READ_ONCE(h->nsegs);
	slots_off = READ_ONCE(h->slots_off);
	segs_off = READ_ONCE(h->segs_off);
	if (READ_ONCE(h->r.magic) != DDTX_SHM_DOM_MAGIC ||
	    READ_ONCE(h->r.version) != DDTX_SHM_VERSION || READ_ONCE(h->r.pid) != pid ||
	    (start_time && READ_ONCE(h->r.start_time) != start_time))
		goto bad;
	if (!nslots || (nslots & (nslots - 1)) || nslots > DDTX_SHM_MAX_KEY_SLOTS ||
	    nsegs > DDTX_SHM_MAX_KEY_SEGS || slots_off < sizeof(*h) || (slots_off & 63) ||
	    (segs_off & 7) || slots_off > region_size ||
	    nslots * sizeof(struct ddtx_shm_key_slot) > region_size - slots_off ||
	    segs_off > region_size || nsegs * sizeof(struct ddtx_shm_seg) > region_size - segs_off)
		goto bad;
	rk->slots = (const struct ddtx_shm_key_slot *)((const uint8_t *)region + slots_off);
	rk->segs = (const struct ddtx_shm_seg *)((const uint8_t *)region + segs_off);
	rk->mask = nslots - 1;
	rk->nsegs = nsegs;
	return 0;
bad:
	DDTX_WARN(FI_LOG_CORE, "shm: peer %u published a malformed key table header\n", pid);
	return -FI_EIO;
}

static int riov_push(struct iovec **riov, size_t *cap, size_t *cnt, uint64_t addr, uint64_t len)
{
	if (*cnt == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct iovec *v = realloc(*riov, ncap * sizeof(*v));
		if (!v)
			return -FI_ENOMEM;
		*riov = v;
		*cap = ncap;
	}
	(*riov)[*cnt].iov_base = (void *)(uintptr_t)addr;
	(*riov)[*cnt].iov_len = (size_t)len;
	(*cnt)++;
	return 0;
}

/*
 * Inspect one slot under its seqlock.  Returns 1 if it holds (space, key) and *status is the
 * translation result, 0 if it does not (with *empty set for an empty slot), <0 on a stuck or
 * failed snapshot.
 */
static int remote_slot(const struct ddtx_shm_remote_keytab *rk, const struct ddtx_shm_key_slot *s,
		       uint32_t space, uint64_t key, uint64_t raddr, size_t len, uint32_t need,
		       struct iovec **riov, size_t *riov_cap, size_t *riov_cnt, bool *empty,
		       int *status)
{
	size_t base_cnt = *riov_cnt;

	for (int spin = 0; spin < SEQ_SPIN_MAX; spin++) {
		uint64_t s1 = atomic_load_explicit((_Atomic uint64_t *)&s->seq, memory_order_acquire);
		int st = 0, match = 0;

		*riov_cnt = base_cnt;
		if (s1 & 1) {
			if (spin > 64)
				sched_yield();
			continue;
		}
		uint32_t state = READ_ONCE(s->state);
		*empty = state == DDTX_SHM_KEY_EMPTY;
		if (state == DDTX_SHM_KEY_USED && READ_ONCE(s->space) == space &&
		    READ_ONCE(s->key) == key) {
			uint64_t iova = READ_ONCE(s->iova), klen = READ_ONCE(s->len);
			uint32_t access = READ_ONCE(s->access), nseg = READ_ONCE(s->nseg);
			uint64_t seg_off = READ_ONCE(s->seg_off);
			uint64_t off = raddr - iova;

			match = 1;
			if ((access & need) != need) {
				st = -FI_EACCES;
			} else if (raddr < iova || off > klen || len > klen - off) {
				st = -FI_EACCES;
			} else if (nseg > rk->nsegs || seg_off > rk->nsegs - nseg) {
				st = -FI_EIO;
			} else {
				/* Walk the segments to [off, off + len). */
				uint64_t pos = 0, want = off, end = off + len;
				for (uint32_t j = 0; j < nseg && want < end && !st; j++) {
					uint64_t sa = READ_ONCE(rk->segs[seg_off + j].addr);
					uint64_t sl = READ_ONCE(rk->segs[seg_off + j].len);
					if (sl > UINT64_MAX - pos || sl > UINT64_MAX - sa) {
						st = -FI_EIO;
						break;
					}
					if (want < pos + sl) {
						uint64_t skip = want - pos;
						uint64_t take = DDTX_MIN(sl - skip, end - want);
						st = riov_push(riov, riov_cap, riov_cnt, sa + skip, take);
						want += take;
					}
					pos += sl;
				}
				if (!st && want < end)
					st = -FI_EIO;        /* segments shorter than the key */
			}
		}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit((_Atomic uint64_t *)&s->seq, memory_order_relaxed) != s1)
			continue;
		if (st == -FI_EIO)
			DDTX_WARN(FI_LOG_EP_DATA, "shm: peer key %#llx has inconsistent segments\n",
				  (unsigned long long)key);
		*status = st;
		return match;
	}
	*riov_cnt = base_cnt;
	DDTX_WARN(FI_LOG_EP_DATA, "shm: peer key table slot stays locked; peer broken?\n");
	return -FI_EIO;
}

int ddtx_shm_remote_keytab_translate(const struct ddtx_shm_remote_keytab *rk, uint32_t space,
				     uint64_t key, uint64_t raddr, size_t len, uint32_t need,
				     struct iovec **riov, size_t *riov_cap, size_t *riov_cnt)
{
	uint64_t i = key_hash(space, key) & rk->mask;

	for (uint64_t n = 0; n <= rk->mask; n++, i = (i + 1) & rk->mask) {
		bool empty = false;
		int status = 0;
		int ret = remote_slot(rk, &rk->slots[i], space, key, raddr, len, need, riov,
				      riov_cap, riov_cnt, &empty, &status);
		if (ret < 0)
			return ret;
		if (ret == 1)
			return status;
		if (empty)
			break;
	}
	return -FI_EKEYREJECTED;
}
