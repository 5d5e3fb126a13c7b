/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs wire's pure functions: everything that builds work requests or parses what a peer
 * sent, kept free of rdma-core and device state so that it is compiled on every build and
 * unit-tested on machines without an RDMA device (tests/fabtests/unit/test_verbs.c).
 *
 *  sge.c        registered-region index; iov list -> SGE lists bounded by max_sge and a byte
 *               limit (RDMA write/read gather lists, and the entry list of a UMR mkey window)
 *  interleave.c strided layout detection: an entry list -> one interleaved pattern x repeat
 *  blob.c       address blob, message header, immediate data, control message payloads
 *
 * Everything a peer sends travels in network byte order and is validated before use.
 */
#ifndef DDTX_VERBS_PURE_H
#define DDTX_VERBS_PURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* ---- sge.c ---- */

#define DDTX_VSGE_MIN(a, b) ((a) < (b) ? (a) : (b))

/* One gather/scatter entry: the layout of struct ibv_sge (checked where verbs.h is included). */
struct ddtx_vsge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* The longest entry one SGE may describe (ibv_sge.length is 32 bits; keep clear of 2 GiB). */
#define DDTX_VSGE_MAX_LEN ((uint32_t)1 << 30)

/* A registered region: [addr, addr + len) reachable through lkey. */
struct ddtx_vregion {
	uint64_t addr;
	uint64_t len;
	uint32_t lkey;
	uint32_t flags;                          /* DDTX_VREGION_F_*: what the region allows */
	const void *owner;                       /* identifies the region (unique in an index) */
};

enum {
	DDTX_VREGION_F_LOCAL_WRITE = 1u << 0,    /* the HCA may write into it (RDMA READ target) */
	DDTX_VREGION_F_REMOTE_WRITE = 1u << 1,   /* may back an mkey entry peers write to */
	DDTX_VREGION_F_REMOTE_READ = 1u << 2,    /* may back an mkey entry peers read */
};

/* Regions sorted by address (overlaps allowed). */
struct ddtx_vregion_index {
	struct ddtx_vregion *v;
	size_t count, cap;
	uint64_t max_len;                        /* longest region ever inserted: bounds the scan */
};

void ddtx_vregion_index_init(struct ddtx_vregion_index *idx);
void ddtx_vregion_index_fini(struct ddtx_vregion_index *idx);
/* 0, -FI_EINVAL (empty, wrapping or duplicate owner), -FI_ENOMEM. */
int ddtx_vregion_index_insert(struct ddtx_vregion_index *idx, const struct ddtx_vregion *r);
/* Remove the region of owner; -FI_ENOENT if absent. */
int ddtx_vregion_index_remove(struct ddtx_vregion_index *idx, const void *owner);
/* Of the regions holding byte addr with all flags of need, the one reaching furthest; NULL if
 * none. */
const struct ddtx_vregion *ddtx_vregion_index_find(const struct ddtx_vregion_index *idx,
						   uint64_t addr, uint32_t need);

/* A position in an iov list. */
struct ddtx_vsge_cursor {
	const struct iovec *iov;
	size_t count;
	size_t idx;                              /* current entry */
	size_t off;                              /* bytes of it already taken */
};

void ddtx_vsge_cursor_init(struct ddtx_vsge_cursor *c, const struct iovec *iov, size_t count);
/* Skips empty entries; true when every byte was taken. */
bool ddtx_vsge_cursor_done(struct ddtx_vsge_cursor *c);
/* Address of the next byte (cursor not done). */
uint64_t ddtx_vsge_cursor_addr(const struct ddtx_vsge_cursor *c);

/*
 * Take the next gather list from the cursor: at most max_sge entries and max_bytes bytes, each
 * entry inside one region of idx having the flags of need (the one reaching furthest), contiguous bytes of one region
 * merged into one entry, no entry longer than DDTX_VSGE_MAX_LEN.  Returns the bytes taken and
 * sets *n.  Stops early at the first byte no region covers and sets *uncovered (the caller
 * registers it, or bounces it, and calls again).
 */
size_t ddtx_vsge_take(struct ddtx_vsge_cursor *c, const struct ddtx_vregion_index *idx,
		      uint32_t need, size_t max_sge, size_t max_bytes, struct ddtx_vsge *out,
		      size_t *n, bool *uncovered);

/* ---- interleave.c ---- */

/* One strided entry: the layout of struct mlx5dv_mr_interleaved (checked in umr.c). */
struct ddtx_vinterleave {
	uint64_t addr;
	uint32_t bytes_count;
	uint32_t bytes_skip;
	uint32_t lkey;
};

/* Interleaved byte counts and strides are 16-bit fields of the UMR work request. */
#define DDTX_VINTERLEAVE_MAX_FIELD 0xffffu

/*
 * Is the entry list e[0..n) a pattern of p entries repeated R >= 2 times, where entry j of
 * repetition k is {e[j].addr + k * stride_j, e[j].length, e[j].lkey} and stride_j =
 * e[p + j].addr - e[j].addr (>= the length, both <= DDTX_VINTERLEAVE_MAX_FIELD)?  Returns the
 * smallest such p <= max_pattern with out[0..p) filled and *repeat = R, or 0 (map a list).
 */
size_t ddtx_vinterleave_detect(const struct ddtx_vsge *e, size_t n, size_t max_pattern,
			       struct ddtx_vinterleave *out, uint32_t *repeat);

/* ---- blob.c: address blob ---- */

#define DDTX_VADDR_LEN 64                        /* bytes of the blob (the AV stores 64) */
#define DDTX_VADDR_MAGIC 0x44585642u             /* "DXVB" */
#define DDTX_VADDR_VERSION 1

enum ddtx_vtransport {
	DDTX_VTRANSPORT_DC = 1,                  /* qpn = DCT number, key = DC access key */
	DDTX_VTRANSPORT_RC = 2,                  /* qpn = UD QP for the connection handshake,
						    key = its Q_Key */
};

enum {
	DDTX_VADDR_F_GRH = 1u << 0,              /* reach it through the GID (RoCE, routed IB) */
};

struct ddtx_vaddr {
	uint8_t transport;                       /* enum ddtx_vtransport */
	uint8_t port;                            /* >= 1 */
	uint8_t mtu;                             /* enum ibv_mtu: 1 (256) .. 5 (4096) */
	uint8_t flags;                           /* DDTX_VADDR_F_* */
	uint16_t lid;                            /* 0 only with DDTX_VADDR_F_GRH */
	uint8_t sl;                              /* service level, 0..15 */
	uint32_t qpn;                            /* 24 bits */
	uint32_t pid;                            /* informational */
	uint64_t key;
	uint64_t uid;                            /* endpoint identity, never 0 */
	uint8_t gid[16];
};

/* 0 or -FI_ETOOSMALL (len < DDTX_VADDR_LEN) / -FI_EINVAL (a field out of range). */
int ddtx_vaddr_pack(const struct ddtx_vaddr *a, void *blob, size_t len);
/* 0 or -FI_EINVAL for anything malformed (length, magic, version, field ranges, reserved). */
int ddtx_vaddr_unpack(const void *blob, size_t len, struct ddtx_vaddr *a);

/* ---- blob.c: message header (first bytes of every SEND through the shared receive queue) ---- */

#define DDTX_VHDR_LEN 16

enum ddtx_vmsg_type {
	DDTX_VMSG_DATA = 1,                      /* a wire message for on_recv */
	DDTX_VMSG_KEY_REQ = 2,                   /* resolve (space, key) to an rkey */
	DDTX_VMSG_KEY_REP = 3,
	DDTX_VMSG_KEY_INVAL = 4,                 /* forget a resolved key (it was deregistered) */
	DDTX_VMSG_CONN_REQ = 5,                  /* RC handshake (over UD) */
	DDTX_VMSG_CONN_REP = 6,
	DDTX_VMSG_MAX = 6,
};

enum {
	DDTX_VHDR_F_ADDR = 1u << 0,              /* the sender's address blob follows the header */
};

struct ddtx_vhdr {
	uint8_t type;                            /* enum ddtx_vmsg_type */
	uint8_t flags;                           /* DDTX_VHDR_F_* */
	uint16_t reserved;
	uint32_t seq;                            /* per-peer sequence (diagnostics) */
	uint64_t src_uid;                        /* the sender's endpoint identity */
};

void ddtx_vhdr_pack(const struct ddtx_vhdr *h, void *buf);
/* 0 or -FI_EINVAL (short, unknown type or flags, zero uid). */
int ddtx_vhdr_unpack(const void *buf, size_t len, struct ddtx_vhdr *h);

/*
 * Immediate data of a SEND: 32 bits in network byte order as ibv_send_wr.imm_data carries them
 * (the value returned is already big-endian; store it as is).  Byte 0: 0xD7 marker, byte 1:
 * version (high nibble) and message type (low nibble), byte 2: header flags, byte 3: reserved.
 */
#define DDTX_VIMM_MARKER 0xd7u
uint32_t ddtx_vimm_encode(uint8_t type, uint8_t flags);
/* 0 or -FI_EINVAL (marker, version or type wrong). imm as received (big-endian). */
int ddtx_vimm_decode(uint32_t imm_be, uint8_t *type, uint8_t *flags);

/* ---- blob.c: key resolution and RC handshake payloads ---- */

struct ddtx_vkey_req {
	uint8_t space;
	uint64_t key;
};
#define DDTX_VKEY_REQ_LEN 16

struct ddtx_vkey_rep {
	uint8_t space;
	int32_t status;                          /* 0 found, else a negative FI_E* code */
	uint32_t rkey;
	uint32_t access;                         /* DDTX_ACC_* */
	uint64_t key;
	uint64_t iova;                           /* what peers name byte 0 of the key */
	uint64_t hca_base;                       /* the HCA address of byte 0 (iova, or 0 for
						    zero-based indirect mkeys) */
	uint64_t len;
};
#define DDTX_VKEY_REP_LEN 48

struct ddtx_vconn {
	uint32_t rc_qpn;                         /* the sender's RC QP for this pair */
	uint32_t psn;                            /* its first send PSN (24 bits) */
	uint32_t epoch;                          /* the sender's connection attempt (>= 1) */
	uint32_t echo;                           /* CONN_REP: the attempt answered; REQ: 0 */
};
#define DDTX_VCONN_LEN 16

void ddtx_vkey_req_pack(const struct ddtx_vkey_req *r, void *buf);
int ddtx_vkey_req_unpack(const void *buf, size_t len, struct ddtx_vkey_req *r);
void ddtx_vkey_rep_pack(const struct ddtx_vkey_rep *r, void *buf);
int ddtx_vkey_rep_unpack(const void *buf, size_t len, struct ddtx_vkey_rep *r);
void ddtx_vconn_pack(const struct ddtx_vconn *c, void *buf);
int ddtx_vconn_unpack(const void *buf, size_t len, struct ddtx_vconn *c);

/*
 * The HCA address of [raddr, raddr + len) of a resolved key, after the same checks the owner's
 * HCA makes: bounds and access.  0, the key's own status (-FI_EKEYREJECTED: the owner has no
 * such key), or -FI_EACCES.
 */
int ddtx_vkey_translate(const struct ddtx_vkey_rep *k, uint64_t raddr, size_t len,
			uint32_t need_access, uint64_t *hca_addr);

#endif /* DDTX_VERBS_PURE_H */
