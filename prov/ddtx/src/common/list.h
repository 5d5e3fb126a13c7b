/* SPDX-License-Identifier: BSD-2-Clause */
/* A minimal intrusive doubly linked list (libfabric's dlist is not exported to providers). */
#ifndef DDTX_LIST_H
#define DDTX_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct ddtx_list_entry {
	struct ddtx_list_entry *next, *prev;
};

struct ddtx_list {
	struct ddtx_list_entry head;
};

#define ddtx_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void ddtx_list_init(struct ddtx_list *l)
{
	l->head.next = l->head.prev = &l->head;
}

static inline bool ddtx_list_empty(const struct ddtx_list *l)
{
	return l->head.next == &l->head;
}

/* An entry on no list links to itself (as ddtx_list_remove leaves it): removing it again is a
 * no-op. */
static inline void ddtx_list_entry_init(struct ddtx_list_entry *e)
{
	e->next = e->prev = e;
}

static inline bool ddtx_list_linked(const struct ddtx_list_entry *e)
{
	return e->next != e;
}

static inline void ddtx_list_insert_before(struct ddtx_list_entry *pos, struct ddtx_list_entry *e)
{
	e->next = pos;
	e->prev = pos->prev;
	pos->prev->next = e;
	pos->prev = e;
}

static inline void ddtx_list_push_back(struct ddtx_list *l, struct ddtx_list_entry *e)
{
	ddtx_list_insert_before(&l->head, e);
}

static inline void ddtx_list_push_front(struct ddtx_list *l, struct ddtx_list_entry *e)
{
	ddtx_list_insert_before(l->head.next, e);
}

static inline void ddtx_list_remove(struct ddtx_list_entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e->prev = e;
}

static inline struct ddtx_list_entry *ddtx_list_first(const struct ddtx_list *l)
{
	return ddtx_list_empty(l) ? NULL : l->head.next;
}

static inline struct ddtx_list_entry *ddtx_list_pop_front(struct ddtx_list *l)
{
	struct ddtx_list_entry *e = ddtx_list_first(l);
	if (e)
		ddtx_list_remove(e);
	return e;
}

/* Move every entry of from, in order, to the back of to; from is left empty. */
static inline void ddtx_list_splice_back(struct ddtx_list *to, struct ddtx_list *from)
{
	if (ddtx_list_empty(from))
		return;
	from->head.next->prev = to->head.prev;
	to->head.prev->next = from->head.next;
	from->head.prev->next = &to->head;
	to->head.prev = from->head.prev;
	ddtx_list_init(from);
}

/* Iterate; safe against removal of the current entry. */
#define ddtx_list_foreach_safe(l, it, tmp)                                                     \
	for ((it) = (l)->head.next, (tmp) = (it)->next; (it) != &(l)->head;                    \
	     (it) = (tmp), (tmp) = (it)->next)

#endif /* DDTX_LIST_H */
