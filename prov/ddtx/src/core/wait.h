/* SPDX-License-Identifier: BSD-2-Clause */
/* Blocking waits (fi_cq_sread, fi_cntr_wait, fi_eq_sread): how they pass the time. */
#ifndef DDTX_CORE_WAIT_H
#define DDTX_CORE_WAIT_H

#include "common/clock.h"

/* Sleep briefly inside a blocking wait: the peer needs the CPU too. */
void ddtx_wait_pause(unsigned int *spins);
/* Milliseconds on a monotonic clock. */
#define ddtx_now_ms() (ddtx_time_ns() / 1000000)

#endif /* DDTX_CORE_WAIT_H */
