/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ranks on two "hosts" (util/hosts.sh): when DDTX_HOSTS describes the hosts, a rank enters the
 * network namespace of its host, a UTS namespace with the host's name and a mount namespace in
 * which the host's own tmpfs covers /dev/shm.  Rank r of n goes to host r * nhosts / n: the
 * first half on A, the second on B (a 4-rank job has 2 per host).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ft_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define FT_MAX_HOSTS 8

/* One ';'-separated entry "L:<netns>:<shm dir>:<name>:<dev>:<addr>" split in place. */
static int split(char *entry, char *field[6])
{
	for (int i = 0; i < 6; i++) {
		field[i] = entry;
		char *c = strchr(entry, ':');
		if (i < 5) {
			if (!c)
				return -1;
			*c = '\0';
			entry = c + 1;
		}
	}
	return 0;
}

int ft_host_of(int rank, int nranks)
{
	const char *env = getenv("DDTX_HOSTS");
	int n = 0;

	if (!env || !*env)
		return -1;
	for (const char *p = env; p; p = strchr(p, ';'), p = p ? p + 1 : NULL)
		n++;
	return (int)((long)rank * n / nranks);
}

void ft_host_enter(int rank, int nranks)
{
	int h = ft_host_of(rank, nranks);
	char *copy, *entry, *save = NULL, *field[6];
	int fd;

	if (h < 0)
		return;
	copy = strdup(getenv("DDTX_HOSTS"));
	entry = strtok_r(copy, ";", &save);
	for (int i = 0; i < h && entry; i++)
		entry = strtok_r(NULL, ";", &save);
	FT_CHECK(entry && split(entry, field) == 0, "DDTX_HOSTS: no entry %d", h);
	fd = open(field[1], O_RDONLY | O_CLOEXEC);
	FT_CHECK(fd >= 0, "open %s: %s", field[1], strerror(errno));
	FT_CHECK(setns(fd, CLONE_NEWNET) == 0, "setns %s: %s", field[1], strerror(errno));
	close(fd);
	FT_CHECK(unshare(CLONE_NEWNS | CLONE_NEWUTS) == 0, "unshare: %s", strerror(errno));
	FT_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "mount private: %s",
		 strerror(errno));
	FT_CHECK(mount(field[2], "/dev/shm", NULL, MS_BIND, NULL) == 0, "bind %s: %s", field[2],
		 strerror(errno));
	FT_CHECK(sethostname(field[3], strlen(field[3])) == 0, "sethostname: %s",
		 strerror(errno));
	setenv("DDTX_TEST_HOST", field[0], 1);
	setenv("DDTX_TEST_HOST_DEV", field[4], 1);
	setenv("DDTX_TEST_HOST_ADDR", field[5], 1);
	free(copy);
}
