/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hist.c — streaming statistics and the log-linear percentile histogram
 * (see hist.h for the layout and its precision).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "model/hist.h"

unsigned gp_hist_bucket(__u64 v)
{
	if (v < GP_HIST_SUB)
		return (unsigned)v;
	unsigned e = 63 - (unsigned)__builtin_clzll(v); /* >= GP_HIST_SUB_BITS */
	unsigned shift = e - GP_HIST_SUB_BITS;
	unsigned sub = (unsigned)(v >> shift) - GP_HIST_SUB; /* the bits after the leading 1 */

	return GP_HIST_SUB + shift * GP_HIST_SUB + sub;
}

void gp_hist_bucket_range(unsigned idx, __u64 *lo, __u64 *hi)
{
	if (idx < GP_HIST_SUB) {
		*lo = *hi = idx;
		return;
	}
	unsigned shift = (idx - GP_HIST_SUB) / GP_HIST_SUB;
	unsigned sub = (idx - GP_HIST_SUB) % GP_HIST_SUB;

	*lo = (__u64)(GP_HIST_SUB + sub) << shift;
	*hi = *lo + ((1ULL << shift) - 1);
}

int gp_stats_add(struct gp_stats *s, __u64 v)
{
	if (!s->count || v < s->min)
		s->min = v;
	if (!s->count || v > s->max)
		s->max = v;
	s->count++;
	s->sum += v;

	double delta = (double)v - s->mean;

	s->mean += delta / (double)s->count;
	s->m2 += delta * ((double)v - s->mean);

	if (!s->buckets) {
		s->buckets = calloc(GP_HIST_BUCKETS, sizeof(*s->buckets));
		if (!s->buckets)
			return -ENOMEM;
	}
	s->buckets[gp_hist_bucket(v)]++;
	return 0;
}

int gp_stats_add_n(struct gp_stats *s, __u64 v, __u64 n)
{
	if (!n)
		return 0;
	if (!s->count || v < s->min)
		s->min = v;
	if (!s->count || v > s->max)
		s->max = v;

	/* combine (count, mean, m2) with (n, v, 0) */
	double na = (double)s->count, nb = (double)n, total = na + nb;
	double delta = (double)v - s->mean;

	s->mean += delta * nb / total;
	s->m2 += delta * delta * na * nb / total;
	s->count += n;
	s->sum += v * n;
	if (!s->buckets) {
		s->buckets = calloc(GP_HIST_BUCKETS, sizeof(*s->buckets));
		if (!s->buckets)
			return -ENOMEM;
	}
	s->buckets[gp_hist_bucket(v)] += n;
	return 0;
}

void gp_stats_counts_below(const struct gp_stats *s, const __u64 *bounds, size_t n, __u64 *below)
{
	unsigned b = 0;
	__u64 sum = 0;

	for (size_t i = 0; i < n; i++) {
		for (unsigned end = gp_hist_bucket(bounds[i]); s->buckets && b < end; b++)
			sum += s->buckets[b];
		below[i] = sum;
	}
}

__u64 gp_stats_percentile(const struct gp_stats *s, double p)
{
	if (!s->count)
		return 0;
	if (!s->buckets || s->min == s->max) /* no histogram, or all samples equal */
		return s->buckets ? s->min : (__u64)llround(s->mean);

	double want = ceil(p / 100.0 * (double)s->count);
	__u64 rank = want < 1 ? 1 : want > (double)s->count ? s->count : (__u64)want;
	__u64 seen = 0;
	unsigned idx;

	for (idx = gp_hist_bucket(s->min); idx < GP_HIST_BUCKETS; idx++) {
		seen += s->buckets[idx];
		if (seen >= rank)
			break;
	}
	__u64 lo, hi;

	gp_hist_bucket_range(idx < GP_HIST_BUCKETS ? idx : GP_HIST_BUCKETS - 1, &lo, &hi);
	__u64 mid = lo + (hi - lo) / 2;

	return mid < s->min ? s->min : mid > s->max ? s->max : mid;
}

double gp_stats_stddev(const struct gp_stats *s)
{
	if (s->count < 2)
		return 0;
	return sqrt(s->m2 / (double)(s->count - 1));
}

void gp_stats_release(struct gp_stats *s)
{
	free(s->buckets);
	s->buckets = NULL;
}

unsigned gp_size_bucket(__u64 bytes)
{
	return bytes ? 64 - (unsigned)__builtin_clzll(bytes) : 0;
}

void gp_size_bucket_range(unsigned idx, __u64 *lo, __u64 *hi)
{
	if (!idx) {
		*lo = *hi = 0;
		return;
	}
	*lo = 1ULL << (idx - 1);
	*hi = *lo + (*lo - 1);
}
