/* SPDX-License-Identifier: BSD-2-Clause */
/* The ofi wire's pure logic (ofi_pure.h): no libfabric object is touched here. */
#include <string.h>

#include <rdma/fi_errno.h>
#include "common/minmax.h"
#include "wire/ofi/ofi_pure.h"

const char *ddtx_ofi_unusable(const struct fi_info *core)
{
	return ddtx_ofi_unusable_as(core, FI_EP_RDM);
}

const char *ddtx_ofi_unusable_as(const struct fi_info *core, enum fi_ep_type want)
{
	if (!core || !core->ep_attr || !core->tx_attr || !core->rx_attr || !core->domain_attr ||
	    !core->fabric_attr)
		return "incomplete fi_info";
	if (!(core->caps & FI_MSG))
		return "lacks FI_MSG (the wire's messages)";
	if (!(core->caps & FI_RMA))
		return "lacks FI_RMA (the zero-copy schemes' writes and reads)";
	if ((core->caps & DDTX_OFI_CORE_CAPS) != DDTX_OFI_CORE_CAPS)
		return "lacks FI_READ, FI_WRITE or their remote side (FI_REMOTE_READ/WRITE)";
	if (core->ep_attr->type != want) {
		if (core->ep_attr->type == FI_EP_MSG)
			return "FI_EP_MSG (connections): used with FI_DDTX_OFI_EP_TYPE=msg";
		if (core->ep_attr->type == FI_EP_RDM)
			return "FI_EP_RDM: used with FI_DDTX_OFI_EP_TYPE=rdm (the default)";
		return "neither FI_EP_RDM nor FI_EP_MSG";
	}
	/* conn.c posts receive buffers once for all connections, into a shared receive context */
	if (want == FI_EP_MSG && !core->domain_attr->max_ep_srx_ctx)
		return "FI_EP_MSG without a shared receive context (fi_srx_context)";
	if (core->domain_attr->mr_mode & ~(uint64_t)(DDTX_OFI_MR_MODE | FI_MR_BASIC | FI_MR_SCALABLE))
		return "requires mr_mode bits the ofi wire does not honour (FI_MR_PROV_KEY, "
		       "FI_MR_ENDPOINT, FI_MR_RAW, FI_MR_HMEM...)";
	if (core->domain_attr->mr_key_size < sizeof(uint64_t))
		return "memory keys shorter than 8 bytes";
	if (!core->tx_attr->iov_limit || !core->rx_attr->iov_limit)
		return "iov_limit 0";
	if (!(core->tx_attr->msg_order & FI_ORDER_SAS))
		return "sends are not ordered (FI_ORDER_SAS)";
	if (core->ep_attr->max_msg_size < DDTX_OFI_BUF_SIZE)
		return "max_msg_size below the wire's buffer size";
	return NULL;
}

void ddtx_ofi_caps_from_info(const struct fi_info *core, const struct ddtx_wire_params *params,
			     struct ddtx_wire_caps *caps)
{
	size_t sge = DDTX_MIN(core->tx_attr->iov_limit, core->rx_attr->iov_limit);

	memset(caps, 0, sizeof(*caps));
	caps->name = "ofi";
	caps->kind = DDTX_WIRE_KIND_OFI;
	if (params && params->max_sge)
		sge = DDTX_MIN(sge, params->max_sge);
	caps->max_sge = sge;
	caps->max_mkey_entries = 0;        /* no UMR on a core provider */
	caps->max_send_size = DDTX_OFI_BUF_SIZE - DDTX_OFI_PAYLOAD_OFF;
	caps->max_rma_size = DDTX_MIN(core->ep_attr->max_msg_size, (size_t)1 << 30);
	/* Sends are copied into a bounce buffer, so every size the wire sends is "inline". */
	caps->inline_size = caps->max_send_size;
	caps->addr_len = DDTX_OFI_BLOB_LEN;
	caps->strided_mkeys = false;
	caps->recv_scatter = false;
}

long ddtx_ofi_chunk_iov(const struct iovec *iov, size_t count, size_t len, size_t max_iov,
			size_t max_bytes, struct ddtx_ofi_chunk *out, size_t cap)
{
	size_t idx = 0, off = 0, n = 0;
	uint64_t roff = 0;

	if (!max_iov || !max_bytes || (count && !iov))
		return -FI_EINVAL;
	while (roff < len) {
		struct ddtx_ofi_chunk c = { .roff = roff };

		while (idx < count && off == iov[idx].iov_len) {
			idx++;
			off = 0;
		}
		if (idx == count)
			return -FI_EINVAL;
		c.first = idx;
		c.first_off = off;
		while (idx < count && c.n < max_iov && c.bytes < max_bytes && roff < len) {
			size_t take = DDTX_MIN(iov[idx].iov_len - off,
					       DDTX_MIN(max_bytes - c.bytes, (size_t)(len - roff)));

			if (take) {
				c.n++;
				c.bytes += take;
				roff += take;
				off += take;
			}
			if (off == iov[idx].iov_len) {
				idx++;
				off = 0;
			} else if (take == 0) {
				break;
			}
		}
		if (n < cap)
			out[n] = c;
		n++;
	}
	return (long)n;
}

uint64_t ddtx_ofi_ikey(uint64_t addr, bool virt, uint16_t tag)
{
	return DDTX_OFI_IKEY_BIT | (virt ? DDTX_OFI_IKEY_VIRT : 0) |
	       ((uint64_t)(tag & 0x3fff) << 48) | (addr & DDTX_OFI_IKEY_ADDR_MASK);
}

int ddtx_ofi_ikey_core_addr(uint64_t key, uint64_t raddr, bool core_virt, uint64_t *out)
{
	uint64_t base = key & DDTX_OFI_IKEY_ADDR_MASK;
	bool virt = key & DDTX_OFI_IKEY_VIRT;

	if (!(key & DDTX_OFI_IKEY_BIT))
		return -FI_EKEYREJECTED;
	if (core_virt) {
		*out = virt ? raddr : base + raddr;
	} else {
		if (virt && raddr < base)
			return -FI_EACCES;
		*out = virt ? raddr - base : raddr;
	}
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void ddtx_ofi_hdr_pack(const struct ddtx_ofi_hdr *h, void *out)
{
	uint8_t *p = out;

	memset(p, 0, DDTX_OFI_HDR_LEN);
	p[0] = h->type;
	p[1] = h->flags;
	put64(p + 8, h->src_uid);
}

int ddtx_ofi_hdr_unpack(const void *in, size_t len, struct ddtx_ofi_hdr *h)
{
	const uint8_t *p = in;

	if (len < DDTX_OFI_HDR_LEN || p[0] < DDTX_OFI_MSG_DATA || p[0] > DDTX_OFI_MSG_RING_CREDIT ||
	    (p[1] & ~DDTX_OFI_F_ADDR))
		return -FI_EINVAL;
	for (int i = 2; i < 8; i++)
		if (p[i])
			return -FI_EINVAL;
	h->type = p[0];
	h->flags = p[1];
	h->src_uid = get64(p + 8);
	if ((h->flags & DDTX_OFI_F_ADDR) && len < DDTX_OFI_PAYLOAD_OFF)
		return -FI_EINVAL;
	return 0;
}

void ddtx_ofi_key_rep_pack(const struct ddtx_ofi_key_rep *r, void *out)
{
	uint8_t *p = out;

	put64(p, r->key);
	put64(p + 8, (uint64_t)(uint32_t)r->status | ((uint64_t)r->access << 32));
	put64(p + 16, r->core_key);
	put64(p + 24, r->iova);
	put64(p + 32, r->len);
	put64(p + 40, r->core_base);
}

int ddtx_ofi_key_rep_unpack(const void *in, size_t len, struct ddtx_ofi_key_rep *r)
{
	const uint8_t *p = in;
	uint64_t w;

	if (len != DDTX_OFI_KEY_REP_LEN)
		return -FI_EINVAL;
	r->key = get64(p);
	w = get64(p + 8);
	r->status = (int32_t)(uint32_t)w;
	r->access = (uint32_t)(w >> 32);
	r->core_key = get64(p + 16);
	r->iova = get64(p + 24);
	r->len = get64(p + 32);
	r->core_base = get64(p + 40);
	if (r->status != 0 && r->status != -FI_EKEYREJECTED)
		return -FI_EINVAL;
	if (r->access & ~(uint32_t)(DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE |
				    DDTX_ACC_REMOTE_READ | DDTX_ACC_REMOTE_WRITE))
		return -FI_EINVAL;
	if (!r->status && r->iova + r->len < r->iova)
		return -FI_EINVAL;
	return 0;
}

int ddtx_ofi_key_translate(const struct ddtx_ofi_key_rep *r, uint64_t raddr, uint64_t len,
			   uint32_t access, uint64_t *core_addr)
{
	if (r->status)
		return -FI_EKEYREJECTED;
	if ((r->access & access) != access || raddr < r->iova || raddr + len < raddr ||
	    raddr + len > r->iova + r->len)
		return -FI_EACCES;
	*core_addr = r->core_base + (raddr - r->iova);
	return 0;
}

enum ddtx_ofi_connreq_verdict ddtx_ofi_connreq_decide(uint64_t our_uid, uint64_t their_uid,
						      enum ddtx_ofi_conn_state ours, bool peer_dead)
{
	if (their_uid == our_uid)
		return DDTX_OFI_CONNREQ_ACCEPT_EXTRA;      /* ourselves: both ends are ours */
	if (peer_dead)
		return DDTX_OFI_CONNREQ_REJECT;
	switch (ours) {
	case DDTX_OFI_CONN_NONE:
		return DDTX_OFI_CONNREQ_ACCEPT;
	case DDTX_OFI_CONN_CONNECTING:
		/* both sides asked at once: the request of the larger uid wins on both sides */
		return their_uid > our_uid ? DDTX_OFI_CONNREQ_ACCEPT_REPLACE : DDTX_OFI_CONNREQ_REJECT;
	default:
		return DDTX_OFI_CONNREQ_REJECT;            /* a second connection: not needed */
	}
}

bool ddtx_ofi_refusal_retry(uint64_t our_uid, uint64_t their_uid, uint32_t refusals)
{
	/* A peer of a larger uid refuses our request only while its own is on its way to us
	 * (connreq_decide); a smaller one never does, unless it has given us up. */
	return their_uid > our_uid && refusals < DDTX_OFI_CONN_RETRIES;
}

int ddtx_ofi_connreq_parse(const void *data, size_t len, uint32_t core_id,
			   struct ddtx_ofi_blob *b)
{
	if (len != DDTX_OFI_BLOB_LEN || ddtx_ofi_blob_unpack(data, len, core_id, b) || !b->uid)
		return -FI_EINVAL;
	return 0;
}

void ddtx_ofi_ring_grant_pack(const struct ddtx_ofi_ring_grant *g, void *out)
{
	uint8_t *p = out;

	put64(p, g->key);
	put64(p + 8, (uint64_t)g->ring_id | (uint64_t)g->slots << 32);
	put64(p + 16, g->slot_size);
}

int ddtx_ofi_ring_grant_unpack(const void *in, size_t len, struct ddtx_ofi_ring_grant *g)
{
	const uint8_t *p = in;
	uint64_t w, size;

	if (len != DDTX_OFI_RING_GRANT_LEN)
		return -FI_EINVAL;
	g->key = get64(p);
	w = get64(p + 8);
	size = get64(p + 16);
	g->ring_id = (uint32_t)w;
	g->slots = (uint32_t)(w >> 32);
	if (!(g->key & DDTX_OFI_IKEY_BIT) || g->ring_id >= DDTX_OFI_RING_ID_MAX || !g->slots ||
	    g->slots > DDTX_OFI_RING_SLOTS_MAX || (g->slots & (g->slots - 1)) ||
	    size <= DDTX_OFI_HDR_LEN || size > DDTX_OFI_RING_SLOT_MAX)
		return -FI_EINVAL;
	g->slot_size = (uint32_t)size;
	return 0;
}

void ddtx_ofi_ring_credit_pack(uint64_t delivered, void *out)
{
	put64(out, delivered);
}

int ddtx_ofi_ring_credit_unpack(const void *in, size_t len, uint64_t *delivered)
{
	if (len != DDTX_OFI_RING_CREDIT_LEN)
		return -FI_EINVAL;
	*delivered = get64(in);
	return 0;
}

uint64_t ddtx_ofi_ring_data(uint32_t ring_id, uint64_t seq, size_t len)
{
	return (uint64_t)(ring_id & (DDTX_OFI_RING_ID_MAX - 1)) << 40 |
	       (seq & 0xffff) << 24 | (len & 0xffffff);
}

void ddtx_ofi_ring_data_split(uint64_t data, uint32_t *ring_id, uint16_t *seq16, size_t *len)
{
	*ring_id = (uint32_t)(data >> 40);
	*seq16 = (uint16_t)(data >> 24);
	*len = (size_t)(data & 0xffffff);
}

int ddtx_ofi_ring_accept(uint64_t next, uint32_t slots, uint32_t slot_size, uint16_t seq16,
			 size_t len, uint64_t *seq)
{
	uint16_t ahead = (uint16_t)(seq16 - (uint16_t)next);

	if (len < DDTX_OFI_HDR_LEN || len > slot_size || ahead >= slots)
		return -FI_EINVAL;
	*seq = next + ahead;
	return 0;
}

bool ddtx_ofi_ring_credit_ok(uint64_t acked, uint64_t posted, uint64_t delivered)
{
	return delivered > acked && delivered <= posted;
}

void ddtx_ofi_ring_hdr_seal(void *hdr, uint64_t seq, size_t len)
{
	uint8_t *p = hdr;

	p[1] &= (uint8_t)~DDTX_OFI_F_CREDIT; /* a deferred message is sealed again */
	p[2] = (uint8_t)seq;
	p[3] = (uint8_t)(seq >> 8);
	for (int i = 0; i < 4; i++)
		p[4 + i] = (uint8_t)(len >> (8 * i));
}

void ddtx_ofi_ring_hdr_credit(void *hdr, uint64_t delivered)
{
	uint8_t *p = hdr;

	p[1] |= DDTX_OFI_F_CREDIT;
	p[7] = (uint8_t)delivered;
}

bool ddtx_ofi_ring_hdr_credit_get(const void *hdr, uint8_t *c8)
{
	const uint8_t *p = hdr;

	if (!(p[1] & DDTX_OFI_F_CREDIT))
		return false;
	*c8 = p[7];
	return true;
}

bool ddtx_ofi_ring_credit8(uint64_t acked, uint64_t posted, uint32_t slots, uint8_t c8,
			   uint64_t *delivered)
{
	uint64_t d = acked + (uint8_t)(c8 - (uint8_t)acked);

	if (slots > DDTX_OFI_CREDIT8_SLOTS || d > posted)
		return false;
	*delivered = d;
	return true;
}

enum ddtx_ofi_ring_verdict ddtx_ofi_ring_hdr_check(const void *slot, uint32_t slot_size,
						   uint64_t seq, uint64_t owner_uid, size_t *len)
{
	const uint8_t *p = slot;
	uint32_t hlen = 0;

	if (p[0] == 0 || (uint16_t)(p[2] | p[3] << 8) != (uint16_t)seq)
		return DDTX_OFI_RING_NOT_YET; /* cleared since the last delivery, or not seq */
	for (int i = 0; i < 3; i++)
		hlen |= (uint32_t)p[4 + i] << (8 * i);
	if (p[0] != DDTX_OFI_MSG_DATA || (p[1] & ~DDTX_OFI_F_CREDIT) ||
	    (p[7] && !(p[1] & DDTX_OFI_F_CREDIT)) || get64(p + 8) != owner_uid ||
	    hlen < DDTX_OFI_HDR_LEN || hlen > slot_size)
		return DDTX_OFI_RING_BAD;
	*len = hlen;
	return DDTX_OFI_RING_DELIVER;
}
