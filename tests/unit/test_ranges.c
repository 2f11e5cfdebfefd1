/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_ranges.c — the address range set behind pinned/device lookups:
 * insert, lookup, remove, adjacent and overlapping ranges, zero-length
 * ranges, walk order, and a randomised comparison with a brute-force list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model/ranges.h"

struct item {
	struct gp_range r;
	int id;
};

static struct item *item(int id)
{
	struct item *it = calloc(1, sizeof(*it));

	assert_non_null(it);
	it->id = id;
	return it;
}

static int evicted;

static void on_evict(struct gp_range *r, void *ctx)
{
	evicted += ((struct item *)r)->id;
	free(r);
}

static void free_item(struct gp_range *r)
{
	free(r);
}

static int find_id(const struct gp_range_set *s, __u64 addr)
{
	struct gp_range *r = gp_ranges_find(s, addr);

	return r ? ((struct item *)r)->id : 0;
}

static void insert_find_remove(void **state)
{
	struct gp_range_set s = { 0 };
	struct item *a = item(1);

	assert_int_equal(gp_ranges_insert(&s, &a->r, 0x1000, 0x100, on_evict, NULL), 0);
	assert_int_equal(find_id(&s, 0x0fff), 0);
	assert_int_equal(find_id(&s, 0x1000), 1);
	assert_int_equal(find_id(&s, 0x10ff), 1);
	assert_int_equal(find_id(&s, 0x1100), 0);
	assert_null(gp_ranges_remove(&s, 0x1080)); /* interior pointer: not a match */
	assert_ptr_equal(gp_ranges_remove(&s, 0x1000), &a->r);
	assert_int_equal(find_id(&s, 0x1000), 0);
	assert_int_equal(s.count, 0);
	assert_null(gp_ranges_remove(&s, 0x1000));
	free(a);
}

static void adjacent_ranges_stay_distinct(void **state)
{
	struct gp_range_set s = { 0 };

	evicted = 0;
	assert_int_equal(gp_ranges_insert(&s, &item(1)->r, 0x1000, 0x1000, on_evict, NULL), 0);
	assert_int_equal(gp_ranges_insert(&s, &item(2)->r, 0x2000, 0x1000, on_evict, NULL), 0);
	assert_int_equal(gp_ranges_insert(&s, &item(3)->r, 0x0800, 0x0800, on_evict, NULL), 0);
	assert_int_equal(evicted, 0);
	assert_int_equal(s.count, 3);
	assert_int_equal(find_id(&s, 0x0fff), 3);
	assert_int_equal(find_id(&s, 0x1000), 1);
	assert_int_equal(find_id(&s, 0x1fff), 1);
	assert_int_equal(find_id(&s, 0x2000), 2);
	assert_int_equal(find_id(&s, 0x2fff), 2);
	assert_int_equal(find_id(&s, 0x3000), 0);
	free(gp_ranges_remove(&s, 0x1000));
	assert_int_equal(find_id(&s, 0x1800), 0);
	assert_int_equal(find_id(&s, 0x2000), 2);
	gp_ranges_clear(&s, free_item);
	assert_int_equal(s.count, 0);
	assert_null(s.root);
}

static void overlapping_insert_evicts_stale(void **state)
{
	struct gp_range_set s = { 0 };

	evicted = 0;
	gp_ranges_insert(&s, &item(1)->r, 0x1000, 0x1000, on_evict, NULL);
	gp_ranges_insert(&s, &item(2)->r, 0x3000, 0x1000, on_evict, NULL);
	gp_ranges_insert(&s, &item(4)->r, 0x5000, 0x1000, on_evict, NULL);
	/* spans the end of 1, all of the gap and the start of 2 */
	gp_ranges_insert(&s, &item(8)->r, 0x1800, 0x2000, on_evict, NULL);
	assert_int_equal(evicted, 1 + 2);
	assert_int_equal(s.count, 2);
	assert_int_equal(find_id(&s, 0x1000), 0);
	assert_int_equal(find_id(&s, 0x1800), 8);
	assert_int_equal(find_id(&s, 0x37ff), 8);
	assert_int_equal(find_id(&s, 0x3800), 0);
	assert_int_equal(find_id(&s, 0x5000), 4);
	gp_ranges_clear(&s, free_item);
}

static void zero_length_and_top_of_memory(void **state)
{
	struct gp_range_set s = { 0 };

	gp_ranges_insert(&s, &item(1)->r, 0x4000, 0, on_evict, NULL);
	assert_int_equal(find_id(&s, 0x4000), 1);
	assert_int_equal(find_id(&s, 0x4001), 0);
	gp_ranges_insert(&s, &item(2)->r, UINT64_MAX - 0xf, 0x100, on_evict, NULL); /* would wrap */
	assert_int_equal(find_id(&s, UINT64_MAX - 1), 2);
	free(gp_ranges_remove(&s, 0x4000));
	gp_ranges_clear(&s, free_item);
}

static void collect(const struct gp_range *r, void *ctx)
{
	__u64 *prev = ctx;

	assert_true(r->start >= *prev);
	*prev = r->end;
}

static void walk_is_in_address_order(void **state)
{
	struct gp_range_set s = { 0 };
	__u64 prev = 0;

	srandom(3);
	for (int i = 0; i < 500; i++)
		gp_ranges_insert(&s, &item(1)->r, (__u64)(random() % 1000) * 0x1000, 0x800,
				 on_evict, NULL);
	gp_ranges_walk(&s, collect, &prev);
	assert_true(prev > 0);
	gp_ranges_clear(&s, free_item);
}

/* Random inserts/removes of page-aligned blocks against a page bitmap. */
static void random_against_brute_force(void **state)
{
	enum { PAGES = 256, OPS = 20000 };
	int owner[PAGES] = { 0 };
	__u64 start_of[OPS + 1] = { 0 };
	struct gp_range_set s = { 0 };

	srandom(11);
	for (int id = 1; id <= OPS; id++) {
		if (random() % 3 == 0) { /* remove a random live block by its start */
			int page = (int)(random() % PAGES);

			if (owner[page]) {
				int victim = owner[page];
				struct gp_range *r = gp_ranges_remove(&s, start_of[victim]);

				assert_non_null(r);
				free(r);
				for (int p = 0; p < PAGES; p++)
					if (owner[p] == victim)
						owner[p] = 0;
			}
			continue;
		}

		int first = (int)(random() % PAGES), len = 1 + (int)(random() % 8);

		if (first + len > PAGES)
			len = PAGES - first;
		/* evicted blocks disappear entirely */
		for (int p = first; p < first + len; p++) {
			int old = owner[p];

			if (old)
				for (int q = 0; q < PAGES; q++)
					if (owner[q] == old)
						owner[q] = 0;
		}
		start_of[id] = (__u64)first * 4096;
		assert_int_equal(gp_ranges_insert(&s, &item(id)->r, start_of[id], (__u64)len * 4096,
						  on_evict, NULL),
				 0);
		for (int p = first; p < first + len; p++)
			owner[p] = id;
		for (int p = 0; p < PAGES; p++)
			assert_int_equal(find_id(&s, (__u64)p * 4096 + 17), owner[p]);
	}
	gp_ranges_clear(&s, free_item);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(insert_find_remove),
		cmocka_unit_test(adjacent_ranges_stay_distinct),
		cmocka_unit_test(overlapping_insert_evicts_stale),
		cmocka_unit_test(zero_length_and_top_of_memory),
		cmocka_unit_test(walk_is_in_address_order),
		cmocka_unit_test(random_against_brute_force),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
