/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A recursive lock: a plain mutex, its owner and a depth.  The domain lock is taken by every
 * data call and every CQ read, and re-entered when progress writes a CQ; glibc's recursive
 * mutex cost 75 instructions a lock/unlock pair, three pairs per small message (callgrind,
 * util/bench-instructions.sh).  Here re-entry is a compare and an increment, and the first
 * entry a plain mutex's fast path.
 *
 * The owner is read without the mutex: only a thread itself ever stores its own id there, and
 * clears it before it unlocks, so a thread reads its own id only while it holds the lock.
 */
#ifndef DDTX_COMMON_RLOCK_H
#define DDTX_COMMON_RLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct ddtx_rlock {
	pthread_mutex_t mutex;
	pthread_t owner;                /* 0 when free (no thread has id 0 in glibc) */
	unsigned depth;                 /* the owner's entries; only it reads or writes */
};

static inline int ddtx_rlock_init(struct ddtx_rlock *l)
{
	l->owner = 0;
	l->depth = 0;
	return pthread_mutex_init(&l->mutex, NULL);
}

static inline void ddtx_rlock_destroy(struct ddtx_rlock *l)
{
	pthread_mutex_destroy(&l->mutex);
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

static inline void ddtx_rlock_lock(struct ddtx_rlock *l)
{
	pthread_t self = pthread_self();

	if (ddtx_rlock_mine(l, self)) {
		l->depth++;
		return;
	}
	pthread_mutex_lock(&l->mutex);
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
	if (pthread_mutex_trylock(&l->mutex))
		return false;
	ddtx_rlock_enter(l, self);
	return true;
}

static inline void ddtx_rlock_unlock(struct ddtx_rlock *l)
{
	if (--l->depth)
		return;
	__atomic_store_n(&l->owner, (pthread_t)0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&l->mutex);
}

/* pthread_cond_timedwait for an owner that entered once (a second entry would be released by
 * the wait while the outer caller still counts on it). */
static inline void ddtx_rlock_timedwait(struct ddtx_rlock *l, pthread_cond_t *cond,
					const struct timespec *until)
{
	pthread_t self = pthread_self();

	__atomic_store_n(&l->owner, (pthread_t)0, __ATOMIC_RELAXED);
	l->depth = 0;
	pthread_cond_timedwait(cond, &l->mutex, until);
	ddtx_rlock_enter(l, self);
}

#endif /* DDTX_COMMON_RLOCK_H */
