/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A recursive lock: a futex word, its owner and a depth.  The domain lock is taken by every
 * data call and every CQ read, and re-entered when progress writes a CQ.  glibc's recursive
 * mutex cost 75 instructions a lock/unlock pair, three pairs per small message; its plain
 * mutex still 55 (type and elision checks, the owner's tid), four pairs per 8 B message, 8%
 * of its instructions (callgrind, util/bench-instructions.sh).  Here the first entry is one
 * compare-and-swap and the last exit one exchange; re-entry is a compare and an increment.
 *
 * The word is 0 (free), 1 (held) or 2 (held, and a thread may sleep on it): the classic
 * three-state futex mutex.  A thread that finds it held marks it 2 and sleeps in the kernel
 * (no spinning, as glibc's default mutex: progress may hold the lock through a long copy).
 * The owner is read without the lock: only a thread itself ever stores its own id there, and
 * clears it before it unlocks, so a thread reads its own id only while it holds the lock.
 *
 * ThreadSanitizer does not see through a futex: its builds keep a pthread mutex, so that it
 * still checks everything the lock guards.
 */
#ifndef DDTX_COMMON_RLOCK_H
#define DDTX_COMMON_RLOCK_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#if defined(__SANITIZE_THREAD__)
#define DDTX_RLOCK_PTHREAD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DDTX_RLOCK_PTHREAD 1
#endif
#endif

#ifndef DDTX_RLOCK_PTHREAD
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

struct ddtx_rlock {
#ifdef DDTX_RLOCK_PTHREAD
	pthread_mutex_t mutex;
#else
	uint32_t word;                  /* 0 free, 1 held, 2 held and maybe waited for */
#endif
	pthread_t owner;                /* 0 when free (no thread has id 0 in glibc) */
	unsigned depth;                 /* the owner's entries; only it reads or writes */
};

/* A condition to sleep on with the lock released (ddtx_rlock_wait / ddtx_rlock_wake). */
struct ddtx_rlock_cond {
#ifdef DDTX_RLOCK_PTHREAD
	pthread_cond_t cond;
#else
	uint32_t seq;                   /* bumped by each wake */
#endif
};

#ifndef DDTX_RLOCK_PTHREAD
static inline long ddtx_futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

static inline void ddtx_word_lock_slow(uint32_t *word)
{
	/* Mark it contended; whoever held it wakes one sleeper when it lets go. */
	while (__atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE) != 0)
		ddtx_futex(word, FUTEX_WAIT, 2, NULL);
}

static inline void ddtx_word_lock(uint32_t *word)
{
	uint32_t free_word = 0;
	if (!__atomic_compare_exchange_n(word, &free_word, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		ddtx_word_lock_slow(word);
}

static inline bool ddtx_word_trylock(uint32_t *word)
{
	uint32_t free_word = 0;
	return __atomic_compare_exchange_n(word, &free_word, 1, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static inline void ddtx_word_unlock(uint32_t *word)
{
	if (__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) == 2)
		ddtx_futex(word, FUTEX_WAKE, 1, NULL);
}
#endif

static inline int ddtx_rlock_init(struct ddtx_rlock *l)
{
	l->owner = 0;
	l->depth = 0;
#ifdef DDTX_RLOCK_PTHREAD
	return pthread_mutex_init(&l->mutex, NULL);
#else
	l->word = 0;
	return 0;
#endif
}

static inline void ddtx_rlock_destroy(struct ddtx_rlock *l)
{
#ifdef DDTX_RLOCK_PTHREAD
	pthread_mutex_destroy(&l->mutex);
#else
	(void)l;
#endif
}

static inline bool ddtx_rlock_mine(struct ddtx_rlock *l, pthread_t self)
{
	return pthread_equal(__atomic_load_n(&l->owner, __ATOMIC_RELAXED), self);
}

static inline void ddtx_rlock_enter(struct ddtx_rlock *l, pthread_t self)
{
	__atomic_store_n(&l->owner, self, __ATOMIC_RELAXED);
	l->depth = 1;
}

static inline void ddtx_rlock_leave(struct ddtx_rlock *l)
{
	__atomic_store_n(&l->owner, (pthread_t)0, __ATOMIC_RELAXED);
	l->depth = 0;
}

static inline void ddtx_rlock_lock(struct ddtx_rlock *l)
{
	pthread_t self = pthread_self();

	if (ddtx_rlock_mine(l, self)) {
		l->depth++;
		return;
	}
#ifdef DDTX_RLOCK_PTHREAD
	pthread_mutex_lock(&l->mutex);
#else
	ddtx_word_lock(&l->word);
#endif
	ddtx_rlock_enter(l, self);
}

/* true: taken (or entered again by its owner). */
static inline bool ddtx_rlock_trylock(struct ddtx_rlock *l)
{
	pthread_t self = pthread_self();

	if (ddtx_rlock_mine(l, self)) {
		l->depth++;
		return true;
	}
#ifdef DDTX_RLOCK_PTHREAD
	if (pthread_mutex_trylock(&l->mutex))
		return false;
#else
	if (!ddtx_word_trylock(&l->word))
		return false;
#endif
	ddtx_rlock_enter(l, self);
	return true;
}

static inline void ddtx_rlock_unlock(struct ddtx_rlock *l)
{
	if (--l->depth)
		return;
	__atomic_store_n(&l->owner, (pthread_t)0, __ATOMIC_RELAXED);
#ifdef DDTX_RLOCK_PTHREAD
	pthread_mutex_unlock(&l->mutex);
#else
	ddtx_word_unlock(&l->word);
#endif
}

static inline int ddtx_rlock_cond_init(struct ddtx_rlock_cond *c)
{
#ifdef DDTX_RLOCK_PTHREAD
	return pthread_cond_init(&c->cond, NULL);
#else
	c->seq = 0;
	return 0;
#endif
}

static inline void ddtx_rlock_cond_destroy(struct ddtx_rlock_cond *c)
{
#ifdef DDTX_RLOCK_PTHREAD
	pthread_cond_destroy(&c->cond);
#else
	(void)c;
#endif
}

/*
 * Sleep on c for at most ms milliseconds with the lock released, by an owner that entered
 * once (a second entry would be released by the wait while the outer caller still counts on
 * it); the lock is held again on return.  A wake given under the lock after the caller's last
 * check is never missed; one given without the lock may be (the timeout bounds that).
 */
static inline void ddtx_rlock_wait(struct ddtx_rlock *l, struct ddtx_rlock_cond *c, unsigned ms)
{
	pthread_t self = pthread_self();

	ddtx_rlock_leave(l);
#ifdef DDTX_RLOCK_PTHREAD
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&c->cond, &l->mutex, &until);
#else
	const struct timespec rel = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
	ddtx_word_unlock(&l->word);
	ddtx_futex(&c->seq, FUTEX_WAIT, seq, &rel);
	ddtx_word_lock(&l->word);
#endif
	ddtx_rlock_enter(l, self);
}

/* Wake one sleeper of c (called under the lock, or without it at exit). */
static inline void ddtx_rlock_wake(struct ddtx_rlock_cond *c)
{
#ifdef DDTX_RLOCK_PTHREAD
	pthread_cond_signal(&c->cond);
#else
	__atomic_fetch_add(&c->seq, 1, __ATOMIC_RELEASE);
	ddtx_futex(&c->seq, FUTEX_WAKE, 1, NULL);
#endif
}

#endif /* DDTX_COMMON_RLOCK_H */
