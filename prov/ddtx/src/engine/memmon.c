/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor of memmon.h: a process-wide userfaultfd in write-protect mode, used only
 * for its UNMAP / REMOVE / REMAP events.
 *
 * Why this design (measured on Linux 6.18, glibc 2.36, 2 cores; experiments kept in the
 * registration-cache report):
 *
 *  - userfaultfd in MISSING mode (the classic monitor) breaks the shm wire.  A peer's
 *    process_vm_writev/readv into a never-touched page of a registered range raises a remote
 *    missing fault that is delivered to our handler: if the handler does not resolve it the peer
 *    blocks forever (child killed by its 3 s alarm in the experiment); resolving it with
 *    UFFDIO_ZEROPAGE works but costs a handler round trip per first touch (95 us against 13 us
 *    for the whole 64-byte transfer), and local first touches trap the same way.  Worse, when
 *    vm.unprivileged_userfaultfd is 0 (Debian's default) an unprivileged process only gets a
 *    UFFD_USER_MODE_ONLY descriptor, and then every kernel-mode fault in a MISSING range fails:
 *    process_vm_writev and process_vm_readv from the peer returned EFAULT, and even a local
 *    read(2) into an untouched registered page returned EFAULT.
 *  - userfaultfd in WP mode, with nothing ever write-protected, delivers no faults at all:
 *    process_vm_writev/readv into untouched pages worked (privileged and USER_MODE_ONLY, as
 *    uid 65534), first touch of 64 MiB cost the same as unregistered memory, and the events we
 *    need still arrive: munmap (whole, partial, covering), mremap move (REMAP + UNMAP of the
 *    source), mremap shrink, mmap(MAP_FIXED) over a range, glibc free() of a 1 MiB block (its
 *    internal munmap), brk shrink, madvise DONTNEED / FREE (REMOVE), and for shmem (memfd,
 *    MAP_SHARED|MAP_ANONYMOUS) madvise REMOVE too.  A forked child's VMAs carry no
 *    registration (no EVENT_FORK), so its munmaps never block.
 *  - Symbol interception (GOT/PLT patching) misses what matters most: an interposed munmap saw
 *    0 calls for free() of a 4 MiB block and 0 for a realloc that mremaps, because glibc calls
 *    its internal __munmap / __mremap; it also misses raw syscalls and dlsym'd pointers, needs
 *    RELRO unprotection and a dlopen hook, and is unsafe across provider unload.
 *
 * What WP-mode userfaultfd does not cover, and what happens then:
 *  - shmdt() sends no event (the kernel passes no unmap list), and SysV shm, regular files and
 *    other special mappings refuse WP registration unless UFFD_FEATURE_WP_ASYNC (6.7+) is asked
 *    for.  We do not ask for it, precisely so that SysV segments stay unwatchable: watch()
 *    answers -FI_EINVAL and the cache registers such memory uncached (released at last put).
 *  - ranges already registered with another userfaultfd (the application's own) and hugetlbfs
 *    ranges not aligned to the huge page size: likewise unwatchable, hence uncached.
 *  - GPU frees, fallocate(PUNCH_HOLE) on a memfd, truncation: invisible.
 *  - munmap of a watched range waits for the handler thread to read the event: about 15 us
 *    against 3-6 us unwatched.  UFFDIO_REGISTER costs about 2.3 us, UNREGISTER about 4 us.
 *
 * Rules that keep it deadlock free: the handler thread only polls, reads the descriptor and
 * appends to a fixed ring under ring_lock; it never allocates, frees, unmaps, logs or takes any
 * other lock (it must never munmap a watched range itself: munmap would wait for itself).  A
 * thread that returned from munmap knows its event was read; `busy` brackets each read up to the
 * moment its ranges are in the ring, and ddtx_memmon_seq() waits while it is set, so no reader
 * can miss an event whose munmap has returned.
 *
 * Lifetime: started by the first subscriber, stopped by the last (every remaining kernel
 * registration is released first, so nothing can block on a reader that is gone, even if a
 * forked child still holds the descriptor), and by the library destructor if the provider is
 * unloaded with subscribers left.  In a forked child the monitor is disabled at once (the
 * descriptor is closed; the thread does not exist there) and fork_epoch changes.
 */
#include "engine/memmon.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/minmax.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)
#endif

#define RING_SIZE 4096u                 /* power of two */
#define READ_BATCH 32

struct range {
	uintptr_t start, end;
};

struct ddtx_memmon_sub {
	uint64_t unused;                /* subscribers keep their own drained sequence */
};

static struct {
	pthread_mutex_t lock;           /* users: start/stop, subscriber count, watch tree */
	int users;
	bool running;
	bool failed_logged;
	int uffd, stopfd;
	pthread_t thread;
	uint64_t features;
	struct ddtx_itree watches;
	uint64_t nwatches;

	pthread_mutex_t ring_lock;      /* handler and drainers: the ring */
	struct range ring[RING_SIZE];
	uint64_t head;                  /* events pushed (atomic; written under ring_lock) */
	int busy;                       /* atomic: an event read but not yet in the ring */

	uint64_t fork_epoch;            /* atomic */
	bool forked;                    /* atomic: this process is a child of a monitored one */
	bool atfork_done;
	bool test_unavailable;
} mon = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.ring_lock = PTHREAD_MUTEX_INITIALIZER,
	.uffd = -1,
	.stopfd = -1,
};

static size_t page_size;

void ddtx_memmon_test_set_unavailable(bool unavailable)
{
	pthread_mutex_lock(&mon.lock);
	mon.test_unavailable = unavailable;
	pthread_mutex_unlock(&mon.lock);
}

static bool forked(void)
{
	return __atomic_load_n(&mon.forked, __ATOMIC_ACQUIRE);
}

static void push(uintptr_t start, uintptr_t end)
{
	uint64_t h = mon.head;

	mon.ring[h & (RING_SIZE - 1)] = (struct range){ start, end };
	__atomic_store_n(&mon.head, h + 1, __ATOMIC_RELEASE);
}

static void *handler(void *arg)
{
	struct pollfd p[2] = { { .fd = mon.uffd, .events = POLLIN },
			       { .fd = mon.stopfd, .events = POLLIN } };
	struct uffd_msg msg[READ_BATCH];

	(void)arg;
	for (;;) {
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN)) {
			if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL))
				break;
			continue;
		}
		__atomic_store_n(&mon.busy, 1, __ATOMIC_SEQ_CST);
		n = read(mon.uffd, msg, sizeof(msg));
		if (n > 0) {
			pthread_mutex_lock(&mon.ring_lock);
			for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
				const struct uffd_msg *m = &msg[i];

				switch (m->event) {
				case UFFD_EVENT_UNMAP:
				case UFFD_EVENT_REMOVE:
					push(m->arg.remove.start, m->arg.remove.end);
					break;
				case UFFD_EVENT_REMAP:
					push(m->arg.remap.from, m->arg.remap.from + m->arg.remap.len);
					break;
				default:
					break;
				}
			}
			pthread_mutex_unlock(&mon.ring_lock);
			for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
				const struct uffd_msg *m = &msg[i];

				if (m->event != UFFD_EVENT_PAGEFAULT)
					continue;
				/* Cannot happen in WP mode with nothing protected; never leave a
				 * faulting thread (ours or a peer's CMA) blocked if it does. */
				struct uffdio_writeprotect wp = {
					.range = { m->arg.pagefault.address & ~(uint64_t)(page_size - 1),
						   page_size },
					.mode = 0,
				};
				struct uffdio_range wake = wp.range;
				if (ioctl(mon.uffd, UFFDIO_WRITEPROTECT, &wp))
					ioctl(mon.uffd, UFFDIO_WAKE, &wake);
			}
		}
		__atomic_store_n(&mon.busy, 0, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int uffd_open(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd < 0 && errno == EINVAL)  /* kernel before 5.11: no USER_MODE_ONLY */
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
#ifdef USERFAULTFD_IOC_NEW
	if (fd < 0) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
			close(dev);
		}
	}
#endif
	return fd;
}

static void atfork_child(void)
{
	/* The child has no handler thread and its VMAs carry no registration; close our copy of
	 * the descriptor so the parent's context is not kept alive by us. */
	__atomic_add_fetch(&mon.fork_epoch, 1, __ATOMIC_SEQ_CST);
	if (mon.running) {
		close(mon.uffd);
		close(mon.stopfd);
		mon.uffd = mon.stopfd = -1;
		mon.running = false;
		__atomic_store_n(&mon.forked, true, __ATOMIC_RELEASE);
	}
}

static int start_locked(void)
{
	const uint64_t need = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |
			      UFFD_FEATURE_EVENT_REMAP;
	struct uffdio_api api = { .api = UFFD_API, .features = 0 };
	sigset_t all, old;
	const char *why;
	void *probe;
	int fd, err;

	if (!page_size)
		page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (mon.test_unavailable) {
		why = "disabled for testing";
		goto fail;
	}
	/* Ask which features exist (the API handshake can be done once per descriptor). */
	fd = uffd_open();
	if (fd < 0) {
		why = strerror(errno);
		goto fail;
	}
	err = ioctl(fd, UFFDIO_API, &api);
	close(fd);
	if (err) {
		why = "UFFDIO_API failed";
		goto fail;
	}
	if ((api.features & need) != need) {
		why = "kernel lacks unmap/remove/remap events";
		goto fail;
	}
	/* Never UFFD_FEATURE_WP_ASYNC: it would accept SysV shm, whose shmdt sends no event. */
	mon.features = need | (api.features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	fd = uffd_open();
	if (fd < 0) {
		why = strerror(errno);
		goto fail;
	}
	api = (struct uffdio_api){ .api = UFFD_API, .features = mon.features };
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		why = "UFFDIO_API with events failed";
		goto fail;
	}
	/* Write-protect mode on anonymous memory must work (5.7+), or there is no monitor. */
	probe = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (probe == MAP_FAILED) {
		close(fd);
		why = "mmap failed";
		goto fail;
	}
	{
		struct uffdio_register reg = {
			.range = { (uintptr_t)probe, page_size },
			.mode = UFFDIO_REGISTER_MODE_WP,
		};
		struct uffdio_range r = reg.range;

		err = ioctl(fd, UFFDIO_REGISTER, &reg);
		if (!err)
			ioctl(fd, UFFDIO_UNREGISTER, &r);
	}
	munmap(probe, page_size);
	if (err) {
		close(fd);
		why = "write-protect registration unsupported";
		goto fail;
	}
	mon.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mon.stopfd < 0) {
		close(fd);
		why = "eventfd failed";
		goto fail;
	}
	mon.uffd = fd;
	if (!mon.atfork_done) {
		if (pthread_atfork(NULL, NULL, atfork_child)) {
			close(fd);
			close(mon.stopfd);
			mon.uffd = mon.stopfd = -1;
			why = "pthread_atfork failed";
			goto fail;
		}
		mon.atfork_done = true;
	}
	/* The handler runs with every signal blocked: no application handler on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&mon.thread, NULL, handler, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(fd);
		close(mon.stopfd);
		mon.uffd = mon.stopfd = -1;
		why = "pthread_create failed";
		goto fail;
	}
	mon.running = true;
	DDTX_INFO(FI_LOG_MR, "memory monitor: userfaultfd (write-protect mode, features %#llx)\n",
		  (unsigned long long)mon.features);
	return 0;
fail:
	if (!mon.failed_logged) {
		DDTX_WARN(FI_LOG_MR, "memory monitor unavailable (%s): the registration cache keeps "
			  "regions only while they are referenced\n", why);
		mon.failed_logged = true;
	}
	return -FI_ENOSYS;
}

static int unregister_fn(void *arg, struct ddtx_itree_node *n)
{
	struct uffdio_range r = { n->start, n->end - n->start };

	(void)arg;
	ioctl(mon.uffd, UFFDIO_UNREGISTER, &r);
	return 0;
}

static void stop_locked(void)
{
	uint64_t one = 1;

	if (!mon.running)
		return;
	/* Release every kernel registration first: after this no munmap can wait for us. */
	ddtx_itree_visit(&mon.watches, 0, UINTPTR_MAX, unregister_fn, NULL);
	if (write(mon.stopfd, &one, sizeof(one)) != sizeof(one))
		DDTX_WARN(FI_LOG_MR, "memory monitor: cannot wake the handler\n");
	pthread_join(mon.thread, NULL);
	close(mon.uffd);
	close(mon.stopfd);
	mon.uffd = mon.stopfd = -1;
	mon.running = false;
}

__attribute__((destructor)) static void memmon_fini(void)
{
	/* The provider is being unloaded: the handler thread must not outlive its code. */
	if (forked())
		return;
	pthread_mutex_lock(&mon.lock);
	stop_locked();
	pthread_mutex_unlock(&mon.lock);
}

int ddtx_memmon_subscribe(struct ddtx_memmon_sub **out)
{
	struct ddtx_memmon_sub *sub;
	int ret = 0;

	if (forked())
		return -FI_ENOSYS;
	sub = calloc(1, sizeof(*sub));
	if (!sub)
		return -FI_ENOMEM;
	pthread_mutex_lock(&mon.lock);
	if (!mon.running) {
		if (!mon.users)
			ddtx_itree_init(&mon.watches);
		ret = start_locked();
	}
	if (!ret)
		mon.users++;
	pthread_mutex_unlock(&mon.lock);
	if (ret) {
		free(sub);
		return ret;
	}
	*out = sub;
	return 0;
}

void ddtx_memmon_unsubscribe(struct ddtx_memmon_sub *sub)
{
	if (!sub)
		return;
	if (!forked()) {
		pthread_mutex_lock(&mon.lock);
		if (mon.users > 0 && --mon.users == 0)
			stop_locked();
		pthread_mutex_unlock(&mon.lock);
	}
	free(sub);
}

int ddtx_memmon_watch(struct ddtx_memmon_sub *sub, struct ddtx_memmon_watch *w,
		      uintptr_t start, uintptr_t end)
{
	struct uffdio_register reg = {
		.range = { start, end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	int ret = 0;

	(void)sub;
	w->active = false;
	if (start >= end || forked())
		return forked() ? -FI_ENOSYS : -FI_EINVAL;
	pthread_mutex_lock(&mon.lock);
	if (!mon.running) {
		ret = -FI_ENOSYS;
	} else if (ioctl(mon.uffd, UFFDIO_REGISTER, &reg)) {
		DDTX_DBG(FI_LOG_MR, "memory monitor: cannot watch [%#lx, %#lx): %s\n",
			 (unsigned long)start, (unsigned long)end, strerror(errno));
		ret = -FI_EINVAL;
	} else {
		w->node.start = start;
		w->node.end = end;
		ddtx_itree_insert(&mon.watches, &w->node);
		mon.nwatches++;
		w->active = true;
	}
	pthread_mutex_unlock(&mon.lock);
	return ret;
}

struct gap_walk {
	uintptr_t cur, end;
};

static void unregister_range(uintptr_t s, uintptr_t e)
{
	struct uffdio_range r = { s, e - s };

	/* Fails harmlessly where the range has been unmapped or was never registered. */
	ioctl(mon.uffd, UFFDIO_UNREGISTER, &r);
}

static int gap_fn(void *arg, struct ddtx_itree_node *n)
{
	struct gap_walk *g = arg;

	if (n->start > g->cur)
		unregister_range(g->cur, DDTX_MIN(n->start, g->end));
	if (n->end > g->cur)
		g->cur = n->end;
	return g->cur >= g->end;
}

void ddtx_memmon_unwatch(struct ddtx_memmon_sub *sub, struct ddtx_memmon_watch *w)
{
	struct gap_walk g;

	(void)sub;
	if (!w->active)
		return;
	w->active = false;
	if (forked())
		return;
	pthread_mutex_lock(&mon.lock);
	ddtx_itree_remove(&mon.watches, &w->node);
	mon.nwatches--;
	if (mon.running) {
		/* Unregister only the pages no other watch (of any subscriber) still covers. */
		g.cur = w->node.start;
		g.end = w->node.end;
		ddtx_itree_visit(&mon.watches, g.cur, g.end, gap_fn, &g);
		if (g.cur < g.end)
			unregister_range(g.cur, g.end);
	}
	pthread_mutex_unlock(&mon.lock);
}

uint64_t ddtx_memmon_seq(struct ddtx_memmon_sub *sub)
{
	(void)sub;
	while (__atomic_load_n(&mon.busy, __ATOMIC_SEQ_CST))
		sched_yield();
	return __atomic_load_n(&mon.head, __ATOMIC_ACQUIRE);
}

uint64_t ddtx_memmon_drain(struct ddtx_memmon_sub *sub,
			   void (*fn)(void *arg, uintptr_t start, uintptr_t end), void *arg,
			   uint64_t from)
{
	uint64_t head;

	(void)sub;
	while (__atomic_load_n(&mon.busy, __ATOMIC_SEQ_CST))
		sched_yield();
	pthread_mutex_lock(&mon.ring_lock);
	head = mon.head;
	if (head - from > RING_SIZE) {
		fn(arg, 0, UINTPTR_MAX);        /* fell behind: everything may be gone */
	} else {
		for (uint64_t s = from; s != head; s++) {
			const struct range *r = &mon.ring[s & (RING_SIZE - 1)];
			fn(arg, r->start, r->end);
		}
	}
	pthread_mutex_unlock(&mon.ring_lock);
	return head;
}

uint64_t ddtx_memmon_fork_epoch(void)
{
	return __atomic_load_n(&mon.fork_epoch, __ATOMIC_ACQUIRE);
}

void ddtx_memmon_info(struct ddtx_memmon_info *info)
{
	pthread_mutex_lock(&mon.lock);
	info->running = mon.running;
	info->watches = mon.nwatches;
	info->features = mon.features;
	pthread_mutex_unlock(&mon.lock);
	info->events = __atomic_load_n(&mon.head, __ATOMIC_ACQUIRE);
}
