/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/mkey_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/minmax.h"

struct ddtx_mkey_pool {
	struct ddtx_wire_domain *wire;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct ddtx_wire_mkey **stock;   /* LIFO: the most recently used key is warmest */
	size_t slots;                    /* entries of stock[] */
	size_t level, capacity, outstanding;
	struct ddtx_mkey_pool_stats st;
	bool stop;
	bool thread_started;
	pthread_t thread;
};

/* Create keys until the stock reaches its capacity; the lock is dropped around each creation. */
static void fill(struct ddtx_mkey_pool *pool)
{
	while (!pool->stop && pool->level < pool->capacity) {
		pthread_mutex_unlock(&pool->lock);
		struct ddtx_wire_mkey *mk = NULL;
		int ret = ddtx_wire_mkey_create(pool->wire, &mk);
		pthread_mutex_lock(&pool->lock);
		if (ret) {
			DDTX_WARN(FI_LOG_DOMAIN, "mkey pool: creating a key failed: %s\n",
				  fi_strerror(-ret));
			return;
		}
		if (pool->level >= pool->slots) { /* never expected: keep memory safe */
			ddtx_wire_mkey_destroy(pool->wire, mk);
			return;
		}
		pool->stock[pool->level++] = mk;
		pool->st.created++;
	}
}

static void *refill_thread(void *arg)
{
	struct ddtx_mkey_pool *pool = arg;
	pthread_mutex_lock(&pool->lock);
	while (!pool->stop) {
		if (pool->level * 2 < pool->capacity) {
			/* Counted as it starts: whoever sees the stock rise sees the refill counted. */
			pool->st.refills++;
			fill(pool);
			continue;
		}
		pthread_cond_wait(&pool->wake, &pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

int ddtx_mkey_pool_open(struct ddtx_wire_domain *wire, size_t capacity,
			struct ddtx_mkey_pool **out)
{
	struct ddtx_mkey_pool *pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -FI_ENOMEM;
	if (!ddtx_wire_domain_caps(wire)->max_mkey_entries)
		capacity = 0;
	pool->wire = wire;
	pool->capacity = capacity;
	/* Keys taken out can exceed the capacity while the thread refills: room for both. */
	pool->slots = DDTX_MAX(capacity * 2, (size_t)1);
	pool->stock = calloc(pool->slots, sizeof(*pool->stock));
	if (!pool->stock) {
		free(pool);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->wake, NULL);
	pthread_mutex_lock(&pool->lock);
	fill(pool);
	pthread_mutex_unlock(&pool->lock);
	if (capacity && !pthread_create(&pool->thread, NULL, refill_thread, pool))
		pool->thread_started = true;
	*out = pool;
	return 0;
}

void ddtx_mkey_pool_close(struct ddtx_mkey_pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	pthread_cond_signal(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	if (pool->thread_started)
		pthread_join(pool->thread, NULL);
	if (pool->outstanding)
		DDTX_WARN(FI_LOG_DOMAIN, "mkey pool closed with %zu keys still out\n",
			  pool->outstanding);
	for (size_t i = 0; i < pool->level; i++)
		ddtx_wire_mkey_destroy(pool->wire, pool->stock[i]);
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->lock);
	free(pool->stock);
	free(pool);
}

struct ddtx_wire_mkey *ddtx_mkey_pool_get(struct ddtx_mkey_pool *pool)
{
	struct ddtx_wire_mkey *mk = NULL;
	pthread_mutex_lock(&pool->lock);
	if (pool->level) {
		mk = pool->stock[--pool->level];
		pool->outstanding++;
	} else {
		pool->st.empty++;
	}
	if (pool->level * 2 < pool->capacity)
		pthread_cond_signal(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	return mk;
}

void ddtx_mkey_pool_put(struct ddtx_mkey_pool *pool, struct ddtx_wire_mkey *mkey)
{
	if (mkey->nentries)
		ddtx_wire_mkey_invalidate(pool->wire, mkey);
	pthread_mutex_lock(&pool->lock);
	pool->outstanding--;
	if (pool->level < pool->slots) {
		pool->stock[pool->level++] = mkey;
		mkey = NULL;
	}
	pthread_mutex_unlock(&pool->lock);
	if (mkey)
		ddtx_wire_mkey_destroy(pool->wire, mkey);
}

size_t ddtx_mkey_pool_level(struct ddtx_mkey_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	size_t level = pool->level;
	pthread_mutex_unlock(&pool->lock);
	return level;
}

void ddtx_mkey_pool_stats(struct ddtx_mkey_pool *pool, struct ddtx_mkey_pool_stats *st)
{
	pthread_mutex_lock(&pool->lock);
	*st = pool->st;
	st->level = pool->level;
	st->capacity = pool->capacity;
	pthread_mutex_unlock(&pool->lock);
}
