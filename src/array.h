/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * array.h — growing a dynamic array, one way everywhere: its capacity
 * doubles (from `first`) until it holds `need` elements; on failure the
 * array and its capacity are left as they were.
 *
 *	if (GP_ARRAY_GROW(p->v, p->cap, p->n + 1, 16))
 *		return -ENOMEM;
 *	p->v[p->n++] = x;
 */
#ifndef GP_ARRAY_H
#define GP_ARRAY_H

#include <errno.h>
#include <stdlib.h>

/* The capacity that holds need elements, doubling cap (first when 0); cap itself when it does. */
static inline size_t gp_array_cap(size_t cap, size_t need, size_t first)
{
	size_t nc = cap ? cap : first;

	while (nc < need)
		nc *= 2;
	return nc;
}

/* 0, or -ENOMEM (v and cap unchanged). v is any pointer lvalue, cap any unsigned lvalue. */
#define GP_ARRAY_GROW(v, cap, need, first)                                                \
	({                                                                                \
		int gp_grow_err_ = 0;                                                     \
		size_t gp_grow_need_ = (need);                                            \
                                                                                          \
		if (gp_grow_need_ > (size_t)(cap)) {                                      \
			size_t gp_grow_nc_ = gp_array_cap((cap), gp_grow_need_, (first)); \
			void *gp_grow_p_ = reallocarray((v), gp_grow_nc_, sizeof(*(v)));  \
                                                                                          \
			if (gp_grow_p_) {                                                 \
				(v) = gp_grow_p_;                                         \
				(cap) = gp_grow_nc_;                                      \
			} else {                                                          \
				gp_grow_err_ = -ENOMEM;                                   \
			}                                                                 \
		}                                                                         \
		gp_grow_err_;                                                             \
	})

#endif
