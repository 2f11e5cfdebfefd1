/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_handles.c — the registry of live handles (streams, events, graphs,
 * executable graphs): an open-addressing set of pointers tagged with their
 * kind, so that a destroyed or garbage handle is recognised without being
 * dereferenced. Callers hold sg_mu.
 */
#include <stdlib.h>

#include "gpu_internal.h"

struct slot {
	uintptr_t key; /* 0 empty, 1 tombstone */
	int kind;
};

static struct slot *slots;
static size_t cap, used, live;

#define EMPTY 0
#define TOMB  1

static size_t hash(uintptr_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k;
}

static int grow(void)
{
	/* mostly tombstones: rehash at the same size; else double */
	size_t ncap = !cap ? 256 : (live * 4 < cap ? cap : cap * 2), i;
	struct slot *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -1;
	for (i = 0; i < cap; i++) {
		size_t j;

		if (slots[i].key <= TOMB)
			continue;
		for (j = hash(slots[i].key) & (ncap - 1); n[j].key; j = (j + 1) & (ncap - 1))
			;
		n[j] = slots[i];
	}
	free(slots);
	slots = n;
	cap = ncap;
	used = live;
	return 0;
}

int sg_handle_add(const void *p, enum sg_hkind kind)
{
	uintptr_t k = (uintptr_t)p;
	size_t j;

	if ((used + 1) * 2 > cap && grow())
		return -1;
	for (j = hash(k) & (cap - 1); slots[j].key > TOMB; j = (j + 1) & (cap - 1))
		if (slots[j].key == k) {
			slots[j].kind = kind;
			return 0;
		}
	if (slots[j].key == EMPTY)
		used++;
	slots[j].key = k;
	slots[j].kind = kind;
	live++;
	return 0;
}

static struct slot *find(uintptr_t k)
{
	size_t j;

	if (!cap || k <= TOMB)
		return NULL;
	for (j = hash(k) & (cap - 1); slots[j].key != EMPTY; j = (j + 1) & (cap - 1))
		if (slots[j].key == k)
			return &slots[j];
	return NULL;
}

void sg_handle_del(const void *p)
{
	struct slot *s = find((uintptr_t)p);

	if (s) {
		s->key = TOMB;
		s->kind = 0;
		live--;
	}
}

bool sg_handle_is(const void *p, enum sg_hkind kind)
{
	struct slot *s = find((uintptr_t)p);

	return s && s->kind == (int)kind;
}
