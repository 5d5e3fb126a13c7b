/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire's address blob: what ddtx's fi_getname returns for an endpoint on the ofi wire,
 * and the only thing a peer needs to reach it (peer_insert hands core_addr to the core's
 * fi_av_insert).  Fixed size, little-endian, DDTX_OFI_BLOB_LEN bytes (the AV keeps 64):
 *
 *   offset  size  field
 *        0     4  magic        DDTX_OFI_BLOB_MAGIC ("DOFI")
 *        4     1  version      DDTX_OFI_BLOB_VERSION
 *        5     1  core_len     bytes of core_addr in use, 1..DDTX_OFI_CORE_ADDR_MAX
 *        6     2  reserved     0
 *        8     4  core_id      FNV-1a of "<core provider name>/<addr_format>": a blob of another
 *                              core (tcp vs shm) or address format is refused, not misread
 *       12     8  uid          random per endpoint, or computed from core_addr for an endpoint
 *                              bound to a service (ddtx_ofi_bound_uid); names the sender in
 *                              every message
 *       20    44  core_addr    the core endpoint's fi_getname, zero-padded
 *
 * Pure functions (no libfabric object): unit-tested in tests/fabtests/unit/test_ofi.c.
 */
#ifndef DDTX_WIRE_OFI_BLOB_H
#define DDTX_WIRE_OFI_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DDTX_OFI_BLOB_MAGIC 0x49464f44u        /* "DOFI" little-endian */
#define DDTX_OFI_BLOB_VERSION 1
#define DDTX_OFI_BLOB_HDR 20
#define DDTX_OFI_CORE_ADDR_MAX 44
#define DDTX_OFI_BLOB_LEN (DDTX_OFI_BLOB_HDR + DDTX_OFI_CORE_ADDR_MAX)   /* 64 */

struct ddtx_ofi_blob {
	uint32_t core_id;
	uint64_t uid;
	uint8_t core_len;
	uint8_t core_addr[DDTX_OFI_CORE_ADDR_MAX];
};

/* The core identity a blob carries: FNV-1a of "name/addr_format". */
uint32_t ddtx_ofi_core_id(const char *prov_name, uint32_t addr_format);

/* Write b as DDTX_OFI_BLOB_LEN bytes; -FI_EINVAL if core_len is 0 or too large. */
int ddtx_ofi_blob_pack(const struct ddtx_ofi_blob *b, void *out);

/*
 * Parse and check a blob: length, magic, version, core_len in range, reserved and padding
 * bytes zero, and (when core_id != 0) the core identity equal to ours.  0 or -FI_EINVAL.
 */
int ddtx_ofi_blob_unpack(const void *in, size_t len, uint32_t core_id, struct ddtx_ofi_blob *b);

/*
 * Names (name.c).  An endpoint bound to a service takes a uid computed from its core address,
 * so that a client that computes that address from (node, service) with the core's fi_getinfo
 * computes the whole blob too, with no exchange: FNV-1a 64 of the core identity and the
 * address, bit 63 set (random uids may have it too; 2^-64 collisions are not guarded).
 */
uint64_t ddtx_ofi_bound_uid(uint32_t core_id, const void *core_addr, size_t len);
/*
 * The address bytes as the blob carries them: for FI_SOCKADDR_IN(6) the padding and flow
 * fields a resolver and the bound socket may fill differently are zeroed (addr_format is the
 * core's fi_info addr_format).
 */
void ddtx_ofi_addr_canon(uint32_t addr_format, void *core_addr, size_t len);
/*
 * A bound address whose IP is the wildcard (0.0.0.0, ::) takes the IP of iface, the core
 * domain's own address of the same family, its port kept; true if it did.  Why: tcp's
 * FI_EP_MSG fi_getinfo(FI_SOURCE, no node, service) gives the wildcard, while a client
 * resolving (host, service) gets the host's address, so the two bound uids differed and the
 * client dropped every answer (fabtests between two hosts hung with FI_DDTX_OFI_EP_TYPE=msg;
 * tcp;ofi_rxm's src_addr already names the interface).
 */
bool ddtx_ofi_addr_fill_ip(uint32_t addr_format, void *core_addr, size_t len, const void *iface,
			   size_t iface_len);

#endif /* DDTX_WIRE_OFI_BLOB_H */
