/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * u64map.h — a small open-addressing hash map from a u64 key to a non-NULL
 * pointer, for the model's per-process tables (threads, streams, launch
 * sites...). Deletion is for whole processes the daemon forgets.
 * Iteration order is hash order, so anything printed from it is sorted first.
 */
#ifndef GP_U64MAP_H
#define GP_U64MAP_H

#include <stddef.h>
#include <linux/types.h>

struct gp_u64map_slot {
	__u64 key;
	void *val; /* NULL: empty slot */
};

struct gp_u64map {
	struct gp_u64map_slot *slots;
	size_t cap; /* power of two, or 0 before the first insert */
	size_t count;
};

/* The value stored under key, or NULL. */
void *gp_u64map_get(const struct gp_u64map *map, __u64 key);
/* Stores val (non-NULL) under key, replacing any previous value. 0 or -ENOMEM/-EINVAL. */
int gp_u64map_put(struct gp_u64map *map, __u64 key, void *val);
/* Removes key (the value is the caller's to free). 0, or -ENOENT. */
int gp_u64map_del(struct gp_u64map *map, __u64 key);
/*
 * Copies up to max values into out (hash order) and returns how many were
 * copied; with max >= map->count that is all of them.
 */
size_t gp_u64map_values(const struct gp_u64map *map, void **out, size_t max);
/* Frees the table; calls free_val on every value when free_val is not NULL. */
void gp_u64map_clear(struct gp_u64map *map, void (*free_val)(void *val));

#endif /* GP_U64MAP_H */
