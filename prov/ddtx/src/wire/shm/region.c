/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared-memory files of the shm wire: unguessable names, creation (0600, O_EXCL), mapping of
 * a peer's regions with owner checks, process identity (pid + start time) and the removal of
 * files left behind by processes that no longer exist.
 */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

#define DDTX_SHM_DIR "/dev/shm"

int ddtx_shm_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			DDTX_WARN(FI_LOG_CORE, "shm: getrandom failed: %s\n", strerror(errno));
			return -FI_EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void ddtx_shm_format_name(char *name, uint32_t pid, const uint8_t rand[DDTX_SHM_RAND_BYTES])
{
	static const char hex[] = "0123456789abcdef";
	int n = snprintf(name, DDTX_SHM_NAME_MAX, "/" DDTX_SHM_PREFIX "%u-", pid);

	for (int i = 0; i < DDTX_SHM_RAND_BYTES; i++) {
		name[n++] = hex[rand[i] >> 4];
		name[n++] = hex[rand[i] & 15];
	}
	name[n] = '\0';
}

/* "ddtx-<decimal pid>-<32 lower-case hex>" (without the leading slash); *pid receives the pid. */
static bool parse_base_name(const char *s, uint32_t *pid)
{
	uint64_t v = 0;
	size_t nd = 0, nh = 0;

	if (strncmp(s, DDTX_SHM_PREFIX, strlen(DDTX_SHM_PREFIX)))
		return false;
	s += strlen(DDTX_SHM_PREFIX);
	for (; *s >= '0' && *s <= '9'; s++, nd++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX || nd > 10)
			return false;
	}
	if (!nd || *s++ != '-')
		return false;
	for (; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++)
		nh++;
	if (*s || nh != 2 * DDTX_SHM_RAND_BYTES)
		return false;
	if (pid)
		*pid = (uint32_t)v;
	return true;
}

bool ddtx_shm_valid_name(const char *name, size_t maxlen)
{
	if (!memchr(name, '\0', maxlen) || name[0] != '/')
		return false;
	return parse_base_name(name + 1, NULL);
}

int ddtx_shm_region_create(size_t size, struct ddtx_shm_map *map,
			   uint8_t rand[DDTX_SHM_RAND_BYTES])
{
	int fd = -1, ret;

	for (int tries = 0; tries < 8 && fd < 0; tries++) {
		ret = ddtx_shm_random(rand, DDTX_SHM_RAND_BYTES);
		if (ret)
			return ret;
		ddtx_shm_format_name(map->name, (uint32_t)getpid(), rand);
		fd = shm_open(map->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST) {
			ret = -errno;
			DDTX_WARN(FI_LOG_CORE, "shm: shm_open(%s) failed: %s\n", map->name,
				  strerror(errno));
			return ret;
		}
	}
	if (fd < 0) {
		DDTX_WARN(FI_LOG_CORE, "shm: no free region name after 8 random tries\n");
		return -FI_EBUSY;
	}
	/* Held until destroy (or death): tells a cleanup in another pid namespace, where our pid
	 * means nothing, that the region is in use. */
	if (flock(fd, LOCK_SH))
		DDTX_INFO(FI_LOG_CORE, "shm: flock(%s) failed: %s\n", map->name, strerror(errno));
	/* The umask may have removed bits but never adds any; make the mode exact. */
	if (fchmod(fd, 0600) || ftruncate(fd, (off_t)size)) {
		ret = -errno;
		DDTX_WARN(FI_LOG_CORE, "shm: sizing %s to %zu bytes failed: %s\n", map->name, size,
			  strerror(errno));
		goto err;
	}
	/* Populated now: the first pass of rendezvous data through a fresh 16 MiB ring otherwise
	 * pays a page fault per 4 KiB (about 20x the steady cost of a 1 MiB transfer there). */
	map->addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (map->addr == MAP_FAILED) {
		ret = -errno;
		DDTX_WARN(FI_LOG_CORE, "shm: mmap of %s (%zu bytes) failed: %s\n", map->name, size,
			  strerror(errno));
		goto err;
	}
	map->size = size;
	map->owner_fd = fd + 1;
	DDTX_DBG(FI_LOG_CORE, "shm: created region %s, %zu bytes\n", map->name, size);
	return 0;
err:
	close(fd);
	shm_unlink(map->name);
	map->addr = NULL;
	return ret ? ret : -FI_EIO;
}

int ddtx_shm_region_map(const char *name, bool writable, size_t min_size,
			struct ddtx_shm_map *map)
{
	struct stat st;
	int fd, ret;

	if (!ddtx_shm_valid_name(name, DDTX_SHM_NAME_MAX)) {
		DDTX_WARN(FI_LOG_CORE, "shm: refusing to map a malformed region name\n");
		return -FI_EINVAL;
	}
	fd = shm_open(name, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		DDTX_INFO(FI_LOG_CORE, "shm: cannot open peer region %s: %s\n", name,
			  strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		DDTX_WARN(FI_LOG_CORE, "shm: fstat of %s failed: %s\n", name, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		DDTX_WARN(FI_LOG_CORE, "shm: region %s is not a regular file of our uid\n", name);
		ret = -FI_EACCES;
		goto out;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size < min_size ||
	    (uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
		DDTX_WARN(FI_LOG_CORE, "shm: region %s has a bad size %lld\n", name,
			  (long long)st.st_size);
		ret = -FI_EINVAL;
		goto out;
	}
	map->size = (size_t)st.st_size;
	map->addr = mmap(NULL, map->size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
			 MAP_SHARED | MAP_POPULATE, fd, 0);
	if (map->addr == MAP_FAILED) {
		ret = -errno;
		map->addr = NULL;
		DDTX_WARN(FI_LOG_CORE, "shm: mmap of peer region %s failed: %s\n", name,
			  strerror(errno));
		goto out;
	}
	snprintf(map->name, sizeof(map->name), "%s", name);
	ret = 0;
out:
	close(fd);
	return ret;
}

/*
 * Each page of a mapping written once from user space: a fresh region of ours with a zero, a
 * peer's unchanged (an atomic add of 0: others may be writing it).  On the test host (a virtual
 * machine) the first store to a page of a shared mapping costs 5-8 us even after MAP_POPULATE
 * or MADV_POPULATE_WRITE, 29 ns from the second on: the first transfers through each ring slot
 * paid it (fabtests' tagged pingpong at 96 KiB, slow regime: a try of PACK, which the per-size
 * choice makes now and then, 50-150 us where touched rings gave 17-57).  Once per ring and
 * mapping (up to `bytes`: a peer's region may be larger than its ring): about 6 ms there for
 * the 4.25 MiB of the default ring.
 */
void ddtx_shm_region_touch(const struct ddtx_shm_map *map, size_t bytes, bool fresh)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (size_t off = 0; off + sizeof(uint64_t) <= DDTX_MIN(bytes, map->size); off += page) {
		uint64_t *word = (uint64_t *)((uint8_t *)map->addr + off);
		if (fresh)
			*(volatile uint64_t *)word = 0;
		else
			__atomic_fetch_add(word, 0, __ATOMIC_RELAXED);
	}
}

void ddtx_shm_region_unmap(struct ddtx_shm_map *map)
{
	if (map->addr)
		munmap(map->addr, map->size);
	map->addr = NULL;
	map->size = 0;
}

void ddtx_shm_region_destroy(struct ddtx_shm_map *map)
{
	if (map->name[0] && shm_unlink(map->name) && errno != ENOENT)
		DDTX_WARN(FI_LOG_CORE, "shm: shm_unlink(%s) failed: %s\n", map->name,
			  strerror(errno));
	ddtx_shm_region_unmap(map);
	if (map->owner_fd > 0)
		close(map->owner_fd - 1);
	map->owner_fd = 0;
	map->name[0] = '\0';
}

int ddtx_shm_proc_identity(uint32_t pid, uint64_t *start_time, bool *zombie)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -DDTX_SHM_ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -DDTX_SHM_ESRCH;
	buf[n] = '\0';
	/* "pid (comm) S f4 ... f21 starttime ...": comm may hold anything, so use the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -FI_EINVAL;
	p += 2;
	if (zombie)
		*zombie = (*p == 'Z' || *p == 'X' || *p == 'x');
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -FI_EINVAL;
		p++;
	}
	if (sscanf(p, "%llu", &st) != 1)
		return -FI_EINVAL;
	if (start_time)
		*start_time = st;
	return 0;
}

uint64_t ddtx_shm_self_start_time(void)
{
	uint64_t st = 0;

	if (ddtx_shm_proc_identity((uint32_t)getpid(), &st, NULL))
		DDTX_INFO(FI_LOG_CORE, "shm: cannot read our own start time\n");
	return st;
}

bool ddtx_shm_proc_alive(uint32_t pid, uint64_t start_time)
{
	uint64_t st = 0;
	bool zombie = false;
	int ret;

	if (pid == 0 || pid > INT32_MAX)
		return false;
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return false;
	ret = ddtx_shm_proc_identity(pid, &st, &zombie);
	if (ret == -DDTX_SHM_ESRCH)
		return false;
	if (ret)
		return true;                     /* cannot tell: assume alive */
	if (zombie)
		return false;
	return !start_time || st == start_time;
}

/* Low 32 bits of the PID namespace inode, recorded in region headers (diagnostics). */
uint32_t ddtx_shm_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (uint32_t)st.st_ino : 0;
}

/* Does a live process hold the region's owner lock (region_create)?  Locks know no pid
 * namespace: a process sharing /dev/shm from another one has pids this one cannot see. */
static bool region_held(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool held;

	if (fd < 0)
		return errno != ENOENT;
	held = flock(fd, LOCK_EX | LOCK_NB) != 0;
	close(fd);
	return held;
}

/* Is the file at dirfd/name a region of a process that is gone? */
static bool region_is_stale(int dirfd, const char *name, uint32_t pid)
{
	struct ddtx_shm_region_hdr hdr;
	struct stat st;
	ssize_t n;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid())
		return false;
	if (!ddtx_shm_proc_alive(pid, 0))
		return !region_held(dirfd, name);
	/* The pid exists: stale only if the header proves it belongs to an older process. */
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = pread(fd, &hdr, sizeof(hdr), 0);
	close(fd);
	if (n != (ssize_t)sizeof(hdr) ||
	    (hdr.magic != DDTX_SHM_DOM_MAGIC && hdr.magic != DDTX_SHM_EP_MAGIC) ||
	    hdr.pid != pid || !hdr.start_time)
		return false;                    /* possibly being created right now */
	return !ddtx_shm_proc_alive(pid, hdr.start_time) && !region_held(dirfd, name);
}

void ddtx_shm_cleanup_stale(void)
{
	char path[NAME_MAX + 2];
	struct dirent *de;
	uint32_t pid, self = (uint32_t)getpid();
	int removed = 0;
	DIR *dir;

	dir = opendir(DDTX_SHM_DIR);
	if (!dir) {
		DDTX_INFO(FI_LOG_CORE, "shm: cannot scan " DDTX_SHM_DIR ": %s\n", strerror(errno));
		return;
	}
	while ((de = readdir(dir))) {
		if (!parse_base_name(de->d_name, &pid) || pid == self)
			continue;
		if (!region_is_stale(dirfd(dir), de->d_name, pid))
			continue;
		snprintf(path, sizeof(path), "/%s", de->d_name);
		if (shm_unlink(path) == 0) {
			removed++;
			DDTX_INFO(FI_LOG_CORE, "shm: removed stale region %s of dead pid %u\n", path,
				  pid);
		} else if (errno != ENOENT) {
			DDTX_WARN(FI_LOG_CORE, "shm: cannot remove stale region %s: %s\n", path,
				  strerror(errno));
		}
	}
	closedir(dir);
	if (removed)
		DDTX_INFO(FI_LOG_CORE, "shm: %d stale region(s) removed\n", removed);
}
