/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * u64map.c — open addressing with linear probing, kept at most half full so
 * that probe sequences stay short; the key is scrambled (splitmix64's
 * finaliser) because pointers and tids are far from uniformly distributed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "model/u64map.h"

static size_t slot_of(__u64 key, size_t cap)
{
	key ^= key >> 30;
	key *= 0xbf58476d1ce4e5b9ULL;
	key ^= key >> 27;
	key *= 0x94d049bb133111ebULL;
	key ^= key >> 31;
	return (size_t)key & (cap - 1);
}

void *gp_u64map_get(const struct gp_u64map *map, __u64 key)
{
	if (!map->cap)
		return NULL;
	for (size_t i = slot_of(key, map->cap);; i = (i + 1) & (map->cap - 1)) {
		const struct gp_u64map_slot *s = &map->slots[i];

		if (!s->val)
			return NULL;
		if (s->key == key)
			return s->val;
	}
}

static int grow(struct gp_u64map *map)
{
	size_t cap = map->cap ? map->cap * 2 : 16;
	struct gp_u64map_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < map->cap; i++) {
		const struct gp_u64map_slot *s = &map->slots[i];

		if (!s->val)
			continue;
		size_t j = slot_of(s->key, cap);

		while (slots[j].val)
			j = (j + 1) & (cap - 1);
		slots[j] = *s;
	}
	free(map->slots);
	map->slots = slots;
	map->cap = cap;
	return 0;
}

int gp_u64map_put(struct gp_u64map *map, __u64 key, void *val)
{
	if (!val)
		return -EINVAL;
	if ((map->count + 1) * 2 > map->cap) {
		int err = grow(map);

		if (err)
			return err;
	}
	for (size_t i = slot_of(key, map->cap);; i = (i + 1) & (map->cap - 1)) {
		struct gp_u64map_slot *s = &map->slots[i];

		if (!s->val) {
			s->key = key;
			s->val = val;
			map->count++;
			return 0;
		}
		if (s->key == key) {
			s->val = val;
			return 0;
		}
	}
}

int gp_u64map_del(struct gp_u64map *map, __u64 key)
{
	size_t i, j, mask = map->cap - 1;

	if (!map->cap)
		return -ENOENT;
	for (i = slot_of(key, map->cap);; i = (i + 1) & mask) {
		if (!map->slots[i].val)
			return -ENOENT;
		if (map->slots[i].key == key)
			break;
	}
	/*
	 * Backward shift: move later entries of the run into the hole when
	 * their home slot is not cyclically in (hole, j], so every entry stays
	 * reachable from its home without tombstones.
	 */
	for (j = (i + 1) & mask; map->slots[j].val; j = (j + 1) & mask) {
		size_t home = slot_of(map->slots[j].key, map->cap);
		bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);

		if (!stays) {
			map->slots[i] = map->slots[j];
			i = j;
		}
	}
	map->slots[i].val = NULL;
	map->slots[i].key = 0;
	map->count--;
	return 0;
}

size_t gp_u64map_values(const struct gp_u64map *map, void **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < map->cap && n < max; i++)
		if (map->slots[i].val)
			out[n++] = map->slots[i].val;
	return n;
}

void gp_u64map_clear(struct gp_u64map *map, void (*free_val)(void *val))
{
	if (free_val)
		for (size_t i = 0; i < map->cap; i++)
			if (map->slots[i].val)
				free_val(map->slots[i].val);
	free(map->slots);
	map->slots = NULL;
	map->cap = map->count = 0;
}
