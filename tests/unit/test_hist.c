/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_hist.c — the log-linear histogram and streaming statistics:
 * bucket layout, percentile accuracy against exact nearest-rank
 * percentiles of random data (tolerance: 1/128 relative, the bucket
 * half-width), exactness for equal samples, Welford stddev, size buckets.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model/hist.h"

static void buckets_are_contiguous_and_narrow(void **state)
{
	__u64 prev_hi = 0;

	for (unsigned i = 0; i < GP_HIST_BUCKETS; i++) {
		__u64 lo, hi;

		gp_hist_bucket_range(i, &lo, &hi);
		if (i)
			assert_true(lo == prev_hi + 1);
		else
			assert_true(lo == 0);
		assert_true(hi >= lo);
		/* width <= lo / 64: the relative error bound */
		if (lo >= GP_HIST_SUB)
			assert_true((hi - lo + 1) * GP_HIST_SUB <= lo);
		else
			assert_true(hi == lo);
		assert_int_equal(gp_hist_bucket(lo), i);
		assert_int_equal(gp_hist_bucket(hi), i);
		prev_hi = hi;
	}
	assert_true(prev_hi == UINT64_MAX);
	assert_int_equal(gp_hist_bucket(UINT64_MAX), GP_HIST_BUCKETS - 1);
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static __u64 exact_percentile(const __u64 *sorted, size_t n, double p)
{
	double rank = ceil(p / 100.0 * (double)n);

	return sorted[(size_t)(rank < 1 ? 1 : rank) - 1];
}

static void check_percentiles(__u64 (*draw)(void))
{
	enum { N = 100000 };
	static __u64 v[N];
	struct gp_stats s = { 0 };
	const double ps[] = { 1, 10, 25, 50, 75, 90, 99, 99.9, 100 };

	for (size_t i = 0; i < N; i++) {
		v[i] = draw();
		assert_int_equal(gp_stats_add(&s, v[i]), 0);
	}
	qsort(v, N, sizeof(v[0]), cmp_u64);
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		double exact = (double)exact_percentile(v, N, ps[i]);
		double got = (double)gp_stats_percentile(&s, ps[i]);

		/* midpoint of a bucket no wider than 1/64 of its lower bound */
		if (fabs(got - exact) > exact / 128.0 + 0.5)
			fail_msg("p%g: got %.0f, exact %.0f", ps[i], got, exact);
	}
	assert_true(gp_stats_percentile(&s, 100) <= s.max);
	assert_true(gp_stats_percentile(&s, 0.0001) >= s.min);
	gp_stats_release(&s);
}

static __u64 draw_uniform(void)
{
	return 1000 + (__u64)(random() % 5000000);
}

static __u64 draw_exponential(void)
{
	double u = (random() + 1.0) / ((double)RAND_MAX + 2.0);

	return (__u64)(-log(u) * 20000.0);
}

static __u64 draw_bimodal(void)
{
	return random() % 10 ? 900 + (__u64)(random() % 200)
			     : 2000000 + (__u64)(random() % 1000000);
}

static void percentiles_match_exact_within_tolerance(void **state)
{
	srandom(42);
	check_percentiles(draw_uniform);
	check_percentiles(draw_exponential);
	check_percentiles(draw_bimodal);
}

static void equal_samples_are_exact(void **state)
{
	struct gp_stats s = { 0 };

	for (int i = 0; i < 1000; i++)
		gp_stats_add(&s, 123457);
	assert_int_equal(gp_stats_percentile(&s, 50), 123457);
	assert_int_equal(gp_stats_percentile(&s, 99), 123457);
	assert_int_equal(s.min, 123457);
	assert_int_equal(s.max, 123457);
	assert_true(gp_stats_stddev(&s) == 0);
	gp_stats_release(&s);
}

static void small_values_are_exact(void **state)
{
	struct gp_stats s = { 0 };

	for (__u64 v = 1; v <= 50; v++)
		gp_stats_add(&s, v);
	assert_int_equal(gp_stats_percentile(&s, 50), 25);
	assert_int_equal(gp_stats_percentile(&s, 99), 50);
	assert_int_equal(gp_stats_percentile(&s, 1), 1);
	gp_stats_release(&s);
}

static void empty_and_single(void **state)
{
	struct gp_stats s = { 0 };

	assert_int_equal(gp_stats_percentile(&s, 50), 0);
	assert_true(gp_stats_stddev(&s) == 0);
	gp_stats_add(&s, 987654321);
	assert_int_equal(gp_stats_percentile(&s, 50), 987654321);
	assert_true(gp_stats_stddev(&s) == 0);
	gp_stats_release(&s);
	gp_stats_release(&s); /* idempotent */
}

static void stddev_matches_two_pass(void **state)
{
	enum { N = 20000 };
	static __u64 v[N];
	struct gp_stats s = { 0 };
	double mean = 0, ss = 0;

	srandom(7);
	for (size_t i = 0; i < N; i++) {
		v[i] = 1000000000ULL +
		       (__u64)(random() %
			       100000); /* large offset: naive sum of squares would lose it */
		gp_stats_add(&s, v[i]);
		mean += (double)v[i];
	}
	mean /= N;
	for (size_t i = 0; i < N; i++)
		ss += ((double)v[i] - mean) * ((double)v[i] - mean);

	double expect = sqrt(ss / (N - 1));

	assert_true(fabs(gp_stats_stddev(&s) - expect) <= expect * 1e-6);
	assert_true(fabs(s.mean - mean) <= 1e-3);
	gp_stats_release(&s);
}

/* Counts below powers of two (and small values) against a count of the samples themselves. */
static void counts_below_edges_are_exact(void **state)
{
	const __u64 bounds[] = { 1, 40, 64, 1024, 4096, 1ull << 20, 1ull << 34 };
	enum { NB = sizeof(bounds) / sizeof(bounds[0]), NS = 20000 };
	__u64 below[NB], x = 88172645463325252ull, *v = malloc(NS * sizeof(*v));
	struct gp_stats st = { 0 };

	assert_non_null(v);
	gp_stats_counts_below(&st, bounds, NB, below); /* no histogram yet: all 0 */
	for (size_t i = 0; i < NB; i++)
		assert_int_equal(below[i], 0);
	for (size_t i = 0; i < NS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v[i] = x >> (x % 60 + 4); /* every magnitude up to 2^60 */
		assert_int_equal(gp_stats_add(&st, v[i]), 0);
	}
	gp_stats_counts_below(&st, bounds, NB, below);
	for (size_t b = 0; b < NB; b++) {
		__u64 want = 0;

		for (size_t i = 0; i < NS; i++)
			want += v[i] < bounds[b];
		assert_int_equal(below[b], want);
	}
	gp_stats_release(&st);
	free(v);
}

static void size_buckets_are_log2(void **state)
{
	__u64 lo, hi;

	assert_int_equal(gp_size_bucket(0), 0);
	assert_int_equal(gp_size_bucket(1), 1);
	assert_int_equal(gp_size_bucket(4095), 12);
	assert_int_equal(gp_size_bucket(4096), 13);
	assert_int_equal(gp_size_bucket(UINT64_MAX), 64);
	gp_size_bucket_range(13, &lo, &hi);
	assert_true(lo == 4096 && hi == 8191);
	gp_size_bucket_range(0, &lo, &hi);
	assert_true(lo == 0 && hi == 0);
	gp_size_bucket_range(64, &lo, &hi);
	assert_true(lo == 1ULL << 63 && hi == UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buckets_are_contiguous_and_narrow),
		cmocka_unit_test(percentiles_match_exact_within_tolerance),
		cmocka_unit_test(equal_samples_are_exact),
		cmocka_unit_test(small_values_are_exact),
		cmocka_unit_test(empty_and_single),
		cmocka_unit_test(stddev_matches_two_pass),
		cmocka_unit_test(counts_below_edges_are_exact),
		cmocka_unit_test(size_buckets_are_log2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
