/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the verbs wire puts on the network besides payload (pure): the address blob, the
 * message header, the immediate data of a SEND, and the payloads of the key-resolution and RC
 * handshake messages.  Fixed layouts in network byte order, packed field by field; every
 * unpack validates lengths and ranges, so a malformed or foreign blob is refused, never used.
 *
 * Address blob (DDTX_VADDR_LEN = 64 bytes):
 *   0 magic "DXVB"  4 version  5 transport  6 port  7 mtu  8 flags  9 sl  10 lid
 *  12 qpn (24 bits)  16 pid  20 reserved (0)  24 key  32 uid  40 gid[16]  56 reserved (0)
 *
 * Message header (DDTX_VHDR_LEN = 16 bytes):
 *   0 type  1 flags  2 reserved (0)  4 seq  8 src_uid
 *
 * KEY_REQ / KEY_INVAL (16 bytes): 0 space  1..7 zero  8 key
 * KEY_REP (48 bytes): 0 space  1 zero  2 -status (16 bits)  4 rkey  8 access  12 zero  16 key
 *                     24 iova  32 hca_base  40 len
 * CONN_REQ / CONN_REP (16 bytes, after the header and the sender's address blob):
 *   0 rc_qpn  4 psn  8 epoch  12 echo
 */
#include <arpa/inet.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "wire/verbs/verbs_pure.h"
#include "wire/wire.h"

static void put8(uint8_t *p, uint8_t v)
{
	p[0] = v;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- address blob ---- */

static int vaddr_check(const struct ddtx_vaddr *a)
{
	if (a->transport != DDTX_VTRANSPORT_DC && a->transport != DDTX_VTRANSPORT_RC)
		return -FI_EINVAL;
	if (!a->port || a->mtu < 1 || a->mtu > 5 || (a->flags & ~DDTX_VADDR_F_GRH) || a->sl > 15)
		return -FI_EINVAL;
	if (a->qpn > 0xffffff || a->qpn < 2 || !a->uid)
		return -FI_EINVAL;
	if (!a->lid && !(a->flags & DDTX_VADDR_F_GRH))
		return -FI_EINVAL;                /* unreachable: no LID and no GID */
	if ((a->flags & DDTX_VADDR_F_GRH) && all_zero(a->gid, sizeof(a->gid)))
		return -FI_EINVAL;
	return 0;
}

int ddtx_vaddr_pack(const struct ddtx_vaddr *a, void *blob, size_t len)
{
	uint8_t *p = blob;
	int ret;

	if (!a || !blob)
		return -FI_EINVAL;
	if (len < DDTX_VADDR_LEN)
		return -FI_ETOOSMALL;
	ret = vaddr_check(a);
	if (ret)
		return ret;
	memset(p, 0, DDTX_VADDR_LEN);
	put32(p + 0, DDTX_VADDR_MAGIC);
	put8(p + 4, DDTX_VADDR_VERSION);
	put8(p + 5, a->transport);
	put8(p + 6, a->port);
	put8(p + 7, a->mtu);
	put8(p + 8, a->flags);
	put8(p + 9, a->sl);
	put16(p + 10, a->lid);
	put32(p + 12, a->qpn);
	put32(p + 16, a->pid);
	put64(p + 24, a->key);
	put64(p + 32, a->uid);
	memcpy(p + 40, a->gid, 16);
	return 0;
}

int ddtx_vaddr_unpack(const void *blob, size_t len, struct ddtx_vaddr *a)
{
	const uint8_t *p = blob;

	if (!blob || !a || len != DDTX_VADDR_LEN)
		return -FI_EINVAL;
	if (get32(p) != DDTX_VADDR_MAGIC || p[4] != DDTX_VADDR_VERSION ||
	    !all_zero(p + 20, 4) || !all_zero(p + 56, 8))
		return -FI_EINVAL;
	memset(a, 0, sizeof(*a));
	a->transport = p[5];
	a->port = p[6];
	a->mtu = p[7];
	a->flags = p[8];
	a->sl = p[9];
	a->lid = get16(p + 10);
	a->qpn = get32(p + 12);
	a->pid = get32(p + 16);
	a->key = get64(p + 24);
	a->uid = get64(p + 32);
	memcpy(a->gid, p + 40, 16);
	return vaddr_check(a);
}

/* ---- message header ---- */

void ddtx_vhdr_pack(const struct ddtx_vhdr *h, void *buf)
{
	uint8_t *p = buf;

	put8(p + 0, h->type);
	put8(p + 1, h->flags);
	put16(p + 2, 0);
	put32(p + 4, h->seq);
	put64(p + 8, h->src_uid);
}

int ddtx_vhdr_unpack(const void *buf, size_t len, struct ddtx_vhdr *h)
{
	const uint8_t *p = buf;

	if (!buf || !h || len < DDTX_VHDR_LEN)
		return -FI_EINVAL;
	h->type = p[0];
	h->flags = p[1];
	h->reserved = get16(p + 2);
	h->seq = get32(p + 4);
	h->src_uid = get64(p + 8);
	if (!h->type || h->type > DDTX_VMSG_MAX || (h->flags & ~DDTX_VHDR_F_ADDR) ||
	    h->reserved || !h->src_uid)
		return -FI_EINVAL;
	if ((h->flags & DDTX_VHDR_F_ADDR) && len < DDTX_VHDR_LEN + DDTX_VADDR_LEN)
		return -FI_EINVAL;
	return 0;
}

/* ---- immediate data ---- */

uint32_t ddtx_vimm_encode(uint8_t type, uint8_t flags)
{
	uint32_t host = DDTX_VIMM_MARKER << 24 | (uint32_t)(DDTX_VADDR_VERSION << 4 | (type & 15))
			<< 16 | (uint32_t)flags << 8;
	return htonl(host);
}

int ddtx_vimm_decode(uint32_t imm_be, uint8_t *type, uint8_t *flags)
{
	uint32_t host = ntohl(imm_be);
	uint8_t t = (uint8_t)(host >> 16) & 15;

	if (host >> 24 != DDTX_VIMM_MARKER || ((host >> 20) & 15) != DDTX_VADDR_VERSION || !t ||
	    t > DDTX_VMSG_MAX || (host & 0xff))
		return -FI_EINVAL;
	*type = t;
	*flags = (uint8_t)(host >> 8);
	return 0;
}

/* ---- control payloads ---- */

void ddtx_vkey_req_pack(const struct ddtx_vkey_req *r, void *buf)
{
	uint8_t *p = buf;

	memset(p, 0, DDTX_VKEY_REQ_LEN);
	put8(p, r->space);
	put64(p + 8, r->key);
}

static bool space_ok(uint8_t space)
{
	return space == DDTX_KEY_APP || space == DDTX_KEY_INTERNAL;
}

int ddtx_vkey_req_unpack(const void *buf, size_t len, struct ddtx_vkey_req *r)
{
	const uint8_t *p = buf;

	if (!buf || len < DDTX_VKEY_REQ_LEN || !space_ok(p[0]) || !all_zero(p + 1, 7))
		return -FI_EINVAL;
	r->space = p[0];
	r->key = get64(p + 8);
	return 0;
}

void ddtx_vkey_rep_pack(const struct ddtx_vkey_rep *r, void *buf)
{
	uint8_t *p = buf;

	memset(p, 0, DDTX_VKEY_REP_LEN);
	put8(p, r->space);
	put16(p + 2, (uint16_t)-r->status);
	put32(p + 4, r->rkey);
	put32(p + 8, r->access);
	put64(p + 16, r->key);
	put64(p + 24, r->iova);
	put64(p + 32, r->hca_base);
	put64(p + 40, r->len);
	/* bytes 1 and 12..15 stay zero */
}

int ddtx_vkey_rep_unpack(const void *buf, size_t len, struct ddtx_vkey_rep *r)
{
	const uint8_t *p = buf;
	const uint32_t all = DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE | DDTX_ACC_REMOTE_READ |
			     DDTX_ACC_REMOTE_WRITE;

	if (!buf || len < DDTX_VKEY_REP_LEN || !space_ok(p[0]) || p[1] || !all_zero(p + 12, 4))
		return -FI_EINVAL;
	r->space = p[0];
	r->status = -(int32_t)get16(p + 2);
	r->rkey = get32(p + 4);
	r->access = get32(p + 8);
	r->key = get64(p + 16);
	r->iova = get64(p + 24);
	r->hca_base = get64(p + 32);
	r->len = get64(p + 40);
	if (r->access & ~all)
		return -FI_EINVAL;
	if (!r->status && (r->len > UINT64_MAX - r->iova || r->len > UINT64_MAX - r->hca_base))
		return -FI_EINVAL;
	return 0;
}

void ddtx_vconn_pack(const struct ddtx_vconn *c, void *buf)
{
	uint8_t *p = buf;

	put32(p, c->rc_qpn);
	put32(p + 4, c->psn);
	put32(p + 8, c->epoch);
	put32(p + 12, c->echo);
}

int ddtx_vconn_unpack(const void *buf, size_t len, struct ddtx_vconn *c)
{
	const uint8_t *p = buf;

	if (!buf || len < DDTX_VCONN_LEN)
		return -FI_EINVAL;
	c->rc_qpn = get32(p);
	c->psn = get32(p + 4);
	c->epoch = get32(p + 8);
	c->echo = get32(p + 12);
	if (c->rc_qpn < 2 || c->rc_qpn > 0xffffff || c->psn > 0xffffff || !c->epoch)
		return -FI_EINVAL;
	return 0;
}

int ddtx_vkey_translate(const struct ddtx_vkey_rep *k, uint64_t raddr, size_t len,
			uint32_t need_access, uint64_t *hca_addr)
{
	if (k->status)
		return k->status;
	if ((k->access & need_access) != need_access)
		return -FI_EACCES;
	if (raddr < k->iova || raddr - k->iova > k->len || len > k->len - (raddr - k->iova))
		return -FI_EACCES;
	*hca_addr = k->hca_base + (raddr - k->iova);
	return 0;
}
