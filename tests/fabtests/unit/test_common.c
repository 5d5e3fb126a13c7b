/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The common floor: the hash index (against a brute-force search over random keys with forced
 * collisions, growth and rebuilds after removals), the one iov check, the recursive lock
 * (re-entry, exclusion between threads, the timed wait giving the lock up and taking it back),
 * and the list's splice (order kept in both directions, empty lists on either side).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <rdma/fi_errno.h>

#include "common/hindex.h"
#include "common/iov_check.h"
#include "common/list.h"
#include "common/rlock.h"
#include "unit_check.h"

#define NKEYS 5000

struct table {
	uint64_t key[NKEYS];
	bool live[NKEYS];
	uint32_t n;
	struct ddtx_hindex index;
};

/* Only 64 distinct hashes: long probe chains that cross the wrap-around of the slot array. */
static uint64_t key_hash(uint64_t key)
{
	return ddtx_hash_u64(key % 64);
}

static bool hash_of(const void *owner, uint32_t pos, uint64_t *hash)
{
	const struct table *t = owner;
	if (!t->live[pos])
		return false;
	*hash = key_hash(t->key[pos]);
	return true;
}

static uint32_t find(const struct table *t, uint64_t key)
{
	uint32_t cursor;
	for (uint32_t i = ddtx_hindex_first(&t->index, key_hash(key), &cursor);
	     i != DDTX_HINDEX_END; i = ddtx_hindex_next(&t->index, &cursor))
		if (t->live[i] && t->key[i] == key)
			return i;
	return DDTX_HINDEX_END;
}

static uint32_t brute(const struct table *t, uint64_t key)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->live[i] && t->key[i] == key)
			return i;
	return DDTX_HINDEX_END;
}

static void test_hindex(void)
{
	static struct table t;
	srand(7);
	ddtx_hindex_init(&t.index);
	CHECK(find(&t, 1) == DDTX_HINDEX_END, "empty index finds nothing");
	for (uint32_t i = 0; i < NKEYS; i++) {
		uint64_t key = ((uint64_t)rand() << 20) ^ (uint64_t)rand();
		if (brute(&t, key) != DDTX_HINDEX_END)
			continue;
		CHECK(!ddtx_hindex_reserve(&t.index, t.n + 1, t.n, hash_of, &t, false), "reserve");
		t.key[t.n] = key;
		t.live[t.n] = true;
		ddtx_hindex_add(&t.index, key_hash(key), t.n);
		t.n++;
		CHECK(2 * (uint64_t)t.index.used <= (uint64_t)t.index.mask + 1, "load above 1/2");
	}
	for (uint32_t i = 0; i < t.n; i++)
		CHECK(find(&t, t.key[i]) == i, "key %u found at its position", i);
	/* Remove every third entry, rebuild, and compare every lookup with the brute force. */
	for (uint32_t i = 0; i < t.n; i += 3)
		t.live[i] = false;
	CHECK(!ddtx_hindex_reserve(&t.index, t.n, t.n, hash_of, &t, true), "forced rebuild");
	CHECK(t.index.used == t.n - (t.n + 2) / 3, "rebuild indexes live entries only");
	for (uint32_t i = 0; i < t.n; i++)
		CHECK(find(&t, t.key[i]) == brute(&t, t.key[i]), "lookup %u after removal", i);
	for (int i = 0; i < 1000; i++) {
		uint64_t key = ((uint64_t)rand() << 21) | 1;
		CHECK(find(&t, key) == brute(&t, key), "absent key");
	}
	ddtx_hindex_fini(&t.index);
	CHECK(!t.index.slot && find(&t, 5) == DDTX_HINDEX_END, "fini");
	CHECK(ddtx_hash_bytes("ab", 2) != ddtx_hash_bytes("ba", 2), "byte order matters");
}

static void test_iov_check(void)
{
	char buf[16];
	struct iovec ok[2] = {{buf, 8}, {buf + 8, 8}};
	struct iovec hole[2] = {{buf, 8}, {NULL, 4}};
	struct iovec empty_null[2] = {{buf, 8}, {NULL, 0}};
	struct iovec huge[2] = {{buf, SIZE_MAX - 4}, {buf, 8}};
	size_t total = 3;

	CHECK(!ddtx_iov_check(ok, 2, 2, &total) && total == 19, "total added to the start value");
	CHECK(ddtx_iov_check(ok, 2, 1, NULL) == -FI_EINVAL, "over the limit");
	CHECK(ddtx_iov_check(NULL, 1, 4, NULL) == -FI_EINVAL, "NULL list with entries");
	CHECK(!ddtx_iov_check(NULL, 0, 4, NULL), "empty list");
	CHECK(ddtx_iov_check(hole, 2, 4, NULL) == -FI_EINVAL, "NULL base under bytes");
	CHECK(!ddtx_iov_check(empty_null, 2, 4, NULL), "NULL base of an empty entry");
	total = 0;
	CHECK(ddtx_iov_check(huge, 2, 4, &total) == -FI_EINVAL && total == 0, "overflow refused");
	/* Sums past 2^32, overflow from the entries and from the start value, and SIZE_MAX itself. */
	struct iovec carry[2] = {{buf, 0xffffffffu}, {buf, 1}};
	struct iovec high[2] = {{buf, (SIZE_MAX >> 1) + 1}, {buf, (SIZE_MAX >> 1) + 1}};
	total = 0;
	CHECK(!ddtx_iov_check(carry, 2, 4, &total) && total == 0x100000000ull, "a sum past 2^32");
	CHECK(ddtx_iov_check(high, 2, 4, NULL) == -FI_EINVAL, "two halves of SIZE_MAX overflow");
	total = SIZE_MAX - 15;
	CHECK(ddtx_iov_check(ok, 2, 4, &total) == -FI_EINVAL && total == SIZE_MAX - 15,
	      "overflow from the start value");
	total = SIZE_MAX - 16;
	CHECK(!ddtx_iov_check(ok, 2, 4, &total) && total == SIZE_MAX, "up to SIZE_MAX exactly");
	/* One entry: the in-line path, the same rules. */
	total = 5;
	CHECK(!ddtx_iov_check(ok, 1, 1, &total) && total == 13, "one entry added to the start");
	CHECK(ddtx_iov_check(ok, 1, 0, NULL) == -FI_EINVAL, "one entry over a limit of 0");
	CHECK(ddtx_iov_check(&hole[1], 1, 4, NULL) == -FI_EINVAL, "one NULL base under bytes");
	CHECK(!ddtx_iov_check(&empty_null[1], 1, 4, NULL), "one empty entry with a NULL base");
	total = SIZE_MAX - 7;
	CHECK(ddtx_iov_check(ok, 1, 4, &total) == -FI_EINVAL && total == SIZE_MAX - 7,
	      "one entry overflowing the start value");
	total = SIZE_MAX - 8;
	CHECK(!ddtx_iov_check(ok, 1, 4, &total) && total == SIZE_MAX, "one entry to SIZE_MAX");
	struct iovec hole_late[3] = {{buf, 8}, {buf, 0}, {NULL, 1}};
	CHECK(ddtx_iov_check(hole_late, 3, 4, NULL) == -FI_EINVAL, "NULL base under bytes, last");
	/* One entry (its own path): the same rules. */
	total = 2;
	CHECK(!ddtx_iov_check(ok, 1, 1, &total) && total == 10, "one entry added to the start");
	CHECK(ddtx_iov_check(ok, 1, 0, NULL) == -FI_EINVAL, "one entry over a limit of 0");
	CHECK(ddtx_iov_check(&hole[1], 1, 4, NULL) == -FI_EINVAL, "one NULL base under bytes");
	CHECK(!ddtx_iov_check(&empty_null[1], 1, 4, NULL), "one empty entry with a NULL base");
	total = SIZE_MAX - 7;
	CHECK(ddtx_iov_check(ok, 1, 4, &total) == -FI_EINVAL && total == SIZE_MAX - 7,
	      "one entry overflowing from the start value");
	total = SIZE_MAX - 8;
	CHECK(!ddtx_iov_check(ok, 1, 4, &total) && total == SIZE_MAX, "one entry up to SIZE_MAX");
	total = 0;
	CHECK(!ddtx_iov_check(huge, 1, 4, &total) && total == SIZE_MAX - 4, "one huge entry");
}

static struct ddtx_rlock lock;
static struct ddtx_rlock_cond wake;
static long counter;
static _Atomic int stage;     /* 1: the main thread holds the lock; 2: woken */

/* 20000 increments, each under the lock taken twice (the outer and an inner, re-entered). */
static void *count_nested(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		ddtx_rlock_lock(&lock);
		ddtx_rlock_lock(&lock);
		long c = counter;
		ddtx_rlock_unlock(&lock);
		counter = c + 1;
		ddtx_rlock_unlock(&lock);
	}
	return NULL;
}

static void *try_from_other(void *arg)
{
	*(bool *)arg = ddtx_rlock_trylock(&lock);
	if (*(bool *)arg)
		ddtx_rlock_unlock(&lock);
	return NULL;
}

static bool other_thread_gets_it(void)
{
	pthread_t t;
	bool got = false;
	pthread_create(&t, NULL, try_from_other, &got);
	pthread_join(t, NULL);
	return got;
}

/* Takes the lock while the main thread waits in ddtx_rlock_wait, and wakes it. */
static void *wake_waiter(void *arg)
{
	(void)arg;
	while (stage != 1)
		sched_yield();
	ddtx_rlock_lock(&lock);
	stage = 2;
	ddtx_rlock_wake(&wake);
	ddtx_rlock_unlock(&lock);
	return NULL;
}

static void test_rlock(void)
{
	CHECK(ddtx_rlock_init(&lock) == 0, "init");
	ddtx_rlock_lock(&lock);
	CHECK(ddtx_rlock_trylock(&lock), "the owner enters again with trylock");
	ddtx_rlock_lock(&lock);
	CHECK(lock.depth == 3, "depth %u after three entries", lock.depth);
	CHECK(!other_thread_gets_it(), "another thread took a held lock");
	ddtx_rlock_unlock(&lock);
	ddtx_rlock_unlock(&lock);
	CHECK(!other_thread_gets_it(), "another thread took it with one entry left");
	ddtx_rlock_unlock(&lock);
	CHECK(other_thread_gets_it(), "another thread could not take a free lock");

	/* Four threads on two cores: most entries find the lock held and sleep in the kernel. */
	pthread_t t[4];
	counter = 0;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, count_nested, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(counter == 80000, "%ld increments of 80000 under the lock", counter);

	/* The wait lets another thread in, and returns with the lock held once more; a wake
	 * given under the lock is not lost (the wait would last its whole 60 s). */
	CHECK(ddtx_rlock_cond_init(&wake) == 0, "condition init");
	pthread_t w;
	stage = 0;
	pthread_create(&w, NULL, wake_waiter, NULL);
	ddtx_rlock_lock(&lock);
	stage = 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (stage != 2)
		ddtx_rlock_wait(&lock, &wake, 60000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 30, "the wake was lost: the wait took %ld s",
	      (long)(t1.tv_sec - t0.tv_sec));
	CHECK(lock.depth == 1, "depth %u after the wait", lock.depth);
	CHECK(!other_thread_gets_it(), "the lock is not the waiter's again after the wait");
	ddtx_rlock_unlock(&lock);
	pthread_join(w, NULL);
	CHECK(other_thread_gets_it(), "not free after the waiter's unlock");
	ddtx_rlock_cond_destroy(&wake);
	ddtx_rlock_destroy(&lock);
}

struct item {
	struct ddtx_list_entry entry;
	int v;
};

/* The values of l front to back, checked also backwards (the prev links). */
static bool list_is(const struct ddtx_list *l, const int *want, int n)
{
	const struct ddtx_list_entry *e = &l->head;
	for (int i = 0; i < n; i++) {
		e = e->next;
		if (e == &l->head || ddtx_container_of(e, struct item, entry)->v != want[i])
			return false;
	}
	if (e->next != &l->head)
		return false;
	for (int i = n - 1; i >= 0; i--) {
		if (ddtx_container_of(e, struct item, entry)->v != want[i])
			return false;
		e = e->prev;
	}
	return e == &l->head;
}

static void test_list_splice(void)
{
	struct item it[5];
	struct ddtx_list a, b;
	ddtx_list_init(&a);
	ddtx_list_init(&b);
	for (int i = 0; i < 5; i++) {
		it[i].v = i;
		ddtx_list_entry_init(&it[i].entry);
		CHECK(!ddtx_list_linked(&it[i].entry), "a fresh entry is on no list");
	}
	ddtx_list_splice_back(&a, &b);
	CHECK(ddtx_list_empty(&a) && ddtx_list_empty(&b), "two empty lists stay empty");
	for (int i = 0; i < 3; i++)
		ddtx_list_push_back(&b, &it[i].entry);
	ddtx_list_splice_back(&a, &b);
	CHECK(list_is(&a, (int[]){0, 1, 2}, 3) && ddtx_list_empty(&b), "into an empty list");
	ddtx_list_push_back(&b, &it[3].entry);
	ddtx_list_push_back(&b, &it[4].entry);
	ddtx_list_splice_back(&a, &b);
	CHECK(list_is(&a, (int[]){0, 1, 2, 3, 4}, 5) && ddtx_list_empty(&b),
	      "behind what is there, in order");
	ddtx_list_splice_back(&a, &b);
	CHECK(list_is(&a, (int[]){0, 1, 2, 3, 4}, 5), "an empty list spliced changes nothing");
	ddtx_list_remove(&it[2].entry);
	CHECK(!ddtx_list_linked(&it[2].entry) && list_is(&a, (int[]){0, 1, 3, 4}, 4),
	      "removed after a splice");
}

int main(void)
{
	test_hindex();
	test_iov_check();
	test_rlock();
	test_list_splice();
	return failures ? 1 : 0;
}
