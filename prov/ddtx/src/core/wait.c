/* SPDX-License-Identifier: BSD-2-Clause */
/* Blocking waits: how fi_cq_sread, fi_cntr_wait and fi_eq_sread pass the time. */
#include <sched.h>
#include <time.h>

#include "core/wait.h"

/* Yield for the first few rounds (cheap when a peer is about to answer), then nap 50 us. */
void ddtx_wait_pause(unsigned int *spins)
{
	if ((*spins)++ < 64) {
		sched_yield();
		return;
	}
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 50000 };
	nanosleep(&ts, NULL);
}
