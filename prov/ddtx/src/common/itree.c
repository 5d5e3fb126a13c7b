/* SPDX-License-Identifier: BSD-2-Clause */
/* The AVL interval tree of itree.h. */
#include "common/itree.h"

#include <assert.h>
#include <stdbool.h>

typedef struct ddtx_itree_node node_t;

static inline int height(const node_t *n)
{
	return n ? n->height : 0;
}

static inline void update(node_t *n)
{
	int hl = height(n->left), hr = height(n->right);
	uintptr_t m = n->end;

	n->height = 1 + (hl > hr ? hl : hr);
	if (n->left && n->left->max_end > m)
		m = n->left->max_end;
	if (n->right && n->right->max_end > m)
		m = n->right->max_end;
	n->max_end = m;
}

static node_t *rotate_right(node_t *n)
{
	node_t *l = n->left;

	n->left = l->right;
	l->right = n;
	update(n);
	update(l);
	return l;
}

static node_t *rotate_left(node_t *n)
{
	node_t *r = n->right;

	n->right = r->left;
	r->left = n;
	update(n);
	update(r);
	return r;
}

static node_t *balance(node_t *n)
{
	int b;

	update(n);
	b = height(n->left) - height(n->right);
	if (b > 1) {
		if (height(n->left->left) < height(n->left->right))
			n->left = rotate_left(n->left);
		return rotate_right(n);
	}
	if (b < -1) {
		if (height(n->right->right) < height(n->right->left))
			n->right = rotate_right(n->right);
		return rotate_left(n);
	}
	return n;
}

/* Total order: start, then the node's address (intervals may repeat). */
static inline int cmp(const node_t *a, const node_t *b)
{
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a == b)
		return 0;
	return (uintptr_t)a < (uintptr_t)b ? -1 : 1;
}

static node_t *insert_rec(node_t *root, node_t *n)
{
	if (!root)
		return n;
	if (cmp(n, root) < 0)
		root->left = insert_rec(root->left, n);
	else
		root->right = insert_rec(root->right, n);
	return balance(root);
}

void ddtx_itree_insert(struct ddtx_itree *t, node_t *n)
{
	assert(n->start < n->end);
	n->left = n->right = NULL;
	n->height = 1;
	n->max_end = n->end;
	t->root = insert_rec(t->root, n);
	t->count++;
}

static node_t *remove_min(node_t *root, node_t **min)
{
	if (!root->left) {
		*min = root;
		return root->right;
	}
	root->left = remove_min(root->left, min);
	return balance(root);
}

static node_t *remove_rec(node_t *root, node_t *n, bool *found)
{
	int c;

	if (!root)
		return NULL;
	c = cmp(n, root);
	if (c < 0) {
		root->left = remove_rec(root->left, n, found);
	} else if (c > 0) {
		root->right = remove_rec(root->right, n, found);
	} else {
		node_t *l = root->left, *r = root->right, *m;

		*found = true;
		root->left = root->right = NULL;
		if (!r)
			return l;
		r = remove_min(r, &m);
		m->left = l;
		m->right = r;
		return balance(m);
	}
	return balance(root);
}

void ddtx_itree_remove(struct ddtx_itree *t, node_t *n)
{
	bool found = false;

	t->root = remove_rec(t->root, n, &found);
	assert(found);
	if (found)
		t->count--;
}

static int visit_rec(const node_t *x, uintptr_t s, uintptr_t e,
		     int (*fn)(void *, node_t *), void *arg)
{
	int r;

	while (x && x->max_end > s) {
		r = visit_rec(x->left, s, e, fn, arg);
		if (r)
			return r;
		if (x->start >= e)
			return 0;       /* everything to the right starts later still */
		if (x->end > s) {
			r = fn(arg, (node_t *)x);
			if (r)
				return r;
		}
		x = x->right;
	}
	return 0;
}

int ddtx_itree_visit(const struct ddtx_itree *t, uintptr_t start, uintptr_t end,
		     int (*fn)(void *arg, node_t *n), void *arg)
{
	if (start >= end)
		return 0;
	return visit_rec(t->root, start, end, fn, arg);
}

struct cover_arg {
	uintptr_t end;
	int (*ok)(void *, node_t *);
	void *arg;
	node_t *found;
};

static int cover_fn(void *a, node_t *n)
{
	struct cover_arg *c = a;

	if (n->end >= c->end && (!c->ok || c->ok(c->arg, n))) {
		c->found = n;
		return 1;
	}
	return 0;
}

node_t *ddtx_itree_find_covering(const struct ddtx_itree *t, uintptr_t start, uintptr_t end,
				 int (*ok)(void *arg, node_t *n), void *arg)
{
	struct cover_arg c = { .end = end, .ok = ok, .arg = arg, .found = NULL };

	if (start >= end)
		return NULL;
	/* Every node containing [start, end) contains the point start: stab there. */
	visit_rec(t->root, start, start + 1, cover_fn, &c);
	return c.found;
}
