/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ddtx provider extensions, reached through fi_open_ops() on a ddtx domain:
 *
 *   struct fi_ddtx_ops *ops;
 *   fi_open_ops(&domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&ops, NULL);
 *   struct fi_ddtx_stats st;
 *   ops->stats(domain, &st);
 *
 * See fi_ddtx(3).
 */
#ifndef FI_DDTX_H
#define FI_DDTX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_DDTX_DOMAIN_OPS_1 "ddtx_domain_ops_1"

#define FI_DDTX_WIRES_MAX 2

/* How a message's or RMA operation's bytes were moved. */
enum fi_ddtx_scheme {
	FI_DDTX_SCHEME_EAGER = 0,  /* copied through the receiver's ring with the header */
	FI_DDTX_SCHEME_PACK,       /* gathered into bounce buffers, scattered at the receiver */
	FI_DDTX_SCHEME_SGL,        /* zero copy: matched scatter-gather descriptor pairs */
	FI_DDTX_SCHEME_UMR,        /* zero copy: one write per multi-entry key window pair */
	FI_DDTX_SCHEME_RMA,        /* fi_write/fi_read: application keys, zero copy */
	FI_DDTX_SCHEME_COUNT,
};

/* How host staging copied device memory (fi_ddtx_stats.hmem_copy_ops). */
enum fi_ddtx_hmem_copy {
	FI_DDTX_HMEM_COPY_SEGMENTS = 0,
	FI_DDTX_HMEM_COPY_2D,
	FI_DDTX_HMEM_COPY_KERNEL,
	FI_DDTX_HMEM_COPY_COUNT,
};

struct fi_ddtx_stats {
	/* Operations and payload bytes per scheme, counted at the side that chose the scheme
	 * (the receiver for messages, the initiator for RMA), plus sender-side totals. */
	uint64_t ops[FI_DDTX_SCHEME_COUNT];
	uint64_t bytes[FI_DDTX_SCHEME_COUNT];
	uint64_t tx_ops;           /* messages sent */
	uint64_t rx_ops;           /* messages received */
	uint64_t iov_entries_max;  /* largest iov count seen on a send or receive */
	enum fi_ddtx_scheme last_scheme; /* scheme of the most recently completed message */

	/* DDT engine: caches.  A layout is an iov list shape at a base address. */
	uint64_t layout_hits, layout_misses, layout_evictions, layout_invalidations;
	uint64_t reg_hits, reg_misses, reg_evictions, reg_invalidations; /* registration cache */
	uint64_t mkey_hits, mkey_misses, mkey_evictions;   /* local mkey cache (window sets) */
	uint64_t rmkey_hits, rmkey_misses;                 /* remote mkey cache (CTS lists) */
	/* mkey pool */
	uint64_t pool_level, pool_capacity, pool_created, pool_refills, pool_empty;
	/* registration thread */
	uint64_t regthread_layouts;    /* layouts it made ready */
	uint64_t regthread_ns;         /* time it spent registering */
	uint64_t regthread_failures;
	/* scheme choice */
	uint64_t zcopy_not_ready;      /* zero copy preferred, layout not registered yet: PACK */
	uint64_t umr_fallbacks;        /* UMR decided but not possible (keys short): SGL */
	uint64_t explorations;         /* choices made to measure a scheme's cost */
	uint64_t learned_threshold;    /* block length where zero copy starts to win, bytes */

	/* A wire per peer (FI_DDTX_WIRE=multi): what each wire carried from this domain, counted
	 * where it was posted.  nwires is 0 on a single wire. */
	uint32_t nwires;
	struct fi_ddtx_wire_stats {
		char name[16];             /* "shm", "ofi", "verbs" */
		uint64_t peers;            /* peers reached through it */
		uint64_t msgs, msg_bytes;  /* messages sent (protocol headers included) */
		uint64_t rma_ops, rma_bytes; /* RDMA writes and reads posted */
	} wires[FI_DDTX_WIRES_MAX];

	/* Device memory (FI_HMEM_CUDA), by the way it moved.  Host staging is the only way built
	 * so far: device segments copied through a host bounce buffer by the CUDA driver.  The
	 * scheme that carried the bounce buffer is counted in ops[] / bytes[] as for host memory. */
	uint64_t hmem_tx_staged;       /* sends whose data was copied out of device memory */
	uint64_t hmem_rx_staged;       /* receives posted with device memory */
	uint64_t hmem_staged_bytes;    /* bytes copied between device and bounce buffers */
	uint64_t hmem_copy_errors;     /* driver copies refused (freed memory, say): error completions */
	/* ... and how the device part was copied (FI_DDTX_HMEM_COPY): per segment, one 2-D copy
	 * of a vector, or the device pack kernel; fallbacks: the forced way was impossible */
	uint64_t hmem_copy_ops[FI_DDTX_HMEM_COPY_COUNT];
	uint64_t hmem_copy_fallbacks;
	/* Where the CUDA driver loads, which segments of data calls were asked about (one
	 * cuPointerGetAttributes each) and which were answered by the domain's cache of pages
	 * known to be host memory, in every domain (with FI_HMEM or without). */
	uint64_t hmem_ptr_queries;
	uint64_t hmem_ptr_cached;
	/* CUDA IPC on the shm wire (FI_DDTX_HMEM_IPC): rendezvous sends from device memory
	 * offered to the receiver by IPC handle.  tx: sends the receiver completed through IPC,
	 * tx_staged: offers the receiver declined (the send was staged then); rx, bytes: receives
	 * that copied through IPC, copy_2d / copy_batched: how (one cuMemcpy2DAsync, or batched
	 * cuMemcpyAsync); declined: offers this side could not take (mapping refused, a receive
	 * it cannot serve); errors: copies that failed after mapping (error completions);
	 * opens / hits / stale: the per-peer mapping cache. */
	uint64_t hmem_ipc_tx, hmem_ipc_tx_staged;
	uint64_t hmem_ipc_rx, hmem_ipc_bytes, hmem_ipc_copy_2d, hmem_ipc_copy_batched;
	uint64_t hmem_ipc_declined, hmem_ipc_errors;
	uint64_t hmem_ipc_opens, hmem_ipc_hits, hmem_ipc_stale;
	/* The ofi wire: messages (and their bytes, wire header included) written into the
	 * receiver's receive ring by RMA with remote CQ data instead of sent, which spares
	 * tcp;ofi_rxm's copy of each message on both sides (fi_ddtx(7), "ofi wire"). */
	uint64_t ofi_ring_msgs, ofi_ring_bytes;
	/* Pull on the shm wire: rendezvous the receiver read from the sender's block, and those
	 * of them it split (it read the first part while the sender wrote the rest). */
	uint64_t pulls, pull_splits;
	/* Delivery ACKs (FI_DELIVERY_COMPLETE) this domain's receivers sent: carried in the header
	 * of another message to the sender, and ACK messages of their own (each listing one or
	 * more sends; FI_DDTX_ACK_DELAY_US). */
	uint64_t acks_carried, acks_alone;
	/* CUDA IPC receives copied by one launch of the device copy kernel (beside copy_2d and
	 * copy_batched above), and sends whose blocks the sender packed with the pack kernel
	 * into a device bounce buffer that it offered instead (too many blocks to list). */
	uint64_t hmem_ipc_copy_kernel, hmem_ipc_tx_packed;
	/* Pulls (above) of a noncontiguous send, read through the sender's windows. */
	uint64_t pull_windows;
	/* CUDA IPC receives (hmem_ipc_rx), where their time went: from taking an offer (its
	 * receive matched) to the copy's start (mapping the sender's allocations, planning the
	 * copy), and the copy itself until the device finished it. */
	uint64_t hmem_ipc_plan_ns, hmem_ipc_copy_ns;
	/* Device memory moved zero copy by a wire whose NIC reads and writes it (GPUDirect RDMA;
	 * FI_DDTX_HMEM_DIRECT): rendezvous sends from device buffers and receives into them,
	 * their bytes, and the registrations dropped because an allocation was freed and
	 * another took its addresses (its buffer id changed); of those sends and receives, the
	 * ones whose many small blocks the pack kernel gathered into (or scattered from) one
	 * device bounce buffer that the NIC moved. */
	uint64_t hmem_direct_tx, hmem_direct_rx, hmem_direct_bytes, hmem_direct_stale;
	uint64_t hmem_direct_kernel;
	/* Sends and receives posted with a layout handle (below) as their description. */
	uint64_t handle_ops;
	/* PACK payload bytes sent behind the RTS before the receiver's CTS (STREAM chunks, on
	 * wires whose round trip costs more than a chunk: the ofi wire). */
	uint64_t stream_bytes;
	/* PACK payload bytes the sender wrote into the peer's queue with streaming
	 * (non-temporal) stores, as the receiver asked (the shm wire, FI_DDTX_PACK_STORES). */
	uint64_t pack_streaming_bytes;
	/* Peers taken as gone and started afresh for a new send (a server restarted on its
	 * service, reached again through the same fi_addr: fi_ddtx(7), ADDRESSING). */
	uint64_t peer_restarts;
	/* Payload sent before a match is bounded per peer (fi_ddtx(7), "flow control"): the most
	 * unexpected payload bytes this domain's endpoints held at once, and this domain's sends
	 * that went as a rendezvous without payload because the receiver held the most it takes
	 * from us (an FI_INJECT goes eagerly all the same). */
	uint64_t unexp_bytes_max;
	uint64_t credit_waits;
};

/*
 * Layout handles: a runtime describes a layout once and passes the handle with each
 * operation, so ddtx skips hashing and flattening.  Use: iov_count 1, msg_iov[0] = {base,
 * total bytes of the layout}, desc[0] = (void *)handle, in fi_sendmsg / fi_tsendmsg /
 * fi_recvmsg / fi_trecvmsg.  The layout's offsets are relative to base.
 */
struct fi_ddtx_layout;

#define FI_DDTX_CLASS_LAYOUT (FI_PROV_SPECIFIC | 0x1d7)

struct fi_ddtx_ops {
	size_t size;               /* sizeof(struct fi_ddtx_ops) of the provider */
	/* Copy the domain's counters into *stats. */
	int (*stats)(struct fid_domain *domain, struct fi_ddtx_stats *stats);
	/* Name of a scheme ("eager", "pack", "sgl", "umr", "rma"). */
	const char *(*scheme_name)(enum fi_ddtx_scheme scheme);
	/* A layout from count blocks {offset from base in iov_base, length in iov_len}. */
	int (*layout_create)(struct fid_domain *domain, const struct iovec *blocks, size_t count,
			     struct fi_ddtx_layout **layout);
	/* The compact strided form: count blocks of block_len bytes, stride bytes apart. */
	int (*layout_create_strided)(struct fid_domain *domain, size_t block_len, size_t stride,
				     size_t count, struct fi_ddtx_layout **layout);
	int (*layout_free)(struct fi_ddtx_layout *layout);
	/* Bytes a layout covers (what msg_iov[0].iov_len must be). */
	size_t (*layout_size)(const struct fi_ddtx_layout *layout);

	/*
	 * Added later: present when size > offsetof(struct fi_ddtx_ops, <member>).  These
	 * describe a layout by its loops, which ddtx packs with compiled kernels.
	 */
	/* Nested vector: counts[0] blocks of block_len bytes strides[0] apart, that row
	 * repeated counts[1] times strides[1] apart, ... (ndims 1 to 4, innermost first), the
	 * first block at offset from base. */
	int (*layout_create_vector)(struct fid_domain *domain, size_t offset, size_t block_len,
				    size_t ndims, const size_t *counts, const size_t *strides,
				    struct fi_ddtx_layout **layout);
	/* A C-order subarray (as MPI_Type_create_subarray with MPI_ORDER_C): subsizes[d]
	 * elements of elem_size bytes from starts[d] in each of ndims (1 to 5) dimensions of
	 * an array of sizes[d]; base is the array's start. */
	int (*layout_create_subarray)(struct fid_domain *domain, size_t ndims,
				      const size_t *sizes, const size_t *subsizes,
				      const size_t *starts, size_t elem_size,
				      struct fi_ddtx_layout **layout);
	/* count blocks of block_len bytes at offsets[i] from base, in that order. */
	int (*layout_create_indexed_block)(struct fid_domain *domain, size_t block_len,
					   const size_t *offsets, size_t count,
					   struct fi_ddtx_layout **layout);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_DDTX_H */
