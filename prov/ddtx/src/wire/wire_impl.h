/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a wire implementation provides: the operations of wire.h as a table.  wire.c dispatches
 * the public calls through it, so the engine and protocols never know which NIC they drive.
 * Each implementation embeds struct ddtx_wire_domain / ddtx_wire_ep as the first member of its
 * own objects.
 */
#ifndef DDTX_WIRE_IMPL_H
#define DDTX_WIRE_IMPL_H

#include "wire/wire.h"

struct ddtx_wire_impl {
	const char *name;
	/* Can this wire run here (a device present)?  NULL: always. */
	bool (*available)(void);
	void (*cleanup_stale)(void);
	int (*domain_open)(const struct ddtx_wire_params *params, struct ddtx_wire_domain **out);
	void (*domain_close)(struct ddtx_wire_domain *dom);
	const struct ddtx_wire_caps *(*domain_caps)(struct ddtx_wire_domain *dom);
	/* NULL: no sub-wires to report. */
	void (*domain_stats)(struct ddtx_wire_domain *dom, struct ddtx_wire_stats *stats);
	int (*addr_check)(struct ddtx_wire_domain *dom, const void *addr, size_t len);
	int (*mr_reg)(struct ddtx_wire_domain *dom, const struct iovec *iov, size_t count,
		      enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		      uint32_t access, struct ddtx_wire_mr **out);
	int (*mr_dereg)(struct ddtx_wire_domain *dom, struct ddtx_wire_mr *mr);
	int (*key_check)(struct ddtx_wire_domain *dom, enum ddtx_key_space space, uint64_t key,
			 uint64_t addr, uint64_t len, uint32_t access);
	int (*ep_open)(struct ddtx_wire_domain *dom, const struct ddtx_wire_handlers *handlers,
		       void *handler_arg, struct ddtx_wire_ep **out);
	void (*ep_close)(struct ddtx_wire_ep *ep);
	int (*ep_getname)(struct ddtx_wire_ep *ep, void *addr, size_t *len);
	/* Service names (common/name.h); NULL: this wire cannot bind or resolve them. */
	int (*ep_bind)(struct ddtx_wire_ep *ep, const struct ddtx_name_addr *name);
	int (*name_resolve)(struct ddtx_wire_domain *dom, const struct ddtx_name_addr *name,
			    int timeout_ms, void *addr, size_t *len);
	int (*peer_insert)(struct ddtx_wire_ep *ep, const void *addr, size_t len,
			   ddtx_peer_t *peer);
	int (*peer_addr)(struct ddtx_wire_ep *ep, ddtx_peer_t peer, void *addr, size_t *len);
	bool (*peer_alive)(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
	/* A peer taken as gone started afresh (ddtx_wire_peer_revive); NULL: never. */
	int (*peer_revive)(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
	/* The largest message to peer now, if above caps.max_send_size; 0 or NULL: not. */
	size_t (*peer_send_size)(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
	/* Do delivery ACKs to peer wait for a message to ride on?  NULL: caps.carry_acks. */
	bool (*peer_carries_acks)(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
	int (*send)(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		    const struct iovec *iov, size_t count);
	int (*send_claim)(struct ddtx_wire_ep *ep, ddtx_peer_t peer, size_t min_len,
			  struct ddtx_wire_send_buf *buf);
	void (*send_commit)(struct ddtx_wire_ep *ep, struct ddtx_wire_send_buf *buf, size_t len);
	/* Would a message to peer find room now?  NULL: assume so (see ddtx_wire_send_room). */
	bool (*send_room)(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
	int (*rma_check)(struct ddtx_wire_ep *ep, ddtx_peer_t peer, enum ddtx_key_space space,
			 uint64_t rkey, uint64_t raddr, size_t len, bool write);
	int (*write)(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		     size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		     size_t len, void *wr_context);
	int (*read)(struct ddtx_wire_ep *ep, ddtx_peer_t peer, const struct iovec *local,
		    size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		    size_t len, void *wr_context);
	int (*ep_progress)(struct ddtx_wire_ep *ep);
	/* Messages that wait in this process until progress hands them on; NULL: none do. */
	uint64_t (*send_mark)(struct ddtx_wire_ep *ep, ddtx_peer_t peer);
	bool (*sent)(struct ddtx_wire_ep *ep, ddtx_peer_t peer, uint64_t mark);
	/* Multi-entry keys; NULL when the wire has none. */
	int (*mkey_create)(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey **out);
	void (*mkey_destroy)(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);
	int (*mkey_map)(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey,
			const struct ddtx_wire_mkey_entry *entries, size_t n, uint32_t access);
	void (*mkey_invalidate)(struct ddtx_wire_domain *dom, struct ddtx_wire_mkey *mkey);
	int (*write_mkey)(struct ddtx_wire_ep *ep, ddtx_peer_t peer,
			  const struct ddtx_wire_mkey *local, uint64_t loff,
			  enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
			  void *wr_context);
};


/* The generic handles every implementation's objects begin with. */
struct ddtx_wire_domain {
	const struct ddtx_wire_impl *impl;
};

struct ddtx_wire_ep {
	const struct ddtx_wire_impl *impl;
};

#endif /* DDTX_WIRE_IMPL_H */
