/* SPDX-License-Identifier: BSD-2-Clause */
/* The ofi wire's address blob (blob.h): packing and the checks a peer's blob must pass. */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include "wire/ofi/blob.h"

static uint32_t fnv1a(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

uint32_t ddtx_ofi_core_id(const char *prov_name, uint32_t addr_format)
{
	char fmt[16];
	uint32_t h;

	snprintf(fmt, sizeof(fmt), "/%u", addr_format);
	h = fnv1a(fnv1a(2166136261u, prov_name ? prov_name : ""), fmt);
	return h ? h : 1;                  /* 0 means "any core" to unpack */
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

int ddtx_ofi_blob_pack(const struct ddtx_ofi_blob *b, void *out)
{
	uint8_t *p = out;

	if (!b || !out || !b->core_len || b->core_len > DDTX_OFI_CORE_ADDR_MAX)
		return -FI_EINVAL;
	memset(p, 0, DDTX_OFI_BLOB_LEN);
	put32(p, DDTX_OFI_BLOB_MAGIC);
	p[4] = DDTX_OFI_BLOB_VERSION;
	p[5] = b->core_len;
	put32(p + 8, b->core_id);
	put64(p + 12, b->uid);
	memcpy(p + DDTX_OFI_BLOB_HDR, b->core_addr, b->core_len);
	return 0;
}

int ddtx_ofi_blob_unpack(const void *in, size_t len, uint32_t core_id, struct ddtx_ofi_blob *b)
{
	const uint8_t *p = in;
	uint8_t core_len;

	if (!p || !b || len != DDTX_OFI_BLOB_LEN || get32(p) != DDTX_OFI_BLOB_MAGIC ||
	    p[4] != DDTX_OFI_BLOB_VERSION || p[6] || p[7])
		return -FI_EINVAL;
	core_len = p[5];
	if (!core_len || core_len > DDTX_OFI_CORE_ADDR_MAX)
		return -FI_EINVAL;
	for (size_t i = DDTX_OFI_BLOB_HDR + core_len; i < DDTX_OFI_BLOB_LEN; i++)
		if (p[i])
			return -FI_EINVAL;
	memset(b, 0, sizeof(*b));
	b->core_id = get32(p + 8);
	if (core_id && b->core_id != core_id)
		return -FI_EINVAL;
	b->uid = get64(p + 12);
	b->core_len = core_len;
	memcpy(b->core_addr, p + DDTX_OFI_BLOB_HDR, core_len);
	return 0;
}

uint64_t ddtx_ofi_bound_uid(uint32_t core_id, const void *core_addr, size_t len)
{
	const uint8_t *p = core_addr;
	uint64_t h = 14695981039346656037ull;

	for (int i = 0; i < 4; i++)
		h = (h ^ (uint8_t)(core_id >> (8 * i))) * 1099511628211ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h | 1ull << 63;
}

void ddtx_ofi_addr_canon(uint32_t addr_format, void *core_addr, size_t len)
{
	if (addr_format == FI_SOCKADDR_IN && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *in = core_addr;
		memset(in->sin_zero, 0, sizeof(in->sin_zero));
	} else if (addr_format == FI_SOCKADDR_IN6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 *in6 = core_addr;
		in6->sin6_flowinfo = 0;
	}
}

bool ddtx_ofi_addr_fill_ip(uint32_t addr_format, void *core_addr, size_t len, const void *iface,
			   size_t iface_len)
{
	if (!iface)
		return false;
	if (addr_format == FI_SOCKADDR_IN && len >= sizeof(struct sockaddr_in) &&
	    iface_len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *in = core_addr;
		const struct sockaddr_in *at = iface;

		if (in->sin_family != AF_INET || at->sin_family != AF_INET ||
		    in->sin_addr.s_addr != htonl(INADDR_ANY) ||
		    at->sin_addr.s_addr == htonl(INADDR_ANY))
			return false;
		in->sin_addr = at->sin_addr;
		return true;
	}
	if (addr_format == FI_SOCKADDR_IN6 && len >= sizeof(struct sockaddr_in6) &&
	    iface_len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 *in6 = core_addr;
		const struct sockaddr_in6 *at = iface;

		if (in6->sin6_family != AF_INET6 || at->sin6_family != AF_INET6 ||
		    !IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr) ||
		    IN6_IS_ADDR_UNSPECIFIED(&at->sin6_addr))
			return false;
		in6->sin6_addr = at->sin6_addr;
		in6->sin6_scope_id = at->sin6_scope_id;
		return true;
	}
	return false;
}
