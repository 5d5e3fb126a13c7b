/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Records of multi-wire endpoints in the host's /dev/shm (multi.h):
 *
 *     /dev/shm/ddtxmw-<uid>-<token hex>      (0600, owned by the user, struct ddtx_multi_record)
 *
 * written to a private file and linked into place, so a reader never sees half a record.  A
 * record lives as long as its endpoint; one left by a process that died is ignored by readers
 * (its pid is gone) and removed at the next domain open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "common/hindex.h"
#include "common/log.h"
#include "wire/multi/multi.h"

#define DIR_SHM "/dev/shm/"
#define REC_MAGIC 0x3176776d78746464ull   /* "ddtxmwv1" */

static void rec_path(char *path, size_t len, uint64_t token)
{
	snprintf(path, len, DIR_SHM "ddtxmw-%u-%016llx", (unsigned)getuid(),
		 (unsigned long long)token);
}

static bool pid_alive(uint32_t pid)
{
	return pid && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* 0 if path holds a well-formed record of this user; -FI_ENOENT otherwise. */
static int read_rec(const char *path, struct ddtx_multi_record *rec)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -FI_ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
	    st.st_size != (off_t)sizeof(*rec)) {
		close(fd);
		return -FI_ENOENT;
	}
	n = pread(fd, rec, sizeof(*rec), 0);
	close(fd);
	if (n != (ssize_t)sizeof(*rec) || rec->magic != REC_MAGIC ||
	    rec->local_len > sizeof(rec->local))
		return -FI_ENOENT;
	return 0;
}

/* A record counts when its publisher is alive and shares our PID namespace (pids mean
 * something only there). */
static bool rec_live(const struct ddtx_multi_record *rec, const struct ddtx_multi_host *self)
{
	return rec->host.pidns == self->pidns && pid_alive(rec->pid);
}

int ddtx_multi_publish(uint64_t token, const struct ddtx_multi_record *rec)
{
	char path[96], tmp[112];
	int fd;

	rec_path(path, sizeof(path), token);
	snprintf(tmp, sizeof(tmp), "%s.tmp-%u", path, (unsigned)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -FI_EIO;
	struct ddtx_multi_record r = *rec;
	r.magic = REC_MAGIC;
	if (pwrite(fd, &r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		close(fd);
		unlink(tmp);
		return -FI_EIO;
	}
	close(fd);
	/* rename: replaces a stale record of the same token (a fabric blob reused) */
	if (rename(tmp, path)) {
		unlink(tmp);
		return -FI_EIO;
	}
	return 0;
}

void ddtx_multi_unpublish(uint64_t token)
{
	char path[96];
	struct ddtx_multi_record rec;

	rec_path(path, sizeof(path), token);
	if (read_rec(path, &rec) == 0 && rec.pid == (uint32_t)getpid())
		unlink(path);
}

int ddtx_multi_lookup(uint64_t token, struct ddtx_multi_record *rec)
{
	char path[96];
	struct ddtx_multi_host self;

	rec_path(path, sizeof(path), token);
	if (ddtx_multi_host_self(&self) || read_rec(path, rec) || !rec_live(rec, &self))
		return -FI_ENOENT;
	return 0;
}

/* Calls fn on each record file of this user; stops when fn returns true. */
static bool each_record(bool (*fn)(const char *path, void *arg), void *arg)
{
	char prefix[32], path[320];
	DIR *d = opendir(DIR_SHM);
	struct dirent *e;
	bool stop = false;

	if (!d)
		return false;
	snprintf(prefix, sizeof(prefix), "ddtxmw-%u-", (unsigned)getuid());
	while (!stop && (e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) || strstr(e->d_name, ".tmp-"))
			continue;
		snprintf(path, sizeof(path), DIR_SHM "%s", e->d_name);
		stop = fn(path, arg);
	}
	closedir(d);
	return stop;
}

struct find_local {
	const void *local;
	size_t len;
	struct ddtx_multi_host self;
	struct ddtx_multi_record *rec;
};

static bool match_local(const char *path, void *arg)
{
	struct find_local *f = arg;

	return read_rec(path, f->rec) == 0 && f->rec->local_len == f->len &&
	       !memcmp(f->rec->local, f->local, f->len) && rec_live(f->rec, &f->self);
}

int ddtx_multi_lookup_local(const void *local, size_t len, struct ddtx_multi_record *rec)
{
	struct find_local f = {.local = local, .len = len, .rec = rec};

	if (ddtx_multi_host_self(&f.self))
		return -FI_ENOENT;
	return each_record(match_local, &f) ? 0 : -FI_ENOENT;
}

static bool remove_stale(const char *path, void *arg)
{
	const struct ddtx_multi_host *self = arg;
	struct ddtx_multi_record rec;

	if (read_rec(path, &rec) == 0 && rec.host.pidns == self->pidns && !pid_alive(rec.pid)) {
		DDTX_INFO(FI_LOG_CORE, "multi: removing %s (its process %u is gone)\n", path,
			  rec.pid);
		unlink(path);
	}
	return false;
}

void ddtx_multi_cleanup_stale(void)
{
	struct ddtx_multi_host self;

	if (ddtx_multi_host_self(&self) == 0)
		each_record(remove_stale, &self);
}

uint64_t ddtx_multi_token(const void *fabric, size_t fabric_len)
{
	uint64_t h = ddtx_hash_bytes(fabric, fabric_len) ^ ((uint64_t)getuid() << 32);
	return h ? h : 1;
}

int ddtx_multi_addr_pack(const void *fabric, size_t fabric_len, uint8_t out[DDTX_MULTI_ADDR_LEN])
{
	const uint8_t *f = fabric;
	size_t n = fabric_len;

	while (n && !f[n - 1])
		n--;
	if (n > DDTX_MULTI_FABRIC_MAX)
		return -FI_EINVAL;
	memset(out, 0, DDTX_MULTI_ADDR_LEN);
	out[0] = DDTX_MULTI_ADDR_MAGIC & 0xff;
	out[1] = DDTX_MULTI_ADDR_MAGIC >> 8;
	out[2] = DDTX_MULTI_ADDR_VERSION;
	out[3] = (uint8_t)n;
	memcpy(out + DDTX_MULTI_ADDR_HDR, f, n);
	return 0;
}

int ddtx_multi_addr_unpack(const void *addr, size_t len, void *fabric, size_t fabric_len)
{
	const uint8_t *a = addr;

	if (!a || len != DDTX_MULTI_ADDR_LEN || a[0] != (DDTX_MULTI_ADDR_MAGIC & 0xff) ||
	    a[1] != DDTX_MULTI_ADDR_MAGIC >> 8 || a[2] != DDTX_MULTI_ADDR_VERSION ||
	    a[3] > DDTX_MULTI_FABRIC_MAX || a[3] > fabric_len)
		return -FI_EINVAL;
	for (size_t i = DDTX_MULTI_ADDR_HDR + a[3]; i < len; i++)
		if (a[i])
			return -FI_EINVAL;      /* padding must be zero: one blob, one peer */
	memset(fabric, 0, fabric_len);
	memcpy(fabric, a + DDTX_MULTI_ADDR_HDR, a[3]);
	return 0;
}
