/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ranges.h — a set of disjoint address ranges [start, end), ordered by
 * address (a glibc tsearch tree with an overlap comparator): O(log n)
 * insert, remove and "which range contains this address". Used for device,
 * managed and pinned host allocations. Intrusive: the caller embeds struct
 * gp_range first in its own record and owns its memory.
 */
#ifndef GP_RANGES_H
#define GP_RANGES_H

#include <stddef.h>
#include <linux/types.h>

struct gp_range {
	__u64 start;
	__u64 end; /* exclusive; > start (a zero-byte range occupies one address) */
};

struct gp_range_set {
	void *root; /* tsearch tree of struct gp_range * */
	size_t count;
};

/*
 * Sets r->start/end from start and bytes and inserts r. Ranges already in
 * the set that overlap it are removed first and handed to evict (if not
 * NULL): they can only be stale — freed without the free being seen.
 * Returns 0 or -ENOMEM.
 */
int gp_ranges_insert(struct gp_range_set *set, struct gp_range *r, __u64 start, __u64 bytes,
		     void (*evict)(struct gp_range *old, void *ctx), void *ctx);
/* The range that contains addr, or NULL. */
struct gp_range *gp_ranges_find(const struct gp_range_set *set, __u64 addr);
/* Removes and returns the range that starts exactly at start, or NULL. */
struct gp_range *gp_ranges_remove(struct gp_range_set *set, __u64 start);
/* Calls visit on every range in increasing address order. */
void gp_ranges_walk(const struct gp_range_set *set,
		    void (*visit)(const struct gp_range *r, void *ctx), void *ctx);
/* Empties the set; calls free_range on each range when it is not NULL. */
void gp_ranges_clear(struct gp_range_set *set, void (*free_range)(struct gp_range *r));

#endif /* GP_RANGES_H */
