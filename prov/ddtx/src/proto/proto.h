/*
 * The data path of an endpoint: eager and rendezvous messaging, software tag matching and RMA
 * over a wire endpoint.  core/ calls these; proto calls engine/ and wire/.
 */
#ifndef DDTX_PROTO_H
#define DDTX_PROTO_H

#include <sys/types.h>
#include "core/core.h"
#include "proto/pdomain.h"

/* Create the endpoint's data-path state and its wire endpoint (at fi_endpoint time). */
int ddtx_proto_ep_open(struct ddtx_ep *ep);
/* Tear down; pending operations are dropped without completions.  Domain locked. */
void ddtx_proto_ep_close(struct ddtx_ep *ep);
/* Move incoming messages, posted work and timers forward.  Domain locked. */
void ddtx_proto_progress(struct ddtx_ep *ep);
/* fi_cancel of a posted receive: FI_ECANCELED completion if found, -FI_ENOENT otherwise. */
ssize_t ddtx_proto_cancel(struct ddtx_ep *ep, void *context);

/* Remote mkey cache counters of an endpoint (domain locked). */
void ddtx_proto_ep_rmkey_stats(struct ddtx_ep *ep, uint64_t *hits, uint64_t *misses);

extern struct fi_ops_msg ddtx_msg_ops;
extern struct fi_ops_tagged ddtx_tagged_ops;
extern struct fi_ops_rma ddtx_rma_ops;

#endif /* DDTX_PROTO_H */
