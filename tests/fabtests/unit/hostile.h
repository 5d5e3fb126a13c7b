/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A victim and a hostile peer in one process, for the hostile-peer tests and the protocol fuzzer.
 *
 * The victim is a real data-path endpoint (proto.h) on the shm wire, with an owner that records
 * its completions and an AV of two entries: fi_addr 0 is the attacker, 1 a well-behaved friend.
 * The attacker and the friend are bare shm wire endpoints in other wire domains: they reach the
 * victim exactly as another process does, through its receive ring (the shm wire moves bytes
 * with process_vm_writev to its own pid just as to another one), and the attacker can also write
 * the victim's ring indices directly, as any process that maps the ring can.
 */
#ifndef DDTX_TEST_HOSTILE_H
#define DDTX_TEST_HOSTILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto_internal.h"
#include "wire/wire.h"

#define HOSTILE_MAX_COMPLETIONS 4096
#define HOSTILE_MAX_CAPTURED 512
#define HOSTILE_MSG_MAX 65536

struct hostile_completion {
	enum ddtx_proto_queue q;
	struct ddtx_proto_completion c;
};

/* A message the attacker (or friend) received from the victim. */
struct hostile_msg {
	size_t len;
	uint8_t *bytes;
};

struct hostile_peer {
	struct ddtx_wire_domain *wd;
	struct ddtx_wire_ep *we;
	ddtx_peer_t victim;             /* the victim in this endpoint's peer table */
	struct hostile_msg got[HOSTILE_MAX_CAPTURED];
	size_t ngot;
};

struct hostile {
	struct ddtx_rlock lock;
	struct ddtx_proto_domain *pd;
	struct ddtx_proto_ep *pep;
	uint8_t blob[2][64];            /* AV: 0 attacker, 1 friend */
	size_t blob_len;
	struct hostile_completion done[HOSTILE_MAX_COMPLETIONS];
	size_t ndone;
	size_t dropped_completions;     /* beyond HOSTILE_MAX_COMPLETIONS */
	uint64_t counted[DDTX_CNTR_COUNT]; /* what the victim counted, by counter role */
	struct hostile_peer attacker, friend;
};

/* Open victim, attacker and friend; 0 or a negative FI_E* (the caller skips on -FI_ENOSYS). */
int hostile_open(struct hostile *h);
void hostile_close(struct hostile *h);

/* One progress call of the victim (under its domain lock, as core makes it). */
void hostile_victim_progress(struct hostile *h);
/* Drain what the victim sent to p into p->got (keeps the newest HOSTILE_MAX_CAPTURED). */
void hostile_peer_progress(struct hostile_peer *p);
void hostile_peer_forget(struct hostile_peer *p);
/* The newest captured message of that type, or NULL. */
const void *hostile_peer_last(const struct hostile_peer *p, unsigned type, size_t *len);
/* Send raw bytes to the victim through its ring; retries (with victim progress) on -FI_EAGAIN. */
int hostile_send(struct hostile *h, struct hostile_peer *p, const void *msg, size_t len);

/* Completions the victim reported for this context (and the last one's error). */
size_t hostile_count(const struct hostile *h, void *context, int *last_err);

/* Resident set size of this process in KiB. */
long hostile_rss_kib(void);

#endif /* DDTX_TEST_HOSTILE_H */
