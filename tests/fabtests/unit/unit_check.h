/* SPDX-License-Identifier: BSD-2-Clause */
/* The check macro of the unit tests: count a failure, say where, stop after 20. */
#ifndef DDTX_UNIT_CHECK_H
#define DDTX_UNIT_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CHECK(c, ...)                                                                      \
	do {                                                                               \
		if (!(c)) {                                                                \
			failures++;                                                        \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);       \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
			if (failures > 20)                                                 \
				exit(1);                                                   \
		}                                                                          \
	} while (0)

#endif /* DDTX_UNIT_CHECK_H */
