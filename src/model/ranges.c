/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ranges.c — disjoint address ranges in a glibc tsearch tree. The
 * comparator calls two ranges equal when they overlap; because the set
 * never holds overlapping ranges this is a total order on its members, and
 * a one-address probe [addr, addr + 1) finds the range containing addr.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>

#include "model/ranges.h"

static int cmp_range(const void *a, const void *b)
{
	const struct gp_range *x = a, *y = b;

	if (x->end <= y->start)
		return -1;
	if (y->end <= x->start)
		return 1;
	return 0;
}

static struct gp_range *find_overlap(const struct gp_range_set *set, const struct gp_range *probe)
{
	struct gp_range **hit = tfind(probe, &set->root, cmp_range);

	return hit ? *hit : NULL;
}

int gp_ranges_insert(struct gp_range_set *set, struct gp_range *r, __u64 start, __u64 bytes,
		     void (*evict)(struct gp_range *old, void *ctx), void *ctx)
{
	struct gp_range *old;

	r->start = start;
	r->end = start + (bytes ? bytes : 1);
	if (r->end <= start) /* wrapped past the top of the address space */
		r->end = ~0ULL;
	while ((old = find_overlap(set, r))) {
		tdelete(old, &set->root, cmp_range);
		set->count--;
		if (evict)
			evict(old, ctx);
	}
	if (!tsearch(r, &set->root, cmp_range))
		return -ENOMEM;
	set->count++;
	return 0;
}

struct gp_range *gp_ranges_find(const struct gp_range_set *set, __u64 addr)
{
	struct gp_range probe = { .start = addr, .end = addr + 1 };

	if (addr == ~0ULL)
		probe.start = addr - 1;
	return find_overlap(set, &probe);
}

struct gp_range *gp_ranges_remove(struct gp_range_set *set, __u64 start)
{
	struct gp_range *r = gp_ranges_find(set, start);

	if (!r || r->start != start)
		return NULL;
	tdelete(r, &set->root, cmp_range);
	set->count--;
	return r;
}

struct walk_ctx {
	void (*visit)(const struct gp_range *r, void *ctx);
	void *ctx;
};

static void walk_node(const void *node, VISIT which, void *closure)
{
	const struct walk_ctx *w = closure;

	/* postorder = between the left and right subtrees: in-order for inner nodes */
	if (which == postorder || which == leaf)
		w->visit(*(const struct gp_range *const *)node, w->ctx);
}

void gp_ranges_walk(const struct gp_range_set *set,
		    void (*visit)(const struct gp_range *r, void *ctx), void *ctx)
{
	struct walk_ctx w = { visit, ctx };

	if (set->root)
		twalk_r(set->root, walk_node, &w);
}

void gp_ranges_clear(struct gp_range_set *set, void (*free_range)(struct gp_range *r))
{
	/* delete from the root down rather than tdestroy(), whose callback has no context */
	while (set->root) {
		struct gp_range *r = *(struct gp_range **)set->root;

		tdelete(r, &set->root, cmp_range);
		if (free_range)
			free_range(r);
	}
	set->count = 0;
}
