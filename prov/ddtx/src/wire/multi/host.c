/* SPDX-License-Identifier: BSD-2-Clause */
/* The identity of this process's shared-memory domain (see struct ddtx_multi_host). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "wire/multi/multi.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* /proc/sys/kernel/random/boot_id: a UUID, new at every boot of the kernel. */
static int boot_id(uint8_t id[16])
{
	char text[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	size_t n = 0;

	if (f) {
		if (!fgets(text, sizeof(text), f))
			text[0] = '\0';
		fclose(f);
	}
	for (const char *p = text; *p && n < 32; p++) {
		int v = hexval(*p);
		if (v < 0)
			continue;
		if (n % 2 == 0)
			id[n / 2] = (uint8_t)(v << 4);
		else
			id[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 ? 0 : -FI_ENODEV;
}

int ddtx_multi_host_self(struct ddtx_multi_host *host)
{
	struct stat shm, pid;

	memset(host, 0, sizeof(*host));
	if (boot_id(host->boot_id)) {
		DDTX_WARN(FI_LOG_CORE, "multi: no kernel boot id\n");
		return -FI_ENODEV;
	}
	if (stat("/dev/shm", &shm) || stat("/proc/self/ns/pid", &pid)) {
		DDTX_WARN(FI_LOG_CORE, "multi: cannot stat /dev/shm or the PID namespace\n");
		return -FI_ENODEV;
	}
	host->shm_dev = (uint64_t)shm.st_dev;
	host->shm_ino = (uint64_t)shm.st_ino;
	host->pidns = (uint64_t)pid.st_ino;
	return 0;
}

bool ddtx_multi_host_same(const struct ddtx_multi_host *a, const struct ddtx_multi_host *b)
{
	return !memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) && a->shm_dev == b->shm_dev &&
	       a->shm_ino == b->shm_ino && a->pidns == b->pidns;
}
