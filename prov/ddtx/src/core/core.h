/*
 * libfabric objects of the ddtx provider: fabric, domain, endpoint, AV, CQ, counter, MR, EQ.
 * The data path of an endpoint (send/recv/tagged/RMA and their progress) lives in proto/;
 * this layer owns object life cycles, bindings, completion queues and counters.
 */
#ifndef DDTX_CORE_H
#define DDTX_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <rdma/fi_ddtx.h>

#include <rdma/fi_errno.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/minmax.h"
#include "common/provider.h"
#include "common/settings.h"
#include "common/hindex.h"
#include "common/list.h"
#include "proto/proto.h"

/* The capabilities ddtx offers (fi_getinfo answers a subset of these). */
#define DDTX_CAPS                                                                                \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |   \
	 FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM |      \
	 FI_MULTI_RECV)
#define DDTX_TX_OP_FLAGS                                                                         \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |                  \
	 FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA)
#define DDTX_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV)

#define DDTX_INJECT_SIZE 4096
#define DDTX_CQ_DATA_SIZE 8
#define DDTX_MAX_MSG_SIZE ((size_t)1 << 40)

struct ddtx_fabric {
	struct fid_fabric fid;
	atomic_int ref;
	struct fi_fabric_attr attr;
};

struct ddtx_domain {
	struct fid_domain fid;
	struct ddtx_fabric *fabric;
	atomic_int ref;                  /* endpoints, AVs, CQs, counters, MRs opened on it */
	struct fi_info *info;            /* the fi_info it was opened with (fi_dupinfo) */
	uint64_t mr_mode;
	enum fi_threading threading;
	/*
	 * One lock serialises the data path and progress of everything opened on the domain.
	 * FI_THREAD_DOMAIN callers pay one uncontended lock per call; FI_THREAD_SAFE is then
	 * trivially correct.  Recursive because CQ reads progress endpoints that write CQs.
	 */
	pthread_mutex_t lock;
	struct ddtx_list eps;            /* struct ddtx_ep.domain_entry: progressed by CQ reads */
	struct ddtx_proto_domain *proto; /* the data path: engine and wire domain (proto/proto.h) */
};

/* Address vector: blobs of peer wire addresses, indexed by fi_addr_t for both AV types. */
struct ddtx_av_entry {
	bool valid;
	uint8_t addr[64];
	size_t addr_len;
};

struct ddtx_av {
	struct fid_av fid;
	struct ddtx_domain *domain;
	atomic_int ref;                  /* endpoints bound */
	enum fi_av_type type;
	size_t addrlen;
	struct ddtx_av_entry *entries;
	size_t count;                    /* entries used (next index) */
	size_t capacity;
	struct ddtx_hindex index;        /* blob -> fi_addr (FI_SOURCE, duplicate inserts) */
	uint64_t generation;             /* bumped on remove: endpoint caches revalidate */
};

/* Look up fi_addr by address blob; FI_ADDR_NOTAVAIL if absent.  Caller holds domain lock. */
fi_addr_t ddtx_av_reverse(struct ddtx_av *av, const void *addr, size_t len);
/* The blob of fi_addr, or NULL if invalid.  Caller holds domain lock. */
const struct ddtx_av_entry *ddtx_av_get(struct ddtx_av *av, fi_addr_t addr);

/* One completion as ddtx stores it, converted to the CQ's format on read. */
struct ddtx_cq_entry {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src_addr;
	bool error;                      /* placeholder of the next entry of cq->errors (order) */
};

struct ddtx_cq_err {
	struct ddtx_list_entry entry;
	struct fi_cq_err_entry err;
	fi_addr_t src_addr;
};

struct ddtx_cq {
	struct fid_cq fid;
	struct ddtx_domain *domain;
	atomic_int ref;                  /* endpoints bound */
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	enum fi_cq_wait_cond wait_cond;  /* FI_CQ_COND_THRESHOLD: sread's cond is a size_t */
	size_t size;
	struct ddtx_cq_entry *ring;      /* grows when full: completions are never dropped */
	size_t head, count, capacity;
	struct ddtx_list errors;         /* struct ddtx_cq_err */
	struct ddtx_cq_err *last_err;    /* freed on the next readerr (err_data lifetime) */
	atomic_int signaled;             /* fi_cq_signal wakes sread */
};

/* Append a completion.  Caller holds the domain lock. */
void ddtx_cq_write(struct ddtx_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
		   uint64_t data, uint64_t tag, fi_addr_t src_addr);
/* Append an error completion; err is a positive FI_E* value (fi_cq_err_entry convention). */
void ddtx_cq_write_err(struct ddtx_cq *cq, void *context, uint64_t flags, size_t len,
		       void *buf, uint64_t data, uint64_t tag, size_t olen, int err,
		       fi_addr_t src_addr);

struct ddtx_cntr {
	struct fid_cntr fid;
	struct ddtx_domain *domain;
	atomic_int ref;
	atomic_uint_fast64_t value;
	atomic_uint_fast64_t err;
	enum fi_wait_obj wait_obj;
};

void ddtx_cntr_inc(struct ddtx_cntr *cntr);
void ddtx_cntr_err_inc(struct ddtx_cntr *cntr);

struct ddtx_mr {
	struct fid_mr fid;               /* fid.key is what fi_mr_key() returns */
	struct ddtx_domain *domain;
	struct ddtx_proto_mr *pmr;
	uint64_t access;                 /* FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_* */
	uint64_t flags;
};

struct ddtx_eq {
	struct fid_eq fid;
	struct ddtx_fabric *fabric;
	pthread_mutex_t lock;
	struct ddtx_list events;
	struct ddtx_list errors;
};

struct ddtx_ep {
	struct fid_ep fid;
	struct ddtx_domain *domain;
	struct ddtx_list_entry domain_entry;
	struct fi_info *info;            /* fi_dupinfo of the info it was opened with */
	struct ddtx_av *av;
	struct ddtx_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective; /* FI_SELECTIVE_COMPLETION on the binding */
	struct ddtx_cntr *cntrs[DDTX_CNTR_COUNT];
	uint64_t tx_op_flags, rx_op_flags;
	size_t min_multi_recv;           /* FI_OPT_MIN_MULTI_RECV */
	bool enabled;
	struct ddtx_proto_ep *proto;     /* the data path state and wire endpoint, owned by proto/ */
};

/* The ddtx endpoint behind a fid_ep of this provider. */
static inline struct ddtx_ep *ddtx_ep_of(struct fid_ep *fid)
{
	return ddtx_container_of(fid, struct ddtx_ep, fid);
}

/* Progress every enabled endpoint of the domain; takes the domain lock. */
void ddtx_domain_progress(struct ddtx_domain *domain);

/* Object constructors (fi_ops tables point here). */
int ddtx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info);
int ddtx_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int ddtx_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
int ddtx_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		 void *context);
int ddtx_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		 void *context);
int ddtx_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		 void *context);
int ddtx_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
int ddtx_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		 void *context);
int ddtx_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		void *context);
int ddtx_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		 void *context);
int ddtx_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		    struct fid_mr **mr);

/* The fi_info template ddtx answers from (getinfo.c). */
struct fi_info *ddtx_info_template(void);

/* Declare and read the FI_DDTX_* variables (provider.c; called from fi_prov_ini). */
void ddtx_settings_load(void);

#endif /* DDTX_CORE_H */
