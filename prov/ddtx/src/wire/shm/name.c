/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Service names on the shm wire (common/name.h).  An endpoint bound to service S publishes
 * its address in the name file
 *
 *     /dev/shm/ddtxsvc-<uid>-<host hex>-<S>      (0600, owned by the user, struct name_rec)
 *
 * and a resolver reads it.  The host part (the network namespace) keeps 127.0.0.1:S in two
 * namespaces apart, as TCP does.  A name is held while its publisher lives: a file whose process
 * is gone (a crashed server) is stale, skipped by resolvers and replaced by the next binder;
 * a live publisher makes a second binder fail with -FI_EADDRINUSE.  Publishing is atomic:
 * the record is written to a private file first, then link()ed into place (or rename()d over a
 * stale one and read back, so that of two binders racing over a stale file exactly one wins).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wire/shm/shm.h"

#define NAME_DIR "/dev/shm/"
#define NAME_REC_MAGIC 0x31766373787464ull /* "dtxscv1" */

struct name_rec {
	uint64_t magic;
	uint32_t pid;                            /* publisher */
	uint32_t reserved;
	uint64_t start_time;
	struct ddtx_shm_addr addr;               /* the bound endpoint */
};

static void name_path(char *path, size_t len, const struct ddtx_name_addr *name)
{
	snprintf(path, len, NAME_DIR "ddtxsvc-%u-%llx-%s", name->user,
		 (unsigned long long)name->host, name->service);
}

/* 0 and *rec if path holds a well-formed record of this user; -FI_ENOENT otherwise. */
static int read_rec(const char *path, struct name_rec *rec)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -FI_ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
	    st.st_size != (off_t)sizeof(*rec)) {
		close(fd);
		return -FI_ENOENT;
	}
	n = pread(fd, rec, sizeof(*rec), 0);
	close(fd);
	if (n != (ssize_t)sizeof(*rec) || rec->magic != NAME_REC_MAGIC ||
	    rec->pid != rec->addr.pid || ddtx_shm_addr_check(&rec->addr, sizeof(rec->addr)))
		return -FI_ENOENT;
	return 0;
}

static bool rec_live(const struct name_rec *rec)
{
	return ddtx_shm_proc_alive(rec->pid, rec->start_time);
}

static bool rec_is(const struct name_rec *rec, const struct ddtx_shm_addr *addr)
{
	return !memcmp(&rec->addr, addr, sizeof(*addr));
}

void ddtx_shm_name_unbind(struct ddtx_shm_ep *ep)
{
	struct name_rec rec;

	if (!ep->bound[0])
		return;
	/* Remove the file only while it is still ours (a successor may have replaced it). */
	if (read_rec(ep->bound, &rec) == 0 && rec_is(&rec, &ep->addr))
		unlink(ep->bound);
	ep->bound[0] = '\0';
}

static int write_tmp(char *tmp, size_t len, const struct name_rec *rec)
{
	uint8_t rnd[8];
	int fd;

	if (ddtx_shm_random(rnd, sizeof(rnd)))
		return -FI_EIO;
	snprintf(tmp, len, NAME_DIR "ddtxsvc-tmp-%u-%02x%02x%02x%02x%02x%02x%02x%02x", rec->pid,
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -FI_EIO;
	if (pwrite(fd, rec, sizeof(*rec), 0) != (ssize_t)sizeof(*rec)) {
		close(fd);
		unlink(tmp);
		return -FI_EIO;
	}
	close(fd);
	return 0;
}

int ddtx_shm_ep_bind(struct ddtx_wire_ep *wep, const struct ddtx_name_addr *name)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	char path[sizeof(ep->bound)], tmp[sizeof(ep->bound)];
	struct name_rec rec = {0}, cur;
	int ret = -FI_EADDRINUSE;

	if (!ep || !ddtx_name_is(name, sizeof(*name)))
		return -FI_EINVAL;
	if (!name->service[0]) {
		ddtx_shm_name_unbind(ep);
		return 0;
	}
	if (name->user != (uint32_t)getuid() || name->host != ddtx_name_host_id()) {
		DDTX_WARN(FI_LOG_EP_CTRL, "shm: cannot bind a name of another user or host\n");
		return -FI_EINVAL;
	}
	name_path(path, sizeof(path), name);
	if (!strcmp(path, ep->bound))
		return 0;
	rec.magic = NAME_REC_MAGIC;
	rec.pid = ep->addr.pid;
	rec.start_time = ep->addr.start_time;
	rec.addr = ep->addr;
	if (write_tmp(tmp, sizeof(tmp), &rec)) {
		DDTX_WARN(FI_LOG_EP_CTRL, "shm: cannot write a name record in " NAME_DIR "\n");
		return -FI_EIO;
	}
	if (link(tmp, path) == 0) {
		ret = 0;
	} else if (errno == EEXIST) {
		if (read_rec(path, &cur) == 0 && rec_live(&cur)) {
			ret = rec_is(&cur, &ep->addr) ? 0 : -FI_EADDRINUSE;
		} else if (rename(tmp, path) == 0) {
			/* Replaced a stale (or malformed) record; a racing binder may have won. */
			tmp[0] = '\0';
			ret = read_rec(path, &cur) == 0 && rec_is(&cur, &ep->addr) ? 0
										  : -FI_EADDRINUSE;
		}
	} else {
		ret = -FI_EIO;
	}
	if (tmp[0])
		unlink(tmp);
	if (ret) {
		DDTX_INFO(FI_LOG_EP_CTRL, "shm: service %s: %s\n", name->service,
			  ret == -FI_EADDRINUSE ? "held by a live endpoint" : "cannot publish");
		return ret;
	}
	ddtx_shm_name_unbind(ep);
	snprintf(ep->bound, sizeof(ep->bound), "%s", path);
	DDTX_INFO(FI_LOG_EP_CTRL, "shm: endpoint bound to service %s\n", name->service);
	return 0;
}

int ddtx_shm_name_resolve(struct ddtx_wire_domain *dom, const struct ddtx_name_addr *name,
			  int timeout_ms, void *addr, size_t *len)
{
	char path[DDTX_SHM_BOUND_MAX];
	struct name_rec rec;
	uint64_t deadline;

	(void)dom;
	if (!ddtx_name_is(name, sizeof(*name)))
		return -FI_EINVAL;
	if (!addr || *len < DDTX_SHM_ADDR_LEN) {
		*len = DDTX_SHM_ADDR_LEN;
		return -FI_ETOOSMALL;
	}
	if (!name->service[0] || name->user != (uint32_t)getuid()) {
		DDTX_INFO(FI_LOG_AV, "shm: a name without a service (or of another user) names "
			  "no endpoint\n");
		return -FI_EADDRNOTAVAIL;
	}
	name_path(path, sizeof(path), name);
	deadline = ddtx_coarse_time_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
	for (;;) {
		if (read_rec(path, &rec) == 0 && rec_live(&rec)) {
			memcpy(addr, &rec.addr, DDTX_SHM_ADDR_LEN);
			*len = DDTX_SHM_ADDR_LEN;
			return 0;
		}
		if (ddtx_coarse_time_ns() >= deadline)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	}
	DDTX_INFO(FI_LOG_AV, "shm: no live endpoint bound to service %s on this host\n",
		  name->service);
	return -FI_EADDRNOTAVAIL;
}
