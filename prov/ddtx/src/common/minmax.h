/* SPDX-License-Identifier: BSD-2-Clause */
/* MIN and MAX that every floor uses (arguments are evaluated twice: pass plain values). */
#ifndef DDTX_COMMON_MINMAX_H
#define DDTX_COMMON_MINMAX_H

#define DDTX_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DDTX_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif /* DDTX_COMMON_MINMAX_H */
