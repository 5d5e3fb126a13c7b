/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Service names: the address form fi_getinfo returns in src_addr / dest_addr.
 *
 * An endpoint has a concrete address (its wire's blob, from fi_getname: on the shm wire its
 * process, its start time and the random name of its receive ring), known only once it is open.
 * A client that knows only a host and a service cannot know that blob, so fi_getinfo hands out
 * a *service name* instead: "the endpoint of user U bound to service S on host H".  An endpoint
 * opened from an fi_info whose src_addr is a service name with a service binds it (the wire
 * publishes the endpoint's concrete address under it); fi_av_insert and fi_av_insertsvc resolve
 * a service name to the concrete address of the endpoint bound to it.  A service name with an
 * empty service names no endpoint: it is the source address of an endpoint that binds nothing.
 *
 * The host identity: on one host it is the network namespace of the process, so that
 * 127.0.0.1:S in one namespace and in another are different endpoints, as they are for TCP, and
 * the PID namespace (the shm wire's addresses carry pids, meaningless in another one).
 *
 * Two lengths, each the length of the wire's own blobs, so that an AV steps through arrays of
 * names and blobs alike and fi_info's dest_addr is as long as the addresses the AV reads:
 *  - DDTX_NAME_LEN (48, the shm wire): host-local names, node_family 0;
 *  - DDTX_NAME_NODE_LEN (64, the ofi and multi wires): the same 48 bytes and a node, the IPv4 or
 *    IPv6 address of the host the service is on (node_family AF_INET / AF_INET6), so that a
 *    wire that crosses hosts turns (node, service) into its core's address (wire/ofi/name.c).
 *    node_family 0: no node (a source name binding the wire's default address).
 */
#ifndef DDTX_COMMON_NAME_H
#define DDTX_COMMON_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DDTX_NAME_MAGIC 0x6d6e7864u /* "dxnm" */
#define DDTX_NAME_VERSION 1
#define DDTX_NAME_SERVICE_MAX 24    /* bytes of service, NUL included */

struct ddtx_name_addr {
	uint32_t magic;             /* DDTX_NAME_MAGIC */
	uint16_t version;           /* DDTX_NAME_VERSION */
	uint16_t node_family;       /* 0, AF_INET or AF_INET6 (node[] in use); 0 in short names */
	uint32_t user;              /* uid: names are per user */
	uint32_t reserved2;
	uint64_t host;              /* host identity: the network namespace on one machine */
	char service[DDTX_NAME_SERVICE_MAX]; /* NUL-terminated, [A-Za-z0-9._-]; "" = none */
	uint8_t node[16];           /* long form only: the address, zero-padded */
};
_Static_assert(sizeof(struct ddtx_name_addr) == 64, "service name layout");
#define DDTX_NAME_LEN 48u           /* short form (host-local) */
#define DDTX_NAME_NODE_LEN 64u      /* long form (with a node) */

/* This host's identity: network namespace inode << 32 | PID namespace inode (low 32 bits). */
uint64_t ddtx_name_host_id(void);
/* Build the name of service (NULL or "" = no service) on this host: 0 or -FI_EINVAL. */
int ddtx_name_build(struct ddtx_name_addr *name, const char *service);
/*
 * Build the long-form name of service on node (a host name or numeric address, resolved with
 * getaddrinfo, IPv4 preferred; NULL = no node): 0, -FI_EINVAL (bad service), -FI_ENODATA (node
 * does not resolve).
 */
int ddtx_name_build_node(struct ddtx_name_addr *name, const char *node, const char *service);
/*
 * Is addr a well-formed service name of len bytes (DDTX_NAME_LEN or DDTX_NAME_NODE_LEN): magic,
 * version, NUL-terminated valid service, node_family 0 in a short one, node bytes consistent?
 */
bool ddtx_name_is(const void *addr, size_t len);
/* Copy a well-formed name of len bytes into a whole struct (node zeroed for a short one). */
void ddtx_name_load(struct ddtx_name_addr *name, const void *addr, size_t len);
/* The node as a numeric string ("127.1.0.2", "::1") into buf; false if the name has none. */
bool ddtx_name_node_str(const struct ddtx_name_addr *name, char *buf, size_t len);
/* Does node (a host name or numeric address) name this host?  NULL counts as this host. */
bool ddtx_node_is_local(const char *node);
/* "fi_ddtx://svc/<service>@<host hex>" (no node) or "fi_ddtx://svc/<service>@<node>" into buf
 * (as fi_av_straddr), bytes needed in *need. */
void ddtx_name_str(const struct ddtx_name_addr *name, char *buf, size_t len, size_t *need);

#endif /* DDTX_COMMON_NAME_H */
