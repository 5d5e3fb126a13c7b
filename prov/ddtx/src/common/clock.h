/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Monotonic time in nanoseconds.  The coarse clock (a few ms resolution) costs a fraction of the
 * precise one and is what periodic checks on the progress path use.
 */
#ifndef DDTX_COMMON_CLOCK_H
#define DDTX_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ddtx_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#define ddtx_time_ns() ddtx_clock_ns(CLOCK_MONOTONIC)
#define ddtx_coarse_time_ns() ddtx_clock_ns(CLOCK_MONOTONIC_COARSE)

#endif /* DDTX_COMMON_CLOCK_H */
