/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vector.  Both FI_AV_TABLE and FI_AV_MAP hand out the entry index as fi_addr_t
 * (map addresses are opaque, so an index is a valid choice).  Removed entries are never
 * reused: a stale fi_addr then fails cleanly instead of reaching a different peer.  A reverse
 * hash (blob -> fi_addr) serves FI_SOURCE.  Everything runs under the domain lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/name.h"
#include "common/settings.h"
#include "core/av.h"
#include "core/eq.h"
#include "core/nosys.h"

#define AV_MIN_CAPACITY 64

static bool entry_matches(const struct ddtx_av_entry *e, const void *addr, size_t len)
{
	return e->valid && e->addr_len == len && memcmp(e->addr, addr, len) == 0;
}

static bool entry_hash(const void *owner, uint32_t pos, uint64_t *hash)
{
	const struct ddtx_av_entry *e = &((const struct ddtx_av *)owner)->entries[pos];
	if (!e->valid)
		return false;
	*hash = ddtx_hash_bytes(e->addr, e->addr_len);
	return true;
}

fi_addr_t ddtx_av_reverse(struct ddtx_av *av, const void *addr, size_t len)
{
	uint32_t cursor;

	if (!av || !addr)
		return FI_ADDR_NOTAVAIL;
	for (uint32_t pos = ddtx_hindex_first(&av->index, ddtx_hash_bytes(addr, len), &cursor);
	     pos != DDTX_HINDEX_END; pos = ddtx_hindex_next(&av->index, &cursor))
		if (entry_matches(&av->entries[pos], addr, len))
			return pos;
	return FI_ADDR_NOTAVAIL;
}

const struct ddtx_av_entry *ddtx_av_get(struct ddtx_av *av, fi_addr_t addr)
{
	if (!av || addr >= av->count || !av->entries[addr].valid)
		return NULL;
	return &av->entries[addr];
}

static int av_reserve(struct ddtx_av *av, size_t n)
{
	size_t cap = av->capacity;
	struct ddtx_av_entry *e;

	if (av->count + n > UINT32_MAX - 1)
		return -FI_ENOMEM;
	while (cap < av->count + n)
		cap = cap ? 2 * cap : AV_MIN_CAPACITY;
	if (cap != av->capacity) {
		e = realloc(av->entries, cap * sizeof(*e));
		if (!e)
			return -FI_ENOMEM;
		av->entries = e;
		av->capacity = cap;
	}
	return ddtx_hindex_reserve(&av->index, (uint32_t)(av->count + n), (uint32_t)av->count,
				   entry_hash, av, false);
}

/* Insert one blob; an address already present keeps its fi_addr. */
static int av_insert_one(struct ddtx_av *av, const uint8_t *blob, fi_addr_t *out)
{
	fi_addr_t fa = ddtx_av_reverse(av, blob, av->addrlen);
	struct ddtx_av_entry *e;

	if (fa == FI_ADDR_NOTAVAIL) {
		if (av_reserve(av, 1))
			return -FI_ENOMEM;
		fa = av->count++;
		e = &av->entries[fa];
		e->valid = true;
		e->addr_len = av->addrlen;
		memcpy(e->addr, blob, av->addrlen);
		ddtx_hindex_add(&av->index, ddtx_hash_bytes(e->addr, e->addr_len), (uint32_t)fa);
	}
	*out = fa;
	return 0;
}

/*
 * A service name (common/name.h, what fi_getinfo returns as dest_addr) becomes the concrete
 * address of the endpoint bound to it, waiting up to FI_DDTX_RESOLVE_MS for one; any other
 * blob is kept as it is.
 */
static int av_resolve(struct ddtx_av *av, const uint8_t **blob, uint8_t *buf, size_t buflen)
{
	struct ddtx_name_addr name;
	size_t len = buflen;
	int ret;

	if (!ddtx_name_is(*blob, av->addrlen))
		return 0;
	ddtx_name_load(&name, *blob, av->addrlen);
	ret = ddtx_proto_name_resolve(av->domain->proto, &name, ddtx_settings.resolve_ms, buf,
				      &len);
	if (!ret && len != av->addrlen)
		ret = -FI_EINVAL;
	if (ret) {
		DDTX_WARN(FI_LOG_AV, "fi_av_insert: service %s does not resolve: %s\n",
			  name.service, fi_strerror(-ret));
		return ret;
	}
	*blob = buf;
	return 0;
}

/*
 * A refused address still takes the index it would have had, as an invalid entry: with
 * FI_AV_TABLE an application that passed fi_addr == NULL counts on the i-th address being at
 * base + i, and a refusal that shifted the later ones would send their traffic to the wrong
 * peers.  The hole fails cleanly instead (fi_av_lookup and sends to it: -FI_EINVAL).
 */
static int av_insert_hole(struct ddtx_av *av, fi_addr_t *out)
{
	struct ddtx_av_entry *e;

	if (av_reserve(av, 1))
		return -FI_ENOMEM;
	e = &av->entries[av->count];
	e->valid = false;
	e->addr_len = 0;
	av->count++;
	*out = FI_ADDR_NOTAVAIL;
	return 0;
}

/*
 * fi_av(3), synchronous insertion: returns how many addresses were inserted; a refused one gets
 * FI_ADDR_NOTAVAIL in fi_addr and, with FI_SYNC_ERR, its error in the int array passed as
 * context (0 for the others).  A service name is resolved first (-FI_EADDRNOTAVAIL when no
 * live endpoint binds it in FI_DDTX_RESOLVE_MS).  An address is refused when the wire does not
 * recognise its format (-FI_EINVAL), so garbage fails here rather than at the first send.  After running out
 * of memory the remaining addresses are not tried (-FI_ECANCELED).  ddtx AVs have no FI_EVENT
 * mode (fi_av_open refuses the flag, fi_av_bind is -FI_ENOSYS), so there is no event queue to
 * report to.
 */
static int av_insert(struct fid_av *fid, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct ddtx_av *av = ddtx_container_of(fid, struct ddtx_av, fid);
	int *sync_err = (flags & FI_SYNC_ERR) ? context : NULL;
	size_t i = 0, done = 0;
	int ret = 0;

	if (!addr && count) {
		DDTX_WARN(FI_LOG_AV, "fi_av_insert: NULL address array\n");
		return -FI_EINVAL;
	}
	if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR)) {
		DDTX_WARN(FI_LOG_AV, "fi_av_insert: unsupported flags 0x%llx\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if ((flags & FI_SYNC_ERR) && !context && count) {
		DDTX_WARN(FI_LOG_AV, "fi_av_insert: FI_SYNC_ERR without an error array\n");
		return -FI_EINVAL;
	}
	ddtx_domain_lock(av->domain);
	for (; i < count; i++) {
		const uint8_t *blob = (const uint8_t *)addr + i * av->addrlen;
		fi_addr_t fa = FI_ADDR_NOTAVAIL;
		uint8_t buf[sizeof(av->entries[0].addr)];
		int err = av_resolve(av, &blob, buf, sizeof(buf));

		if (!err)
			err = ddtx_proto_addr_check(av->domain->proto, blob, av->addrlen);

		if (err) {
			ret = av_insert_hole(av, &fa);
			if (!ret)
				DDTX_WARN(FI_LOG_AV, "fi_av_insert: address %zu of %zu is not a "
					  "valid address: %s\n", i, count, fi_strerror(-err));
		} else {
			ret = av_insert_one(av, blob, &fa);
			if (!ret)
				done++;
		}
		if (ret)
			break;
		if (fi_addr)
			fi_addr[i] = fa;
		if (sync_err)
			sync_err[i] = err;
	}
	ddtx_domain_unlock(av->domain);
	if (i < count) {
		DDTX_WARN(FI_LOG_AV, "fi_av_insert: out of memory after %zu of %zu\n", i, count);
		for (size_t j = i; j < count; j++) {
			if (fi_addr)
				fi_addr[j] = FI_ADDR_NOTAVAIL;
			if (sync_err)
				sync_err[j] = j == i ? ret : -FI_ECANCELED;
		}
	}
	return (int)done;
}

/*
 * node + service: the endpoint bound to service on node.  Names of the AV's form: a wire with
 * short names (shm) reaches this host only; long names carry node (common/name.h).
 */
static int av_insertsvc(struct fid_av *fid, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct ddtx_av *av = ddtx_container_of(fid, struct ddtx_av, fid);
	struct ddtx_name_addr name;
	bool with_node = av->addrlen == DDTX_NAME_NODE_LEN;
	int ret = !service ? -FI_EINVAL
		  : with_node ? ddtx_name_build_node(&name, node, service)
			      : ddtx_name_build(&name, service);

	if (ret || !name.service[0]) {
		DDTX_WARN(FI_LOG_AV, "fi_av_insertsvc: invalid service, or node does not "
			  "resolve\n");
		return ret == -FI_ENODATA ? -FI_EADDRNOTAVAIL : -FI_EINVAL;
	}
	if (!with_node && !ddtx_node_is_local(node)) {
		DDTX_WARN(FI_LOG_AV, "fi_av_insertsvc: %s is not this host (the shm wire reaches "
			  "only this host)\n", node);
		return -FI_EADDRNOTAVAIL;
	}
	return av_insert(fid, &name, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr, uint64_t flags,
			void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct ddtx_av *av = ddtx_container_of(fid, struct ddtx_av, fid);
	int ret = 0;

	if ((!fi_addr && count) || flags)
		return flags ? -FI_EBADFLAGS : -FI_EINVAL;
	ddtx_domain_lock(av->domain);
	/* All or nothing: validate first so a bad address leaves the AV untouched. */
	for (size_t i = 0; i < count; i++)
		if (!ddtx_av_get(av, fi_addr[i]))
			ret = -FI_EINVAL;
	if (!ret && count) {
		for (size_t i = 0; i < count; i++)
			av->entries[fi_addr[i]].valid = false;
		/* endpoints drop their cached peers (they read it without the AV's lock) */
		__atomic_fetch_add(&av->generation, 1, __ATOMIC_RELAXED);
		ret = ddtx_hindex_reserve(&av->index, (uint32_t)av->count, (uint32_t)av->count,
					  entry_hash, av, true);
	}
	ddtx_domain_unlock(av->domain);
	if (ret == -FI_EINVAL)
		DDTX_WARN(FI_LOG_AV, "fi_av_remove: invalid fi_addr\n");
	return ret;
}

static int av_lookup(struct fid_av *fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct ddtx_av *av = ddtx_container_of(fid, struct ddtx_av, fid);
	const struct ddtx_av_entry *e;
	int ret = 0;

	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	ddtx_domain_lock(av->domain);
	e = ddtx_av_get(av, fi_addr);
	if (e) {
		/* Truncate to the caller's buffer but report the real length. */
		memcpy(addr, e->addr, DDTX_MIN(*addrlen, e->addr_len));
		*addrlen = e->addr_len;
	} else {
		ret = -FI_EINVAL;
	}
	ddtx_domain_unlock(av->domain);
	return ret;
}

static const char *av_straddr(struct fid_av *fid, const void *addr, char *buf, size_t *len)
{
	struct ddtx_av *av = ddtx_container_of(fid, struct ddtx_av, fid);
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = addr;
	size_t need = 2 * av->addrlen + 1, n;

	if (!addr || !buf || !len)
		return NULL;
	if (ddtx_name_is(addr, av->addrlen)) {
		struct ddtx_name_addr name;

		ddtx_name_load(&name, addr, av->addrlen);
		ddtx_name_str(&name, buf, *len, len);
		return buf;
	}
	n = *len < need ? (*len ? (*len - 1) / 2 : 0) : av->addrlen;
	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = hex[p[i] >> 4];
		buf[2 * i + 1] = hex[p[i] & 0xf];
	}
	if (*len)
		buf[2 * n] = '\0';
	*len = need;
	return buf;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **av_set,
		  void *context)
{
	return -FI_ENOSYS;
}

static int av_close(struct fid *fid)
{
	struct ddtx_av *av = ddtx_container_of(fid, struct ddtx_av, fid.fid);

	if (atomic_load(&av->ref) > 0) {
		DDTX_WARN(FI_LOG_AV, "AV still bound to %d endpoints\n", atomic_load(&av->ref));
		return -FI_EBUSY;
	}
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av->entries);
	ddtx_hindex_fini(&av->index);
	free(av);
	return 0;
}

static struct fi_ops av_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = ddtx_nosys_bind,
	.control = ddtx_nosys_control,
	.ops_open = ddtx_nosys_ops_open,
};

struct ddtx_av *ddtx_av_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_AV || fid->ops != &av_fid_ops)
		return NULL;
	return ddtx_container_of(fid, struct ddtx_av, fid.fid);
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set,
};

static int av_check_attr(struct ddtx_domain *domain, const struct fi_av_attr *attr,
			 enum fi_av_type *type)
{
	if (attr->name) {
		/* Named (shared) AVs are not supported; MPICH relies on this open failing. */
		DDTX_INFO(FI_LOG_AV, "fi_av_open: named AV %s not supported\n", attr->name);
		return -FI_ENOSYS;
	}
	if (attr->rx_ctx_bits) {
		DDTX_WARN(FI_LOG_AV, "fi_av_open: rx_ctx_bits must be 0\n");
		return -FI_EINVAL;
	}
	if (attr->flags & ~(uint64_t)FI_SYMMETRIC) {
		DDTX_WARN(FI_LOG_AV, "fi_av_open: unsupported flags 0x%llx\n",
			  (unsigned long long)attr->flags);
		return -FI_EINVAL;
	}
	*type = attr->type;
	if (*type == FI_AV_UNSPEC && domain->info->domain_attr)
		*type = domain->info->domain_attr->av_type;
	if (*type == FI_AV_UNSPEC)
		*type = FI_AV_TABLE;
	if (*type != FI_AV_TABLE && *type != FI_AV_MAP) {
		DDTX_WARN(FI_LOG_AV, "fi_av_open: AV type %d not supported\n", attr->type);
		return -FI_EINVAL;
	}
	return 0;
}

int ddtx_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr, struct fid_av **avp,
		 void *context)
{
	struct ddtx_domain *domain = ddtx_domain_of(domain_fid);
	size_t addrlen;
	enum fi_av_type type;
	struct ddtx_av *av;
	int ret;

	if (!domain || !attr || !avp)
		return -FI_EINVAL;
	ret = av_check_attr(domain, attr, &type);
	if (ret)
		return ret;
	addrlen = ddtx_proto_addr_len(domain->proto);
	if (!addrlen || addrlen > sizeof(av->entries->addr)) {
		DDTX_WARN(FI_LOG_AV, "fi_av_open: wire address length unusable\n");
		return -FI_EINVAL;
	}
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->domain = domain;
	av->type = type;
	av->addrlen = addrlen;
	atomic_init(&av->ref, 0);
	if (av_reserve(av, DDTX_MAX(attr->count, (size_t)1))) {
		free(av);
		return -FI_ENOMEM;
	}
	av->fid.fid.fclass = FI_CLASS_AV;
	av->fid.fid.context = context;
	av->fid.fid.ops = &av_fid_ops;
	av->fid.ops = &av_ops;
	atomic_fetch_add(&domain->ref, 1);
	*avp = &av->fid;
	return 0;
}
