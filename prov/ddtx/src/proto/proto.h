/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path, as the libfabric objects above it (core/) see it: the only header that crosses
 * from core into proto.  proto owns the DDT engine's domain state and both wire objects (the wire
 * domain inside ddtx_proto_domain, the wire endpoint inside ddtx_proto_ep); it implements eager and
 * rendezvous messaging, software tag matching and RMA on them.
 *
 * Calls go one way: core calls these functions (with the domain lock held, except where said);
 * proto reports back only through the owner interface below, which core implements and hands
 * down when it opens an endpoint, so proto includes no core header.
 */
#ifndef DDTX_PROTO_H
#define DDTX_PROTO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include <rdma/fi_ddtx.h>

#include "common/name.h"

/*
 * Internal flag (libfabric's provider-specific range FI_PROV_SPECIFIC): the operation reports no
 * completion, as fi_inject / fi_injectdata / fi_inject_write do.  The FI_INJECT flag alone
 * (fi_sendmsg flags, tx op_flags) only lets the caller reuse its buffer at once: such an
 * operation still completes by the usual rules.  Core strips this bit from callers' flags.
 */
#define DDTX_PROTO_NO_COMPLETION (1ULL << 60)

struct ddtx_proto_domain;
struct ddtx_proto_ep;
struct ddtx_proto_mr;

/* ---- what proto reports to: implemented by the owner of an endpoint ---- */

enum ddtx_proto_queue { DDTX_PROTO_TX, DDTX_PROTO_RX };

/* Counters of an endpoint, by the role fi_ep_bind gives them. */
enum ddtx_proto_counter {
	DDTX_CNTR_SEND, DDTX_CNTR_RECV, DDTX_CNTR_READ, DDTX_CNTR_WRITE,
	DDTX_CNTR_REMOTE_READ, DDTX_CNTR_REMOTE_WRITE, DDTX_CNTR_COUNT,
};

/* One completion, in fi_cq_err_entry's terms (err == 0: a successful completion). */
struct ddtx_proto_completion {
	void *context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src_addr;
	size_t olen;                    /* bytes truncated (FI_ETRUNC) */
	int err;                        /* 0 or a positive FI_E* value */
};

struct ddtx_proto_owner_ops {
	/* Append a completion to the transmit or receive CQ, if one is bound. */
	void (*cq_write)(void *owner, enum ddtx_proto_queue q, const struct ddtx_proto_completion *c);
	/* Count a completion (or an error) in the counter bound to that role, if any. */
	void (*cntr_add)(void *owner, enum ddtx_proto_counter cntr, bool error);
	/* The address blob of fi_addr in the bound AV: 0, or -FI_EINVAL if there is none. */
	int (*av_lookup)(void *owner, fi_addr_t addr, const void **blob, size_t *len);
	/* The fi_addr of a blob in the bound AV, FI_ADDR_NOTAVAIL if absent. */
	fi_addr_t (*av_reverse)(void *owner, const void *blob, size_t len);
};

/* Attributes of an endpoint that the data path enforces, set when it is enabled. */
struct ddtx_proto_ep_attr {
	size_t tx_iov_limit, rx_iov_limit, rma_iov_limit;
	size_t inject_size;
	bool directed_recv;             /* FI_DIRECTED_RECV: receives honour their source */
	bool tx_selective, rx_selective; /* FI_SELECTIVE_COMPLETION on the CQ bindings */
	size_t min_multi_recv;          /* FI_OPT_MIN_MULTI_RECV */
	bool rma_event;                 /* FI_RMA_EVENT: tell targets of RMA what landed */
	/* The bound AV's count of removals: translations cached before a change are dropped.
	 * Read in place (a call into the owner for it was 10 instructions, three a message). */
	const uint64_t *av_generation;
};

/* ---- domain: the engine and the wire domain (memory registration) ---- */

/* lock: the domain lock the caller holds around data calls (layout handles take it). */
/*
 * The core provider the ofi wire would run over for `want` (FI_DDTX_OFI_PROVIDER's syntax, NULL:
 * its default), e.g. "tcp" -> "tcp;ofi_rxm": fi_getinfo's layered entries.  -FI_ENODATA: none.
 */
int ddtx_proto_ofi_core_name(const char *want, char *name, size_t len);
struct ddtx_rlock;
/* ofi_core: open the ofi wire over this core provider (a layered fi_info); NULL: FI_DDTX_WIRE. */
int ddtx_proto_domain_open(struct ddtx_rlock *lock, const char *ofi_core,
			   struct ddtx_proto_domain **out);
void ddtx_proto_domain_close(struct ddtx_proto_domain *pd);
/*
 * The provider is unloaded (fi_fini at exit) while pd is open: stop the threads of the domain
 * that wake by themselves (the ACK timer), whose code is about to be unmapped.
 */
void ddtx_proto_domain_stop_threads(struct ddtx_proto_domain *pd);
/*
 * Domain-wide work not tied to an endpoint (domain locked): revoking the keys of application
 * MRs whose memory the monitor saw go away.  Called by every progress of the domain; the data
 * calls and fi_mr calls below do the same for themselves.
 */
void ddtx_proto_domain_progress(struct ddtx_proto_domain *pd);
/* Every field of fi_ddtx.h's statistics (domain locked). */
void ddtx_proto_domain_stats(struct ddtx_proto_domain *pd, struct fi_ddtx_stats *st);
/* "pack", "sgl", "umr", "rma" (fi_ddtx.h's scheme_name). */
const char *ddtx_proto_scheme_name(enum fi_ddtx_scheme scheme);
/* Bytes of an endpoint address of this domain's wire. */
size_t ddtx_proto_addr_len(struct ddtx_proto_domain *pd);
/* Is addr a well-formed address of this domain's wire (format only)?  0 or -FI_EINVAL. */
int ddtx_proto_addr_check(struct ddtx_proto_domain *pd, const void *addr, size_t len);

/*
 * Application memory registration (fi_mr_reg): access is FI_READ | FI_WRITE | FI_REMOTE_* ...
 * Once the memory monitor has seen any of the registration's pages unmapped, remapped or
 * returned to the system, the key is revoked at the domain's next progress, data call or fi_mr
 * call: peers' RMA with it fails (the MR itself stays valid until dereg).
 */
int ddtx_proto_mr_reg(struct ddtx_proto_domain *pd, const struct iovec *iov, size_t count,
		      uint64_t access, const uint64_t *requested_key, uint64_t iova,
		      struct ddtx_proto_mr **out, uint64_t *key);
int ddtx_proto_mr_dereg(struct ddtx_proto_domain *pd, struct ddtx_proto_mr *mr);
/*
 * Device memory (FI_HMEM_CUDA on device `device`): every segment must be memory of that
 * device (-FI_EINVAL otherwise).  Local use only so far: remote access is -FI_EOPNOTSUPP (RMA
 * on device memory is not built); the key is a placeholder peers cannot use.
 */
int ddtx_proto_mr_reg_cuda(struct ddtx_proto_domain *pd, const struct iovec *iov, size_t count,
			   uint64_t access, int device, const uint64_t *requested_key,
			   uint64_t iova, struct ddtx_proto_mr **out, uint64_t *key);

/*
 * Device memory: is FI_HMEM offered (libcuda.so.1 loads, cuInit succeeds, at least one device)?
 * What this build has for it (the device pack kernels: built or not), for logs and fi_info.
 * ddtx_proto_domain_set_hmem: the domain was opened with FI_HMEM (data calls accept device
 * memory; without it a device buffer is -FI_EINVAL).
 */
bool ddtx_proto_hmem_offered(void);
/* A CUDA MR's memory is still the allocation it was registered on: 0, else -FI_EINVAL. */
int ddtx_proto_mr_live(const struct ddtx_proto_mr *mr);
const char *ddtx_proto_hmem_describe(void);
void ddtx_proto_domain_set_hmem(struct ddtx_proto_domain *pd, bool on);
/*
 * FI_RMA_EVENT on an MR (fi_mr_bind of a counter): fn(arg, write) is called, domain locked,
 * whenever a peer's RMA or atomic accessed the MR (write: it wrote, else it read).  A peer's RMA
 * is seen only when the peer's endpoint has FI_RMA_EVENT (its notification, docs/wire-protocol.md).
 */
typedef void (*ddtx_proto_mr_event_fn)(void *arg, bool write);
void ddtx_proto_mr_bind_event(struct ddtx_proto_mr *mr, ddtx_proto_mr_event_fn fn, void *arg);

/* Layout handles of fi_ddtx.h (they take the domain lock themselves). */
int ddtx_proto_layout_create(struct ddtx_proto_domain *pd, const struct iovec *blocks,
			     size_t count, struct fi_ddtx_layout **layout);
int ddtx_proto_layout_create_strided(struct ddtx_proto_domain *pd, size_t block_len,
				     size_t stride, size_t count, struct fi_ddtx_layout **layout);
int ddtx_proto_layout_create_vector(struct ddtx_proto_domain *pd, size_t offset, size_t block_len,
				    size_t ndims, const size_t *counts, const size_t *strides,
				    struct fi_ddtx_layout **layout);
int ddtx_proto_layout_create_subarray(struct ddtx_proto_domain *pd, size_t ndims,
				      const size_t *sizes, const size_t *subsizes,
				      const size_t *starts, size_t elem_size,
				      struct fi_ddtx_layout **layout);
int ddtx_proto_layout_create_indexed_block(struct ddtx_proto_domain *pd, size_t block_len,
					   const size_t *offsets, size_t count,
					   struct fi_ddtx_layout **layout);
int ddtx_proto_layout_free(struct fi_ddtx_layout *layout);
size_t ddtx_proto_layout_size(const struct fi_ddtx_layout *layout);

/* ---- endpoint ---- */

/* Create the endpoint's data-path state and its wire endpoint (at fi_endpoint time). */
int ddtx_proto_ep_open(struct ddtx_proto_domain *pd, const struct ddtx_proto_owner_ops *ops,
		       void *owner, struct ddtx_proto_ep **out);
/* Tear down; pending operations are dropped without completions. */
void ddtx_proto_ep_close(struct ddtx_proto_ep *pep);
/* Start accepting data calls with these attributes (fi_enable). */
void ddtx_proto_ep_enable(struct ddtx_proto_ep *pep, const struct ddtx_proto_ep_attr *attr);
/* FI_OPT_MIN_MULTI_RECV changed. */
void ddtx_proto_ep_set_min_multi_recv(struct ddtx_proto_ep *pep, size_t min);
/* The endpoint's address blob (-FI_ETOOSMALL with *len set if the buffer is short). */
int ddtx_proto_ep_getname(struct ddtx_proto_ep *pep, void *addr, size_t *len);
/* Bind the endpoint to a service name (common/name.h; see ddtx_wire_ep_bind). */
int ddtx_proto_ep_bind(struct ddtx_proto_ep *pep, const struct ddtx_name_addr *name);
/* The address blob of the endpoint bound to a service name (see ddtx_wire_name_resolve). */
int ddtx_proto_name_resolve(struct ddtx_proto_domain *pd, const struct ddtx_name_addr *name,
			    int timeout_ms, void *addr, size_t *len);
/* Move incoming messages, posted work and timers forward. */
void ddtx_proto_progress(struct ddtx_proto_ep *pep);
/* fi_cancel of a posted receive: FI_ECANCELED completion if found, -FI_ENOENT otherwise. */
ssize_t ddtx_proto_cancel(struct ddtx_proto_ep *pep, void *context);

/* ---- data calls (the fi_ops tables of core/ call these) ---- */

ssize_t ddtx_proto_send(struct ddtx_proto_ep *pep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
			uint64_t flags, bool tagged);
ssize_t ddtx_proto_recv(struct ddtx_proto_ep *pep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			uint64_t flags, bool tagged);
/* FI_PEEK (with FI_CLAIM or FI_DISCARD) and FI_CLAIM of a peeked message (into iov, or into a
 * layout handle's blocks: desc[0]). */
ssize_t ddtx_proto_peek(struct ddtx_proto_ep *pep, fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context, uint64_t flags, const struct iovec *iov, void **desc,
			size_t count);
/* fi_writemsg / fi_readmsg and the simpler calls built on them. */
ssize_t ddtx_proto_rma(struct ddtx_proto_ep *pep, const struct fi_msg_rma *msg, uint64_t flags,
		       bool write);

/* ---- atomics (fi_atomic(3)): executed by the target, proto/atomic.c ---- */

/* The three families; the same numbers as the engine's executor (engine/atomic_exec.h). */
enum ddtx_proto_atomic_kind {
	DDTX_PROTO_ATOMIC_WRITE, DDTX_PROTO_ATOMIC_FETCH, DDTX_PROTO_ATOMIC_COMPARE,
};

/*
 * fi_atomicvalid and siblings, fi_query_atomic: 0 with *count the most elements one operation
 * carries and *size the bytes of one, or -FI_EOPNOTSUPP if kind does not offer op on datatype.
 */
int ddtx_proto_atomic_valid(struct ddtx_proto_domain *pd, enum ddtx_proto_atomic_kind kind,
			    uint32_t datatype, uint32_t op, size_t *count, size_t *size);
/* fi_atomicmsg, fi_fetch_atomicmsg, fi_compare_atomicmsg and the calls built on them. */
ssize_t ddtx_proto_atomic(struct ddtx_proto_ep *pep, enum ddtx_proto_atomic_kind kind,
			  const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
			  size_t compare_count, struct fi_ioc *resultv, size_t result_count,
			  uint64_t flags);

#endif /* DDTX_PROTO_H */
