/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The peer table of a shm endpoint: dense handles, a uid index, lazy mapping of a peer's
 * endpoint region (read-write: its receive ring) and domain region (read-only: its key table),
 * and liveness (alive flag, process existence, pid reuse through the start time).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shm.h"

#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))

int ddtx_shm_addr_check(const void *addr, size_t len)
{
	struct ddtx_shm_addr a;

	if (!addr || len != DDTX_SHM_ADDR_LEN) {
		DDTX_WARN(FI_LOG_CORE, "shm: address of %zu bytes, expected %zu\n", len,
			  DDTX_SHM_ADDR_LEN);
		return -FI_EINVAL;
	}
	memcpy(&a, addr, sizeof(a));
	/* Reserved fields are zero in every address this version hands out. */
	if (a.magic != DDTX_SHM_ADDR_MAGIC || a.version != DDTX_SHM_VERSION || !a.pid ||
	    a.pid > INT32_MAX || !a.uid || a.reserved || a.reserved2) {
		DDTX_WARN(FI_LOG_CORE, "shm: malformed address (magic %#x version %u pid %u)\n",
			  a.magic, a.version, a.pid);
		return -FI_EINVAL;
	}
	return 0;
}

void ddtx_shm_peers_init(struct ddtx_shm_peers *pt)
{
	memset(pt, 0, sizeof(*pt));
}

static void peer_unmap(struct ddtx_shm_peer *p)
{
	ddtx_shm_region_unmap(&p->ep_map);
	ddtx_shm_region_unmap(&p->dom_map);
	p->ep_hdr = NULL;
	p->mapped = false;
}

void ddtx_shm_peers_fini(struct ddtx_shm_peers *pt)
{
	for (uint32_t i = 0; i < pt->count; i++)
		peer_unmap(&pt->v[i]);
	free(pt->v);
	ddtx_hindex_fini(&pt->index);
	memset(pt, 0, sizeof(*pt));
}

static bool peer_hash(const void *owner, uint32_t pos, uint64_t *hash)
{
	*hash = ddtx_hash_u64(((const struct ddtx_shm_peers *)owner)->v[pos].addr.uid);
	return true;
}

int ddtx_shm_peers_find(const struct ddtx_shm_peers *pt, const struct ddtx_shm_addr *addr,
			ddtx_peer_t *out)
{
	uint32_t cursor;
	for (uint32_t i = ddtx_hindex_first(&pt->index, ddtx_hash_u64(addr->uid), &cursor);
	     i != DDTX_HINDEX_END; i = ddtx_hindex_next(&pt->index, &cursor)) {
		/* The whole blob is the identity: a forged blob that copies a real uid becomes a
		 * peer of its own and never shadows the real one. */
		if (!memcmp(&pt->v[i].addr, addr, sizeof(*addr))) {
			*out = i;
			return 0;
		}
	}
	return -FI_ENOENT;
}

int ddtx_shm_peers_insert(struct ddtx_shm_peers *pt, const struct ddtx_shm_addr *addr,
			  ddtx_peer_t *out)
{
	uint64_t hash = ddtx_hash_u64(addr->uid);
	int ret;

	if (!ddtx_shm_peers_find(pt, addr, out))
		return 0;
	if (pt->count >= UINT32_MAX - 1)
		return -FI_ENOSPC;
	ret = ddtx_hindex_reserve(&pt->index, pt->count + 1, pt->count, peer_hash, pt, false);
	if (ret)
		return ret;
	if (pt->count == pt->cap) {
		uint32_t ncap = pt->cap ? 2 * pt->cap : 16;
		struct ddtx_shm_peer *v = realloc(pt->v, (size_t)ncap * sizeof(*v));
		if (!v)
			return -FI_ENOMEM;
		pt->v = v;
		pt->cap = ncap;
	}
	struct ddtx_shm_peer *p = &pt->v[pt->count];
	memset(p, 0, sizeof(*p));
	p->addr = *addr;
	ddtx_hindex_add(&pt->index, hash, pt->count);
	*out = pt->count++;
	DDTX_DBG(FI_LOG_CORE, "shm: peer %u is pid %u uid %#llx\n", *out, addr->pid,
		 (unsigned long long)addr->uid);
	return 0;
}

struct ddtx_shm_peer *ddtx_shm_peers_get(struct ddtx_shm_peers *pt, ddtx_peer_t peer)
{
	return peer < pt->count ? &pt->v[peer] : NULL;
}

void ddtx_shm_peer_mark_dead(struct ddtx_shm_peer *p, const char *why)
{
	if (p->dead)
		return;
	p->dead = true;
	DDTX_INFO(FI_LOG_CORE, "shm: peer pid %u uid %#llx is gone: %s\n", p->addr.pid,
		  (unsigned long long)p->addr.uid, why);
}

/* Validate the peer's endpoint header and copy its ring geometry; the domain name into dom. */
static int check_ep_region(struct ddtx_shm_peer *p, char *dom)
{
	const struct ddtx_shm_ep_hdr *h = p->ep_hdr;
	size_t size = p->ep_map.size;
	uint32_t nslots = READ_ONCE(h->ring_slots), slot_size = READ_ONCE(h->slot_size);
	uint64_t ring_off = READ_ONCE(h->ring_off), stamp_off = READ_ONCE(h->stamp_off);

	if (READ_ONCE(h->r.magic) != DDTX_SHM_EP_MAGIC ||
	    READ_ONCE(h->r.version) != DDTX_SHM_VERSION) {
		DDTX_WARN(FI_LOG_CORE, "shm: peer region has a bad magic or version\n");
		return -FI_EIO;
	}
	if (READ_ONCE(h->r.pid) != p->addr.pid || READ_ONCE(h->r.uid) != p->addr.uid ||
	    READ_ONCE(h->r.start_time) != p->addr.start_time) {
		DDTX_WARN(FI_LOG_CORE, "shm: peer region does not belong to the address\n");
		return -FI_EIO;
	}
	if (!nslots || (nslots & (nslots - 1)) || nslots > DDTX_SHM_MAX_RING_SLOTS ||
	    slot_size <= DDTX_SHM_SLOT_HDR || (slot_size & 63) ||
	    slot_size > DDTX_SHM_MAX_SLOT_SIZE || ring_off < sizeof(*h) || (ring_off & 63) ||
	    ring_off > size || (uint64_t)nslots * slot_size > size - ring_off ||
	    stamp_off < sizeof(*h) || (stamp_off & 7) || stamp_off > ring_off ||
	    (uint64_t)nslots * sizeof(uint64_t) > ring_off - stamp_off) {
		DDTX_WARN(FI_LOG_CORE, "shm: peer ring geometry is malformed (%u x %u at %llu, "
			  "stamps at %llu)\n", nslots, slot_size, (unsigned long long)ring_off,
			  (unsigned long long)stamp_off);
		return -FI_EIO;
	}
	for (size_t i = 0; i < DDTX_SHM_NAME_MAX; i++)
		dom[i] = READ_ONCE(h->dom_name[i]);
	dom[DDTX_SHM_NAME_MAX - 1] = '\0';
	if (!ddtx_shm_valid_name(dom, DDTX_SHM_NAME_MAX)) {
		DDTX_WARN(FI_LOG_CORE, "shm: peer publishes a malformed domain region name\n");
		return -FI_EIO;
	}
	ddtx_shm_ring_init(&p->ring, p->ep_hdr,
			   (_Atomic uint64_t *)((uint8_t *)p->ep_map.addr + stamp_off),
			   (uint8_t *)p->ep_map.addr + ring_off, nslots, slot_size);
	return 0;
}

int ddtx_shm_peer_map(struct ddtx_shm_peer *p)
{
	char name[DDTX_SHM_NAME_MAX], dom[DDTX_SHM_NAME_MAX];
	int ret;

	if (p->mapped)
		return 0;
	if (p->dead)
		return -FI_EIO;
	ddtx_shm_format_name(name, p->addr.pid, p->addr.rand);
	ret = ddtx_shm_region_map(name, true, sizeof(struct ddtx_shm_ep_hdr), &p->ep_map);
	if (ret) {
		if (ret == -FI_ENOENT || ret == -FI_EINVAL || ret == -FI_EACCES) {
			ddtx_shm_peer_mark_dead(p, "its endpoint region is missing or unusable");
			return -FI_EIO;
		}
		return ret;
	}
	p->ep_hdr = p->ep_map.addr;
	ret = check_ep_region(p, dom);
	if (ret)
		goto dead;
	ddtx_shm_region_touch(&p->ep_map, (size_t)(p->ring.base - (uint8_t *)p->ep_map.addr) +
					  (size_t)p->ring.nslots * p->ring.slot_size, false);
	ret = ddtx_shm_region_map(dom, false, sizeof(struct ddtx_shm_dom_hdr), &p->dom_map);
	if (ret) {
		if (ret != -FI_ENOENT && ret != -FI_EINVAL && ret != -FI_EACCES) {
			peer_unmap(p);
			return ret;
		}
		goto dead;
	}
	ret = ddtx_shm_remote_keytab_attach(&p->keys, p->dom_map.addr, p->dom_map.size,
					    p->addr.pid, p->addr.start_time);
	if (ret)
		goto dead;
	p->mapped = true;
	p->last_check_ns = ddtx_shm_now_ns();
	return 0;
dead:
	peer_unmap(p);
	ddtx_shm_peer_mark_dead(p, "its regions are missing or malformed");
	return -FI_EIO;
}

bool ddtx_shm_peer_check(struct ddtx_shm_peer *p)
{
	if (p->dead)
		return false;
	p->last_check_ns = ddtx_shm_now_ns();
	if (p->mapped && !atomic_load_explicit(&p->ep_hdr->alive, memory_order_acquire)) {
		ddtx_shm_peer_mark_dead(p, "it closed its endpoint");
		return false;
	}
	if (!ddtx_shm_proc_alive(p->addr.pid, p->addr.start_time)) {
		ddtx_shm_peer_mark_dead(p, "its process exited");
		return false;
	}
	return true;
}

int ddtx_shm_peers_admit(struct ddtx_shm_peers *pt, const struct ddtx_shm_addr *addr,
			 ddtx_peer_t *out)
{
	if (!ddtx_shm_peers_find(pt, addr, out))
		return 0;
	if (pt->inbound >= DDTX_SHM_MAX_INBOUND_PEERS)
		return -FI_ENOSPC;
	/* Verified before any state is kept: the address must name a live endpoint whose regions
	 * carry its identity (pid, start time, uid), as when we map a peer to send to it. */
	struct ddtx_shm_peer p;
	memset(&p, 0, sizeof(p));
	p.addr = *addr;
	int ret = ddtx_shm_peer_map(&p);
	if (ret)
		return ret;
	ret = ddtx_shm_peers_insert(pt, addr, out);
	if (ret) {
		peer_unmap(&p);
		return ret;
	}
	pt->v[*out] = p;                         /* the mapping moves into the table */
	pt->inbound++;
	return 0;
}
