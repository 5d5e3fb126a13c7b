/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An intrusive interval tree: an AVL tree of half-open intervals [start, end) ordered by start,
 * each node augmented with the largest end in its subtree, so a stabbing or overlap query costs
 * O(log n + k) for k answers.  Intervals may overlap and may repeat.  No locking, no allocation:
 * the caller embeds struct ddtx_itree_node in its own objects and serialises access.
 */
#ifndef DDTX_ITREE_H
#define DDTX_ITREE_H

#include <stddef.h>
#include <stdint.h>

struct ddtx_itree_node {
	struct ddtx_itree_node *left, *right;
	uintptr_t start, end;           /* the interval [start, end); set before insertion */
	uintptr_t max_end;              /* private: largest end in this subtree */
	int height;                     /* private */
};

struct ddtx_itree {
	struct ddtx_itree_node *root;
	size_t count;
};

static inline void ddtx_itree_init(struct ddtx_itree *t)
{
	t->root = NULL;
	t->count = 0;
}

/* Insert n (n->start < n->end must hold). */
void ddtx_itree_insert(struct ddtx_itree *t, struct ddtx_itree_node *n);
/* Remove n, which must be in t. */
void ddtx_itree_remove(struct ddtx_itree *t, struct ddtx_itree_node *n);

/*
 * Call fn for every node overlapping [start, end) (node.start < end && node.end > start), in
 * ascending order of start.  fn must not modify the tree; a nonzero return stops the walk and is
 * returned.
 */
int ddtx_itree_visit(const struct ddtx_itree *t, uintptr_t start, uintptr_t end,
		     int (*fn)(void *arg, struct ddtx_itree_node *n), void *arg);

/* First node (in start order) that contains [start, end) and satisfies ok (NULL = any). */
struct ddtx_itree_node *ddtx_itree_find_covering(const struct ddtx_itree *t, uintptr_t start,
						 uintptr_t end,
						 int (*ok)(void *arg, struct ddtx_itree_node *n),
						 void *arg);

#endif /* DDTX_ITREE_H */
