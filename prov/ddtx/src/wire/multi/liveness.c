/* SPDX-License-Identifier: BSD-2-Clause */
/* Liveness probes of fabric peers (see multi.h).  A probe and its answer are 8-byte messages
 * beginning with DDTX_WIRE_MSG_OWN. */
#include <string.h>

#include <rdma/fi_errno.h>

#include "common/clock.h"
#include "common/log.h"
#include "wire/multi/multi.h"

enum { PROBE = 1, ANSWER = 2 };
#define OWN_LEN 8

static int send_own(struct ddtx_multi_ep *ep, struct ddtx_multi_peer *p, uint8_t kind)
{
	uint8_t msg[OWN_LEN] = {DDTX_WIRE_MSG_OWN, kind};

	return ddtx_wire_send(ep->sub[p->sub], p->sub_peer, msg, sizeof(msg), NULL, 0);
}

bool ddtx_multi_live_recv(struct ddtx_multi_ep *ep, struct ddtx_multi_peer *p, const void *buf,
			  size_t len)
{
	const uint8_t *m = buf;

	p->heard_ns = ddtx_coarse_time_ns();
	p->probe_ns = 0;
	if (!len || m[0] != DDTX_WIRE_MSG_OWN)
		return false;
	/* One answer owed per peer however many probes it sends. */
	if (len == OWN_LEN && m[1] == PROBE && p->sub == DDTX_MULTI_FABRIC) {
		p->pong_owed = true;
		ep->pongs_owed = true;
	}
	return true;
}

bool ddtx_multi_live_check(struct ddtx_multi_ep *ep, struct ddtx_multi_peer *p)
{
	uint64_t now;

	if (p->gone)
		return false;
	if (!ep->timeout_ns || p->sub != DDTX_MULTI_FABRIC)
		return true;
	now = ddtx_coarse_time_ns();
	if (p->probe_ns && now - p->probe_ns > ep->timeout_ns) {
		p->gone = true;
		DDTX_WARN(FI_LOG_EP_DATA, "multi: a peer on another host has been silent for %llu "
			  "ms and did not answer a probe: taken as gone\n",
			  (unsigned long long)((now - p->heard_ns) / 1000000));
		return false;
	}
	if (!p->probe_ns && now - p->heard_ns > ep->timeout_ns / 2 &&
	    send_own(ep, p, PROBE) == 0)
		p->probe_ns = now;
	return true;
}

void ddtx_multi_live_answer(struct ddtx_multi_ep *ep)
{
	bool owed = false;

	if (!ep->pongs_owed)
		return;
	for (size_t i = 0; i < ep->npeers; i++) {
		struct ddtx_multi_peer *p = &ep->peers[i];
		if (p->pong_owed && !p->gone) {
			p->pong_owed = send_own(ep, p, ANSWER) == -FI_EAGAIN;
			owed = owed || p->pong_owed;
		}
	}
	ep->pongs_owed = owed;
}
