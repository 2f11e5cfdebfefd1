/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_u64map.c — the model's u64 -> pointer hash map: get/put/replace,
 * growth past many entries, key 0 and sequential keys, values() and clear(),
 * deletion in any order (every other key still found, the deleted ones not).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model/u64map.h"

static int freed;

static void count_free(void *v)
{
	freed++;
	free(v);
}

static void put_get_replace(void **state)
{
	struct gp_u64map map = { 0 };
	int a, b;

	assert_null(gp_u64map_get(&map, 0));
	assert_int_equal(gp_u64map_put(&map, 0, &a), 0);
	assert_int_equal(gp_u64map_put(&map, UINT64_MAX, &b), 0);
	assert_ptr_equal(gp_u64map_get(&map, 0), &a);
	assert_ptr_equal(gp_u64map_get(&map, UINT64_MAX), &b);
	assert_int_equal(gp_u64map_put(&map, 0, &b), 0);
	assert_ptr_equal(gp_u64map_get(&map, 0), &b);
	assert_int_equal(map.count, 2);
	assert_int_not_equal(gp_u64map_put(&map, 1, NULL), 0);
	gp_u64map_clear(&map, NULL);
	assert_null(gp_u64map_get(&map, 0));
}

static void many_keys(void **state)
{
	enum { N = 100000 };
	struct gp_u64map map = { 0 };
	void **vals = malloc(N * sizeof(*vals));

	for (__u64 i = 0; i < N; i++) {
		__u64 *v = malloc(sizeof(*v));

		*v = i;
		/* page-aligned pointers and small tids: the distributions the model sees */
		assert_int_equal(gp_u64map_put(&map, i % 2 ? (i << 12) | (1ULL << 40) : i, v), 0);
	}
	assert_int_equal(map.count, N);
	for (__u64 i = 0; i < N; i++) {
		__u64 *v = gp_u64map_get(&map, i % 2 ? (i << 12) | (1ULL << 40) : i);

		assert_non_null(v);
		assert_true(*v == i);
	}
	assert_int_equal(gp_u64map_values(&map, vals, N), N);
	assert_int_equal(gp_u64map_values(&map, vals, 10), 10);
	freed = 0;
	gp_u64map_clear(&map, count_free);
	assert_int_equal(freed, N);
	assert_int_equal(map.count, 0);
	free(vals);
}

/* A small table, so that deletions hit long runs and runs that wrap around the end. */
static void delete_keeps_the_rest_reachable(void **state)
{
	enum { N = 3000 };
	struct gp_u64map map = { 0 };
	static char present[N];
	int dummy;
	unsigned seed = 12345;

	for (__u64 i = 0; i < N; i++) {
		assert_int_equal(gp_u64map_put(&map, i * 7919, &dummy), 0);
		present[i] = 1;
	}
	assert_int_equal(gp_u64map_del(&map, 1), -ENOENT);
	for (int round = 0; round < 2 * N; round++) {
		__u64 i;

		seed = seed * 1103515245u + 12345u;
		i = (seed >> 8) % N;
		if (present[i]) {
			assert_int_equal(gp_u64map_del(&map, i * 7919), 0);
			present[i] = 0;
		} else {
			assert_int_equal(gp_u64map_del(&map, i * 7919), -ENOENT);
			if (round % 3 == 0) { /* and some back in */
				assert_int_equal(gp_u64map_put(&map, i * 7919, &dummy), 0);
				present[i] = 1;
			}
		}
		if (round % 500 == 0 || round == 2 * N - 1) {
			size_t n = 0;

			for (__u64 k = 0; k < N; k++) {
				assert_true((gp_u64map_get(&map, k * 7919) != NULL) == present[k]);
				n += present[k];
			}
			assert_int_equal(map.count, n);
		}
	}
	gp_u64map_clear(&map, NULL);
	assert_int_equal(gp_u64map_del(&map, 0), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(put_get_replace),
		cmocka_unit_test(many_keys),
		cmocka_unit_test(delete_keeps_the_rest_reachable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
